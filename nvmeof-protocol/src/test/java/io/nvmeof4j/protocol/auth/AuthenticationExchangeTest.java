package io.nvmeof4j.protocol.auth;

import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BiFunction;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * {@link HostAuthentication} against {@link ControllerAuthentication} through an in-memory exchange that can tamper
 * with what the host sends: every hash and group, both directions, and each refusal with its reason code.
 */
class AuthenticationExchangeTest {
    static final String HOST_NQN = DhchapSecretTest.HOST_NQN;
    static final String SUB_NQN = DhchapTest.SUBSYSTEM_NQN;
    static final SecureRandom RANDOM = new SecureRandom();
    static final String HOST_KEY = DhchapSecret.generate(32, 1, RANDOM);
    static final String CTRL_KEY = DhchapSecret.generate(48, 2, RANDOM);
    static final long TIMEOUT = TimeUnit.SECONDS.toNanos(120);
    static final int INVALID_FIELD_DNR = 0x4002;

    /** Host to controller; {@code tamper} may rewrite a sent message and return its new length. */
    static final class Loop implements HostAuthentication.Exchange {
        final ControllerAuthentication controller;
        BiFunction<ByteBuffer, Integer, Integer> tamper = (b, n) -> n;
        final List<String> received = new ArrayList<>();
        long now = 0;

        Loop(ControllerAuthentication controller) {
            this.controller = controller;
        }

        @Override
        public int send(ByteBuffer message, int length) {
            ByteBuffer copy = ByteBuffer.allocate(Math.max(length, 4096)).order(ByteOrder.LITTLE_ENDIAN);
            for (int i = 0; i < length; i++) {
                copy.put(i, message.get(i));
            }
            int n = tamper.apply(copy, length);
            controller.onSend(copy, 0, n, now);
            return 0;
        }

        @Override
        public int receive(ByteBuffer buffer, int allocationLength) {
            int n = controller.onReceive(buffer, 0, allocationLength, now);
            if (n < 0) {
                return INVALID_FIELD_DNR;
            }
            received.add(DhchapMessage.name(buffer.get(0) & 0xFF, buffer.get(1) & 0xFF));
            return 0;
        }
    }

    static ControllerAuthentication controller(DhchapCredentials c) {
        return new ControllerAuthentication(() -> c, HOST_NQN, SUB_NQN, RANDOM, TIMEOUT, 0);
    }

    static DhchapCredentials creds(DhchapHash h, DhchapGroup g, boolean ctrlKey) {
        return new DhchapCredentials(DhchapSecret.parse(HOST_KEY), ctrlKey ? DhchapSecret.parse(CTRL_KEY) : null, h, g);
    }

    static HostAuthentication host(String hostKey, String ctrlKey) {
        return new HostAuthentication(DhchapSecret.parse(hostKey), ctrlKey == null ? null : DhchapSecret.parse(ctrlKey),
            HOST_NQN, SUB_NQN, RANDOM);
    }

    @Test
    void shouldAuthenticateWithEveryHashAndGroupBothWays() throws Exception {
        for (DhchapHash h : DhchapHash.values()) {
            for (DhchapGroup g : new DhchapGroup[] {DhchapGroup.NULL, DhchapGroup.FFDHE2048, DhchapGroup.FFDHE8192}) {
                for (boolean bidirectional : new boolean[] {false, true}) {
                    ControllerAuthentication c = controller(creds(h, g, true));
                    Loop loop = new Loop(c);
                    HostAuthentication.Result r = host(HOST_KEY, bidirectional ? CTRL_KEY : null)
                        .authenticate(loop, 7);
                    assertThat(r.hash()).isEqualTo(h);
                    assertThat(r.group()).isEqualTo(g);
                    assertThat(r.bidirectional()).isEqualTo(bidirectional);
                    assertThat(c.isAuthenticated()).as(h + " " + g + " " + bidirectional).isTrue();
                    assertThat(c.mustDisconnect()).isFalse();
                    assertThat(c.isExpired(Long.MAX_VALUE / 2)).isFalse();
                    assertThat(loop.received).containsExactly("Challenge", "Success1");
                }
            }
        }
    }

