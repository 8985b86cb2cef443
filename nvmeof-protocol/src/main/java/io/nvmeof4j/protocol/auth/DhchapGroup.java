package io.nvmeof4j.protocol.auth;

import java.math.BigInteger;
import java.security.SecureRandom;
import java.util.Locale;

/**
 * DH-HMAC-CHAP Diffie-Hellman groups (NVMe Base 2.0, 8.13.5.1; DH group identifiers of the Negotiate and Challenge
 * messages): none, or the RFC 7919 finite-field groups ffdhe2048 to ffdhe8192 with generator 2.
 *
 * <p>Values on the wire (the DH value of Challenge and Reply) and the session key are big-endian and exactly as long
 * as the prime (256 bytes for ffdhe2048), zero-padded on the left: the Linux host and target size both buffers to
 * the prime and reject any other length. Private exponents are {@link #privateExponentBits()} long, twice the
 * group's security strength (NIST SP 800-56A rev. 3, 5.6.1.1.1), as OpenSSL and the kernel choose them; that keeps
 * ffdhe8192 at 400-bit exponents rather than 8192.
 *
 * <p>Arithmetic is {@link BigInteger#modPow} (what the JDK's own {@code DHKeyAgreement} does); peer values are checked
 * to lie in [2, p-2] (RFC 7919 5.1), which for these safe primes excludes the subgroups of order 1 and 2.
 */
public enum DhchapGroup {
    NULL(0x00, "null", null, 0),
    FFDHE2048(0x01, "ffdhe2048", Primes.FFDHE2048, 225),
    FFDHE3072(0x02, "ffdhe3072", Primes.FFDHE3072, 275),
    FFDHE4096(0x03, "ffdhe4096", Primes.FFDHE4096, 325),
    FFDHE6144(0x04, "ffdhe6144", Primes.FFDHE6144, 375),
    FFDHE8192(0x05, "ffdhe8192", Primes.FFDHE8192, 400);

    private static final BigInteger TWO = BigInteger.valueOf(2);

    private final int id;
    private final String linuxName;
    private final BigInteger prime;
    private final int length;
    private final int privateExponentBits;

    DhchapGroup(int id, String linuxName, String primeHex, int privateExponentBits) {
        this.id = id;
        this.linuxName = linuxName;
        this.prime = primeHex == null ? null : new BigInteger(primeHex, 16);
        this.length = prime == null ? 0 : (prime.bitLength() + 7) / 8;
        this.privateExponentBits = privateExponentBits;
    }

    /** DH group id on the wire. */
    public int id() {
        return id;
    }

    /** The name nvmet's configfs and nvmetcli use ({@code dhchap_dhgroup}). */
    public String linuxName() {
        return linuxName;
    }

    /** Bytes of a DH value (DHVLEN) and of the session key; 0 for {@link #NULL}. */
    public int valueLength() {
        return length;
    }

    public boolean isNull() {
        return prime == null;
    }

    public BigInteger prime() {
        return prime;
    }

    public int privateExponentBits() {
        return privateExponentBits;
    }

    /** A fresh private exponent: uniformly random, {@link #privateExponentBits()} long, never 0 or 1. */
    public BigInteger newPrivateExponent(SecureRandom random) {
        requireGroup();
        BigInteger x;
        do {
            x = new BigInteger(privateExponentBits, random);
        } while (x.bitLength() < 2);
        return x;
    }

    /** g^x mod p, big-endian, {@link #valueLength()} bytes. */
    public byte[] publicValue(BigInteger privateExponent) {
        requireGroup();
        return toFixedLength(TWO.modPow(privateExponent, prime));
    }

    /**
     * The session key: peer^x mod p, big-endian, {@link #valueLength()} bytes.
     *
     * @return null when the peer value is not {@link #valueLength()} bytes or lies outside [2, p-2]
     */
    public byte[] sessionKey(BigInteger privateExponent, byte[] peerValue) {
        requireGroup();
        if (peerValue.length != length) {
            return null;
        }
        BigInteger y = new BigInteger(1, peerValue);
        if (y.compareTo(BigInteger.ONE) <= 0 || y.compareTo(prime.subtract(BigInteger.ONE)) >= 0) {
            return null;
        }
        return toFixedLength(y.modPow(privateExponent, prime));
    }

