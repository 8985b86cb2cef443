package io.nvmeof4j.tcp;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * A connection-level PDU held in its own preallocated buffer: the ICResp, or the C2HTermReq that precedes a
 * protocol-error close.
 */
final class ControlPduJob extends SendJob {
    final ByteBuffer pdu;
    private final Runnable onSent;

    ControlPduJob(int capacity, Runnable onSent) {
        this.pdu = ByteBuffer.allocateDirect(capacity).order(ByteOrder.LITTLE_ENDIAN);
        this.onSent = onSent;
    }

    /** Arms the first {@code length} bytes of {@link #pdu}. */
    void arm(int length) {
        pdu.limit(length).position(0);
        segments[0] = pdu;
        armSegments(1);
    }

    @Override
    boolean hasMorePdus() {
        return false;
    }

    @Override
    boolean armNextPdu() {
        return false;
    }

    @Override
    void onSent() {
        if (onSent != null) {
            onSent.run();
        }
    }

    @Override
    void onDropped() {
    }
}
