package io.nvmeof4j.protocol.admin;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * Flyweight over one 64-byte Error Information log entry (log 01h; NVMe Base 2.0, 5.16.1.2 Figure 205).
 *
 * <pre>
 *  0 ERROR COUNT(8)   8 SQID(2)   10 CID(2)   12 STATUS FIELD(2)   14 PARAMETER ERROR LOCATION(2)
 * 16 LBA(8)          24 NSID(4)  28 VS      29 TRTYPE             32 COMMAND SPECIFIC INFO(8)
 * 40 TRANSPORT TYPE SPECIFIC INFO(2)         42.. reserved
 * </pre>
 * An entry with ERROR COUNT 0 is empty. The log is an array of these, newest first.
 */
public final class ErrorLogEntry {
    public static final int LENGTH = 64;

    public static final int ERROR_COUNT_OFFSET = 0;
    public static final int SQID_OFFSET = 8;
    public static final int CID_OFFSET = 10;
    public static final int STATUS_FIELD_OFFSET = 12;
    public static final int PARAMETER_ERROR_LOCATION_OFFSET = 14;
    public static final int LBA_OFFSET = 16;
    public static final int NSID_OFFSET = 24;
    public static final int VENDOR_SPECIFIC_OFFSET = 28;
    public static final int TRTYPE_OFFSET = 29;
    public static final int COMMAND_SPECIFIC_INFO_OFFSET = 32;
    public static final int TRANSPORT_SPECIFIC_INFO_OFFSET = 40;

    /** PARAMETER ERROR LOCATION value when no location is reported. */
    public static final int NO_LOCATION = 0xFFFF;

    private ByteBuffer buffer;
    private int offset;

    public ErrorLogEntry wrap(ByteBuffer buffer, int offset) {
        if (buffer.order() != ByteOrder.LITTLE_ENDIAN) {
            throw new IllegalArgumentException("NVMe structures are little-endian; buffer order is " + buffer.order());
        }
        this.buffer = buffer;
        this.offset = offset;
        return this;
    }

    public ErrorLogEntry clear() {
        AsciiFields.zero(buffer, offset, LENGTH);
        return this;
    }

    public long errorCount() { return buffer.getLong(offset + ERROR_COUNT_OFFSET); }
    public ErrorLogEntry errorCount(long v) { buffer.putLong(offset + ERROR_COUNT_OFFSET, v); return this; }

    public int submissionQueueId() { return buffer.getShort(offset + SQID_OFFSET) & 0xFFFF; }
    public ErrorLogEntry submissionQueueId(int v) { buffer.putShort(offset + SQID_OFFSET, (short) v); return this; }

    public int commandId() { return buffer.getShort(offset + CID_OFFSET) & 0xFFFF; }
    public ErrorLogEntry commandId(int v) { buffer.putShort(offset + CID_OFFSET, (short) v); return this; }

    /** The CQE status field as on the wire (phase bit 0). */
    public int statusField() { return buffer.getShort(offset + STATUS_FIELD_OFFSET) & 0xFFFF; }
    public ErrorLogEntry statusField(int v) { buffer.putShort(offset + STATUS_FIELD_OFFSET, (short) v); return this; }

    public int parameterErrorLocation() { return buffer.getShort(offset + PARAMETER_ERROR_LOCATION_OFFSET) & 0xFFFF; }
    public ErrorLogEntry parameterErrorLocation(int v) {
        buffer.putShort(offset + PARAMETER_ERROR_LOCATION_OFFSET, (short) v);
        return this;
    }

    public long lba() { return buffer.getLong(offset + LBA_OFFSET); }
    public ErrorLogEntry lba(long v) { buffer.putLong(offset + LBA_OFFSET, v); return this; }

    public int nsid() { return buffer.getInt(offset + NSID_OFFSET); }
    public ErrorLogEntry nsid(int v) { buffer.putInt(offset + NSID_OFFSET, v); return this; }

    public int transportType() { return buffer.get(offset + TRTYPE_OFFSET) & 0xFF; }
    public ErrorLogEntry transportType(int v) { buffer.put(offset + TRTYPE_OFFSET, (byte) v); return this; }
}
