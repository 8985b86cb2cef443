package io.nvmeof4j.tcp.tls;

import org.bouncycastle.tls.CipherSuite;
import org.bouncycastle.tls.PRFAlgorithm;

/**
 * The hash a TLS PSK for NVMe/TCP is bound to, as the two-digit specifier of the PSK identity and the interchange
 * format gives it (01 SHA-256, 02 SHA-384), with the one TLS 1.3 cipher suite NVMe/TCP pairs with each
 * (NVMe/TCP 1.0c 3.6.1.3: TLS_AES_128_GCM_SHA256 and TLS_AES_256_GCM_SHA384).
 */
public enum PskHash {
    SHA256(1, "HmacSHA256", 32, PRFAlgorithm.tls13_hkdf_sha256, CipherSuite.TLS_AES_128_GCM_SHA256),
    SHA384(2, "HmacSHA384", 48, PRFAlgorithm.tls13_hkdf_sha384, CipherSuite.TLS_AES_256_GCM_SHA384);

    final int id;
    final String hmac;
    final int length;
    final int prfAlgorithm;
    final int cipherSuite;

    PskHash(int id, String hmac, int length, int prfAlgorithm, int cipherSuite) {
        this.id = id;
        this.hmac = hmac;
        this.length = length;
        this.prfAlgorithm = prfAlgorithm;
        this.cipherSuite = cipherSuite;
    }

    public int id() {
        return id;
    }

    public int length() {
        return length;
    }

    public static PskHash byId(int id) {
        return switch (id) {
            case 1 -> SHA256;
            case 2 -> SHA384;
            default -> throw new IllegalArgumentException("PSK hash specifier " + id + " is not 01 or 02");
        };
    }
}
