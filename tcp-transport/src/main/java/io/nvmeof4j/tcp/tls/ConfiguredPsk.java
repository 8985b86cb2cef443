package io.nvmeof4j.tcp.tls;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.Arrays;
import java.util.Base64;
import java.util.zip.CRC32;

/**
 * A configured PSK for NVMe/TCP TLS in the PSK interchange format (NVMe/TCP Transport Specification 1.0c, 3.6.1.5;
 * TP 8018): {@code NVMeTLSkey-1:hh:<base64 of key || CRC-32(key), little-endian>:}, where {@code hh} says how the
 * configured PSK becomes the retained PSK: 00 unchanged, 01 HKDF with SHA-256 (32-byte key), 02 HKDF with SHA-384
 * (48-byte key). This is the string {@code nvme gen-tls-key} prints and libnvme/{@code nvme check-tls-key} read;
 * the CRC is zlib's CRC-32 (libnvme uses the same table), which {@link CRC32} computes.
 * <p>The key bytes never appear in {@link #toString()}, exceptions or logs.
 */
public final class ConfiguredPsk {
    private static final String PREFIX = "NVMeTLSkey-1:";
    private static final int CRC_LENGTH = 4;

    private final int transform;
    private final byte[] key;

    private ConfiguredPsk(int transform, byte[] key) {
        this.transform = transform;
        this.key = key;
    }

    /** A configured PSK from raw bytes (32 or 48) and the retained-PSK transform ({@link PskHash} id 0, 1 or 2). */
    public static ConfiguredPsk of(int transform, byte[] key) {
        checkLength(transform, key.length);
        return new ConfiguredPsk(transform, key.clone());
    }

    /**
     * Parses the interchange format.
     *
     * @throws IllegalArgumentException naming what is wrong (never the key)
     */
    public static ConfiguredPsk parse(String text) {
        if (text == null || !text.startsWith(PREFIX) || text.length() < PREFIX.length() + 4 || !text.endsWith(":")
            || text.charAt(PREFIX.length() + 2) != ':') {
            throw new IllegalArgumentException("a TLS PSK must read NVMeTLSkey-1:hh:<base64>:");
        }
        int transform;
        try {
            transform = Integer.parseInt(text.substring(PREFIX.length(), PREFIX.length() + 2), 16);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("TLS PSK hash specifier is not two hex digits");
        }
        if (transform > 2) {
            throw new IllegalArgumentException("TLS PSK hash specifier " + transform + " is not 00, 01 or 02");
        }
        byte[] decoded;
        try {
            decoded = Base64.getDecoder().decode(text.substring(PREFIX.length() + 3, text.length() - 1));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("TLS PSK is not valid base64");
        }
        try {
            int keyLength = decoded.length - CRC_LENGTH;
            checkLength(transform, keyLength);
            CRC32 crc = new CRC32();
            crc.update(decoded, 0, keyLength);
            long stored = (decoded[keyLength] & 0xFFL) | (decoded[keyLength + 1] & 0xFFL) << 8
                | (decoded[keyLength + 2] & 0xFFL) << 16 | (decoded[keyLength + 3] & 0xFFL) << 24;
            if (stored != crc.getValue()) {
                throw new IllegalArgumentException("TLS PSK CRC-32 does not match its key (mistyped?)");
            }
            return new ConfiguredPsk(transform, Arrays.copyOf(decoded, keyLength));
        } finally {
            Arrays.fill(decoded, (byte) 0);
        }
    }

    private static void checkLength(int transform, int length) {
        boolean ok = switch (transform) {
            case 0 -> length == 32 || length == 48;
            case 1 -> length == 32;
            case 2 -> length == 48;
            default -> false;
        };
        if (!ok) {
            throw new IllegalArgumentException("TLS PSK of " + Math.max(length, 0) + " bytes does not fit hash specifier "
                + String.format("%02d", transform) + " (01: 32 bytes, 02: 48 bytes, 00: either)");
        }
    }

    /** 0 = used as the retained PSK unchanged, 1 = SHA-256, 2 = SHA-384. */
    public int transform() {
        return transform;
    }

    public int length() {
        return key.length;
    }

    /**
     * The hash of the TLS PSK and cipher suite this key goes with: the transform's when there is one, otherwise
     * by length (libnvme's default_hmac: 32 bytes SHA-256, 48 bytes SHA-384).
     */
    public PskHash cipherHash() {
        if (transform != 0) {
            return PskHash.byId(transform);
        }
        return key.length == 48 ? PskHash.SHA384 : PskHash.SHA256;
    }

    byte[] keyBytes() {
        return key;
    }

    /** The interchange format (for tests and for tools that generate keys). */
    public String toInterchangeFormat() {
        byte[] raw = Arrays.copyOf(key, key.length + CRC_LENGTH);
        CRC32 crc = new CRC32();
        crc.update(key);
        long value = crc.getValue();
        for (int i = 0; i < CRC_LENGTH; i++) {
            raw[key.length + i] = (byte) (value >>> (8 * i));
        }
        String text = PREFIX + String.format("%02x", transform) + ":" + Base64.getEncoder().encodeToString(raw) + ":";
        Arrays.fill(raw, (byte) 0);
        return text;
    }

    /** Constant-time comparison of two keys. */
    public boolean sameKey(ConfiguredPsk other) {
        return transform == other.transform && MessageDigest.isEqual(key, other.key);
    }

    @Override
    public String toString() {
        return "ConfiguredPsk[hash " + String.format("%02d", transform) + ", " + key.length + " bytes]";
    }

    static byte[] ascii(String s) {
        return s.getBytes(StandardCharsets.US_ASCII);
    }
}
