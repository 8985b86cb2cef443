package io.nvmeof4j.protocol.spi.reactor;

import io.nvmeof4j.protocol.spi.idle.AdaptiveIdleStrategy;
import io.nvmeof4j.protocol.spi.idle.IdleStrategy;
import io.nvmeof4j.protocol.spi.idle.IdleWait;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

/**
 * The one loop of every data-path thread, target ({@code Reactor}) and host ({@code HostReactor}) alike (Agrona's
 * agent runner, issue 12 item 4): {@code while (running) idle.idle(agent.doWork())}, the idle strategy created on
 * the loop's thread, the sleep/wake hand-shake with other threads, and a bounded stop that never interrupts (an
 * interrupt closes NIO channels). What differs between reactors is the {@link Agent}: what a round does, what
 * work other threads may have handed over, where the thread blocks and how it is woken, what it closes at the end.
 *
 * <h2>Sleeping and waking, without a lost wake-up</h2>
 * A blocking reactor publishes {@code sleeping} (a volatile write), then asks its agent whether work was handed
 * over meanwhile ({@link Agent#hasPendingWork()}), and only then blocks in {@link Agent#await(long)}. A thread
 * handing work over enqueues first, then reads {@code sleeping} ({@link #wake()}) and wakes the agent only when it
 * is set: one of the two sees the other (Dekker), and a busy reactor is never woken needlessly.
 */
public final class ReactorLoop {
    private static final Logger LOG = LoggerFactory.getLogger(ReactorLoop.class);

    /** What one reactor does in the loop. Every method but {@link #wakeup()} runs on the loop's thread. */
    public interface Agent {
        /** One round without blocking; returns how much work it found (0 lets the idle strategy idle). */
        int doWork();

        /** Called after {@code sleeping} was published: true when work was handed over and the loop must not block. */
        boolean hasPendingWork();

        /** Blocks on the reactor's wait primitive for at most {@code timeoutNanos}, or until {@link #wakeup()}. */
        void await(long timeoutNanos);

        /** Any thread: ends an {@link #await} under way (or the next one) promptly. */
        void wakeup();

        /** The loop has ended (stopped, or an unexpected failure): close what the reactor owns. Loop thread. */
        void onStop();
    }

    /** Creates the idle strategy on the loop's thread (the adaptive one measures the thread that creates it). */
    @FunctionalInterface
    public interface IdleStrategyFactory {
        IdleStrategy create(IdleWait wait);
    }

    private final String name;
    private final Agent agent;
    private final IdleStrategyFactory idleFactory;
    private final Thread thread;
    private volatile boolean running;
    private volatile boolean sleeping;
    /** Created on the loop's thread when it starts. */
    private volatile IdleStrategy idle;

    /**
     * @param threadFactory makes the loop's thread around the runnable it is given (reactors keep their own
     *                      {@link Thread} subclass, which code on the thread uses to find its reactor); the thread
     *                      is made a daemon and started by {@link #start()}
     */
    public ReactorLoop(String name, Agent agent, IdleStrategyFactory idleFactory,
                       Function<Runnable, Thread> threadFactory) {
        this.name = Objects.requireNonNull(name, "name");
        this.agent = Objects.requireNonNull(agent, "agent");
        this.idleFactory = Objects.requireNonNull(idleFactory, "idleFactory");
        this.thread = threadFactory.apply(this::run);
        this.thread.setDaemon(true);
    }

    public String name() {
        return name;
    }

    public Thread thread() {
        return thread;
    }

    /** Starts the thread. Once. */
    public void start() {
        running = true;
        thread.start();
    }

    /** True from {@link #start()} until a stop was asked or the loop failed. Any thread. */
    public boolean running() {
        return running;
    }

    public boolean isLoopThread() {
        return Thread.currentThread() == thread;
    }

    /**
     * Any thread, after handing work over: wakes the reactor if it is blocked or about to block. Allocation-free;
     * does nothing while the reactor is busy.
     */
    public void wake() {
        if (sleeping) {
            agent.wakeup();
        }
    }

    /**
     * Asks the loop to end and waits up to {@code timeoutNanos} for its thread (which runs {@link Agent#onStop()}).
     * Never interrupts. Returns true when the thread has ended; false on the loop's own thread (it ends after the
     * current round) or when it did not end in time.
     */
    public boolean stop(long timeoutNanos) {
        running = false;
        agent.wakeup();
        if (isLoopThread()) {
            return false;
        }
        try {
            thread.join(Math.max(1, TimeUnit.NANOSECONDS.toMillis(timeoutNanos)));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        return !thread.isAlive();
    }

    /** True while the adaptive strategy measured the CPU as shared and blocks instead of spinning. Any thread. */
    public boolean contended() {
        return idle instanceof AdaptiveIdleStrategy a && a.contended();
    }

    /** What a wake-up from blocking cost in run delay, last measured (0 when not measured). Any thread. */
    public long wakeupCostNanos() {
        return idle instanceof AdaptiveIdleStrategy a ? a.wakeupCostNanos() : 0;
    }

    /** True while the adaptive strategy measures the CPU as shared (whether it then blocks or spins). Any thread. */
    public boolean cpuShared() {
        return idle instanceof AdaptiveIdleStrategy a && a.cpuShared();
    }

    /** The spin the adaptive strategy's next idle stretch starts with, as learned (0 for any other). Any thread. */
    public long idleSpinNanos() {
        return idle instanceof AdaptiveIdleStrategy a ? a.spinNanos() : 0;
    }

    private void run() {
        IdleStrategy strategy = null;
        try {
            strategy = idleFactory.create(this::block);
            idle = strategy;
            while (running) {
                strategy.idle(agent.doWork());
            }
        } catch (Throwable t) {
            LOG.error("reactor {} stopped by an unexpected failure", name, t);
        } finally {
            running = false;
            if (strategy != null) {
                strategy.close();
            }
            try {
                agent.onStop();
            } catch (RuntimeException e) {
                LOG.error("reactor {}: closing what it owns failed", name, e);
            }
        }
    }

    /** The loop's {@link IdleWait}: the hand-shake of the class comment, then the agent's wait. */
    private void block(long timeoutNanos) {
        sleeping = true;
        try {
            if (!running || agent.hasPendingWork()) {
                return;
            }
            agent.await(timeoutNanos);
        } finally {
            sleeping = false;
        }
    }

    @Override
    public String toString() {
        return "reactor loop " + name;
    }
}
