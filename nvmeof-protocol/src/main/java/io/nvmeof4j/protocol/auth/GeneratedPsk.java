package io.nvmeof4j.protocol.auth;

import java.util.Arrays;
import java.util.Objects;

/**
 * The PSK a DH-HMAC-CHAP transaction with secure channel concatenation generated (NVMe Base 2.1 8.3.5.5.9):
 * HMAC(Ks, C1 || C2) with the transaction's hash, which both sides then turn into a TLS PSK and the PSK identity
 * {@code NVMe1G<hh> <hostnqn> <subnqn> <digest>} (NVMe/TCP 3.6.1.3; the TCP transport's {@code NvmeTlsKeys}).
 * The key stays out of {@link #toString()}; whoever takes it {@link #clear()}s it.
 *
 * @param secureChannel the SC_C that asked for it: {@link Dhchap#SC_C_NEWTLSPSK} or {@link Dhchap#SC_C_REPLACETLSPSK}
 * @param hash          the transaction's hash (SHA-256 or SHA-384: a TLS 1.3 suite must exist for it)
 * @param key           the generated PSK, {@code hash.length()} bytes
 */
public record GeneratedPsk(int secureChannel, DhchapHash hash, byte[] key) {
    public GeneratedPsk {
        Objects.requireNonNull(hash, "hash");
        Objects.requireNonNull(key, "key");
    }

    public void clear() {
        Arrays.fill(key, (byte) 0);
    }

    @Override
    public String toString() {
        return "GeneratedPsk[SC_C " + secureChannel + ", " + hash + ", " + key.length + " bytes, value hidden]";
    }
}
