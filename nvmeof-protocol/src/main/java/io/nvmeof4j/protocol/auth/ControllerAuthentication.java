package io.nvmeof4j.protocol.auth;

import java.math.BigInteger;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.security.SecureRandom;
import java.util.Arrays;
import java.util.function.Supplier;

/**
 * The controller side of DH-HMAC-CHAP on one queue (NVMe Base 2.0, 8.13.5), independent of any transport: the
 * target hands it the data of each AUTH_Send and asks it for the data of each AUTH_Receive.
 *
 * <pre>
 *   host                          controller (this)
 *   AUTH_Send    Negotiate   -->  choose hash and DH group            (errors: Failure1 pending)
 *   AUTH_Receive             <--  Challenge  (S1, C1, g^x)
 *   AUTH_Send    Reply       -->  check R1 (and take C2, S2, g^y)    (errors: Failure1 pending)
 *   AUTH_Receive             <--  Success1   (R2 when asked)  or Failure1 and disconnect
 *   AUTH_Send    Success2    -->  (bidirectional only) authenticated
 *   AUTH_Send    Failure2    -->  the host refused us: disconnect
 * </pre>
 * As in nvmet, a fault found in a Send is reported by the Failure1 of the next Receive, after which
 * {@link #mustDisconnect()} is true; so is it after a Failure2, and {@link #isExpired} when a transaction stalls
 * longer than the timeout the caller gives (the target: 120 s, or KATO when longer). A Negotiate on an
 * authenticated queue starts re-authentication; the queue stays usable until that fails. Credentials are read from
 * the supplier at each Negotiate, so a rotated key applies to the next (re-)authentication.
 *
 * <p><b>Secure channel concatenation</b> (NVMe Base 2.1 8.3.5.5; TP 8011), as nvmet does it: a Negotiate's SC_C
 * other than NOSC must be the one {@link SecureChannel} allows on this queue (otherwise Failure1 03h). The
 * transaction then needs a DH group (a configured null group, nvmet's default, takes the host's first ffdhe offer;
 * a host offering none gets Failure1 03h, as nvmet's "NULL DH group invalid for secure channel concatenation") and a
 * hash with a TLS suite (SHA-256 or SHA-384, else Failure1 04h); the host must send C2 (CVALID 1, else Failure1
 * 01h), with S2 0 unless it also wants the controller authenticated. R1 covers the SC_C byte. After Success1
 * (S2 = 0) or Success2, {@link #takeGeneratedPsk()} hands out HMAC(Ks, C1 || C2).
 *
 * <p>Not thread-safe: one queue's commands run on one thread. Nothing here logs; {@link #lastFailure()} explains the
 * last refusal without any key material.
 */
public final class ControllerAuthentication {
    private enum State { EXPECT_NEGOTIATE, SEND_CHALLENGE, EXPECT_REPLY, SEND_SUCCESS1, EXPECT_SUCCESS2, SEND_FAILURE1,
        IDLE, CLOSED }

    /**
     * The SC_C a Negotiate on this queue may carry besides NOSC, and why any other is refused (Failure1 03h):
     * NEWTLSPSK on the admin queue of a connection without TLS to a port that speaks TLS, REPLACETLSPSK on an admin
     * queue whose TLS connection runs under a generated PSK, nothing else (I/O queues, ports without TLS, TLS with a
     * configured PSK).
     *
     * @param accepted {@link Dhchap#SC_C_NEWTLSPSK}, {@link Dhchap#SC_C_REPLACETLSPSK} or {@link Dhchap#SC_C_NOSC}
     * @param refusal  why a different SC_C is refused here ("I/O queue 3")
     */
    public record SecureChannel(int accepted, String refusal) {
        public static SecureChannel none(String why) {
            return new SecureChannel(Dhchap.SC_C_NOSC, why);
        }
    }

    private final Supplier<DhchapCredentials> credentials;
    private final SecureChannel secureChannelAllowed;
    private final String hostNqn;
    private final String subsystemNqn;
    private final SecureRandom random;
    private final long timeoutNanos;
    private final DhchapMessage message = new DhchapMessage();

    /** Written on the queue's thread; read by keep-alive timers ({@link #isTransactionInProgress}). */
    private volatile State state = State.EXPECT_NEGOTIATE;
    private boolean authenticated;
    private long deadlineNanos;
    private int transactionId;
    private int failure;
    private String lastFailure;
    private DhchapCredentials current;
    private DhchapHash hash;
    private DhchapGroup group;
    private BigInteger privateExponent;
    private byte[] sessionKey;
    private byte[] c1;
    private int s1;
    private byte[] c2;
    private int s2;
    private boolean bidirectional;
    /** SC_C of the running transaction. */
    private int secureChannel;
    /** Set by a finished concatenation transaction until {@link #takeGeneratedPsk()}. */
    private GeneratedPsk generatedPsk;

