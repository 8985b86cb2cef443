package io.nvmeof4j.target.backend;

import io.nvmeof4j.protocol.command.NvmeStatus;
import io.nvmeof4j.target.reactor.Reactor;

import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReferenceArray;

/**
 * A namespace in memory, off-heap: the capacity is a table of 1 MiB chunks, each a direct buffer created by the
 * first write that touches it or, for a device handed to a {@link RamPopulator} (the daemon's, unless the RAM budget
 * is overcommitted), by that populator's background thread, so that first writes find their chunk ready as in
 * SPDK's malloc bdev. Without population an untouched 1 GiB namespace costs a 1024-entry table. With
 * {@code hugepages} (the daemon's default for populated namespaces), chunks are 2 MiB, each one transparent hugepage
 * where the kernel allows them ({@link ChunkMemory}); the last chunk is as long as what is left of the capacity.
 * Reads of never-written chunks return zeros. Write Zeroes and Deallocate drop every chunk they cover whole and zero
 * the bytes of partly covered ones; a populated device tells its populator, which makes the dropped chunks again
 * (a host's discard of the whole device, as mkfs does, would otherwise leave every first write after it to make its
 * chunk on the reactor).
 * <p>I/O completes inline on the caller's (reactor's) thread and allocates nothing except a chunk's one-time
 * creation. Several reactors may use one device: chunks are published with a CAS, bytes are copied with absolute
 * bulk operations that never move a shared buffer's position. A read the transport can send from any memory
 * ({@link BlockIo#mayLend}: NVMe/TCP without data digest) and that lies in one written chunk is not copied at all:
 * the reactor's own view of the chunk is lent to it ({@link #lend}), and the socket copies the bytes from there.
 * <p>Dropped chunks are returned to the operating system when the garbage collector reclaims their buffer (a
 * concurrent reader may still be copying out of it, or a lent view still being sent, so they cannot be freed
 * eagerly). Chunk creation counts
 * against {@code -XX:MaxDirectMemorySize}; a write that cannot get memory fails with Capacity Exceeded and DNR (the
 * reactor keeps running), counted in {@link #allocationFailures()}. The daemon's RAM budget keeps the sum of RAM
 * namespace sizes within the memory the JVM may use, so that happens only when something else took the memory.
 */
public final class RamBlockDevice implements BlockDevice {
    /** A chunk's size: 1 MiB, the thin-provisioning grain. */
    public static final int CHUNK_SIZE = 1 << 20;
    /** A chunk's size with {@code hugepages}: one transparent hugepage. */
    public static final int HUGEPAGE_CHUNK_SIZE = 2 << 20;

    private final String name;
    private final long capacityBytes;
    private final int blockSize;
    private final AtomicReferenceArray<ByteBuffer> chunks;
    private final AtomicLong committedBytes = new AtomicLong();
    /** Not a LongAdder: it grows only on a failure path, and a reader wants the plain value. */
    private final AtomicLong allocationFailures = new AtomicLong();
    private final boolean hugepages;
    private final int chunkSize;
    private final int chunkShift;
    private final long chunkMask;
    private volatile boolean closed;
    /** Told, on the dropping thread, that whole chunks were dropped (set once by a {@link RamPopulator}), or null. */
    private volatile Runnable chunksDropped;
    /** Each reactor's views of the chunks it lends reads from ({@link #lend}); copied on write, once per reactor. */
    private volatile Lender[] lenders = new Lender[0];

    /**
     * @param name      for logs ("subsystem nsid" or a path); may be empty
     * @param sizeBytes a positive multiple of {@code blockSize}
     * @param blockSize 512 or 4096 (any power of two in 512..65536)
     */
    public RamBlockDevice(String name, long sizeBytes, int blockSize) {
        this(name, sizeBytes, blockSize, false);
    }

