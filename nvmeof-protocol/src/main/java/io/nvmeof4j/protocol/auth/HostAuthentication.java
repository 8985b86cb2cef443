package io.nvmeof4j.protocol.auth;

import java.io.IOException;
import java.math.BigInteger;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.security.SecureRandom;
import java.util.Arrays;

/**
 * The host side of DH-HMAC-CHAP on one queue (NVMe Base 2.0, 8.13.5), as the Linux host runs it
 * (drivers/nvme/host/auth.c): Negotiate offering SHA-256/384/512 and the null and ffdhe groups, Challenge, Reply
 * (with C2 and S2 when a controller key makes it bidirectional), Success1 (checking R2), Success2. A fault the host
 * finds in the controller's messages is sent back as Failure2; a Failure1 from the controller ends it.
 * Transport-independent: the caller supplies {@link Exchange}, which issues AUTH_Send and AUTH_Receive.
 *
 * <p>With secure channel concatenation (SC_C NEWTLSPSK or REPLACETLSPSK, admin queue only) it does what the Linux
 * host does for {@code nvme connect --concat} (nvme_auth_secure_concat): it offers no null DH group, sends C2 with
 * CVALID 1 and, without a controller key, S2 0, puts SC_C into R1, and returns the generated PSK HMAC(Ks, C1 || C2)
 * in {@link Result#generatedPsk()}. It offers SHA-256 and SHA-384 only: no TLS 1.3 suite exists for a PSK of
 * SHA-512 (the kernel's nvme_auth_derive_tls_psk refuses one).
 */
public final class HostAuthentication {
    /** AL of every AUTH_Receive (the Linux host's CHAP_BUF_SIZE): room for an ffdhe8192 Challenge. */
    public static final int RECEIVE_LENGTH = 4096;

    private static final DhchapHash[] OFFERED_HASHES = {DhchapHash.SHA256, DhchapHash.SHA384, DhchapHash.SHA512};
    private static final DhchapGroup[] OFFERED_GROUPS = DhchapGroup.values();
    private static final DhchapHash[] CONCAT_HASHES = {DhchapHash.SHA256, DhchapHash.SHA384};
    private static final DhchapGroup[] CONCAT_GROUPS = {DhchapGroup.FFDHE2048, DhchapGroup.FFDHE3072,
        DhchapGroup.FFDHE4096, DhchapGroup.FFDHE6144, DhchapGroup.FFDHE8192};

    /** Issues the two fabrics commands on the queue being authenticated. */
    public interface Exchange {
        /** AUTH_Send of the first {@code length} bytes of {@code message}; returns the NVMe status (0 = success). */
        int send(ByteBuffer message, int length) throws IOException;

        /** AUTH_Receive into {@code buffer} with AL = {@code allocationLength}; returns the NVMe status. */
        int receive(ByteBuffer buffer, int allocationLength) throws IOException;
    }

    /**
     * What was agreed.
     *
     * @param generatedPsk with secure channel concatenation the PSK the transaction generated (the caller clears
     *                     it), otherwise null
     */
    public record Result(DhchapHash hash, DhchapGroup group, boolean bidirectional, GeneratedPsk generatedPsk) {
    }

    private final DhchapSecret hostKey;
    private final DhchapSecret controllerKey;
    private final String hostNqn;
    private final String subsystemNqn;
    private final SecureRandom random;
    private final int secureChannel;
    private final ByteBuffer buffer = ByteBuffer.allocateDirect(RECEIVE_LENGTH).order(ByteOrder.LITTLE_ENDIAN);
    private final DhchapMessage message = new DhchapMessage();

    /**
     * @param controllerKey null for unidirectional authentication (the host does not check the controller)
     */
    public HostAuthentication(DhchapSecret hostKey, DhchapSecret controllerKey, String hostNqn, String subsystemNqn,
                              SecureRandom random) {
        this(hostKey, controllerKey, hostNqn, subsystemNqn, random, Dhchap.SC_C_NOSC);
    }

    /**
     * @param secureChannel SC_C of the Negotiate: {@link Dhchap#SC_C_NOSC}, or on an admin queue
     *                      {@link Dhchap#SC_C_NEWTLSPSK} / {@link Dhchap#SC_C_REPLACETLSPSK} to generate a TLS PSK
     */
    public HostAuthentication(DhchapSecret hostKey, DhchapSecret controllerKey, String hostNqn, String subsystemNqn,
                              SecureRandom random, int secureChannel) {
        if (secureChannel < Dhchap.SC_C_NOSC || secureChannel > Dhchap.SC_C_REPLACETLSPSK) {
            throw new IllegalArgumentException("SC_C " + secureChannel + " is not 0, 1 or 2");
        }
        this.secureChannel = secureChannel;
        this.hostKey = hostKey;
        this.controllerKey = controllerKey;
        this.hostNqn = hostNqn;
        this.subsystemNqn = subsystemNqn;
        this.random = random;
    }

