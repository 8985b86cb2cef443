package io.nvmeof4j.protocol.buffer;

import io.nvmeof4j.protocol.spi.BufferPool;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;

/**
 * A {@link BufferPool} of direct {@link ByteBuffer} slices in power-of-two size classes from 4 KiB to
 * {@link #maxBufferSize()} (architecture: pre-registered memory pools; TCP uses the slices directly).
 * <p>Memory comes in slabs: one direct allocation per slab (or one range of the {@link #region()}), cut into equal
 * slices of one class. A slab is {@link #SLAB_SIZE} or the largest buffer, whichever is larger (the last one may be
 * shorter, to end at the capacity), so any full slab can hold a buffer of any class. Slabs are made lazily, the
 * first time a class runs dry, so an idle daemon holds only what it once needed; the total never exceeds
 * {@code capacityBytes}, and slabs are never given back: the pool keeps its high-water mark.
 * <p>Once the capacity is used up, a class that runs dry takes a slab of another class of which every slice is
 * free and carves it again into slices of its own size (the slab's address range stays the same, so it stays
 * inside the region and a registration of the region stays valid). Without that, a phase that filled the capacity
 * with 4 KiB buffers left a later 128 KiB command waiting for ever, whatever was released. Each slab counts its
 * free slices, kept by {@link #acquire} and {@link #release}; the re-carve itself scans the slabs (the slow path,
 * under pressure). Only when no such slab exists does {@link #acquire} return {@code null}, and the caller waits for
 * a release (a poll group retries its waiting commands every round).
 * <p>A re-carve allocates nothing once the slab has been carved for that class before: a slab keeps, for each class
 * it has been carved for, that set of slices (and their ids and identity-table entries), and carving it for the class
 * again puts the same slices back on the free stack ({@link #acquire} resets position, limit and byte order). So a
 * load that moves slabs back and forth between classes at full capacity allocates only while each (slab, class)
 * pair is carved the first time. The slices of the classes a slab is not carved for now are retired: registered,
 * never on a free stack, and {@link #release} and {@link #regionOffset} treat them as not this pool's, so a stale
 * reference released after its slab moved throws. (Once the slab is carved back for that class the reference is a
 * slice of the pool again, as any buffer is after its release: the pool cannot tell a stale holder from the next.)
 * The cost is memory, bounded by one set per (slab, class) pair: a 1 MiB slab carved for each class from 4 KiB to
 * 1 MiB keeps 511 slice objects (256 + 128 + ... + 1) where one carve has at most 256; a slice is about 100 bytes of
 * heap (a 64-byte {@code DirectByteBuffer} plus its registry and identity-table entries), so at most about 50 KiB
 * per MiB of slabs, and about 26 KiB for a slab that serves two classes (4 KiB and 128 KiB: 264 slices). Over all
 * slabs the registry holds fewer than {@code 2 * capacityBytes / 4096} slices.
 * <p>Each class keeps its free slices on a LIFO stack (the most recently used buffer is the one still in cache),
 * so {@link #acquire} and {@link #release} are a few array operations and allocate nothing once the slabs exist.
 * {@link #release} checks that a buffer is one of this pool's slices of the current carve and not already free: it
 * finds the slice's id in an open-addressing identity table (arrays filled when a (slab, class) pair is carved the
 * first time; a lookup is {@link System#identityHashCode} and a probe, no allocation), compares the slice's class
 * with its slab's, and keeps one in-use bit per slice.
 * <p>Not thread-safe: the owning reactor thread acquires and releases. {@link #buffersInUse()} may be read from
 * another thread for metrics; it then sees a recent, not necessarily the latest, value.
 */
public final class OffHeapBufferPool implements BufferPool {
    /** The smallest size class; any request of up to 4 KiB gets one of these. */
    public static final int MIN_BUFFER_SIZE = 4096;
    public static final int MAX_BUFFER_SIZE_DEFAULT = 1 << 20;
    /** Least bytes per slab; a pool whose largest buffer is larger makes slabs of that size. */
    public static final int SLAB_SIZE = 1 << 20;

