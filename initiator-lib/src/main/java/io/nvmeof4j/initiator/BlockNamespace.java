package io.nvmeof4j.initiator;

import java.nio.ByteBuffer;
import java.util.concurrent.CompletableFuture;

/**
 * Block I/O on one namespace, over one path ({@link NvmeofNamespace}) or several ({@link MultipathNamespace}).
 * The callback methods allocate nothing per I/O and return false, without side effects, when no request slot is
 * free; see {@link NvmeofNamespace} for the buffer and threading rules, which both follow.
 */
public interface BlockNamespace {
    int nsid();

    /** Bytes per logical block. */
    int blockSize();

    /** NSZE in logical blocks. */
    long blockCount();

    boolean submitRead(long lba, int blocks, ByteBuffer dst, IoCallback callback, Object context);

    boolean submitWrite(long lba, int blocks, ByteBuffer src, boolean forceUnitAccess, IoCallback callback,
                        Object context);

    boolean submitFlush(IoCallback callback, Object context);

    /** Reads {@code dst.remaining()} bytes (whole blocks) at {@code lba}. */
    CompletableFuture<Void> read(long lba, ByteBuffer dst);

    /** Writes {@code src.remaining()} bytes (whole blocks) to {@code lba}. */
    CompletableFuture<Void> write(long lba, ByteBuffer src, boolean forceUnitAccess);
}
