package io.nvmeof4j.it.tcp;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.SplittableRandom;

/** Little-endian field access and test data for the raw host's tests. */
public final class Bytes {
    private Bytes() {
    }

    public static int u8(byte[] b, int offset) {
        return b[offset] & 0xFF;
    }

    public static int u16(byte[] b, int offset) {
        return (b[offset] & 0xFF) | (b[offset + 1] & 0xFF) << 8;
    }

    public static long u32(byte[] b, int offset) {
        return Pdu.le32(b, offset) & 0xFFFF_FFFFL;
    }

    public static long u64(byte[] b, int offset) {
        return u32(b, offset) | u32(b, offset + 4) << 32;
    }

    /** A fixed-width ASCII field as sent (padding kept). */
    public static String ascii(byte[] b, int offset, int length) {
        return new String(b, offset, length, StandardCharsets.US_ASCII);
    }

    /** A NUL-terminated field (NQN, TRADDR, TRSVCID) up to its first NUL. */
    public static String cString(byte[] b, int offset, int fieldLength) {
        int end = offset;
        while (end < offset + fieldLength && b[end] != 0) {
            end++;
        }
        return new String(b, offset, end - offset, StandardCharsets.UTF_8);
    }

    /** {@code text} right-padded with spaces to {@code width}, as SN/MN/FR are (wire reference 2.6). */
    public static String spacePadded(String text, int width) {
        StringBuilder sb = new StringBuilder(text);
        while (sb.length() < width) {
            sb.append(' ');
        }
        return sb.toString();
    }

    public static byte[] slice(byte[] b, int offset, int length) {
        return Arrays.copyOfRange(b, offset, offset + length);
    }

    public static boolean allZero(byte[] b) {
        for (byte x : b) {
            if (x != 0) {
                return false;
            }
        }
        return true;
    }

    /** Reproducible pseudo-random bytes; no block of them is all zero. */
    public static byte[] random(long seed, int length) {
        byte[] b = new byte[length];
        SplittableRandom r = new SplittableRandom(seed);
        for (int i = 0; i < length; i++) {
            b[i] = (byte) r.nextInt(256);
        }
        for (int i = 0; i < length; i += 512) {
            b[i] = (byte) 0xA5;                     // a read of zeros can never pass for this data
        }
        return b;
    }
}
