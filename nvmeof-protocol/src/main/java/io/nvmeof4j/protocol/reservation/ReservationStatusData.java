package io.nvmeof4j.protocol.reservation;

import io.nvmeof4j.protocol.HostId;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * Flyweight over the Reservation Status data structure a Reservation Report returns (NVMe Base 2.0, 7.4
 * Figures 397-400), in both formats.
 *
 * <pre>
 * header                          regular: 24 bytes, extended (EDS=1): 64 bytes
 *  0     4      5       7      9      10
 * +-----+------+-------+------+------+----------+
 * | GEN |RTYPE |REGCTL | rsvd |PTPLS | reserved |
 * +-----+------+-------+------+------+----------+
 * registered controller, regular (24 bytes, from byte 24)
 *  0      2      3      8          16
 * +------+------+------+----------+------+
 * |CNTLID|RCSTS | rsvd | HOSTID(8)| RKEY |
 * +------+------+------+----------+------+
 * registered controller, extended (64 bytes, from byte 64)
 *  0      2      3      8      16          32
 * +------+------+------+------+-----------+----------+
 * |CNTLID|RCSTS | rsvd | RKEY |HOSTID(16) | reserved |
 * +------+------+------+------+-----------+----------+
 * </pre>
 * RCSTS bit 0: this registrant holds the reservation. GEN counts Register (all), preempts and clears.
 * A host whose host identifier is 128 bits wide must ask for the extended format: the regular one then answers
 * Host Identifier Inconsistent Format (see {@code NvmeStatus.HOST_IDENTIFIER_INCONSISTENT_FORMAT}), so a fabrics
 * target answers only the extended one; the regular accessors exist for reading other devices' reports.
 */
public final class ReservationStatusData {
    public static final int GEN_OFFSET = 0;
    public static final int RTYPE_OFFSET = 4;
    public static final int REGCTL_OFFSET = 5;
    public static final int PTPLS_OFFSET = 9;
    public static final int HEADER_LENGTH = 24;
    public static final int EXTENDED_HEADER_LENGTH = 64;
    public static final int ENTRY_LENGTH = 24;
    public static final int EXTENDED_ENTRY_LENGTH = 64;

    public static final int ENTRY_CNTLID_OFFSET = 0;
    public static final int ENTRY_RCSTS_OFFSET = 2;
    public static final int ENTRY_HOSTID_OFFSET = 8;
    public static final int ENTRY_RKEY_OFFSET = 16;
    public static final int EXTENDED_ENTRY_RKEY_OFFSET = 8;
    public static final int EXTENDED_ENTRY_HOSTID_OFFSET = 16;

    public static final int RCSTS_HOLDS_RESERVATION = 1;

    /** CNTLID for a registrant with no controller connected (dynamic controller model, 7.4 Figure 399). */
    public static final int CNTLID_NONE = 0xFFFF;

    private ByteBuffer buffer;
    private int offset;
    private boolean extended;

    public ReservationStatusData wrap(ByteBuffer buffer, int offset, boolean extended) {
        if (buffer.order() != ByteOrder.LITTLE_ENDIAN) {
            throw new IllegalArgumentException("NVMe structures are little-endian; buffer order is " + buffer.order());
        }
        this.buffer = buffer;
        this.offset = offset;
        this.extended = extended;
        return this;
    }

    public boolean isExtended() { return extended; }

    public static int length(int registrants, boolean extended) {
        return extended
            ? EXTENDED_HEADER_LENGTH + registrants * EXTENDED_ENTRY_LENGTH
            : HEADER_LENGTH + registrants * ENTRY_LENGTH;
    }

    public int generation() { return buffer.getInt(offset + GEN_OFFSET); }
    public ReservationStatusData generation(int v) { buffer.putInt(offset + GEN_OFFSET, v); return this; }

    public int type() { return buffer.get(offset + RTYPE_OFFSET) & 0xFF; }
    public ReservationStatusData type(int v) { buffer.put(offset + RTYPE_OFFSET, (byte) v); return this; }

    public int registeredControllers() { return buffer.getShort(offset + REGCTL_OFFSET) & 0xFFFF; }
    public ReservationStatusData registeredControllers(int v) {
        buffer.putShort(offset + REGCTL_OFFSET, (short) v);
        return this;
    }

    public boolean persistThroughPowerLoss() { return (buffer.get(offset + PTPLS_OFFSET) & 1) != 0; }
    public ReservationStatusData persistThroughPowerLoss(boolean v) {
        buffer.put(offset + PTPLS_OFFSET, (byte) (v ? 1 : 0));
        return this;
    }

    private int entry(int index) {
        return extended
            ? offset + EXTENDED_HEADER_LENGTH + index * EXTENDED_ENTRY_LENGTH
            : offset + HEADER_LENGTH + index * ENTRY_LENGTH;
    }

    public int controllerId(int index) { return buffer.getShort(entry(index) + ENTRY_CNTLID_OFFSET) & 0xFFFF; }
    public ReservationStatusData controllerId(int index, int v) {
        buffer.putShort(entry(index) + ENTRY_CNTLID_OFFSET, (short) v);
        return this;
    }

    public boolean holdsReservation(int index) {
        return (buffer.get(entry(index) + ENTRY_RCSTS_OFFSET) & RCSTS_HOLDS_RESERVATION) != 0;
    }
    public ReservationStatusData holdsReservation(int index, boolean v) {
        buffer.put(entry(index) + ENTRY_RCSTS_OFFSET, (byte) (v ? RCSTS_HOLDS_RESERVATION : 0));
        return this;
    }

    public long key(int index) {
        return buffer.getLong(entry(index) + (extended ? EXTENDED_ENTRY_RKEY_OFFSET : ENTRY_RKEY_OFFSET));
    }
    public ReservationStatusData key(int index, long v) {
        buffer.putLong(entry(index) + (extended ? EXTENDED_ENTRY_RKEY_OFFSET : ENTRY_RKEY_OFFSET), v);
        return this;
    }

    /** Extended format: the 128-bit host identifier. */
    public HostId hostId(int index) {
        requireExtended();
        return HostId.read(buffer, entry(index) + EXTENDED_ENTRY_HOSTID_OFFSET);
    }
    public ReservationStatusData hostId(int index, HostId id) {
        requireExtended();
        id.write(buffer, entry(index) + EXTENDED_ENTRY_HOSTID_OFFSET);
        return this;
    }

    /** Regular format: the 64-bit host identifier, as the 8 bytes on the wire read little-endian. */
    public long hostId64(int index) {
        return buffer.getLong(entry(index) + ENTRY_HOSTID_OFFSET);
    }
    public ReservationStatusData hostId64(int index, long v) {
        buffer.putLong(entry(index) + ENTRY_HOSTID_OFFSET, v);
        return this;
    }

    private void requireExtended() {
        if (!extended) {
            throw new IllegalStateException("128-bit host identifiers exist only in the extended data structure");
        }
    }
}
