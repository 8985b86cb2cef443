package io.nvmeof4j.tcp.host;

import io.nvmeof4j.protocol.command.CompletionQueueEntry;
import io.nvmeof4j.protocol.spi.host.HostCommandSlot;
import io.nvmeof4j.protocol.tcp.CapsuleCmdPdu;
import io.nvmeof4j.protocol.tcp.H2CDataPdu;
import io.nvmeof4j.protocol.tcp.PduFlyweight;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * One command slot of a {@link TcpHostQueue} (the common part, CID and data range, is {@link HostCommandSlot}'s). It
 * owns preallocated views of the queue's slot memory: the CapsuleCmd header (with the SQE), the H2CData header, a data
 * digest, and a CQE kept when a completion overtakes the command's own sends. It is also the send job for its own
 * PDUs: up to {@link #MAX_SEGMENTS} segments, each a buffer with its own position and limit kept here, so that
 * several commands can send disjoint ranges of one caller buffer. Poll-group thread only.
 */
final class TcpHostCommand extends HostCommandSlot {
    /** The CapsuleCmd is queued or being written. */
    static final int SENDING_CAPSULE = SUBMITTED;
    /** Waiting for the controller: R2T, C2HData or CapsuleResp. */
    static final int IN_FLIGHT = 2;

    static final int SEND_CAPSULE = 0;
    static final int SEND_H2C = 1;

    static final int MAX_SEGMENTS = 3;
    static final int SLOT_BYTES = 160;
    private static final int CAPSULE_AT = 0;
    private static final int H2C_AT = 80;
    private static final int DIGEST_AT = 112;
    private static final int CQE_AT = 128;

    final ByteBuffer capsuleHeader;
    final CapsuleCmdPdu capsule = new CapsuleCmdPdu();
    final ByteBuffer h2cHeader;
    final H2CDataPdu h2c = new H2CDataPdu();
    final ByteBuffer dataDigest;
    final ByteBuffer deferredCqeBuffer;
    final CompletionQueueEntry deferredCqe = new CompletionQueueEntry();

    boolean inCapsule;

    /** C2H: bytes received so far. */
    int c2hReceived;
    /** H2C: bytes sent so far (in-capsule or H2CData): the R2TO the next R2T must carry. */
    int h2cSent;
    int ttag;
    int r2tRemaining;
    /** A completion arrived while this command's PDUs were still queued: delivered once they are out. */
    boolean completionDeferred;

    // Send job.
    int sendKind;
    boolean inSendQueue;
    TcpHostCommand nextSend;
    final ByteBuffer[] segments = new ByteBuffer[MAX_SEGMENTS];
    final int[] segmentPosition = new int[MAX_SEGMENTS];
    final int[] segmentLimit = new int[MAX_SEGMENTS];
    int segmentCount;
    int segmentIndex;
    /** Index of the segment holding the caller's data, or -1. */
    int dataSegment = -1;

    TcpHostCommand(int tag, ByteBuffer slotMemory, int slotOffset) {
        super(tag);
        this.capsuleHeader = view(slotMemory, slotOffset + CAPSULE_AT,
            CapsuleCmdPdu.HEADER_LENGTH + PduFlyweight.DIGEST_LENGTH);
        this.h2cHeader = view(slotMemory, slotOffset + H2C_AT, H2CDataPdu.HEADER_LENGTH + PduFlyweight.DIGEST_LENGTH);
        this.dataDigest = view(slotMemory, slotOffset + DIGEST_AT, PduFlyweight.DIGEST_LENGTH);
        this.deferredCqeBuffer = view(slotMemory, slotOffset + CQE_AT, CompletionQueueEntry.LENGTH);
        capsule.wrap(capsuleHeader, 0);
        h2c.wrap(h2cHeader, 0);
        deferredCqe.wrap(deferredCqeBuffer, 0);
    }

    private static ByteBuffer view(ByteBuffer memory, int offset, int length) {
        memory.limit(offset + length).position(offset);
        ByteBuffer view = memory.slice().order(ByteOrder.LITTLE_ENDIAN);
        memory.clear();
        return view;
    }

    void clearSegments() {
        segmentCount = 0;
        segmentIndex = 0;
        dataSegment = -1;
    }

    void addSegment(ByteBuffer buffer, int position, int limit) {
        segments[segmentCount] = buffer;
        segmentPosition[segmentCount] = position;
        segmentLimit[segmentCount] = limit;
        segmentCount++;
    }

    void addDataSegment(ByteBuffer buffer, int position, int limit) {
        dataSegment = segmentCount;
        addSegment(buffer, position, limit);
    }

    /** Whether every byte of the armed segments went out (moving {@link #segmentIndex} past finished ones). */
    boolean segmentsWritten() {
        while (segmentIndex < segmentCount && segmentPosition[segmentIndex] >= segmentLimit[segmentIndex]) {
            segmentIndex++;
        }
        return segmentIndex == segmentCount;
    }

    /** More H2CData PDUs of the current R2T follow the armed one (they reuse its header). */
    boolean hasMorePdus() {
        return sendKind == SEND_H2C && r2tRemaining > 0;
    }

    /** The caller's buffer is still to be written by this job. */
    ByteBuffer pendingDataBuffer() {
        return dataSegment >= segmentIndex && dataSegment >= 0 ? segments[dataSegment] : null;
    }

    @Override
    protected void onEnd(CompletionQueueEntry cqe) {
        completionDeferred = false;
        for (int i = 0; i < MAX_SEGMENTS; i++) {
            segments[i] = null;
        }
    }
}