    private final int maxBufferSize;
    private final long capacityBytes;
    /** Bytes of a slab: max(SLAB_SIZE, maxBufferSize). */
    private final int slabBytes;
    private final SizeClass[] classes;
    /** The block slabs are carved from, or null when each slab is its own allocation. */
    private final ByteBuffer region;
    /** Bytes of the region handed to slabs so far. */
    private long regionUsed;

    private long bytesAllocated;
    private int buffersInUse;

    // Slabs: index -> memory, offset in the region (-1 without one), class, slices, free slices.
    private ByteBuffer[] slabMemory = new ByteBuffer[8];
    private long[] slabOffset = new long[8];
    private byte[] slabClass = new byte[8];
    private int[] slabSlices = new int[8];
    private int[] slabFree = new int[8];
    private int slabCount;
    /** Slabs of which every slice is free: when 0, a dry class has nothing to take and need not scan. */
    private int wholeFreeSlabs;

    /**
     * Per (slab, class) pair, at {@code slab * classes.length + class}: the first id of the slices the slab was cut
     * into for that class (their ids are consecutive, in address order), or -1 while it has never been.
     */
    private int[] firstSliceId;

    // Slice registry: id -> slice, its class, slab, region offset, in use; identity table slice -> id. Every slice
    // ever cut stays registered; one whose class is not its slab's current class is retired.
    private ByteBuffer[] slices = new ByteBuffer[64];
    private byte[] sliceClass = new byte[64];
    private int[] sliceSlab = new int[64];
    private long[] sliceOffset = new long[64];
    private boolean[] inUse = new boolean[64];
    /** Ids handed out so far: each (slab, class) pair carved so far has its set below it. */
    private int sliceCount;
    private Object[] tableKeys = new Object[128];
    private int[] tableIds = new int[128];

    /** A pool whose largest buffer is 1 MiB, holding at most {@code capacityBytes}. */
    public OffHeapBufferPool(long capacityBytes) {
        this(MAX_BUFFER_SIZE_DEFAULT, capacityBytes);
    }

    /**
     * @param maxBufferSize largest buffer handed out: a power of two of at least 4096 (the MDTS the pool serves)
     * @param capacityBytes most bytes of slabs this pool ever allocates; at least {@code maxBufferSize}
     */
    public OffHeapBufferPool(int maxBufferSize, long capacityBytes) {
        this(maxBufferSize, capacityBytes, null);
    }

    /**
     * A pool whose slabs are carved out of {@code region} (a direct buffer made once, for example a hugepage
     * mapping), so the whole pool is one registrable address range; capacity is the region's capacity.
     *
     * @param maxBufferSize largest buffer handed out: a power of two of at least 4096
     * @param region        a direct buffer of at least {@code maxBufferSize} bytes; the pool owns it from now on
     */
    public OffHeapBufferPool(int maxBufferSize, ByteBuffer region) {
        this(maxBufferSize, requireDirect(region).capacity(), region);
    }

    private static ByteBuffer requireDirect(ByteBuffer region) {
        if (!region.isDirect()) {
            throw new IllegalArgumentException("a buffer pool region must be a direct buffer");
        }
        return region;
    }

    private OffHeapBufferPool(int maxBufferSize, long capacityBytes, ByteBuffer region) {
        if (maxBufferSize < MIN_BUFFER_SIZE || Integer.bitCount(maxBufferSize) != 1) {
            throw new IllegalArgumentException("max buffer size " + maxBufferSize
                + " must be a power of two of at least " + MIN_BUFFER_SIZE);
        }
        if (capacityBytes < maxBufferSize) {
            throw new IllegalArgumentException("pool capacity " + capacityBytes
                + " is smaller than its largest buffer " + maxBufferSize);
        }
        this.maxBufferSize = maxBufferSize;
        this.capacityBytes = capacityBytes;
        this.region = region;
        this.slabBytes = Math.max(SLAB_SIZE, maxBufferSize);
        int count = Integer.numberOfTrailingZeros(maxBufferSize) - Integer.numberOfTrailingZeros(MIN_BUFFER_SIZE) + 1;
        this.classes = new SizeClass[count];
        for (int i = 0; i < count; i++) {
            classes[i] = new SizeClass(MIN_BUFFER_SIZE << i);
        }
        this.firstSliceId = new int[slabMemory.length * count];
        Arrays.fill(firstSliceId, -1);
    }

