package io.nvmeof4j.rdma;

import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;

/** A completion channel stand-in: await sleeps until woken or timed out. Unit tests only. */
public final class FakeWaiter implements CompletionWaiter {
    private final Semaphore permits = new Semaphore(0);
    volatile boolean closed;

    @Override
    public void await(long timeoutNanos) {
        try {
            permits.tryAcquire(timeoutNanos, TimeUnit.NANOSECONDS);
            permits.drainPermits();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    @Override
    public void wakeup() {
        permits.release();
    }

    @Override
    public void close() {
        closed = true;
    }
}
