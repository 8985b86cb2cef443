package io.nvmeof4j.rdma.host;

import io.nvmeof4j.protocol.command.CompletionQueueEntry;
import io.nvmeof4j.protocol.command.SubmissionQueueEntry;
import io.nvmeof4j.protocol.spi.host.HostCommandSlot;

import java.nio.ByteBuffer;

/**
 * One command slot of an {@link RdmaHostQueue} (the common part, CID and data range, is {@link HostCommandSlot}'s). It
 * owns its capsule buffer (SQE plus in-capsule data, in the queue's registered memory) and a copy of the response CQE. A
 * command completes when both its capsule SEND and its response have come back, in either order (the Linux host's
 * rule: the capsule buffer must not be reused while the SEND may still read it). Poll-group thread only.
 */
final class RdmaHostCommand extends HostCommandSlot {
    private final HostMemory memory;
    final SubmissionQueueEntry sqe = new SubmissionQueueEntry();
    final long capsuleAddress;
    final ByteBuffer capsule;
    final CompletionQueueEntry cqe = new CompletionQueueEntry();
    final ByteBuffer cqeBuffer;

    boolean sendDone;
    boolean responseReceived;
    /** Registration cache entry of the caller's buffer, or -1. */
    int cacheEntry = -1;
    /** Bounce buffer carrying the data instead, or null. */
    ByteBuffer bounce;

    RdmaHostCommand(int tag, HostMemory memory, ByteBuffer capsule, long capsuleAddress, ByteBuffer cqeBuffer) {
        super(tag);
        this.memory = memory;
        this.capsule = capsule;
        this.capsuleAddress = capsuleAddress;
        this.cqeBuffer = cqeBuffer;
        sqe.wrap(capsule, 0);
        cqe.wrap(cqeBuffer, 0);
    }

    /** A read that went through the bounce buffer is copied out to the caller's buffer once it succeeded. */
    @Override
    protected void onEnd(CompletionQueueEntry cqe) {
        if (bounce != null && !hostToController && dataLength > 0 && cqe.status() == 0) {
            data.put(dataOffset, bounce, 0, dataLength);
        }
        releaseData();
    }

    /** Gives back the registration cache entry or the bounce buffer the command's data went through. */
    void releaseData() {
        if (cacheEntry >= 0) {
            memory.cache().release(cacheEntry);
            cacheEntry = -1;
        }
        if (bounce != null) {
            memory.bounce().release(bounce);
            bounce = null;
        }
    }
}