    @Test
    void shouldReauthenticateWhenTheHostNegotiatesAgainAndApplyARotatedKey() throws Exception {
        AtomicReference<DhchapCredentials> current = new AtomicReference<>(creds(DhchapHash.SHA256,
            DhchapGroup.FFDHE2048, false));
        ControllerAuthentication c = new ControllerAuthentication(current::get, HOST_NQN, SUB_NQN, RANDOM, TIMEOUT, 0);
        host(HOST_KEY, null).authenticate(new Loop(c), 1);
        assertThat(c.isAuthenticated()).isTrue();
        host(HOST_KEY, null).authenticate(new Loop(c), 2);
        assertThat(c.isAuthenticated()).isTrue();

        String rotated = DhchapSecret.generate(32, 0, RANDOM);
        current.set(new DhchapCredentials(DhchapSecret.parse(rotated), null, DhchapHash.SHA256, DhchapGroup.NULL));
        host(rotated, null).authenticate(new Loop(c), 3);
        assertThat(c.isAuthenticated()).isTrue();
        assertThatThrownBy(() -> host(HOST_KEY, null).authenticate(new Loop(c), 4))
            .isInstanceOfSatisfying(DhchapException.class, e -> assertThat(e.explanation()).isEqualTo(DhchapFailure.FAILED));
        assertThat(c.isAuthenticated()).isFalse();
        assertThat(c.mustDisconnect()).isTrue();
    }

    @Test
    void shouldRefuseAWrongHostKeyWithFailure1AndDisconnect() {
        ControllerAuthentication c = controller(creds(DhchapHash.SHA256, DhchapGroup.FFDHE2048, false));
        Loop loop = new Loop(c);
        assertThatThrownBy(() -> host(DhchapSecret.generate(32, 1, RANDOM), null).authenticate(loop, 1))
            .isInstanceOfSatisfying(DhchapException.class, e -> {
                assertThat(e.reportedByController()).isTrue();
                assertThat(e.explanation()).isEqualTo(DhchapFailure.FAILED);
            });
        assertThat(loop.received).containsExactly("Challenge", "Failure1");
        assertThat(c.isAuthenticated()).isFalse();
        assertThat(c.mustDisconnect()).isTrue();
        assertThat(c.lastFailure()).contains("response does not match").doesNotContain(HOST_KEY.substring(10, 20));
    }

    @Test
    void shouldLetTheHostRefuseAControllerWithTheWrongControllerKey() {
        ControllerAuthentication c = controller(new DhchapCredentials(DhchapSecret.parse(HOST_KEY),
            DhchapSecret.parse(DhchapSecret.generate(48, 2, RANDOM)), DhchapHash.SHA384, DhchapGroup.FFDHE2048));
        assertThatThrownBy(() -> host(HOST_KEY, CTRL_KEY).authenticate(new Loop(c), 1))
            .isInstanceOfSatisfying(DhchapException.class, e -> {
                assertThat(e.reportedByController()).isFalse();
                assertThat(e.explanation()).isEqualTo(DhchapFailure.FAILED);
            });
        // The host's Failure2 reached the controller.
        assertThat(c.mustDisconnect()).isTrue();
        assertThat(c.isAuthenticated()).isFalse();
        assertThat(c.lastFailure()).contains("Failure2");
    }

    @Test
    void shouldRefuseBidirectionalWhenNoControllerKeyIsConfigured() {
        ControllerAuthentication c = controller(creds(DhchapHash.SHA256, DhchapGroup.NULL, false));
        assertThatThrownBy(() -> host(HOST_KEY, CTRL_KEY).authenticate(new Loop(c), 1))
            .isInstanceOfSatisfying(DhchapException.class, e -> assertThat(e.explanation()).isEqualTo(DhchapFailure.FAILED));
        assertThat(c.mustDisconnect()).isTrue();
    }

    private static void refused(DhchapCredentials creds, BiFunction<ByteBuffer, Integer, Integer> tamper,
                                int explanation) {
        ControllerAuthentication c = controller(creds);
        Loop loop = new Loop(c);
        loop.tamper = tamper;
        assertThatThrownBy(() -> host(HOST_KEY, null).authenticate(loop, 9))
            .isInstanceOfSatisfying(DhchapException.class, e -> {
                assertThat(e.reportedByController()).isTrue();
                assertThat(e.explanation()).as(e.getMessage()).isEqualTo(explanation);
            });
        assertThat(c.isAuthenticated()).isFalse();
        assertThat(c.mustDisconnect()).isTrue();
        assertThat(loop.received).last().isEqualTo("Failure1");
    }

    private static BiFunction<ByteBuffer, Integer, Integer> onMessage(int authId,
                                                                      BiFunction<ByteBuffer, Integer, Integer> f) {
        return (b, n) -> (b.get(1) & 0xFF) == authId ? f.apply(b, n) : n;
    }

    private static final DhchapCredentials SHA256_2048 = creds(DhchapHash.SHA256, DhchapGroup.FFDHE2048, false);

