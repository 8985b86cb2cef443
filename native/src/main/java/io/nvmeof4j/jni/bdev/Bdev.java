package io.nvmeof4j.jni.bdev;

import io.nvmeof4j.jni.NativeHandle;
import io.nvmeof4j.jni.NativeIoException;

import java.nio.file.Path;

/**
 * A block device (SPDK's {@code spdk_bdev}): a name, a logical block size, a block count and capabilities, backed
 * by a file or block device through io_uring ({@link #openUring}). RAM and null namespaces are not native: the
 * target's {@code RamBlockDevice} and {@code NullBlockDevice} complete inline without crossing JNI.
 * <p>Use: {@link #open(boolean)} a {@link BdevDescriptor}, get its {@link BdevIoChannel} on each reactor's
 * {@link BdevPollGroup}, submit through the channel, poll the group. Closing the device syncs a file to disk;
 * close descriptors and channels first (the device does not track them; a parent never frees under a child
 * because Java keeps the device reachable from every descriptor).
 */
public final class Bdev extends NativeHandle {
    /** Capabilities ({@link #capabilities()}). */
    public static final int CAP_FLUSH = 0x1;
    public static final int CAP_UNMAP = 0x2;
    public static final int CAP_WRITE_ZEROES = 0x4;
    public static final int CAP_FUA = 0x8;

    /**
     * A completion result ({@link BdevCompletionHandler#onBdevComplete}) that is not an outcome: the operation can
     * only be done by a call the kernel runs synchronously (BLKDISCARD before Linux 6.12), which must not run on a
     * polling thread. The handler runs it on a worker ({@link #discardBlocking}) and completes the I/O itself.
     */
    public static final int RESULT_BLOCKING = BdevNative.RESULT_BLOCKING;

    private final String name;
    private final int blockSize;
    private volatile long blockCount;
    private final int capabilities;
    private final boolean direct;
    private final boolean blockDevice;
    private final boolean created;

    private Bdev(long handle, String name) {
        super(handle, "bdev " + name);
        long[] info = new long[8];
        BdevNative.info0(handle, info);
        this.name = name;
        this.blockSize = (int) info[1];
        this.blockCount = info[2];
        this.capabilities = (int) info[3];
        this.direct = info[4] != 0;
        this.blockDevice = info[5] != 0;
        this.created = info[7] != 0;
    }

    /** True when {@code libnvmeof4j-bdev} loaded. */
    public static boolean isAvailable() {
        return BdevNative.UNAVAILABILITY_CAUSE == null;
    }

    /** Why the library did not load, or null. */
    public static Throwable unavailabilityCause() {
        return BdevNative.UNAVAILABILITY_CAUSE;
    }

    /**
     * Opens a regular file or a block device for io_uring I/O, locked against a second user (an open-file-description lock, which also conflicts with fcntl locks of other processes).
     *
     * @param options O_DIRECT unless buffered; the block size (0: the device's logical block size, 4096 for a
     *                file); the size (0: the whole file/device rounded down to blocks; larger than a file: the file
     *                is extended, sparse); create a missing file
     * @throws NativeIoException EBUSY when another process holds the file, EINVAL for a block size below the
     *                           device's with O_DIRECT, ENOSPC for a size beyond a block device
     */
    public static Bdev openUring(Path path, UringOptions options) throws NativeIoException {
        BdevNative.requireAvailable();
        int flags = (options.buffered() ? BdevNative.OPEN_BUFFERED : 0) | (options.create() ? BdevNative.OPEN_CREATE : 0)
            | (options.readOnly() ? BdevNative.OPEN_READ_ONLY : 0)
            | (options.confinement() != UringOptions.Confinement.NONE ? BdevNative.OPEN_CONFINED : 0)
            | (options.confinement() == UringOptions.Confinement.BLOCK_DEVICE ? BdevNative.OPEN_BLOCK_DEVICE : 0)
            | (options.discardCommand() ? 0 : BdevNative.OPEN_NO_DISCARD_CMD)
            | (options.shared() ? BdevNative.OPEN_SHARED : 0);
        long h = BdevNative.uringOpen0(path.toString(), flags, options.blockSize(), options.sizeBytes());
        NativeIoException.check("open " + path, h);
        return new Bdev(h, path.toString());
    }

    /** Opens a descriptor (SPDK's {@code spdk_bdev_open_ext}); {@code writable=false} refuses writes with EBADF. */
    public BdevDescriptor open(boolean writable) throws NativeIoException {
        long h = BdevNative.openDesc0(handle(), writable);
        NativeIoException.check("open a descriptor of " + name, h);
        return new BdevDescriptor(h, this, writable);
    }

    public String name() {
        return name;
    }

    public int blockSize() {
        return blockSize;
    }

    public long blockCount() {
        return blockCount;
    }

    public long sizeBytes() {
        return blockCount * blockSize;
    }

    /**
     * Sets the size I/O is checked against (a file or block device namespace resized live): {@code sizeBytes} > 0
     * that size, 0 the file's or device's size now (rounded down to blocks; {@code EBUSY} if that is smaller than the
     * size now). Never beyond what the file or device holds ({@code ENOSPC}). Returns the size set.
     */
    public long resize(long sizeBytes) throws NativeIoException {
        long r = BdevNative.resize0(handle(), sizeBytes);
        NativeIoException.check("resize " + name, r);
        blockCount = r / blockSize;
        return r;
    }

    /** {@link #CAP_FLUSH} | {@link #CAP_UNMAP} | ... */
    public int capabilities() {
        return capabilities;
    }

    public boolean hasCapability(int capability) {
        return (capabilities & capability) == capability;
    }

    /** True when a uring device was opened with O_DIRECT (false: buffered, asked for or fallen back to). */
    public boolean isDirect() {
        return direct;
    }

    public boolean isBlockDevice() {
        return blockDevice;
    }

    /**
     * True when {@link #openUring} created the file (it did not exist). A file created by an open that fails is
     * removed by the shim; a caller whose own checks fail after a successful open removes it likewise.
     */
    public boolean created() {
        return created;
    }

    /**
     * Discards {@code length} bytes at {@code offset} of a block device with the BLKDISCARD ioctl, on the calling
     * thread, for as long as the kernel takes (seconds on large ranges): for a worker thread, never a reactor.
     * Returns 0 or {@code -errno} (EINVAL: not a block device or outside it; EOPNOTSUPP: the device cannot discard).
     */
    public int discardBlocking(long offset, long length) {
        return BdevNative.discardBlocking0(handle(), offset, length);
    }

    long nativeHandle() {
        return handle();
    }

    /** Syncs a file or block device ({@code fsync}) and closes it; frees a RAM device's memory. */
    @Override
    protected void release(long handle) {
        int rc = BdevNative.closeDevice0(handle);
        if (rc < 0) {
            throw new IllegalStateException(new NativeIoException("fsync and close " + name, -rc));
        }
    }
}
