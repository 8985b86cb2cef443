package io.nvmeof4j.protocol.tcp;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * Base of the NVMe/TCP PDU flyweights: the 8-byte common header every PDU starts with
 * (NVMe/TCP Transport Specification 1.0, 3.6.1; wire reference 5).
 *
 * <pre>
 *  0      1      2      3      4                           8
 * +------+------+------+------+---------------------------+
 * | TYPE |FLAGS | HLEN | PDO  | PLEN                      |
 * +------+------+------+------+---------------------------+
 * </pre>
 * FLAGS: bit 0 HDGSTF, bit 1 DDGSTF, bit 2 LAST_PDU (data PDUs), bit 3 SUCCESS (C2HData). HLEN is the header
 * length without digest; PDO the offset of the data from the start of the PDU (0 when there is none); PLEN the
 * whole PDU including digests and padding.
 * <p>Flyweights wrap a little-endian buffer at an offset and allocate nothing; re-wrap them freely. Not thread-safe.
 *
 * @param <T> the concrete flyweight, so that fluent setters keep their type
 */
public abstract class PduFlyweight<T extends PduFlyweight<T>> {
    public static final int COMMON_HEADER_LENGTH = 8;

    public static final int TYPE_OFFSET = 0;
    public static final int FLAGS_OFFSET = 1;
    public static final int HLEN_OFFSET = 2;
    public static final int PDO_OFFSET = 3;
    public static final int PLEN_OFFSET = 4;

    /** Header digest follows the header. */
    public static final int FLAG_HDGSTF = 0x01;
    /** Data digest follows the data. */
    public static final int FLAG_DDGSTF = 0x02;
    /** Last data PDU of a command (H2CData: of an R2T). */
    public static final int FLAG_LAST_PDU = 0x04;
    /** C2HData only: the command succeeded and no CapsuleResp follows (requires LAST_PDU and SQ flow control off). */
    public static final int FLAG_SUCCESS = 0x08;

    /** Length of a header or data digest (CRC32C, little-endian). */
    public static final int DIGEST_LENGTH = 4;

    protected ByteBuffer buffer;
    protected int offset;

    @SuppressWarnings("unchecked")
    private T self() {
        return (T) this;
    }

    /** Points this flyweight at the PDU starting at {@code offset} in {@code buffer} (which must be little-endian). */
    public T wrap(ByteBuffer buffer, int offset) {
        if (buffer.order() != ByteOrder.LITTLE_ENDIAN) {
            throw new IllegalArgumentException("NVMe/TCP PDUs are little-endian; buffer order is " + buffer.order());
        }
        this.buffer = buffer;
        this.offset = offset;
        return self();
    }

    public ByteBuffer buffer() {
        return buffer;
    }

    public int offset() {
        return offset;
    }

    public int pduType() {
        return buffer.get(offset + TYPE_OFFSET) & 0xFF;
    }

    public T pduType(int type) {
        buffer.put(offset + TYPE_OFFSET, (byte) type);
        return self();
    }

    public int flags() {
        return buffer.get(offset + FLAGS_OFFSET) & 0xFF;
    }

    public T flags(int flags) {
        buffer.put(offset + FLAGS_OFFSET, (byte) flags);
        return self();
    }

    public boolean hasFlag(int flag) {
        return (flags() & flag) != 0;
    }

    public int headerLength() {
        return buffer.get(offset + HLEN_OFFSET) & 0xFF;
    }

    public T headerLength(int hlen) {
        buffer.put(offset + HLEN_OFFSET, (byte) hlen);
        return self();
    }

    public int pduDataOffset() {
        return buffer.get(offset + PDO_OFFSET) & 0xFF;
    }

    public T pduDataOffset(int pdo) {
        buffer.put(offset + PDO_OFFSET, (byte) pdo);
        return self();
    }

    /** PLEN, unsigned 32 bits, held in a long. */
    public long pduLength() {
        return buffer.getInt(offset + PLEN_OFFSET) & 0xFFFF_FFFFL;
    }

    public T pduLength(long plen) {
        buffer.putInt(offset + PLEN_OFFSET, (int) plen);
        return self();
    }

    /**
     * Starts a fresh PDU: writes the common header (flags 0, PDO 0) and zeroes the rest of the
     * {@code headerLength}-byte header.
     */
    protected T initHeader(int type, int headerLength, long plen) {
        for (int i = COMMON_HEADER_LENGTH; i < headerLength; i++) {
            buffer.put(offset + i, (byte) 0);
        }
        buffer.put(offset + TYPE_OFFSET, (byte) type);
        buffer.put(offset + FLAGS_OFFSET, (byte) 0);
        buffer.put(offset + HLEN_OFFSET, (byte) headerLength);
        buffer.put(offset + PDO_OFFSET, (byte) 0);
        buffer.putInt(offset + PLEN_OFFSET, (int) plen);
        return self();
    }

    @Override
    public String toString() {
        return buffer == null ? getClass().getSimpleName() + "[unwrapped]"
            : String.format("%s[flags=0x%02x hlen=%d pdo=%d plen=%d]", PduType.name(pduType()), flags(),
                headerLength(), pduDataOffset(), pduLength());
    }
}
