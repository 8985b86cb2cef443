package io.nvmeof4j.protocol.fabrics;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/** Test helpers: hex vectors to and from little-endian buffers. */
public final class Bytes {
    private Bytes() {
    }

    /** Parses "7f 40 03 00 ..." (whitespace ignored) into a little-endian buffer of at least {@code size} bytes. */
    public static ByteBuffer hex(int size, String hex) {
        String clean = hex.replaceAll("\\s+", "");
        ByteBuffer b = ByteBuffer.allocate(Math.max(size, clean.length() / 2)).order(ByteOrder.LITTLE_ENDIAN);
        for (int i = 0; i < clean.length(); i += 2) {
            b.put(i / 2, (byte) Integer.parseInt(clean.substring(i, i + 2), 16));
        }
        return b;
    }

    public static ByteBuffer zeroes(int size) {
        return ByteBuffer.allocate(size).order(ByteOrder.LITTLE_ENDIAN);
    }

    public static String toHex(ByteBuffer b, int offset, int length) {
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < length; i++) {
            sb.append(String.format("%02x", b.get(offset + i) & 0xFF));
        }
        return sb.toString();
    }

    public static void ascii(ByteBuffer b, int offset, String text) {
        for (int i = 0; i < text.length(); i++) {
            b.put(offset + i, (byte) text.charAt(i));
        }
    }
}
