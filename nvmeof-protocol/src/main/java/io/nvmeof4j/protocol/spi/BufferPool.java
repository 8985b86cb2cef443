package io.nvmeof4j.protocol.spi;

import java.nio.ByteBuffer;

/**
 * Data buffers for one reactor (architecture: pre-registered memory pools). Buffers are slices of off-heap
 * regions made once; acquiring and releasing allocates nothing. Not thread-safe: only the owning reactor thread
 * acquires and releases.
 */
public interface BufferPool {
    /**
     * A buffer for {@code length} bytes: position 0, limit {@code length}, capacity at least that, little-endian,
     * contents undefined. Returns {@code null} when the pool is exhausted (the caller waits for a release).
     *
     * @throws IllegalArgumentException when {@code length} exceeds {@link #maxBufferSize()}
     */
    ByteBuffer acquire(int length);

    /** Returns a buffer this pool handed out. */
    void release(ByteBuffer buffer);

    /** Largest single buffer this pool hands out; bounds a command's data transfer (MDTS). */
    int maxBufferSize();

    /** Buffers handed out and not yet released (a gauge for metrics and leak checks). */
    int buffersInUse();
}