    @Test
    void shouldRefuseATruncatedNegotiate() {
        refused(SHA256_2048, onMessage(DhchapMessage.NEGOTIATE, (b, n) -> 20), DhchapFailure.INCORRECT_PAYLOAD);
    }

    @Test
    void shouldRefuseUnknownHashIds() {
        refused(SHA256_2048, onMessage(DhchapMessage.NEGOTIATE, (b, n) -> {
            b.put(12, (byte) 0x09).put(13, (byte) 0x0A).put(14, (byte) 0xFF);
            return n;
        }), DhchapFailure.HASH_UNUSABLE);
    }

    @Test
    void shouldRefuseWhenTheHostDoesNotOfferTheConfiguredGroup() {
        refused(SHA256_2048, onMessage(DhchapMessage.NEGOTIATE, (b, n) -> {
            b.put(11, (byte) 1); // DHLEN 1: only the first id (null) is offered
            return n;
        }), DhchapFailure.DHGROUP_UNUSABLE);
    }

    @Test
    void shouldRefuseOverlongIdLists() {
        refused(SHA256_2048, onMessage(DhchapMessage.NEGOTIATE, (b, n) -> {
            b.put(10, (byte) 31);
            return n;
        }), DhchapFailure.INCORRECT_PAYLOAD);
    }

    @Test
    void shouldRefuseSecureChannelConcatenation() {
        refused(SHA256_2048, onMessage(DhchapMessage.NEGOTIATE, (b, n) -> {
            b.put(6, (byte) 1);
            return n;
        }), DhchapFailure.CONCAT_MISMATCH);
    }

    @Test
    void shouldRefuseAMismatchedTransactionId() {
        refused(SHA256_2048, onMessage(DhchapMessage.REPLY, (b, n) -> {
            b.putShort(4, (short) 1234);
            return n;
        }), DhchapFailure.INCORRECT_PAYLOAD);
    }

    @Test
    void shouldRefuseReplyLengthsThatOverflowTheTransfer() {
        refused(SHA256_2048, onMessage(DhchapMessage.REPLY, (b, n) -> {
            b.putShort(10, (short) 0xFFFF);
            return n;
        }), DhchapFailure.INCORRECT_PAYLOAD);
        refused(SHA256_2048, onMessage(DhchapMessage.REPLY, (b, n) -> n - 1), DhchapFailure.INCORRECT_PAYLOAD);
        refused(SHA256_2048, onMessage(DhchapMessage.REPLY, (b, n) -> {
            b.put(6, (byte) 0xFF);
            return n;
        }), DhchapFailure.INCORRECT_PAYLOAD);
    }

    @Test
    void shouldRefuseAnOversizedDhValue() {
        refused(SHA256_2048, onMessage(DhchapMessage.REPLY, (b, n) -> {
            b.putShort(10, (short) 257);
            return n + 1;
        }), DhchapFailure.INCORRECT_PAYLOAD);
    }

    @Test
    void shouldRefuseADhValueOutsideTheGroup() {
        refused(SHA256_2048, onMessage(DhchapMessage.REPLY, (b, n) -> {
            for (int i = n - 256; i < n; i++) {
                b.put(i, (byte) 0);
            }
            b.put(n - 1, (byte) 1);
            return n;
        }), DhchapFailure.DHGROUP_UNUSABLE);
    }

    @Test
    void shouldRefuseAResponseComputedForAnotherSequenceNumber() {
        // Flipping one response bit is what a host that used the wrong S1 (or C1) produces: a different HMAC.
        refused(SHA256_2048, onMessage(DhchapMessage.REPLY, (b, n) -> {
            b.put(16, (byte) (b.get(16) ^ 1));
            return n;
        }), DhchapFailure.FAILED);
    }

    @Test
    void shouldRefuseAReplayedReplyFromAnEarlierTransaction() throws Exception {
        ControllerAuthentication first = controller(SHA256_2048);
        Loop recorder = new Loop(first);
        ByteBuffer[] recorded = new ByteBuffer[1];
        int[] recordedLength = new int[1];
        recorder.tamper = onMessage(DhchapMessage.REPLY, (b, n) -> {
            recorded[0] = ByteBuffer.allocate(n).order(ByteOrder.LITTLE_ENDIAN).put(b.duplicate().limit(n)).flip();
            recordedLength[0] = n;
            return n;
        });
        host(HOST_KEY, null).authenticate(recorder, 5);
        assertThat(first.isAuthenticated()).isTrue();

        refused(SHA256_2048, onMessage(DhchapMessage.REPLY, (b, n) -> {
            short tid = b.getShort(4);
            b.clear();
            b.put(recorded[0].duplicate());
            b.putShort(4, tid); // a replaying host can match the transaction id, not the fresh challenge
            return recordedLength[0];
        }), DhchapFailure.FAILED);
    }

