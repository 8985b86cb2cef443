package io.nvmeof4j.protocol.admin;

import io.nvmeof4j.protocol.command.SubmissionQueueEntry;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * Flyweight over the SQE of an Identify command (opcode 06h; NVMe Base 2.0, 5.17; wire reference 2.7).
 *
 * <pre>
 *  CDW10 (byte 40)                      CDW11 (byte 44)                   CDW14 (byte 56)
 *  31          16 15      8 7      0     31     24 23      16 15      0     31           7 6    0
 * +--------------+---------+--------+   +---------+----------+---------+   +--------------+------+
 * | CNTID        | rsvd    | CNS    |   | CSI     | rsvd     | CNSSID  |   | rsvd         |UUIDX |
 * +--------------+---------+--------+   +---------+----------+---------+   +--------------+------+
 * </pre>
 * NSID (byte 4) selects the namespace for CNS 00h/03h/05h/08h and is the lower bound for the lists (02h/07h).
 * The data is always {@link #DATA_LENGTH} bytes, controller to host.
 */
public final class IdentifyCommand {
    public static final int DATA_LENGTH = 4096;

    public static final int CNS_OFFSET = 40;
    public static final int CNTID_OFFSET = 42;
    public static final int CNSSID_OFFSET = 44;
    public static final int CSI_OFFSET = 47;
    public static final int UUID_INDEX_OFFSET = 56;

    public static final int CNS_NAMESPACE = 0x00;
    public static final int CNS_CONTROLLER = 0x01;
    public static final int CNS_ACTIVE_NAMESPACE_LIST = 0x02;
    public static final int CNS_NAMESPACE_ID_DESCRIPTORS = 0x03;
    public static final int CNS_NVM_SET_LIST = 0x04;
    public static final int CNS_CSI_NAMESPACE = 0x05;
    public static final int CNS_CSI_CONTROLLER = 0x06;
    public static final int CNS_CSI_ACTIVE_NAMESPACE_LIST = 0x07;
    public static final int CNS_CSI_INDEPENDENT_NAMESPACE = 0x08;
    /** I/O Command Set data structure: 512 8-byte vectors of the command set combinations offered. */
    public static final int CNS_IO_COMMAND_SET = 0x1C;

    /** Command set identifier of the NVM command set. */
    public static final int CSI_NVM = 0x00;
    /** Bit of the NVM command set in an I/O Command Set Vector (CNS 1Ch), bit n = CSI n. */
    public static final long IO_COMMAND_SET_VECTOR_NVM = 1L << CSI_NVM;

    private ByteBuffer buffer;
    private int offset;

    public IdentifyCommand wrap(ByteBuffer buffer, int offset) {
        if (buffer.order() != ByteOrder.LITTLE_ENDIAN) {
            throw new IllegalArgumentException("NVMe structures are little-endian; buffer order is " + buffer.order());
        }
        this.buffer = buffer;
        this.offset = offset;
        return this;
    }

    public IdentifyCommand wrap(SubmissionQueueEntry sqe) {
        return wrap(sqe.buffer(), sqe.offset());
    }

    /** Zeroes the SQE and writes opcode 06h, PSDT 01b, the command id, NSID and CNS. */
    public IdentifyCommand init(int commandId, int nsid, int cns) {
        for (int i = 0; i < SubmissionQueueEntry.LENGTH; i += 8) {
            buffer.putLong(offset + i, 0L);
        }
        buffer.put(offset + SubmissionQueueEntry.OPCODE_OFFSET, (byte) AdminOpcode.IDENTIFY);
        buffer.put(offset + SubmissionQueueEntry.FLAGS_OFFSET, (byte) SubmissionQueueEntry.FLAGS_PSDT_SGL);
        buffer.putShort(offset + SubmissionQueueEntry.CID_OFFSET, (short) commandId);
        buffer.putInt(offset + SubmissionQueueEntry.NSID_OFFSET, nsid);
        buffer.put(offset + CNS_OFFSET, (byte) cns);
        return this;
    }

    public int nsid() {
        return buffer.getInt(offset + SubmissionQueueEntry.NSID_OFFSET);
    }

    public int cns() {
        return buffer.get(offset + CNS_OFFSET) & 0xFF;
    }

    public IdentifyCommand cns(int cns) {
        buffer.put(offset + CNS_OFFSET, (byte) cns);
        return this;
    }

    public int controllerId() {
        return buffer.getShort(offset + CNTID_OFFSET) & 0xFFFF;
    }

    public IdentifyCommand controllerId(int cntid) {
        buffer.putShort(offset + CNTID_OFFSET, (short) cntid);
        return this;
    }

    /** CNS-specific identifier (CDW11 15:0). */
    public int cnsSpecificId() {
        return buffer.getShort(offset + CNSSID_OFFSET) & 0xFFFF;
    }

    public IdentifyCommand cnsSpecificId(int id) {
        buffer.putShort(offset + CNSSID_OFFSET, (short) id);
        return this;
    }

    public int commandSetIdentifier() {
        return buffer.get(offset + CSI_OFFSET) & 0xFF;
    }

    public IdentifyCommand commandSetIdentifier(int csi) {
        buffer.put(offset + CSI_OFFSET, (byte) csi);
        return this;
    }

    public int uuidIndex() {
        return buffer.get(offset + UUID_INDEX_OFFSET) & 0x7F;
    }
}
