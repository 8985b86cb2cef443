package io.nvmeof4j.protocol.command;

import java.nio.ByteBuffer;

/**
 * Flyweight over a 16-byte SGL descriptor (NVMe Base 2.0, 4.1.8; wire reference 1.3).
 *
 * <pre>
 *  Unkeyed (Data Block, Transport Data Block):      Keyed Data Block (RDMA):
 *  0            8          12        15   16        0            8        11          15   16
 * +------------+----------+---------+----+         +------------+--------+-----------+----+
 * | address    | length   | rsvd    | ID |         | address    | len 24 | key 32    | ID |
 * +------------+----------+---------+----+         +------------+--------+-----------+----+
 * </pre>
 * ID = type &lt;&lt; 4 | subtype. The IDs fabrics uses: 0x01 in-capsule data (address = offset into the capsule),
 * 0x40 keyed address, 0x4F keyed with invalidate, 0x5A NVMe/TCP transport data block.
 */
public final class SglDescriptor {
    public static final int LENGTH = 16;

    public static final int ADDRESS_OFFSET = 0;
    public static final int LENGTH_OFFSET = 8;
    public static final int KEY_OFFSET = 11;
    public static final int ID_OFFSET = 15;

    public static final int TYPE_DATA_BLOCK = 0x0;
    public static final int TYPE_BIT_BUCKET = 0x1;
    public static final int TYPE_SEGMENT = 0x2;
    public static final int TYPE_LAST_SEGMENT = 0x3;
    public static final int TYPE_KEYED_DATA_BLOCK = 0x4;
    public static final int TYPE_TRANSPORT_DATA_BLOCK = 0x5;

    public static final int SUBTYPE_ADDRESS = 0x0;
    public static final int SUBTYPE_OFFSET = 0x1;
    public static final int SUBTYPE_TRANSPORT = 0xA;
    public static final int SUBTYPE_INVALIDATE_KEY = 0xF;

    /** Data in the command capsule; address is the offset from the start of the in-capsule data. */
    public static final int ID_IN_CAPSULE = TYPE_DATA_BLOCK << 4 | SUBTYPE_OFFSET;
    /** Keyed data block addressed by address + key (RDMA). */
    public static final int ID_KEYED_ADDRESS = TYPE_KEYED_DATA_BLOCK << 4 | SUBTYPE_ADDRESS;
    /** Keyed data block whose key the target invalidates with SEND_WITH_INVALIDATE (RDMA). */
    public static final int ID_KEYED_INVALIDATE = TYPE_KEYED_DATA_BLOCK << 4 | SUBTYPE_INVALIDATE_KEY;
    /** NVMe/TCP: data moved by H2CData/C2HData PDUs; length is the transfer size. */
    public static final int ID_TCP_TRANSPORT = TYPE_TRANSPORT_DATA_BLOCK << 4 | SUBTYPE_TRANSPORT;

    /** Largest length a keyed descriptor can carry (24 bits). */
    public static final int MAX_KEYED_LENGTH = (1 << 24) - 1;

    private ByteBuffer buffer;
    private int offset;

    public SglDescriptor wrap(ByteBuffer buffer, int offset) {
        this.buffer = buffer;
        this.offset = offset;
        return this;
    }

    public int id() {
        return buffer.get(offset + ID_OFFSET) & 0xFF;
    }

    public SglDescriptor id(int id) {
        buffer.put(offset + ID_OFFSET, (byte) id);
        return this;
    }

    public int type() {
        return id() >>> 4;
    }

    public int subtype() {
        return id() & 0xF;
    }

    public long address() {
        return buffer.getLong(offset + ADDRESS_OFFSET);
    }

    public SglDescriptor address(long address) {
        buffer.putLong(offset + ADDRESS_OFFSET, address);
        return this;
    }

    /** Length of an unkeyed descriptor: 32 bits, unsigned, held in a long. */
    public long length() {
        return buffer.getInt(offset + LENGTH_OFFSET) & 0xFFFF_FFFFL;
    }

    /** Writes an unkeyed descriptor's length and zeroes the reserved bytes 12-14. */
    public SglDescriptor length(long length) {
        buffer.putInt(offset + LENGTH_OFFSET, (int) length);
        buffer.put(offset + 12, (byte) 0).put(offset + 13, (byte) 0).put(offset + 14, (byte) 0);
        return this;
    }

    /** Length of a keyed descriptor: 24 bits. */
    public int keyedLength() {
        return (buffer.get(offset + LENGTH_OFFSET) & 0xFF)
            | (buffer.get(offset + LENGTH_OFFSET + 1) & 0xFF) << 8
            | (buffer.get(offset + LENGTH_OFFSET + 2) & 0xFF) << 16;
    }

    public SglDescriptor keyedLength(int length) {
        if (length < 0 || length > MAX_KEYED_LENGTH) {
            throw new IllegalArgumentException("keyed SGL length " + length + " does not fit 24 bits");
        }
        buffer.put(offset + LENGTH_OFFSET, (byte) length);
        buffer.put(offset + LENGTH_OFFSET + 1, (byte) (length >>> 8));
        buffer.put(offset + LENGTH_OFFSET + 2, (byte) (length >>> 16));
        return this;
    }

    public int key() {
        return buffer.getInt(offset + KEY_OFFSET);
    }

    public SglDescriptor key(int key) {
        buffer.putInt(offset + KEY_OFFSET, key);
        return this;
    }

    public boolean isKeyed() {
        return type() == TYPE_KEYED_DATA_BLOCK;
    }

    /** The transfer length this descriptor describes, whichever its form. */
    public long dataLength() {
        return isKeyed() ? keyedLength() : length();
    }

    @Override
    public String toString() {
        return buffer == null ? "SGL[unwrapped]"
            : String.format("SGL[id=0x%02x addr=0x%x len=%d%s]", id(), address(), dataLength(),
                isKeyed() ? String.format(" key=0x%08x", key()) : "");
    }
}
