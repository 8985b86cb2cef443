package io.nvmeof4j.target.backend;

import io.nvmeof4j.protocol.command.NvmeStatus;
import org.agrona.concurrent.ManyToManyConcurrentArrayQueue;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

/**
 * A namespace on a regular file or a block device, through {@link FileChannel} positional I/O (page cache, so the
 * device has a volatile write cache: Identify VWC = 1 and the host sends Flush).
 * <p>Reactors never block: {@link #submit} puts the {@link BlockIo} itself on a bounded lock-free queue (nothing is
 * allocated per I/O; Agrona's {@link ManyToManyConcurrentArrayQueue}: every reactor produces, every worker consumes)
 * and a small pool of dedicated worker threads performs the system calls and completes the I/O from their thread.
 * Idle workers park; a submitter unparks one.
 *
 * <h2>Semantics</h2>
 * <ul>
 *   <li>FUA writes go through a second channel opened with {@code O_DSYNC}: only that write's data (and the
 *       metadata needed to read it back) is made durable, instead of {@code fdatasync} flushing every dirty page
 *       of the file as {@code force(false)} would.</li>
 *   <li>Flush is {@code force(false)} ({@code fdatasync}).</li>
 *   <li>Write Zeroes and Deallocate write zeros in bounded chunks from a shared zero buffer; reads of a
 *       deallocated range return zeros, as Identify Namespace DLFEAT promises. Pure Java cannot punch holes, with
 *       one exception used here: a range running to the end of a regular file the namespace spans exactly is
 *       deallocated by truncating the file and extending it again (sparse), which makes the whole-device discard
 *       {@code mkfs} and {@code blkdiscard} send instant and returns the disk space.</li>
 *   <li>Short reads and writes are looped to completion; a read past the end of a file that shrank underneath us
 *       returns zeros.</li>
 * </ul>
 *
 * <h2>Errors (IOException → NVMe status)</h2>
 * <ul>
 *   <li>ENOSPC / EDQUOT → Capacity Exceeded + DNR (0x081): what nvmet answers, and the Linux host turns it into
 *       {@code ENOSPC} for the file system above, which is what it should see on a thin file that filled its disk.</li>
 *   <li>other read errors → Unrecovered Read Error + DNR (0x281); other write, zeroing errors → Write Fault + DNR
 *       (0x280); flush errors → Internal Error + DNR (0x006, as nvmet). The host maps the media errors to
 *       {@code BLK_STS_MEDIUM}; DNR because retrying the same failing I/O does not help.</li>
 *   <li>I/O submitted after {@link #close()} → Namespace Not Ready (0x082, retryable: the namespace is going away).</li>
 * </ul>
 */
public final class FileBlockDevice implements BlockDevice {
    private static final Logger LOG = LoggerFactory.getLogger(FileBlockDevice.class);

    /** Idle workers re-check for shutdown this often even without an unpark. */
    private static final long WORKER_PARK_NANOS = TimeUnit.MILLISECONDS.toNanos(100);
    private static final int ZERO_WRITE_SIZE = 256 * 1024;

    /** Settings of one file device. */
    public record Options(int workers, int queueCapacity, Duration closeTimeout) {
        public static final int WORKERS_DEFAULT = 2;
        public static final int QUEUE_CAPACITY_DEFAULT = 4096;
        public static final Duration CLOSE_TIMEOUT_DEFAULT = Duration.ofSeconds(10);

        public Options {
            if (workers < 1 || workers > 64) {
                throw new IllegalArgumentException("workers " + workers + " outside 1..64");
            }
            if (queueCapacity < 2) {
                throw new IllegalArgumentException("queue capacity " + queueCapacity + " < 2");
            }
            if (closeTimeout.isNegative()) {
                throw new IllegalArgumentException("negative close timeout");
            }
        }

        public static Options defaults() {
            return new Options(WORKERS_DEFAULT, QUEUE_CAPACITY_DEFAULT, CLOSE_TIMEOUT_DEFAULT);
        }

        public Options withWorkers(int count) {
            return new Options(count, queueCapacity, closeTimeout);
        }
    }

    private static final class ZeroSource {
        static final ByteBuffer BUFFER = ByteBuffer.allocateDirect(ZERO_WRITE_SIZE).asReadOnlyBuffer();
    }

