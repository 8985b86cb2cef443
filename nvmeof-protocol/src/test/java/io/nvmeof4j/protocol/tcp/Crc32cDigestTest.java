package io.nvmeof4j.protocol.tcp;

import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;

import static org.assertj.core.api.Assertions.assertThat;

class Crc32cDigestTest {

    @Test
    void shouldMatchTheCheckValueOf123456789() {
        byte[] check = "123456789".getBytes(StandardCharsets.US_ASCII);
        assertThat(Crc32cDigest.of(check, 0, check.length)).isEqualTo(0xE3069283);

        ByteBuffer direct = ByteBuffer.allocateDirect(32).order(ByteOrder.LITTLE_ENDIAN);
        direct.position(5);
        direct.put(check);
        direct.position(3).limit(20);
        assertThat(new Crc32cDigest().compute(direct, 5, check.length)).isEqualTo(0xE3069283);
        assertThat(direct.position()).isEqualTo(3);
        assertThat(direct.limit()).isEqualTo(20);
    }

    @Test
    void shouldMatchTheIscsiTestVectors() {
        // RFC 3720 B.4; the RFC lists the CRC as it goes on the wire (little-endian).
        Crc32cDigest digest = new Crc32cDigest();
        ByteBuffer b = ByteBuffer.allocate(32).order(ByteOrder.LITTLE_ENDIAN);
        assertThat(digest.compute(b, 0, 32)).isEqualTo(0x8A9136AA);
        for (int i = 0; i < 32; i++) {
            b.put(i, (byte) 0xFF);
        }
        assertThat(digest.compute(b, 0, 32)).isEqualTo(0x62A8AB43);
        for (int i = 0; i < 32; i++) {
            b.put(i, (byte) i);
        }
        assertThat(digest.compute(b, 0, 32)).isEqualTo(0x46DD794E);
    }

    @Test
    void shouldDigestRangesBeyondTheCurrentLimitAndAcrossUpdates() {
        byte[] check = "123456789".getBytes(StandardCharsets.US_ASCII);
        ByteBuffer b = ByteBuffer.allocateDirect(64).order(ByteOrder.LITTLE_ENDIAN);
        for (int i = 0; i < check.length; i++) {
            b.put(40 + i, check[i]);
        }
        b.position(0).limit(10); // the range lies past the limit: the digest must not care, nor disturb it
        Crc32cDigest digest = new Crc32cDigest();
        int split = digest.reset().update(b, 40, 4).update(b, 44, 5).value();
        assertThat(split).isEqualTo(0xE3069283);
        assertThat(b.position()).isZero();
        assertThat(b.limit()).isEqualTo(10);
    }

    @Test
    void shouldDigestAnEmptyRangeAsZero() {
        ByteBuffer b = ByteBuffer.allocateDirect(8);
        assertThat(new Crc32cDigest().compute(b, 4, 0)).isZero();
    }
}
