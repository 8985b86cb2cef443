package io.nvmeof4j.tcp.host;

import io.nvmeof4j.protocol.spi.PollGroup;

import java.util.concurrent.TimeUnit;

/** Polls one group on its own thread (spin briefly, then await ≤ 1 ms); closes the group when stopped. */
final class LoopThread implements AutoCloseable {
    private final PollGroup group;
    private final Thread thread;
    private volatile boolean running = true;
    private volatile Throwable failure;

    LoopThread(String name, PollGroup group) {
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
                for (int i = 0; i < 100 && running; i++) {
                    if (group.poll() > 0) {
                        worked = true;
                        break;
                    }
                    Thread.onSpinWait();
                }
                if (!worked && running) {
                    group.await(TimeUnit.MILLISECONDS.toNanos(1));
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

    Throwable failure() {
        return failure;
    }

    @Override
    public void close() throws InterruptedException {
        running = false;
        group.wakeup();
        thread.join(5_000);
        if (thread.isAlive()) {
            throw new IllegalStateException(thread.getName() + " did not stop within 5 s");
        }
    }
}
