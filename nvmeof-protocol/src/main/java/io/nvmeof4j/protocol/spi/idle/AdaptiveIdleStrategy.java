package io.nvmeof4j.protocol.spi.idle;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;

/**
 * The default idling of every reactor, target and host: busy poll, then yield, then block with a bounded backoff,
 * and skip the first two while the CPU is measured as shared.
 *
 * <h2>Phases of an idle stretch</h2>
 * <pre>
 *   work ──► ACTIVE ──empty round──► SPINNING ──spinNanos──► YIELDING ──maxYields──► PARKING ─┐
 *              ▲                        (onSpinWait)           (Thread.yield)      block(park)│ park doubles,
 *              └──────────── a round with work (reset) ◄──────────────────────────────────────┘ up to maxPark
 * </pre>
 * Waking a blocked thread costs tens of microseconds (~70 µs on a 2-vCPU machine, docs/performance.md), so a
 * reactor first spins {@code spinNanos} (the next command usually follows soon), then yields {@code maxYields}
 * times (none by default, see {@link #MAX_YIELDS_PROP_NAME}), then blocks in its {@link IdleWait}. Each block
 * that ends without work doubles the next one's bound, from {@code minParkNanos} to {@code maxParkNanos}: waits end
 * early on a wakeup anyway, so the bound only decides how often an idle reactor looks without being woken.
 *
 * <h2>A shared CPU</h2>
 * Spinning pays only while the reactor has its CPU to itself. When another runnable thread shares it (a cloud VM's
 * neighbour, a batch job, the application on the same core), every spin is time taken from that thread and
 * charged to the reactor, which the scheduler then makes wait when work arrives; and a reactor that spins is never
 * the freshly woken thread the scheduler favours. So, every {@value #CONTENTION_WINDOW_MILLIS} ms of the idle path,
 * the strategy reads how long its thread was runnable without running (the run delay of
 * {@code /proc/thread-self/schedstat}) and how much of that each block cost. When the run delay exceeds
 * {@value #CONTENDED_PERCENT}% of the window the CPU is contended: an empty round blocks at once (no spin, no yield),
 * as the kernel's work queues do. After {@value #CONTENDED_HOLD_MILLIS} ms a window without contention returns it to
 * spinning, so it spins again when the competitor leaves. A reactor that always has work never measures.
 * <p>Allocation-free after construction; one thread only (the volatile results may be read from any thread).
 */
public final class AdaptiveIdleStrategy implements IdleStrategy {
    private static final Logger LOG = LoggerFactory.getLogger(AdaptiveIdleStrategy.class);

    public static final String ALIAS = "adaptive";
    public static final long SPIN_NANOS_DEFAULT = TimeUnit.MICROSECONDS.toNanos(50);
    /**
     * System property: how many times an idle stretch yields between spinning and blocking. 0 by default: a yield
     * does nothing on a CPU of one's own, and on a shared one it hands the competitor a whole time slice while work
     * that arrives meanwhile cannot wake the (runnable, not sleeping) reactor. Measured on the host reactor with
     * the contention measurement off and a busy loop on its CPU: 5 yields gave QD1 p99 3.9-10.9 ms, none 2.2-5.7
     * ms (docs/datapath.md).
     */
    public static final String MAX_YIELDS_PROP_NAME = "nvmeof4j.reactor.idle_yields";
    public static final int MAX_YIELDS_DEFAULT = 0;
    /** A selector waits in whole milliseconds: a shorter first bound would be rounded up to this anyway. */
    public static final long MIN_PARK_NANOS_DEFAULT = TimeUnit.MILLISECONDS.toNanos(1);
    /**
     * System property: false turns the contention measurement off (the strategy then always spins first, as before
     * it existed); for comparisons such as benchmarks/run-shared-cpu-benchmark.sh.
     */
    public static final String ADAPT_TO_CONTENTION_PROP_NAME = "nvmeof4j.reactor.adapt_to_contention";
    public static final long CONTENTION_WINDOW_MILLIS = 50;
    public static final int CONTENDED_PERCENT = 10;
    public static final long CONTENDED_HOLD_MILLIS = 1000;

