package io.nvmeof4j.jni.bdev;

import io.nvmeof4j.jni.NativeHandle;
import io.nvmeof4j.jni.NativeIoException;

import java.lang.ref.Cleaner;
import java.nio.ByteBuffer;
import java.util.function.LongConsumer;

/**
 * An anonymous memory mapping for a buffer pool's region ({@code OffHeapBufferPool(maxBuffer, region.buffer())}):
 * one address range to register once (io_uring fixed buffer, RDMA memory region), whose pages are committed only
 * when first used, unlike {@code ByteBuffer.allocateDirect}, which zeroes (touches) all of it. With hugepages
 * asked for, {@code MAP_HUGETLB} is tried first; when the system has none reserved, normal pages are used and
 * {@link #hugepageFailure()} says why.
 * <p>Closing unmaps the memory: every buffer sliced from it is invalid afterwards (touching one would crash the
 * JVM), so close it only after everything using the pool has stopped (a reactor closes what it owns in reverse
 * order: register the region before the poll groups that use it).
 * <p>Hugepages asked for but not reserved, or transparent hugepages asked for: normal pages, 2 MiB-aligned and advised
 * {@code MADV_HUGEPAGE} (where THP is "madvise", Debian's default, or "always", each 2 MiB is then one TLB entry, and
 * its first touch faults in all 2 MiB at once).
 */
public final class BdevRegion extends NativeHandle {
    /** Unmaps what {@link #mapCollected} mapped; its thread runs only those small actions. */
    private static final Cleaner CLEANER = Cleaner.create();

    private final long length;
    private final boolean huge;
    private final int hugepageErrno;
    private final ByteBuffer buffer;

    private BdevRegion(long address, long length, boolean huge, int hugepageErrno) {
        super(address, "memory region of " + length + " bytes");
        this.length = length;
        this.huge = huge;
        this.hugepageErrno = hugepageErrno;
        this.buffer = BdevNative.regionBuffer0(address, length);
    }

    /** Maps {@code length} bytes (at most 2 GiB - 1: a ByteBuffer's capacity). */
    public static BdevRegion map(long length, boolean hugepages) throws NativeIoException {
        BdevNative.requireAvailable();
        if (length <= 0 || length > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("region length " + length + " outside 1.." + Integer.MAX_VALUE);
        }
        int[] fellBack = new int[1];
        long address = BdevNative.regionMap0(length, hugepages, false, fellBack);
        NativeIoException.check("mmap " + length + " bytes", address);
        return new BdevRegion(address, length, hugepages && fellBack[0] == 0, fellBack[0]);
    }

    /**
     * Maps {@code length} bytes of normal pages advised for transparent hugepages (see the class description) as a
     * direct buffer that is unmapped when it, and every slice and duplicate of it, has become unreachable: for memory
     * that other threads may still be copying out of when its owner lets go of it (a RAM namespace's hugepage chunk
     * after a Deallocate), as the JDK does for {@code ByteBuffer.allocateDirect}. The buffer's bulk operations keep it
     * reachable while they copy. {@code onUnmapped} runs after the unmap, with the length, on the cleaner's
     * thread (memory accounting); it must not refer to the buffer.
     */
    public static ByteBuffer mapCollected(int length, LongConsumer onUnmapped)
        throws NativeIoException {
        BdevNative.requireAvailable();
        if (length <= 0) {
            throw new IllegalArgumentException("region length " + length + " outside 1.." + Integer.MAX_VALUE);
        }
        long address = BdevNative.regionMap0(length, false, true, new int[1]);
        NativeIoException.check("mmap " + length + " bytes", address);
        ByteBuffer buffer = BdevNative.regionBuffer0(address, length);
        CLEANER.register(buffer, () -> {
            BdevNative.regionUnmap0(address, length, false);
            onUnmapped.accept(length);
        });
        return buffer;
    }

    /** The mapping as a direct buffer (position 0, limit = capacity = length). */
    public ByteBuffer buffer() {
        handle();
        return buffer;
    }

    public long length() {
        return length;
    }

    /** True when the mapping uses hugepages. */
    public boolean hugepages() {
        return huge;
    }

    /** errno of the failed MAP_HUGETLB attempt (ENOMEM: none reserved), or 0. */
    public int hugepageFailure() {
        return hugepageErrno;
    }

    @Override
    protected void release(long handle) {
        BdevNative.regionUnmap0(handle, length, huge);
    }
}
