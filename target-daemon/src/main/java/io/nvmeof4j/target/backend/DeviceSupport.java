package io.nvmeof4j.target.backend;

import io.nvmeof4j.protocol.command.NvmeStatus;

import java.nio.ByteBuffer;

/** Checks and helpers every block device shares. */
final class DeviceSupport {
    /** What I/O submitted to a closed device completes with: retryable, the namespace is going away. */
    static final int STATUS_CLOSED = NvmeStatus.NAMESPACE_NOT_READY;

    /** Zero source for reads of unwritten ranges and for zeroing; only read with absolute bulk operations. */
    private static final ByteBuffer ZEROES = ByteBuffer.allocateDirect(64 * 1024).asReadOnlyBuffer();

    private DeviceSupport() {
    }

    static void checkGeometry(long sizeBytes, int blockSize) {
        if (blockSize < 512 || blockSize > 65536 || Integer.bitCount(blockSize) != 1) {
            throw new IllegalArgumentException("block size " + blockSize + " is not a power of two in 512..65536");
        }
        if (sizeBytes < blockSize || sizeBytes % blockSize != 0) {
            throw new IllegalArgumentException("size " + sizeBytes + " is not a positive multiple of the block size "
                + blockSize);
        }
    }

    /**
     * SUCCESS when {@code io} fits the device and its buffer; otherwise the status to complete it with. The
     * command layer checks the LBA range first, so a failure here is a bug caller-side, reported as such.
     */
    static int check(BlockIo io, long capacityBytes, int blockSize) {
        BlockIo.Op op = io.op();
        if (op == null) {
            return NvmeStatus.INTERNAL_ERROR | NvmeStatus.DNR;
        }
        if (op == BlockIo.Op.FLUSH) {
            return NvmeStatus.SUCCESS;
        }
        long offset = io.offset();
        long length = io.length();
        if (offset < 0 || length < 0 || length > capacityBytes - offset) {
            return NvmeStatus.LBA_OUT_OF_RANGE | NvmeStatus.DNR;
        }
        if (((offset | length) & (blockSize - 1)) != 0) {
            return NvmeStatus.INVALID_FIELD | NvmeStatus.DNR;
        }
        if (op == BlockIo.Op.READ || op == BlockIo.Op.WRITE) {
            ByteBuffer buffer = io.buffer();
            if (buffer == null || buffer.remaining() < length) {
                return NvmeStatus.INTERNAL_ERROR | NvmeStatus.DNR;
            }
        }
        return NvmeStatus.SUCCESS;
    }

    /** Writes {@code length} zero bytes into {@code dst} at absolute {@code index}; positions untouched. */
    static void zero(ByteBuffer dst, int index, int length) {
        int chunk = ZEROES.capacity();
        while (length > 0) {
            int n = Math.min(chunk, length);
            dst.put(index, ZEROES, 0, n);
            index += n;
            length -= n;
        }
    }

    /** "1 GiB", "64 MiB", "4096 B": for descriptions and logs. */
    static String formatSize(long bytes) {
        String[] units = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
        int unit = 0;
        long value = bytes;
        while (unit < units.length - 1 && value >= 1024 && value % 1024 == 0) {
            value /= 1024;
            unit++;
        }
        return value + " " + units[unit];
    }
}
