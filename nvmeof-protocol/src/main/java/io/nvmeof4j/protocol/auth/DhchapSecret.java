package io.nvmeof4j.protocol.auth;

import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.SecureRandom;
import java.util.Arrays;
import java.util.Base64;
import java.util.zip.CRC32;

/**
 * A DH-HMAC-CHAP secret in the NVMe representation {@code DHHC-1:hh:<base64>:} (NVMe Base 2.0, 8.13.5.8 "Secret
 * representation"; what {@code nvme gen-dhchap-key} prints and nvmet's {@code dhchap_key} takes).
 *
 * <p>The base64 text decodes to the key (32, 48 or 64 bytes) followed by the CRC-32 of the key, little-endian.
 * {@code hh} names the hash of the key transformation: 00 none, 01 SHA-256, 02 SHA-384, 03 SHA-512. The key actually
 * used in the HMAC of a response is {@link #transform(String)}: HMAC-hh(key, NQN || "NVMe-over-Fabrics"), with the
 * host NQN for a host secret and the subsystem NQN for a controller secret (for hh = 00, the key itself).
 *
 * <p>The key never leaves this object except through {@link #transform}; {@link #toString()} prints only the hash id
 * and length, so a secret in a log line or exception reveals nothing.
 */
public final class DhchapSecret {
    public static final String PREFIX = "DHHC-1:";
    private static final byte[] TRANSFORM_SUFFIX = "NVMe-over-Fabrics".getBytes(StandardCharsets.US_ASCII);

    private final byte[] key;
    private final int transformHash;

    private DhchapSecret(byte[] key, int transformHash) {
        this.key = key;
        this.transformHash = transformHash;
    }

    /**
     * Parses {@code DHHC-1:hh:<base64>:} (the final colon may be missing, as the kernel allows).
     *
     * @throws IllegalArgumentException saying what is wrong, never quoting the secret
     */
    public static DhchapSecret parse(String text) {
        if (text == null || !text.startsWith(PREFIX)) {
            throw new IllegalArgumentException("a DH-HMAC-CHAP secret must start with " + PREFIX);
        }
        String rest = text.substring(PREFIX.length());
        int colon = rest.indexOf(':');
        if (colon != 2) {
            throw new IllegalArgumentException("a DH-HMAC-CHAP secret needs two hash digits: DHHC-1:hh:<base64>:");
        }
        int hh;
        try {
            hh = Integer.parseInt(rest.substring(0, 2));
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("the hash field of a DH-HMAC-CHAP secret is not a number");
        }
        if (hh != 0 && DhchapHash.fromId(hh) == null) {
            throw new IllegalArgumentException("unknown key transformation hash " + hh + " (00 to 03)");
        }
        String b64 = rest.substring(3);
        if (b64.endsWith(":")) {
            b64 = b64.substring(0, b64.length() - 1);
        }
        byte[] raw;
        try {
            raw = Base64.getDecoder().decode(b64);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("the key of a DH-HMAC-CHAP secret is not valid base64");
        }
        try {
            if (raw.length != 36 && raw.length != 52 && raw.length != 68) {
                throw new IllegalArgumentException("a DH-HMAC-CHAP key must be 32, 48 or 64 bytes plus a CRC-32, not "
                    + raw.length + " bytes");
            }
            int n = raw.length - 4;
            CRC32 crc = new CRC32();
            crc.update(raw, 0, n);
            long expected = crc.getValue();
            long actual = (raw[n] & 0xFFL) | (raw[n + 1] & 0xFFL) << 8 | (raw[n + 2] & 0xFFL) << 16
                | (raw[n + 3] & 0xFFL) << 24;
            if (expected != actual) {
                throw new IllegalArgumentException("the CRC-32 of the DH-HMAC-CHAP key does not match (mistyped key?)");
            }
            return new DhchapSecret(Arrays.copyOf(raw, n), hh);
        } finally {
            Arrays.fill(raw, (byte) 0);
        }
    }

    /** Encodes {@code key} (32, 48 or 64 bytes) with transformation hash {@code hh} (0-3) as {@code DHHC-1:hh:..:}. */
    public static String format(byte[] key, int hh) {
        if (key.length != 32 && key.length != 48 && key.length != 64) {
            throw new IllegalArgumentException("key of " + key.length + " bytes: 32, 48 or 64");
        }
        if (hh != 0 && DhchapHash.fromId(hh) == null) {
            throw new IllegalArgumentException("transformation hash " + hh + " outside 0..3");
        }
        byte[] raw = Arrays.copyOf(key, key.length + 4);
        CRC32 crc = new CRC32();
        crc.update(key);
        long c = crc.getValue();
        for (int i = 0; i < 4; i++) {
            raw[key.length + i] = (byte) (c >>> (8 * i));
        }
        String s = String.format("%s%02d:%s:", PREFIX, hh, Base64.getEncoder().encodeToString(raw));
        Arrays.fill(raw, (byte) 0);
        return s;
    }

    /** A fresh random secret of {@code length} bytes, as {@code nvme gen-dhchap-key} makes one. */
    public static String generate(int length, int hh, SecureRandom random) {
        byte[] key = new byte[length];
        random.nextBytes(key);
        try {
            return format(key, hh);
        } finally {
            Arrays.fill(key, (byte) 0);
        }
    }

    /** The key transformation hash: 0 (none) or a {@link DhchapHash#id()}. */
    public int transformHash() {
        return transformHash;
    }

    public int keyLength() {
        return key.length;
    }

    /**
     * The key the response HMAC uses: for hh = 00 a copy of the key, otherwise HMAC-hh(key, nqn || "NVMe-over-Fabrics")
     * (NVMe Base 2.0, 8.13.5.8; nvme_auth_transform_key). The caller should zero the array when done.
     */
    public byte[] transform(String nqn) {
        if (transformHash == 0) {
            return key.clone();
        }
        DhchapHash h = DhchapHash.fromId(transformHash);
        try {
            Mac mac = Mac.getInstance(h.macAlgorithm());
            mac.init(new SecretKeySpec(key, h.macAlgorithm()));
            mac.update(nqn.getBytes(StandardCharsets.UTF_8));
            mac.update(TRANSFORM_SUFFIX);
            return mac.doFinal();
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException(h.macAlgorithm() + " unavailable in this JDK", e);
        }
    }

    /** Whether both hold the same key and hash (constant time in the key bytes). */
    public boolean sameAs(DhchapSecret other) {
        return other != null && transformHash == other.transformHash
            && java.security.MessageDigest.isEqual(key, other.key);
    }

    @Override
    public String toString() {
        return "DhchapSecret[hh=" + transformHash + ", " + key.length + " bytes, value hidden]";
    }
}
