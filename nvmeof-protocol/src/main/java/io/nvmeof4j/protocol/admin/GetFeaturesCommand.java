package io.nvmeof4j.protocol.admin;

import io.nvmeof4j.protocol.command.SubmissionQueueEntry;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * Flyweight over the SQE of a Get Features command (opcode 0Ah; NVMe Base 2.0, 5.15; wire reference 2.9).
 *
 * <pre>
 *  CDW10 (byte 40)                    CDW11 (byte 44)
 *  31           11 10   8 7      0    31                   0
 * +---------------+------+--------+  +----------------------+
 * | reserved      | SEL  | FID    |  | feature specific     |
 * +---------------+------+--------+  +----------------------+
 * </pre>
 * SEL: 000b current, 001b default, 010b saved, 011b supported capabilities (DW0 bit 0 saveable,
 * bit 1 namespace specific, bit 2 changeable).
 */
public final class GetFeaturesCommand {
    public static final int CDW10_OFFSET = 40;
    public static final int FID_OFFSET = 40;
    public static final int CDW11_OFFSET = 44;

    public static final int SEL_CURRENT = 0;
    public static final int SEL_DEFAULT = 1;
    public static final int SEL_SAVED = 2;
    public static final int SEL_SUPPORTED_CAPABILITIES = 3;

    public static final int CAPABILITY_SAVEABLE = 1;
    public static final int CAPABILITY_NAMESPACE_SPECIFIC = 1 << 1;
    public static final int CAPABILITY_CHANGEABLE = 1 << 2;

    private ByteBuffer buffer;
    private int offset;

    public GetFeaturesCommand wrap(ByteBuffer buffer, int offset) {
        if (buffer.order() != ByteOrder.LITTLE_ENDIAN) {
            throw new IllegalArgumentException("NVMe structures are little-endian; buffer order is " + buffer.order());
        }
        this.buffer = buffer;
        this.offset = offset;
        return this;
    }

    public GetFeaturesCommand wrap(SubmissionQueueEntry sqe) {
        return wrap(sqe.buffer(), sqe.offset());
    }

    /** Zeroes the SQE and writes opcode 0Ah, PSDT 01b, the command id, the feature id and SEL. */
    public GetFeaturesCommand init(int commandId, int fid, int sel) {
        for (int i = 0; i < SubmissionQueueEntry.LENGTH; i += 8) {
            buffer.putLong(offset + i, 0L);
        }
        buffer.put(offset + SubmissionQueueEntry.OPCODE_OFFSET, (byte) AdminOpcode.GET_FEATURES);
        buffer.put(offset + SubmissionQueueEntry.FLAGS_OFFSET, (byte) SubmissionQueueEntry.FLAGS_PSDT_SGL);
        buffer.putShort(offset + SubmissionQueueEntry.CID_OFFSET, (short) commandId);
        buffer.putInt(offset + CDW10_OFFSET, (fid & 0xFF) | (sel & 0x7) << 8);
        return this;
    }

    public int featureId() {
        return buffer.get(offset + FID_OFFSET) & 0xFF;
    }

    public int select() {
        return (buffer.getInt(offset + CDW10_OFFSET) >>> 8) & 0x7;
    }

    public int cdw11() {
        return buffer.getInt(offset + CDW11_OFFSET);
    }

    public GetFeaturesCommand cdw11(int value) {
        buffer.putInt(offset + CDW11_OFFSET, value);
        return this;
    }
}
