package io.nvmeof4j.protocol.tcp;

import java.nio.ByteBuffer;
import java.util.zip.CRC32C;

/**
 * CRC32C (Castagnoli) over byte ranges of a buffer, as NVMe/TCP header and data digests use it
 * (NVMe/TCP Transport Specification 1.0, 3.6.1.5; wire reference 5): standard CRC-32C, initial value and final XOR
 * all ones, stored little-endian after the header or data it covers.
 * <p>Allocation-free: one {@link CRC32C} is reused, and a range is fed by moving the buffer's own position and
 * limit and restoring them afterwards (no duplicate or slice per call). Not thread-safe: one instance per reactor.
 */
public final class Crc32cDigest {
    private final CRC32C crc = new CRC32C();

    /** The CRC32C of {@code length} bytes of {@code buffer} starting at absolute index {@code offset}. */
    public int compute(ByteBuffer buffer, int offset, int length) {
        crc.reset();
        update(buffer, offset, length);
        return value();
    }

    /** Starts a digest spanning several ranges. */
    public Crc32cDigest reset() {
        crc.reset();
        return this;
    }

    /** Adds {@code length} bytes of {@code buffer} from absolute index {@code offset}; position and limit are kept. */
    public Crc32cDigest update(ByteBuffer buffer, int offset, int length) {
        int position = buffer.position();
        int limit = buffer.limit();
        // Widen the limit first so that a position beyond the old limit is legal, then narrow to the range.
        buffer.limit(buffer.capacity());
        buffer.position(offset);
        buffer.limit(offset + length);
        crc.update(buffer);
        buffer.limit(limit);
        buffer.position(position);
        return this;
    }

    /** The digest of everything added since {@link #reset()}, as the int that goes on the wire (little-endian). */
    public int value() {
        return (int) crc.getValue();
    }

    /** Convenience for tests and control-path code: the CRC32C of a byte array range. */
    public static int of(byte[] bytes, int offset, int length) {
        CRC32C c = new CRC32C();
        c.update(bytes, offset, length);
        return (int) c.getValue();
    }
}
