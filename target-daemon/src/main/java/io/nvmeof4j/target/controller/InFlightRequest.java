package io.nvmeof4j.target.controller;

import io.nvmeof4j.protocol.spi.ForwardingRequest;
import io.nvmeof4j.protocol.spi.Request;

import java.util.concurrent.atomic.AtomicLongArray;

/**
 * A transport's request counted in its queue's in-flight counters from the moment the command layer admits it (the
 * reservation check passed) until it completes, whatever completes it (the device, a check of the executor, an
 * abort): Preempt and Abort waits on these counters for a preempted host's commands ({@link PreemptAndAbort}).
 * Everything else delegates.
 * <p>One per I/O queue slot, held by the slot's {@link CommandContext} (and one, never counted, under the metering of
 * each admin queue slot): nothing is allocated per command. {@link #begin} runs on the queue's reactor;
 * {@link #complete} may run on any thread (one uncontended atomic decrement).
 */
final class InFlightRequest extends ForwardingRequest {
    /**
     * Where a request that was not counted (the admin queue's, which nothing counts; a slot between commands) counts
     * down: the slot's own, so that {@link #complete} has no branch that admin commands alone would take (a Keep
     * Alive after long I/O would meet code the JIT compiled without it and trap).
     */
    private final AtomicLongArray uncounted = new AtomicLongArray(2);
    private AtomicLongArray counters = uncounted;
    private int half;

    InFlightRequest(Request delegate) {
        super(delegate);
    }

    /** The transport's request behind this wrapper. */
    Request transportRequest() {
        return delegate;
    }

    /** Counts the command in {@code counters[half]} (reactor thread, before the command is handed on). */
    InFlightRequest begin(AtomicLongArray counters, int half) {
        counters.incrementAndGet(half);
        this.counters = counters;
        this.half = half;
        return this;
    }

    @Override
    public void complete(int nvmeStatus) {
        // Read before the hand-off: once completed, the transport may give the slot to the next command.
        AtomicLongArray c = counters;
        int h = half;
        counters = uncounted;
        delegate.complete(nvmeStatus);
        // After the completion is queued, so a drain ending on this count finds the response on its way already.
        c.decrementAndGet(h);
    }
}
