package io.nvmeof4j.protocol.buffer;

import io.nvmeof4j.protocol.spi.BufferPool;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;

/**
 * A {@link BufferPool} of direct {@link ByteBuffer} slices in power-of-two size classes from 4 KiB to
 * {@link #maxBufferSize()} (architecture: pre-registered memory pools; TCP uses the slices directly).
 * <p>Memory comes in slabs: one direct allocation per slab, cut into equal slices of one class. Slabs are made
 * lazily, the first time a class runs dry, so an idle daemon holds only what it once needed; the total never
 * exceeds {@code capacityBytes}, after which {@link #acquire} returns {@code null} and the caller waits for a
 * release. Memory never moves between classes, and slabs are never given back: the pool keeps its high-water mark.
 * <p>Each class keeps its free slices on a LIFO stack (the most recently used buffer is the one still in cache),
 * so {@link #acquire} and {@link #release} are a few array operations and allocate nothing once the slabs exist.
 * {@link #release} checks that a buffer is one of this pool's slices and not already free: it finds the slice's
 * id in an open-addressing identity table (arrays filled when a slab is made; a lookup is
 * {@link System#identityHashCode} and a probe, no allocation) and keeps one in-use bit per slice.
 * <p>Not thread-safe: the owning reactor thread acquires and releases. {@link #buffersInUse()} may be read from
 * another thread for metrics; it then sees a recent, not necessarily the latest, value.
 */
public final class OffHeapBufferPool implements BufferPool {
    /** The smallest size class; any request of up to 4 KiB gets one of these. */
    public static final int MIN_BUFFER_SIZE = 4096;
    public static final int MAX_BUFFER_SIZE_DEFAULT = 1 << 20;
    /** Bytes per slab of the small classes; a class larger than this gets one slice per slab. */
    public static final int SLAB_SIZE = 1 << 20;

    private final int maxBufferSize;
    private final long capacityBytes;
    private final SizeClass[] classes;
    /** The block slabs are carved from, or null when each slab is its own allocation. */
    private final ByteBuffer region;
    /** Bytes of the region handed to slabs so far. */
    private long regionUsed;

    private long bytesAllocated;
    private int buffersInUse;

    // Slice registry: id -> slice, id -> in use, identity table slice -> id.
    private ByteBuffer[] slices = new ByteBuffer[64];
    private byte[] sliceClass = new byte[64];
    private long[] sliceOffset = new long[64];
    private boolean[] inUse = new boolean[64];
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
        if (sizeClass.freeCount == 0 && !addSlab(classIndex)) {
            return null;
        }
        ByteBuffer buffer = sizeClass.free[--sizeClass.freeCount];
        sizeClass.free[sizeClass.freeCount] = null;
        inUse[sizeClass.freeIds[sizeClass.freeCount]] = true;
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

    /** Bytes of slabs allocated so far (the pool's high-water mark). */
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

    /** Allocates one slab for a class that ran dry. Not the steady state: this allocates. */
    private boolean addSlab(int classIndex) {
        SizeClass sizeClass = classes[classIndex];
        long room = capacityBytes - bytesAllocated;
        long slabBytes = Math.min(Math.max(sizeClass.size, SLAB_SIZE), room);
        int count = (int) (slabBytes / sizeClass.size);
        if (count == 0) {
            return false;
        }
        ByteBuffer slab;
        long slabOffset = regionUsed;
        if (region != null) {
            slab = region.duplicate().limit((int) (slabOffset + (long) count * sizeClass.size))
                .position((int) slabOffset).slice();
            regionUsed += (long) count * sizeClass.size;
        } else {
            try {
                slab = ByteBuffer.allocateDirect(count * sizeClass.size);
            } catch (OutOfMemoryError e) {
                // Direct memory is used up (RAM namespaces share it): behave as an exhausted pool, so the command
                // waits for a buffer instead of the error ending the reactor and every queue on it.
                return false;
            }
        }
        bytesAllocated += (long) count * sizeClass.size;
        sizeClass.ensureCapacity(sizeClass.total + count);
        ensureRegistryCapacity(sliceCount + count);
        for (int i = 0; i < count; i++) {
            slab.limit((i + 1) * sizeClass.size).position(i * sizeClass.size);
            ByteBuffer slice = slab.slice().order(ByteOrder.LITTLE_ENDIAN);
            int id = sliceCount++;
            slices[id] = slice;
            sliceClass[id] = (byte) classIndex;
            sliceOffset[id] = slabOffset + (long) i * sizeClass.size;
            insert(slice, id);
            // Push in reverse so the stack hands out the slab's slices in address order.
            sizeClass.freeIds[sizeClass.freeCount + count - 1 - i] = id;
            sizeClass.free[sizeClass.freeCount + count - 1 - i] = slice;
        }
        sizeClass.freeCount += count;
        sizeClass.total += count;
        return true;
    }

    private void ensureRegistryCapacity(int needed) {
        if (needed > slices.length) {
            int size = Math.max(needed, slices.length * 2);
            slices = Arrays.copyOf(slices, size);
            sliceClass = Arrays.copyOf(sliceClass, size);
            sliceOffset = Arrays.copyOf(sliceOffset, size);
            inUse = Arrays.copyOf(inUse, size);
        }
        // Keep the identity table at most half full so probes stay short.
        if (needed * 2 > tableKeys.length) {
            int size = tableKeys.length;
            while (needed * 2 > size) {
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
