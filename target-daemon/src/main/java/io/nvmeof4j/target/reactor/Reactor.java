package io.nvmeof4j.target.reactor;

import io.nvmeof4j.protocol.spi.PollGroup;
import io.nvmeof4j.protocol.spi.idle.AdaptiveIdleStrategy;
import io.nvmeof4j.protocol.spi.idle.IdleStrategy;
import org.agrona.concurrent.ManyToOneConcurrentArrayQueue;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * One data-path thread (architecture: reactors): an agent loop whose {@link #doWork()} polls the reactor's
 * {@link PollGroup}s and runs tasks other threads handed it through a bounded lock-free queue
 * ({@link #execute(Runnable)}; Agrona's {@link ManyToOneConcurrentArrayQueue}: any thread offers, only the reactor
 * polls, nothing allocated per task), returning how much work it found; the loop is {@code idle.idle(doWork())}
 * with an {@link IdleStrategy} shared with the initiator's reactors ({@link IdleMode} picks it).
 *
 * <h2>Idling</h2>
 * {@link IdleMode#BUSY} spins. {@link IdleMode#ADAPTIVE} ({@link AdaptiveIdleStrategy}) spins for
 * {@code spinNanos} after the last work, yields, then blocks in {@link PollGroup#await(long)} of the <em>first</em>
 * poll group, each empty block doubling the next one's bound up to {@value #AWAIT_MILLIS_ONE_GROUP} ms. A thread
 * can block on one primitive only (a selector, an RDMA completion channel) and pure Java cannot wait on several,
 * so with more than one such group (groups that are {@link InFlightAware} do not count: with nothing in flight
 * nothing can arrive on them) the wait is bounded by {@value #AWAIT_MILLIS_SEVERAL_GROUPS} ms: work arriving on
 * another group is then noticed within a millisecond instead of never. With one group the bound only matters if
 * a wakeup were lost.
 * <p>A group that is {@link InFlightAware} and has I/O in flight (block-device I/O in an io_uring, whose completion
 * does not wake the selector) changes that: the reactor then blocks in that group's {@code await} (the ring's
 * {@code io_uring_wait_cqe_timeout}), at most {@link #IN_FLIGHT_AWAIT_NANOS}, so a completion is noticed the moment
 * it lands and a command arriving on a socket meanwhile waits at most that long.
 *
 * <h2>A shared CPU</h2>
 * An adaptive reactor measures its thread's run delay and blocks without spinning while its CPU is shared
 * ({@link AdaptiveIdleStrategy}, "A shared CPU"); {@link #contended()} and {@link #wakeupCostNanos()} say what it
 * measured. Busy reactors never adapt: they are for dedicated cores (see docs/datapath.md on pinning).
 *
 * <h2>Failures</h2>
 * A {@link RuntimeException} out of {@link PollGroup#poll()} is taken as transient: logged (the 1st, 10th, 100th…
 * consecutive one, with the reactor and group named) and the loop goes on. A poll group is expected to deal with
 * its own queues' failures (disconnect the queue) without throwing; so an {@link Error}, or
 * {@value #FATAL_CONSECUTIVE_FAILURES} failures in a row, is taken as fatal for that group: it is closed (its
 * queues disconnect and hosts reconnect), dropped from the loop, and logged at error. The reactor keeps running
 * its other groups and tasks. A task that throws is logged and skipped.
 *
 * <h2>Lifecycle</h2>
 * Add poll groups and owned resources, {@link #start()}, later {@link #stop(Duration)} (bounded join, never an
 * interrupt: an interrupt closes NIO channels). A poll group can also be added to a running reactor (a transport
 * first served by a live change): the reactor thread takes it from its task queue, so the group arrays keep one
 * writer, and the idle bounds above follow the new set of groups from the next block on. On its way out the reactor thread runs the tasks still queued,
 * then closes what it owns in reverse order of registration (so a poll group closes before the buffer pool it
 * draws from).
 * <p>CPU pinning is not done: pure Java cannot set a thread's affinity. Run the daemon under {@code taskset} to
 * confine it; a native helper can pin later.
 */
public final class Reactor implements Executor, AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(Reactor.class);

    public static final long SPIN_NANOS_DEFAULT = AdaptiveIdleStrategy.SPIN_NANOS_DEFAULT;
    public static final int TASK_QUEUE_CAPACITY = 1024;
    static final long AWAIT_MILLIS_ONE_GROUP = 100;
    static final long AWAIT_MILLIS_SEVERAL_GROUPS = 1;
    /** Longest block in an {@link InFlightAware} group's await while it has I/O in flight. */
    public static final long IN_FLIGHT_AWAIT_NANOS = TimeUnit.MICROSECONDS.toNanos(200);
    static final int FATAL_CONSECUTIVE_FAILURES = 1000;
    private static final int MAX_TASKS_PER_ROUND = 64;
    public static final Duration STOP_TIMEOUT_DEFAULT = Duration.ofSeconds(5);

    private enum Lifecycle { NEW, RUNNING, STOPPED }

    private final String name;
    private final IdleMode idleMode;
    private final long spinNanos;
    private final ManyToOneConcurrentArrayQueue<Runnable> tasks = new ManyToOneConcurrentArrayQueue<>(TASK_QUEUE_CAPACITY);
    private final List<AutoCloseable> owned = new ArrayList<>();
    private final Thread thread;

    /** Written before start or by the reactor thread only; volatile for the readers on other threads. */
    private volatile PollGroup[] groups = new PollGroup[0];
    /**
     * The groups an idle reactor blocks on: those that are not {@link InFlightAware} (an in-flight-aware group with
     * nothing in flight has nothing that could arrive, so a reactor with one selector and an io_uring or QoS group
     * still blocks the full bound on that selector). Same writers as {@link #groups}.
     */
    private volatile PollGroup[] waitGroups = new PollGroup[0];
    private int[] consecutiveFailures = new int[0];

    private volatile Lifecycle lifecycle = Lifecycle.NEW;
    private volatile boolean running;
    private volatile boolean sleeping;
    private long rounds;
    /** Created on the reactor thread when it starts (the adaptive one measures that thread). */
    private volatile IdleStrategy idle;

    public Reactor(String name, IdleMode idleMode, long spinNanos) {
        if (spinNanos < 0) {
            throw new IllegalArgumentException("negative spin time");
        }
        this.name = Objects.requireNonNull(name, "name");
        this.idleMode = Objects.requireNonNull(idleMode, "idleMode");
        this.spinNanos = spinNanos;
        this.thread = new ReactorThread(this, name);
        this.thread.setDaemon(true);
    }

    public Reactor(String name) {
        this(name, IdleMode.ADAPTIVE, SPIN_NANOS_DEFAULT);
    }

    public String name() {
        return name;
    }

    public IdleMode idleMode() {
        return idleMode;
    }

    /**
     * Adds a poll group this reactor polls and owns (closes when it stops, before what was owned earlier). Before
     * {@link #start()} it is polled from the first round; on a running reactor (a transport served from a live
     * change) it is handed to the reactor thread through the task queue, which alone writes the group arrays, and is
     * polled from the round after: the caller may hand it work at once, the group holds that work until polled.
     * Any thread.
     *
     * @throws IllegalStateException      when the reactor has stopped
     * @throws RejectedExecutionException when the running reactor's task queue is full; the caller still owns
     *                                    {@code group} then
     */
    public synchronized Reactor add(PollGroup group) {
        Objects.requireNonNull(group, "group");
        if (lifecycle == Lifecycle.NEW) {
            append(group);
            owned.add(group);
            return this;
        }
        if (lifecycle != Lifecycle.RUNNING || !running) {
            throw new IllegalStateException("reactor " + name + " has stopped: cannot add poll group " + group);
        }
        // Owned first: a reactor stopping before the hand-over runs still closes it (it runs queued tasks, then
        // closes what it owns, under this lock, which we hold).
        owned.add(group);
        try {
            execute(() -> append(group));
        } catch (RejectedExecutionException e) {
            owned.remove(group);
            throw e;
        }
        return this;
    }

    /** Before start (under the lock) or on the reactor thread: the only writers of the group arrays. */
    private void append(PollGroup group) {
        PollGroup[] next = Arrays.copyOf(groups, groups.length + 1);
        next[next.length - 1] = group;
        consecutiveFailures = Arrays.copyOf(consecutiveFailures, next.length);
        waitGroups = waitGroups(next);
        groups = next;
        LOG.debug("reactor {}: poll group {} added ({} in all)", name, group, next.length);
    }

    /** Registers a resource closed by the reactor thread when it stops, in reverse order. Before start only. */
    public synchronized Reactor own(AutoCloseable resource) {
        requireNew();
        owned.add(Objects.requireNonNull(resource, "resource"));
        return this;
    }

    public List<PollGroup> pollGroups() {
        return List.of(groups);
    }

    private void requireNew() {
        if (lifecycle != Lifecycle.NEW) {
            throw new IllegalStateException("reactor " + name + " already started");
        }
    }

    public synchronized void start() {
        requireNew();
        running = true;
        lifecycle = Lifecycle.RUNNING;
        thread.start();
        LOG.debug("reactor {} started: {} poll group(s), idle strategy {}", name, groups.length,
            idleMode.configName());
    }

    /** The reactor whose thread is calling, or null on any other thread. No allocation, no thread-local lookup. */
    public static Reactor current() {
        return Thread.currentThread() instanceof ReactorThread t ? t.reactor : null;
    }

    /** The first of this reactor's poll groups that is a {@code type}, or null. Any thread; allocates nothing. */
    public <T> T pollGroup(Class<T> type) {
        PollGroup[] gs = groups;
        for (PollGroup g : gs) {
            if (type.isInstance(g)) {
                return type.cast(g);
            }
        }
        return null;
    }

    /** A reactor's thread knows its reactor, so code running on it finds the reactor's resources. */
    private static final class ReactorThread extends Thread {
        final Reactor reactor;

        ReactorThread(Reactor reactor, String name) {
            super(name);
            this.reactor = reactor;
        }

        @Override
        public void run() {
            reactor.run();
        }
    }

    public boolean isReactorThread() {
        return Thread.currentThread() == thread;
    }

    public boolean isRunning() {
        return running && thread.isAlive();
    }

    /** True while the adaptive reactor measured its CPU as shared and blocks instead of spinning. Any thread. */
    public boolean contended() {
        return idle instanceof AdaptiveIdleStrategy a && a.contended();
    }

    /**
     * Run delay per block in the last measured window: what a wake-up from blocking cost in waiting for the CPU
     * (0 before the first window with a block, or where schedstats are unavailable). Any thread.
     */
    public long wakeupCostNanos() {
        return idle instanceof AdaptiveIdleStrategy a ? a.wakeupCostNanos() : 0;
    }

    /** Rounds of {@link #doWork()} so far (read from any thread: approximate). */
    public long rounds() {
        return rounds;
    }

    /**
     * Runs {@code task} on the reactor thread, soon. Any thread; does not allocate beyond what the caller did.
     *
     * @throws RejectedExecutionException when the reactor is not running or its task queue is full
     */
    @Override
    public void execute(Runnable task) {
        Objects.requireNonNull(task, "task");
        if (!running) {
            throw new RejectedExecutionException("reactor " + name + " is not running");
        }
        if (!tasks.offer(task)) {
            throw new RejectedExecutionException("reactor " + name + " task queue is full ("
                + tasks.capacity() + ")");
        }
        // The reactor publishes "sleeping" and then re-checks the queue; we offered and now check "sleeping".
        if (sleeping) {
            wakeup();
        }
    }

    private void wakeup() {
        // The thread may be parked (no selector, or an in-flight-aware group's await that parks): unpark it too.
        LockSupport.unpark(thread);
        PollGroup[] gs = waitGroups;
        if (gs.length == 0) {
            return;
        }
        try {
            gs[0].wakeup();
        } catch (RuntimeException e) {
            LOG.warn("reactor {}: waking poll group {} failed", name, gs[0], e);
        }
    }

    /** One round: polls every group and runs up to 64 queued tasks. Reactor thread only (or tests). */
    public int doWork() {
        int work = 0;
        PollGroup[] gs = groups;
        for (int i = 0; i < gs.length; i++) {
            try {
                work += gs[i].poll();
                consecutiveFailures[i] = 0;
            } catch (RuntimeException e) {
                if (onPollFailure(i, e)) {
                    break; // groups changed; the next round sees the new array
                }
            } catch (Error e) {
                dropGroup(i, e);
                break;
            }
        }
        work += runTasks(MAX_TASKS_PER_ROUND);
        rounds++;
        return work;
    }

    private int runTasks(int max) {
        int n = 0;
        Runnable task;
        while (n < max && (task = tasks.poll()) != null) {
            n++;
            try {
                task.run();
            } catch (RuntimeException e) {
                LOG.error("reactor {}: task {} failed", name, task, e);
            }
        }
        return n;
    }

    /** @return true when the group was dropped */
    private boolean onPollFailure(int index, RuntimeException e) {
        int failures = ++consecutiveFailures[index];
        if (failures >= FATAL_CONSECUTIVE_FAILURES) {
            dropGroup(index, e);
            return true;
        }
        if (failures == 1 || failures == 10 || failures == 100) {
            LOG.warn("reactor {}: poll group {} threw ({} in a row); continuing", name, groups[index], failures, e);
        }
        return false;
    }

    private void dropGroup(int index, Throwable cause) {
        PollGroup group = groups[index];
        LOG.error("reactor {}: poll group {} failed fatally; closing it (its queues disconnect)", name, group, cause);
        PollGroup[] next = new PollGroup[groups.length - 1];
        System.arraycopy(groups, 0, next, 0, index);
        System.arraycopy(groups, index + 1, next, index, groups.length - index - 1);
        synchronized (this) {
            owned.remove(group);
        }
        groups = next;
        waitGroups = waitGroups(next);
        consecutiveFailures = new int[next.length];
        closeQuietly(group);
    }

    private static PollGroup[] waitGroups(PollGroup[] all) {
        return Arrays.stream(all).filter(g -> !(g instanceof InFlightAware)).toArray(PollGroup[]::new);
    }

    private void run() {
        IdleStrategy strategy = null;
        try {
            strategy = idleMode.newStrategy(name, this::block, spinNanos,
                TimeUnit.MILLISECONDS.toNanos(AWAIT_MILLIS_ONE_GROUP));
            idle = strategy;
            while (running) {
                strategy.idle(doWork());
            }
            runTasks(TASK_QUEUE_CAPACITY);
        } catch (Throwable t) {
            LOG.error("reactor {} stopped by an unexpected failure", name, t);
        } finally {
            running = false;
            if (strategy != null) {
                strategy.close();
            }
            closeOwned();
            lifecycle = Lifecycle.STOPPED;
        }
    }

    /** The reactor's {@link io.nvmeof4j.protocol.spi.idle.IdleWait}: at most {@code timeoutNanos}, less where noted. */
    private void block(long timeoutNanos) {
        sleeping = true;
        try {
            if (!tasks.isEmpty() || !running) {
                return;
            }
            PollGroup[] gs = groups;
            for (PollGroup g : gs) {
                if (g instanceof InFlightAware a && a.hasInFlight()) {
                    try {
                        g.await(Math.min(timeoutNanos, IN_FLIGHT_AWAIT_NANOS));
                    } catch (RuntimeException e) {
                        LOG.warn("reactor {}: await on poll group {} threw", name, g, e);
                    }
                    return;
                }
            }
            gs = waitGroups;
            if (gs.length == 0) {
                LockSupport.parkNanos(this, timeoutNanos);
            } else {
                long bound = gs.length == 1 ? timeoutNanos
                    : Math.min(timeoutNanos, TimeUnit.MILLISECONDS.toNanos(AWAIT_MILLIS_SEVERAL_GROUPS));
                try {
                    gs[0].await(bound);
                } catch (RuntimeException e) {
                    LOG.warn("reactor {}: await on poll group {} threw", name, gs[0], e);
                }
            }
        } finally {
            sleeping = false;
        }
    }

    private void closeOwned() {
        List<AutoCloseable> toClose;
        synchronized (this) {
            toClose = new ArrayList<>(owned);
            owned.clear();
        }
        for (int i = toClose.size() - 1; i >= 0; i--) {
            closeQuietly(toClose.get(i));
        }
    }

    private void closeQuietly(AutoCloseable resource) {
        try {
            resource.close();
        } catch (Exception | Error e) {
            LOG.error("reactor {}: closing {} failed", name, resource, e);
        }
    }

    /**
     * Stops the loop and waits up to {@code timeout} for the thread to close what it owns and end.
     *
     * @return true when the reactor has stopped (or never started; then its resources are closed here)
     */
    public boolean stop(Duration timeout) {
        synchronized (this) {
            if (lifecycle == Lifecycle.NEW) {
                lifecycle = Lifecycle.STOPPED;
                closeOwned();
                return true;
            }
        }
        running = false;
        wakeup();
        if (isReactorThread()) {
            return false;
        }
        try {
            thread.join(Math.max(1, timeout.toMillis()));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        if (thread.isAlive()) {
            LOG.error("reactor {} did not stop within {} ms; its poll groups stay open", name, timeout.toMillis());
            return false;
        }
        return true;
    }

    @Override
    public void close() {
        stop(STOP_TIMEOUT_DEFAULT);
    }

    @Override
    public String toString() {
        return "reactor " + name;
    }
}
