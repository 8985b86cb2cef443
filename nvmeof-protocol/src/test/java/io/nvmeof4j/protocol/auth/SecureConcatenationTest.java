package io.nvmeof4j.protocol.auth;

import io.nvmeof4j.protocol.auth.AuthenticationExchangeTest.Loop;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.function.BiFunction;

import static io.nvmeof4j.protocol.auth.AuthenticationExchangeTest.CTRL_KEY;
import static io.nvmeof4j.protocol.auth.AuthenticationExchangeTest.HOST_KEY;
import static io.nvmeof4j.protocol.auth.AuthenticationExchangeTest.HOST_NQN;
import static io.nvmeof4j.protocol.auth.AuthenticationExchangeTest.RANDOM;
import static io.nvmeof4j.protocol.auth.AuthenticationExchangeTest.SUB_NQN;
import static io.nvmeof4j.protocol.auth.AuthenticationExchangeTest.TIMEOUT;
import static io.nvmeof4j.protocol.auth.AuthenticationExchangeTest.creds;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Secure channel concatenation in DH-HMAC-CHAP (NVMe Base 2.1 8.3.5.5; TP 8011): {@link HostAuthentication} with
 * SC_C against {@link ControllerAuthentication}, the generated PSK both derive, and each refusal with the reason
 * code nvmet sends.
 */
class SecureConcatenationTest {
    private static final ControllerAuthentication.SecureChannel NEW = new ControllerAuthentication.SecureChannel(
        Dhchap.SC_C_NEWTLSPSK, "only NEWTLSPSK here");
    private static final ControllerAuthentication.SecureChannel REPLACE = new ControllerAuthentication.SecureChannel(
        Dhchap.SC_C_REPLACETLSPSK, "only REPLACETLSPSK here");

    private static ControllerAuthentication controller(DhchapCredentials c, ControllerAuthentication.SecureChannel sc,
                                                       boolean authenticated) {
        return new ControllerAuthentication(() -> c, HOST_NQN, SUB_NQN, RANDOM, TIMEOUT, 0, sc, authenticated);
    }

    private static HostAuthentication host(String ctrlKey, int secureChannel) {
        return new HostAuthentication(DhchapSecret.parse(HOST_KEY), ctrlKey == null ? null
            : DhchapSecret.parse(ctrlKey), HOST_NQN, SUB_NQN, RANDOM, secureChannel);
    }

    /**
     * Known answer, computed outside Java (Python's hmac/hashlib, i.e. OpenSSL) from the spec's formula
     * PSK = HMAC-SHA-256(Ks, C1 || C2): Ks 256 bytes 0x00..0xFF, C1 32 bytes 0xC1, C2 32 bytes 0xC2.
     */
    @Test
    void shouldComputeTheGeneratedPskAsHmacOfTheSessionKeyOverBothChallenges() {
        byte[] ks = new byte[256];
        for (int i = 0; i < ks.length; i++) {
            ks[i] = (byte) i;
        }
        byte[] c1 = new byte[32];
        byte[] c2 = new byte[32];
        Arrays.fill(c1, (byte) 0xC1);
        Arrays.fill(c2, (byte) 0xC2);
        assertThat(HexFormat.of().formatHex(Dhchap.generatedPsk(DhchapHash.SHA256, ks, c1, c2)))
            .isEqualTo(KAT_PSK_SHA256);
        byte[] c1b = new byte[48];
        byte[] c2b = new byte[48];
        Arrays.fill(c1b, (byte) 0xC1);
        Arrays.fill(c2b, (byte) 0xC2);
        assertThat(HexFormat.of().formatHex(Dhchap.generatedPsk(DhchapHash.SHA384, ks, c1b, c2b)))
            .isEqualTo(KAT_PSK_SHA384);
    }

    static final String KAT_PSK_SHA256 = "afd181d77d19c3d703f85c25c827c9bd81568dd791193928efdc44494c0302fa";
    static final String KAT_PSK_SHA384 = "9d0da21a6315af83d5e8e44ef1069b0c7ebd501fc925b90f77ec5ef058261a83bc5e21b29f904a425c171ce2c4bd84aa";