    private final Path path;
    private final RandomAccessFile file;
    private final FileChannel channel;
    private final FileChannel dsyncChannel;
    private final FileLock lock;
    private final long capacityBytes;
    private final int blockSize;
    private final boolean tailTruncation;
    private final Duration closeTimeout;
    private final ManyToManyConcurrentArrayQueue<BlockIo> queue;
    private final Worker[] workers;
    private final AtomicLong inFlight = new AtomicLong();
    private final AtomicBoolean closing = new AtomicBoolean();
    private volatile boolean stopping;
    private final RateLimitedLog errorLog = new RateLimitedLog(LOG);

    private FileBlockDevice(Path path, RandomAccessFile file, FileChannel dsyncChannel, FileLock lock,
                            long capacityBytes, int blockSize, boolean tailTruncation, Options options) {
        this.path = path;
        this.file = file;
        this.channel = file.getChannel();
        this.dsyncChannel = dsyncChannel;
        this.lock = lock;
        this.capacityBytes = capacityBytes;
        this.blockSize = blockSize;
        this.tailTruncation = tailTruncation;
        this.closeTimeout = options.closeTimeout();
        this.queue = new ManyToManyConcurrentArrayQueue<>(options.queueCapacity());
        this.workers = new Worker[options.workers()];
        String threadPrefix = "nvmeof-file-" + path.getFileName() + "-";
        for (int i = 0; i < workers.length; i++) {
            workers[i] = new Worker(threadPrefix + i);
        }
        for (Worker w : workers) {
            w.start();
        }
    }

    /**
     * Opens (and if needed creates or extends) the file, locks it against a second user, starts the workers.
     *
     * @param sizeBytes namespace size; 0 or less: the file's (or block device's) size, rounded down to blocks.
     *                  A missing file is created (sparse) with this size, a shorter one extended (sparse), a longer
     *                  one is used up to this size and never truncated.
     * @throws IOException naming the path and what went wrong
     */
    public static FileBlockDevice open(Path path, long sizeBytes, int blockSize, Options options) throws IOException {
        if (sizeBytes > 0) {
            DeviceSupport.checkGeometry(sizeBytes, blockSize);
        } else {
            DeviceSupport.checkGeometry(blockSize, blockSize);
        }
        boolean existed = Files.exists(path);
        if (!existed && sizeBytes <= 0) {
            throw new NoSuchFileException(path.toString(), null, "does not exist and no size was given to create it");
        }
        RandomAccessFile file = new RandomAccessFile(path.toFile(), "rw");
        FileChannel dsync = null;
        FileLock lock = null;
        try {
            try {
                lock = file.getChannel().tryLock();
            } catch (OverlappingFileLockException e) {
                throw new IOException(path + " is already open in this process", e);
            }
            if (lock == null) {
                throw new IOException(path + " is locked by another process");
            }
            boolean regular = Files.isRegularFile(path);
            long length = regular ? file.length() : blockDeviceSize(path, file.getChannel());
            long capacity;
            if (sizeBytes > 0) {
                if (length < sizeBytes) {
                    if (!regular && length > 0) {
                        throw new IOException(path + " has " + length + " bytes, fewer than the configured size "
                            + sizeBytes);
                    }
                    if (regular) {
                        file.setLength(sizeBytes);
                        if (existed) {
                            LOG.info("{}: extended from {} to {} bytes (sparse)", path, length, sizeBytes);
                        }
                        length = sizeBytes;
                    }
                } else if (length > sizeBytes) {
                    LOG.info("{}: {} bytes, namespace uses the first {}", path, length, sizeBytes);
                }
                capacity = sizeBytes;
            } else {
                capacity = length - length % blockSize;
                if (capacity == 0) {
                    throw new IOException(path + " has " + length + " bytes, less than one " + blockSize
                        + "-byte block; give a size to extend it");
                }
                if (capacity != length) {
                    LOG.warn("{}: {} bytes is not a multiple of the block size {}; the last {} bytes are unused",
                        path, length, blockSize, length - capacity);
                }
            }
            dsync = FileChannel.open(path, StandardOpenOption.WRITE, StandardOpenOption.DSYNC);
            return new FileBlockDevice(path, file, dsync, lock, capacity, blockSize, regular && length == capacity,
                options);
        } catch (IOException | RuntimeException e) {
            closeQuietly(dsync);
            closeQuietly(file);
            if (!existed) {
                try {
                    Files.deleteIfExists(path);
                } catch (IOException suppressed) {
                    e.addSuppressed(suppressed);
                }
            }
            throw e;
        }
    }

