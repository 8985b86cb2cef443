package io.nvmeof4j.target.backend;

import io.nvmeof4j.protocol.command.NvmeStatus;

/**
 * A device that stores nothing (like Linux null_blk or SPDK's null bdev): reads return zeros, writes are dropped.
 * For measuring the target's own overhead. Completes inline, allocates nothing.
 */
public final class NullBlockDevice implements BlockDevice {
    private final String name;
    /** Changed by {@link #resize}; read once per I/O. */
    private volatile long capacityBytes;
    private final int blockSize;
    private volatile boolean closed;

    public NullBlockDevice(String name, long sizeBytes, int blockSize) {
        DeviceSupport.checkGeometry(sizeBytes, blockSize);
        this.name = name;
        this.capacityBytes = sizeBytes;
        this.blockSize = blockSize;
    }

    @Override
    public String description() {
        return "null " + DeviceSupport.formatSize(capacityBytes) + (name.isEmpty() ? "" : " " + name);
    }

    @Override
    public int blockSize() {
        return blockSize;
    }

    @Override
    public long blockCount() {
        return capacityBytes / blockSize;
    }

    /** SPDK's {@code bdev_null_resize}: any size, a multiple of the block size (the caller refuses shrinking). */
    @Override
    public long resize(long sizeBytes) {
        DeviceSupport.checkGeometry(sizeBytes, blockSize);
        capacityBytes = sizeBytes;
        return sizeBytes;
    }

    @Override
    public boolean hasVolatileWriteCache() {
        return false;
    }

    @Override
    public void submit(BlockIo io) {
        if (closed) {
            io.complete(DeviceSupport.STATUS_CLOSED);
            return;
        }
        int status = DeviceSupport.check(io, capacityBytes, blockSize);
        if (status == NvmeStatus.SUCCESS && io.op() == BlockIo.Op.READ) {
            DeviceSupport.zero(io.buffer(), io.buffer().position(), (int) io.length());
        }
        io.complete(status);
    }

    @Override
    public void close() {
        closed = true;
    }

    @Override
    public String toString() {
        return description();
    }
}