    /** R1 covers SC_C: the byte after T_ID. Known answer as in DhchapTest, with SC_C 1 (Python's hmac). */
    @Test
    void shouldPutScCIntoTheHostResponse() {
        byte[] key = DhchapSecret.parse(DhchapSecretTest.KEY32_HH1).transform(DhchapSecretTest.HOST_NQN);
        byte[] challenge = new byte[32];
        Arrays.fill(challenge, (byte) 0xA5);
        byte[] r1 = Dhchap.hostResponse(DhchapHash.SHA256, key, challenge, 0x12345678, 0x0102, Dhchap.SC_C_NEWTLSPSK,
            DhchapSecretTest.HOST_NQN, DhchapTest.SUBSYSTEM_NQN);
        assertThat(HexFormat.of().formatHex(r1)).isEqualTo(KAT_R1_SCC1);
    }

    static final String KAT_R1_SCC1 = "bdf8a4e208ade2cd89a3b21773bfc14ee993da3eb6366ac1d33a865e3bd4ae47";

    @Test
    void shouldGenerateTheSamePskOnBothSides() throws Exception {
        for (DhchapHash h : new DhchapHash[] {DhchapHash.SHA256, DhchapHash.SHA384}) {
            for (boolean bidirectional : new boolean[] {false, true}) {
                ControllerAuthentication c = controller(creds(h, DhchapGroup.FFDHE2048, true), NEW, false);
                Loop loop = new Loop(c);
                HostAuthentication.Result r = host(bidirectional ? CTRL_KEY : null, Dhchap.SC_C_NEWTLSPSK)
                    .authenticate(loop, 11);
                assertThat(c.isAuthenticated()).isTrue();
                assertThat(r.bidirectional()).isEqualTo(bidirectional);
                GeneratedPsk controllerPsk = c.takeGeneratedPsk();
                assertThat(controllerPsk).as(h + " bidirectional " + bidirectional).isNotNull();
                assertThat(c.takeGeneratedPsk()).as("handed out once").isNull();
                assertThat(controllerPsk.secureChannel()).isEqualTo(Dhchap.SC_C_NEWTLSPSK);
                assertThat(controllerPsk.hash()).isEqualTo(h);
                assertThat(controllerPsk.key()).hasSize(h.length()).isEqualTo(r.generatedPsk().key());
                assertThat(controllerPsk.toString()).contains("hidden");
                // Without a controller key the host sends C2 but S2 0 (as the Linux host): no Success2.
                assertThat(loop.received).containsExactly("Challenge", "Success1");
            }
        }
    }

    @Test
    void shouldGenerateNoPskWithoutSecureChannelConcatenation() throws Exception {
        ControllerAuthentication c = controller(creds(DhchapHash.SHA256, DhchapGroup.FFDHE2048, false), NEW, false);
        HostAuthentication.Result r = host(null, Dhchap.SC_C_NOSC).authenticate(new Loop(c), 1);
        assertThat(c.isAuthenticated()).isTrue();
        assertThat(r.generatedPsk()).isNull();
        assertThat(c.takeGeneratedPsk()).isNull();
    }

    @Test
    void shouldTakeTheHostsFfdheGroupWhenTheConfiguredGroupIsNull() throws Exception {
        ControllerAuthentication c = controller(creds(DhchapHash.SHA512, DhchapGroup.NULL, false), NEW, false);
        HostAuthentication.Result r = host(null, Dhchap.SC_C_NEWTLSPSK).authenticate(new Loop(c), 2);
        // Neither the configured SHA-512 nor the null group (nvmet's default) can generate a PSK: the host's first
        // offers that can are taken.
        assertThat(r.group()).isEqualTo(DhchapGroup.FFDHE2048);
        assertThat(r.hash()).isEqualTo(DhchapHash.SHA256);
        assertThat(c.takeGeneratedPsk().key()).isEqualTo(r.generatedPsk().key());
    }

