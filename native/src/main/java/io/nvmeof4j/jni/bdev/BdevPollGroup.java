package io.nvmeof4j.jni.bdev;

import io.nvmeof4j.jni.NativeHandle;
import io.nvmeof4j.jni.NativeIoException;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.Selector;
import java.util.concurrent.TimeUnit;

/**
 * One reactor thread's side of the block-device layer: one io_uring shared by every device the thread uses (as
 * SPDK's uring module shares one ring per thread among its bdevs), the thread's buffer-pool region registered
 * once as an io_uring fixed buffer, and the preallocated arrays I/O crosses the JNI boundary through.
 *
 * <h2>Batching, without allocation</h2>
 * Submitting an I/O ({@link BdevIoChannel}) takes a free tag (an index into this group's tables, at most
 * {@link #capacity()} in flight), stores the caller's context object under it and writes a submission entry into
 * native memory. {@link #flush()} hands every entry written since the last flush to C in one call, which queues
 * them on the ring and enters the kernel once. {@link #poll()} flushes, then reaps up to {@link #capacity()}
 * completions in one call into a native completion array and calls each channel's handler with the context.
 * I/O refused at submission completes at once; its completion is reaped by the next poll like the others.
 *
 * <h2>Waking a selector (one wait primitive per reactor)</h2>
 * A reactor that serves sockets blocks in its {@link Selector}. {@link #wakeSelector(Selector)} registers that
 * selector's own wake-up eventfd as this ring's completion eventfd, so a completion wakes the blocked selector the
 * way {@link Selector#wakeup()} does, and the reactor needs no bounded wait on the ring. Notifications are on only
 * between {@link #armWakeup()} and {@link #disarmWakeup()} (the reactor's block), so completions reaped by a busy
 * reactor cost the selector nothing. docs/datapath.md, "One wait primitive", says why this way.
 *
 * <h2>Threading</h2>
 * Not thread-safe: one thread (the reactor) submits, polls and closes. {@link #await(long)} blocks in
 * {@code io_uring_wait_cqe_timeout} until an I/O completes or the timeout passes; it returns at once when nothing
 * is in flight, so a reactor can block on its ring while it has I/O outstanding.
 */
public final class BdevPollGroup extends NativeHandle {
    public static final int CAPACITY_DEFAULT = 1024;
    /** How long {@link #close()} waits for in-flight I/O to complete before freeing the ring. */
    public static final long CLOSE_DRAIN_NANOS = TimeUnit.SECONDS.toNanos(10);

    private final int capacity;
    private final ByteBuffer subs;
    private final ByteBuffer cpls;
    private final int[] freeTags;
    private int freeCount;
    private final Object[] contexts;
    private final BdevIoChannel[] tagChannels;
    private final int[] tagOps;
    private int queued;
    private int inFlight;
    private final boolean fixed;
    private final int fixedErrno;
    private final long regionAddress;
    private final long regionLength;
    private final ByteBuffer region;
    private boolean wakesSelector;

    /**
     * @param capacity most I/Os in flight at once (1..32768)
     * @param region   the reactor's buffer-pool region, registered as io_uring fixed buffer 0; null for none.
     *                 Registration can fail (RLIMIT_MEMLOCK): then {@link #fixedBuffers()} is false,
     *                 {@link #fixedBuffersErrno()} says why, and I/O uses the buffers unregistered
     */
    public BdevPollGroup(int capacity, ByteBuffer region) throws NativeIoException {
        super(create(capacity, region), "bdev poll group");
        this.capacity = capacity;
        this.region = region;
        ByteBuffer[] arrays = new ByteBuffer[2];
        NativeIoException.check("bdev poll group arrays", BdevNative.groupArrays0(handle(), arrays));
        this.subs = arrays[0].order(ByteOrder.nativeOrder());
        this.cpls = arrays[1].order(ByteOrder.nativeOrder());
        long[] info = new long[4];
        BdevNative.groupInfo0(handle(), info);
        this.fixed = info[0] != 0;
        this.fixedErrno = (int) info[1];
        this.regionAddress = info[2];
        this.regionLength = info[3];
        this.freeTags = new int[capacity];
        for (int i = 0; i < capacity; i++) {
            freeTags[i] = capacity - 1 - i;
        }
        this.freeCount = capacity;
        this.contexts = new Object[capacity];
        this.tagChannels = new BdevIoChannel[capacity];
        this.tagOps = new int[capacity];
    }

