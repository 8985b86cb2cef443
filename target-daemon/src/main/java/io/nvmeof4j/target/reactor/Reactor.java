package io.nvmeof4j.target.reactor;

import io.nvmeof4j.jni.cpu.ReactorPinning;
import io.nvmeof4j.protocol.spi.PollGroup;
import io.nvmeof4j.protocol.spi.idle.AdaptiveIdleStrategy;
import io.nvmeof4j.protocol.spi.idle.IdleMode;
import io.nvmeof4j.protocol.spi.idle.IdleStrategy;
import io.nvmeof4j.protocol.spi.idle.SchedStat;
import io.nvmeof4j.protocol.spi.reactor.ReactorLoop;
import io.nvmeof4j.protocol.spi.reactor.SelectorPollGroup;
import io.nvmeof4j.protocol.spi.reactor.WakesSelector;
import org.agrona.concurrent.ManyToOneConcurrentArrayQueue;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.nio.channels.Selector;
import java.nio.file.Path;
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
 * polls, nothing allocated per task), returning how much work it found. The loop itself, its idle strategy and the
 * sleep/wake hand-shake are {@link ReactorLoop}'s, shared with the initiator's reactors; this class is its
 * {@link ReactorLoop.Agent} (what a round does, where it blocks) and owns the poll groups ({@link IdleMode} picks
 * the {@link IdleStrategy}).
 *
 * <h2>Idling</h2>
 * {@link IdleMode#BUSY} spins. {@link IdleMode#ADAPTIVE} ({@link AdaptiveIdleStrategy}) spins for
 * {@code spinNanos} after the last work, yields, then blocks in one poll group's {@link PollGroup#await(long)}, each
 * empty block doubling the next one's bound up to {@value #AWAIT_MILLIS_ONE_GROUP} ms. A thread blocks on one
 * primitive, so the reactor waits on one thing that every group can wake ("One wait primitive"). The groups work can
 * arrive on while it blocks are those that are not {@link InFlightAware} (with nothing in flight nothing can arrive
 * on those). With one such group the reactor blocks in it (an NVMe/TCP selector, or the RDMA completion channels
 * when the reactor serves RDMA alone). With several, one of them a {@link SelectorPollGroup}, it blocks in that
 * selector with the full bound when every other one joined it. Only where they cannot all be joined (two selectors,
 * a JDK whose selector has no reachable epoll fd: said once at info by the RDMA group) does the old fallback
 * remain: the reactor blocks in the selector (or the first group) at most {@value #AWAIT_MILLIS_SEVERAL_GROUPS} ms at
 * a time, so work on another group is noticed within a millisecond instead of never.
 * <h2>One wait primitive</h2>
 * Groups that are {@link WakesSelector} are joined to the selector when either is added: an io_uring
 * ({@link InFlightAware}) makes the selector's wake-up eventfd its completion eventfd; an NVMe-oF/RDMA poll group
 * puts its completion channels' fds into the selector's epoll set (one shot; the JDK ignores events of fds it has no
 * key for, but the select returns). Before blocking the reactor arms each of them ({@link WakesSelector#armWakeup}:
 * the ring enables its eventfd; the RDMA group takes pending channel events, which re-arms their joins, arms its
 * completion queues, polls them once more and routes its wake-ups to the selector), and does not block if any has
 * work already; after the block it disarms them. So the reactor waits on the selector alone, with the idle
 * strategy's full bound, and is woken by a socket, a task, a ring completion or an RDMA completion alike (issue 17
 * item 3; docs/datapath.md). An in-flight-aware group that could not be joined (a reactor without a selector, QoS
 * waits, which are timers) keeps the bounded wait: the reactor blocks in that group's {@code await}, at most
 * {@link #IN_FLIGHT_AWAIT_NANOS}, so its work is noticed when it is due and a command arriving on a socket meanwhile
 * waits at most that long.
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
 * writer, and it is joined to the selector (or the selector's group is joined by the others) there, so the wait
 * above follows the new set of groups from the next block on. On its way out the reactor thread runs the tasks still queued,
 * then closes what it owns in reverse order of registration (so a poll group closes before the buffer pool it
 * draws from).
 *
 * <h2>Pinning</h2>
 * Given a {@link ReactorPinning} ({@code nvmeof4j.reactor_cpus}), the reactor thread pins itself to its CPU as it
 * starts, before its first round; the daemon has moved every other thread to the housekeeping CPUs before, so the JIT
 * and GC do not take turns with a busy reactor (docs/datapath.md, "Pinning"). Without one no affinity is set.
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
    /** The reactor thread's schedstat file, set as the thread starts (null until then or where unavailable). */
    private volatile Path schedStatFile;
    private volatile long lastRunDelayNanos = -1;
    private final ManyToOneConcurrentArrayQueue<Runnable> tasks = new ManyToOneConcurrentArrayQueue<>(TASK_QUEUE_CAPACITY);
    private final List<AutoCloseable> owned = new ArrayList<>();
    private final ReactorLoop loop;

    /** Written before start or by the reactor thread only; volatile for the readers on other threads. */
    private volatile PollGroup[] groups = new PollGroup[0];
    /**
     * The wait chosen for the current groups ({@link #chooseWait}): the group an idle reactor blocks in (null: none,
     * it parks), the selector of that group when the others wake it (null: none), and whether that one block covers
     * every group work can arrive on. Same writers as {@link #groups}; one object so the reactor reads one reference.
     */
    private volatile Wait wait = new Wait(null, null, true);
    /** The one selector an idle reactor blocks in, or a bounded wait on one group of several; see the class comment. */
    private record Wait(PollGroup block, Selector selector, boolean whole) {
    }
    private int[] consecutiveFailures = new int[0];

    private volatile Lifecycle lifecycle = Lifecycle.NEW;
    private long rounds;

    public Reactor(String name, IdleMode idleMode, long spinNanos) {
        this(name, idleMode, spinNanos, null, 0);
    }

    /**
     * @param pinning null, or the plan whose CPU {@code index} this reactor's thread pins itself to when it starts
     */
    public Reactor(String name, IdleMode idleMode, long spinNanos, ReactorPinning pinning, int index) {
        if (spinNanos < 0) {
            throw new IllegalArgumentException("negative spin time");
        }
        this.name = Objects.requireNonNull(name, "name");
        this.idleMode = Objects.requireNonNull(idleMode, "idleMode");
        this.loop = new ReactorLoop(name, new Agent(),
            wait -> idleMode.newStrategy(name, wait, spinNanos, TimeUnit.MILLISECONDS.toNanos(AWAIT_MILLIS_ONE_GROUP)),
            body -> new ReactorThread(this, name, pinning == null ? body : pinning.reactorBody(index, name, body)));
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
        if (lifecycle != Lifecycle.RUNNING || !loop.running()) {
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
        groups = next;
        wait = chooseWait(next);
        LOG.debug("reactor {}: poll group {} added ({} in all)", name, group, next.length);
    }

    /**
     * Where an idle reactor blocks, given its groups ("Idling" and "One wait primitive" in the class comment). The
     * groups work can arrive on while it blocks are those that are not {@link InFlightAware}. When exactly one of them
     * is a {@link SelectorPollGroup}, every {@link WakesSelector} group is joined to its selector (once; a group added
     * later is joined when it comes), and the reactor blocks there with the full bound if every other such group
     * joined. Otherwise it blocks in the first of them, bounded by {@value #AWAIT_MILLIS_SEVERAL_GROUPS} ms when there
     * are several.
     */
    private Wait chooseWait(PollGroup[] all) {
        PollGroup[] waits = Arrays.stream(all).filter(g -> !(g instanceof InFlightAware)).toArray(PollGroup[]::new);
        PollGroup[] selectors = Arrays.stream(waits).filter(g -> g instanceof SelectorPollGroup).toArray(PollGroup[]::new);
        if (selectors.length != 1) {
            return new Wait(waits.length == 0 ? null : waits[0], null, waits.length <= 1);
        }
        PollGroup block = selectors[0];
        Selector selector = ((SelectorPollGroup) block).selector();
        boolean whole = true;
        for (PollGroup g : all) {
            if (g == block) {
                continue;
            }
            boolean joined = g instanceof WakesSelector w && (w.wakes(selector) || w.wakeSelector(selector));
            if (joined) {
                continue;
            }
            if (g instanceof InFlightAware) {
                LOG.debug("reactor {}: {} cannot wake the selector; it is waited on with a {} us bound while it has "
                    + "I/O in flight", name, g, TimeUnit.NANOSECONDS.toMicros(IN_FLIGHT_AWAIT_NANOS));
            } else {
                whole = false;
                LOG.debug("reactor {}: {} cannot wake the selector of {}; the reactor blocks there at most {} ms at a "
                    + "time", name, g, block, AWAIT_MILLIS_SEVERAL_GROUPS);
            }
        }
        return new Wait(block, selector, whole);
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
        lifecycle = Lifecycle.RUNNING;
        loop.start();
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

        ReactorThread(Reactor reactor, String name, Runnable body) {
            super(body, name);
            this.reactor = reactor;
        }

        @Override
        public void run() {
            reactor.schedStatFile = SchedStat.threadFile();
            super.run();
        }
    }

    /**
     * How long the reactor's thread has been runnable but waiting for its CPU, in all (the kernel's schedstat): what
     * other tasks on its CPU took from it, and, with adaptive idling, what its wake-ups waited. A busy reactor pinned
     * to its own CPU should see none; each stretch it does see holds every I/O it has in flight. -1 where the kernel
     * does not offer it; after the thread ended, the last value read. Any thread; reads a /proc file (allocates):
     * for a metrics scrape, not the data path.
     */
    public long runDelayNanos() {
        Path file = schedStatFile;
        long value = file == null ? -1 : SchedStat.runDelayNanosOf(file);
        if (value >= 0) {
            lastRunDelayNanos = value;
            return value;
        }
        return lastRunDelayNanos;
    }

    public boolean isReactorThread() {
        return loop.isLoopThread();
    }

    public boolean isRunning() {
        return loop.running() && loop.thread().isAlive();
    }

    /** True while the adaptive reactor measured its CPU as shared and blocks instead of spinning. Any thread. */
    public boolean contended() {
        return loop.contended();
    }

    /**
     * Run delay per block in the last measured window: what a wake-up from blocking cost in waiting for the CPU
     * (0 before the first window with a block, or where schedstats are unavailable). Any thread.
     */
    public long wakeupCostNanos() {
        return loop.wakeupCostNanos();
    }

    /** True while the adaptive reactor measures its CPU as shared (whether it then blocks or spins). Any thread. */
    public boolean cpuShared() {
        return loop.cpuShared();
    }

    /** The spin the adaptive reactor's next idle stretch starts with, as learned (0 when it busy-polls). Any thread. */
    public long idleSpinNanos() {
        return loop.idleSpinNanos();
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
        if (!loop.running()) {
            throw new RejectedExecutionException("reactor " + name + " is not running");
        }
        if (!tasks.offer(task)) {
            throw new RejectedExecutionException("reactor " + name + " task queue is full ("
                + tasks.capacity() + ")");
        }
        loop.wake(); // offered first, then "sleeping" read: the loop's hand-shake
    }

    private void wakeup() {
        // The thread may be parked (no selector, or an in-flight-aware group's await that parks): unpark it too.
        LockSupport.unpark(loop.thread());
        PollGroup block = wait.block();
        if (block == null) {
            return;
        }
        try {
            block.wakeup();
        } catch (RuntimeException e) {
            LOG.warn("reactor {}: waking poll group {} failed", name, block, e);
        }
    }

    /**
     * One round: polls every group, runs up to 64 queued tasks and, when any of it found work, ends the round in
     * every group ({@link PollGroup#endRound()}). Reactor thread only (or tests).
     */
    public int doWork() {
        PollGroup[] gs = groups;
        int work = visitGroups(gs, false);
        work += runTasks(MAX_TASKS_PER_ROUND);
        if (work > 0 && gs == groups) { // (a group dropped this round: the next round's poll flushes)
            // A file namespace's read completes in the block-device group's poll, after the socket group's: its
            // response leaves now, not after the next round's epoll_wait (one round less per QD1 I/O).
            work += visitGroups(gs, true);
        }
        rounds++;
        return work;
    }

    /**
     * Polls every group ({@link PollGroup#poll()}), or ends its round ({@link PollGroup#endRound()}); a group that
     * throws is handled as a failed poll (see "Failures" in the class comment). Returns the work done.
     */
    private int visitGroups(PollGroup[] gs, boolean endRound) {
        int work = 0;
        for (int i = 0; i < gs.length; i++) {
            try {
                if (endRound) {
                    work += gs[i].endRound();
                } else {
                    work += gs[i].poll();
                    consecutiveFailures[i] = 0;
                }
            } catch (RuntimeException e) {
                if (onPollFailure(i, e)) {
                    break; // groups changed; the next round sees the new array
                }
            } catch (Error e) {
                dropGroup(i, e);
                break;
            }
        }
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
        consecutiveFailures = new int[next.length];
        closeQuietly(group);
        wait = chooseWait(next);
    }

    /** What the shared loop calls: this reactor's round, wait, wake-up and end. */
    private final class Agent implements ReactorLoop.Agent {
        @Override
        public int doWork() {
            return Reactor.this.doWork();
        }

        @Override
        public boolean hasPendingWork() {
            return !tasks.isEmpty();
        }

        @Override
        public void await(long timeoutNanos) {
            block(timeoutNanos);
        }

        @Override
        public void wakeup() {
            Reactor.this.wakeup();
        }

        @Override
        public void onStop() {
            try {
                runTasks(TASK_QUEUE_CAPACITY);
            } finally {
                closeOwned();
                lifecycle = Lifecycle.STOPPED;
            }
        }
    }

    /**
     * An idle reactor's wait, at most {@code timeoutNanos} ("Idling" and "One wait primitive" above): an in-flight-aware
     * group that is not joined to the selector is waited on itself, bounded; else the groups that wake the selector
     * are armed (any of them with work ready ends the wait before it began), then the reactor blocks in its one wait
     * group (or parks without one), and disarms them after.
     */
    private void block(long timeoutNanos) {
        PollGroup[] gs = groups;
        Wait w = wait;
        Selector selector = w.selector();
        for (PollGroup g : gs) {
            if (g instanceof InFlightAware a && a.hasInFlight() && (selector == null || !a.wakes(selector))) {
                try {
                    g.await(Math.min(timeoutNanos, IN_FLIGHT_AWAIT_NANOS));
                } catch (RuntimeException e) {
                    LOG.warn("reactor {}: await on poll group {} threw", name, g, e);
                }
                return;
            }
        }
        PollGroup block = w.block();
        if (block == null) {
            LockSupport.parkNanos(this, timeoutNanos);
            return;
        }
        boolean armed = false;
        try {
            if (selector != null) {
                for (PollGroup g : gs) {
                    // An in-flight-aware group with nothing in flight has nothing that could arrive: not armed.
                    if (g != block && g instanceof WakesSelector ws && ws.wakes(selector)
                        && !(g instanceof InFlightAware a && !a.hasInFlight())) {
                        armed = true;
                        try {
                            if (!ws.armWakeup()) {
                                return; // work is already there: poll it instead of blocking
                            }
                        } catch (RuntimeException e) {
                            LOG.warn("reactor {}: arming poll group {} threw; not blocking", name, g, e);
                            return;
                        }
                    }
                }
            }
            long bound = w.whole() ? timeoutNanos
                : Math.min(timeoutNanos, TimeUnit.MILLISECONDS.toNanos(AWAIT_MILLIS_SEVERAL_GROUPS));
            try {
                block.await(bound);
            } catch (RuntimeException e) {
                LOG.warn("reactor {}: await on poll group {} threw", name, block, e);
            }
        } finally {
            if (armed) {
                for (PollGroup g : gs) {
                    if (g != block && g instanceof WakesSelector ws && ws.wakes(selector)) {
                        try {
                            ws.disarmWakeup();
                        } catch (RuntimeException e) {
                            LOG.warn("reactor {}: disarming poll group {} threw", name, g, e);
                        }
                    }
                }
            }
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
        if (loop.stop(timeout.toNanos())) {
            return true;
        }
        if (!isReactorThread()) {
            LOG.error("reactor {} did not stop within {} ms; its poll groups stay open", name, timeout.toMillis());
        }
        return false;
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
