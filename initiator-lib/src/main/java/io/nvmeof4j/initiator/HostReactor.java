package io.nvmeof4j.initiator;

import io.nvmeof4j.jni.cpu.ReactorPinning;
import io.nvmeof4j.protocol.spi.host.HostPollGroup;
import io.nvmeof4j.protocol.spi.idle.AdaptiveIdleStrategy;
import io.nvmeof4j.protocol.spi.idle.IdleMode;
import io.nvmeof4j.protocol.spi.reactor.ReactorLoop;
import io.nvmeof4j.protocol.spi.transport.RoundClock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.Arrays;
import java.util.concurrent.TimeUnit;

/**
 * One host data-path thread: polls its transport poll group, takes I/O handed over by other threads from its
 * queues' MPSC rings, and checks command deadlines every {@link #TIMER_PERIOD_NANOS}. Its loop is the target's
 * ({@link ReactorLoop}, with the same {@link AdaptiveIdleStrategy}): spin {@link #IDLE_SPIN_NANOS}, yield, then block
 * in the poll group, backing off to {@link #TIMER_PERIOD_NANOS} (so deadlines are still checked on time), and block
 * at once while its CPU is measured as shared (an application thread or a neighbour on the same core); submitters
 * wake it only when it is blocked. What is the host's own: the round counter multipath takes turns by, the deadline
 * timer, and the queues' inbound rings as the work handed over.
 * <p>Time comes from the poll group's {@link RoundClock}, read at most once a round (a system call where the
 * clocksource is not readable from user space, the QEMU guest's HPET): the round's first completion reads it, and
 * the round's other completions (their latency ends), the submissions their callbacks make (latency starts) and the
 * timer share that read; a command's deadline starts from the last time read, at most a round (a timer period when
 * the reactor blocked) old, which the millisecond-grained command timeout does not notice.
 * <p>With {@code -Dnvmeof4j.host.idle_strategy=busy} ({@link NvmeofHost#IDLE_PROP_NAME}) the reactor never
 * blocks: it polls without pause, as SPDK's perf does, one whole CPU per reactor, for load generators on a dedicated
 * core.
 */