    /** Where an idle stretch stands. */
    public enum State { ACTIVE, SPINNING, YIELDING, PARKING }

    private final String name;
    private final IdleWait wait;
    private final long spinNanos;
    private final int maxYields;
    private final long minParkNanos;
    private final long maxParkNanos;
    private final LongSupplier nanoClock;
    /** The thread's run delay in ns, -1 when unreadable; null when not measured. */
    private final LongSupplier runDelay;
    private final AutoCloseable runDelaySource;

    private State state = State.ACTIVE;
    private long idleStartNanos;
    private int yields;
    private long parkNanos;

    private long windowStartNanos;
    private long windowStartRunDelay;
    private long windowBlocks;
    private long contendedUntilNanos;
    private volatile boolean contended;
    private volatile long wakeupCostNanos;

    /**
     * @param name          for logs (the reactor's name)
     * @param wait          how the reactor blocks
     * @param spinNanos     how long an idle stretch spins before yielding (0: no spin)
     * @param maxYields     how many times it yields before blocking
     * @param minParkNanos  the first block's bound
     * @param maxParkNanos  the bound the blocks back off to
     * @param nanoClock     {@link System#nanoTime()} outside tests
     * @param runDelay      the calling thread's run delay (-1 when unreadable), or null to not adapt to contention
     */
    public AdaptiveIdleStrategy(String name, IdleWait wait, long spinNanos, int maxYields, long minParkNanos,
                                long maxParkNanos, LongSupplier nanoClock, LongSupplier runDelay) {
        this(name, wait, spinNanos, maxYields, minParkNanos, maxParkNanos, nanoClock, runDelay, null);
    }

    private AdaptiveIdleStrategy(String name, IdleWait wait, long spinNanos, int maxYields, long minParkNanos,
                                 long maxParkNanos, LongSupplier nanoClock, LongSupplier runDelay,
                                 AutoCloseable runDelaySource) {
        if (spinNanos < 0 || maxYields < 0 || minParkNanos <= 0 || maxParkNanos < minParkNanos) {
            throw new IllegalArgumentException("spin " + spinNanos + " ns, yields " + maxYields + ", park "
                + minParkNanos + ".." + maxParkNanos + " ns: need spin >= 0, yields >= 0, 0 < min park <= max park");
        }
        this.name = Objects.requireNonNull(name, "name");
        this.wait = Objects.requireNonNull(wait, "wait");
        this.spinNanos = spinNanos;
        this.maxYields = maxYields;
        this.minParkNanos = minParkNanos;
        this.maxParkNanos = maxParkNanos;
        this.nanoClock = Objects.requireNonNull(nanoClock, "nanoClock");
        this.runDelay = runDelay;
        this.runDelaySource = runDelaySource;
        this.parkNanos = minParkNanos;
        if (runDelay != null) {
            windowStartNanos = nanoClock.getAsLong();
            windowStartRunDelay = Math.max(0, runDelay.getAsLong());
        }
    }

    /**
     * The strategy for the calling reactor thread, with {@value #MAX_YIELDS_PROP_NAME} yields (default
     * {@value #MAX_YIELDS_DEFAULT}) and the default first bound, measuring this thread's
     * run delay unless {@value #ADAPT_TO_CONTENTION_PROP_NAME} is false or the kernel does not offer it. Call it
     * on the thread that will idle: {@code /proc/thread-self} describes the thread that opens it.
     */
    public static AdaptiveIdleStrategy forCurrentThread(String name, IdleWait wait, long spinNanos,
                                                        long maxParkNanos) {
        SchedStat stat = Boolean.parseBoolean(System.getProperty(ADAPT_TO_CONTENTION_PROP_NAME, "true"))
            ? SchedStat.open() : null;
        return new AdaptiveIdleStrategy(name, wait, spinNanos,
            Math.max(0, Integer.getInteger(MAX_YIELDS_PROP_NAME, MAX_YIELDS_DEFAULT)),
            Math.min(MIN_PARK_NANOS_DEFAULT, maxParkNanos), maxParkNanos, System::nanoTime,
            stat == null ? null : stat::readRunDelayNanos, stat);
    }

