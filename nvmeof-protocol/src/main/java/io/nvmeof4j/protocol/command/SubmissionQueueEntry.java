package io.nvmeof4j.protocol.command;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * Flyweight over a 64-byte NVMe Submission Queue Entry (NVMe Base 2.0, 4.2; wire reference 1.1).
 *
 * <pre>
 *  0      1      2             4             8            16           24                   40
 * +------+------+-------------+-------------+------------+------------+--------------------+
 * | OPC  |FLAGS | CID         | NSID/FCTYPE | CDW2-3     | MPTR       | DPTR / SGL1 (16 B) |
 * +------+------+-------------+-------------+------------+------------+--------------------+
 *  40     44     48     52     56     60     64
 * +------+------+------+------+------+------+
 * |CDW10 |CDW11 |CDW12 |CDW13 |CDW14 |CDW15 |
 * +------+------+------+------+------+------+
 * </pre>
 * FLAGS: bits 1:0 FUSE, bits 7:6 PSDT (fabrics requires 01b: SGLs). On a Fabrics command (opcode 0x7F)
 * byte 4 is FCTYPE. All fields little-endian. The wrapped buffer must be in {@link ByteOrder#LITTLE_ENDIAN} order.
 * <p>Not thread-safe; one flyweight per queue slot, re-wrapped freely (wrapping allocates nothing).
 */
public final class SubmissionQueueEntry {
    public static final int LENGTH = 64;

    public static final int OPCODE_OFFSET = 0;
    public static final int FLAGS_OFFSET = 1;
    public static final int CID_OFFSET = 2;
    public static final int NSID_OFFSET = 4;
    public static final int FCTYPE_OFFSET = 4;
    public static final int CDW2_OFFSET = 8;
    public static final int CDW3_OFFSET = 12;
    public static final int MPTR_OFFSET = 16;
    public static final int SGL1_OFFSET = 24;
    public static final int CDW10_OFFSET = 40;
    public static final int CDW11_OFFSET = 44;
    public static final int CDW12_OFFSET = 48;
    public static final int CDW13_OFFSET = 52;
    public static final int CDW14_OFFSET = 56;
    public static final int CDW15_OFFSET = 60;

    /** FLAGS value every fabrics command carries: PSDT = 01b (SGL for data), no fused operation. */
    public static final int FLAGS_PSDT_SGL = 0x40;
    public static final int PSDT_MASK = 0xC0;
    public static final int FUSE_MASK = 0x03;

    /** Opcode of every Fabrics command; the command is identified by FCTYPE. */
    public static final int OPCODE_FABRICS = 0x7F;

    private ByteBuffer buffer;
    private int offset;
    private final SglDescriptor sgl1 = new SglDescriptor();

    public SubmissionQueueEntry wrap(ByteBuffer buffer, int offset) {
        if (buffer.order() != ByteOrder.LITTLE_ENDIAN) {
            throw new IllegalArgumentException("NVMe structures are little-endian; buffer order is " + buffer.order());
        }
        this.buffer = buffer;
        this.offset = offset;
        sgl1.wrap(buffer, offset + SGL1_OFFSET);
        return this;
    }

    public ByteBuffer buffer() {
        return buffer;
    }

    public int offset() {
        return offset;
    }

    /** Zeroes all 64 bytes. */
    public SubmissionQueueEntry clear() {
        for (int i = 0; i < LENGTH; i += 8) {
            buffer.putLong(offset + i, 0L);
        }
        return this;
    }

    public int opcode() {
        return buffer.get(offset + OPCODE_OFFSET) & 0xFF;
    }

    public SubmissionQueueEntry opcode(int opcode) {
        buffer.put(offset + OPCODE_OFFSET, (byte) opcode);
        return this;
    }

    public int flags() {
        return buffer.get(offset + FLAGS_OFFSET) & 0xFF;
    }

    public SubmissionQueueEntry flags(int flags) {
        buffer.put(offset + FLAGS_OFFSET, (byte) flags);
        return this;
    }

    public int psdt() {
        return (flags() & PSDT_MASK) >>> 6;
    }

    public int fuse() {
        return flags() & FUSE_MASK;
    }

    public int commandId() {
        return buffer.getShort(offset + CID_OFFSET) & 0xFFFF;
    }

    public SubmissionQueueEntry commandId(int cid) {
        buffer.putShort(offset + CID_OFFSET, (short) cid);
        return this;
    }

    /** NSID as an unsigned 32-bit value held in an int (compare with {@link Integer#compareUnsigned}). */
    public int nsid() {
        return buffer.getInt(offset + NSID_OFFSET);
    }

    public SubmissionQueueEntry nsid(int nsid) {
        buffer.putInt(offset + NSID_OFFSET, nsid);
        return this;
    }

    public boolean isFabrics() {
        return opcode() == OPCODE_FABRICS;
    }

    public int fabricsCommandType() {
        return buffer.get(offset + FCTYPE_OFFSET) & 0xFF;
    }

    public SubmissionQueueEntry fabricsCommandType(int fctype) {
        buffer.put(offset + FCTYPE_OFFSET, (byte) fctype);
        return this;
    }

    /** The first SGL descriptor (DPTR), a flyweight sharing this entry's buffer. */
    public SglDescriptor sgl1() {
        return sgl1;
    }

    /** Command dword {@code n} (2, 3 or 10..15) as a raw 32-bit value. */
    public int cdw(int n) {
        return buffer.getInt(offset + cdwOffset(n));
    }

    public SubmissionQueueEntry cdw(int n, int value) {
        buffer.putInt(offset + cdwOffset(n), value);
        return this;
    }

    public int cdw10() {
        return buffer.getInt(offset + CDW10_OFFSET);
    }

    public int cdw11() {
        return buffer.getInt(offset + CDW11_OFFSET);
    }

    public int cdw12() {
        return buffer.getInt(offset + CDW12_OFFSET);
    }

    public int cdw13() {
        return buffer.getInt(offset + CDW13_OFFSET);
    }

    public int cdw14() {
        return buffer.getInt(offset + CDW14_OFFSET);
    }

    public int cdw15() {
        return buffer.getInt(offset + CDW15_OFFSET);
    }

    /** CDW10 and CDW11 read as one little-endian 64-bit value (SLBA of NVM I/O commands). */
    public long cdw10And11() {
        return buffer.getLong(offset + CDW10_OFFSET);
    }

    public SubmissionQueueEntry cdw10And11(long value) {
        buffer.putLong(offset + CDW10_OFFSET, value);
        return this;
    }

    /**
     * Direction of the data transfer implied by the opcode (or, for Fabrics commands, by FCTYPE):
     * bits 1:0 are 01b host to controller, 10b controller to host, 00b none (NVMe Base 2.0, 5 and 6).
     */
    public DataDirection dataDirection() {
        int code = isFabrics() ? fabricsCommandType() : opcode();
        return DataDirection.fromOpcodeBits(code);
    }

    private static int cdwOffset(int n) {
        if (n == 2 || n == 3) {
            return CDW2_OFFSET + (n - 2) * 4;
        }
        if (n >= 10 && n <= 15) {
            return CDW10_OFFSET + (n - 10) * 4;
        }
        throw new IllegalArgumentException("no command dword " + n + " in an SQE (2, 3, 10..15 are addressable)");
    }

    @Override
    public String toString() {
        return buffer == null ? "SQE[unwrapped]"
            : String.format("SQE[opc=0x%02x flags=0x%02x cid=%d nsid=%d cdw10=0x%08x cdw11=0x%08x cdw12=0x%08x %s]",
                opcode(), flags(), commandId(), nsid(), cdw10(), cdw11(), cdw12(), sgl1);
    }
}