final class HostReactor implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(HostReactor.class);
    static final long IDLE_SPIN_NANOS = AdaptiveIdleStrategy.SPIN_NANOS_DEFAULT;
    static final long TIMER_PERIOD_NANOS = TimeUnit.MILLISECONDS.toNanos(10);
    private static final long STOP_TIMEOUT_NANOS = TimeUnit.SECONDS.toNanos(5);

    final HostPollGroup group;
    /** The group's round clock (reactor thread). */
    final RoundClock clock;
    /** How the reactor idles: {@link NvmeofHost#IDLE_PROP_NAME} when it was made. */
    final IdleMode idleMode;
    private final ReactorLoop loop;
    private final ReactorThread thread;
    /** Reactor thread only (changed through {@link #execute}). */
    private IoQueue[] queues = new IoQueue[0];
    /** Reactor thread only. */
    private long nextTimerNanos;

    /**
     * The reactor's thread, which counts its rounds: a multipath controller sends everything one round submits down
     * one path, since a connection costs one read and one (gathering) write per round however many commands it
     * carries (see {@link MultipathController#select}).
     */
    static final class ReactorThread extends Thread {
        /** This reactor's index among the host's reactors (all transports): its slot in per-reactor arrays. */
        final int slot;
        /** Rounds ended so far; a round ends after the poll group's flush. Written and read by this thread only. */
        long round;

        ReactorThread(Runnable body, String name, int slot) {
            super(body, name);
            this.slot = slot;
        }
    }

    /** @param slot this reactor's index among the host's reactors ({@link ReactorThread#slot}) */
    HostReactor(String name, HostPollGroup group, int slot) {
        this(name, group, slot, null, 0);
    }

    /**
     * @param pinning null, or the plan whose CPU {@code index} the reactor's thread pins itself to as it starts
     */
    HostReactor(String name, HostPollGroup group, int slot, ReactorPinning pinning, int index) {
        this.group = group;
        this.clock = group.clock();
        ReactorThread[] made = new ReactorThread[1];
        IdleMode idleMode = idleMode();
        this.idleMode = idleMode;
        this.loop = new ReactorLoop(name, new Agent(),
            wait -> idleMode.newStrategy(name, wait, IDLE_SPIN_NANOS, TIMER_PERIOD_NANOS),
            body -> made[0] = new ReactorThread(pinning == null ? body : pinning.reactorBody(index, name, body), name,
                slot));
        this.thread = made[0];
        nextTimerNanos = clock.last() + TIMER_PERIOD_NANOS;
        loop.start();
    }

    /** {@link NvmeofHost#IDLE_PROP_NAME}'s idle mode (adaptive when unset); an unknown one is refused, naming it. */
    static IdleMode idleMode() {
        String value = System.getProperty(NvmeofHost.IDLE_PROP_NAME, IdleMode.ADAPTIVE.configName()).trim();
        try {
            return IdleMode.fromConfigName(value);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(NvmeofHost.IDLE_PROP_NAME + ": " + e.getMessage(), e);
        }
    }

    /** This reactor's index among the host's reactors ({@link ReactorThread#slot}). */
    int slot() {
        return thread.slot;
    }

    /** The spin the adaptive strategy's next idle stretch starts with, as learned (0 for busy polling). Any thread. */
    long idleSpinNanos() {
        return loop.idleSpinNanos();
    }

    /** What a wake-up from blocking cost in run delay, last measured (0 when not measured). Any thread. */
    long wakeupCostNanos() {
        return loop.wakeupCostNanos();
    }

    /** True while the adaptive strategy measures the reactor's CPU as shared. Any thread. */
    boolean cpuShared() {
        return loop.cpuShared();
    }

    boolean inReactorThread() {
        return loop.isLoopThread();
    }

    Thread thread() {
        return thread;
    }

    void execute(Runnable task) {
        group.execute(task);
    }

    /** Wakes the reactor if it is blocked (any thread; allocation-free). */
    void wake() {
        loop.wake();
    }

    void addQueue(IoQueue queue) {
        execute(() -> {
            IoQueue[] grown = Arrays.copyOf(queues, queues.length + 1);
            grown[queues.length] = queue;
            queues = grown;
        });
    }

    void removeQueue(IoQueue queue) {
        execute(() -> queues = Arrays.stream(queues).filter(q -> q != queue).toArray(IoQueue[]::new));
    }

    /** The host's side of the shared loop. */
    private final class Agent implements ReactorLoop.Agent {
        /**
         * One round: handed-over I/O, the poll group (reads, completions, then one flush per connection), the
         * deadlines when due. A failed round is logged and counts 0.
         */
        @Override
        public int doWork() {
            try {
                int work = 0;
                clock.beginRound(); // the group begins another when it polls; this one covers a group that does not
                IoQueue[] current = queues;
                for (IoQueue queue : current) {
                    work += queue.drainInbound();
                }
                work += group.poll();
                // After the flush: what callbacks submit from here on (timeouts below, completions read while the
                // reactor blocks) goes out with the next round's flush, so it belongs to the next round.
                thread.round++;
                long now = clock.now();
                if (now - nextTimerNanos >= 0) {
                    for (IoQueue queue : current) {
                        queue.checkTimeouts(now);
                    }
                    nextTimerNanos = now + TIMER_PERIOD_NANOS;
                }
                return work;
            } catch (RuntimeException e) {
                LOG.error("host reactor {} failed a round; continuing", thread.getName(), e);
                return 0;
            }
        }

        @Override
        public boolean hasPendingWork() {
            IoQueue[] current = queues;
            for (IoQueue queue : current) {
                if (queue.hasInbound()) {
                    return true;
                }
            }
            return false;
        }

        @Override
        public void await(long timeoutNanos) {
            try {
                clock.beginRound(); // what the wait reads is a round of its own
                group.await(timeoutNanos);
            } catch (RuntimeException e) {
                LOG.error("host reactor {}: waiting in its poll group failed; continuing", thread.getName(), e);
            }
        }

        @Override
        public void wakeup() {
            group.wakeup();
        }

        /** The poll group closes with the thread: every queue on it fails its commands with a path error. */
        @Override
        public void onStop() {
            try {
                group.close();
            } catch (RuntimeException e) {
                LOG.warn("closing the poll group of {} failed", thread.getName(), e);
            }
        }
    }

    /** Stops the thread, which closes its poll group (every queue on it fails its commands with a path error). */
    @Override
    public void close() {
        if (!loop.stop(STOP_TIMEOUT_NANOS) && !inReactorThread()) {
            LOG.warn("host reactor {} did not stop within 5 s", thread.getName());
        }
    }
}
