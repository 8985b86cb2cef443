package io.nvmeof4j.target.controller;

import io.nvmeof4j.protocol.command.NvmeStatus;
import io.nvmeof4j.target.backend.BlockDevice;
import io.nvmeof4j.target.backend.BlockIo;

/** A tiny in-test RAM block device: completes every I/O inline. */
public final class RamDevice implements BlockDevice {
    private final int blockSize;
    private final byte[] bytes;
    private final boolean volatileCache;

    public RamDevice(int blockSize, long blocks, boolean volatileCache) {
        this.blockSize = blockSize;
        this.bytes = new byte[Math.toIntExact(blockSize * blocks)];
        this.volatileCache = volatileCache;
    }

    @Override
    public String description() {
        return "test ram " + bytes.length + " B";
    }

    @Override
    public int blockSize() {
        return blockSize;
    }

    @Override
    public long blockCount() {
        return bytes.length / blockSize;
    }

    @Override
    public boolean hasVolatileWriteCache() {
        return volatileCache;
    }

    @Override
    public void submit(BlockIo io) {
        int offset = Math.toIntExact(io.offset());
        int length = Math.toIntExact(io.length());
        switch (io.op()) {
            case READ:
                for (int i = 0; i < length; i++) {
                    io.buffer().put(io.buffer().position() + i, bytes[offset + i]);
                }
                break;
            case WRITE:
                for (int i = 0; i < length; i++) {
                    bytes[offset + i] = io.buffer().get(io.buffer().position() + i);
                }
                break;
            case WRITE_ZEROES:
            case DEALLOCATE:
                java.util.Arrays.fill(bytes, offset, offset + length, (byte) 0);
                break;
            default:
                break;
        }
        io.complete(NvmeStatus.SUCCESS);
    }

    public byte get(long byteOffset) {
        return bytes[Math.toIntExact(byteOffset)];
    }

    @Override
    public void close() {
    }
}
