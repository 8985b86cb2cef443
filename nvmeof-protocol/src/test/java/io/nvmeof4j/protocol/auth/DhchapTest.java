package io.nvmeof4j.protocol.auth;

import org.junit.jupiter.api.Test;

import java.util.Arrays;
import java.util.HexFormat;

import static org.assertj.core.api.Assertions.assertThat;

/** Response and augmented-challenge vectors computed with Python's hmac/hashlib (OpenSSL), not with the JDK. */
class DhchapTest {
    static final String SUBSYSTEM_NQN = "nqn.2024-01.io.nvmeof4j:auth-test";

    private static byte[] filled(int n, int value) {
        byte[] b = new byte[n];
        Arrays.fill(b, (byte) value);
        return b;
    }

    @Test
    void shouldComputeHostResponseOverChallengeSeqTidHostHostAndNqns() {
        byte[] key = DhchapSecret.parse(DhchapSecretTest.KEY32_HH1).transform(DhchapSecretTest.HOST_NQN);
        byte[] r1 = Dhchap.hostResponse(DhchapHash.SHA256, key, filled(32, 0xA5), 0x12345678, 0x0102,
            Dhchap.SC_C_NOSC, DhchapSecretTest.HOST_NQN, SUBSYSTEM_NQN);
        assertThat(HexFormat.of().formatHex(r1))
            .isEqualTo("ad69176689f8d3bde1a214dcb768e44ff47e52ab050ec50fe03b3f50dc36b5b3");
    }

    @Test
    void shouldComputeControllerResponseWithControllerLabelAndSwappedNqns() {
        byte[] key = DhchapSecret.parse(DhchapSecretTest.KEY32_HH1).transform(DhchapSecretTest.HOST_NQN);
        byte[] r2 = Dhchap.controllerResponse(DhchapHash.SHA256, key, filled(32, 0x5A), 0x9abcdef0, 0x0102,
            SUBSYSTEM_NQN, DhchapSecretTest.HOST_NQN);
        assertThat(HexFormat.of().formatHex(r2))
            .isEqualTo("4607bd1255bdd00ecf25e5bfbad3c9f68c51910cf3e81b78a2d2760fe9786ffe");
    }

    @Test
    void shouldAugmentChallengeWithHashOfSessionKey() {
        byte[] ks = new byte[256];
        for (int i = 0; i < ks.length; i++) {
            ks[i] = (byte) i;
        }
        assertThat(HexFormat.of().formatHex(Dhchap.augmentedChallenge(DhchapHash.SHA256, ks, filled(32, 0xA5))))
            .isEqualTo("41085176b00704aa8b023c00dacdc16f0bbbc2f1621cfbeb512ecf6b064b0f5f");
        assertThat(HexFormat.of().formatHex(Dhchap.augmentedChallenge(DhchapHash.SHA512, ks, filled(64, 0xA5))))
            .isEqualTo("d979c193177f722ad0674946eb1e1697b1be48a924c5b6a9a90951e4a48a7cd5"
                + "57a1da682b0b8f150ac98cde76c8b938ed75877124d8f5897238108a8aa4340c");
    }

    @Test
    void shouldNeverHandOutSeqnumZero() {
        for (int i = 0; i < 1000; i++) {
            assertThat(Dhchap.nextSeqnum()).isNotZero();
        }
    }
}