    @Override
    public ByteBuffer acquire(int length) {
        if (length < 0 || length > maxBufferSize) {
            throw new IllegalArgumentException("buffer of " + length + " bytes outside 0.." + maxBufferSize);
        }
        int classIndex = classIndex(length);
        SizeClass sizeClass = classes[classIndex];
        if (sizeClass.freeCount == 0 && !addSlab(classIndex) && !recarveFreeSlab(classIndex)) {
            return null;
        }
        ByteBuffer buffer = sizeClass.free[--sizeClass.freeCount];
        sizeClass.free[sizeClass.freeCount] = null;
        int id = sizeClass.freeIds[sizeClass.freeCount];
        inUse[id] = true;
        int slab = sliceSlab[id];
        if (slabFree[slab]-- == slabSlices[slab]) {
            wholeFreeSlabs--;
        }
        buffersInUse++;
        buffer.order(ByteOrder.LITTLE_ENDIAN).clear().limit(length);
        return buffer;
    }

    @Override
    public void release(ByteBuffer buffer) {
        int id = lookup(buffer);
        if (id < 0) {
            // Also a slice of a slab carved for another class since (retired): a stale reference.
            throw new IllegalArgumentException("buffer " + buffer + " does not belong to this pool");
        }
        if (!inUse[id]) {
            throw new IllegalStateException("buffer " + buffer + " released twice");
        }
        inUse[id] = false;
        buffersInUse--;
        int slab = sliceSlab[id];
        if (++slabFree[slab] == slabSlices[slab]) {
            wholeFreeSlabs++;
        }
        SizeClass sizeClass = classes[sliceClass[id]];
        sizeClass.freeIds[sizeClass.freeCount] = id;
        sizeClass.free[sizeClass.freeCount++] = buffer;
    }

    @Override
    public int maxBufferSize() {
        return maxBufferSize;
    }

    @Override
    public int buffersInUse() {
        return buffersInUse;
    }

    /**
     * The block this pool carves its buffers from, or {@code null} when it allocates each slab on its own.
     * Register it (RDMA memory region, io_uring fixed buffer) once; every buffer lies inside it.
     */
    public ByteBuffer region() {
        return region;
    }

    /**
     * Where {@code buffer} (one this pool handed out) starts inside {@link #region()}, in bytes: its native address
     * is the region's address plus this. Returns -1 for a buffer that is not this pool's (a retired slice included),
     * or when the pool has no region. A table lookup; allocates nothing.
     */
    public long regionOffset(ByteBuffer buffer) {
        if (region == null) {
            return -1;
        }
        int id = lookup(buffer);
        return id < 0 ? -1 : sliceOffset[id];
    }

    /** Bytes of slabs allocated so far (the pool's high-water mark; a re-carve moves bytes, it adds none). */
    public long bytesAllocated() {
        return bytesAllocated;
    }

    /** The most bytes this pool will allocate. */
    public long capacityBytes() {
        return capacityBytes;
    }

    private static int classIndex(int length) {
        if (length <= MIN_BUFFER_SIZE) {
            return 0;
        }
        // ceil(log2(length)) - log2(4096)
        return 32 - Integer.numberOfLeadingZeros(length - 1) - 12;
    }

