package io.nvmeof4j.conformance;

import io.nvmeof4j.protocol.spi.PollGroup;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * A reactor for the suite: one thread polling its groups (spin briefly when a round found no work, then wait: in
 * the group's {@code await} when it is the only one, else a short park). Closes its groups when stopped, as a real
 * reactor does. A loop failure (an exception out of {@code poll}) is a transport bug: {@link #close} reports it.
 */
final class PollLoop implements AutoCloseable {
    private static final int IDLE_SPINS = 100;
    private static final long AWAIT_NANOS = TimeUnit.MILLISECONDS.toNanos(1);
    private static final long PARK_NANOS = TimeUnit.MICROSECONDS.toNanos(50);
    private static final long JOIN_MILLIS = 5_000;

    private final List<PollGroup> groups = new CopyOnWriteArrayList<>();
    private final Thread thread;
    private volatile boolean running = true;
    private volatile Throwable failure;

    PollLoop(String name) {
        thread = new Thread(this::run, name);
        thread.setDaemon(true);
        thread.start();
    }

    /** Adds a group; any thread. */
    void add(PollGroup group) {
        groups.add(group);
        group.wakeup();
    }

    private int pollAll() {
        int work = 0;
        for (PollGroup group : groups) {
            work += group.poll();
        }
        return work;
    }

    private void run() {
        try {
            while (running) {
                if (pollAll() > 0) {
                    continue;
                }
                boolean worked = false;
                for (int i = 0; i < IDLE_SPINS && running; i++) {
                    if (pollAll() > 0) {
                        worked = true;
                        break;
                    }
                    Thread.onSpinWait();
                }
                if (!worked && running) {
                    if (groups.size() == 1) {
                        groups.get(0).await(AWAIT_NANOS);
                    } else {
                        LockSupport.parkNanos(PARK_NANOS);
                    }
                }
            }
        } catch (Throwable t) {
            failure = t;
        } finally {
            for (PollGroup group : groups) {
                try {
                    group.close();
                } catch (RuntimeException e) {
                    if (failure == null) {
                        failure = e;
                    }
                }
            }
        }
    }

    /** Stops the thread (bounded) and closes the groups; throws when the loop had failed or does not stop. */
    @Override
    public void close() throws InterruptedException {
        running = false;
        for (PollGroup group : groups) {
            group.wakeup();
        }
        LockSupport.unpark(thread);
        thread.join(JOIN_MILLIS);
        if (thread.isAlive()) {
            throw new IllegalStateException("poll loop " + thread.getName() + " did not stop within " + JOIN_MILLIS
                + " ms");
        }
        if (failure != null) {
            throw new AssertionError("poll loop " + thread.getName() + " failed: " + failure, failure);
        }
    }
}