    /**
     * Runs one transaction.
     *
     * @throws DhchapException when either side refused (the message names the step and the reason)
     * @throws IOException     when the exchange itself failed (timeout, closed queue)
     */
    public Result authenticate(Exchange exchange, int transactionId) throws DhchapException, IOException {
        int tid = transactionId & 0xFFFF;
        boolean concat = secureChannel != Dhchap.SC_C_NOSC;
        DhchapMessage m = message.wrap(reset(), 0);
        m.init(DhchapMessage.AUTH_TYPE_COMMON, DhchapMessage.NEGOTIATE, tid, DhchapMessage.NEGOTIATE_LENGTH)
            .negotiate(concat ? CONCAT_HASHES : OFFERED_HASHES, concat ? CONCAT_GROUPS : OFFERED_GROUPS)
            .secureChannel(secureChannel);
        status(exchange.send(buffer, DhchapMessage.NEGOTIATE_LENGTH), "AUTH_Send Negotiate");

        receive(exchange, "Challenge");
        expect(m, DhchapMessage.CHALLENGE, tid, exchange);
        DhchapHash hash = DhchapHash.fromId(m.hashId());
        if (hash == null) {
            throw failure2(exchange, tid, DhchapFailure.HASH_UNUSABLE, "Challenge names unknown hash " + m.hashId());
        }
        int hl = m.hashLength();
        if (hl != hash.length()) {
            throw failure2(exchange, tid, DhchapFailure.HASH_UNUSABLE, "Challenge HL " + hl + " for " + hash);
        }
        DhchapGroup group = DhchapGroup.fromId(m.dhGroupId());
        if (group == null) {
            throw failure2(exchange, tid, DhchapFailure.DHGROUP_UNUSABLE,
                "Challenge names unknown DH group " + m.dhGroupId());
        }
        if (concat && !hash.generatesTlsPsk()) {
            throw failure2(exchange, tid, DhchapFailure.HASH_UNUSABLE, "Challenge names " + hash
                + ", which cannot generate a TLS PSK (secure channel concatenation)");
        }
        if (concat && group.isNull()) {
            throw failure2(exchange, tid, DhchapFailure.CONCAT_MISMATCH,
                "Challenge names the null DH group, which cannot generate a TLS PSK (secure channel concatenation)");
        }
        int dhvlen = m.dhValueLength();
        if (DhchapMessage.HEADER_LENGTH + hl + dhvlen > RECEIVE_LENGTH) {
            throw failure2(exchange, tid, DhchapFailure.INCORRECT_PAYLOAD,
                "Challenge DH value of " + dhvlen + " bytes overflows the " + RECEIVE_LENGTH + "-byte message");
        }
        if (dhvlen != group.valueLength()) {
            throw failure2(exchange, tid, group.isNull() ? DhchapFailure.INCORRECT_PAYLOAD
                : DhchapFailure.DHGROUP_UNUSABLE, "Challenge DH value of " + dhvlen + " bytes; " + group.linuxName()
                + " takes " + group.valueLength());
        }
        int s1 = m.seqnum();
        byte[] c1 = m.bytes(DhchapMessage.VALUES_OFFSET, hl);
        byte[] sessionKey = null;
        byte[] publicValue = new byte[0];
        if (!group.isNull()) {
            BigInteger x = group.newPrivateExponent(random);
            publicValue = group.publicValue(x);
            sessionKey = group.sessionKey(x, m.bytes(DhchapMessage.VALUES_OFFSET + hl, dhvlen));
            if (sessionKey == null) {
                throw failure2(exchange, tid, DhchapFailure.INCORRECT_PAYLOAD,
                    "the controller's DH value lies outside [2, p-2]");
            }
        }
        try {
            byte[] key = hostKey.transform(hostNqn);
            byte[] r1 = Dhchap.hostResponse(hash, key, augmented(hash, sessionKey, c1), s1, tid, secureChannel,
                hostNqn, subsystemNqn);
            Arrays.fill(key, (byte) 0);
            boolean bidirectional = controllerKey != null;
            byte[] c2 = new byte[hl];
            int s2 = 0;
            if (bidirectional || concat) {
                random.nextBytes(c2);
            }
            if (bidirectional) {
                s2 = Dhchap.nextSeqnum();
            }
            int size = DhchapMessage.HEADER_LENGTH + 2 * hl + publicValue.length;
            reset();
            m.init(DhchapMessage.AUTH_TYPE_DHCHAP, DhchapMessage.REPLY, tid, size).hashLength(hl)
                .valid(bidirectional || concat).dhValueLength(publicValue.length).seqnum(s2)
                .bytes(DhchapMessage.VALUES_OFFSET, r1).bytes(DhchapMessage.VALUES_OFFSET + hl, c2)
                .bytes(DhchapMessage.VALUES_OFFSET + 2 * hl, publicValue);
            status(exchange.send(buffer, size), "AUTH_Send Reply");

            receive(exchange, "Success1");
            expect(m, DhchapMessage.SUCCESS1, tid, exchange);
            if (m.hashLength() != hl) {
                throw failure2(exchange, tid, DhchapFailure.HASH_UNUSABLE, "Success1 HL " + m.hashLength());
            }
            if (bidirectional) {
                if (!m.valid()) {
                    throw failure2(exchange, tid, DhchapFailure.FAILED,
                        "the controller did not answer the host's challenge (RVALID 0)");
                }
                byte[] ckey = controllerKey.transform(subsystemNqn);
                byte[] expected = Dhchap.controllerResponse(hash, ckey, augmented(hash, sessionKey, c2), s2, tid,
                    subsystemNqn, hostNqn);
                Arrays.fill(ckey, (byte) 0);
                if (!Dhchap.sameResponse(expected, m.bytes(DhchapMessage.VALUES_OFFSET, hl))) {
                    throw failure2(exchange, tid, DhchapFailure.FAILED,
                        "the controller's response does not match the controller key");
                }
                reset();
                m.init(DhchapMessage.AUTH_TYPE_DHCHAP, DhchapMessage.SUCCESS2, tid, DhchapMessage.HEADER_LENGTH);
                status(exchange.send(buffer, DhchapMessage.HEADER_LENGTH), "AUTH_Send Success2");
            }
            GeneratedPsk generated = concat
                ? new GeneratedPsk(secureChannel, hash, Dhchap.generatedPsk(hash, sessionKey, c1, c2)) : null;
            return new Result(hash, group, bidirectional, generated);
        } finally {
            if (sessionKey != null) {
                Arrays.fill(sessionKey, (byte) 0);
            }
        }
    }

