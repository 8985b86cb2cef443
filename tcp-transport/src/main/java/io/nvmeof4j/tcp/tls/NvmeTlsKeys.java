package io.nvmeof4j.tcp.tls;

import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.util.Arrays;
import java.util.Base64;

/**
 * Derives what goes into the TLS handshake from a configured PSK, exactly as libnvme ({@code src/nvme/linux.c}:
 * derive_retained_key, derive_psk_digest, derive_tls_key; the fixed, non-"compat" variants SPDK also moved to)
 * and the kernel ({@code nvme_auth_derive_tls_psk}) do (NVMe/TCP 1.0c 3.6.1.3-3.6.1.4):
 * <ol>
 *   <li>retained PSK = configured PSK (hash 00), or HKDF-Expand-Label(HKDF-Extract(0, configured), "HostNQN",
 *       host NQN, length of the configured PSK) with the hash of the key's specifier;</li>
 *   <li>version 1 identities: PSK digest = base64(HMAC(retained, host NQN + " " + subsystem NQN + " " +
 *       "NVMe-over-Fabrics"));</li>
 *   <li>TLS PSK = HKDF-Expand-Label(HKDF-Extract(0, retained), "nvme-tls-psk", context, length), where the context
 *       is the whole identity for version 0 and {@code "hh <digest>"} for version 1.</li>
 * </ol>
 * HKDF-Expand-Label is TLS 1.3's (RFC 8446 7.1): info = length (2 bytes) || "tls13 " + label || context, each of
 * the two strings with a one-byte length prefix.
 * <p><b>Compat.</b> libnvme before 1.16 (nvme-cli before 2.16: Debian trixie's 2.13, and what the Linux hosts of
 * most distributions run) built the HKDF info differently: the length little-endian and the label and context
 * concatenated without length prefixes (libnvme's {@code derive_*_compat} since commit fde6b1f "TLS PSK derivation
 * fixes"). Keys such a host inserted into its keyring are derived that way, so both roles can do it too
 * ({@link Derivation#LIBNVME_COMPAT}). A version-1 identity tells which one the host used (its digest is computed
 * from the retained PSK, which differs); a version-0 identity does not.
 */
public final class NvmeTlsKeys {
    private static final String DIGEST_SEED = "NVMe-over-Fabrics";

    private NvmeTlsKeys() {
    }

    /** How the HKDF info is built: RFC 8446's HkdfLabel (libnvme 1.16+) or libnvme's older layout. */
    public enum Derivation {
        RFC8446,
        LIBNVME_COMPAT;

        /** Configuration name: "rfc8446" or "compat". */
        public static Derivation fromConfigName(String name) {
            return switch (name) {
                case "rfc8446" -> RFC8446;
                case "compat" -> LIBNVME_COMPAT;
                default -> throw new IllegalArgumentException("TLS PSK derivation \"" + name
                    + "\" is not \"rfc8446\" or \"compat\"");
            };
        }
    }

    /** The identity and TLS PSK a host with this configured PSK uses towards a subsystem (RFC 8446 labels). */
    public static DerivedPsk derive(ConfiguredPsk configured, String hostNqn, String subsystemNqn, int version) {
        return derive(configured, hostNqn, subsystemNqn, version, Derivation.RFC8446);
    }

    /** The identity and TLS PSK a host with this configured PSK uses towards a subsystem. */
    public static DerivedPsk derive(ConfiguredPsk configured, String hostNqn, String subsystemNqn, int version,
                                    Derivation derivation) {
        if (version != 0 && version != 1) {
            throw new IllegalArgumentException("PSK identity version " + version + " is not 0 or 1");
        }
        PskHash hash = configured.cipherHash();
        boolean compat = derivation == Derivation.LIBNVME_COMPAT;
        byte[] retained = retainedPsk(configured, hostNqn, compat);
        try {
            PskIdentity identity;
            byte[] context;
            if (version == 0) {
                identity = new PskIdentity(0, hash, hostNqn, subsystemNqn, null, false);
                context = ascii(identity.toString());
            } else {
                String digest = pskDigest(hash, retained, hostNqn, subsystemNqn);
                identity = new PskIdentity(1, hash, hostNqn, subsystemNqn, digest, false);
                context = ascii(String.format("%02d %s", hash.id, digest));
            }
            byte[] prk = hkdfExtract(hash, retained);
            try {
                return new DerivedPsk(identity, hkdfExpandLabel(hash, prk, "nvme-tls-psk", context, configured.length(),
                    compat));
            } finally {
                Arrays.fill(prk, (byte) 0);
            }
        } finally {
            Arrays.fill(retained, (byte) 0);
        }
    }

