package io.nvmeof4j.rdma.host;

import io.nvmeof4j.protocol.command.CompletionQueueEntry;
import io.nvmeof4j.protocol.command.SubmissionQueueEntry;
import io.nvmeof4j.protocol.spi.host.HostCommandCallback;

import java.nio.ByteBuffer;

/**
 * One command slot of an {@link RdmaHostQueue}, reused for every command with its tag (CID bits 11:0). It owns its
 * capsule buffer (SQE plus in-capsule data, in the queue's registered memory) and a copy of the response CQE. A
 * command completes when both its capsule SEND and its response have come back, in either order (the Linux host's
 * rule: the capsule buffer must not be reused while the SEND may still read it). Poll-group thread only.
 */
final class RdmaHostCommand {
    static final int FREE = 0;
    static final int IN_FLIGHT = 1;

    final int tag;
    final SubmissionQueueEntry sqe = new SubmissionQueueEntry();
    final long capsuleAddress;
    final ByteBuffer capsule;
    final CompletionQueueEntry cqe = new CompletionQueueEntry();
    final ByteBuffer cqeBuffer;

    int state = FREE;
    int generation;
    int cid;
    boolean hostToController;
    ByteBuffer data;
    int dataOffset;
    int dataLength;
    HostCommandCallback callback;
    Object context;
    boolean sendDone;
    boolean responseReceived;
    /** Registration cache entry of the caller's buffer, or -1. */
    int cacheEntry = -1;
    /** Bounce buffer carrying the data instead, or null. */
    ByteBuffer bounce;

    RdmaHostCommand(int tag, ByteBuffer capsule, long capsuleAddress, ByteBuffer cqeBuffer) {
        this.tag = tag;
        this.capsule = capsule;
        this.capsuleAddress = capsuleAddress;
        this.cqeBuffer = cqeBuffer;
        sqe.wrap(capsule, 0);
        cqe.wrap(cqeBuffer, 0);
    }

    @Override
    public String toString() {
        return "RdmaHostCommand[tag=" + tag + " cid=" + cid + " state=" + state + " length=" + dataLength + "]";
    }
}
