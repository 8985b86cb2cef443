package io.nvmeof4j.tcp.pdu;

import io.nvmeof4j.protocol.tcp.Crc32cDigest;
import io.nvmeof4j.protocol.tcp.PduType;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Random;

/** PDUs as bytes for tests that play a peer (wire reference 5). */
public final class TestPdus {
    private TestPdus() {
    }

    /** The last C2HData of command {@code cid}, DATAO 0, with the digests asked for (and SUCCESS if asked). */
    public static byte[] c2hData(int cid, byte[] data, boolean headerDigest, boolean dataDigest, boolean success) {
        int pdo = 24 + (headerDigest ? 4 : 0);
        byte[] pdu = new byte[pdo + data.length + (dataDigest ? 4 : 0)];
        int flags = (headerDigest ? 1 : 0) | (dataDigest ? 2 : 0) | 4 | (success ? 8 : 0);
        le(pdu).put(0, (byte) PduType.C2H_DATA).put(1, (byte) flags).put(2, (byte) 24).put(3, (byte) pdo)
            .putInt(4, pdu.length).putShort(8, (short) cid).putInt(12, 0).putInt(16, data.length);
        if (headerDigest) {
            le(pdu).putInt(24, Crc32cDigest.of(pdu, 0, 24));
        }
        System.arraycopy(data, 0, pdu, pdo, data.length);
        if (dataDigest) {
            le(pdu).putInt(pdo + data.length, Crc32cDigest.of(data, 0, data.length));
        }
        return pdu;
    }

    public static ByteBuffer le(byte[] bytes) {
        return ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
    }

    public static byte[] pattern(int length, long seed) {
        byte[] bytes = new byte[length];
        new Random(seed).nextBytes(bytes);
        return bytes;
    }
}
