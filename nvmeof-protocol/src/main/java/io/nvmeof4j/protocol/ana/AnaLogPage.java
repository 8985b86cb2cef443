package io.nvmeof4j.protocol.ana;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * Flyweight over the Asymmetric Namespace Access log page (log 0Ch; NVMe Base 2.0, 5.16.1.12 Figures 227-229;
 * wire reference 2.8). A header, then one variable-length descriptor per ANA group, back to back.
 *
 * <pre>
 * header (16 bytes)
 *  0      8      10        16
 * +------+------+---------+
 * |CHGCNT|NGRPS | reserved|
 * +------+------+---------+
 * group descriptor (32 + 4 x NNSIDS bytes)
 *  0        4       8       16     17        32
 * +--------+-------+-------+------+---------+-------------------+
 * |ANAGRPID|NNSIDS |CHGCNT |STATE | reserved| NSID[0..NNSIDS-1] |
 * +--------+-------+-------+------+---------+-------------------+
 * </pre>
 * With Get Log Page LSP bit 0 (RGO, return groups only) every NNSIDS is 0 and no NSIDs follow.
 * The flyweight walks descriptors by offset: {@link #descriptorOffset(int)} costs one pass over the groups before it.
 */
public final class AnaLogPage {
    public static final int HEADER_LENGTH = 16;
    public static final int CHGCNT_OFFSET = 0;
    public static final int NGRPS_OFFSET = 8;

    public static final int DESCRIPTOR_HEADER_LENGTH = 32;
    public static final int DESC_ANAGRPID_OFFSET = 0;
    public static final int DESC_NNSIDS_OFFSET = 4;
    public static final int DESC_CHGCNT_OFFSET = 8;
    public static final int DESC_STATE_OFFSET = 16;
    public static final int DESC_NSID_OFFSET = 32;

    /** Get Log Page LSP bit 0 for log 0Ch: return only the group descriptors, no NSID lists. */
    public static final int LSP_RGO = 0x1;

    private ByteBuffer buffer;
    private int offset;

    public AnaLogPage wrap(ByteBuffer buffer, int offset) {
        if (buffer.order() != ByteOrder.LITTLE_ENDIAN) {
            throw new IllegalArgumentException("NVMe structures are little-endian; buffer order is " + buffer.order());
        }
        this.buffer = buffer;
        this.offset = offset;
        return this;
    }

    /** Bytes a page takes for these per-group namespace counts (RGO: pass zeros). */
    public static int length(int groups, int totalNsids) {
        return HEADER_LENGTH + groups * DESCRIPTOR_HEADER_LENGTH + totalNsids * 4;
    }

    public long changeCount() { return buffer.getLong(offset + CHGCNT_OFFSET); }
    public AnaLogPage changeCount(long v) { buffer.putLong(offset + CHGCNT_OFFSET, v); return this; }

    public int groupCount() { return buffer.getShort(offset + NGRPS_OFFSET) & 0xFFFF; }
    public AnaLogPage groupCount(int v) { buffer.putShort(offset + NGRPS_OFFSET, (short) v); return this; }

    /** Offset (relative to the page) of descriptor {@code index}, walking the NNSIDS of those before it. */
    public int descriptorOffset(int index) {
        int at = HEADER_LENGTH;
        for (int i = 0; i < index; i++) {
            at += DESCRIPTOR_HEADER_LENGTH + 4 * buffer.getInt(offset + at + DESC_NNSIDS_OFFSET);
        }
        return at;
    }

    /**
     * Writes a group descriptor's fixed part at {@code descriptorOffset} (relative to the page), zeroing its reserved
     * bytes; the caller then writes {@code nsidCount} NSIDs with {@link #nsid(int, int, int)}. Returns the offset of the
     * next descriptor.
     */
    public int putDescriptor(int descriptorOffset, int groupId, int nsidCount, long changeCount, int state) {
        int at = offset + descriptorOffset;
        buffer.putInt(at + DESC_ANAGRPID_OFFSET, groupId);
        buffer.putInt(at + DESC_NNSIDS_OFFSET, nsidCount);
        buffer.putLong(at + DESC_CHGCNT_OFFSET, changeCount);
        buffer.put(at + DESC_STATE_OFFSET, (byte) (state & 0xF));
        for (int i = DESC_STATE_OFFSET + 1; i < DESCRIPTOR_HEADER_LENGTH; i++) {
            buffer.put(at + i, (byte) 0);
        }
        return descriptorOffset + DESCRIPTOR_HEADER_LENGTH + 4 * nsidCount;
    }

    public int groupId(int descriptorOffset) { return buffer.getInt(offset + descriptorOffset + DESC_ANAGRPID_OFFSET); }
    public int nsidCount(int descriptorOffset) { return buffer.getInt(offset + descriptorOffset + DESC_NNSIDS_OFFSET); }
    public long groupChangeCount(int descriptorOffset) {
        return buffer.getLong(offset + descriptorOffset + DESC_CHGCNT_OFFSET);
    }
    public int state(int descriptorOffset) { return buffer.get(offset + descriptorOffset + DESC_STATE_OFFSET) & 0xF; }

    public int nsid(int descriptorOffset, int index) {
        return buffer.getInt(offset + descriptorOffset + DESC_NSID_OFFSET + 4 * index);
    }

    public AnaLogPage nsid(int descriptorOffset, int index, int nsid) {
        buffer.putInt(offset + descriptorOffset + DESC_NSID_OFFSET + 4 * index, nsid);
        return this;
    }
}