    private byte[] toFixedLength(BigInteger v) {
        byte[] raw = v.toByteArray();
        byte[] out = new byte[length];
        int copy = Math.min(raw.length, length);
        System.arraycopy(raw, raw.length - copy, out, length - copy, copy);
        return out;
    }

    private void requireGroup() {
        if (prime == null) {
            throw new IllegalStateException("the null DH group has no values");
        }
    }

    /** The group with wire id {@code id}, or null when unknown (6-255). */
    public static DhchapGroup fromId(int id) {
        for (DhchapGroup g : values()) {
            if (g.id == id) {
                return g;
            }
        }
        return null;
    }

    /**
     * Parses a configured name: {@code null}, {@code ffdhe2048} ... {@code ffdhe8192} (nvmetcli and nvme-cli names).
     *
     * @throws IllegalArgumentException naming the accepted names
     */
    public static DhchapGroup parse(String name) {
        String n = name.trim().toLowerCase(Locale.ROOT);
        for (DhchapGroup g : values()) {
            if (g.linuxName.equals(n)) {
                return g;
            }
        }
        throw new IllegalArgumentException("unknown DH-HMAC-CHAP DH group '" + name
            + "': expected null, ffdhe2048, ffdhe3072, ffdhe4096, ffdhe6144 or ffdhe8192");
    }

    /** RFC 7919 Appendix A primes (the JDK's and OpenSSL's ffdhe groups; DhchapGroupTest checks them against OpenSSL). */
    private static final class Primes {
        static final String FFDHE2048 = ""
            + "ffffffffffffffffadf85458a2bb4a9aafdc5620273d3cf1d8b9c583ce2d3695a9e13641146433fbcc939dce249b3ef9"
            + "7d2fe363630c75d8f681b202aec4617ad3df1ed5d5fd65612433f51f5f066ed0856365553ded1af3b557135e7f57c935"
            + "984f0c70e0e68b77e2a689daf3efe8721df158a136ade73530acca4f483a797abc0ab182b324fb61d108a94bb2c8e3fb"
            + "b96adab760d7f4681d4f42a3de394df4ae56ede76372bb190b07a7c8ee0a6d709e02fce1cdf7e2ecc03404cd28342f61"
            + "9172fe9ce98583ff8e4f1232eef28183c3fe3b1b4c6fad733bb5fcbc2ec22005c58ef1837d1683b2c6f34a26c1b2effa"
            + "886b423861285c97ffffffffffffffff";

        static final String FFDHE3072 = ""
            + "ffffffffffffffffadf85458a2bb4a9aafdc5620273d3cf1d8b9c583ce2d3695a9e13641146433fbcc939dce249b3ef9"
            + "7d2fe363630c75d8f681b202aec4617ad3df1ed5d5fd65612433f51f5f066ed0856365553ded1af3b557135e7f57c935"
            + "984f0c70e0e68b77e2a689daf3efe8721df158a136ade73530acca4f483a797abc0ab182b324fb61d108a94bb2c8e3fb"
            + "b96adab760d7f4681d4f42a3de394df4ae56ede76372bb190b07a7c8ee0a6d709e02fce1cdf7e2ecc03404cd28342f61"
            + "9172fe9ce98583ff8e4f1232eef28183c3fe3b1b4c6fad733bb5fcbc2ec22005c58ef1837d1683b2c6f34a26c1b2effa"
            + "886b4238611fcfdcde355b3b6519035bbc34f4def99c023861b46fc9d6e6c9077ad91d2691f7f7ee598cb0fac186d91c"
            + "aefe130985139270b4130c93bc437944f4fd4452e2d74dd364f2e21e71f54bff5cae82ab9c9df69ee86d2bc522363a0d"
            + "abc521979b0deada1dbf9a42d5c4484e0abcd06bfa53ddef3c1b20ee3fd59d7c25e41d2b66c62e37ffffffffffffffff";

