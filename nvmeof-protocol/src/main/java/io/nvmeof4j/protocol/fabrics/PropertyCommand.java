package io.nvmeof4j.protocol.fabrics;

import io.nvmeof4j.protocol.command.SubmissionQueueEntry;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * Flyweight over the SQE of a Fabrics Property Get (FCTYPE 04h) or Property Set (FCTYPE 00h) command
 * (NVMe-oF 1.1, 3.4 and 3.5; wire reference 2.3).
 *
 * <pre>
 *  0      1      2      4        5        40      41     44       48                56
 * +------+------+------+--------+--------+-------+------+--------+------------------+------+
 * | 0x7F | 0x40 | CID  | FCTYPE | rsvd   |ATTRIB | rsvd | OFST   | VALUE (Set only) | rsvd |
 * +------+------+------+--------+--------+-------+------+--------+------------------+------+
 * </pre>
 * ATTRIB bits 2:0 give the property size: 0 = 4 bytes, 1 = 8 bytes. Property Get returns the value in the
 * completion's DW0 (and DW1 for 8 bytes). Offsets are relative to the start of the SQE. Little-endian.
 */
public final class PropertyCommand {
    public static final int ATTRIB_OFFSET = 40;
    public static final int OFST_OFFSET = 44;
    public static final int VALUE_OFFSET = 48;

    public static final int SIZE_4_BYTES = 0;
    public static final int SIZE_8_BYTES = 1;

    private ByteBuffer buffer;
    private int offset;

    public PropertyCommand wrap(ByteBuffer buffer, int offset) {
        if (buffer.order() != ByteOrder.LITTLE_ENDIAN) {
            throw new IllegalArgumentException("NVMe structures are little-endian; buffer order is " + buffer.order());
        }
        this.buffer = buffer;
        this.offset = offset;
        return this;
    }

    public PropertyCommand wrap(SubmissionQueueEntry sqe) {
        return wrap(sqe.buffer(), sqe.offset());
    }

    /** Zeroes the SQE and writes opcode 0x7F, PSDT 01b, the command id and {@code fctype} (Get or Set). */
    public PropertyCommand init(int commandId, int fctype) {
        for (int i = 0; i < SubmissionQueueEntry.LENGTH; i += 8) {
            buffer.putLong(offset + i, 0L);
        }
        buffer.put(offset + SubmissionQueueEntry.OPCODE_OFFSET, (byte) SubmissionQueueEntry.OPCODE_FABRICS);
        buffer.put(offset + SubmissionQueueEntry.FLAGS_OFFSET, (byte) SubmissionQueueEntry.FLAGS_PSDT_SGL);
        buffer.putShort(offset + SubmissionQueueEntry.CID_OFFSET, (short) commandId);
        buffer.put(offset + SubmissionQueueEntry.FCTYPE_OFFSET, (byte) fctype);
        return this;
    }

    public int attributes() {
        return buffer.get(offset + ATTRIB_OFFSET) & 0xFF;
    }

    public PropertyCommand attributes(int attrib) {
        buffer.put(offset + ATTRIB_OFFSET, (byte) attrib);
        return this;
    }

    /** ATTRIB bits 2:0: {@link #SIZE_4_BYTES} or {@link #SIZE_8_BYTES} (other values are reserved). */
    public int sizeCode() {
        return attributes() & 0x7;
    }

    public boolean isEightBytes() {
        return sizeCode() == SIZE_8_BYTES;
    }

    public int propertyOffset() {
        return buffer.getInt(offset + OFST_OFFSET);
    }

    public PropertyCommand propertyOffset(int ofst) {
        buffer.putInt(offset + OFST_OFFSET, ofst);
        return this;
    }

    /** Property Set value (8 bytes; a 4-byte property uses the low half). */
    public long value() {
        return buffer.getLong(offset + VALUE_OFFSET);
    }

    public PropertyCommand value(long value) {
        buffer.putLong(offset + VALUE_OFFSET, value);
        return this;
    }

    @Override
    public String toString() {
        return buffer == null ? "Property[unwrapped]"
            : String.format("Property[attrib=0x%02x ofst=0x%x value=0x%x]", attributes(), propertyOffset(), value());
    }
}
