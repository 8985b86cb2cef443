package io.nvmeof4j.protocol.admin;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

/**
 * Fixed-width text fields of NVMe data structures: the space-padded ASCII strings of Identify Controller
 * (SN, MN, FR) and the NUL-padded ASCII strings of discovery log entries (TRSVCID, TRADDR). Absolute access;
 * buffer position untouched. Control-path helpers (they allocate the returned strings).
 */
public final class AsciiFields {
    private AsciiFields() {
    }

    /**
     * Writes {@code text} left-aligned into a {@code length}-byte field, filling the rest with {@code pad}
     * (' ' for Identify strings, 0 for NUL-padded fields).
     *
     * @throws IllegalArgumentException when the text is not printable ASCII or does not fit
     */
    public static void write(ByteBuffer buffer, int offset, int length, String text, byte pad) {
        byte[] bytes = text.getBytes(StandardCharsets.US_ASCII);
        if (bytes.length > length) {
            throw new IllegalArgumentException("'" + text + "' is longer than its " + length + "-byte field");
        }
        for (int i = 0; i < bytes.length; i++) {
            if (bytes[i] < 0x20 || bytes[i] > 0x7E || text.charAt(i) > 0x7E) {
                throw new IllegalArgumentException("'" + text + "' is not printable ASCII");
            }
            buffer.put(offset + i, bytes[i]);
        }
        for (int i = bytes.length; i < length; i++) {
            buffer.put(offset + i, pad);
        }
    }

    /** Writes space-padded: the form of Identify Controller SN, MN and FR. */
    public static void writeSpacePadded(ByteBuffer buffer, int offset, int length, String text) {
        write(buffer, offset, length, text, (byte) ' ');
    }

    /**
     * Writes NUL-padded, keeping at least one NUL is not required (TRSVCID/TRADDR may fill the field).
     */
    public static void writeNulPadded(ByteBuffer buffer, int offset, int length, String text) {
        write(buffer, offset, length, text, (byte) 0);
    }

    /** Reads a field, stopping at the first NUL and dropping trailing spaces (either padding style). */
    public static String read(ByteBuffer buffer, int offset, int length) {
        int end = 0;
        while (end < length && buffer.get(offset + end) != 0) {
            end++;
        }
        while (end > 0 && buffer.get(offset + end - 1) == ' ') {
            end--;
        }
        byte[] bytes = new byte[end];
        for (int i = 0; i < end; i++) {
            bytes[i] = buffer.get(offset + i);
        }
        return new String(bytes, StandardCharsets.US_ASCII);
    }

    /** Zeroes {@code length} bytes at {@code offset}. */
    public static void zero(ByteBuffer buffer, int offset, int length) {
        int i = 0;
        for (; i + 8 <= length; i += 8) {
            buffer.putLong(offset + i, 0L);
        }
        for (; i < length; i++) {
            buffer.put(offset + i, (byte) 0);
        }
    }
}
