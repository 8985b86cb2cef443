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
 * free slices, kept by {@link #acquire} and {@link #release}; the re-carve itself scans the slabs and allocates the
 * new slices (the slow path, under pressure). Only when no such slab exists does {@link #acquire} return
 * {@code null}, and the caller waits for a release (a poll group retries its waiting commands every round).
 * <p>Each class keeps its free slices on a LIFO stack (the most recently used buffer is the one still in cache),
 * so {@link #acquire} and {@link #release} are a few array operations and allocate nothing once the slabs exist.
 * {@link #release} checks that a buffer is one of this pool's slices and not already free: it finds the slice's
 * id in an open-addressing identity table (arrays filled when a slab is carved; a lookup is
 * {@link System#identityHashCode} and a probe, no allocation) and keeps one in-use bit per slice. A re-carve
 * deletes the old slices from the table (backward shift) and recycles their ids, so shifts back and forth between
 * classes do not grow the registry: it holds at most {@code capacityBytes / 4096} slices.
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

    // Slice registry: id -> slice, its class, slab, region offset, in use; identity table slice -> id.
    private ByteBuffer[] slices = new ByteBuffer[64];
    private byte[] sliceClass = new byte[64];
    private int[] sliceSlab = new int[64];
    private long[] sliceOffset = new long[64];
    private boolean[] inUse = new boolean[64];
    /** Ids handed out so far; ids below it without a slice are on the recycled stack. */
    private int sliceCount;
    private int liveSlices;
    private int[] recycledIds = new int[64];
    private int recycledCount;
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
     * is the region's address plus this. Returns -1 for a buffer that is not this pool's, or when the pool has no
     * region. A table lookup; allocates nothing.
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
     * the last slab it has free when another can spare one. Slow path: scans the slabs, allocates the new slices.
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

    /** Takes every slice of {@code slab} (all free) off its class's stack, the registry and the identity table. */
    private void retireSlices(int slab) {
        SizeClass owner = classes[slabClass[slab]];
        int kept = 0;
        for (int i = 0; i < owner.freeCount; i++) {
            int id = owner.freeIds[i];
            if (sliceSlab[id] == slab) {
                remove(slices[id]);
                slices[id] = null;
                recycledIds[recycledCount++] = id;
                liveSlices--;
            } else {
                owner.free[kept] = owner.free[i];
                owner.freeIds[kept++] = id;
            }
        }
        Arrays.fill(owner.free, kept, owner.freeCount, null);
        owner.freeCount = kept;
        owner.total -= slabSlices[slab];
        wholeFreeSlabs--;
    }

    /** Cuts {@code slab}'s memory into free slices of one class and registers them. */
    private void carve(int slab, int classIndex) {
        SizeClass sizeClass = classes[classIndex];
        ByteBuffer memory = slabMemory[slab].clear();
        int count = memory.capacity() / sizeClass.size;
        sizeClass.ensureCapacity(sizeClass.total + count);
        ensureRegistryCapacity(liveSlices + count);
        for (int i = 0; i < count; i++) {
            memory.limit((i + 1) * sizeClass.size).position(i * sizeClass.size);
            ByteBuffer slice = memory.slice().order(ByteOrder.LITTLE_ENDIAN);
            int id = recycledCount > 0 ? recycledIds[--recycledCount] : sliceCount++;
            slices[id] = slice;
            sliceClass[id] = (byte) classIndex;
            sliceSlab[id] = slab;
            sliceOffset[id] = slabOffset[slab] < 0 ? -1 : slabOffset[slab] + (long) i * sizeClass.size;
            inUse[id] = false;
            insert(slice, id);
            // Push in reverse so the stack hands out the slab's slices in address order.
            sizeClass.freeIds[sizeClass.freeCount + count - 1 - i] = id;
            sizeClass.free[sizeClass.freeCount + count - 1 - i] = slice;
        }
        liveSlices += count;
        sizeClass.freeCount += count;
        sizeClass.total += count;
        slabClass[slab] = (byte) classIndex;
        slabSlices[slab] = count;
        slabFree[slab] = count;
        wholeFreeSlabs++;
    }

    /** Room for {@code live} slices: the registry holds ids below the most slices ever live at once. */
    private void ensureRegistryCapacity(int live) {
        // Ids come from the recycled stack first, so no id reaches sliceCount + (live - liveSlices).
        int needed = sliceCount + Math.max(0, live - liveSlices - recycledCount);
        if (needed > slices.length) {
            int size = Math.max(needed, slices.length * 2);
            slices = Arrays.copyOf(slices, size);
            sliceClass = Arrays.copyOf(sliceClass, size);
            sliceSlab = Arrays.copyOf(sliceSlab, size);
            sliceOffset = Arrays.copyOf(sliceOffset, size);
            inUse = Arrays.copyOf(inUse, size);
            recycledIds = Arrays.copyOf(recycledIds, size);
        }
        // Keep the identity table at most half full so probes stay short.
        if (live * 2 > tableKeys.length) {
            int size = tableKeys.length;
            while (live * 2 > size) {
                size <<= 1;
            }
            tableKeys = new Object[size];
            tableIds = new int[size];
            for (int id = 0; id < sliceCount; id++) {
                if (slices[id] != null) {
                    insert(slices[id], id);
                }
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

    /**
     * Deletes {@code slice} (present) from the linear-probing table by backward shift: each later entry of the
     * probe run whose home is not cyclically in (hole, its slot] moves into the hole, so no tombstones build up and
     * lookups still stop at the first empty slot.
     */
    private void remove(ByteBuffer slice) {
        int mask = tableKeys.length - 1;
        int hole = mix(System.identityHashCode(slice)) & mask;
        while (tableKeys[hole] != slice) {
            hole = (hole + 1) & mask;
        }
        for (int j = (hole + 1) & mask; tableKeys[j] != null; j = (j + 1) & mask) {
            int home = mix(System.identityHashCode(tableKeys[j])) & mask;
            boolean stays = hole <= j ? hole < home && home <= j : hole < home || home <= j;
            if (!stays) {
                tableKeys[hole] = tableKeys[j];
                tableIds[hole] = tableIds[j];
                hole = j;
            }
        }
        tableKeys[hole] = null;
    }

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
                return tableIds[i];
            }
            i = (i + 1) & mask;
        }
        return -1;
    }

    private static int mix(int hash) {
        return hash ^ (hash >>> 16);
    }

    /** Slice ids ever handed out, the length the registry needs: at most capacity / 4096 (tests). */
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
