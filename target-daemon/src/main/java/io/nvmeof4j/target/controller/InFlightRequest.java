package io.nvmeof4j.target.controller;

import io.nvmeof4j.protocol.spi.ForwardingRequest;
import io.nvmeof4j.protocol.spi.Request;

import java.util.concurrent.atomic.AtomicLongArray;

/**
 * A transport's request counted in its queue's in-flight counters from the moment the command layer admits it (the
 * reservation check passed) until it completes, whatever completes it (the device, a check of the executor, an
 * abort): Preempt and Abort waits on these counters for a preempted host's commands ({@link PreemptAndAbort}).
 * Everything else delegates; the {@link #attachment()} slot is this object's own, so what the layers behind keep
 * per slot (metering, the executor's I/O context) stays with the slot.
 * <p>One per transport slot, made the first time the slot carries an admitted I/O command and kept in the
 * transport request's attachment: nothing is allocated per command. {@link #begin} runs on the queue's reactor;
 * {@link #complete} may run on any thread (one uncontended atomic decrement).
 */
final class InFlightRequest extends ForwardingRequest {
    private AtomicLongArray counters;
    private int half;

    private InFlightRequest(Request delegate) {
        super(delegate);
    }

    /** The slot's wrapper, made on the slot's first admitted I/O command. */
    static InFlightRequest of(Request request) {
        Object a = request.attachment();
        if (a instanceof InFlightRequest) {
            return (InFlightRequest) a;
        }
        InFlightRequest r = new InFlightRequest(request);
        request.attach(r);
        return r;
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
        counters = null;
        delegate.complete(nvmeStatus);
        // After the completion is queued, so a drain ending on this count finds the response on its way already.
        if (c != null) {
            c.decrementAndGet(h);
        }
    }
}
