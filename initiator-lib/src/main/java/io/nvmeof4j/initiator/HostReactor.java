package io.nvmeof4j.initiator;

import io.nvmeof4j.protocol.spi.host.HostPollGroup;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.Arrays;
import java.util.concurrent.TimeUnit;

/**
 * One host data-path thread: polls its transport poll group, takes I/O handed over by other threads from its
 * queues' MPSC rings, and checks command deadlines every {@link #TIMER_PERIOD_NANOS}. When idle it spins for
 * {@link #IDLE_SPIN_NANOS} (waking a sleeping thread costs ~70 µs on a 2-vCPU machine, see performance.md), then
 * blocks in the selector for at most a millisecond; submitters wake it only when it is blocked.
 */
final class HostReactor implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(HostReactor.class);
    static final long IDLE_SPIN_NANOS = TimeUnit.MICROSECONDS.toNanos(50);
    static final long TIMER_PERIOD_NANOS = TimeUnit.MILLISECONDS.toNanos(10);
    private static final long AWAIT_NANOS = TimeUnit.MILLISECONDS.toNanos(1);

    final HostPollGroup group;
    private final Thread thread;
    private volatile boolean running = true;
    private volatile boolean sleeping;
    /** Reactor thread only (changed through {@link #execute}). */
    private IoQueue[] queues = new IoQueue[0];

    HostReactor(String name, HostPollGroup group) {
        this.group = group;
        this.thread = new Thread(this::run, name);
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
        try {
            loop();
        } catch (Throwable t) {
            LOG.error("host reactor {} stopped by an unexpected failure; closing its queues", thread.getName(), t);
        } finally {
            try {
                group.close();
            } catch (RuntimeException e) {
                LOG.warn("closing the poll group of {} failed", thread.getName(), e);
            }
        }
    }

    private void loop() {
        long idleSince = 0;
        long nextTimer = System.nanoTime() + TIMER_PERIOD_NANOS;
        while (running) {
            try {
                int work = 0;
                IoQueue[] current = queues;
                for (IoQueue queue : current) {
                    work += queue.drainInbound();
                }
                work += group.poll();
                long now = System.nanoTime();
                if (now - nextTimer >= 0) {
                    for (IoQueue queue : current) {
                        queue.checkTimeouts(now);
                    }
                    nextTimer = now + TIMER_PERIOD_NANOS;
                }
                if (work > 0) {
                    idleSince = 0;
                    continue;
                }
                if (idleSince == 0) {
                    idleSince = now;
                    continue;
                }
                if (now - idleSince < IDLE_SPIN_NANOS) {
                    Thread.onSpinWait();
                    continue;
                }
                sleeping = true; // volatile write, then the ring checks: pairs with wake() (Dekker)
                boolean handedOver = false;
                for (IoQueue queue : current) {
                    handedOver |= queue.hasInbound();
                }
                if (!handedOver) {
                    group.await(AWAIT_NANOS);
                }
                sleeping = false;
            } catch (RuntimeException e) {
                sleeping = false;
                LOG.error("host reactor {} failed a round; continuing", thread.getName(), e);
                try {
                    Thread.sleep(1);
                } catch (InterruptedException ie) {
                    Thread.currentThread().interrupt();
                    break;
                }
            }
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