    @Test
    void shouldReplaceThePskOnAQueueThatStartsAuthenticated() throws Exception {
        ControllerAuthentication c = controller(creds(DhchapHash.SHA384, DhchapGroup.FFDHE3072, false), REPLACE, true);
        assertThat(c.isAuthenticated()).isTrue();
        assertThat(c.isPending()).isFalse();
        HostAuthentication.Result r = host(null, Dhchap.SC_C_REPLACETLSPSK).authenticate(new Loop(c), 3);
        GeneratedPsk p = c.takeGeneratedPsk();
        assertThat(p.secureChannel()).isEqualTo(Dhchap.SC_C_REPLACETLSPSK);
        assertThat(p.key()).isEqualTo(r.generatedPsk().key());
        assertThat(r.generatedPsk().secureChannel()).isEqualTo(Dhchap.SC_C_REPLACETLSPSK);
    }

    private static void refused(ControllerAuthentication c, HostAuthentication host,
                                BiFunction<ByteBuffer, Integer, Integer> tamper, int explanation, String why) {
        Loop loop = new Loop(c);
        loop.tamper = tamper;
        assertThatThrownBy(() -> host.authenticate(loop, 9))
            .isInstanceOfSatisfying(DhchapException.class, e -> {
                assertThat(e.reportedByController()).isTrue();
                assertThat(e.explanation()).as(e.getMessage()).isEqualTo(explanation);
            });
        assertThat(c.isAuthenticated()).isFalse();
        assertThat(c.mustDisconnect()).isTrue();
        assertThat(c.takeGeneratedPsk()).isNull();
        assertThat(loop.received).last().isEqualTo("Failure1");
        assertThat(c.lastFailure()).contains(why);
    }

    private static BiFunction<ByteBuffer, Integer, Integer> onMessage(int authId,
                                                                      BiFunction<ByteBuffer, Integer, Integer> f) {
        return (b, n) -> (b.get(1) & 0xFF) == authId ? f.apply(b, n) : n;
    }

    @Test
    void shouldRefuseScCOnAQueueThatDoesNotTakeIt() {
        // An I/O queue, a port without TLS: Failure1 "secure channel concatenation mismatch", naming why.
        refused(controller(creds(DhchapHash.SHA256, DhchapGroup.FFDHE2048, false),
                ControllerAuthentication.SecureChannel.none("I/O queue 1 (admin queue only)"), false),
            host(null, Dhchap.SC_C_NEWTLSPSK), (b, n) -> n, DhchapFailure.CONCAT_MISMATCH, "I/O queue 1");
        // REPLACETLSPSK where only NEWTLSPSK fits (a queue without TLS), and the reverse.
        refused(controller(creds(DhchapHash.SHA256, DhchapGroup.FFDHE2048, false), NEW, false),
            host(null, Dhchap.SC_C_REPLACETLSPSK), (b, n) -> n, DhchapFailure.CONCAT_MISMATCH, "REPLACETLSPSK");
        refused(controller(creds(DhchapHash.SHA256, DhchapGroup.FFDHE2048, false), REPLACE, false),
            host(null, Dhchap.SC_C_NEWTLSPSK), (b, n) -> n, DhchapFailure.CONCAT_MISMATCH, "NEWTLSPSK");
        // A reserved SC_C value.
        refused(controller(creds(DhchapHash.SHA256, DhchapGroup.FFDHE2048, false), NEW, false),
            host(null, Dhchap.SC_C_NEWTLSPSK), onMessage(DhchapMessage.NEGOTIATE, (b, n) -> {
                b.put(DhchapMessage.SC_C_OFFSET, (byte) 3);
                return n;
            }), DhchapFailure.CONCAT_MISMATCH, "reserved");
    }

    @Test
    void shouldRefuseScCWithOnlyTheNullGroup() {
        refused(controller(creds(DhchapHash.SHA256, DhchapGroup.NULL, false), NEW, false),
            host(null, Dhchap.SC_C_NEWTLSPSK), onMessage(DhchapMessage.NEGOTIATE, (b, n) -> {
                b.put(DhchapMessage.DESCRIPTORS_OFFSET + DhchapMessage.DESCRIPTOR_DHLEN, (byte) 1);
                b.put(DhchapMessage.DESCRIPTORS_OFFSET + DhchapMessage.DESCRIPTOR_DH_IDS, (byte) 0);
                return n;
            }), DhchapFailure.CONCAT_MISMATCH, "DH group other than null");
    }

