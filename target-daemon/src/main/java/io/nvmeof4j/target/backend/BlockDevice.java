package io.nvmeof4j.target.backend;

/**
 * A namespace's storage: RAM, a file, a block device, or nothing (null). Block I/O is submitted with
 * {@link #submit(BlockIo)} and completes through {@link BlockIo#complete(int)} with an NVMe status, inline or
 * later from another thread. A device never blocks the caller (a reactor thread).
 */
public interface BlockDevice extends AutoCloseable {
    /** For logs and the management API: {@code "ram 1 GiB"}, {@code "file /srv/ns1.img"}. */
    String description();

    /** Logical block size in bytes: 512 or 4096. */
    int blockSize();

    /** Capacity in logical blocks. */
    long blockCount();

    /** True when writes are cached and Flush (or FUA) is needed to make them durable (Identify VWC). */
    boolean hasVolatileWriteCache();

    /**
     * True when blocks read back as zeroes once deallocated (DSM deallocate, Write Zeroes with DEAC): Identify
     * Namespace then reports DLFEAT "read zeroes" and "Write Zeroes may deallocate". Files (hole punch), RAM and
     * null devices guarantee it; a block device's discard need not zero, so it says false.
     */
    default boolean deallocatedBlocksReadZeroes() {
        return true;
    }

    /**
     * Changes the capacity of a device in use (a namespace resized live): {@code sizeBytes} > 0 that size, 0 the size
     * the underlying file or block device has now. I/O beyond the old end is served from the moment this returns.
     * Returns the new capacity in bytes.
     *
     * @throws UnsupportedOperationException this kind of device cannot be resized (RAM)
     * @throws java.io.IOException           the file or device is smaller than asked, or cannot be looked at
     */
    default long resize(long sizeBytes) throws java.io.IOException {
        throw new UnsupportedOperationException(description() + " cannot be resized");
    }

    /** Starts one block I/O. Completion: {@code io.complete(status)}, exactly once, from any thread. */
    void submit(BlockIo io);

    /** Waits (bounded) for in-flight I/O, makes written data durable, releases the storage. Idempotent. */
    @Override
    void close();
}