    /**
     * @param credentials  the host's credentials, read at each Negotiate (null from the supplier: the host has none
     *                     any more, so authentication fails)
     * @param timeoutNanos how long one transaction, and the first authentication after Connect, may take
     * @param nowNanos     {@link System#nanoTime()} at Connect
     */
    public ControllerAuthentication(Supplier<DhchapCredentials> credentials, String hostNqn, String subsystemNqn,
                                    SecureRandom random, long timeoutNanos, long nowNanos) {
        this(credentials, hostNqn, subsystemNqn, random, timeoutNanos, nowNanos,
            SecureChannel.none("this queue does not take secure channel concatenation"), false);
    }

    /**
     * @param secureChannel what SC_C a Negotiate here may carry
     * @param authenticated the queue starts authenticated (a TLS queue under a PSK that DH-HMAC-CHAP generated):
     *                      no deadline, and a host's Negotiate is a re-authentication (REPLACETLSPSK)
     */
    public ControllerAuthentication(Supplier<DhchapCredentials> credentials, String hostNqn, String subsystemNqn,
                                    SecureRandom random, long timeoutNanos, long nowNanos, SecureChannel secureChannel,
                                    boolean authenticated) {
        this.credentials = credentials;
        this.hostNqn = hostNqn;
        this.subsystemNqn = subsystemNqn;
        this.random = random;
        this.timeoutNanos = timeoutNanos;
        this.secureChannelAllowed = secureChannel;
        this.authenticated = authenticated;
        if (authenticated) {
            state = State.IDLE;
        } else {
            this.deadlineNanos = nowNanos + timeoutNanos;
        }
    }

    /** True once the host proved its key (and, bidirectionally, accepted ours); commands other than auth may run. */
    public boolean isAuthenticated() {
        return authenticated;
    }

    /** True after Failure1 went out, Failure2 came in, or a message the protocol cannot recover from. */
    public boolean mustDisconnect() {
        return state == State.CLOSED;
    }

    /** True when a transaction (or the first authentication) has not finished within the timeout. */
    public boolean isExpired(long nowNanos) {
        return deadlineNanos != 0 && nowNanos - deadlineNanos > 0;
    }

    /**
     * True between a Negotiate and its Success1/Success2 (or Failure): the host is mid-protocol and may be silent
     * while it computes. Any thread.
     */
    public boolean isTransactionInProgress() {
        State s = state;
        return s == State.SEND_CHALLENGE || s == State.EXPECT_REPLY || s == State.SEND_SUCCESS1
            || s == State.EXPECT_SUCCESS2 || s == State.SEND_FAILURE1;
    }

    /** True while a transaction (or the first authentication) runs: {@link #isExpired} can still become true. */
    public boolean isPending() {
        return deadlineNanos != 0;
    }

    /** Why the last refusal happened ("Reply: authentication failed"), or null. Never holds key material. */
    public String lastFailure() {
        return lastFailure;
    }

    /** The reason code explanation of the last refusal ({@link DhchapFailure}), 0 when none. */
    public int failureExplanation() {
        return failure;
    }

    public DhchapHash hash() {
        return hash;
    }

    public DhchapGroup group() {
        return group;
    }

    /**
     * The PSK the last transaction generated (secure channel concatenation), once: the caller owns it and clears
     * it. Null when there is none.
     */
    public GeneratedPsk takeGeneratedPsk() {
        GeneratedPsk p = generatedPsk;
        generatedPsk = null;
        return p;
    }

