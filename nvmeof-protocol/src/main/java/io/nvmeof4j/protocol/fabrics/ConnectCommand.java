package io.nvmeof4j.protocol.fabrics;

import io.nvmeof4j.protocol.command.SglDescriptor;
import io.nvmeof4j.protocol.command.SubmissionQueueEntry;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * Flyweight over the 64-byte SQE of a Fabrics Connect command (NVMe-oF 1.1, 3.3; wire reference 2.2).
 *
 * <pre>
 *  0      1      2      4        5       24                 40       42    44       46    47    48      52
 * +------+------+------+--------+-------+------------------+--------+-----+--------+-----+-----+-------+----
 * | 0x7F | 0x40 | CID  | FCTYPE | rsvd  | SGL1 (1024 B of  | RECFMT | QID | SQSIZE |CATTR|rsvd | KATO  | rsvd
 * |      |      |      | = 0x01 |       | Connect data)    |        |     |0-based |     |     | (ms)  |
 * +------+------+------+--------+-------+------------------+--------+-----+--------+-----+-----+-------+----
 * </pre>
 * CATTR bit 2 asks the controller to disable SQ flow control (SQHD 0xFFFF). KATO is used on the admin queue only.
 * The offsets are relative to the start of the SQE. Little-endian.
 */
public final class ConnectCommand {
    public static final int RECFMT_OFFSET = 40;
    public static final int QID_OFFSET = 42;
    public static final int SQSIZE_OFFSET = 44;
    public static final int CATTR_OFFSET = 46;
    public static final int KATO_OFFSET = 48;

    /** CATTR bit 2: disable SQ flow control. */
    public static final int CATTR_DISABLE_SQ_FLOW_CONTROL = 0x04;
    /** The only record format defined. */
    public static final int RECFMT_0 = 0;

    private ByteBuffer buffer;
    private int offset;

    public ConnectCommand wrap(ByteBuffer buffer, int offset) {
        if (buffer.order() != ByteOrder.LITTLE_ENDIAN) {
            throw new IllegalArgumentException("NVMe structures are little-endian; buffer order is " + buffer.order());
        }
        this.buffer = buffer;
        this.offset = offset;
        return this;
    }

    /** Views the same bytes an {@link SubmissionQueueEntry} flyweight is wrapped around. */
    public ConnectCommand wrap(SubmissionQueueEntry sqe) {
        return wrap(sqe.buffer(), sqe.offset());
    }

    /**
     * Zeroes the SQE and writes the common part: opcode 0x7F, PSDT 01b, the command id, FCTYPE Connect and an
     * SGL1 for {@link ConnectData#LENGTH} bytes of data with the given descriptor id.
     */
    public ConnectCommand init(int commandId, int sglId) {
        for (int i = 0; i < SubmissionQueueEntry.LENGTH; i += 8) {
            buffer.putLong(offset + i, 0L);
        }
        buffer.put(offset + SubmissionQueueEntry.OPCODE_OFFSET, (byte) SubmissionQueueEntry.OPCODE_FABRICS);
        buffer.put(offset + SubmissionQueueEntry.FLAGS_OFFSET, (byte) SubmissionQueueEntry.FLAGS_PSDT_SGL);
        buffer.putShort(offset + SubmissionQueueEntry.CID_OFFSET, (short) commandId);
        buffer.put(offset + SubmissionQueueEntry.FCTYPE_OFFSET, (byte) FabricsCommandType.CONNECT);
        buffer.putInt(offset + SubmissionQueueEntry.SGL1_OFFSET + SglDescriptor.LENGTH_OFFSET, ConnectData.LENGTH);
        buffer.put(offset + SubmissionQueueEntry.SGL1_OFFSET + SglDescriptor.ID_OFFSET, (byte) sglId);
        return this;
    }

    public int recordFormat() {
        return buffer.getShort(offset + RECFMT_OFFSET) & 0xFFFF;
    }

    public ConnectCommand recordFormat(int recfmt) {
        buffer.putShort(offset + RECFMT_OFFSET, (short) recfmt);
        return this;
    }

    public int queueId() {
        return buffer.getShort(offset + QID_OFFSET) & 0xFFFF;
    }

    public ConnectCommand queueId(int qid) {
        buffer.putShort(offset + QID_OFFSET, (short) qid);
        return this;
    }

    /** SQSIZE as on the wire: entries minus one. */
    public int submissionQueueSize() {
        return buffer.getShort(offset + SQSIZE_OFFSET) & 0xFFFF;
    }

    public ConnectCommand submissionQueueSize(int zeroBasedSize) {
        buffer.putShort(offset + SQSIZE_OFFSET, (short) zeroBasedSize);
        return this;
    }

    public int connectAttributes() {
        return buffer.get(offset + CATTR_OFFSET) & 0xFF;
    }

    public ConnectCommand connectAttributes(int cattr) {
        buffer.put(offset + CATTR_OFFSET, (byte) cattr);
        return this;
    }

    public boolean sqFlowControlDisabled() {
        return (connectAttributes() & CATTR_DISABLE_SQ_FLOW_CONTROL) != 0;
    }

    /** Keep-alive timeout in milliseconds, unsigned 32 bit held in a long. */
    public long keepAliveTimeoutMillis() {
        return buffer.getInt(offset + KATO_OFFSET) & 0xFFFF_FFFFL;
    }

    public ConnectCommand keepAliveTimeoutMillis(long kato) {
        buffer.putInt(offset + KATO_OFFSET, (int) kato);
        return this;
    }

    @Override
    public String toString() {
        return buffer == null ? "Connect[unwrapped]"
            : String.format("Connect[recfmt=%d qid=%d sqsize=%d cattr=0x%02x kato=%d]", recordFormat(), queueId(),
                submissionQueueSize(), connectAttributes(), keepAliveTimeoutMillis());
    }
}