    @Test
    void shouldRefuseMessagesOutOfOrder() {
        ControllerAuthentication c = controller(SHA256_2048);
        ByteBuffer b = ByteBuffer.allocate(4096).order(ByteOrder.LITTLE_ENDIAN);
        new DhchapMessage().wrap(b, 0).init(DhchapMessage.AUTH_TYPE_DHCHAP, DhchapMessage.REPLY, 0, 16);
        c.onSend(b, 0, 16, 0);
        assertThat(c.isAuthenticated()).isFalse();
        int n = c.onReceive(b, 0, 4096, 0);
        assertThat(n).isEqualTo(DhchapMessage.FAILURE_LENGTH);
        DhchapMessage m = new DhchapMessage().wrap(b, 0);
        assertThat(m.is(DhchapMessage.AUTH_TYPE_COMMON, DhchapMessage.FAILURE1)).isTrue();
        assertThat(m.reasonExplanation()).isEqualTo(DhchapFailure.INCORRECT_MESSAGE);
        assertThat(c.mustDisconnect()).isTrue();
    }

    @Test
    void shouldRefuseAReceiveBeforeAnyNegotiate() {
        ControllerAuthentication c = controller(SHA256_2048);
        ByteBuffer b = ByteBuffer.allocate(64).order(ByteOrder.LITTLE_ENDIAN);
        assertThat(c.onReceive(b, 0, 64, 0)).isEqualTo(DhchapMessage.FAILURE_LENGTH);
        assertThat(new DhchapMessage().wrap(b, 0).reasonExplanation()).isEqualTo(DhchapFailure.INCORRECT_MESSAGE);
        assertThat(c.mustDisconnect()).isTrue();
    }

    @Test
    void shouldAnswerInvalidFieldWhenTheReceiveBufferIsTooSmallForTheChallenge() throws Exception {
        ControllerAuthentication c = controller(creds(DhchapHash.SHA512, DhchapGroup.FFDHE8192, false));
        ByteBuffer b = ByteBuffer.allocate(4096).order(ByteOrder.LITTLE_ENDIAN);
        new DhchapMessage().wrap(b, 0).init(DhchapMessage.AUTH_TYPE_COMMON, DhchapMessage.NEGOTIATE, 3,
            DhchapMessage.NEGOTIATE_LENGTH).negotiate(DhchapHash.values(), DhchapGroup.values());
        c.onSend(b, 0, DhchapMessage.NEGOTIATE_LENGTH, 0);
        assertThat(c.onReceive(b, 0, 100, 0)).isEqualTo(-1);
        assertThat(c.mustDisconnect()).isFalse();
        assertThat(c.onReceive(b, 0, 4096, 0)).isEqualTo(16 + 64 + 1024);
    }

    @Test
    void shouldExpireAStalledTransactionAndAnUnauthenticatedQueue() {
        ControllerAuthentication c = controller(SHA256_2048);
        assertThat(c.isExpired(TIMEOUT - 1)).isFalse();
        assertThat(c.isExpired(TIMEOUT + 1)).isTrue();
    }

    @Test
    void shouldLetTheHostRefuseAChallengeWithAnOversizedOrForeignValue() {
        HostAuthentication.Exchange evil = new HostAuthentication.Exchange() {
            int step;
            ByteBuffer lastSent;

            @Override
            public int send(ByteBuffer message, int length) {
                lastSent = message;
                return 0;
            }

            @Override
            public int receive(ByteBuffer buffer, int allocationLength) {
                new DhchapMessage().wrap(buffer, 0).init(DhchapMessage.AUTH_TYPE_DHCHAP, DhchapMessage.CHALLENGE, 1, 16)
                    .hashLength(32).hashId(1).dhGroupId(1).dhValueLength(step++ == 0 ? 0xFFFF : 256);
                return 0;
            }
        };
        assertThatThrownBy(() -> host(HOST_KEY, null).authenticate(evil, 1))
            .isInstanceOfSatisfying(DhchapException.class, e -> {
                assertThat(e.reportedByController()).isFalse();
                assertThat(e.explanation()).isEqualTo(DhchapFailure.INCORRECT_PAYLOAD);
            });
        // A challenge whose T_ID is not the host's.
        assertThatThrownBy(() -> host(HOST_KEY, null).authenticate(evil, 2))
            .isInstanceOfSatisfying(DhchapException.class, e ->
                assertThat(e.explanation()).isEqualTo(DhchapFailure.INCORRECT_MESSAGE));
    }
}
