package io.nvmeof4j.target.io;


import java.util.concurrent.atomic.AtomicLongArray;

/**
 * Makes a fused Compare and Write atomic against every other write to its LBA range on its namespace, from any
 * queue of any controller on any reactor (NVMe Base 2.0, 3.4.2: no other command may modify the range between the
 * Compare and the Write). Shaped like SPDK's bdev LBA range lock ({@code bdev_lock_lba_range}), without its
 * per-channel messages.
 *
 * <h2>The normal path stays lock-free</h2>
 * A write (Write, Write Zeroes, Dataset Management deallocate, the write of a Copy) counts itself in flight in one
 * of a few padded counters (picked by thread, so reactors do not share a cache line) and reads the volatile
 * {@link #locked} count. While no fused pair is active that count is 0 and nothing else happens: two atomic adds on
 * a counter other reactors rarely touch and three volatile reads per write, no monitor, no allocation.
 *
 * <h2>A fused pair</h2>
 * The pair registers its range (under this object's monitor: the slow path only), raises {@link #locked} and waits
 * until every write counted before that moment has finished: it advances the epoch, so new writes count in the
 * other half of the counters, and waits for the old half to reach zero (re-checked by each write that finishes
 * while {@link #locked} is set). This waits for all earlier writes on the namespace, not just those on the range:
 * never longer than the device latency of writes already submitted, and it spares writes any bookkeeping.
 * A write that sees {@link #locked} set checks its range against the registered ones under the monitor: on overlap
 * it is deferred, else it goes on. When the pair ends, deferred writes and pairs resume in arrival order (FIFO);
 * a resumed write is counted in flight before anything else registers, so a later pair waits for it.
 * <p>Reads, Compares and Verify are not held back (SPDK does the same): a reader may see the range before or after
 * the pair, the pair itself is what must not interleave with writes.
 * <p>Resuming: a deferred command continues on its own queue's reactor ({@link IoContext#resume()}), never on the
 * thread that released the range. The monitor is held only for list edits, never across I/O.
 */
public final class LbaRangeLock {
    /** Counters per epoch half; a power of two. */
    private static final int STRIPES = 16;
    /** Longs between two counters: 128 bytes, so two reactors never write the same cache line. */
    private static final int PAD = 16;

    /** Writes in flight: [epoch parity][stripe]. */
    private final AtomicLongArray inFlight = new AtomicLongArray(2 * STRIPES * PAD);
    /** Ranges registered by pairs (waiting for earlier writes to drain, or executing). 0 on the normal path. */
    private volatile int locked;
    /** Which half of {@link #inFlight} new writes count in (its low bit). */
    private volatile long epoch;

    // Guarded by this.
    /** A flip of {@link #epoch} waits for the previous half to drain. */
    private boolean flipPending;
    /** Registered pairs, oldest first. */
    private IoContext registeredHead;
    private IoContext registeredTail;
    /** Deferred writes and pairs, FIFO. */
    private IoContext deferredHead;
    private IoContext deferredTail;

    /** Commands to resume once the monitor is released, chained through {@link IoContext#resumeNext}. */
    private IoContext resumeHead;
    private IoContext resumeTail;

    /**
     * A write of blocks [first, end) starts: counts it in flight and returns true to go on, or defers it (false) until
     * an overlapping pair ends; {@link IoContext#resume()} then runs it again with the slot already counted.
     */
    boolean beginWrite(IoContext slot, long first, long end) {
        int index;
        while (true) {
            long e = epoch;
            index = counterIndex(e);
            inFlight.getAndIncrement(index); // a full fence: ordered before the reads below
            if (epoch == e) {
                break;
            }
            // The epoch flipped between the read and the count: a pair may already have summed that half and missed
            // this write. Count it in the new half instead.
            inFlight.getAndDecrement(index);
        }
        slot.inFlightIndex = index;
        if (locked == 0) {
            return true;
        }
        IoContext resume;
        synchronized (this) {
            if (!overlapsRegistered(first, end)) {
                return true;
            }
            inFlight.getAndDecrement(index);
            slot.inFlightIndex = -1;
            slot.lockFirst = first;
            slot.lockEnd = end;
            slot.lockPair = false;
            append(slot);
            advanceEpoch(); // a pair may have been waiting for this very write's count
            resume = takeResumes();
        }
        resumeAll(resume, null);
        return false;
    }

    /** The write counted by {@link #beginWrite} (or granted at a release) finished. Any thread. */
    void endWrite(IoContext slot) {
        int index = slot.inFlightIndex;
        if (index < 0) {
            return;
        }
        slot.inFlightIndex = -1;
        inFlight.getAndDecrement(index); // a full fence before the read of locked
        if (locked != 0) {
            IoContext resume;
            synchronized (this) {
                advanceEpoch();
                resume = takeResumes();
            }
            resumeAll(resume, null);
        }
    }

    /**
     * A fused pair asks for blocks [first, end). Returns true when it holds the range now (nothing overlapping, no
     * earlier write in flight); false when it waits: {@link IoContext#resume()} runs once it holds the range.
     */
    boolean lockRange(IoContext pair, long first, long end) {
        pair.lockFirst = first;
        pair.lockEnd = end;
        pair.lockPair = true;
        pair.lockHeld = false;
        IoContext resume;
        synchronized (this) {
            if (overlapsRegistered(first, end) || overlapsDeferred(first, end)) {
                append(pair); // behind whatever already waits for this range: FIFO
                return false;
            }
            register(pair);
            advanceEpoch();
            resume = takeResumes();
        }
        return resumeAll(resume, pair);
    }

