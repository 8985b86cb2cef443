package io.nvmeof4j.protocol.discovery;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * Flyweight over the 1024-byte header of the Discovery log page (log 70h; NVMe-oF 1.1, 5.3 Figure 31;
 * wire reference 2.8). Entries of {@link DiscoveryLogEntry#LENGTH} bytes follow from byte {@link #ENTRIES_OFFSET}.
 *
 * <pre>
 *  0             8             16       18        1024           2048
 * +-------------+-------------+--------+---------+--------------+--------------+---
 * | GENCTR (8)  | NUMREC (8)  | RECFMT | rsvd    | entry 0      | entry 1      | ...
 * +-------------+-------------+--------+---------+--------------+--------------+---
 * </pre>
 * A host reads the header, then the entries, then the header again and starts over if GENCTR changed
 * (libnvme: 20 bytes at LPO 0, entries from LPO 1024 in 4096-byte chunks).
 */
public final class DiscoveryLogPage {
    public static final int HEADER_LENGTH = 1024;
    public static final int GENCTR_OFFSET = 0;
    public static final int NUMREC_OFFSET = 8;
    public static final int RECFMT_OFFSET = 16;
    public static final int ENTRIES_OFFSET = HEADER_LENGTH;
    /** The header fields a host actually needs: GENCTR, NUMREC, RECFMT (libnvme's first read). */
    public static final int HEADER_FIELDS_LENGTH = 20;

    private ByteBuffer buffer;
    private int offset;

    public DiscoveryLogPage wrap(ByteBuffer buffer, int offset) {
        if (buffer.order() != ByteOrder.LITTLE_ENDIAN) {
            throw new IllegalArgumentException("NVMe structures are little-endian; buffer order is " + buffer.order());
        }
        this.buffer = buffer;
        this.offset = offset;
        return this;
    }

    /** Size of a log with {@code records} entries. */
    public static long length(long records) {
        return HEADER_LENGTH + records * DiscoveryLogEntry.LENGTH;
    }

    /** Byte offset of entry {@code index} from the start of the log. */
    public static int entryOffset(int index) {
        return ENTRIES_OFFSET + index * DiscoveryLogEntry.LENGTH;
    }

    /** Zeroes the 1024-byte header. */
    public DiscoveryLogPage clearHeader() {
        for (int i = 0; i < HEADER_LENGTH; i += 8) {
            buffer.putLong(offset + i, 0L);
        }
        return this;
    }

    public long generationCounter() {
        return buffer.getLong(offset + GENCTR_OFFSET);
    }

    public DiscoveryLogPage generationCounter(long genctr) {
        buffer.putLong(offset + GENCTR_OFFSET, genctr);
        return this;
    }

    public long numberOfRecords() {
        return buffer.getLong(offset + NUMREC_OFFSET);
    }

    public DiscoveryLogPage numberOfRecords(long numrec) {
        buffer.putLong(offset + NUMREC_OFFSET, numrec);
        return this;
    }

    public int recordFormat() {
        return buffer.getShort(offset + RECFMT_OFFSET) & 0xFFFF;
    }

    public DiscoveryLogPage recordFormat(int recfmt) {
        buffer.putShort(offset + RECFMT_OFFSET, (short) recfmt);
        return this;
    }
}
