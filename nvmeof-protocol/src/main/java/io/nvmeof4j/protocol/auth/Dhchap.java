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
 * </pre>
 * Kh' and Kc' are the transformed secrets ({@link DhchapSecret#transform}), Ks the DH session key, H and HMAC the
 * hash of the Challenge message. The zero byte after T_ID is the SC_C field (always 0 here: no secure channel
 * concatenation).
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

    private static final java.util.concurrent.atomic.AtomicInteger SEQNUM =
        new java.util.concurrent.atomic.AtomicInteger(new java.security.SecureRandom().nextInt());

    private static final byte[] HOST = "HostHost".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] CONTROLLER = "Controller".getBytes(StandardCharsets.US_ASCII);

    public static byte[] hostResponse(DhchapHash hash, byte[] key, byte[] challenge, int seqnum, int transactionId,
                                      String hostNqn, String subsystemNqn) {
        return response(hash, key, challenge, seqnum, transactionId, HOST, hostNqn, subsystemNqn);
    }

    public static byte[] controllerResponse(DhchapHash hash, byte[] key, byte[] challenge, int seqnum,
                                            int transactionId, String subsystemNqn, String hostNqn) {
        return response(hash, key, challenge, seqnum, transactionId, CONTROLLER, subsystemNqn, hostNqn);
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
                                   byte[] role, String first, String second) {
        try {
            Mac mac = Mac.getInstance(hash.macAlgorithm());
            mac.init(new SecretKeySpec(key, hash.macAlgorithm()));
            mac.update(challenge);
            mac.update(new byte[] {(byte) seqnum, (byte) (seqnum >>> 8), (byte) (seqnum >>> 16), (byte) (seqnum >>> 24),
                (byte) transactionId, (byte) (transactionId >>> 8), 0});
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