    /**
     * Takes the data of an AUTH_Send. Faults are not an NVMe status: they become the Failure1 of the next Receive (or
     * a disconnect), as the protocol says.
     *
     * @param data   {@code length} bytes from {@code data.position()}... relative to {@code offset}; little-endian
     * @param length TL
     */
    public void onSend(ByteBuffer data, int offset, int length, long nowNanos) {
        if (state == State.CLOSED) {
            return;
        }
        if (state == State.SEND_FAILURE1) {
            close(DhchapFailure.INCORRECT_MESSAGE, "a message while Failure1 was pending");
            return;
        }
        if (length < DhchapMessage.T_ID_OFFSET + 2) {
            fail(DhchapFailure.INCORRECT_PAYLOAD, "a " + length + "-byte message");
            return;
        }
        DhchapMessage m = message.wrap(data.order() == ByteOrder.LITTLE_ENDIAN ? data
            : data.duplicate().order(ByteOrder.LITTLE_ENDIAN), offset);
        int type = m.authType();
        int id = m.authId();
        if (m.is(DhchapMessage.AUTH_TYPE_COMMON, DhchapMessage.NEGOTIATE)) {
            negotiate(m, length, nowNanos);
        } else if (m.is(DhchapMessage.AUTH_TYPE_COMMON, DhchapMessage.FAILURE2)) {
            int why = length >= DhchapMessage.FAILURE_LENGTH ? m.reasonExplanation() : DhchapFailure.INCORRECT_PAYLOAD;
            close(why, "the host sent Failure2 (" + DhchapFailure.name(why) + ")");
        } else if (m.is(DhchapMessage.AUTH_TYPE_DHCHAP, DhchapMessage.REPLY) && state == State.EXPECT_REPLY) {
            if (m.transactionId() != transactionId) {
                fail(DhchapFailure.INCORRECT_PAYLOAD, "Reply with T_ID " + m.transactionId() + ", expected "
                    + transactionId);
            } else {
                reply(m, length, nowNanos);
            }
        } else if (m.is(DhchapMessage.AUTH_TYPE_DHCHAP, DhchapMessage.SUCCESS2) && state == State.EXPECT_SUCCESS2) {
            if (m.transactionId() != transactionId) {
                fail(DhchapFailure.INCORRECT_PAYLOAD, "Success2 with T_ID " + m.transactionId() + ", expected "
                    + transactionId);
            } else {
                authenticated = true;
                finish();
            }
        } else {
            fail(DhchapFailure.INCORRECT_MESSAGE, DhchapMessage.name(type, id) + " out of order");
        }
    }

    /**
     * Writes the data of an AUTH_Receive.
     *
     * @return bytes of message written (the rest of {@code allocationLength} is the caller's to zero), or -1 when
     *     {@code allocationLength} cannot hold the message (Invalid Field; nothing changes)
     */
    public int onReceive(ByteBuffer out, int offset, int allocationLength, long nowNanos) {
        DhchapMessage m = message.wrap(out, offset);
        switch (state) {
            case SEND_CHALLENGE: {
                int size = DhchapMessage.HEADER_LENGTH + hash.length() + group.valueLength();
                if (allocationLength < size) {
                    return -1;
                }
                m.init(DhchapMessage.AUTH_TYPE_DHCHAP, DhchapMessage.CHALLENGE, transactionId, size);
                s1 = Dhchap.nextSeqnum();
                c1 = new byte[hash.length()];
                random.nextBytes(c1);
                m.hashLength(hash.length()).hashId(hash.id()).dhGroupId(group.id()).seqnum(s1)
                    .bytes(DhchapMessage.VALUES_OFFSET, c1);
                if (!group.isNull()) {
                    privateExponent = group.newPrivateExponent(random);
                    m.dhValueLength(group.valueLength())
                        .bytes(DhchapMessage.VALUES_OFFSET + hash.length(), group.publicValue(privateExponent));
                }
                state = State.EXPECT_REPLY;
                deadlineNanos = nowNanos + timeoutNanos;
                return size;
            }
            case SEND_SUCCESS1: {
                int size = DhchapMessage.HEADER_LENGTH + (bidirectional ? hash.length() : 0);
                if (allocationLength < size) {
                    return -1;
                }
                if (bidirectional && current.controllerKey() == null) {
                    fail(DhchapFailure.FAILED, "the host asked the controller to authenticate, but no controller key"
                        + " (dhchap_ctrl_key) is configured for it");
                    return failure1(m, allocationLength);
                }
                m.init(DhchapMessage.AUTH_TYPE_DHCHAP, DhchapMessage.SUCCESS1, transactionId, size)
                    .hashLength(hash.length());
                if (bidirectional) {
                    byte[] key = current.controllerKey().transform(subsystemNqn);
                    byte[] r2 = Dhchap.controllerResponse(hash, key, augmented(c2), s2, transactionId, subsystemNqn,
                        hostNqn);
                    Arrays.fill(key, (byte) 0);
                    m.valid(true).bytes(DhchapMessage.VALUES_OFFSET, r2);
                    state = State.EXPECT_SUCCESS2;
                    deadlineNanos = nowNanos + timeoutNanos;
                } else {
                    finish();
                }
                return size;
            }
            case SEND_FAILURE1:
                return failure1(m, allocationLength);
            case CLOSED:
                return failure1(m, allocationLength);
            default:
                fail(DhchapFailure.INCORRECT_MESSAGE, "AUTH_Receive while the controller expects an AUTH_Send");
                return failure1(m, allocationLength);
        }
    }