    @Override
    public void idle(int workCount) {
        if (workCount > 0) {
            reset();
            return;
        }
        long now = nanoClock.getAsLong();
        if (runDelay != null && now - windowStartNanos >= TimeUnit.MILLISECONDS.toNanos(CONTENTION_WINDOW_MILLIS)) {
            measureContention(now);
        }
        switch (state) {
            case ACTIVE:
                idleStartNanos = now;
                if (contended || (spinNanos == 0 && maxYields == 0)) {
                    state = State.PARKING;
                    park();
                } else {
                    state = spinNanos == 0 ? State.YIELDING : State.SPINNING;
                }
                break;
            case SPINNING:
                if (now - idleStartNanos < spinNanos) {
                    Thread.onSpinWait();
                    break;
                }
                state = State.YIELDING;
                // fall through: the spin is over
            case YIELDING:
                if (yields < maxYields) {
                    yields++;
                    Thread.yield();
                    break;
                }
                state = State.PARKING;
                // fall through: the yields are over
            case PARKING:
            default:
                park();
                break;
        }
    }

    private void park() {
        wait.block(parkNanos);
        windowBlocks++;
        parkNanos = Math.min(parkNanos << 1, maxParkNanos);
    }

    @Override
    public void reset() {
        state = State.ACTIVE;
        yields = 0;
        parkNanos = minParkNanos;
    }

    /**
     * End of a measurement window (idle path only): the share of the window this thread spent runnable without
     * running decides between spinning and blocking at once.
     */
    private void measureContention(long now) {
        long delayTotal = runDelay.getAsLong();
        if (delayTotal < 0) {
            return;
        }
        long delay = delayTotal - windowStartRunDelay;
        long window = now - windowStartNanos;
        if (windowBlocks > 0) {
            wakeupCostNanos = delay / windowBlocks;
        }
        if (delay * 100 > window * CONTENDED_PERCENT) {
            if (!contended) {
                LOG.debug("{}: runnable without a CPU for {}% of the last {} ms; blocking instead of spinning",
                    name, delay * 100 / Math.max(1, window), TimeUnit.NANOSECONDS.toMillis(window));
                contended = true;
                if (state == State.SPINNING || state == State.YIELDING) {
                    state = State.PARKING;
                }
            }
            contendedUntilNanos = now + TimeUnit.MILLISECONDS.toNanos(CONTENDED_HOLD_MILLIS);
        } else if (contended && now - contendedUntilNanos >= 0) {
            // Probe: spin again; a competitor still there sends us back within one window.
            contended = false;
        }
        windowStartNanos = now;
        windowStartRunDelay = delayTotal;
        windowBlocks = 0;
    }

    /** Where the current idle stretch stands. Strategy thread (or tests). */
    public State state() {
        return state;
    }

    /** The bound of the next block. Strategy thread (or tests). */
    public long parkNanos() {
        return parkNanos;
    }

    /** True while the CPU is measured as shared and empty rounds block at once. Any thread. */
    public boolean contended() {
        return contended;
    }

    /**
     * Run delay per block in the last measured window: what a wake-up from blocking cost in waiting for the CPU
     * (0 before the first window with a block, or where the run delay is not measured). Any thread.
     */
    public long wakeupCostNanos() {
        return wakeupCostNanos;
    }

    /** True when the run delay is sampled (Linux with schedstats, measurement not turned off). */
    public boolean measuresContention() {
        return runDelay != null;
    }

    @Override
    public String alias() {
        return ALIAS;
    }

    @Override
    public void close() {
        if (runDelaySource != null) {
            try {
                runDelaySource.close();
            } catch (Exception e) {
                LOG.debug("{}: closing the schedstat file failed", name, e);
            }
        }
    }

    @Override
    public String toString() {
        return ALIAS + " idle strategy of " + name;
    }
}
