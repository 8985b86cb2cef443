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
    private final long address;
    private final int length;
    private final int access;
    private final int lkey;
    private final int rkey;

    MemoryRegion(long handle, ProtectionDomain pd, ByteBuffer buffer, long address, int length, int access,
                 int lkey, int rkey) {
        super(handle, "memory region of " + length + " bytes on " + pd.context().deviceName());
        this.pd = pd;
        this.buffer = buffer;
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

    /** The buffer the region lies in (the region starts at {@link #address()}, not necessarily at its start). */
    public ByteBuffer buffer() {
        return buffer;
    }

    /** The native address of the region's first byte: SGE addresses are {@code address() + offset}. */
    public long address() {
        return address;
    }

    /** The region's length in bytes. */
    public int length() {
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
        return addr >= address && len >= 0 && addr + len <= address + length;
    }

    @Override
    protected void release(long handle) {
        dereg0(handle);
        pd.detach(this);
    }

    /** The region's keys: lkey in the low 32 bits, rkey in the high 32 bits. */
    private static native long keys0(long mr);

    /** ibv_dereg_mr; 0 or -errno. */
    private static native int dereg0(long mr);
}
