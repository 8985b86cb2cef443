package io.nvmeof4j.target.backend;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.function.LongSupplier;

/**
 * One bdev's (namespace's) QoS rate limits on the data path, as SPDK's bdev QoS ({@code lib/bdev/bdev.c}): for each
 * limit ({@link QosLimits}) a budget of I/Os or bytes per {@value #TIMESLICE_MICROS} µs timeslice, refilled as time
 * passes; a Read or Write that finds a budget spent waits on its reactor ({@link QosWaits}, first come first served)
 * and is submitted when a later timeslice refills it. It never fails.
 *
 * <h2>One budget for every reactor</h2>
 * A namespace is served by every reactor its hosts' queues landed on. Its budgets are shared atomics (SPDK's
 * {@code remaining_this_timeslice}, which SPDK moved to from a QoS thread every channel forwarded to), not the limit
 * split per reactor: a split gives a host whose queues all sit on one reactor only its share, and its idle
 * reactors' shares are lost. The cost is one or two atomic adds per limited I/O on a line the reactors share; no
 * lock. Taking follows SPDK: subtract, and if the budget was positive before, the I/O goes (an I/O larger than a
 * timeslice's budget goes once in a while and the overrun is paid off by the next timeslices); otherwise it is
 * added back and the I/O waits. With several limits, the ones already taken are given back when a later one refuses.
 *
 * <h2>Refill</h2>
 * There is no QoS poller thread: the first reactor that takes from a budget after a timeslice ended refills it
 * (a CAS on the timeslice start decides which one). As in SPDK, an overrun (a negative budget) carries over and what
 * a timeslice left unused does not; every timeslice that passed adds its budget (so a reactor that woke late catches
 * up, and a large I/O's overrun is paid off by the time that passed), but the budget never exceeds
 * {@value #CATCH_UP_SLICES} timeslices' worth while nothing waits, so an idle namespace does not save up a burst.
 * While I/O waits, up to {@value #CATCH_UP_SLICES_WAITING} timeslices are credited: a reactor descheduled on a busy
 * machine then serves the waiting I/O it owes at once, and the rate over time stays the limit.
 * <p>Changing the limits ({@link #limits(QosLimits)}) applies at once to the I/O in flight and waiting; removing
 * every limit lets the waiting I/O go at the next poll of its reactor. Any thread; the data-path methods allocate
 * nothing.
 */
public final class QosBudget {
    /** SPDK_BDEV_QOS_TIMESLICE_IN_USEC. */
    public static final long TIMESLICE_MICROS = 1000;
    public static final long TIMESLICE_NANOS = TimeUnit.MICROSECONDS.toNanos(TIMESLICE_MICROS);
    /** The most timeslices' budget a refill builds up while no I/O waits: an idle namespace saves no burst. */
    static final int CATCH_UP_SLICES = 10;
    /**
     * The most timeslices one refill credits while I/O waits: every timeslice a late reactor slept through (a busy
     * machine deschedules it for tens of milliseconds), as SPDK's poller credits each one that passed, up to 1 s.
     */
    static final int CATCH_UP_SLICES_WAITING = 1000;
    /** SPDK_BDEV_QOS_MIN_IO_PER_TIMESLICE, SPDK_BDEV_QOS_MIN_BYTE_PER_TIMESLICE. */
    static final long MIN_IOS_PER_SLICE = 1;
    static final long MIN_BYTES_PER_SLICE = 512;

    private static final int RW_IOS = 0;
    private static final int RW_BYTES = 1;
    private static final int R_BYTES = 2;
    private static final int W_BYTES = 3;
    private static final int KINDS = 4;
    private static final AtomicInteger NEXT_ID = new AtomicInteger();

    private final int id = NEXT_ID.getAndIncrement();
    private final LongSupplier clock;
    /** Per limit: what the current timeslice has left (may be negative: an overrun). */
    private final AtomicLongArray remaining = new AtomicLongArray(KINDS);
    /** Per limit: the budget of one timeslice; 0 when not limited. */
    private final AtomicLongArray perSlice = new AtomicLongArray(KINDS);
    private final AtomicLong sliceStart;
    /** I/Os that waited for this budget, since start. */
    private final AtomicLong waits = new AtomicLong();
    /** I/Os waiting for this budget now, on any reactor. */
    private final AtomicLong waiting = new AtomicLong();
    private volatile QosLimits limits = QosLimits.NONE;
    private volatile boolean enabled;

    public QosBudget() {
        this(System::nanoTime);
    }

    /** @param clock nanoseconds, as {@link System#nanoTime()} (tests step it) */
    QosBudget(LongSupplier clock) {
        this.clock = clock;
        this.sliceStart = new AtomicLong(clock.getAsLong());
    }

    int id() {
        return id;
    }

    public QosLimits limits() {
        return limits;
    }

    /** True while any limit is set: the data path asks the budget only then. */
    public boolean enabled() {
        return enabled;
    }

    /** I/Os that found a budget spent and waited, since start. Any thread. */
    public long waits() {
        return waits.get();
    }

