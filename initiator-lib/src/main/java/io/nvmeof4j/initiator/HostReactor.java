package io.nvmeof4j.initiator;

import io.nvmeof4j.protocol.spi.host.HostPollGroup;
import io.nvmeof4j.protocol.spi.idle.AdaptiveIdleStrategy;
import io.nvmeof4j.protocol.spi.idle.IdleStrategy;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.Arrays;
import java.util.concurrent.TimeUnit;

/**
 * One host data-path thread: polls its transport poll group, takes I/O handed over by other threads from its
 * queues' MPSC rings, and checks command deadlines every {@link #TIMER_PERIOD_NANOS}. It idles like the target's
 * reactors, with the same {@link AdaptiveIdleStrategy}: spin {@link #IDLE_SPIN_NANOS}, yield, then block in the
 * poll group, backing off to {@link #TIMER_PERIOD_NANOS} (so deadlines are still checked on time), and block at
 * once while its CPU is measured as shared (an application thread or a neighbour on the same core); submitters wake
 * it only when it is blocked.
 */
final class HostReactor implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(HostReactor.class);
    static final long IDLE_SPIN_NANOS = AdaptiveIdleStrategy.SPIN_NANOS_DEFAULT;
    static final long TIMER_PERIOD_NANOS = TimeUnit.MILLISECONDS.toNanos(10);

    final HostPollGroup group;
    private final ReactorThread thread;
    private volatile boolean running = true;
    private volatile boolean sleeping;
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
        this.group = group;
        this.thread = new ReactorThread(this::run, name, slot);
        thread.setDaemon(true);
        thread.start();
    }

    boolean inReactorThread() {
        return Thread.currentThread() == thread;
    }

    Thread thread() {
        return thread;
    }

    void execute(Runnable task) {
        group.execute(task);
    }

    /** Wakes the reactor if it is blocked (any thread; allocation-free). */
    void wake() {
        if (sleeping) {
            group.wakeup();
        }
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

    private void run() {
        IdleStrategy strategy = null;
        try {
            // Created here: the adaptive strategy measures the thread that creates it.
            strategy = AdaptiveIdleStrategy.forCurrentThread(thread.getName(), this::block, IDLE_SPIN_NANOS,
                TIMER_PERIOD_NANOS);
            nextTimerNanos = System.nanoTime() + TIMER_PERIOD_NANOS;
            while (running) {
                strategy.idle(doWork());
            }
        } catch (Throwable t) {
            LOG.error("host reactor {} stopped by an unexpected failure; closing its queues", thread.getName(), t);
        } finally {
            if (strategy != null) {
                strategy.close();
            }
            try {
                group.close();
            } catch (RuntimeException e) {
                LOG.warn("closing the poll group of {} failed", thread.getName(), e);
            }
        }
    }

    /**
     * One round: handed-over I/O, the poll group (reads, completions, then one flush per connection), the deadlines
     * when due. A failed round is logged and counts 0.
     */
    private int doWork() {
        try {
            int work = 0;
            IoQueue[] current = queues;
            for (IoQueue queue : current) {
                work += queue.drainInbound();
            }
            work += group.poll();
            // After the flush: what callbacks submit from here on (timeouts below, completions read while the
            // reactor blocks) goes out with the next round's flush, so it belongs to the next round.
            thread.round++;
            long now = System.nanoTime();
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

    /** The reactor's {@link io.nvmeof4j.protocol.spi.idle.IdleWait}. */
    private void block(long timeoutNanos) {
        sleeping = true; // volatile write, then the ring checks: pairs with wake() (Dekker)
        try {
            IoQueue[] current = queues;
            for (IoQueue queue : current) {
                if (queue.hasInbound()) {
                    return;
                }
            }
            group.await(timeoutNanos);
        } catch (RuntimeException e) {
            LOG.error("host reactor {}: waiting in its poll group failed; continuing", thread.getName(), e);
        } finally {
            sleeping = false;
        }
    }

    /** Stops the thread, which closes its poll group (every queue on it fails its commands with a path error). */
    @Override
    public void close() {
        running = false;
        group.wakeup();
        if (!inReactorThread()) {
            try {
                thread.join(TimeUnit.SECONDS.toMillis(5));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            if (thread.isAlive()) {
                LOG.warn("host reactor {} did not stop within 5 s", thread.getName());
            }
        }
    }
}