        static final String FFDHE4096 = ""
            + "ffffffffffffffffadf85458a2bb4a9aafdc5620273d3cf1d8b9c583ce2d3695a9e13641146433fbcc939dce249b3ef9"
            + "7d2fe363630c75d8f681b202aec4617ad3df1ed5d5fd65612433f51f5f066ed0856365553ded1af3b557135e7f57c935"
            + "984f0c70e0e68b77e2a689daf3efe8721df158a136ade73530acca4f483a797abc0ab182b324fb61d108a94bb2c8e3fb"
            + "b96adab760d7f4681d4f42a3de394df4ae56ede76372bb190b07a7c8ee0a6d709e02fce1cdf7e2ecc03404cd28342f61"
            + "9172fe9ce98583ff8e4f1232eef28183c3fe3b1b4c6fad733bb5fcbc2ec22005c58ef1837d1683b2c6f34a26c1b2effa"
            + "886b4238611fcfdcde355b3b6519035bbc34f4def99c023861b46fc9d6e6c9077ad91d2691f7f7ee598cb0fac186d91c"
            + "aefe130985139270b4130c93bc437944f4fd4452e2d74dd364f2e21e71f54bff5cae82ab9c9df69ee86d2bc522363a0d"
            + "abc521979b0deada1dbf9a42d5c4484e0abcd06bfa53ddef3c1b20ee3fd59d7c25e41d2b669e1ef16e6f52c3164df4fb"
            + "7930e9e4e58857b6ac7d5f42d69f6d187763cf1d5503400487f55ba57e31cc7a7135c886efb4318aed6a1e012d9e6832"
            + "a907600a918130c46dc778f971ad0038092999a333cb8b7a1a1db93d7140003c2a4ecea9f98d0acc0a8291cdcec97dcf"
            + "8ec9b55a7f88a46b4db5a851f44182e1c68a007e5e655f6affffffffffffffff";

        static final String FFDHE6144 = ""
            + "ffffffffffffffffadf85458a2bb4a9aafdc5620273d3cf1d8b9c583ce2d3695a9e13641146433fbcc939dce249b3ef9"
            + "7d2fe363630c75d8f681b202aec4617ad3df1ed5d5fd65612433f51f5f066ed0856365553ded1af3b557135e7f57c935"
            + "984f0c70e0e68b77e2a689daf3efe8721df158a136ade73530acca4f483a797abc0ab182b324fb61d108a94bb2c8e3fb"
            + "b96adab760d7f4681d4f42a3de394df4ae56ede76372bb190b07a7c8ee0a6d709e02fce1cdf7e2ecc03404cd28342f61"
            + "9172fe9ce98583ff8e4f1232eef28183c3fe3b1b4c6fad733bb5fcbc2ec22005c58ef1837d1683b2c6f34a26c1b2effa"
            + "886b4238611fcfdcde355b3b6519035bbc34f4def99c023861b46fc9d6e6c9077ad91d2691f7f7ee598cb0fac186d91c"
            + "aefe130985139270b4130c93bc437944f4fd4452e2d74dd364f2e21e71f54bff5cae82ab9c9df69ee86d2bc522363a0d"
            + "abc521979b0deada1dbf9a42d5c4484e0abcd06bfa53ddef3c1b20ee3fd59d7c25e41d2b669e1ef16e6f52c3164df4fb"
            + "7930e9e4e58857b6ac7d5f42d69f6d187763cf1d5503400487f55ba57e31cc7a7135c886efb4318aed6a1e012d9e6832"
            + "a907600a918130c46dc778f971ad0038092999a333cb8b7a1a1db93d7140003c2a4ecea9f98d0acc0a8291cdcec97dcf"
            + "8ec9b55a7f88a46b4db5a851f44182e1c68a007e5e0dd9020bfd64b645036c7a4e677d2c38532a3a23ba4442caf53ea6"
            + "3bb454329b7624c8917bdd64b1c0fd4cb38e8c334c701c3acdad0657fccfec719b1f5c3e4e46041f388147fb4cfdb477"
            + "a52471f7a9a96910b855322edb6340d8a00ef092350511e30abec1fff9e3a26e7fb29f8c183023c3587e38da0077d9b4"
            + "763e4e4b94b2bbc194c6651e77caf992eeaac0232a281bf6b3a739c1226116820ae8db5847a67cbef9c9091b462d538c"
            + "d72b03746ae77f5e62292c311562a846505dc82db854338ae49f5235c95b91178ccf2dd5cacef403ec9d1810c6272b04"
            + "5b3b71f9dc6b80d63fdd4a8e9adb1e6962a69526d43161c1a41d570d7938dad4a40e329cd0e40e65ffffffffffffffff";

