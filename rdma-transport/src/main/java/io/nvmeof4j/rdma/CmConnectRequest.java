package io.nvmeof4j.rdma;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * The private data of an RDMA CM connect request (REQ) that opens one NVMe queue (NVMe over Fabrics 1.1, 7.3.2,
 * RDMA Transport Specification 1.0, 3.3; wire reference 4). The host sends it; the controller parses it before it
 * allocates anything for the queue.
 * <pre>
 *  0      2      4        6        8        10                       32
 *  +------+------+--------+--------+--------+------------------------+
 *  |RECFMT| QID  |HRQSIZE |HSQSIZE | CNTLID |     reserved (22)       |
 *  +------+------+--------+--------+--------+------------------------+
 * </pre>
 * HRQSIZE is 1-based (the host's receive queue: the most responses it can take at once), HSQSIZE is 0-based (the
 * submission queue size minus one, the same value as the Connect command's SQSIZE). The Linux host sends 32/31 on
 * the admin queue and sqsize+1/sqsize on I/O queues, with CNTLID only on I/O queues.
 */
public final class CmConnectRequest {
    public static final int LENGTH = 32;
    public static final int RECFMT_OFFSET = 0;
    public static final int QID_OFFSET = 2;
    public static final int HRQSIZE_OFFSET = 4;
    public static final int HSQSIZE_OFFSET = 6;
    public static final int CNTLID_OFFSET = 8;
    /** The only record format defined (NVME_RDMA_CM_FMT_1_0). */
    public static final int RECFMT_1_0 = 0;

    private ByteBuffer buffer;
    private int offset;

    public CmConnectRequest wrap(ByteBuffer buffer, int offset) {
        this.buffer = buffer.order() == ByteOrder.LITTLE_ENDIAN ? buffer : buffer.duplicate().order(ByteOrder.LITTLE_ENDIAN);
        this.offset = offset;
        return this;
    }

    /** Zeroes all 32 bytes (the reserved bytes must be zero). */
    public CmConnectRequest clear() {
        for (int i = 0; i < LENGTH; i++) {
            buffer.put(offset + i, (byte) 0);
        }
        return this;
    }

    public int recordFormat() {
        return buffer.getShort(offset + RECFMT_OFFSET) & 0xFFFF;
    }

    public CmConnectRequest recordFormat(int recfmt) {
        buffer.putShort(offset + RECFMT_OFFSET, (short) recfmt);
        return this;
    }

    public int queueId() {
        return buffer.getShort(offset + QID_OFFSET) & 0xFFFF;
    }

    public CmConnectRequest queueId(int qid) {
        buffer.putShort(offset + QID_OFFSET, (short) qid);
        return this;
    }

    /** HRQSIZE, 1-based. */
    public int hostReceiveQueueSize() {
        return buffer.getShort(offset + HRQSIZE_OFFSET) & 0xFFFF;
    }

    public CmConnectRequest hostReceiveQueueSize(int entries) {
        buffer.putShort(offset + HRQSIZE_OFFSET, (short) entries);
        return this;
    }

    /** HSQSIZE, 0-based. */
    public int hostSendQueueSize() {
        return buffer.getShort(offset + HSQSIZE_OFFSET) & 0xFFFF;
    }

    public CmConnectRequest hostSendQueueSize(int zeroBased) {
        buffer.putShort(offset + HSQSIZE_OFFSET, (short) zeroBased);
        return this;
    }

    public int controllerId() {
        return buffer.getShort(offset + CNTLID_OFFSET) & 0xFFFF;
    }

    public CmConnectRequest controllerId(int cntlid) {
        buffer.putShort(offset + CNTLID_OFFSET, (short) cntlid);
        return this;
    }

    /** 32 bytes as the Linux host sends them for queue {@code qid} of {@code sqSize} entries (1-based). */
    public static byte[] encode(int qid, int sqSize, int hostReceiveQueueSize, int cntlid) {
        byte[] bytes = new byte[LENGTH];
        new CmConnectRequest().wrap(ByteBuffer.wrap(bytes), 0).recordFormat(RECFMT_1_0).queueId(qid)
            .hostReceiveQueueSize(hostReceiveQueueSize).hostSendQueueSize(sqSize - 1).controllerId(cntlid);
        return bytes;
    }

    @Override
    public String toString() {
        return "CmConnectRequest[recfmt=" + recordFormat() + " qid=" + queueId() + " hrqsize=" + hostReceiveQueueSize()
            + " hsqsize=" + hostSendQueueSize() + " cntlid=" + controllerId() + "]";
    }
}