    /**
     * The identity and TLS PSK of a PSK that DH-HMAC-CHAP generated (secure channel concatenation), as the Linux
     * host and nvmet derive them (drivers/nvme/common/auth.c since 6.18: nvme_auth_generate_digest,
     * nvme_auth_derive_tls_psk with RFC 8446's HkdfLabel; keyring.c nvme_tls_psk_refresh names the key):
     * <pre>
     * digest   = base64(HMAC(PSK, host NQN + " " + subsystem NQN + " NVMe-over-Fabrics"))
     * TLS PSK  = HKDF-Expand-Label(HKDF-Extract(0, PSK), "nvme-tls-psk", "hh digest", length of PSK)
     * identity = NVMe1Ghh host-NQN subsystem-NQN digest
     * </pre>
     * with {@code hh} and every HMAC/HKDF by the transaction's hash. Kernels 6.15 to 6.17 built the HKDF info
     * without RFC 8446's length prefixes ("nvme-auth: use hkdf_expand_label()" fixed it); that variant is not
     * offered here.
     *
     * @param generatedPsk HMAC(Ks, C1 || C2) of the transaction, as long as the hash's digest; not kept
     */
    public static DerivedPsk deriveGenerated(PskHash hash, byte[] generatedPsk, String hostNqn, String subsystemNqn) {
        if (generatedPsk.length != hash.length) {
            throw new IllegalArgumentException("a generated PSK of " + generatedPsk.length + " bytes for " + hash
                + " (" + hash.length + ")");
        }
        String digest = pskDigest(hash, generatedPsk, hostNqn, subsystemNqn);
        PskIdentity identity = new PskIdentity(1, hash, hostNqn, subsystemNqn, digest, true);
        byte[] prk = hkdfExtract(hash, generatedPsk);
        try {
            return new DerivedPsk(identity, hkdfExpandLabel(hash, prk, "nvme-tls-psk",
                ascii(String.format("%02d %s", hash.id, digest)), hash.length, false));
        } finally {
            Arrays.fill(prk, (byte) 0);
        }
    }

    /** Step 1: the retained PSK (the caller clears it). */
    static byte[] retainedPsk(ConfiguredPsk configured, String hostNqn, boolean compat) {
        if (configured.transform() == 0) {
            return configured.keyBytes().clone();
        }
        PskHash hash = PskHash.byId(configured.transform());
        byte[] prk = hkdfExtract(hash, configured.keyBytes());
        try {
            return hkdfExpandLabel(hash, prk, "HostNQN", ascii(hostNqn), configured.length(), compat);
        } finally {
            Arrays.fill(prk, (byte) 0);
        }
    }

    static String pskDigest(PskHash hash, byte[] retained, String hostNqn, String subsystemNqn) {
        Mac mac = mac(hash, retained);
        mac.update(ascii(hostNqn));
        mac.update((byte) ' ');
        mac.update(ascii(subsystemNqn));
        mac.update((byte) ' ');
        mac.update(ascii(DIGEST_SEED));
        return Base64.getEncoder().encodeToString(mac.doFinal());
    }

    /** HKDF-Extract with no salt: RFC 5869 uses a string of HashLen zeros. */
    static byte[] hkdfExtract(PskHash hash, byte[] ikm) {
        return mac(hash, new byte[hash.length]).doFinal(ikm);
    }

    static byte[] hkdfExpandLabel(PskHash hash, byte[] prk, String label, byte[] context, int length,
                                  boolean compat) {
        byte[] fullLabel = ascii("tls13 " + label);
        if (fullLabel.length > 255 || context.length > 255) {
            throw new IllegalArgumentException("HKDF label or context longer than 255 bytes");
        }
        ByteArrayOutputStream info = new ByteArrayOutputStream(4 + fullLabel.length + context.length);
        if (compat) {
            info.write(length);
            info.write(length >>> 8);
            info.writeBytes(fullLabel);
            info.writeBytes(context);
            return hkdfExpand(hash, prk, info.toByteArray(), length);
        }
        info.write(length >>> 8);
        info.write(length);
        info.write(fullLabel.length);
        info.writeBytes(fullLabel);
        info.write(context.length);
        info.writeBytes(context);
        return hkdfExpand(hash, prk, info.toByteArray(), length);
    }

    private static byte[] hkdfExpand(PskHash hash, byte[] prk, byte[] info, int length) {
        Mac mac = mac(hash, prk);
        byte[] out = new byte[length];
        byte[] block = new byte[0];
        int done = 0;
        for (int counter = 1; done < length; counter++) {
            mac.update(block);
            mac.update(info);
            mac.update((byte) counter);
            Arrays.fill(block, (byte) 0);
            block = mac.doFinal();
            int n = Math.min(block.length, length - done);
            System.arraycopy(block, 0, out, done, n);
            done += n;
        }
        Arrays.fill(block, (byte) 0);
        return out;
    }

    private static Mac mac(PskHash hash, byte[] key) {
        try {
            Mac mac = Mac.getInstance(hash.hmac);
            mac.init(new SecretKeySpec(key, hash.hmac));
            return mac;
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException(hash.hmac + " is not available in this JDK", e);
        }
    }

    private static byte[] ascii(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }
}
