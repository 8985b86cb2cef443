package io.nvmeof4j.target.backend;

import io.nvmeof4j.jni.cpu.ReactorPinning;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.nio.ByteBuffer;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.concurrent.locks.LockSupport;

/**
 * A few pre-faulted hugepage chunks for the first writes of RAM namespaces with {@code hugepages}, so that the first
 * touch of a 2 MiB page, which costs milliseconds on a VM whose host takes back free guest memory
 * ({@link ChunkMemory}), runs on a background thread ({@value #THREAD_NAME}, on the housekeeping CPUs when reactors
 * are pinned) instead of a reactor. A chunk commit {@link #take}s one without waiting; when the reserve is empty the
 * reactor maps and faults its chunk itself, as without a reserve. After each take the filler maps a new chunk,
 * faults it in and puts it back, up to {@link #chunks()}.
 * <p>One reserve per process while at least one hugepage RAM device is open ({@link #acquire}, {@link #release}):
 * the last device's close stops the filler (a bounded join) and drops the chunks, which the collector unmaps as any
 * dropped chunk. Reserve chunks count against {@link ChunkMemory}'s limit as held chunks; at the limit the reserve
 * stays smaller (the filler never collects, waits or fails anything), and a commit then maps its chunk as before.
 * <p>The data path side ({@link #take}) is lock-free and allocates nothing: a CAS over a few slots, and one unpark of
 * the filler.
 */
final class ChunkReserve {
    /** The reserve's size, chunks of {@link RamBlockDevice#HUGEPAGE_CHUNK_SIZE}: 16 MiB. */
    static final int CHUNKS_DEFAULT = 8;
    static final String THREAD_NAME = "nvmeof-hugepage-reserve";
    /** Bound of the join when the reserve stops: a few chunks' faults on the slowest VM seen (4 ms each). */
    static final long STOP_TIMEOUT_MS = 2_000;
    /** The filler's wait while the reserve is full: a take wakes it; the bound is only the project's rule. */
    private static final long FULL_WAIT_NANOS = TimeUnit.SECONDS.toNanos(10);
    /** The filler's wait after the limit (or the system) refused a chunk: memory comes back without a signal. */
    private static final long SHORT_WAIT_NANOS = TimeUnit.SECONDS.toNanos(1);
    /** The page size the kernel falls back to when it has no free 2 MiB page for a fault. */
    private static final int SMALL_PAGE = 4096;
    private static final int CHUNK = RamBlockDevice.HUGEPAGE_CHUNK_SIZE;
    private static final Logger LOG = LoggerFactory.getLogger(ChunkReserve.class);

    private static final Object LIFECYCLE = new Object();
    /** The process's reserve while hugepage devices are open (guarded by {@link #LIFECYCLE}). */
    private static ChunkReserve shared;
    private static int users;

    private final AtomicReferenceArray<ByteBuffer> slots;
    private final Thread filler;
    private final AtomicLong taken = new AtomicLong();
    private final AtomicLong missed = new AtomicLong();
    private final AtomicLong filled = new AtomicLong();
    private volatile boolean running = true;

    /** Starts a reserve of {@code chunks} chunks and its filler (tests; devices use {@link #acquire}). */
    ChunkReserve(int chunks) {
        if (chunks < 1) {
            throw new IllegalArgumentException("a reserve of " + chunks + " chunks");
        }
        this.slots = new AtomicReferenceArray<>(chunks);
        // Made by the daemon's start or a live change, or a test: off a reactor's CPU in any case (ReactorPinning).
        this.filler = new Thread(ReactorPinning.housekeeping(this::fill), THREAD_NAME);
        filler.setDaemon(true);
        filler.start();
    }

    /** A hugepage RAM device was made: the process's reserve, started for the first one. */
    static ChunkReserve acquire() {
        synchronized (LIFECYCLE) {
            if (users++ == 0) {
                shared = new ChunkReserve(CHUNKS_DEFAULT);
            }
            return shared;
        }
    }

    /** A device that {@link #acquire}d {@code reserve} closed: the last one stops and drops it. */
    static void release(ChunkReserve reserve) {
        synchronized (LIFECYCLE) {
            if (reserve != shared || users == 0) {
                throw new IllegalStateException("released a reserve that is not the process's");
            }
            if (--users == 0) {
                shared = null;
                reserve.close();
                LOG.info("hugepage chunk reserve stopped: {} chunks pre-faulted, {} taken by first writes, {} first "
                    + "writes found it empty and faulted their own", reserve.filled(), reserve.taken(),
                    reserve.missed());
            }
        }
    }