    private static long create(int capacity, ByteBuffer region) throws NativeIoException {
        BdevNative.requireAvailable();
        if (capacity < 1 || capacity > BdevNative.MAX_CAPACITY) {
            throw new IllegalArgumentException("capacity " + capacity + " outside 1.." + BdevNative.MAX_CAPACITY);
        }
        if (region != null && !region.isDirect()) {
            throw new IllegalArgumentException("the registered region must be a direct buffer");
        }
        return NativeIoException.check("io_uring setup for " + capacity + " entries",
            BdevNative.groupCreate0(capacity, region));
    }

    public int capacity() {
        return capacity;
    }

    /** True when the region given at creation is registered as an io_uring fixed buffer. */
    public boolean fixedBuffers() {
        return fixed;
    }

    /** Why registering the region failed (errno), or 0. */
    public int fixedBuffersErrno() {
        return fixedErrno;
    }

    /** The registered region, or null. */
    public ByteBuffer region() {
        return fixed ? region : null;
    }

    /** I/Os submitted and not yet completed through a handler. */
    public int inFlight() {
        return inFlight;
    }

    /** Tags left: how many more I/Os can be submitted before one completes. */
    public int available() {
        return freeCount;
    }

    long nativeHandle() {
        return handle();
    }

    /** Absolute address of {@code regionOffset} inside the registered region, or -1 when it is not registered. */
    long fixedAddress(long regionOffset, int length) {
        if (!fixed || regionOffset < 0 || regionOffset + length > regionLength) {
            return -1;
        }
        return regionAddress + regionOffset;
    }

    /** Queues one entry; returns 0, or -EBUSY (as a negative errno) when every tag is in flight. */
    int enqueue(BdevIoChannel channel, long channelHandle, int op, long offset, long address, long length, int flags,
                Object context) {
        long group = handle(); // use after close: IllegalStateException
        if (freeCount == 0) {
            return -io.nvmeof4j.jni.Errno.EBUSY;
        }
        if (queued == capacity) {
            flushChecked(group);
        }
        int tag = freeTags[--freeCount];
        contexts[tag] = context;
        tagChannels[tag] = channel;
        tagOps[tag] = op;
        int at = queued * BdevNative.SUB_SIZE;
        subs.putLong(at + BdevNative.SUB_CHANNEL, channelHandle);
        subs.putLong(at + BdevNative.SUB_OFFSET, offset);
        subs.putLong(at + BdevNative.SUB_ADDR, address);
        subs.putLong(at + BdevNative.SUB_LENGTH, length);
        subs.putShort(at + BdevNative.SUB_OP, (short) op);
        subs.putShort(at + BdevNative.SUB_FLAGS, (short) flags);
        subs.putInt(at + BdevNative.SUB_TAG, tag);
        queued++;
        inFlight++;
        return 0;
    }

    /**
     * Hands every queued submission to the kernel in one call. Returns how many were handed over.
     *
     * @throws IllegalStateException when io_uring_enter fails for a reason other than a full completion queue
     *                               (the entries stay queued in the ring and are retried by the next flush)
     */
    public int flush() {
        return flushChecked(handle());
    }

    private int flushChecked(long group) {
        int n = queued;
        if (n == 0) {
            return 0;
        }
        queued = 0;
        int rc = BdevNative.submit0(group, n);
        if (rc < 0) {
            throw new IllegalStateException(new NativeIoException("io_uring_enter", -rc));
        }
        return n;
    }

