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
 * the worker's latency recorder and counters. Nothing here allocates per I/O.
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
    final SingleWriterRecorder recorder = new SingleWriterRecorder(1, HIGHEST_TRACKABLE_NANOS, 3);
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
    /** Set by the run during --warmup: completions are counted in {@link #warmupIos} only. */
    volatile boolean warmingUp;
    // Reactor thread only, after start():
    private long rng;
    private long cursor;
    private boolean measuring;
    private long readsBeforeMeasuring;
    private long writesBeforeMeasuring;
    /** Read by the run for its progress lines only. */
    long warmupIos;
    long reads;
    long writes;

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

    /** Reads completed since the measurement began (after any warm-up). Once the worker has stopped. */
    long measuredReads() {
        return measuring ? reads - readsBeforeMeasuring : 0;
    }

    /** Writes completed since the measurement began. Once the worker has stopped. */
    long measuredWrites() {
        return measuring ? writes - writesBeforeMeasuring : 0;
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
        if (warmingUp) {
            warmupIos++;
        } else {
            if (!measuring) {
                // The first measured completion: the counters' start, taken on the thread that counts.
                measuring = true;
                readsBeforeMeasuring = reads;
                writesBeforeMeasuring = writes;
            }
            recorder.recordValue(Math.min(Math.max(1, latency), HIGHEST_TRACKABLE_NANOS));
        }
        if (slot.readBack) {
            reads++;
            slot.readBack = false;
            check(slot);
        } else if (slot.write) {
            writes++;
            if (verify) {
                slot.readBack = true;
                submit(slot);
                return;
            }
        } else {
            reads++;
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