    private void negotiate(DhchapMessage m, int length, long nowNanos) {
        clearTransaction();
        if (generatedPsk != null) {
            generatedPsk.clear();
            generatedPsk = null;
        }
        secureChannel = Dhchap.SC_C_NOSC;
        authenticatedBeforeNegotiate();
        transactionId = m.transactionId();
        deadlineNanos = nowNanos + timeoutNanos;
        current = credentials.get();
        if (current == null) {
            fail(DhchapFailure.FAILED, "no DH-HMAC-CHAP key is configured for the host any more");
            return;
        }
        if (length < DhchapMessage.NEGOTIATE_LENGTH) {
            fail(DhchapFailure.INCORRECT_PAYLOAD, "Negotiate of " + length + " bytes");
            return;
        }
        int scC = m.secureChannel();
        if (scC != Dhchap.SC_C_NOSC && scC != secureChannelAllowed.accepted()) {
            fail(DhchapFailure.CONCAT_MISMATCH, "Negotiate asks for secure channel concatenation "
                + secureChannelName(scC) + ", refused: " + secureChannelAllowed.refusal());
            return;
        }
        secureChannel = scC;
        boolean concat = scC != Dhchap.SC_C_NOSC;
        if (m.protocolCount() != 1 || m.descriptor(0, DhchapMessage.DESCRIPTOR_AUTHID) != Dhchap.AUTH_ID_DHCHAP) {
            fail(DhchapFailure.INCORRECT_PAYLOAD, "Negotiate with NAPD " + m.protocolCount()
                + " or a descriptor that is not DH-HMAC-CHAP");
            return;
        }
        int halen = m.descriptor(0, DhchapMessage.DESCRIPTOR_HALEN);
        int dhlen = m.descriptor(0, DhchapMessage.DESCRIPTOR_DHLEN);
        if (halen > DhchapMessage.MAX_IDS || dhlen > DhchapMessage.MAX_IDS) {
            fail(DhchapFailure.INCORRECT_PAYLOAD, "Negotiate lists " + halen + " hashes and " + dhlen + " DH groups (30 max)");
            return;
        }
        DhchapHash chosen = null;
        for (int i = 0; i < halen; i++) {
            DhchapHash h = DhchapHash.fromId(m.descriptor(0, DhchapMessage.DESCRIPTOR_HASH_IDS + i));
            if (h == null || concat && !h.generatesTlsPsk()) {
                continue;
            }
            if (h == current.hash()) {
                chosen = h;
                break;
            }
            if (chosen == null) {
                chosen = h;
            }
        }
        if (chosen == null) {
            fail(DhchapFailure.HASH_UNUSABLE, "the host offers no known hash function"
                + (concat ? " with a TLS suite (SHA-256, SHA-384), which secure channel concatenation needs" : ""));
            return;
        }
        // The null group, nvmet's default, cannot generate a PSK: any ffdhe group the host offers is stronger.
        boolean upgradeNull = concat && current.group().isNull();
        DhchapGroup chosenGroup = null;
        for (int i = 0; i < dhlen && chosenGroup == null; i++) {
            DhchapGroup g = DhchapGroup.fromId(m.descriptor(0, DhchapMessage.DESCRIPTOR_DH_IDS + i));
            if (upgradeNull ? g != null && !g.isNull() : g == current.group()) {
                chosenGroup = g;
            }
        }
        if (upgradeNull && chosenGroup == null) {
            fail(DhchapFailure.CONCAT_MISMATCH, "secure channel concatenation needs a DH group other than null, and "
                + "the host offers none");
            return;
        }
        // No fallback to a weaker group: the configured group is the minimum the operator asked for.
        if (chosenGroup == null) {
            fail(DhchapFailure.DHGROUP_UNUSABLE, "the host does not offer the configured DH group "
                + current.group().linuxName());
            return;
        }
        hash = chosen;
        group = chosenGroup;
        state = State.SEND_CHALLENGE;
    }