    @Test
    void shouldRefuseScCWithOnlySha512() {
        refused(controller(creds(DhchapHash.SHA512, DhchapGroup.FFDHE2048, false), NEW, false),
            host(null, Dhchap.SC_C_NEWTLSPSK), onMessage(DhchapMessage.NEGOTIATE, (b, n) -> {
                b.put(DhchapMessage.DESCRIPTORS_OFFSET + DhchapMessage.DESCRIPTOR_HALEN, (byte) 1);
                b.put(DhchapMessage.DESCRIPTORS_OFFSET + DhchapMessage.DESCRIPTOR_HASH_IDS, (byte) 3);
                return n;
            }), DhchapFailure.HASH_UNUSABLE, "TLS suite");
    }

    @Test
    void shouldRefuseScCWithoutTheHostsChallenge() {
        refused(controller(creds(DhchapHash.SHA256, DhchapGroup.FFDHE2048, false), NEW, false),
            host(null, Dhchap.SC_C_NEWTLSPSK), onMessage(DhchapMessage.REPLY, (b, n) -> {
                b.put(DhchapMessage.CVALID_OFFSET, (byte) 0);
                return n;
            }), DhchapFailure.FAILED, "CVALID 0");
    }

    @Test
    void shouldRefuseAResponseThatDoesNotCoverTheNegotiatedScC() {
        // The Negotiate loses its SC_C on the way: the host's R1 still covers SC_C 1, the controller's check 0.
        refused(controller(creds(DhchapHash.SHA256, DhchapGroup.FFDHE2048, false), NEW, false),
            host(null, Dhchap.SC_C_NEWTLSPSK), onMessage(DhchapMessage.NEGOTIATE, (b, n) -> {
                b.put(DhchapMessage.SC_C_OFFSET, (byte) 0);
                return n;
            }), DhchapFailure.FAILED, "response does not match");
    }

    @Test
    void shouldLetTheHostRefuseAChallengeThatCannotGenerateAPsk() {
        // A controller that ignores the host's list: the null group, or SHA-512.
        for (DhchapHash h : new DhchapHash[] {DhchapHash.SHA256, DhchapHash.SHA512}) {
            DhchapGroup g = h == DhchapHash.SHA256 ? DhchapGroup.NULL : DhchapGroup.FFDHE2048;
            ControllerAuthentication c = controller(creds(h, g, false),
                ControllerAuthentication.SecureChannel.none("n/a"), false);
            Loop loop = new Loop(c);
            // Strip SC_C and offer everything, so this controller answers with the group and hash configured.
            loop.tamper = onMessage(DhchapMessage.NEGOTIATE, (b, n) -> {
                b.put(DhchapMessage.SC_C_OFFSET, (byte) 0);
                b.put(DhchapMessage.DESCRIPTORS_OFFSET + DhchapMessage.DESCRIPTOR_HALEN, (byte) 1);
                b.put(DhchapMessage.DESCRIPTORS_OFFSET + DhchapMessage.DESCRIPTOR_HASH_IDS, (byte) h.id());
                b.put(DhchapMessage.DESCRIPTORS_OFFSET + DhchapMessage.DESCRIPTOR_DHLEN, (byte) 1);
                b.put(DhchapMessage.DESCRIPTORS_OFFSET + DhchapMessage.DESCRIPTOR_DH_IDS, (byte) g.id());
                return n;
            });
            assertThatThrownBy(() -> host(null, Dhchap.SC_C_NEWTLSPSK).authenticate(loop, 4))
                .isInstanceOfSatisfying(DhchapException.class, e -> {
                    assertThat(e.reportedByController()).isFalse();
                    assertThat(e.explanation()).isEqualTo(h == DhchapHash.SHA512 ? DhchapFailure.HASH_UNUSABLE
                        : DhchapFailure.CONCAT_MISMATCH);
                });
            assertThat(c.mustDisconnect()).as("the host's Failure2 reached the controller").isTrue();
        }
    }
}