    /**
     * Flushes, then reaps completed I/O and calls each one's channel handler (on this thread). Returns the number
     * of completions handled (the handlers may have submitted more).
     */
    public int poll() {
        long group = handle();
        flushChecked(group);
        if (inFlight == 0) {
            return 0;
        }
        int n = BdevNative.poll0(group, capacity);
        if (n <= 0) {
            return 0;
        }
        RuntimeException failure = null;
        for (int i = 0; i < n; i++) {
            int at = i * BdevNative.CPL_SIZE;
            int tag = cpls.getInt(at + BdevNative.CPL_TAG);
            int result = cpls.getInt(at + BdevNative.CPL_RESULT);
            Object context = contexts[tag];
            BdevIoChannel channel = tagChannels[tag];
            int op = tagOps[tag];
            contexts[tag] = null;
            tagChannels[tag] = null;
            freeTags[freeCount++] = tag;
            inFlight--;
            channel.completed();
            try {
                channel.handler().onBdevComplete(context, op, result);
            } catch (RuntimeException e) {
                if (failure == null) {
                    failure = e;
                } else {
                    failure.addSuppressed(e);
                }
            }
        }
        if (failure != null) {
            throw failure;
        }
        return n;
    }

    /**
     * Blocks until an in-flight I/O completes or {@code timeoutNanos} pass; returns at once when nothing is in
     * flight or completions are already waiting. Flushes first.
     */
    public void await(long timeoutNanos) {
        long group = handle();
        flushChecked(group);
        if (inFlight == 0) {
            return;
        }
        int rc = BdevNative.wait0(group, timeoutNanos);
        if (rc < 0) {
            throw new IllegalStateException(new NativeIoException("io_uring_wait_cqe_timeout", -rc));
        }
    }

    /**
     * Makes this ring's completions wake {@code selector} while armed (class comment). Returns 0, or {@code -errno}
     * when the selector's wake-up eventfd cannot be used: {@code -EOPNOTSUPP} for a selector that is not the JDK's
     * epoll selector with an eventfd (JDK 16+ on Linux), {@code -ENOSYS} for a kernel before 5.8,
     * {@code -EBUSY} when a selector was already set. The caller then keeps waiting on the ring with a bound.
     * Before the group is used, or on its thread.
     */
    public int wakeSelector(Selector selector) {
        if (!selector.isOpen()) {
            return -io.nvmeof4j.jni.Errno.EBADF;
        }
        int rc = BdevNative.wakeSelector0(handle(), selector);
        wakesSelector = rc == 0;
        return rc;
    }

    /** True when {@link #wakeSelector} succeeded. */
    public boolean wakesSelector() {
        return wakesSelector;
    }

    /**
     * Before the owning thread blocks in the selector: flushes queued submissions and turns completion
     * notifications on. Returns false when a completion is already waiting (poll instead of blocking); after a
     * true, completions wake the selector until {@link #disarmWakeup()}. Only after {@link #wakeSelector}.
     */
    public boolean armWakeup() {
        long group = handle();
        flushChecked(group);
        return BdevNative.arm0(group) == 0;
    }

    /** After the block: completions stop signalling the selector (the thread polls them). */
    public void disarmWakeup() {
        BdevNative.disarm0(handle());
    }

    /**
     * Waits (bounded) for the I/O in flight, delivering its completions, then frees the ring. On the group's thread.
     */
    @Override
    protected void release(long handle) {
        long deadline = System.nanoTime() + CLOSE_DRAIN_NANOS;
        try {
            if (queued > 0) {
                BdevNative.submit0(handle, queued);
                queued = 0;
            }
            while (inFlight > 0 && System.nanoTime() - deadline < 0) {
                drainOnce(handle);
            }
        } finally {
            // Past the deadline the kernel may still write into buffers: io_uring_queue_exit waits for them.
            BdevNative.groupDestroy0(handle);
        }
    }

    private void drainOnce(long handle) {
        BdevNative.wait0(handle, TimeUnit.MILLISECONDS.toNanos(10));
        int n = BdevNative.poll0(handle, capacity);
        for (int i = 0; i < n; i++) {
            int at = i * BdevNative.CPL_SIZE;
            int tag = cpls.getInt(at + BdevNative.CPL_TAG);
            int result = cpls.getInt(at + BdevNative.CPL_RESULT);
            Object context = contexts[tag];
            BdevIoChannel channel = tagChannels[tag];
            contexts[tag] = null;
            tagChannels[tag] = null;
            freeTags[freeCount++] = tag;
            inFlight--;
            channel.completed();
            try {
                channel.handler().onBdevComplete(context, tagOps[tag], result);
            } catch (RuntimeException ignored) {
                // closing: the handler's failure cannot be reported anywhere better than by the handler itself
            }
        }
    }
}
