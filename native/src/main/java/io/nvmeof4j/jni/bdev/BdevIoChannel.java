package io.nvmeof4j.jni.bdev;

import io.nvmeof4j.jni.Errno;
import io.nvmeof4j.jni.NativeHandle;

import java.nio.ByteBuffer;

/**
 * A descriptor's I/O channel on one {@link BdevPollGroup} (SPDK's {@code spdk_io_channel} for a bdev): the thread
 * that owns the group submits through it; completions come back through {@link BdevPollGroup#poll()} to this
 * channel's {@link BdevCompletionHandler} with the context given at submission.
 * <p>Submissions return 0 when queued, or {@code -errno} without queuing: {@code -EBUSY} when the group has
 * {@link BdevPollGroup#capacity()} I/Os in flight, {@code -EINVAL} for a heap buffer or a buffer too small.
 * Results delivered to the handler are 0 or {@code -errno} (EIO, ENOSPC, EINVAL for misaligned O_DIRECT I/O,
 * ERANGE beyond the device, EBADF for a write through a read-only descriptor). Offsets and lengths are in bytes.
 * Nothing here allocates.
 */
public final class BdevIoChannel extends NativeHandle {
    public static final int OP_READ = 0;
    public static final int OP_WRITE = 1;
    public static final int OP_FLUSH = 2;
    public static final int OP_WRITE_ZEROES = 3;
    public static final int OP_UNMAP = 4;
    /** {@link #delay}: no device access. */
    public static final int OP_DELAY = BdevNative.OP_DELAY;

    private final BdevDescriptor descriptor;
    private final BdevPollGroup group;
    private final BdevCompletionHandler handler;
    private int inFlight;

    BdevIoChannel(long handle, BdevDescriptor descriptor, BdevPollGroup group, BdevCompletionHandler handler) {
        super(handle, "I/O channel of bdev " + descriptor.bdev().name());
        this.descriptor = descriptor;
        this.group = group;
        this.handler = handler;
    }

    public BdevDescriptor descriptor() {
        return descriptor;
    }

    public BdevPollGroup group() {
        return group;
    }

    BdevCompletionHandler handler() {
        return handler;
    }

    void completed() {
        inFlight--;
    }

    /** I/Os of this channel not yet completed. */
    public int inFlight() {
        return inFlight;
    }

    /** Reads {@code length} bytes at {@code offset} into {@code buffer} from absolute {@code index}. */
    public int read(long offset, ByteBuffer buffer, int index, int length, Object context) {
        return data(OP_READ, offset, buffer, index, length, 0, context);
    }

    /** Writes {@code length} bytes from {@code buffer} at absolute {@code index}; FUA: durable before completion. */
    public int write(long offset, ByteBuffer buffer, int index, int length, boolean fua, Object context) {
        return data(OP_WRITE, offset, buffer, index, length, fua ? BdevNative.IO_FUA : 0, context);
    }

    /**
     * Reads into the group's registered region at {@code regionOffset} (a pool buffer's offset plus its index):
     * the kernel uses the fixed buffer, no page pinning per I/O.
     */
    public int readRegion(long offset, long regionOffset, int length, Object context) {
        return fixed(OP_READ, offset, regionOffset, length, 0, context);
    }

    /** Writes from the group's registered region at {@code regionOffset}. */
    public int writeRegion(long offset, long regionOffset, int length, boolean fua, Object context) {
        return fixed(OP_WRITE, offset, regionOffset, length, fua ? BdevNative.IO_FUA : 0, context);
    }

    /** Makes every completed write durable ({@code fdatasync}). */
    public int flush(Object context) {
        return submit(OP_FLUSH, 0, 0, 0, 0, context);
    }

    /** The range reads as zeros afterwards; FUA: durable before completion. */
    public int writeZeroes(long offset, long length, boolean fua, Object context) {
        return submit(OP_WRITE_ZEROES, offset, 0, length, fua ? BdevNative.IO_FUA : 0, context);
    }

    /** Deallocates the range (hole punch on a file: reads return zeros; discard on a block device). */
    public int unmap(long offset, long length, Object context) {
        return submit(OP_UNMAP, offset, 0, length, 0, context);
    }

    /**
     * Completes (result 0) after {@code nanos}, touching no device: a completion the kernel posts at a known time
     * while the owning thread may be blocked. For tests and benchmarks of the wake-up path (an io_uring timeout).
     */
    public int delay(long nanos, Object context) {
        if (nanos < 0) {
            return -Errno.EINVAL;
        }
        return submit(OP_DELAY, 0, 0, nanos, 0, context);
    }

    private int data(int op, long offset, ByteBuffer buffer, int index, int length, int flags, Object context) {
        handle();
        if (!buffer.isDirect() || index < 0 || length < 0 || index > buffer.capacity() - length) {
            return -Errno.EINVAL;
        }
        long address = BdevNative.address0(buffer);
        if (address < 0) {
            return (int) address;
        }
        return submit(op, offset, address + index, length, flags, context);
    }

    private int fixed(int op, long offset, long regionOffset, int length, int flags, Object context) {
        handle();
        long address = group.fixedAddress(regionOffset, length);
        if (address < 0) {
            return -Errno.EINVAL;
        }
        return submit(op, offset, address, length, flags | BdevNative.IO_FIXED, context);
    }

    private int submit(int op, long offset, long address, long length, int flags, Object context) {
        int rc = group.enqueue(this, handle(), op, offset, address, length, flags, context);
        if (rc == 0) {
            inFlight++;
        }
        return rc;
    }

    /** Frees the channel; its I/O must have completed (poll the group first). */
    @Override
    protected void release(long handle) {
        BdevNative.channelDestroy0(handle);
    }
}
