package io.nvmeof4j.rdma;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * The private data of the controller's RDMA CM accept (REP) (RDMA Transport Specification 1.0, 3.4; wire
 * reference 4).
 * <pre>
 *  0      2       4                          32
 *  +------+-------+--------------------------+
 *  |RECFMT|CRQSIZE|      reserved (28)        |
 *  +------+-------+--------------------------+
 * </pre>
 * CRQSIZE is the controller's receive queue size, 1-based: the commands the host may have outstanding. nvmet
 * answers HSQSIZE + 1 and so do we; the Linux host does not read it, other hosts may.
 */
public final class CmConnectAccept {
    public static final int LENGTH = 32;
    public static final int RECFMT_OFFSET = 0;
    public static final int CRQSIZE_OFFSET = 2;

    private ByteBuffer buffer;
    private int offset;

    public CmConnectAccept wrap(ByteBuffer buffer, int offset) {
        this.buffer = buffer.order() == ByteOrder.LITTLE_ENDIAN ? buffer : buffer.duplicate().order(ByteOrder.LITTLE_ENDIAN);
        this.offset = offset;
        return this;
    }

    public int recordFormat() {
        return buffer.getShort(offset + RECFMT_OFFSET) & 0xFFFF;
    }

    public CmConnectAccept recordFormat(int recfmt) {
        buffer.putShort(offset + RECFMT_OFFSET, (short) recfmt);
        return this;
    }

    /** CRQSIZE, 1-based. */
    public int controllerReceiveQueueSize() {
        return buffer.getShort(offset + CRQSIZE_OFFSET) & 0xFFFF;
    }

    public CmConnectAccept controllerReceiveQueueSize(int entries) {
        buffer.putShort(offset + CRQSIZE_OFFSET, (short) entries);
        return this;
    }

    public static byte[] encode(int controllerReceiveQueueSize) {
        byte[] bytes = new byte[LENGTH];
        new CmConnectAccept().wrap(ByteBuffer.wrap(bytes), 0).recordFormat(CmConnectRequest.RECFMT_1_0)
            .controllerReceiveQueueSize(controllerReceiveQueueSize);
        return bytes;
    }
}