    /**
     * @param hugepages chunks on transparent hugepages (faster copies; a costlier first touch per chunk: see
     *                  {@link ChunkMemory})
     */
    public RamBlockDevice(String name, long sizeBytes, int blockSize, boolean hugepages) {
        DeviceSupport.checkGeometry(sizeBytes, blockSize);
        this.chunkSize = hugepages ? HUGEPAGE_CHUNK_SIZE : CHUNK_SIZE;
        this.chunkShift = Integer.numberOfTrailingZeros(chunkSize);
        this.chunkMask = chunkSize - 1;
        long chunkCount = (sizeBytes + chunkSize - 1) >>> chunkShift;
        if (chunkCount > Integer.MAX_VALUE - 8) {
            throw new IllegalArgumentException("size " + sizeBytes + " is too large for a RAM device");
        }
        this.name = name;
        this.capacityBytes = sizeBytes;
        this.blockSize = blockSize;
        this.chunks = new AtomicReferenceArray<>((int) chunkCount);
        this.hugepages = hugepages;
    }

    @Override
    public String description() {
        return "ram " + DeviceSupport.formatSize(capacityBytes) + (name.isEmpty() ? "" : " " + name);
    }

    @Override
    public int blockSize() {
        return blockSize;
    }

    @Override
    public long blockCount() {
        return capacityBytes / blockSize;
    }

    /** Data lives in memory only: there is nothing a Flush could make more durable. */
    @Override
    public boolean hasVolatileWriteCache() {
        return false;
    }

    /** Writes refused because a chunk could not be allocated. */
    public long allocationFailures() {
        return allocationFailures.get();
    }

    /** Bytes of chunks currently held (written and not dropped since). */
    public long committedBytes() {
        return committedBytes.get();
    }

    @Override
    public void submit(BlockIo io) {
        if (closed) {
            io.complete(DeviceSupport.STATUS_CLOSED);
            return;
        }
        int status = DeviceSupport.check(io, capacityBytes, blockSize);
        if (status == NvmeStatus.SUCCESS) {
            switch (io.op()) {
                case READ:
                    if (!io.mayLend() || !lend(io)) {
                        read(io.offset(), (int) io.length(), io.buffer());
                    }
                    break;
                case WRITE:
                    status = write(io.offset(), (int) io.length(), io.buffer());
                    break;
                case WRITE_ZEROES:
                case DEALLOCATE:
                    zero(io.offset(), io.length());
                    break;
                case FLUSH:
                default:
                    break;
            }
        }
        io.complete(status);
    }

    private void read(long offset, int length, ByteBuffer dst) {
        int index = dst.position();
        while (length > 0) {
            int chunkIndex = (int) (offset >>> chunkShift);
            int chunkOffset = (int) (offset & chunkMask);
            int n = Math.min(length, chunkSize - chunkOffset);
            ByteBuffer chunk = chunks.get(chunkIndex);
            if (chunk == null) {
                DeviceSupport.zero(dst, index, n);
            } else {
                dst.put(index, chunk, chunkOffset, n);
            }
            offset += n;
            index += n;
            length -= n;
        }
    }

    /**
     * Lends the chunk memory a READ covers instead of copying it: when the range lies in one chunk that exists and
     * the caller is a reactor. The view is that reactor's own duplicate of the chunk ({@link Lender}), so reactors
     * never move each other's positions; it keeps the chunk reachable (its memory mapped) while the transport sends
     * from it, even if a Deallocate drops the chunk meanwhile.
     */
    private boolean lend(BlockIo io) {
        long offset = io.offset();
        int chunkIndex = (int) (offset >>> chunkShift);
        int chunkOffset = (int) (offset & chunkMask);
        if (chunkOffset + io.length() > chunkSize) {
            return false;
        }
        ByteBuffer chunk = chunks.get(chunkIndex);
        Reactor reactor = Reactor.current();
        if (chunk == null || reactor == null) {
            return false;
        }
        Lender lender = lender(reactor);
        io.lend(lender.view(chunkIndex, chunk), chunkOffset);
        lender.lent++;
        return true;
    }

