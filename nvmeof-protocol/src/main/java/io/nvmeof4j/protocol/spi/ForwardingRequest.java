package io.nvmeof4j.protocol.spi;

import io.nvmeof4j.protocol.command.CompletionQueueEntry;
import io.nvmeof4j.protocol.command.SubmissionQueueEntry;

import java.nio.ByteBuffer;
import java.util.Objects;

/**
 * A layer around a transport's {@link Request} (metering, in-flight counting): everything forwards to the request
 * behind it except {@link #complete(int)}, which the layer overrides. One per transport slot, kept in the command
 * layer's per-slot context: nothing is allocated per command.
 */
public abstract class ForwardingRequest implements Request {
    protected final Request delegate;

    protected ForwardingRequest(Request delegate) {
        this.delegate = Objects.requireNonNull(delegate, "delegate");
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
    public boolean takesLentData() {
        return delegate.takesLentData();
    }

    @Override
    public void lendData(ByteBuffer memory, int offset) {
        delegate.lendData(memory, offset);
    }

    @Override
    public long receivedNanos() {
        return delegate.receivedNanos();
    }

    @Override
    public long sequence() {
        return delegate.sequence();
    }

    @Override
    public int slot() {
        return delegate.slot();
    }
}