    private void reply(DhchapMessage m, int length, long nowNanos) {
        if (length < DhchapMessage.HEADER_LENGTH) {
            fail(DhchapFailure.INCORRECT_PAYLOAD, "Reply of " + length + " bytes");
            return;
        }
        int hl = m.hashLength();
        int dhvlen = m.dhValueLength();
        if (hl != hash.length()) {
            fail(DhchapFailure.INCORRECT_PAYLOAD, "Reply with HL " + hl + ", the hash gives " + hash.length());
            return;
        }
        if ((long) DhchapMessage.HEADER_LENGTH + 2L * hl + dhvlen > length) {
            fail(DhchapFailure.INCORRECT_PAYLOAD, "Reply claims " + (DhchapMessage.HEADER_LENGTH + 2 * hl + dhvlen)
                + " bytes but carries " + length);
            return;
        }
        if (dhvlen != group.valueLength()) {
            fail(DhchapFailure.INCORRECT_PAYLOAD, "Reply DH value of " + dhvlen + " bytes; " + group.linuxName()
                + " takes " + group.valueLength());
            return;
        }
        if (!group.isNull()) {
            byte[] peer = m.bytes(DhchapMessage.VALUES_OFFSET + 2 * hl, dhvlen);
            sessionKey = group.sessionKey(privateExponent, peer);
            if (sessionKey == null) {
                fail(DhchapFailure.DHGROUP_UNUSABLE, "the host's DH value lies outside [2, p-2]");
                return;
            }
        }
        byte[] key = current.hostKey().transform(hostNqn);
        byte[] expected = Dhchap.hostResponse(hash, key, augmented(c1), s1, transactionId, secureChannel, hostNqn,
            subsystemNqn);
        Arrays.fill(key, (byte) 0);
        if (!Dhchap.sameResponse(expected, m.bytes(DhchapMessage.VALUES_OFFSET, hl))) {
            fail(DhchapFailure.FAILED, "the host's response does not match its key");
            return;
        }
        int seq = m.seqnum();
        boolean concat = secureChannel != Dhchap.SC_C_NOSC;
        if (concat && !m.valid()) {
            // nvmet: the generated PSK is HMAC(Ks, C1 || C2), so there is none without C2.
            fail(DhchapFailure.FAILED, "secure channel concatenation without the host's challenge C2 (CVALID 0)");
            return;
        }
        if (m.valid() && (seq != 0 || concat)) {
            byte[] challenge = m.bytes(DhchapMessage.VALUES_OFFSET + hl, hl);
            if (Dhchap.sameResponse(challenge, c1)) {
                // A host echoing our own challenge could replay our response to it back at us (reflection).
                fail(DhchapFailure.FAILED, "the host's challenge C2 repeats the controller's C1");
                return;
            }
            c2 = challenge;
            s2 = seq;
        }
        // With concatenation a host sends C2 for the PSK; only S2 != 0 asks the controller to authenticate.
        bidirectional = m.valid() && seq != 0;
        if (!bidirectional) {
            authenticated = true;
        }
        state = State.SEND_SUCCESS1;
        deadlineNanos = nowNanos + timeoutNanos;
    }

    private byte[] augmented(byte[] challenge) {
        return group.isNull() ? challenge : Dhchap.augmentedChallenge(hash, sessionKey, challenge);
    }

    private int failure1(DhchapMessage m, int allocationLength) {
        if (allocationLength < DhchapMessage.FAILURE_LENGTH) {
            return -1;
        }
        m.failure(DhchapMessage.FAILURE1, transactionId, failure == 0 ? DhchapFailure.FAILED : failure);
        authenticated = false;
        state = State.CLOSED;
        clearTransaction();
        return DhchapMessage.FAILURE_LENGTH;
    }

    private void fail(int explanation, String why) {
        failure = explanation;
        lastFailure = why + " (" + DhchapFailure.name(explanation) + ")";
        authenticated = false;
        state = State.SEND_FAILURE1;
    }

    private void close(int explanation, String why) {
        fail(explanation, why);
        state = State.CLOSED;
        clearTransaction();
    }

    private void finish() {
        if (authenticated && secureChannel != Dhchap.SC_C_NOSC) {
            generatedPsk = new GeneratedPsk(secureChannel, hash, Dhchap.generatedPsk(hash, sessionKey, c1, c2));
        }
        state = State.IDLE;
        deadlineNanos = 0;
        clearTransaction();
    }

    private static String secureChannelName(int scC) {
        switch (scC) {
            case Dhchap.SC_C_NEWTLSPSK: return "NEWTLSPSK (SC_C 1)";
            case Dhchap.SC_C_REPLACETLSPSK: return "REPLACETLSPSK (SC_C 2)";
            default: return "SC_C " + scC + " (reserved)";
        }
    }

    private void authenticatedBeforeNegotiate() {
        // Re-authentication keeps the queue usable until it fails (nvmet keeps sq->authenticated).
        if (state != State.IDLE) {
            authenticated = false;
        }
    }

    private void clearTransaction() {
        if (sessionKey != null) {
            Arrays.fill(sessionKey, (byte) 0);
        }
        sessionKey = null;
        privateExponent = null;
        c1 = null;
        c2 = null;
        s1 = 0;
        s2 = 0;
        bidirectional = false;
    }
}
