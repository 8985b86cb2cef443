package io.nvmeof4j.target.backend;

import io.nvmeof4j.jni.Errno;
import io.nvmeof4j.jni.NativeIoException;
import io.nvmeof4j.jni.bdev.Bdev;
import io.nvmeof4j.jni.bdev.BdevCompletionHandler;
import io.nvmeof4j.jni.bdev.BdevDescriptor;
import io.nvmeof4j.jni.bdev.BdevIoChannel;
import io.nvmeof4j.jni.bdev.BdevPollGroup;
import io.nvmeof4j.jni.bdev.UringOptions;
import io.nvmeof4j.protocol.command.NvmeStatus;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import io.nvmeof4j.target.reactor.Reactor;

import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A namespace on a regular file or a block device through the native io_uring block-device shim
 * ({@link Bdev#openUring}): O_DIRECT by default (or buffered), submitted and completed on the reactor thread
 * through the reactor's {@link BdevChannels}, from and into the transport's pool buffers (registered io_uring
 * fixed buffers): no worker threads, no copies, nothing allocated per I/O.
 *
 * <h2>Semantics</h2>
 * Write FUA → {@code RWF_DSYNC}; Flush → {@code fdatasync}; Write Zeroes → {@code fallocate(ZERO_RANGE)} (zeros
 * written where refused); Deallocate → {@code fallocate(PUNCH_HOLE)} on files, {@code BLKDISCARD} on block devices.
 * Short reads and writes are continued in C; Identify VWC = 1 (the page cache, or the device's own cache).
 *
 * <h2>Errors (errno → NVMe status, as nvmet's {@code errno_to_nvme_status})</h2>
 * ENOSPC/EDQUOT → Capacity Exceeded + DNR (0x4081); EOPNOTSUPP → Invalid Opcode + DNR; ENODATA (a medium error
 * from the block layer) → Access Denied; EIO, EINVAL (misaligned O_DIRECT: a configuration mismatch, never the
 * host's fault) and everything else → Internal Error + DNR (0x4006). A closed device → Namespace Not Ready;
 * a reactor with every io_uring slot in flight → Namespace Not Ready without DNR (the host retries).
 *
 * <h2>Threads</h2>
 * Submitted on a reactor thread, the I/O runs on that reactor's ring. Submitted elsewhere (tools, tests), it runs
 * synchronously on a private ring under a lock, completing before {@link #submit} returns.
 */
public final class UringBlockDevice implements BlockDevice, BdevCompletionHandler {
    private static final Logger LOG = LoggerFactory.getLogger(UringBlockDevice.class);
    private static final AtomicInteger NEXT_ID = new AtomicInteger();
    private static final long OFF_REACTOR_TIMEOUT_NANOS = TimeUnit.SECONDS.toNanos(60);

    private final int id = NEXT_ID.getAndIncrement();
    private final Path path;
    private final Bdev bdev;
    private final BdevDescriptor descriptor;
    private final long capacityBytes;
    private final int blockSize;
    private final RateLimitedLog errorLog = new RateLimitedLog(LOG);
    private volatile boolean closed;
    /** No new I/O: set by {@link #detach} or {@link #close()}. */
    private volatile boolean stopped;

    // Off-reactor submissions: a private ring, under this lock.
    private final Object offReactorLock = new Object();
    private BdevPollGroup offReactorGroup;
    private BdevIoChannel offReactorChannel;

    private UringBlockDevice(Path path, Bdev bdev, BdevDescriptor descriptor) {
        this.path = path;
        this.bdev = bdev;
        this.descriptor = descriptor;
        this.blockSize = bdev.blockSize();
        this.capacityBytes = bdev.sizeBytes();
    }

    /**
     * Opens (creating a missing file when {@code sizeBytes} is given) and locks the file or block device.
     *
     * @param sizeBytes 0: the whole file or device, rounded down to blocks; otherwise the namespace size (a shorter
     *                  file is extended, sparse)
     * @param blockSize 512 or 4096, or 0 for the device's logical block size (4096 for a regular file)
     * @param buffered  through the page cache instead of O_DIRECT
     */
    public static UringBlockDevice open(Path path, long sizeBytes, int blockSize, boolean buffered)
        throws NativeIoException {
        return open(path, sizeBytes, blockSize, buffered, false);
    }

    /**
     * As {@link #open(Path, long, int, boolean)}; with {@code shared} the file is locked shared instead of exclusive,
     * so a second daemon serving the same subsystem from the same file may open it too (and a daemon opening it
     * exclusively may not). Nothing else is coordinated between the two: see docs/high-availability.md.
     */
    public static UringBlockDevice open(Path path, long sizeBytes, int blockSize, boolean buffered, boolean shared)
        throws NativeIoException {
        UringOptions options = new UringOptions(buffered, blockSize, sizeBytes, sizeBytes > 0, false, shared);
        Bdev bdev;
        try {
            bdev = Bdev.openUring(path, options);
        } catch (NativeIoException e) {
            String why = switch (e.errno()) {
                case Errno.EBUSY -> shared ? "locked exclusively by another process (a namespace without "
                    + "\"shared\": true), or already open in this one"
                    : "locked by another process (or already open in this one; two daemons serving one file both need "
                    + "\"shared\": true in the namespace's device)";
                case Errno.EINVAL -> "block size " + blockSize + " is below the device's logical block size "
                    + "(O_DIRECT needs whole device blocks)";
                case Errno.ENOSPC -> "smaller than the configured size " + sizeBytes;
                case Errno.ENODEV -> "neither a regular file nor a block device";
                default -> null;
            };
            if (why == null) {
                throw e;
            }
            throw new NativeIoException("open " + path, e.errno(), why);
        }
        try {
            if (sizeBytes > 0 && sizeBytes % bdev.blockSize() != 0) {
                throw new IllegalArgumentException("size " + sizeBytes + " is not a multiple of the device's block size "
                    + bdev.blockSize());
            }
            if (!buffered && !bdev.isDirect()) {
                LOG.warn("{}: the file system does not support O_DIRECT (tmpfs before Linux 6.6?); using buffered I/O",
                    path);
            }
            return new UringBlockDevice(path, bdev, bdev.open(true));
        } catch (NativeIoException | RuntimeException e) {
            bdev.close();
            throw e;
        }
    }

    int id() {
        return id;
    }

    BdevDescriptor descriptor() {
        return descriptor;
    }

    public Path path() {
        return path;
    }

    /** True when I/O bypasses the page cache. */
    public boolean isDirect() {
        return bdev.isDirect();
    }

    @Override
    public String description() {
        return (bdev.isBlockDevice() ? "block device " : "file ") + path + (bdev.isDirect() ? "" : " (buffered)");
    }

    @Override
    public int blockSize() {
        return blockSize;
    }

    @Override
    public long blockCount() {
        return capacityBytes / blockSize;
    }

    @Override
    public boolean deallocatedBlocksReadZeroes() {
        // A punched hole reads zeroes; BLKDISCARD on an SSD need not (nvmet sets DLFEAT for a block device only
        // when it advertises write-zeroes-by-unmap, which user space cannot ask).
        return !bdev.isBlockDevice();
    }

    @Override
    public boolean hasVolatileWriteCache() {
        return true;
    }

    @Override
    public void submit(BlockIo io) {
        if (stopped) {
            io.complete(DeviceSupport.STATUS_CLOSED);
            return;
        }
        int status = DeviceSupport.check(io, capacityBytes, blockSize);
        if (status != NvmeStatus.SUCCESS) {
            io.complete(status);
            return;
        }
        BdevChannels channels = BdevChannels.current();
        if (channels == null) {
            if (Reactor.current() != null) {
                // A reactor without a ring (io_uring refused at start): never block a reactor on the private ring.
                io.complete(NvmeStatus.NAMESPACE_NOT_READY);
                return;
            }
            submitOffReactor(io);
            return;
        }
        int rc;
        try {
            rc = start(channels.channel(this), channels, io);
        } catch (NativeIoException | IllegalStateException e) {
            errorLog.error("{}: no I/O channel on this reactor: {}", path, e.toString());
            io.complete(DeviceSupport.STATUS_CLOSED);
            return;
        }
        if (rc != 0) {
            io.complete(rc == -Errno.EBUSY ? NvmeStatus.NAMESPACE_NOT_READY : statusFor(io.op(), -rc));
        }
    }

    private int start(BdevIoChannel ch, BdevChannels channels, BlockIo io) {
        ByteBuffer buffer = io.buffer();
        switch (io.op()) {
            case READ:
            case WRITE: {
                int length = (int) io.length();
                int index = buffer.position();
                long regionOffset = channels == null ? -1 : channels.regionOffset(buffer);
                boolean write = io.op() == BlockIo.Op.WRITE;
                if (regionOffset >= 0) {
                    return write ? ch.writeRegion(io.offset(), regionOffset + index, length, io.forceUnitAccess(), io)
                        : ch.readRegion(io.offset(), regionOffset + index, length, io);
                }
                return write ? ch.write(io.offset(), buffer, index, length, io.forceUnitAccess(), io)
                    : ch.read(io.offset(), buffer, index, length, io);
            }
            case FLUSH:
                return ch.flush(io);
            case WRITE_ZEROES:
                return ch.writeZeroes(io.offset(), io.length(), io.forceUnitAccess(), io);
            case DEALLOCATE:
                return ch.unmap(io.offset(), io.length(), io);
            default:
                return -Errno.EINVAL;
        }
    }

    /** Completion from a reactor's ring (or the private one): on that thread. */
    @Override
    public void onBdevComplete(Object context, int op, int result) {
        BlockIo io = (BlockIo) context;
        int status = NvmeStatus.SUCCESS;
        if (result < 0) {
            status = statusFor(io.op(), -result);
            errorLog.error("{}: {} of {} bytes at offset {} failed: {} -> {}", path, io.op(), io.length(),
                io.offset(), Errno.describe(-result), NvmeStatus.describe(status));
        }
        io.complete(status);
    }

    /** nvmet's {@code errno_to_nvme_status} (drivers/nvme/target/core.c). */
    static int statusFor(BlockIo.Op op, int errno) {
        switch (errno) {
            case 0:
                return NvmeStatus.SUCCESS;
            case Errno.ENOSPC:
            case 122: // EDQUOT: the host sees a full device either way
                return NvmeStatus.CAPACITY_EXCEEDED | NvmeStatus.DNR;
            case 121: // EREMOTEIO: the block layer's "critical target" error
                return NvmeStatus.LBA_OUT_OF_RANGE | NvmeStatus.DNR;
            case Errno.ERANGE: // the shim's own bound check; the command layer checks first
                return NvmeStatus.LBA_OUT_OF_RANGE | NvmeStatus.DNR;
            case Errno.EOPNOTSUPP:
                return NvmeStatus.INVALID_OPCODE | NvmeStatus.DNR;
            case Errno.ENODATA:
                return NvmeStatus.ACCESS_DENIED;
            case Errno.EIO:
            default:
                return NvmeStatus.INTERNAL_ERROR | NvmeStatus.DNR;
        }
    }

    private void submitOffReactor(BlockIo io) {
        synchronized (offReactorLock) {
            try {
                if (offReactorGroup == null) {
                    offReactorGroup = new BdevPollGroup(4, null);
                    offReactorChannel = descriptor.ioChannel(offReactorGroup, this);
                }
                int rc = start(offReactorChannel, null, io);
                if (rc != 0) {
                    io.complete(statusFor(io.op(), -rc));
                    return;
                }
                long deadline = System.nanoTime() + OFF_REACTOR_TIMEOUT_NANOS;
                while (offReactorGroup.inFlight() > 0) {
                    offReactorGroup.await(TimeUnit.MILLISECONDS.toNanos(10));
                    offReactorGroup.poll();
                    if (System.nanoTime() - deadline > 0) {
                        LOG.error("{}: an I/O submitted off the reactors did not complete in 60 s", path);
                        return;
                    }
                }
            } catch (NativeIoException e) {
                errorLog.error("{}: cannot set up an io_uring for I/O off the reactors: {}", path, e.toString());
                io.complete(NvmeStatus.INTERNAL_ERROR);
            }
        }
    }

    /**
     * Takes the device out of service on running reactors, before {@link #close()} while the reactors keep running
     * (live namespace removal): from now on new I/O completes with Namespace Not Ready, and each reactor waits for
     * the I/O its channel has in flight, then closes that channel. Returns false when a reactor did not finish by the
     * timeout (or refused the task): the native channel and descriptor may still be in use, so the caller must not
     * close the device (it leaks it and says so).
     */
    public boolean detach(List<Reactor> reactors, Duration timeout) throws InterruptedException {
        stopped = true; // before the tasks: a reactor that runs a submit after its task sees it (same thread)
        long deadline = System.nanoTime() + timeout.toNanos();
        CountDownLatch done = new CountDownLatch(reactors.size());
        AtomicBoolean allClosed = new AtomicBoolean(true);
        for (Reactor reactor : reactors) {
            BdevChannels channels = reactor.pollGroup(BdevChannels.class);
            if (channels == null || !reactor.isRunning()) {
                done.countDown(); // no ring here, or the reactor closes its channels itself as it stops
                continue;
            }
            try {
                reactor.execute(() -> {
                    if (!channels.closeChannel(this, deadline)) {
                        allClosed.set(false);
                    }
                    done.countDown();
                });
            } catch (RejectedExecutionException e) {
                if (reactor.isRunning()) {
                    allClosed.set(false);
                }
                done.countDown();
            }
        }
        boolean inTime = done.await(timeout.toNanos() + TimeUnit.SECONDS.toNanos(1), TimeUnit.NANOSECONDS);
        return inTime && allClosed.get();
    }

    /**
     * Closes the descriptor and the device ({@code fsync}). The reactors' channels must be closed first: the daemon
     * stops its reactors before closing devices, and {@link #detach} closes them on running reactors. Idempotent.
     */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        stopped = true;
        synchronized (offReactorLock) {
            if (offReactorGroup != null) {
                offReactorGroup.close();
                offReactorChannel.close();
            }
        }
        descriptor.close();
        try {
            bdev.close();
        } catch (IllegalStateException e) {
            LOG.error("{}: final fsync failed: {}", path, e.getMessage());
        }
    }

    @Override
    public String toString() {
        return description();
    }
}
