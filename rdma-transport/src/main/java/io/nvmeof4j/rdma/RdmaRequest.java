package io.nvmeof4j.rdma;

import io.nvmeof4j.protocol.command.CompletionQueueEntry;
import io.nvmeof4j.protocol.spi.TransportQueue;
import io.nvmeof4j.protocol.spi.transport.BufferWaitQueue;
import io.nvmeof4j.protocol.spi.transport.CompletionInbox;
import io.nvmeof4j.protocol.spi.transport.DataMapping;
import io.nvmeof4j.protocol.spi.transport.TransportRequest;

import java.nio.ByteBuffer;

/**
 * One command context of an {@link RdmaControllerQueue}, reused for every command that lands in it: the shared
 * {@link TransportRequest} (its SQE copy and the 16-byte response capsule live in the queue's registered memory, sent
 * from there) plus what RDMA adds: the receive holding in-capsule data, the host's keyed address, the rkey to
 * invalidate.
 * <p>Its life is {@link State}, moved by the queue's one step function ({@link RdmaControllerQueue#advance});
 * everything but {@link #complete} runs on the reactor thread. Between states it may wait in its poll group's
 * {@link BufferWaitQueue} (NEED_BUFFER) or, completed on another thread, in its {@link CompletionInbox} (EXECUTED).
 */
final class RdmaRequest extends TransportRequest<RdmaRequest.State, RdmaRequest> {
    /**
     * A context's states (SPDK's {@code spdk_nvmf_rdma_request_state}, reduced to what this target does). Only
     * {@link RdmaControllerQueue#advance} moves a context from one to the next, except {@link #complete} (EXECUTING to
     * EXECUTED, any thread) and the completions of the work requests it waits for.
     */
    enum State {
        /** On the queue's free list. */
        FREE,
        /** Its capsule arrived and its data was mapped ({@link #completionStatus} holds a refusal, if any). */
        NEW,
        /** A keyed transfer waiting for a pool buffer (in the group's buffer wait queue while the pool is dry). */
        NEED_BUFFER,
        /** The RDMA READ of the host's data is posted; its completion makes the command ready. */
        TRANSFERRING_HOST_TO_CONTROLLER,
        /** Every byte the command needs is here. */
        READY_TO_EXECUTE,
        /** With the command layer, which will call {@link #complete}. */
        EXECUTING,
        /** Completed (maybe on another thread, then through the completion inbox): the response goes next. */
        EXECUTED,
        /** The response SEND (chained after the RDMA WRITE of read data) is posted; FREE when it completes. */
        SENDING
    }

    static final int TRANSFER_NONE = DataMapping.TRANSFER_NONE;
    static final int TRANSFER_IN_CAPSULE = DataMapping.TRANSFER_IN_CAPSULE;
    /** Keyed host-to-controller: the target RDMA READs, then executes. */
    static final int TRANSFER_READ = DataMapping.TRANSFER_FROM_HOST;
    /** Keyed controller-to-host: the target executes, then RDMA WRITEs before the response. */
    static final int TRANSFER_WRITE = DataMapping.TRANSFER_TO_HOST;

    final RdmaControllerQueue queue;
    final int index;
    /** Registered address of the response capsule. */
    final long responseAddress;

    /** The receive this command's in-capsule data sits in, reposted when the command completes; -1 if none. */
    int heldReceive = -1;
    long remoteAddress;
    int remoteKey;
    /** rkey to invalidate with SEND_WITH_INV (keyed SGL subtype 0xF), or 0. */
    int invalidateKey;

    RdmaRequest(RdmaControllerQueue queue, int index, ByteBuffer sqeBuffer, ByteBuffer responseView,
                long responseAddress) {
        super(sqeBuffer, new CompletionQueueEntry().wrap(responseView, 0), State.FREE, State.EXECUTING,
            State.EXECUTED);
        this.queue = queue;
        this.index = index;
        this.responseAddress = responseAddress;
    }

    @Override
    public TransportQueue queue() {
        return queue;
    }

    @Override
    protected void completed() {
        if (queue.group.inReactorThread()) {
            queue.advance(this);
        } else {
            queue.group.enqueueCompletion(this);
        }
    }

    @Override
    public int slot() {
        return index;
    }

    /** Takes a received SQE (64 bytes at {@code offset} of {@code source}) into this context: NEW. */
    void begin(ByteBuffer source, int offset, long nowNanos, long sequence) {
        beginCommand(source, offset, nowNanos, sequence);
        heldReceive = -1;
        remoteAddress = 0;
        remoteKey = 0;
        invalidateKey = 0;
        state(State.NEW);
    }

    /** The transfer moves data by RDMA READ or WRITE, through a pool buffer. */
    boolean keyed() {
        return transfer == TRANSFER_READ || transfer == TRANSFER_WRITE;
    }

    // ---- waiting in the poll group -------------------------------------------------------------------------------

    @Override
    public void finishCompletion() {
        queue.advance(this);
    }

    @Override
    public boolean waitAbandoned() {
        return queue.isGone();
    }

    @Override
    public void bufferGranted(ByteBuffer buffer) {
        queue.onBufferGranted(this, buffer);
    }

    @Override
    public void dropWaiting() {
        queue.dropParked(this);
    }

    @Override
    public String toString() {
        return "RdmaRequest[index=" + index + " cid=" + commandId + " state=" + state() + " transfer=" + transfer
            + " length=" + dataLength + "]";
    }
}
