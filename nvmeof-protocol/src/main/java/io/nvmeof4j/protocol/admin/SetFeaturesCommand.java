package io.nvmeof4j.protocol.admin;

import io.nvmeof4j.protocol.command.SubmissionQueueEntry;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * Flyweight over the SQE of a Set Features command (opcode 09h; NVMe Base 2.0, 5.27; wire reference 2.9).
 *
 * <pre>
 *  CDW10 (byte 40)                 CDW11 (byte 44)      CDW12..CDW13       CDW14 (byte 56)
 *  31  30                8 7    0   31              0
 * +---+-------------------+------+  +----------------+  +---------------+  +--------+-------+
 * |SV | reserved          | FID  |  | feature value  |  | feature value |  | rsvd   | UUIDX |
 * +---+-------------------+------+  +----------------+  +---------------+  +--------+-------+
 * </pre>
 * SV = 1 asks the controller to also save the value across resets.
 */
public final class SetFeaturesCommand {
    public static final int FID_OFFSET = 40;
    public static final int CDW10_OFFSET = 40;
    public static final int CDW11_OFFSET = 44;
    public static final int CDW12_OFFSET = 48;
    public static final int SAVE = 1 << 31;

    private ByteBuffer buffer;
    private int offset;

    public SetFeaturesCommand wrap(ByteBuffer buffer, int offset) {
        if (buffer.order() != ByteOrder.LITTLE_ENDIAN) {
            throw new IllegalArgumentException("NVMe structures are little-endian; buffer order is " + buffer.order());
        }
        this.buffer = buffer;
        this.offset = offset;
        return this;
    }

    public SetFeaturesCommand wrap(SubmissionQueueEntry sqe) {
        return wrap(sqe.buffer(), sqe.offset());
    }

    /** Zeroes the SQE and writes opcode 09h, PSDT 01b, the command id, the feature id and CDW11. */
    public SetFeaturesCommand init(int commandId, int fid, int cdw11) {
        for (int i = 0; i < SubmissionQueueEntry.LENGTH; i += 8) {
            buffer.putLong(offset + i, 0L);
        }
        buffer.put(offset + SubmissionQueueEntry.OPCODE_OFFSET, (byte) AdminOpcode.SET_FEATURES);
        buffer.put(offset + SubmissionQueueEntry.FLAGS_OFFSET, (byte) SubmissionQueueEntry.FLAGS_PSDT_SGL);
        buffer.putShort(offset + SubmissionQueueEntry.CID_OFFSET, (short) commandId);
        buffer.put(offset + FID_OFFSET, (byte) fid);
        buffer.putInt(offset + CDW11_OFFSET, cdw11);
        return this;
    }

    public int featureId() {
        return buffer.get(offset + FID_OFFSET) & 0xFF;
    }

    public boolean save() {
        return (buffer.getInt(offset + CDW10_OFFSET) & SAVE) != 0;
    }

    public SetFeaturesCommand save(boolean sv) {
        int cdw10 = buffer.getInt(offset + CDW10_OFFSET);
        buffer.putInt(offset + CDW10_OFFSET, sv ? cdw10 | SAVE : cdw10 & ~SAVE);
        return this;
    }

    public int value() {
        return buffer.getInt(offset + CDW11_OFFSET);
    }

    public SetFeaturesCommand value(int cdw11) {
        buffer.putInt(offset + CDW11_OFFSET, cdw11);
        return this;
    }

    public int cdw12() {
        return buffer.getInt(offset + CDW12_OFFSET);
    }
}