    /**
     * Sets the limits (replacing all four; {@link QosLimits#NONE} removes them). Each budget starts again full, as
     * SPDK's {@code bdev_qos_update_max_quota_per_timeslice} does. Applies to running I/O at once.
     */
    public synchronized void limits(QosLimits next) {
        long ios = next.rwIosPerSec();
        setPerSlice(RW_IOS, ios, MIN_IOS_PER_SLICE);
        setPerSlice(RW_BYTES, bytes(next.rwMbytesPerSec()), MIN_BYTES_PER_SLICE);
        setPerSlice(R_BYTES, bytes(next.rMbytesPerSec()), MIN_BYTES_PER_SLICE);
        setPerSlice(W_BYTES, bytes(next.wMbytesPerSec()), MIN_BYTES_PER_SLICE);
        sliceStart.set(clock.getAsLong()); // a full timeslice starts now, not the time since the last one
        limits = next;
        enabled = !next.none();
    }

    private static long bytes(long mbytes) {
        return mbytes * 1024 * 1024; // QosLimits keeps it within 64 bits
    }

    private void setPerSlice(int kind, long perSecond, long minimum) {
        long slice = perSecond == 0 ? 0 : Math.max(perSecond / (TimeUnit.SECONDS.toMicros(1) / TIMESLICE_MICROS),
            minimum);
        perSlice.set(kind, slice);
        remaining.set(kind, slice);
    }

    /**
     * Takes {@code io}'s share of every budget: true when it may go now, false when it must wait (nothing taken).
     * Only Read and Write are limited.
     */
    boolean tryTake(BlockIo io) {
        if (!enabled) {
            return true;
        }
        BlockIo.Op op = io.op();
        if (op != BlockIo.Op.READ && op != BlockIo.Op.WRITE) {
            return true;
        }
        boolean read = op == BlockIo.Op.READ;
        long bytes = io.length();
        refill(clock.getAsLong());
        for (int kind = 0; kind < KINDS; kind++) {
            long delta = delta(kind, read, bytes);
            if (delta == 0) {
                continue;
            }
            long left = remaining.addAndGet(kind, -delta);
            if (left + delta > 0) {
                continue; // the budget was not spent: the I/O goes, overrunning it if larger
            }
            remaining.addAndGet(kind, delta);
            for (int taken = kind - 1; taken >= 0; taken--) {
                long back = delta(taken, read, bytes);
                if (back != 0) {
                    remaining.addAndGet(taken, back);
                }
            }
            return false;
        }
        return true;
    }

    /** What an I/O takes from budget {@code kind}: 0 when that limit is off or does not apply to it. */
    private long delta(int kind, boolean read, long bytes) {
        if (perSlice.get(kind) == 0) {
            return 0;
        }
        return switch (kind) {
            case RW_IOS -> 1;
            case RW_BYTES -> bytes;
            case R_BYTES -> read ? bytes : 0;
            default -> read ? 0 : bytes;
        };
    }

    /** Starts the timeslices that ended by {@code now}: one caller does it, the others find it done. */
    private void refill(long now) {
        long start = sliceStart.get();
        long elapsed = now - start;
        if (elapsed < TIMESLICE_NANOS) {
            return;
        }
        long slices = elapsed / TIMESLICE_NANOS;
        if (!sliceStart.compareAndSet(start, start + slices * TIMESLICE_NANOS)) {
            return;
        }
        long capSlices = waiting.get() > 0 ? CATCH_UP_SLICES_WAITING : CATCH_UP_SLICES;
        for (int kind = 0; kind < KINDS; kind++) {
            long slice = perSlice.get(kind);
            if (slice == 0) {
                continue;
            }
            // Saturated well below 2^63 so that cap - debt cannot overflow (QosLimits bounds a slice to 2^63 / 1000).
            long cap = slice > (Long.MAX_VALUE / 4) / capSlices ? Long.MAX_VALUE / 4 : capSlices * slice;
            long left;
            long next;
            do {
                left = remaining.get(kind);
                long debt = Math.min(left, 0); // an overrun carries over; an unused budget does not
                long room = cap - debt;
                next = debt + (slices > room / slice ? room : slices * slice);
            } while (!remaining.compareAndSet(kind, left, next));
        }
    }

    /** Nanoseconds until the current timeslice ends (0 when it has): how long waiting I/O may sleep. */
    long nanosToNextSlice() {
        long left = sliceStart.get() + TIMESLICE_NANOS - clock.getAsLong();
        return Math.max(0, left);
    }

    /** An I/O starts waiting for this budget on a reactor. */
    void countWait() {
        waits.incrementAndGet();
        waiting.incrementAndGet();
    }

    /** A waiting I/O left its reactor's queue (submitted, or answered by a stopping reactor). */
    void waitEnded() {
        waiting.decrementAndGet();
    }

    /**
     * Submits {@code io} to {@code device} now, or, when a budget is spent, queues it on the calling reactor
     * ({@link QosWaits}) behind the I/Os of this namespace already waiting there. Off a reactor (tools, tests) the
     * I/O is counted against the budget but never held: the caller's thread would block.
     */
    public void submit(BlockIo io, BlockDevice device) {
        QosWaits waiting = QosWaits.bound(io);
        if (waiting == null) {
            tryTake(io);
            device.submit(io);
            return;
        }
        waiting.submit(this, io, device);
    }

    @Override
    public String toString() {
        return limits.toString();
    }
}
