package io.nvmeof4j.protocol.auth;

import org.junit.jupiter.api.Test;

import java.security.SecureRandom;
import java.util.HexFormat;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Expected values were computed outside the JDK (Python's hmac/hashlib over OpenSSL, zlib's CRC-32), so these tests
 * cross-check the JDK path rather than repeat it.
 */
class DhchapSecretTest {
    static final String HOST_NQN = "nqn.2014-08.org.nvmexpress:uuid:0c468c4d-a385-47e0-8299-6e95051277db";
    /** The example secret of the NVMe specification (also in the Linux kernel's and libnvme's discussions). */
    static final String SPEC_EXAMPLE = "DHHC-1:00:ia6zGodOr4SEG0Zzaw398rpY0wqipUWj4jWjUh4HWUz6aQ2n:";
    static final String KEY32_HH1 = "DHHC-1:01:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh+KfiaR:";
    static final String KEY48_HH2 =
        "DHHC-1:02:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKissLS4vcSEgBQ==:";
    static final String KEY64_HH3 = "DHHC-1:03:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKissLS4vMDEy"
        + "MzQ1Njc4OTo7PD0+P4zODhA=:";

    @Test
    void shouldParseTheSpecificationExample() {
        DhchapSecret s = DhchapSecret.parse(SPEC_EXAMPLE);
        assertThat(s.keyLength()).isEqualTo(32);
        assertThat(s.transformHash()).isZero();
        assertThat(DhchapSecret.parse(SPEC_EXAMPLE.substring(0, SPEC_EXAMPLE.length() - 1)).sameAs(s)).isTrue();
    }

    @Test
    void shouldTransformWithEachHashAsHmacOfNqnAndLabel() {
        assertThat(HexFormat.of().formatHex(DhchapSecret.parse(KEY32_HH1).transform(HOST_NQN)))
            .isEqualTo("ec4c8e6e0b8a78acaf6b460365fccf0b936c106c121462c349986d245eb89e82");
        assertThat(HexFormat.of().formatHex(DhchapSecret.parse(KEY48_HH2).transform(HOST_NQN)))
            .isEqualTo("3761232f3f3b46cfb55a2a6d69d84be5cfa08d43c72b9d18ccceafbc5b573d4bc0984117841371aa95f23f1d78325563");
        assertThat(HexFormat.of().formatHex(DhchapSecret.parse(KEY64_HH3).transform(HOST_NQN)))
            .isEqualTo("99b2ee2d5e2864101fcc4120fce803de53d0ea37e2d964d20e27417dd56399d2"
                + "4c78993e64c395d7a2a4953c886cc3e3151b9f7cd023d27b6b276168e5eadb4c");
    }

    @Test
    void shouldUseTheKeyItselfWhenHashIsZero() {
        byte[] key = new byte[32];
        for (int i = 0; i < 32; i++) {
            key[i] = (byte) i;
        }
        assertThat(DhchapSecret.parse(KEY32_HH1.replace(":01:", ":00:")).transform(HOST_NQN)).isEqualTo(key);
    }

    @Test
    void shouldRoundTripFormatAndGenerate() {
        assertThat(DhchapSecret.format(DhchapSecret.parse(KEY48_HH2).transform("x").length == 48
            ? new byte[48] : new byte[32], 2)).startsWith("DHHC-1:02:");
        String g = DhchapSecret.generate(64, 3, new SecureRandom());
        assertThat(DhchapSecret.parse(g).keyLength()).isEqualTo(64);
        assertThat(DhchapSecret.parse(g).transformHash()).isEqualTo(3);
    }

    @Test
    void shouldRefuseAMistypedKeyByItsCrc() {
        String typo = SPEC_EXAMPLE.replace("ia6z", "ia7z");
        assertThatThrownBy(() -> DhchapSecret.parse(typo)).hasMessageContaining("CRC-32")
            .hasMessageNotContaining("ia7z");
    }

    @Test
    void shouldRefuseMalformedSecrets() {
        assertThatThrownBy(() -> DhchapSecret.parse("DHHC-2:00:abc:")).hasMessageContaining("DHHC-1:");
        assertThatThrownBy(() -> DhchapSecret.parse("DHHC-1:04:" + SPEC_EXAMPLE.substring(10)))
            .hasMessageContaining("hash 4");
        assertThatThrownBy(() -> DhchapSecret.parse("DHHC-1:0:" + SPEC_EXAMPLE.substring(10)))
            .hasMessageContaining("two hash digits");
        assertThatThrownBy(() -> DhchapSecret.parse("DHHC-1:00:AAECAwQFBgcICQoLDA0ODw==:"))
            .hasMessageContaining("32, 48 or 64");
        assertThatThrownBy(() -> DhchapSecret.parse("DHHC-1:00:not*base64:")).hasMessageContaining("base64");
    }

    @Test
    void shouldNeverPrintTheKey() {
        DhchapSecret s = DhchapSecret.parse(SPEC_EXAMPLE);
        assertThat(s.toString()).contains("hidden").doesNotContain("ia6z");
    }
}
