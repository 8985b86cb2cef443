package io.nvmeof4j.jni.rdma;

import io.nvmeof4j.jni.NativeHandle;

import java.nio.ByteBuffer;

/**
 * A registered memory region ({@code struct ibv_mr}) over part of a direct buffer. The data path builds scatter/
 * gather entries from {@link #address()} + offset and {@link #lkey()} (and hands {@link #rkey()} to the peer in
 * keyed SGL descriptors) without any JNI call per I/O.
 */
public final class MemoryRegion extends NativeHandle {
    /** {@code IBV_ACCESS_LOCAL_WRITE}: the HCA may write here (receives, RDMA READ responses). */
    public static final int LOCAL_WRITE = 1;
    /** {@code IBV_ACCESS_REMOTE_WRITE}: the peer may RDMA WRITE here (needs LOCAL_WRITE). */
    public static final int REMOTE_WRITE = 1 << 1;
    /** {@code IBV_ACCESS_REMOTE_READ}: the peer may RDMA READ from here. */
    public static final int REMOTE_READ = 1 << 2;
    static final int ACCESS_MASK = LOCAL_WRITE | REMOTE_WRITE | REMOTE_READ;

    private final ProtectionDomain pd;
    private final ByteBuffer buffer;
    private final Object owner;
    private final long address;
    private final long length;
    private final int access;
    private final int lkey;
    private final int rkey;

    MemoryRegion(long handle, ProtectionDomain pd, ByteBuffer buffer, Object owner, long address, long length,
                 int access, int lkey, int rkey) {
        super(handle, "memory region of " + length + " bytes on " + pd.context().deviceName());
        this.pd = pd;
        this.buffer = buffer;
        this.owner = owner;
        this.address = address;
        this.length = length;
        this.access = access;
        this.lkey = lkey;
        this.rkey = rkey;
    }

    static long keys(long mr) {
        return keys0(mr);
    }

    /** The protection domain it was registered in. */
    public ProtectionDomain protectionDomain() {
        return pd;
    }

    /**
     * The buffer the region lies in (the region starts at {@link #address()}, not necessarily at its start), or null
     * for a region registered by address ({@link ProtectionDomain#registerMemory(long, long, int, Object)}).
     */
    public ByteBuffer buffer() {
        return buffer;
    }

    /** What keeps the memory of an address registration allocated (as given), or the buffer. */
    public Object owner() {
        return owner;
    }

    /** The native address of the region's first byte: SGE addresses are {@code address() + offset}. */
    public long address() {
        return address;
    }

    /**
     * The region's length in bytes; throws {@link ArithmeticException} for a region of 2 GiB or more (registered by
     * address): use {@link #size()}.
     */
    public int length() {
        return Math.toIntExact(length);
    }

    /** The region's length in bytes, also past 2 GiB. */
    public long size() {
        return length;
    }

    /** The access flags it was registered with. */
    public int access() {
        return access;
    }

    /** The local key, for SGEs of local work requests. */
    public int lkey() {
        return lkey;
    }

    /** The remote key, for the peer's RDMA READ/WRITE (keyed SGL descriptors). */
    public int rkey() {
        return rkey;
    }

    /** True when {@code [addr, addr + len)} lies inside this region. */
    public boolean contains(long addr, int len) {
        return contains(addr, (long) len);
    }

    /** True when {@code [addr, addr + len)} lies inside this region (long lengths). */
    public boolean contains(long addr, long len) {
        return addr >= address && len >= 0 && addr - address <= length - len;
    }

    @Override
    protected void release(long handle) {
        int rc = dereg0(handle);
        pd.detach(this);
        Children.checkDestroy("ibv_dereg_mr on " + pd.context().deviceName(), rc, null);
    }

    /** The region's keys: lkey in the low 32 bits, rkey in the high 32 bits. */
    private static native long keys0(long mr);

    /** ibv_dereg_mr; 0 or -errno. */
    private static native int dereg0(long mr);
}