    /** Reads served from lent chunk memory instead of a copy, over all reactors (approximate while they run). */
    public long lentReads() {
        long sum = 0;
        for (Lender l : lenders) {
            sum += l.lent;
        }
        return sum;
    }

    private Lender lender(Reactor reactor) {
        Lender[] ls = lenders;
        for (Lender l : ls) {
            if (l.reactor == reactor) {
                return l;
            }
        }
        synchronized (this) { // once per reactor and device
            Lender[] now = lenders;
            Lender made = new Lender(reactor, chunks.length());
            Lender[] grown = Arrays.copyOf(now, now.length + 1);
            grown[now.length] = made;
            lenders = grown;
            return made;
        }
    }

    /** Drops every reactor's view of chunk {@code chunkIndex}, so that a dropped chunk's memory can be let go. */
    private void forgetViews(int chunkIndex) {
        for (Lender l : lenders) {
            l.forget(chunkIndex);
        }
    }

    /**
     * One reactor's views of this device's chunks: {@value #VIEWS_PER_CHUNK} per chunk, handed out in turn, made
     * at the first reads it lends from each chunk (none per I/O once made; about 0.05 % of a 1 MiB chunk). A send
     * takes one range of a buffer per gathering write, so reads of one chunk in flight together need views of their
     * own to go out in one write (sequential 128 KiB reads at QD8 are 8 ranges of one chunk). Written by its
     * reactor; {@link #forget} (a Deallocate's thread) only clears, so at worst views made at the same moment keep a
     * dropped chunk until that reactor reads the chunk again.
     */
    private static final class Lender {
        static final int VIEWS_PER_CHUNK = 8;

        final Reactor reactor;
        private final ChunkViews[] chunks;
        /** Reads lent; written by the reactor only. */
        long lent;

        Lender(Reactor reactor, int chunkCount) {
            this.reactor = reactor;
            this.chunks = new ChunkViews[chunkCount];
        }

        ByteBuffer view(int chunkIndex, ByteBuffer chunk) {
            ChunkViews views = chunks[chunkIndex];
            if (views == null || views.source != chunk) {
                views = new ChunkViews(chunk);
                chunks[chunkIndex] = views;
            }
            return views.next();
        }

        void forget(int chunkIndex) {
            chunks[chunkIndex] = null;
        }
    }

    /** A reactor's views of one chunk, handed out in turn. */
    private static final class ChunkViews {
        final ByteBuffer source;
        private final ByteBuffer[] views = new ByteBuffer[Lender.VIEWS_PER_CHUNK];
        private int turn;

        ChunkViews(ByteBuffer source) {
            this.source = source;
        }

        ByteBuffer next() {
            int i = turn;
            turn = (i + 1) & (views.length - 1);
            ByteBuffer view = views[i];
            if (view == null) {
                view = source.duplicate();
                views[i] = view;
            }
            return view;
        }
    }

    private int write(long offset, int length, ByteBuffer src) {
        int index = src.position();
        while (length > 0) {
            int chunkIndex = (int) (offset >>> chunkShift);
            int chunkOffset = (int) (offset & chunkMask);
            int n = Math.min(length, chunkSize - chunkOffset);
            ByteBuffer chunk = chunks.get(chunkIndex);
            if (chunk == null) {
                chunk = createChunk(chunkIndex);
                if (chunk == null) {
                    return NvmeStatus.CAPACITY_EXCEEDED | NvmeStatus.DNR;
                }
            }
            chunk.put(chunkOffset, src, index, n);
            offset += n;
            index += n;
            length -= n;
        }
        return NvmeStatus.SUCCESS;
    }