    private static byte[] augmented(DhchapHash hash, byte[] sessionKey, byte[] challenge) {
        return sessionKey == null ? challenge : Dhchap.augmentedChallenge(hash, sessionKey, challenge);
    }

    /** The exchange may leave position and limit anywhere (a transport uses them while a command runs). */
    private ByteBuffer reset() {
        return buffer.clear();
    }

    private void receive(Exchange exchange, String what) throws IOException, DhchapException {
        reset();
        for (int i = 0; i < RECEIVE_LENGTH; i += 8) {
            buffer.putLong(i, 0L);
        }
        status(exchange.receive(buffer, RECEIVE_LENGTH), "AUTH_Receive " + what);
    }

    private void expect(DhchapMessage m, int authId, int tid, Exchange exchange) throws DhchapException, IOException {
        if (m.is(DhchapMessage.AUTH_TYPE_COMMON, DhchapMessage.FAILURE1)) {
            int why = m.reasonExplanation();
            throw new DhchapException("the controller refused authentication: " + DhchapFailure.name(why), why, true, 0);
        }
        String wanted = DhchapMessage.name(DhchapMessage.AUTH_TYPE_DHCHAP, authId);
        if (!m.is(DhchapMessage.AUTH_TYPE_DHCHAP, authId)) {
            throw failure2(exchange, tid, DhchapFailure.INCORRECT_MESSAGE,
                DhchapMessage.name(m.authType(), m.authId()) + " where " + wanted + " was due");
        }
        if (m.transactionId() != tid) {
            throw failure2(exchange, tid, DhchapFailure.INCORRECT_MESSAGE,
                wanted + " with T_ID " + m.transactionId() + ", expected " + tid);
        }
    }

    private DhchapException failure2(Exchange exchange, int tid, int explanation, String why) {
        DhchapException e = new DhchapException(why + " (" + DhchapFailure.name(explanation) + ")", explanation,
            false, 0);
        message.wrap(reset(), 0).failure(DhchapMessage.FAILURE2, tid, explanation);
        try {
            exchange.send(buffer, DhchapMessage.FAILURE_LENGTH);
        } catch (IOException | RuntimeException sendFailed) {
            // The controller may already have dropped the queue; the refusal stands either way.
            e.addSuppressed(sendFailed);
        }
        return e;
    }

    private static void status(int status, String step) throws DhchapException {
        if (status != 0) {
            throw new DhchapException(step + " failed with NVMe status " + String.format("0x%03x", status & 0x7FF),
                0, true, status);
        }
    }
}
