package io.nvmeof4j.initiator;

import java.nio.ByteBuffer;
import java.util.Random;

/** Test data helpers. */
final class Bytes {
    private Bytes() {
    }

    static ByteBuffer random(int size, long seed) {
        byte[] bytes = new byte[size];
        new Random(seed).nextBytes(bytes);
        ByteBuffer buffer = ByteBuffer.allocateDirect(size);
        buffer.put(bytes).flip();
        return buffer;
    }

    static byte[] array(ByteBuffer buffer) {
        ByteBuffer view = buffer.duplicate();
        byte[] bytes = new byte[view.remaining()];
        view.get(bytes);
        return bytes;
    }
}
