package io.nvmeof4j.protocol.spi.transport;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * What every poll group has, whatever its transport and role: the reactor thread it is bound to (the first that
 * polls it), control tasks other threads hand it (connect, close, timers), and the flag that says the reactor is
 * (about to be) blocked, so a producer wakes it only then.
 * <p>The wake-up protocol: the reactor sets {@link #sleeping(boolean) sleeping} (a volatile write), then reads what
 * producers publish (volatile reads); a producer publishes, then reads {@link #isSleeping()}: one of the two sees the
 * other (Dekker), so no hand-over is missed and no wake-up syscall is made while the reactor is busy.
 * <p>The group's {@link RoundClock} begins a round with every {@link #beginPoll}: a binding that stamps what a round
 * receives reads the clock once per round, not once per command.
 */
public final class PollGroupCore {
    private static final Logger LOG = LoggerFactory.getLogger(PollGroupCore.class);

    private final String name;
    private final Runnable wakeup;
    private final RoundClock clock;
    private final ConcurrentLinkedQueue<Runnable> tasks = new ConcurrentLinkedQueue<>();
    private volatile Thread reactorThread;
    private volatile boolean sleeping;
    private volatile boolean closed;

    /**
     * @param name   names the group in log lines, e.g. "NVMe/TCP poll group"
     * @param wakeup makes the group's blocking wait return (its selector's or completion channel's wakeup)
     */
    public PollGroupCore(String name, Runnable wakeup) {
        this(name, wakeup, new RoundClock());
    }

    /** As above, stamping rounds with {@code clock} (tests give one over a stepped source). */
    public PollGroupCore(String name, Runnable wakeup, RoundClock clock) {
        this.name = name;
        this.wakeup = wakeup;
        this.clock = clock;
    }

    /** The group's round clock (reactor thread). */
    public RoundClock clock() {
        return clock;
    }

    /** Binds the group to the calling thread the first time; every poll and await calls it. */
    public void bindReactorThread() {
        if (reactorThread == null) {
            reactorThread = Thread.currentThread();
        }
    }

    /**
     * Starts a poll round: binds the group to the calling thread (the first time) and runs the tasks handed over
     * before it began. A task handed over while they run (by another thread, or by one of them) waits for the next
     * round, so a producer that keeps handing tasks over cannot hold the reactor in one round, and a round is what
     * was queued when it began (multipath takes turns per round). The round clock begins a round too.
     */
    public int beginPoll() {
        bindReactorThread();
        clock.beginRound();
        return tasks.isEmpty() ? 0 : runTasks(tasks.size());
    }

    /**
     * Starts a blocking wait: binds the group and raises the sleeping flag; the caller then reads what producers
     * publish, and lowers the flag with {@link #endWait} however the wait ends. What the wait itself takes in (a
     * selector's ready sockets) is a round of its own on the round clock: stamped after the wait, not before it.
     */
    public void beginWait() {
        bindReactorThread();
        clock.beginRound();
        sleeping = true;
    }

    public void endWait() {
        sleeping = false;
    }

    /** The thread polling this group, or null before the first poll. */
    public Thread reactorThread() {
        return reactorThread;
    }

    public boolean inReactorThread() {
        return reactorThread == Thread.currentThread();
    }

    /**
     * Any thread: runs {@code task} on the reactor thread during a coming poll, and wakes the reactor if it is (about
     * to be) blocked. A busy reactor is not woken: the wake-up would cost a system call on each side, and its
     * selector would hand the reactor a ready wake-up descriptor, a branch its I/O rounds never take (C2 compiled it
     * out, so every Keep Alive, a timer task, made the reactor's select path not entrant; -Xlog:jit+compilation).
     */
    public void execute(Runnable task) {
        tasks.add(task);
        wakeIfSleeping();
    }

    public boolean hasTasks() {
        return !tasks.isEmpty();
    }

    /** Runs the queued tasks until none is left (reactor thread, closing); a failing one is logged, the others run. */
    public int runTasks() {
        return runTasks(Integer.MAX_VALUE);
    }

    private int runTasks(int max) {
        int n = 0;
        Runnable task;
        while (n < max && (task = tasks.poll()) != null) {
            n++;
            try {
                task.run();
            } catch (RuntimeException e) {
                LOG.error("task on an {} failed", name, e);
            }
        }
        return n;
    }

    /** Any thread, after publishing work: wakes the reactor if it is (about to be) blocked. */
    public void wakeIfSleeping() {
        if (sleeping) {
            wakeup.run();
        }
    }

    public boolean isClosed() {
        return closed;
    }

    /** Marks the group closed; false if it already was (close is idempotent). */
    public boolean markClosed() {
        if (closed) {
            return false;
        }
        closed = true;
        return true;
    }

    @Override
    public String toString() {
        return name;
    }
}
