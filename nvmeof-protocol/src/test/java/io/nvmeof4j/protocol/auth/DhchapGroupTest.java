package io.nvmeof4j.protocol.auth;

import org.junit.jupiter.api.Test;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Each group against OpenSSL 3's own ffdhe groups: for keys OpenSSL generated (`openssl genpkey -algorithm DH
 * -pkeyopt group:ffdheN`), our g^x must equal OpenSSL's public value and our session key OpenSSL's
 * `pkeyutl -derive` result. That checks the primes, the generator and the zero padding.
 */
class DhchapGroupTest {
    private static Map<String, BigInteger> vectors() throws Exception {
        Map<String, BigInteger> v = new HashMap<>();
        try (BufferedReader r = new BufferedReader(new InputStreamReader(
            DhchapGroupTest.class.getResourceAsStream("/auth/ffdhe-openssl-vectors.txt"), StandardCharsets.US_ASCII))) {
            for (String line; (line = r.readLine()) != null; ) {
                String[] f = line.trim().split(" ");
                if (f.length == 3) {
                    v.put(f[0] + " " + f[1], new BigInteger(f[2], 16));
                }
            }
        }
        return v;
    }

    @Test
    void shouldMatchOpenSslForEveryGroup() throws Exception {
        Map<String, BigInteger> v = vectors();
        for (DhchapGroup g : DhchapGroup.values()) {
            if (g.isNull()) {
                continue;
            }
            String n = g.linuxName();
            assertThat(g.valueLength()).as(n).isEqualTo(Integer.parseInt(n.substring(5)) / 8);
            byte[] ya = g.publicValue(v.get(n + " xa"));
            assertThat(ya).as(n).hasSize(g.valueLength());
            assertThat(new BigInteger(1, ya)).as(n + " public value").isEqualTo(v.get(n + " ya"));
            byte[] yb = fixed(v.get(n + " yb"), g.valueLength());
            byte[] z = g.sessionKey(v.get(n + " xa"), yb);
            assertThat(z).as(n).hasSize(g.valueLength()).isEqualTo(fixed(v.get(n + " z"), g.valueLength()));
        }
    }

    @Test
    void shouldRefusePeerValuesOutsideTheGroupOrOfWrongLength() {
        DhchapGroup g = DhchapGroup.FFDHE2048;
        BigInteger x = BigInteger.valueOf(12345);
        int n = g.valueLength();
        assertThat(g.sessionKey(x, fixed(BigInteger.ZERO, n))).isNull();
        assertThat(g.sessionKey(x, fixed(BigInteger.ONE, n))).isNull();
        assertThat(g.sessionKey(x, fixed(g.prime().subtract(BigInteger.ONE), n))).isNull();
        assertThat(g.sessionKey(x, fixed(g.prime(), n))).isNull();
        assertThat(g.sessionKey(x, new byte[n + 1])).isNull();
        assertThat(g.sessionKey(x, fixed(BigInteger.TWO, n))).hasSize(n);
    }

    @Test
    void shouldParseNamesAsNvmetcliWritesThem() {
        assertThat(DhchapGroup.parse("ffdhe8192")).isEqualTo(DhchapGroup.FFDHE8192);
        assertThat(DhchapGroup.parse("null")).isEqualTo(DhchapGroup.NULL);
        assertThat(DhchapHash.parse("hmac(sha384)")).isEqualTo(DhchapHash.SHA384);
        assertThat(DhchapHash.parse("SHA-512")).isEqualTo(DhchapHash.SHA512);
        assertThat(DhchapGroup.fromId(6)).isNull();
        assertThat(DhchapHash.fromId(0)).isNull();
    }

    static byte[] fixed(BigInteger v, int length) {
        byte[] raw = v.toByteArray();
        byte[] out = new byte[length];
        int copy = Math.min(raw.length, length);
        System.arraycopy(raw, raw.length - copy, out, length - copy, copy);
        return out;
    }
}
