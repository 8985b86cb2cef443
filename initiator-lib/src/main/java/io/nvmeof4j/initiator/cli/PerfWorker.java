package io.nvmeof4j.initiator.cli;

import io.nvmeof4j.initiator.IoCallback;
import io.nvmeof4j.initiator.BlockNamespace;
import org.HdrHistogram.SingleWriterRecorder;

import java.nio.ByteBuffer;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * One perf queue: {@code depth} slots (buffer + submit time) kept in flight by resubmitting from the completion
 * callback, so the depth stays constant and the next I/O skips the cross-thread hand-off. All completions of a
 * worker run on the one host reactor thread that owns its I/O queue, which makes that thread the single writer of
 * the worker's latency recorders and counters. Nothing here allocates per I/O.
 * <p>A completion runs the same code in the warm-up as in the measured run: it always records, and the run leaves
 * the warm-up out by discarding the recorders' intervals until the measurement starts. A warm-up that skipped the
 * recording left that path (and the recorders' phase flip) to the measured run, whose first completions and first
 * progress tick then hit never-taken branches: C2 deoptimised the reactor's whole inlined receive path and
 * recompiled it, and on perf's one pinned CPU every compilation slice stalled all I/Os in flight for up to ~4 ms
 * (p99.9 of 2.7-4 ms at QD32; docs/benchmarks.md, "nvmeof perf").
 * <p>With verification on, every write is read back into the same slot and compared word by word with the
 * pattern written (its LBA and a per-slot sequence number), and each slot works in its own stripe of the namespace
 * (I/O slot number modulo the slot count), so no other slot can overwrite its blocks between write and read.
 */
final class PerfWorker implements IoCallback {
    /** Latencies above this (ns) are recorded as this: far beyond any command timeout. */
    static final long HIGHEST_TRACKABLE_NANOS = 3_600_000_000_000L;

    /** One I/O slot: the context object of its I/O. */
    static final class Slot {
        final ByteBuffer buffer;
        long startNanos;
        long lba;
        boolean write;
        /** Verification: the read-back of the write just done is in flight. */
        boolean readBack;
        long sequence;
        final int globalIndex;

        Slot(int bytes, int globalIndex) {
            this.globalIndex = globalIndex;
            buffer = ByteBuffer.allocateDirect(bytes);
            for (int i = 0; i < bytes; i += 8) {
                buffer.putLong(i, 0x6e766d656f66346aL ^ i); // "nvmeof4j": something other than zeros to write
            }
        }
    }

    final int index;
    /** Latencies of reads (verification read-backs included) and of writes; their counts are the I/O counts. */
    final SingleWriterRecorder readLatency = new SingleWriterRecorder(1, HIGHEST_TRACKABLE_NANOS, 3);
    final SingleWriterRecorder writeLatency = new SingleWriterRecorder(1, HIGHEST_TRACKABLE_NANOS, 3);
    /** Slots in flight; the main thread waits for zero after the stop. */
    final AtomicInteger active = new AtomicInteger();
    final AtomicLong errors = new AtomicLong();
    volatile int firstErrorStatus;
    /** The reactor thread running this worker's callbacks (seen by the probe I/O). */
    volatile Thread callbackThread;

    final AtomicLong verified = new AtomicLong();
    final AtomicLong mismatches = new AtomicLong();
    volatile long firstMismatchLba = -1;

    private final BlockNamespace ns;
    private final boolean verify;
    private final int totalSlots;
    private final PerfCommand.Workload workload;
    private final int readPercent;
    private final int blocksPerIo;
    private final long ioSlotsInNamespace;
    private final Slot[] slots;
    private volatile boolean stop;
    /** I/Os slower than this (ns) go into {@link #slowLog}; Long.MAX_VALUE: none (--slow-log off). */
    private long slowNanos = Long.MAX_VALUE;
    /**
     * --slow-log: a ring of (submission time, latency, slot) of the last {@link #SLOW_LOG_ENTRIES} slow I/Os,
     * written on the reactor thread without a branch on warm-up or measurement (the run picks the measured ones).
     */
    long[] slowLog;
    /** Slow I/Os recorded so far; read by the run once the worker has stopped. */
    long slowCount;
    static final int SLOW_LOG_ENTRIES = 1 << 16;
    // Reactor thread only, after start():
    private long rng;
    private long cursor;

    PerfWorker(int index, BlockNamespace ns, PerfCommand.Workload workload, int readPercent, int ioBytes, int depth,
               int workers, boolean verify) {
        this.index = index;
        this.ns = ns;
        this.verify = verify;
        this.totalSlots = depth * workers;
        this.workload = workload;
        this.readPercent = readPercent;
        this.blocksPerIo = ioBytes / ns.blockSize();
        this.ioSlotsInNamespace = ns.blockCount() / blocksPerIo;
        this.rng = 0x9E3779B97F4A7C15L * (index + 1);
        // Sequential workers start at evenly spaced offsets so they do not read the same blocks.
        this.cursor = ioSlotsInNamespace * index / workers;
        // The first I/O of each slot is chosen here, so that only the reactor thread moves the generator later
        // (thread start and the submission hand-off publish these fields to it).
        this.slots = new Slot[depth];
        for (int i = 0; i < depth; i++) {
            slots[i] = new Slot(ioBytes, index * depth + i);
            slots[i].lba = nextLba(slots[i]);
            slots[i].write = nextIsWrite();
        }
    }

    /** Submits the first {@code depth} I/Os (the driver thread); the callbacks keep them going. */
    void start() {
        for (Slot slot : slots) {
            active.incrementAndGet();
            submit(slot);
        }
    }

    /** Logs every I/O slower than {@code micros} (--slow-log); before {@link #start}. */
    void logSlowerThan(long micros) {
        slowNanos = micros * 1000;
        slowLog = new long[3 * SLOW_LOG_ENTRIES];
    }

    void requestStop() {
        stop = true;
    }

    @Override
    public void onComplete(int status, Object context) {
        Slot slot = (Slot) context;
        long latency = System.nanoTime() - slot.startNanos;
        if (status != 0) {
            failed(status);
            return;
        }
        if (stop) {
            active.decrementAndGet();
            return;
        }
        long recorded = Math.min(Math.max(1, latency), HIGHEST_TRACKABLE_NANOS);
        if (latency > slowNanos) {
            int i = 3 * (int) (slowCount++ & (SLOW_LOG_ENTRIES - 1));
            slowLog[i] = slot.startNanos;
            slowLog[i + 1] = latency;
            slowLog[i + 2] = slot.globalIndex;
        }
        if (slot.readBack) {
            readLatency.recordValue(recorded);
            slot.readBack = false;
            check(slot);
        } else if (slot.write) {
            writeLatency.recordValue(recorded);
            if (verify) {
                slot.readBack = true;
                submit(slot);
                return;
            }
        } else {
            readLatency.recordValue(recorded);
        }
        slot.lba = nextLba(slot);
        slot.write = nextIsWrite();
        submit(slot);
    }

    private void submit(Slot slot) {
        slot.buffer.clear();
        if (verify && slot.write && !slot.readBack) {
            fill(slot);
        }
        slot.startNanos = System.nanoTime();
        boolean accepted = slot.write && !slot.readBack
            ? ns.submitWrite(slot.lba, blocksPerIo, slot.buffer, false, this, slot)
            : ns.submitRead(slot.lba, blocksPerIo, slot.buffer, this, slot);
        if (!accepted) {
            failed(-1);
        }
    }

    private void failed(int status) {
        if (errors.getAndIncrement() == 0) {
            firstErrorStatus = status;
        }
        // A failed slot is not resubmitted: a lost controller would otherwise spin on instant failures.
        active.decrementAndGet();
    }

    /** The pattern of one write: each 8-byte word names the LBA, the slot's sequence number and its offset. */
    private void fill(Slot slot) {
        slot.sequence++;
        ByteBuffer b = slot.buffer;
        long seed = slot.lba * 0x9E3779B97F4A7C15L ^ slot.sequence << 40;
        for (int i = 0; i + 8 <= b.capacity(); i += 8) {
            b.putLong(i, seed ^ i);
        }
    }

    private void check(Slot slot) {
        ByteBuffer b = slot.buffer;
        long seed = slot.lba * 0x9E3779B97F4A7C15L ^ slot.sequence << 40;
        for (int i = 0; i + 8 <= b.capacity(); i += 8) {
            if (b.getLong(i) != (seed ^ i)) {
                if (mismatches.getAndIncrement() == 0) {
                    firstMismatchLba = slot.lba + i / ns.blockSize();
                }
                return;
            }
        }
        verified.incrementAndGet();
    }

    private long nextLba(Slot owner) {
        long slot;
        if (verify) {
            // Its own stripe: I/O slot numbers congruent to the slot's index modulo the slot count.
            long x = rng;
            x ^= x << 13;
            x ^= x >>> 7;
            x ^= x << 17;
            rng = x;
            long stripes = ioSlotsInNamespace / totalSlots;
            return (Long.remainderUnsigned(x, stripes) * totalSlots + owner.globalIndex) * blocksPerIo;
        }
        if (workload.random) {
            long x = rng;
            x ^= x << 13;
            x ^= x >>> 7;
            x ^= x << 17;
            rng = x;
            slot = Long.remainderUnsigned(x, ioSlotsInNamespace);
        } else {
            slot = cursor;
            cursor = cursor + 1 == ioSlotsInNamespace ? 0 : cursor + 1;
        }
        return slot * blocksPerIo;
    }

    private boolean nextIsWrite() {
        if (readPercent == 100) {
            return false;
        }
        if (readPercent == 0) {
            return true;
        }
        long x = rng;
        x ^= x << 13;
        x ^= x >>> 7;
        x ^= x << 17;
        rng = x;
        return Long.remainderUnsigned(x, 100) >= readPercent;
    }

    /** One read at LBA 0 from the calling thread, to learn which reactor thread completes this worker's I/O. */
    IoCallback probeCallback(java.util.concurrent.CountDownLatch done, int[] status) {
        return (s, context) -> {
            callbackThread = Thread.currentThread();
            status[0] = s;
            done.countDown();
        };
    }

    void probe(IoCallback callback) {
        Slot slot = slots[0];
        slot.buffer.clear();
        if (!ns.submitRead(0, blocksPerIo, slot.buffer, callback, slot)) {
            throw new IllegalStateException("the probe I/O was not accepted");
        }
    }
}