    /** Allocates one slab for a class that ran dry, while the capacity has room. Not the steady state. */
    private boolean addSlab(int classIndex) {
        int size = classes[classIndex].size;
        long room = capacityBytes - bytesAllocated;
        int length = (int) (Math.min(slabBytes, room) / size * size);
        if (length == 0) {
            return false;
        }
        ByteBuffer memory;
        long offset = -1;
        if (region != null) {
            offset = regionUsed;
            memory = region.duplicate().limit((int) (offset + length)).position((int) offset).slice();
            regionUsed += length;
        } else {
            try {
                memory = ByteBuffer.allocateDirect(length);
            } catch (OutOfMemoryError e) {
                // Direct memory is used up (RAM namespaces share it): behave as an exhausted pool, so the command
                // waits for a buffer instead of the error ending the reactor and every queue on it.
                return false;
            }
        }
        bytesAllocated += length;
        if (slabCount == slabMemory.length) {
            int grown = slabCount * 2;
            slabMemory = Arrays.copyOf(slabMemory, grown);
            slabOffset = Arrays.copyOf(slabOffset, grown);
            slabClass = Arrays.copyOf(slabClass, grown);
            slabSlices = Arrays.copyOf(slabSlices, grown);
            slabFree = Arrays.copyOf(slabFree, grown);
            firstSliceId = Arrays.copyOf(firstSliceId, grown * classes.length);
            Arrays.fill(firstSliceId, slabCount * classes.length, firstSliceId.length, -1);
        }
        int slab = slabCount++;
        slabMemory[slab] = memory;
        slabOffset[slab] = offset;
        carve(slab, classIndex);
        return true;
    }

    /**
     * For a class that ran dry with the capacity used up: takes a slab of another class whose slices are all free
     * and carves it again for this class. Prefers the class with the most free bytes, so a class is not robbed of
     * the last slab it has free when another can spare one. Slow path: scans the slabs; allocates only the first time
     * the slab is carved for this class.
     */
    private boolean recarveFreeSlab(int classIndex) {
        if (wholeFreeSlabs == 0) {
            return false;
        }
        int size = classes[classIndex].size;
        int best = -1;
        long bestFreeBytes = -1;
        for (int slab = 0; slab < slabCount; slab++) {
            if (slabFree[slab] == slabSlices[slab] && slabClass[slab] != classIndex
                && slabMemory[slab].capacity() >= size) {
                SizeClass owner = classes[slabClass[slab]];
                long freeBytes = (long) owner.freeCount * owner.size;
                if (freeBytes > bestFreeBytes) {
                    best = slab;
                    bestFreeBytes = freeBytes;
                }
            }
        }
        if (best < 0) {
            return false;
        }
        retireSlices(best);
        carve(best, classIndex);
        return true;
    }

    /**
     * Takes every slice of {@code slab} (all free) off its class's stack. They stay registered, retired by the
     * class change {@link #carve} makes next, and come back if the slab is carved for their class again.
     */
    private void retireSlices(int slab) {
        SizeClass owner = classes[slabClass[slab]];
        int kept = 0;
        for (int i = 0; i < owner.freeCount; i++) {
            int id = owner.freeIds[i];
            if (sliceSlab[id] != slab) {
                owner.free[kept] = owner.free[i];
                owner.freeIds[kept++] = id;
            }
        }
        Arrays.fill(owner.free, kept, owner.freeCount, null);
        owner.freeCount = kept;
        owner.total -= slabSlices[slab];
        wholeFreeSlabs--;
    }

    /**
     * Puts {@code slab}'s slices of one class on that class's free stack: the set cut the first time the slab was
     * carved for the class, cut and registered now if there is none yet.
     */
    private void carve(int slab, int classIndex) {
        SizeClass sizeClass = classes[classIndex];
        int count = slabMemory[slab].capacity() / sizeClass.size;
        int pair = slab * classes.length + classIndex;
        if (firstSliceId[pair] < 0) {
            firstSliceId[pair] = cut(slab, classIndex, count);
        }
        int first = firstSliceId[pair];
        sizeClass.ensureCapacity(sizeClass.total + count);
        for (int i = 0; i < count; i++) {
            // Push in reverse so the stack hands out the slab's slices in address order.
            int top = sizeClass.freeCount + count - 1 - i;
            sizeClass.freeIds[top] = first + i;
            sizeClass.free[top] = slices[first + i];
        }
        sizeClass.freeCount += count;
        sizeClass.total += count;
        slabClass[slab] = (byte) classIndex;
        slabSlices[slab] = count;
        slabFree[slab] = count;
        wholeFreeSlabs++;
    }