    private void zero(long offset, long length) {
        boolean droppedAny = false;
        while (length > 0) {
            int chunkIndex = (int) (offset >>> chunkShift);
            int chunkOffset = (int) (offset & chunkMask);
            int chunkLength = chunkLength(chunkIndex);
            int n = (int) Math.min(length, chunkLength - chunkOffset);
            if (chunkOffset == 0 && n == chunkLength) {
                ByteBuffer dropped = chunks.getAndSet(chunkIndex, null);
                if (dropped != null) {
                    commit(-dropped.capacity());
                    forgetViews(chunkIndex);
                    droppedAny = true;
                }
            } else {
                ByteBuffer chunk = chunks.get(chunkIndex);
                if (chunk != null) {
                    DeviceSupport.zero(chunk, chunkOffset, n);
                }
            }
            offset += n;
            length -= n;
        }
        Runnable listener = chunksDropped;
        if (droppedAny && listener != null) {
            listener.run();
        }
    }

    /** Has {@code listener} told, on the dropping thread, whenever Write Zeroes or Deallocate drop whole chunks. */
    void onChunksDropped(Runnable listener) {
        chunksDropped = listener;
    }

    private int chunkLength(int chunkIndex) {
        return (int) Math.min(chunkSize, capacityBytes - ((long) chunkIndex << chunkShift));
    }

    /** Creates and publishes a zeroed chunk; returns the published one (ours or a racing writer's), or null. */
    private ByteBuffer createChunk(int chunkIndex) {
        ByteBuffer created = ChunkMemory.allocate(chunkLength(chunkIndex), hugepages);
        if (created == null) {
            // Direct memory limit reached (-XX:MaxDirectMemorySize) or no memory: a thin-provisioned device out of
            // space.
            allocationFailures.incrementAndGet();
            return null;
        }
        return publish(chunkIndex, created);
    }

    /** Chunks in the table (the last one may be shorter than the chunk size). */
    int chunkCount() {
        return chunks.length();
    }

    boolean isClosed() {
        return closed;
    }

    /**
     * Population ({@link RamPopulator}, off the reactors): commits chunk {@code chunkIndex} if it is still empty, a
     * hugepage chunk touched in ({@link ChunkMemory#touch}). Returns false when the memory limit or the system
     * refused it: not a write failure, so not counted in {@link #allocationFailures()}.
     */
    boolean populate(int chunkIndex) {
        if (chunks.get(chunkIndex) != null) {
            return true;
        }
        ByteBuffer created = ChunkMemory.allocate(chunkLength(chunkIndex), hugepages);
        if (created == null) {
            return false;
        }
        if (hugepages) {
            ChunkMemory.touch(created);
        }
        publish(chunkIndex, created);
        return true;
    }

    /**
     * The one publish step of a new chunk (a first write's or population's): a CAS into the table. A chunk another
     * thread published first is kept and returned, {@code created} dropped; a device closed meanwhile drops it again.
     */
    private ByteBuffer publish(int chunkIndex, ByteBuffer created) {
        while (true) {
            if (chunks.compareAndSet(chunkIndex, null, created)) {
                commit(created.capacity());
                if (closed) {
                    // close() may have swept this slot before our CAS: nothing stays committed after a close.
                    ByteBuffer dropped = chunks.getAndSet(chunkIndex, null);
                    if (dropped != null) {
                        commit(-dropped.capacity());
                    }
                }
                return created;
            }
            ByteBuffer winner = chunks.get(chunkIndex);
            if (winner != null) {
                return winner;
            }
            // A racing Deallocate dropped the winner again: publish ours after all.
        }
    }

    /**
     * Drops every chunk and stops its population (the populator sees the close before its next chunk). In-flight
     * I/O (inline, on other threads) finishes on the buffers it already holds.
     */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        synchronized (this) {
            lenders = new Lender[0];
        }
        for (int i = 0; i < chunks.length(); i++) {
            ByteBuffer dropped = chunks.getAndSet(i, null);
            if (dropped != null) {
                commit(-dropped.capacity());
            }
        }
    }

    private void commit(long delta) {
        committedBytes.addAndGet(delta);
        if (hugepages) {
            ChunkMemory.held(delta);
        }
    }

    @Override
    public String toString() {
        return description();
    }
}