    /** JDK 17 reports 0 as a block device's size on some paths; fall back to sysfs (512-byte sectors). */
    private static long blockDeviceSize(Path path, FileChannel channel) throws IOException {
        long size = channel.size();
        if (size > 0) {
            return size;
        }
        Path name = path.toRealPath().getFileName();
        Path sectors = Path.of("/sys/class/block", name.toString(), "size");
        try {
            return Long.parseLong(Files.readString(sectors).trim()) * 512;
        } catch (IOException | NumberFormatException e) {
            return 0;
        }
    }

    public Path path() {
        return path;
    }

    @Override
    public String description() {
        return "file " + path;
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
    public boolean hasVolatileWriteCache() {
        return true;
    }

    /** I/O queued or executing (a gauge). */
    public long inFlight() {
        return inFlight.get();
    }

    @Override
    public void submit(BlockIo io) {
        inFlight.incrementAndGet();
        if (closing.get()) {
            inFlight.decrementAndGet();
            io.complete(DeviceSupport.STATUS_CLOSED);
            return;
        }
        int status = DeviceSupport.check(io, capacityBytes, blockSize);
        if (status != NvmeStatus.SUCCESS) {
            inFlight.decrementAndGet();
            io.complete(status);
            return;
        }
        if (!queue.offer(io)) {
            inFlight.decrementAndGet();
            errorLog.error("{}: {} I/Os queued, the worker queue is full; completing with a retryable error", path,
                queue.capacity());
            io.complete(NvmeStatus.INTERNAL_ERROR);
            return;
        }
        // The offer (a volatile CAS) precedes this volatile read; a worker publishes "parked" before re-checking
        // the queue. So either it sees our element or we see it parked.
        for (Worker w : workers) {
            if (w.parked && w.claim()) {
                LockSupport.unpark(w);
                return;
            }
        }
    }

    private final class Worker extends Thread {
        private final ByteBuffer zeroes = ZeroSource.BUFFER.duplicate();
        private volatile boolean parked;
        private final AtomicBoolean claimed = new AtomicBoolean();

        Worker(String name) {
            super(name);
            setDaemon(true);
        }

        boolean claim() {
            return claimed.compareAndSet(false, true);
        }

        @Override
        public void run() {
            while (true) {
                BlockIo io = queue.poll();
                if (io != null) {
                    execute(io);
                    continue;
                }
                if (stopping && queue.isEmpty()) {
                    return;
                }
                claimed.set(false);
                parked = true;
                if (queue.isEmpty() && !stopping) {
                    LockSupport.parkNanos(this, WORKER_PARK_NANOS);
                }
                parked = false;
            }
        }

        private void execute(BlockIo io) {
            int status;
            try {
                status = perform(io);
            } catch (IOException e) {
                status = statusFor(io.op(), e);
                errorLog.error("{}: {} of {} bytes at offset {} failed: {} -> {}", path, io.op(), io.length(),
                    io.offset(), e.toString(), NvmeStatus.describe(status));
            } catch (RuntimeException e) {
                status = NvmeStatus.INTERNAL_ERROR | NvmeStatus.DNR;
                errorLog.error("{}: {} of {} bytes at offset {} failed unexpectedly: {}", path, io.op(), io.length(),
                    io.offset(), e.toString(), e);
            }
            try {
                io.complete(status);
            } catch (RuntimeException e) {
                LOG.error("{}: completion callback of a {} threw", path, io.op(), e);
            } finally {
                inFlight.decrementAndGet();
            }
        }

        private int perform(BlockIo io) throws IOException {
            switch (io.op()) {
                case READ:
                    read(io);
                    break;
                case WRITE:
                    write(io, io.forceUnitAccess() ? dsyncChannel : channel);
                    break;
                case FLUSH:
                    channel.force(false);
                    break;
                case WRITE_ZEROES:
                case DEALLOCATE:
                    zero(io.offset(), io.length(), io.forceUnitAccess());
                    break;
                default:
                    return NvmeStatus.INTERNAL_ERROR | NvmeStatus.DNR;
            }
            return NvmeStatus.SUCCESS;
        }

        private void read(BlockIo io) throws IOException {
            ByteBuffer buffer = io.buffer();
            int position = buffer.position();
            int limit = buffer.limit();
            buffer.limit(position + (int) io.length());
            try {
                long filePosition = io.offset();
                while (buffer.hasRemaining()) {
                    int n = channel.read(buffer, filePosition);
                    if (n < 0) {
                        DeviceSupport.zero(buffer, buffer.position(), buffer.remaining());
                        break;
                    }
                    filePosition += n;
                }
            } finally {
                buffer.limit(limit).position(position);
            }
        }

        private void write(BlockIo io, FileChannel target) throws IOException {
            ByteBuffer buffer = io.buffer();
            int position = buffer.position();
            int limit = buffer.limit();
            buffer.limit(position + (int) io.length());
            try {
                long filePosition = io.offset();
                while (buffer.hasRemaining()) {
                    filePosition += target.write(buffer, filePosition);
                }
            } finally {
                buffer.limit(limit).position(position);
            }
        }

        private void zero(long offset, long length, boolean fua) throws IOException {
            if (tailTruncation && offset + length == capacityBytes) {
                truncateTail(offset);
                if (fua) {
                    channel.force(false);
                }
                return;
            }
            FileChannel target = fua ? dsyncChannel : channel;
            long filePosition = offset;
            long remaining = length;
            while (remaining > 0) {
                int n = (int) Math.min(remaining, zeroes.capacity());
                zeroes.limit(n).position(0);
                while (zeroes.hasRemaining()) {
                    filePosition += target.write(zeroes, filePosition);
                }
                remaining -= n;
            }
        }

        /** Drops the file's blocks from {@code offset} on and extends it back, sparse: reads there return zeros. */
        private void truncateTail(long offset) throws IOException {
            // Serialised so two tail deallocations cannot interleave their shrink and grow. Writes into the range
            // overlap this command, so the host cannot expect any order between them anyway.
            synchronized (FileBlockDevice.this) {
                file.setLength(offset);
                file.setLength(capacityBytes);
            }
        }
    }

    static int statusFor(BlockIo.Op op, IOException e) {
        if (e instanceof ClosedChannelException) {
            return DeviceSupport.STATUS_CLOSED;
        }
        String message = e.getMessage();
        if (message != null && (message.contains("No space left on device") || message.contains("Disk quota exceeded"))) {
            return NvmeStatus.CAPACITY_EXCEEDED | NvmeStatus.DNR;
        }
        switch (op) {
            case READ:
                return NvmeStatus.UNRECOVERED_READ_ERROR | NvmeStatus.DNR;
            case WRITE:
            case WRITE_ZEROES:
            case DEALLOCATE:
                return NvmeStatus.WRITE_FAULT | NvmeStatus.DNR;
            case FLUSH:
            default:
                return NvmeStatus.INTERNAL_ERROR | NvmeStatus.DNR;
        }
    }

    /**
     * Stops accepting I/O, waits (bounded by the close timeout) for queued and executing I/O, stops the workers,
     * makes everything durable ({@code fsync}), closes the file. Idempotent.
     */
    @Override
    public void close() {
        if (!closing.compareAndSet(false, true)) {
            return;
        }
        long deadline = System.nanoTime() + closeTimeout.toNanos();
        while (inFlight.get() > 0 && System.nanoTime() - deadline < 0) {
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(1));
        }
        if (inFlight.get() > 0) {
            LOG.warn("{}: closing with {} I/Os still in flight after {} ms", path, inFlight.get(),
                closeTimeout.toMillis());
        }
        stopping = true;
        for (Worker w : workers) {
            LockSupport.unpark(w);
        }
        for (Worker w : workers) {
            long remaining = Math.max(TimeUnit.MILLISECONDS.toNanos(100), deadline - System.nanoTime());
            try {
                w.join(Math.max(1, TimeUnit.NANOSECONDS.toMillis(remaining)));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            }
            if (w.isAlive()) {
                LOG.warn("{}: worker {} did not stop; closing the file under it", path, w.getName());
            }
        }
        try {
            channel.force(true);
        } catch (IOException e) {
            LOG.error("{}: final fsync failed: {}", path, e.toString());
        }
        try {
            lock.release();
        } catch (IOException e) {
            LOG.warn("{}: releasing the file lock failed: {}", path, e.toString());
        }
        closeQuietly(dsyncChannel);
        closeQuietly(file);
    }

    private static void closeQuietly(AutoCloseable closeable) {
        if (closeable == null) {
            return;
        }
        try {
            closeable.close();
        } catch (Exception e) {
            LOG.warn("closing {} failed: {}", closeable, e.toString());
        }
    }

    @Override
    public String toString() {
        return description();
    }
}