    /** Cuts {@code slab}'s memory into {@code count} slices of one class and registers them; returns the first id. */
    private int cut(int slab, int classIndex, int count) {
        int size = classes[classIndex].size;
        ByteBuffer memory = slabMemory[slab].clear();
        ensureRegistryCapacity(sliceCount + count);
        int first = sliceCount;
        for (int i = 0; i < count; i++) {
            memory.limit((i + 1) * size).position(i * size);
            ByteBuffer slice = memory.slice().order(ByteOrder.LITTLE_ENDIAN);
            int id = sliceCount++;
            slices[id] = slice;
            sliceClass[id] = (byte) classIndex;
            sliceSlab[id] = slab;
            sliceOffset[id] = slabOffset[slab] < 0 ? -1 : slabOffset[slab] + (long) i * size;
            insert(slice, id);
        }
        return first;
    }

    /** Room for {@code total} registered slices in the registry and, at most half full, in the identity table. */
    private void ensureRegistryCapacity(int total) {
        if (total > slices.length) {
            int size = Math.max(total, slices.length * 2);
            slices = Arrays.copyOf(slices, size);
            sliceClass = Arrays.copyOf(sliceClass, size);
            sliceSlab = Arrays.copyOf(sliceSlab, size);
            sliceOffset = Arrays.copyOf(sliceOffset, size);
            inUse = Arrays.copyOf(inUse, size);
        }
        // Keep the identity table at most half full so probes stay short.
        if (total * 2 > tableKeys.length) {
            int size = tableKeys.length;
            while (total * 2 > size) {
                size <<= 1;
            }
            tableKeys = new Object[size];
            tableIds = new int[size];
            for (int id = 0; id < sliceCount; id++) {
                insert(slices[id], id);
            }
        }
    }

    private void insert(ByteBuffer slice, int id) {
        int mask = tableKeys.length - 1;
        int i = mix(System.identityHashCode(slice)) & mask;
        while (tableKeys[i] != null) {
            i = (i + 1) & mask;
        }
        tableKeys[i] = slice;
        tableIds[i] = id;
    }

    /** The id of {@code buffer} if it is one of this pool's slices of the current carve, else -1. */
    private int lookup(ByteBuffer buffer) {
        if (buffer == null) {
            return -1;
        }
        Object[] keys = tableKeys;
        int mask = keys.length - 1;
        int i = mix(System.identityHashCode(buffer)) & mask;
        Object key;
        while ((key = keys[i]) != null) {
            if (key == buffer) {
                int id = tableIds[i];
                return sliceClass[id] == slabClass[sliceSlab[id]] ? id : -1;
            }
            i = (i + 1) & mask;
        }
        return -1;
    }

    private static int mix(int hash) {
        return hash ^ (hash >>> 16);
    }

    /** Slices registered: one set per (slab, class) pair carved so far, fewer than 2 * capacity / 4096 (tests). */
    int registryHighWater() {
        return sliceCount;
    }

    /** Slots of the identity table: at most twice the registry's, rounded up to a power of two (tests). */
    int identityTableLength() {
        return tableKeys.length;
    }

    @Override
    public String toString() {
        return "OffHeapBufferPool[max=" + maxBufferSize + " capacity=" + capacityBytes + " allocated="
            + bytesAllocated + " inUse=" + buffersInUse + "]";
    }

    /** One power-of-two class: its free stack of slices (and their ids, to mark them in use without a lookup). */
    private static final class SizeClass {
        final int size;
        ByteBuffer[] free = new ByteBuffer[0];
        int[] freeIds = new int[0];
        int freeCount;
        int total;

        SizeClass(int size) {
            this.size = size;
        }

        void ensureCapacity(int needed) {
            if (needed > free.length) {
                int newSize = Math.max(needed, free.length * 2);
                free = Arrays.copyOf(free, newSize);
                freeIds = Arrays.copyOf(freeIds, newSize);
            }
        }
    }
}
