package io.nvmeof4j.rdma;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * The private data of the controller's RDMA CM reject (REJ) of a queue (RDMA Transport Specification 1.0, 3.5;
 * wire reference 4).
 * <pre>
 *  0      2     4
 *  +------+-----+
 *  |RECFMT| STS |
 *  +------+-----+
 * </pre>
 */
public final class CmConnectReject {
    public static final int LENGTH = 4;
    public static final int RECFMT_OFFSET = 0;
    public static final int STS_OFFSET = 2;

    /** The REQ private data is shorter than 32 bytes (or missing). */
    public static final int STS_INVALID_PRIVATE_DATA_LENGTH = 1;
    public static final int STS_INVALID_RECFMT = 2;
    /** QID above what a controller can have (or not a queue id at all). */
    public static final int STS_INVALID_QID = 3;
    /** HSQSIZE: a zero-entry queue, an admin queue above 32 entries, an I/O queue above the port's MQES + 1. */
    public static final int STS_INVALID_HSQSIZE = 4;
    /** HRQSIZE: zero, or more than the port's largest queue. */
    public static final int STS_INVALID_HRQSIZE = 5;
    /** The controller cannot allocate the queue (queue pair, memory, registration). */
    public static final int STS_NO_RESOURCES = 6;
    /** The host's inbound RDMA READ depth (its responder resources) is 0: the controller could not fetch data. */
    public static final int STS_INVALID_IRD = 7;
    /** The outbound RDMA READ depth the host asks of the controller exceeds what the device offers. */
    public static final int STS_INVALID_ORD = 8;

    private ByteBuffer buffer;
    private int offset;

    public CmConnectReject wrap(ByteBuffer buffer, int offset) {
        this.buffer = buffer.order() == ByteOrder.LITTLE_ENDIAN ? buffer : buffer.duplicate().order(ByteOrder.LITTLE_ENDIAN);
        this.offset = offset;
        return this;
    }

    public int recordFormat() {
        return buffer.getShort(offset + RECFMT_OFFSET) & 0xFFFF;
    }

    public CmConnectReject recordFormat(int recfmt) {
        buffer.putShort(offset + RECFMT_OFFSET, (short) recfmt);
        return this;
    }

    public int status() {
        return buffer.getShort(offset + STS_OFFSET) & 0xFFFF;
    }

    public CmConnectReject status(int sts) {
        buffer.putShort(offset + STS_OFFSET, (short) sts);
        return this;
    }

    public static byte[] encode(int status) {
        byte[] bytes = new byte[LENGTH];
        new CmConnectReject().wrap(ByteBuffer.wrap(bytes), 0).recordFormat(CmConnectRequest.RECFMT_1_0).status(status);
        return bytes;
    }

    /** The status by its name in the specification, for messages. */
    public static String statusName(int sts) {
        switch (sts) {
            case STS_INVALID_PRIVATE_DATA_LENGTH:
                return "invalid private data length";
            case STS_INVALID_RECFMT:
                return "invalid RECFMT";
            case STS_INVALID_QID:
                return "invalid QID";
            case STS_INVALID_HSQSIZE:
                return "invalid HSQSIZE";
            case STS_INVALID_HRQSIZE:
                return "invalid HRQSIZE";
            case STS_NO_RESOURCES:
                return "no resources";
            case STS_INVALID_IRD:
                return "invalid IRD";
            case STS_INVALID_ORD:
                return "invalid ORD";
            default:
                return "status " + sts;
        }
    }
}
