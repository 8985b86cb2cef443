package io.nvmeof4j.protocol.auth;

import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;

/**
 * The DH-HMAC-CHAP computations (NVMe Base 2.0, 8.13.5.2 to 8.13.5.5), with the byte order the Linux host and
 * target use (drivers/nvme/host/auth.c, drivers/nvme/target/auth.c):
 * <pre>
 * host response       R1 = HMAC(Kh', C1' || LE32(S1) || LE16(T_ID) || 00h || "HostHost"   || NQNh || 00h || NQNc)
 * controller response R2 = HMAC(Kc', C2' || LE32(S2) || LE16(T_ID) || 00h || "Controller" || NQNc || 00h || NQNh)
 * augmented challenge  C' = HMAC(H(Ks), C)          (only with a DH group; otherwise C' = C)
 * generated PSK       PSK = HMAC(Ks, C1 || C2)   (secure channel concatenation, NVMe Base 2.1 8.3.5.5.9)
 * </pre>
 * Kh' and Kc' are the transformed secrets ({@link DhchapSecret#transform}), Ks the DH session key, H and HMAC the
 * hash of the Challenge message. The byte after T_ID of R1 is the SC_C of the Negotiate (the Linux host since 6.18,
 * "nvme-auth: update sc_c in host response", and nvmet with it; before, both put 0 there, which is the same for
 * every transaction without concatenation). R2 keeps 0 there, as both Linux sides do.
 */
public final class Dhchap {
    private Dhchap() {
    }

    /** SECP of AUTH_Send / AUTH_Receive for DH-HMAC-CHAP. */
    public static final int SECP_DHCHAP = 0xE9;
    /** SPSP0 and SPSP1 the Linux host sends and nvmet requires. */
    public static final int SPSP = 0x01;
    /** AUTH-ID of the DH-HMAC-CHAP protocol descriptor. */
    public static final int AUTH_ID_DHCHAP = 0x01;
    /** The largest digest (SHA-512). */
    public static final int MAX_HASH_LENGTH = 64;
    /** SC_C of the Negotiate: no secure channel concatenation. */
    public static final int SC_C_NOSC = 0;
    /** SC_C: generate a new TLS PSK (on the admin queue of a connection without TLS). */
    public static final int SC_C_NEWTLSPSK = 1;
    /** SC_C: replace the generated TLS PSK the admin queue's TLS connection runs under. */
    public static final int SC_C_REPLACETLSPSK = 2;

    private static final java.util.concurrent.atomic.AtomicInteger SEQNUM =
        new java.util.concurrent.atomic.AtomicInteger(new java.security.SecureRandom().nextInt());

    private static final byte[] HOST = "HostHost".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] CONTROLLER = "Controller".getBytes(StandardCharsets.US_ASCII);

    /** R1; {@code secureChannel} is the SC_C of the transaction's Negotiate. */
    public static byte[] hostResponse(DhchapHash hash, byte[] key, byte[] challenge, int seqnum, int transactionId,
                                      int secureChannel, String hostNqn, String subsystemNqn) {
        return response(hash, key, challenge, seqnum, transactionId, secureChannel, HOST, hostNqn, subsystemNqn);
    }

    public static byte[] controllerResponse(DhchapHash hash, byte[] key, byte[] challenge, int seqnum,
                                            int transactionId, String subsystemNqn, String hostNqn) {
        return response(hash, key, challenge, seqnum, transactionId, SC_C_NOSC, CONTROLLER, subsystemNqn, hostNqn);
    }

    /**
     * The generated PSK of secure channel concatenation: HMAC(Ks, C1 || C2) with the transaction's hash, as long as
     * its digest (nvme_auth_generate_psk). The caller zeroes it when done.
     */
    public static byte[] generatedPsk(DhchapHash hash, byte[] sessionKey, byte[] c1, byte[] c2) {
        try {
            Mac mac = Mac.getInstance(hash.macAlgorithm());
            mac.init(new SecretKeySpec(sessionKey, hash.macAlgorithm()));
            mac.update(c1);
            mac.update(c2);
            return mac.doFinal();
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException(hash.macAlgorithm() + " unavailable in this JDK", e);
        }
    }

    /**
     * The next sequence number (S1 of a Challenge, S2 of a Reply): one process-wide counter starting at a random
     * value and skipping 0, which means "no bidirectional authentication" in a Reply (as nvme_auth_get_seqnum).
     */
    public static int nextSeqnum() {
        int s;
        do {
            s = SEQNUM.incrementAndGet();
        } while (s == 0);
        return s;
    }

    /** HMAC(H(sessionKey), challenge) with the Challenge's hash. */
    public static byte[] augmentedChallenge(DhchapHash hash, byte[] sessionKey, byte[] challenge) {
        try {
            byte[] hashed = MessageDigest.getInstance(hash.digestAlgorithm()).digest(sessionKey);
            Mac mac = Mac.getInstance(hash.macAlgorithm());
            mac.init(new SecretKeySpec(hashed, hash.macAlgorithm()));
            java.util.Arrays.fill(hashed, (byte) 0);
            return mac.doFinal(challenge);
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException(hash.macAlgorithm() + " unavailable in this JDK", e);
        }
    }

    /** Constant-time comparison of two responses ({@link MessageDigest#isEqual} does not return early). */
    public static boolean sameResponse(byte[] a, byte[] b) {
        return MessageDigest.isEqual(a, b);
    }

    private static byte[] response(DhchapHash hash, byte[] key, byte[] challenge, int seqnum, int transactionId,
                                   int secureChannel, byte[] role, String first, String second) {
        try {
            Mac mac = Mac.getInstance(hash.macAlgorithm());
            mac.init(new SecretKeySpec(key, hash.macAlgorithm()));
            mac.update(challenge);
            mac.update(new byte[] {(byte) seqnum, (byte) (seqnum >>> 8), (byte) (seqnum >>> 16), (byte) (seqnum >>> 24),
                (byte) transactionId, (byte) (transactionId >>> 8), (byte) secureChannel});
            mac.update(role);
            mac.update(first.getBytes(StandardCharsets.UTF_8));
            mac.update((byte) 0);
            mac.update(second.getBytes(StandardCharsets.UTF_8));
            return mac.doFinal();
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException(hash.macAlgorithm() + " unavailable in this JDK", e);
        }
    }
}
