package io.nvmeof4j.tcp;

import io.nvmeof4j.protocol.spi.PollGroup;
import io.nvmeof4j.protocol.spi.idle.AdaptiveIdleStrategy;
import io.nvmeof4j.protocol.spi.reactor.ReactorLoop;

import java.util.concurrent.TimeUnit;

/**
 * A minimal reactor for tests of both roles (a target's poll group, a host's): the shared {@link ReactorLoop} over one
 * group (spin briefly when idle, then block in
 * {@code await} for at most a millisecond). Closes the group when stopped, as a real reactor does.
 */
public final class TestReactor implements AutoCloseable {
    private static final long MAX_AWAIT_NANOS = TimeUnit.MILLISECONDS.toNanos(1);

    private final ReactorLoop loop;
    private volatile Throwable failure;

    public TestReactor(String name, PollGroup group) {
        this.loop = new ReactorLoop(name, new ReactorLoop.Agent() {
            @Override
            public int doWork() {
                try {
                    return group.poll();
                } catch (RuntimeException | Error e) {
                    failure = e;
                    throw e;
                }
            }

            @Override
            public boolean hasPendingWork() {
                return false;
            }

            @Override
            public void await(long timeoutNanos) {
                group.await(timeoutNanos);
            }

            @Override
            public void wakeup() {
                group.wakeup();
            }

            @Override
            public void onStop() {
                group.close();
            }
        }, wait -> AdaptiveIdleStrategy.forCurrentThread(name, wait, AdaptiveIdleStrategy.SPIN_NANOS_DEFAULT,
            MAX_AWAIT_NANOS), body -> new Thread(body, name));
        loop.start();
    }

    public Thread thread() {
        return loop.thread();
    }

    /** Non-null if the loop died with an exception (a transport bug). */
    public Throwable failure() {
        return failure;
    }

    @Override
    public void close() {
        if (!loop.stop(TimeUnit.SECONDS.toNanos(5))) {
            throw new IllegalStateException("reactor " + loop.name() + " did not stop within 5 s");
        }
    }
}
