package io.nvmeof4j.protocol.command;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * Flyweight over a 16-byte NVMe Completion Queue Entry (NVMe Base 2.0, 4.2.1; wire reference 1.2).
 *
 * <pre>
 *  0            4            8        10       12       14       16
 * +------------+------------+--------+--------+--------+--------+
 * | DW0        | DW1        | SQHD   | SQID   | CID    | STATUS |
 * +------------+------------+--------+--------+--------+--------+
 * </pre>
 * STATUS: bit 0 phase (0 on fabrics), 8:1 SC, 11:9 SCT, 13:12 CRD, 14 M, 15 DNR. This class takes and returns
 * status as an {@link NvmeStatus} code ({@code SCT << 8 | SC} plus its DNR/M flags). The wrapped buffer must be
 * little-endian.
 */
public final class CompletionQueueEntry {
    public static final int LENGTH = 16;

    public static final int DW0_OFFSET = 0;
    public static final int DW1_OFFSET = 4;
    public static final int SQHD_OFFSET = 8;
    public static final int SQID_OFFSET = 10;
    public static final int CID_OFFSET = 12;
    public static final int STATUS_OFFSET = 14;

    /** SQHD value when SQ flow control is disabled (Connect CATTR bit 2). */
    public static final int SQHD_FLOW_CONTROL_DISABLED = 0xFFFF;

    private ByteBuffer buffer;
    private int offset;

    public CompletionQueueEntry wrap(ByteBuffer buffer, int offset) {
        if (buffer.order() != ByteOrder.LITTLE_ENDIAN) {
            throw new IllegalArgumentException("NVMe structures are little-endian; buffer order is " + buffer.order());
        }
        this.buffer = buffer;
        this.offset = offset;
        return this;
    }

    public ByteBuffer buffer() {
        return buffer;
    }

    public int offset() {
        return offset;
    }

    public CompletionQueueEntry clear() {
        buffer.putLong(offset, 0L);
        buffer.putLong(offset + 8, 0L);
        return this;
    }

    public int dw0() {
        return buffer.getInt(offset + DW0_OFFSET);
    }

    public CompletionQueueEntry dw0(int value) {
        buffer.putInt(offset + DW0_OFFSET, value);
        return this;
    }

    public int dw1() {
        return buffer.getInt(offset + DW1_OFFSET);
    }

    public CompletionQueueEntry dw1(int value) {
        buffer.putInt(offset + DW1_OFFSET, value);
        return this;
    }

    /** DW0 and DW1 as one 64-bit value (the result of an 8-byte Property Get). */
    public long result64() {
        return buffer.getLong(offset + DW0_OFFSET);
    }

    public CompletionQueueEntry result64(long value) {
        buffer.putLong(offset + DW0_OFFSET, value);
        return this;
    }

    public int sqHead() {
        return buffer.getShort(offset + SQHD_OFFSET) & 0xFFFF;
    }

    public CompletionQueueEntry sqHead(int value) {
        buffer.putShort(offset + SQHD_OFFSET, (short) value);
        return this;
    }

    public int sqId() {
        return buffer.getShort(offset + SQID_OFFSET) & 0xFFFF;
    }

    public CompletionQueueEntry sqId(int value) {
        buffer.putShort(offset + SQID_OFFSET, (short) value);
        return this;
    }

    public int commandId() {
        return buffer.getShort(offset + CID_OFFSET) & 0xFFFF;
    }

    public CompletionQueueEntry commandId(int value) {
        buffer.putShort(offset + CID_OFFSET, (short) value);
        return this;
    }

    /** The raw 16-bit status field as on the wire. */
    public int statusField() {
        return buffer.getShort(offset + STATUS_OFFSET) & 0xFFFF;
    }

    /** Status as an {@link NvmeStatus} code including its DNR and M flags. */
    public int status() {
        return NvmeStatus.fromStatusField(statusField());
    }

    /** Sets the status from an {@link NvmeStatus} code (with any DNR/M flags); phase bit 0. */
    public CompletionQueueEntry status(int nvmeStatus) {
        buffer.putShort(offset + STATUS_OFFSET, (short) NvmeStatus.toStatusField(nvmeStatus));
        return this;
    }

    @Override
    public String toString() {
        return buffer == null ? "CQE[unwrapped]"
            : String.format("CQE[cid=%d sqid=%d sqhd=%d status=%s dw0=0x%08x dw1=0x%08x]",
                commandId(), sqId(), sqHead(), NvmeStatus.describe(status()), dw0(), dw1());
    }
}
