package io.nvmeof4j.target.controller;

import io.nvmeof4j.protocol.command.CompletionQueueEntry;
import io.nvmeof4j.protocol.command.SubmissionQueueEntry;
import io.nvmeof4j.protocol.spi.Request;
import io.nvmeof4j.protocol.spi.TransportQueue;

import java.nio.ByteBuffer;

/**
 * The controller layer's per-slot view of a transport {@link Request}: it delegates everything and counts the
 * completion, so the queue knows how many of its commands are still executing (the daemon's shutdown waits for
 * them). Created the first time a slot is seen and kept in the transport request's attachment, then reused for
 * every command of that slot: no allocation per command.
 * <p>Its own {@link #attachment()} is free for the layer below (the NVM executor keeps its per-slot I/O context
 * there), so the two layers never fight over the transport's single attachment.
 */
final class TrackedRequest implements Request {
    private final Request delegate;
    private final ControllerQueueHandler handler;
    private Object attachment;

    TrackedRequest(Request delegate, ControllerQueueHandler handler) {
        this.delegate = delegate;
        this.handler = handler;
    }

    Request delegate() {
        return delegate;
    }

    ControllerQueueHandler handler() {
        return handler;
    }

    @Override
    public TransportQueue queue() {
        return delegate.queue();
    }

    @Override
    public SubmissionQueueEntry command() {
        return delegate.command();
    }

    @Override
    public CompletionQueueEntry response() {
        return delegate.response();
    }

    @Override
    public ByteBuffer data() {
        return delegate.data();
    }

    @Override
    public int dataLength() {
        return delegate.dataLength();
    }

    @Override
    public long receivedNanos() {
        return delegate.receivedNanos();
    }

    @Override
    public void complete(int nvmeStatus) {
        delegate.complete(nvmeStatus);
        handler.commandCompleted();
    }

    @Override
    public Object attachment() {
        return attachment;
    }

    @Override
    public void attach(Object attachment) {
        this.attachment = attachment;
    }
}