    /** The pair is done with its range: what waited on it resumes, oldest first. Any thread. */
    void unlockRange(IoContext pair) {
        IoContext resume;
        synchronized (this) {
            unregister(pair);
            admitDeferred();
            advanceEpoch();
            resume = takeResumes();
        }
        resumeAll(resume, null);
    }

    /** True while a fused pair holds or waits for a range. */
    public boolean isLocked() {
        return locked != 0;
    }

    private static int counterIndex(long epoch) {
        int stripe = (int) Thread.currentThread().getId() & (STRIPES - 1);
        return ((int) (epoch & 1) * STRIPES + stripe) * PAD;
    }

    private long inFlightSum(long parity) {
        long sum = 0;
        int base = (int) (parity & 1) * STRIPES * PAD;
        for (int i = 0; i < STRIPES; i++) {
            sum += inFlight.get(base + i * PAD);
        }
        return sum;
    }

    /** Resumes the chain outside the monitor; returns true when {@code self} was in it (the caller goes on itself). */
    private static boolean resumeAll(IoContext chain, IoContext self) {
        boolean found = false;
        IoContext s = chain;
        while (s != null) {
            IoContext next = s.resumeNext;
            s.resumeNext = null;
            if (s == self) {
                found = true;
            } else {
                s.resume();
            }
            s = next;
        }
        return found;
    }

    // ---- under the monitor -------------------------------------------------------------------------------------

    private void toResume(IoContext slot) {
        slot.resumeNext = null;
        if (resumeTail == null) {
            resumeHead = slot;
        } else {
            resumeTail.resumeNext = slot;
        }
        resumeTail = slot;
    }

    private IoContext takeResumes() {
        IoContext head = resumeHead;
        resumeHead = null;
        resumeTail = null;
        return head;
    }

    private boolean overlapsRegistered(long first, long end) {
        for (IoContext s = registeredHead; s != null; s = s.lockNext) {
            if (first < s.lockEnd && s.lockFirst < end) {
                return true;
            }
        }
        return false;
    }

    private boolean overlapsDeferred(long first, long end) {
        for (IoContext s = deferredHead; s != null; s = s.lockNext) {
            if (first < s.lockEnd && s.lockFirst < end) {
                return true;
            }
        }
        return false;
    }

    private void register(IoContext pair) {
        pair.lockNext = null;
        pair.drainEpoch = epoch;
        if (registeredTail == null) {
            registeredHead = pair;
        } else {
            registeredTail.lockNext = pair;
        }
        registeredTail = pair;
        locked++; // volatile write before this pair reads any counter
    }

    private void unregister(IoContext pair) {
        IoContext previous = null;
        for (IoContext s = registeredHead; s != null; previous = s, s = s.lockNext) {
            if (s == pair) {
                if (previous == null) {
                    registeredHead = s.lockNext;
                } else {
                    previous.lockNext = s.lockNext;
                }
                if (registeredTail == s) {
                    registeredTail = previous;
                }
                s.lockNext = null;
                s.lockHeld = false;
                locked--;
                return;
            }
        }
        throw new IllegalStateException("range [" + pair.lockFirst + ", " + pair.lockEnd + ") was not registered");
    }

    private void append(IoContext slot) {
        slot.lockNext = null;
        if (deferredTail == null) {
            deferredHead = slot;
        } else {
            deferredTail.lockNext = slot;
        }
        deferredTail = slot;
    }

    /**
     * Takes the deferred commands that overlap neither a registered range nor an earlier deferred command out of the
     * FIFO, in order: a write is counted in flight at once (a pair registering after it waits for it) and queued to
     * resume; a pair is registered (granted by {@link #advanceEpoch} once earlier writes drain).
     */
    private void admitDeferred() {
        IoContext previous = null;
        IoContext s = deferredHead;
        while (s != null) {
            IoContext next = s.lockNext;
            if (!overlapsRegistered(s.lockFirst, s.lockEnd) && !overlapsEarlierDeferred(s)) {
                if (previous == null) {
                    deferredHead = next;
                } else {
                    previous.lockNext = next;
                }
                if (deferredTail == s) {
                    deferredTail = previous;
                }
                s.lockNext = null;
                if (s.lockPair) {
                    register(s);
                } else {
                    int index = counterIndex(epoch);
                    inFlight.getAndIncrement(index);
                    s.inFlightIndex = index;
                    toResume(s);
                }
            } else {
                previous = s;
            }
            s = next;
        }
    }

    private boolean overlapsEarlierDeferred(IoContext slot) {
        for (IoContext s = deferredHead; s != null && s != slot; s = s.lockNext) {
            if (slot.lockFirst < s.lockEnd && s.lockFirst < slot.lockEnd) {
                return true;
            }
        }
        return false;
    }

    /**
     * Grants the registered pairs whose earlier writes have all finished, and flips the epoch for pairs registered
     * since the last flip. A flip waits for the half it retires to reach zero before another flip may reuse it.
     */
    private void advanceEpoch() {
        while (true) {
            if (flipPending) {
                if (inFlightSum(epoch - 1) != 0) {
                    return;
                }
                flipPending = false;
                long drained = epoch - 1;
                for (IoContext s = registeredHead; s != null; s = s.lockNext) {
                    if (!s.lockHeld && s.drainEpoch <= drained) {
                        s.lockHeld = true;
                        toResume(s);
                    }
                }
            }
            boolean waiting = false;
            for (IoContext s = registeredHead; s != null; s = s.lockNext) {
                if (!s.lockHeld) {
                    waiting = true;
                    break;
                }
            }
            if (!waiting) {
                return;
            }
            epoch = epoch + 1; // new writes count in the other half from now on
            flipPending = true;
        }
    }
}
