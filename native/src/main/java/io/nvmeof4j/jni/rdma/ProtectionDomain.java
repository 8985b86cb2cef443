package io.nvmeof4j.jni.rdma;

import io.nvmeof4j.jni.NativeHandle;
import io.nvmeof4j.jni.NativeIoException;

import java.nio.ByteBuffer;

/**
 * A protection domain ({@code struct ibv_pd}): memory regions and queue pairs of one PD can be used together.
 * The target registers its buffer pool once per PD at start (never per I/O).
 *
 * <p>Closing it closes the queue pairs using it and the memory regions registered here that are still open
 * ({@code ibv_dealloc_pd} would otherwise fail with EBUSY); a failed {@code ibv_dealloc_pd} makes {@link #close()}
 * throw {@link IllegalStateException} naming the errno.
 */
public final class ProtectionDomain extends NativeHandle {
    private final VerbsContext context;
    private final Children children = new Children();
    private final Children queuePairs = new Children();

    ProtectionDomain(long handle, VerbsContext context) {
        super(handle, "protection domain on " + context.deviceName());
        this.context = context;
    }

    static long allocate(long context) {
        return alloc0(context);
    }

    /** The device context this PD belongs to. */
    public VerbsContext context() {
        return context;
    }

    /**
     * Registers the whole of {@code buffer} (position 0 to capacity) with {@code access} ({@code ibv_reg_mr}).
     *
     * @param buffer a direct buffer; the region keeps it reachable, so the memory cannot be freed while registered
     * @param access a combination of {@link MemoryRegion#LOCAL_WRITE}, {@link MemoryRegion#REMOTE_READ},
     *               {@link MemoryRegion#REMOTE_WRITE}
     */
    public MemoryRegion registerMemory(ByteBuffer buffer, int access) throws NativeIoException {
        if (buffer == null) {
            throw new IllegalArgumentException("buffer is null");
        }
        return registerMemory(buffer, 0, buffer.capacity(), access);
    }

    /** Registers {@code length} bytes of {@code buffer} from {@code offset} (absolute, ignoring position). */
    public MemoryRegion registerMemory(ByteBuffer buffer, int offset, int length, int access)
            throws NativeIoException {
        if (buffer == null || !buffer.isDirect()) {
            throw new IllegalArgumentException("memory registration needs a direct ByteBuffer, got " + buffer);
        }
        if (offset < 0 || length <= 0 || offset + length > buffer.capacity() || offset + length < 0) {
            throw new IllegalArgumentException("region [" + offset + ", +" + length + ") outside a buffer of "
                + buffer.capacity() + " bytes");
        }
        if ((access & ~MemoryRegion.ACCESS_MASK) != 0) {
            throw new IllegalArgumentException("unsupported access flags 0x" + Integer.toHexString(access));
        }
        long address = Rdma.address(buffer) + offset;
        return register(buffer, buffer, address, length, access);
    }

    /**
     * Registers {@code length} bytes from the native address {@code address} ({@code ibv_reg_mr}), for regions a
     * {@link ByteBuffer} cannot span (2 GiB and more) or memory allocated elsewhere.
     *
     * @param owner what keeps the memory allocated (a buffer list, an arena, ...): the region keeps it reachable;
     *              the caller must not free the memory before closing the region
     */
    public MemoryRegion registerMemory(long address, long length, int access, Object owner) throws NativeIoException {
        if (address == 0 || length <= 0 || address + length < address) {
            throw new IllegalArgumentException("region [0x" + Long.toHexString(address) + ", +" + length + ")");
        }
        return register(null, owner, address, length, access);
    }

    private MemoryRegion register(ByteBuffer buffer, Object owner, long address, long length, int access)
            throws NativeIoException {
        if ((access & ~MemoryRegion.ACCESS_MASK) != 0) {
            throw new IllegalArgumentException("unsupported access flags 0x" + Integer.toHexString(access));
        }
        long mr = NativeIoException.check("ibv_reg_mr(" + length + " bytes, access 0x" + Integer.toHexString(access)
            + ") on " + context.deviceName(), reg0(handle(), address, length, access));
        long keys = MemoryRegion.keys(mr);
        MemoryRegion region = new MemoryRegion(mr, this, buffer, owner, address, length, access,
            (int) keys, (int) (keys >>> 32));
        children.add(region);
        return region;
    }

    void detach(NativeHandle child) {
        children.remove(child);
    }

    long handleForChild() {
        return handle();
    }

    @Override
    protected void release(long handle) {
        RuntimeException childFailure = queuePairs.closeAllCollecting(); // QPs first: they use the regions too
        RuntimeException regionFailure = children.closeAllCollecting();
        if (childFailure == null) {
            childFailure = regionFailure;
        } else if (regionFailure != null) {
            childFailure.addSuppressed(regionFailure);
        }
        int rc = dealloc0(handle);
        context.detach(this);
        Children.checkDestroy("ibv_dealloc_pd on " + context.deviceName(), rc, childFailure);
    }

    void addQueuePair(QueuePair qp) {
        queuePairs.add(qp);
    }

    void removeQueuePair(QueuePair qp) {
        queuePairs.remove(qp);
    }

    /** ibv_alloc_pd; pointer or -errno. */
    private static native long alloc0(long context);

    /** ibv_dealloc_pd; 0 or -errno. */
    private static native int dealloc0(long pd);

    /** ibv_reg_mr(pd, address, length, access); pointer or -errno. */
    private static native long reg0(long pd, long address, long length, int access);
}
