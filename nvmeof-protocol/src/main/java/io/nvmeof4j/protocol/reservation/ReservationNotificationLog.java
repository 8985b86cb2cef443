package io.nvmeof4j.protocol.reservation;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * Flyweight over the Reservation Notification log page (log 80h; NVMe Base 2.0, 5.16.1.24 Figure 264), 64 bytes.
 *
 * <pre>
 *  0         8       9        10    12     16
 * +---------+-------+--------+-----+------+----------+
 * | LOG PAGE|  TYPE | NUMBER | rsvd| NSID | reserved |
 * |  COUNT  |       | AVAIL  |     |      |          |
 * +---------+-------+--------+-----+------+----------+
 * </pre>
 * The count increments per new notification (wrapping from FFFF_FFFF_FFFF_FFFFh to 1, 0 meaning empty); reading
 * the page returns the oldest queued notification and removes it; NUMBER AVAIL says how many more remain (max FFh).
 * The host learns of it through an asynchronous event of type 6 (I/O command specific), info 0, log 80h.
 */
public final class ReservationNotificationLog {
    public static final int LENGTH = 64;
    public static final int COUNT_OFFSET = 0;
    public static final int TYPE_OFFSET = 8;
    public static final int AVAILABLE_OFFSET = 9;
    public static final int NSID_OFFSET = 12;

    public static final int TYPE_EMPTY = 0;
    public static final int TYPE_REGISTRATION_PREEMPTED = 1;
    public static final int TYPE_RESERVATION_RELEASED = 2;
    public static final int TYPE_RESERVATION_PREEMPTED = 3;

    /** Feature 82h (Reservation Notification Mask) CDW11 bits: set = do not report this type. */
    public static final int MASK_REGISTRATION_PREEMPTED = 1 << 1;
    public static final int MASK_RESERVATION_RELEASED = 1 << 2;
    public static final int MASK_RESERVATION_PREEMPTED = 1 << 3;
    public static final int MASK_ALL = MASK_REGISTRATION_PREEMPTED | MASK_RESERVATION_RELEASED
        | MASK_RESERVATION_PREEMPTED;

    /** Feature 83h (Reservation Persistence) CDW11 / DW0 bit 0: PTPL. */
    public static final int PERSISTENCE_PTPL = 1;

    /** Mask bit of a notification type. */
    public static int maskBit(int type) {
        return 1 << type;
    }

    private ByteBuffer buffer;
    private int offset;

    public ReservationNotificationLog wrap(ByteBuffer buffer, int offset) {
        if (buffer.order() != ByteOrder.LITTLE_ENDIAN) {
            throw new IllegalArgumentException("NVMe structures are little-endian; buffer order is " + buffer.order());
        }
        this.buffer = buffer;
        this.offset = offset;
        return this;
    }

    public ReservationNotificationLog clear() {
        for (int i = 0; i < LENGTH; i += 8) {
            buffer.putLong(offset + i, 0L);
        }
        return this;
    }

    public long count() { return buffer.getLong(offset + COUNT_OFFSET); }
    public ReservationNotificationLog count(long v) { buffer.putLong(offset + COUNT_OFFSET, v); return this; }

    public int type() { return buffer.get(offset + TYPE_OFFSET) & 0xFF; }
    public ReservationNotificationLog type(int v) { buffer.put(offset + TYPE_OFFSET, (byte) v); return this; }

    public int available() { return buffer.get(offset + AVAILABLE_OFFSET) & 0xFF; }
    public ReservationNotificationLog available(int v) {
        buffer.put(offset + AVAILABLE_OFFSET, (byte) Math.min(v, 0xFF));
        return this;
    }

    public int nsid() { return buffer.getInt(offset + NSID_OFFSET); }
    public ReservationNotificationLog nsid(int v) { buffer.putInt(offset + NSID_OFFSET, v); return this; }
}
