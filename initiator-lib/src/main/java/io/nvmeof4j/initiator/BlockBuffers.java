package io.nvmeof4j.initiator;

import java.nio.ByteBuffer;
import java.util.Objects;

/** The argument checks of a namespace's I/O calls, the same for one path ({@link NvmeofNamespace}) and many. */
final class BlockBuffers {
    private BlockBuffers() {
    }

    static void checkBlocks(int blocks) {
        if (blocks < 1) {
            throw new IllegalArgumentException("block count " + blocks + " below 1");
        }
    }

    /** {@code buffer} holds at least {@code blocks} blocks of {@code 1 << blockShift} bytes. */
    static void checkData(int blocks, ByteBuffer buffer, int blockShift) {
        checkBlocks(blocks);
        Objects.requireNonNull(buffer, "buffer");
        long bytes = (long) blocks << blockShift;
        if (buffer.remaining() < bytes) {
            throw new IllegalArgumentException(blocks + " blocks of " + (1 << blockShift) + " bytes need " + bytes
                + " bytes; the buffer has " + buffer.remaining() + " remaining");
        }
    }

    /** The blocks {@code buffer}'s remaining bytes make: a positive whole number, or the caller is told. */
    static int wholeBlocks(ByteBuffer buffer, int blockShift) {
        Objects.requireNonNull(buffer, "buffer");
        int bytes = buffer.remaining();
        if (bytes == 0 || (bytes & ((1 << blockShift) - 1)) != 0) {
            throw new IllegalArgumentException("buffer holds " + bytes + " bytes, not a positive multiple of the "
                + (1 << blockShift) + "-byte block size");
        }
        return bytes >>> blockShift;
    }
}