    /** The process's reserve, or null while no hugepage RAM device is open. */
    static ChunkReserve current() {
        synchronized (LIFECYCLE) {
            return shared;
        }
    }

    /**
     * A zeroed, faulted-in chunk of {@link RamBlockDevice#HUGEPAGE_CHUNK_SIZE} bytes, no longer counted as the
     * reserve's (the taker reports it {@link ChunkMemory#held}), or null when the reserve is empty. Never waits.
     */
    ByteBuffer take() {
        for (int i = 0; i < slots.length(); i++) {
            ByteBuffer chunk = slots.get(i);
            if (chunk != null && slots.compareAndSet(i, chunk, null)) {
                ChunkMemory.held(-CHUNK);
                taken.incrementAndGet();
                LockSupport.unpark(filler);
                return chunk;
            }
        }
        missed.incrementAndGet();
        LockSupport.unpark(filler);
        return null;
    }

    /** The reserve's size in chunks. */
    int chunks() {
        return slots.length();
    }

    /** Chunks in the reserve now. */
    int available() {
        int n = 0;
        for (int i = 0; i < slots.length(); i++) {
            if (slots.get(i) != null) {
                n++;
            }
        }
        return n;
    }

    /** Chunks handed out by {@link #take}. */
    long taken() {
        return taken.get();
    }

    /** Takes that found the reserve empty: chunks their reactor mapped and faulted itself. */
    long missed() {
        return missed.get();
    }

    /** Chunks the filler mapped and faulted in. */
    long filled() {
        return filled.get();
    }

    /** True while the filler thread runs. */
    boolean fillerAlive() {
        return filler.isAlive();
    }

    /** Stops the filler (at most {@value #STOP_TIMEOUT_MS} ms) and drops the chunks. Idempotent. */
    void close() {
        running = false;
        LockSupport.unpark(filler);
        try {
            filler.join(STOP_TIMEOUT_MS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        if (filler.isAlive()) {
            // Still faulting a chunk in: it sees the stop after that and drops what it made (fill's last step).
            LOG.warn("{} did not stop within {} ms; it drops its chunks when it does", THREAD_NAME, STOP_TIMEOUT_MS);
        }
        drop();
    }

    private void fill() {
        while (running) {
            boolean refused = false;
            for (int i = 0; i < slots.length() && running; i++) {
                if (slots.get(i) != null) {
                    continue;
                }
                ByteBuffer chunk = ChunkMemory.mapIfRoom(CHUNK);
                if (chunk == null) {
                    refused = true; // the limit, or no memory: stay smaller, try again later
                    break;
                }
                prefault(chunk);
                ChunkMemory.held(CHUNK);
                filled.incrementAndGet();
                slots.set(i, chunk); // only this thread fills slots; takers only empty them
            }
            if (running) {
                LockSupport.parkNanos(this, refused ? SHORT_WAIT_NANOS : FULL_WAIT_NANOS);
            }
        }
        drop();
    }

    /**
     * Writes one zero byte per 4 KiB. The first write of a 2 MiB-aligned chunk advised for transparent hugepages
     * makes the kernel allocate and zero the whole 2 MiB page (AnonHugePages grows by 2048 KiB) when it has a free one
     * (with THP defrag "madvise", Debian's default, it compacts for one here, on this thread); when it has none, or THP
     * is off, that fault maps a single 4 KiB page, and the chunk's other 511 would each fault on the reactor later. So
     * one write per 4 KiB page: on a hugepage the 511 others are plain stores into memory already mapped (a few
     * µs for the chunk, against milliseconds for the fault), otherwise each faults its page in here. A read would not
     * do: a read fault maps the shared zero page and allocates nothing.
     */
    private static void prefault(ByteBuffer chunk) {
        for (int i = 0; i < chunk.capacity(); i += SMALL_PAGE) {
            chunk.put(i, (byte) 0);
        }
    }

    private void drop() {
        for (int i = 0; i < slots.length(); i++) {
            if (slots.getAndSet(i, null) != null) {
                ChunkMemory.held(-CHUNK); // unmapped by the collector, as a dropped device chunk
            }
        }
    }
}