        static final String FFDHE8192 = ""
            + "ffffffffffffffffadf85458a2bb4a9aafdc5620273d3cf1d8b9c583ce2d3695a9e13641146433fbcc939dce249b3ef9"
            + "7d2fe363630c75d8f681b202aec4617ad3df1ed5d5fd65612433f51f5f066ed0856365553ded1af3b557135e7f57c935"
            + "984f0c70e0e68b77e2a689daf3efe8721df158a136ade73530acca4f483a797abc0ab182b324fb61d108a94bb2c8e3fb"
            + "b96adab760d7f4681d4f42a3de394df4ae56ede76372bb190b07a7c8ee0a6d709e02fce1cdf7e2ecc03404cd28342f61"
            + "9172fe9ce98583ff8e4f1232eef28183c3fe3b1b4c6fad733bb5fcbc2ec22005c58ef1837d1683b2c6f34a26c1b2effa"
            + "886b4238611fcfdcde355b3b6519035bbc34f4def99c023861b46fc9d6e6c9077ad91d2691f7f7ee598cb0fac186d91c"
            + "aefe130985139270b4130c93bc437944f4fd4452e2d74dd364f2e21e71f54bff5cae82ab9c9df69ee86d2bc522363a0d"
            + "abc521979b0deada1dbf9a42d5c4484e0abcd06bfa53ddef3c1b20ee3fd59d7c25e41d2b669e1ef16e6f52c3164df4fb"
            + "7930e9e4e58857b6ac7d5f42d69f6d187763cf1d5503400487f55ba57e31cc7a7135c886efb4318aed6a1e012d9e6832"
            + "a907600a918130c46dc778f971ad0038092999a333cb8b7a1a1db93d7140003c2a4ecea9f98d0acc0a8291cdcec97dcf"
            + "8ec9b55a7f88a46b4db5a851f44182e1c68a007e5e0dd9020bfd64b645036c7a4e677d2c38532a3a23ba4442caf53ea6"
            + "3bb454329b7624c8917bdd64b1c0fd4cb38e8c334c701c3acdad0657fccfec719b1f5c3e4e46041f388147fb4cfdb477"
            + "a52471f7a9a96910b855322edb6340d8a00ef092350511e30abec1fff9e3a26e7fb29f8c183023c3587e38da0077d9b4"
            + "763e4e4b94b2bbc194c6651e77caf992eeaac0232a281bf6b3a739c1226116820ae8db5847a67cbef9c9091b462d538c"
            + "d72b03746ae77f5e62292c311562a846505dc82db854338ae49f5235c95b91178ccf2dd5cacef403ec9d1810c6272b04"
            + "5b3b71f9dc6b80d63fdd4a8e9adb1e6962a69526d43161c1a41d570d7938dad4a40e329ccff46aaa36ad004cf600c838"
            + "1e425a31d951ae64fdb23fcec9509d43687feb69edd1cc5e0b8cc3bdf64b10ef86b63142a3ab8829555b2f747c932665"
            + "cb2c0f1cc01bd70229388839d2af05e454504ac78b7582822846c0ba35c35f5c59160cc046fd8251541fc68c9c86b022"
            + "bb7099876a460e7451a8a93109703fee1c217e6c3826e52c51aa691e0e423cfc99e9e31650c1217b624816cdad9a95f9"
            + "d5b8019488d9c0a0a1fe3075a577e23183f81d4a3f2fa4571efc8ce0ba8a4fe8b6855dfe72b0a66eded2fbabfbe58a30"
            + "fafabe1c5d71a87e2f741ef8c1fe86fea6bbfde530677f0d97d11d49f7a8443d0822e506a9f4614e011e2a94838ff88c"
            + "d68c8bb7c5c6424cffffffffffffffff";
    }
}
