package io.nvmeof4j.protocol.auth;

import java.util.Locale;

/**
 * DH-HMAC-CHAP hash functions (NVMe Base 2.0, 8.13.5 "DH-HMAC-CHAP protocol"; HashID values of the Negotiate and
 * Challenge messages). The same numbers name the key transformation hash ({@code hh}) of a {@code DHHC-1} secret,
 * where 0 means "no transformation".
 */
public enum DhchapHash {
    SHA256(0x01, 32, "SHA-256", "HmacSHA256", "hmac(sha256)"),
    SHA384(0x02, 48, "SHA-384", "HmacSHA384", "hmac(sha384)"),
    SHA512(0x03, 64, "SHA-512", "HmacSHA512", "hmac(sha512)");

    private final int id;
    private final int length;
    private final String digestAlgorithm;
    private final String macAlgorithm;
    private final String linuxName;

    DhchapHash(int id, int length, String digestAlgorithm, String macAlgorithm, String linuxName) {
        this.id = id;
        this.length = length;
        this.digestAlgorithm = digestAlgorithm;
        this.macAlgorithm = macAlgorithm;
        this.linuxName = linuxName;
    }

    /** HashID on the wire. */
    public int id() {
        return id;
    }

    /** Digest length in bytes: the HL field of Challenge, Reply and Success1. */
    public int length() {
        return length;
    }

    /** JCA name of the digest ({@code MessageDigest}). */
    public String digestAlgorithm() {
        return digestAlgorithm;
    }

    /** JCA name of the HMAC ({@code Mac}). */
    public String macAlgorithm() {
        return macAlgorithm;
    }

    /**
     * Whether a TLS PSK can come from a transaction with this hash (secure channel concatenation): TLS 1.3 has suites
     * for SHA-256 and SHA-384 only, and the kernel's nvme_auth_derive_tls_psk refuses SHA-512.
     */
    public boolean generatesTlsPsk() {
        return this != SHA512;
    }

    /** The name nvmet's configfs and nvmetcli use ({@code dhchap_hash}): {@code hmac(sha256)}. */
    public String linuxName() {
        return linuxName;
    }

    /** The hash with wire id {@code id}, or null when the id is unknown (0 and 4-255). */
    public static DhchapHash fromId(int id) {
        for (DhchapHash h : values()) {
            if (h.id == id) {
                return h;
            }
        }
        return null;
    }

    /**
     * Parses a configured name: {@code hmac(sha256)} (nvmetcli), {@code sha256}, {@code SHA-256}.
     *
     * @throws IllegalArgumentException naming the accepted names
     */
    public static DhchapHash parse(String name) {
        String n = name.trim().toLowerCase(Locale.ROOT).replace("-", "");
        for (DhchapHash h : values()) {
            String bare = h.linuxName.substring(5, h.linuxName.length() - 1);
            if (n.equals(h.linuxName) || n.equals(bare)) {
                return h;
            }
        }
        throw new IllegalArgumentException("unknown DH-HMAC-CHAP hash '" + name
            + "': expected hmac(sha256), hmac(sha384) or hmac(sha512)");
    }
}
