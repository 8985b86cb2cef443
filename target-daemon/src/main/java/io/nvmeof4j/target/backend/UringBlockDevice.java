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
import io.nvmeof4j.protocol.log.RateLimitedLog;
import io.nvmeof4j.protocol.spi.JvmOptions;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import io.nvmeof4j.target.reactor.Reactor;

import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;

/**
 * A namespace on a regular file or a block device through the native io_uring block-device shim
 * ({@link Bdev#openUring}): O_DIRECT by default (or buffered), submitted and completed on the reactor thread
 * through the reactor's {@link BdevChannels}, from and into the transport's pool buffers (registered io_uring
 * fixed buffers): no worker threads, no copies, nothing allocated per I/O.
 *
 * <h2>Semantics</h2>
 * Write FUA → {@code RWF_DSYNC}; Flush → {@code fdatasync}; Write Zeroes → {@code fallocate(ZERO_RANGE)} (zeros
 * written where refused); Deallocate → {@code fallocate(PUNCH_HOLE)} on files, a discard on block devices: io_uring's
 * block discard command (Linux 6.12+), else {@code BLKDISCARD} on a {@link BlockingWorkers} thread, never on the
 * reactor (the ioctl blocks for as long as the discard takes). Short reads and writes are continued in C;
 * Identify VWC = 1 (the page cache, or the device's own cache).
 *
 * <h2>Waiting, not failing</h2>
 * An I/O that finds the reactor's ring full waits in the reactor's FIFO ({@link BdevChannels}) and is submitted when
 * a completion frees a slot: no command fails because of the target's internal queue depth.
 *
 * <h2>Errors (errno → NVMe status, as nvmet's {@code errno_to_nvme_status})</h2>
 * ENOSPC/EDQUOT → Capacity Exceeded + DNR (0x4081); EOPNOTSUPP → Invalid Opcode + DNR; ENODATA (a medium error
 * from the block layer) → Access Denied; EIO, EINVAL (misaligned O_DIRECT: a configuration mismatch, never the
 * host's fault) and everything else → Internal Error + DNR (0x4006). A closed device → Namespace Not Ready.
 *
 * <h2>Closing</h2>
 * {@link #close()} waits for discards on the workers, then syncs ({@code fsync}) and closes the file on a separate
 * thread, waiting at most {@value #FINAL_SYNC_TIMEOUT_PROP_NAME} (default {@value #FINAL_SYNC_TIMEOUT_MS_DEFAULT} ms).
 * Past that bound close returns and says so; the file stays open (and locked) until the sync returns, and that thread
 * then closes it. A disk that never answers keeps the file and one thread, never the shutdown.
 *
 * <h2>Threads</h2>
 * Submitted on a reactor thread, the I/O runs on that reactor's ring. Submitted elsewhere (tools, tests), it runs
 * synchronously on a private ring under a lock, completing before {@link #submit} returns.
 */
public final class UringBlockDevice implements BlockDevice, BdevCompletionHandler {
    private static final Logger LOG = LoggerFactory.getLogger(UringBlockDevice.class);
    private static final AtomicInteger NEXT_ID = new AtomicInteger();
    private static final long OFF_REACTOR_TIMEOUT_NANOS = TimeUnit.SECONDS.toNanos(60);
    /** System property: how long {@link #close()} waits for the final fsync, in ms. */
    public static final String FINAL_SYNC_TIMEOUT_PROP_NAME = "nvmeof4j.final_sync_timeout_ms";
    public static final long FINAL_SYNC_TIMEOUT_MS_DEFAULT = 10_000;
    /** Largest {@value #FINAL_SYNC_TIMEOUT_PROP_NAME}: an hour, so the deadline arithmetic cannot overflow. */
    public static final long FINAL_SYNC_TIMEOUT_MS_MAX = 3_600_000;
    /** System property: false makes block devices discard as on kernels without io_uring's command (tests). */
    public static final String DISCARD_COMMAND_PROP_NAME = "nvmeof4j.io_uring.discard_command";

