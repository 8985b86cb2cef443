package io.nvmeof4j.tcp;

import io.nvmeof4j.protocol.spi.PollGroup;

import java.util.concurrent.TimeUnit;

/**
 * A minimal reactor for tests: one thread polling a group, spinning briefly when idle, then blocking in
 * {@code await} for at most a millisecond. Closes the group when stopped, as a real reactor does.
 */
final class TestReactor implements AutoCloseable {
    private static final int IDLE_SPINS = 200;
    private static final long AWAIT_NANOS = TimeUnit.MILLISECONDS.toNanos(1);

    private final PollGroup group;
    private final Thread thread;
    private volatile boolean running = true;
    private volatile Throwable failure;

    TestReactor(String name, PollGroup group) {
        this.group = group;
        this.thread = new Thread(this::run, name);
        this.thread.setDaemon(true);
        this.thread.start();
    }

    private void run() {
        try {
            while (running) {
                if (group.poll() > 0) {
                    continue;
                }
                boolean worked = false;
                for (int i = 0; i < IDLE_SPINS && running; i++) {
                    if (group.poll() > 0) {
                        worked = true;
                        break;
                    }
                    Thread.onSpinWait();
                }
                if (!worked && running) {
                    group.await(AWAIT_NANOS);
                }
            }
        } catch (Throwable t) {
            failure = t;
        } finally {
            group.close();
        }
    }

    Thread thread() {
        return thread;
    }

    /** Non-null if the loop died with an exception (a transport bug). */
    Throwable failure() {
        return failure;
    }

    @Override
    public void close() throws InterruptedException {
        running = false;
        group.wakeup();
        thread.join(TimeUnit.SECONDS.toMillis(5));
        if (thread.isAlive()) {
            throw new IllegalStateException("reactor " + thread.getName() + " did not stop within 5 s");
        }
    }
}