    private final int id = NEXT_ID.getAndIncrement();
    private final Path path;
    private final Bdev bdev;
    private final BdevDescriptor descriptor;
    /** Changed by {@link #resize}; read once per I/O. */
    private volatile long capacityBytes;
    private final int blockSize;
    /** One line a second for this device's errors; the ones between are counted, not formatted. */
    private final RateLimitedLog errorLog = new RateLimitedLog(LOG);
    /** Discards handed to {@link BlockingWorkers} and not yet handed back. */
    private final AtomicInteger blockingInFlight = new AtomicInteger();
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
        return open(path, sizeBytes, blockSize, buffered, UringOptions.Confinement.NONE, false);
    }

    /**
     * As {@link #open(Path, long, int, boolean)}, for a path checked against the allowed directories: see
     * {@link UringOptions#confinement()} (no symlink followed; a file created only if still absent). With
     * {@code shared} the file is locked shared instead of exclusive, so a second daemon serving the same subsystem
     * from the same file may open it too (and a daemon opening it exclusively may not). Nothing else is coordinated
     * between the two: see docs/high-availability.md.
     */
    public static UringBlockDevice open(Path path, long sizeBytes, int blockSize, boolean buffered,
                                        UringOptions.Confinement confinement, boolean shared) throws NativeIoException {
        boolean create = sizeBytes > 0 && (confinement == UringOptions.Confinement.NONE || !Files.exists(path,
            LinkOption.NOFOLLOW_LINKS));
        UringOptions options = new UringOptions(buffered, blockSize, sizeBytes, create, false, confinement,
            discardCommandFromProperty(), shared);
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
                case Errno.ENODEV -> confinement == UringOptions.Confinement.NONE
                    ? "neither a regular file nor a block device"
                    : "no longer the " + (confinement == UringOptions.Confinement.BLOCK_DEVICE ? "block device"
                        : "regular file") + " that was checked";
                case Errno.ELOOP -> "a path component became a symbolic link after the check";
                case Errno.EEXIST -> "the file appeared after the check";
                case Errno.EMLINK -> "has more than one hard link (another name may lie outside the allowed "
                    + "directories)";
                case Errno.ENOSYS -> "this kernel has no openat2 (Linux 5.6+), needed to open a confined path safely";
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
            boolean created = bdev.created();
            try {
                bdev.close();
            } catch (IllegalStateException closing) {
                e.addSuppressed(closing);
            }
            if (created) {
                try {
                    Files.deleteIfExists(path); // a failed open leaves nothing behind
                } catch (java.io.IOException deleting) {
                    e.addSuppressed(deleting);
                }
            }
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

    /**
     * SPDK's {@code bdev_aio_rescan}/{@code bdev_uring_rescan} (0: the file's or device's size now) or a given size
     * no larger than the file: the native device checks I/O against the new size from now on.
     */
    @Override
    public long resize(long sizeBytes) throws NativeIoException {
        capacityBytes = bdev.resize(sizeBytes);
        return capacityBytes;
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
        BdevChannels channels = BdevChannels.bound(io);
        if (channels == null) {
            if (Reactor.current() != null) {
                // A reactor without a ring (io_uring refused at start): never block a reactor on the private ring.
                io.complete(NvmeStatus.NAMESPACE_NOT_READY);
                return;
            }
            submitOffReactor(io);
            return;
        }
        if (channels.hasWaiting()) {
            channels.park(io, this); // behind the I/Os already waiting for a ring slot
            return;
        }
        submitOn(channels, io);
    }

    /** Starts {@code io} on the reactor's ring; returns false when the ring is full and it was parked to wait. */
    private boolean submitOn(BdevChannels channels, BlockIo io) {
        int rc;
        try {
            rc = start(channels.boundChannel(io, this), channels, io);
        } catch (NativeIoException | IllegalStateException e) {
            errorLog.error("{}: no I/O channel on this reactor: {}", path, e.toString());
            io.complete(DeviceSupport.STATUS_CLOSED);
            return true;
        }
        if (rc == -Errno.EBUSY) {
            channels.park(io, this);
            return false;
        }
        if (rc != 0) {
            io.complete(statusFor(io.op(), -rc));
        }
        return true;
    }

    /**
     * Opens this device's channel on {@code channels} ahead of its first I/O there (a queue of its subsystem connected
     * on that reactor), unless it has one or the device is out of service: {@link #detach} sets {@link #stopped}
     * before it asks each reactor to close its channel, so a reactor opening one after that task ran sees it (same
     * thread) and opens nothing. Reactor thread.
     */
    void openChannel(BdevChannels channels) {
        if (stopped) {
            return;
        }
        try {
            channels.channel(this);
        } catch (NativeIoException | IllegalStateException e) {
            // The first I/O tries again, and answers Namespace Not Ready if it cannot either.
            errorLog.error("{}: no I/O channel on this reactor yet: {}", path, e.toString());
        }
    }

    /**
     * A parked I/O's turn ({@link BdevChannels#poll()}, a ring slot is free). Returns false when it had to park
     * again. Reactor thread.
     */
    boolean resume(BlockIo io, BdevChannels channels) {
        if (stopped) {
            io.complete(DeviceSupport.STATUS_CLOSED);
            return true;
        }
        return submitOn(channels, io);
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
        if (result == Bdev.RESULT_BLOCKING) {
            Reactor reactor = Reactor.current();
            if (reactor == null) {
                io.complete(runBlocking(io)); // a tool's thread: blocking it is what it asked for
            } else {
                blockingInFlight.incrementAndGet();
                BlockingWorkers.submit(io, this, reactor);
            }
            return;
        }
        io.complete(result < 0 ? failed(io, -result) : NvmeStatus.SUCCESS);
    }

    /** The operation the kernel does synchronously (BLKDISCARD), on a worker thread. Returns the NVMe status. */
    int runBlocking(BlockIo io) {
        if (io.op() != BlockIo.Op.DEALLOCATE) {
            return NvmeStatus.INTERNAL_ERROR | NvmeStatus.DNR; // the shim defers nothing else
        }
        int rc = bdev.discardBlocking(io.offset(), io.length());
        return rc < 0 ? failed(io, -rc) : NvmeStatus.SUCCESS;
    }

    /** A worker finished one of this device's operations and handed it back. */
    void blockingDone() {
        blockingInFlight.decrementAndGet();
    }

    /** The status for a failed I/O, logged at most once a second; allocates nothing when not logged. */
    private int failed(BlockIo io, int errno) {
        int status = statusFor(io.op(), errno);
        // admit before any argument is boxed or formatted: a failing disk costs no allocation per failed I/O.
        long skipped = errorLog.admit(null);
        if (skipped == RateLimitedLog.SUPPRESSED) {
            return status;
        }
        errorLog.logger().error("{}: {} of {} bytes at offset {} failed: {} -> {} ({} lines suppressed before this "
            + "one)", path, io.op(), io.length(), io.offset(), Errno.describe(errno), NvmeStatus.describe(status),
            skipped);
        return status;
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
        return inTime && allClosed.get() && awaitBlocking(deadline);
    }

    /** Waits until no discard of this device is on a worker, or {@code deadlineNanos}; true when none is. */
    private boolean awaitBlocking(long deadlineNanos) {
        while (blockingInFlight.get() > 0) {
            if (System.nanoTime() - deadlineNanos > 0) {
                return false;
            }
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(1));
        }
        return true;
    }

    /** {@value #DISCARD_COMMAND_PROP_NAME}, else true. */
    public static boolean discardCommandFromProperty() {
        return JvmOptions.booleanOption(DISCARD_COMMAND_PROP_NAME, true);
    }

    /** {@value #FINAL_SYNC_TIMEOUT_PROP_NAME} (0..{@value #FINAL_SYNC_TIMEOUT_MS_MAX}), else the default. */
    public static long finalSyncTimeoutMillisFromProperty() {
        return JvmOptions.longOption(FINAL_SYNC_TIMEOUT_PROP_NAME, FINAL_SYNC_TIMEOUT_MS_DEFAULT, 0,
            FINAL_SYNC_TIMEOUT_MS_MAX);
    }

    /**
     * Closes the descriptor and the device ({@code fsync}), each wait bounded (see "Closing" above). The reactors'
     * channels must be closed first: the daemon stops its reactors before closing devices, and {@link #detach}
     * closes them on running reactors. Idempotent.
     */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        stopped = true;
        long timeoutMs = finalSyncTimeoutMillisFromProperty();
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
        if (!awaitBlocking(deadline)) {
            LOG.error("{}: a discard on a worker thread did not finish within {} ms; the device stays open (leaked) "
                + "so the worker never uses a closed file", path, timeoutMs);
            return;
        }
        synchronized (offReactorLock) {
            if (offReactorGroup != null) {
                offReactorGroup.close();
                offReactorChannel.close();
            }
        }
        descriptor.close();
        CountDownLatch synced = new CountDownLatch(1);
        Thread closer = new Thread(() -> {
            try {
                bdev.close();
            } catch (IllegalStateException e) {
                LOG.error("{}: final fsync failed: {}", path, e.getMessage());
            } finally {
                synced.countDown();
            }
        }, "nvmeof-close-" + path.getFileName());
        closer.setDaemon(true);
        closer.start();
        boolean inTime;
        try {
            inTime = synced.await(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            inTime = false;
        }
        if (!inTime) {
            LOG.error("{}: the final fsync did not return within {} ms; closing goes on without it. The file stays "
                + "open and locked until the fsync returns (thread {} then closes it); writes not yet on the disk "
                + "are lost if the machine fails first", path, timeoutMs, closer.getName());
        }
    }

    @Override
    public String toString() {
        return description();
    }
}
