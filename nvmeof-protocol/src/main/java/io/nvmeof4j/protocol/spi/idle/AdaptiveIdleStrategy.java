package io.nvmeof4j.protocol.spi.idle;

import io.nvmeof4j.protocol.spi.JvmOptions;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;

/**
 * The default idling of every reactor, target and host: busy poll, then yield (only if configured: none by default),
 * then block with a bounded backoff, and skip the first two while the CPU is measured as shared.
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
 * <h2>How long to spin</h2>
 * The spin starts at {@code spinNanos} and learns from the stretches that follow, up to {@code maxSpinNanos}: a
 * stretch that blocked and still ended within {@code maxSpinNanos} would have been served without the wake-up had
 * the spin been that long, so the spin grows to a quarter more than that gap; a stretch caught while spinning moves
 * the spin an eighth of the way back toward a quarter more than its gap; a stretch that blocked for longer than
 * {@code maxSpinNanos} halves the distance to {@code spinNanos} (sparse traffic: spinning is wasted). A reactor
 * whose next command follows its last completion after a steady gap (QD1: the host's own turn-around) thus spins
 * just over that gap instead of paying a wake-up per command: in the QEMU guest, where a wake-up costs hundreds of
 * microseconds, a fixed 300 µs spin took the file namespace's QD1 from 0.50x to 0.72x the kernel target's
 * (docs/benchmarks.md). Never a clock read per busy round for it; nothing is learned while a shared CPU makes the
 * reactor block at once (below).
 *
 * <h2>Clock reads while spinning</h2>
 * Where the clock is a system call (the QEMU guest's HPET, a VM whose clock source has no vDSO: a
 * {@code clock_gettime}, in the guest plus an emulated device read), a read per empty round roughly doubles what a
 * spin round costs next to the reactor's own poll, and so the time between a command's arrival and the round that
 * sees it. So a spin reads the clock every {@code n}th round only: {@code n} is the number of rounds that fit in a
 * quarter of the spin, from the round cost measured between the previous two reads (1 until measured, at most
 * {@value #MAX_SPIN_ROUNDS_PER_CLOCK_READ}). A spin thus ends at most a quarter of its length late and reads the
 * clock about four times, more only where its rounds are so cheap that the cap binds (the first spin after its rounds
 * got dearer ends late once, by the rounds of the stride measured before). Where fewer than two rounds fit in a
 * quarter (in the guest a round costs tens of microseconds), reading every round would end the spin no closer to its
 * length than within a round past it, so {@code n} is then the rounds to the spin's end, rounded up: one read to
 * start the spin and one to end it. Nor is a stretch that ends while spinning timed by a read: its end is the last
 * read plus the empty rounds since, at the measured cost per round. Issue 17 had counted 8-11 clock reads per QD1 I/O
 * on the NVMe/TCP target in the guest, most of them the idle stretch's, when the stride was an eighth of the spin, at
 * least a round, and a stretch's end was read.
 *
 * <h2>A shared CPU</h2>
 * Spinning pays only while the reactor has its CPU to itself. When another runnable thread shares it (a cloud VM's
 * neighbour, a batch job, the application on the same core), every spin is time taken from that thread and
 * charged to the reactor, which the scheduler then makes wait when work arrives; and a reactor that spins is never
 * the freshly woken thread the scheduler favours. So, every {@value #CONTENTION_WINDOW_MILLIS} ms of the idle path,
 * the strategy reads how long its thread was runnable without running (the run delay of
 * {@code /proc/thread-self/schedstat}) and how much of that each block cost. When the run delay, averaged over about
 * four windows, exceeds {@value #CONTENDED_PERCENT}% the CPU is shared. Whether blocking or spinning then serves
 * better depends on who shares it, and the two cases go opposite ways (measured, docs/datapath.md): with the other
 * end of the I/O on the same CPU (host and target on one core) blocking at once, as the kernel's work queues do,
 * gave 3.8x the QD1 IOPS of spinning, since every spin delays the peer that would send the next command; with a
 * CPU-bound competitor spinning gave 1.9x blocking, since the scheduler's time slices serve a runnable reactor better
 * than a wake-up per command. So the strategy tries both: {@value #TRIAL_MILLIS} ms blocking at once, then
 * {@value #TRIAL_MILLIS} ms spinning, counting the work done in each, and keeps the better for
 * {@value #CONTENDED_HOLD_MILLIS} ms (blocking on a tie: it leaves the CPU to others) before trying again while the
 * CPU is still shared. When the average falls back under the threshold it spins, as on a CPU of its own. A reactor
 * that always has work never measures.
 * <p>Allocation-free after construction; one thread only (the volatile results may be read from any thread).
 */
public final class AdaptiveIdleStrategy implements IdleStrategy {
    private static final Logger LOG = LoggerFactory.getLogger(AdaptiveIdleStrategy.class);

    public static final String ALIAS = "adaptive";
    public static final long SPIN_NANOS_DEFAULT = TimeUnit.MICROSECONDS.toNanos(50);
    /**
     * System property: the longest spin the strategy learns ("How long to spin"), in microseconds; at or below the
     * configured spin, learning is off and the spin stays fixed.
     */
    public static final String MAX_SPIN_US_PROP_NAME = "nvmeof4j.reactor.idle_spin_max_us";
    public static final long MAX_SPIN_US_DEFAULT = 500;
    /** Largest {@value #MAX_SPIN_US_PROP_NAME}: a second, far past any gap worth spinning through. */
    public static final long MAX_SPIN_US_LIMIT = 1_000_000;
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
    public static final long CONTENDED_HOLD_MILLIS = 2000;
    /** How long each of the two trials (blocking at once, spinning) runs on a shared CPU. */
    public static final long TRIAL_MILLIS = 100;
    /** Spinning must do this many percent more work than blocking in its trial to be kept. */
    public static final int SPIN_WINS_PERCENT = 5;

    /** Spin rounds between two clock reads at most ("Clock reads while spinning"). */
    public static final int MAX_SPIN_ROUNDS_PER_CLOCK_READ = 64;

    /** The trial under way on a shared CPU. */
    private enum Trial { NONE, BLOCKING, SPINNING }

    /** Where an idle stretch stands. */
    public enum State { ACTIVE, SPINNING, YIELDING, PARKING }

    private final String name;
    private final IdleWait wait;
    private final long spinNanos;
    private final long maxSpinNanos;
    private final int maxYields;
    private final long minParkNanos;
    private final long maxParkNanos;
    private final LongSupplier nanoClock;
    /** The thread's run delay in ns, -1 when unreadable; null when not measured. */
    private final LongSupplier runDelay;
    private final AutoCloseable runDelaySource;

    private State state = State.ACTIVE;
    /**
     * The spin of the next stretch: {@code spinNanos} up to {@code maxSpinNanos}, learned ("How long to spin").
     * Volatile for the metrics' scrape thread only: written once per idle stretch, never per busy round.
     */
    private volatile long spinBudgetNanos;
    private long idleStartNanos;
    /** The last clock read of the idle path, and the spin rounds until the next ("Clock reads while spinning"). */
    private long lastReadNanos;
    private int spinRoundsUntilRead;
    private int spinRoundsPerRead = 1;
    /** What an empty spin round cost, measured between the last two reads; 0 until measured. */
    private long spinRoundNanos;
    private int yields;
    private long parkNanos;

    private long windowStartNanos;
    private long windowStartRunDelay;
    private long windowBlocks;
    private long contendedUntilNanos;
    private Trial trial = Trial.NONE;
    private long trialStartNanos;
    private long trialStartWork;
    private long blockingWorkPerSecond;
    /** Work reported by rounds so far (the trials compare how much each way of idling gets done). */
    private long work;
    private volatile boolean shared;
    /** The run delay's share of recent windows, in per-mille, smoothed over ~4 windows (exponentially weighted). */
    private long delayPermilleAverage;
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
        this(name, wait, spinNanos, spinNanos, maxYields, minParkNanos, maxParkNanos, nanoClock, runDelay, null);
    }

    /**
     * @param maxSpinNanos the longest spin learned from the gaps between stretches; at or below {@code spinNanos}
     *                     the spin stays fixed (as with the other constructor)
     */
    public AdaptiveIdleStrategy(String name, IdleWait wait, long spinNanos, long maxSpinNanos, int maxYields,
                                long minParkNanos, long maxParkNanos, LongSupplier nanoClock, LongSupplier runDelay) {
        this(name, wait, spinNanos, maxSpinNanos, maxYields, minParkNanos, maxParkNanos, nanoClock, runDelay, null);
    }

    private AdaptiveIdleStrategy(String name, IdleWait wait, long spinNanos, long maxSpinNanos, int maxYields,
                                 long minParkNanos, long maxParkNanos, LongSupplier nanoClock, LongSupplier runDelay,
                                 AutoCloseable runDelaySource) {
        if (spinNanos < 0 || maxYields < 0 || minParkNanos <= 0 || maxParkNanos < minParkNanos) {
            throw new IllegalArgumentException("spin " + spinNanos + " ns, yields " + maxYields + ", park "
                + minParkNanos + ".." + maxParkNanos + " ns: need spin >= 0, yields >= 0, 0 < min park <= max park");
        }
        this.name = Objects.requireNonNull(name, "name");
        this.wait = Objects.requireNonNull(wait, "wait");
        this.spinNanos = spinNanos;
        // No spin configured means none at all (block at once), learned or not.
        this.maxSpinNanos = spinNanos == 0 ? 0 : Math.max(spinNanos, maxSpinNanos);
        this.spinBudgetNanos = spinNanos;
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
            contendedUntilNanos = windowStartNanos;
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
        long maxSpinNanos = TimeUnit.MICROSECONDS.toNanos(maxSpinMicrosOption());
        int maxYields = maxYieldsOption();
        SchedStat stat = adaptToContentionOption() ? SchedStat.open() : null;
        return new AdaptiveIdleStrategy(name, wait, spinNanos, maxSpinNanos, maxYields,
            Math.min(MIN_PARK_NANOS_DEFAULT, maxParkNanos), maxParkNanos, System::nanoTime,
            stat == null ? null : stat::readRunDelayNanos, stat);
    }

    /**
     * Reads this class's JVM options, refusing a bad one with {@link IllegalArgumentException} ({@link JvmOptions}):
     * for a daemon or a host to check before it starts reactors, whose threads are no place to find out.
     */
    public static void checkJvmOptions() {
        maxSpinMicrosOption();
        maxYieldsOption();
        adaptToContentionOption();
    }

    private static long maxSpinMicrosOption() {
        return JvmOptions.longOption(MAX_SPIN_US_PROP_NAME, MAX_SPIN_US_DEFAULT, 0, MAX_SPIN_US_LIMIT);
    }

    private static int maxYieldsOption() {
        return JvmOptions.intOption(MAX_YIELDS_PROP_NAME, MAX_YIELDS_DEFAULT, 0, Integer.MAX_VALUE);
    }

    private static boolean adaptToContentionOption() {
        return JvmOptions.booleanOption(ADAPT_TO_CONTENTION_PROP_NAME, true);
    }

    @Override
    public void idle(int workCount) {
        if (workCount > 0) {
            work += workCount;
            if (state != State.ACTIVE && maxSpinNanos > spinNanos && !contended) {
                learnSpin(stretchEndNanos() - idleStartNanos);
            }
            reset();
            return;
        }
        if (state == State.SPINNING && --spinRoundsUntilRead > 0) {
            Thread.onSpinWait(); // no clock read this round ("Clock reads while spinning")
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
                    lastReadNanos = now;
                    spinRoundsPerRead = spinRoundsPerRead(0);
                    spinRoundsUntilRead = spinRoundsPerRead;
                }
                break;
            case SPINNING:
                spinRoundNanos = Math.max(1, (now - lastReadNanos) / spinRoundsPerRead);
                lastReadNanos = now;
                if (now - idleStartNanos < spinBudgetNanos) {
                    spinRoundsPerRead = spinRoundsPerRead(now - idleStartNanos);
                    spinRoundsUntilRead = spinRoundsPerRead;
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

    /** The end of an idle stretch that lasted {@code gapNanos}: the next spin ("How long to spin"). */
    private void learnSpin(long gapNanos) {
        long target = Math.max(spinNanos, Math.min(maxSpinNanos, gapNanos + (gapNanos >> 2)));
        if (state != State.PARKING) {
            spinBudgetNanos += (target - spinBudgetNanos) / 8; // caught while spinning (or yielding)
        } else if (gapNanos <= maxSpinNanos) {
            spinBudgetNanos = Math.max(spinBudgetNanos, target); // a longer spin would have caught it
        } else {
            spinBudgetNanos -= (spinBudgetNanos - spinNanos) / 2; // sparse: the spin was wasted
        }
    }

    /**
     * When the stretch now ending saw its work: while spinning with measured rounds, the last read plus the empty
     * rounds since and the round that found the work, without a read ("Clock reads while spinning"); else a read
     * (after a block or a yield, which cost far more than one).
     */
    private long stretchEndNanos() {
        if (state == State.SPINNING && spinRoundNanos > 0) {
            return lastReadNanos + (spinRoundsPerRead - spinRoundsUntilRead + 1L) * spinRoundNanos;
        }
        return nanoClock.getAsLong();
    }

    /**
     * Empty spin rounds until the next clock read, {@code spunNanos} into the spin: as many as fit in a quarter of
     * the spin or, where fewer than two do, as many as it takes to reach the spin's end; 1 until a round is measured.
     */
    private int spinRoundsPerRead(long spunNanos) {
        if (spinRoundNanos == 0) {
            return 1;
        }
        long rounds = (spinBudgetNanos >> 2) / spinRoundNanos;
        if (rounds < 2) { // reading every round would end the spin no closer to its length: within a round past it
            rounds = (spinBudgetNanos - spunNanos + spinRoundNanos - 1) / spinRoundNanos;
        }
        return (int) Math.max(1, Math.min(MAX_SPIN_ROUNDS_PER_CLOCK_READ, rounds));
    }

    /** The spin the next idle stretch starts with, as learned so far ("How long to spin"). Any thread. */
    public long spinNanos() {
        return spinBudgetNanos;
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
        // Smoothed over ~4 windows: a burst of the JVM's own threads (a JIT compilation on a pinned CPU: 20-25% of
        // one window, measured) must not turn spinning off for a whole hold; a competitor that takes half the CPU
        // crosses the threshold in the first window (average 12.5%).
        long permille = delay * 1000 / Math.max(1, window);
        delayPermilleAverage += (permille - delayPermilleAverage) / 4;
        boolean sharedNow = delayPermilleAverage > CONTENDED_PERCENT * 10L;
        if (sharedNow != shared) {
            if (LOG.isDebugEnabled()) { // the reactor thread: no varargs array or boxing when the line is off
                LOG.debug("{}: runnable without a CPU for {}% of the last {} ms (average {}%): CPU {}", name,
                    permille / 10, TimeUnit.NANOSECONDS.toMillis(window), delayPermilleAverage / 10,
                    sharedNow ? "shared" : "its own");
            }
            shared = sharedNow;
        }
        decide(now);
        windowStartNanos = now;
        windowStartRunDelay = delayTotal;
        windowBlocks = 0;
    }

    /**
     * The trials on a shared CPU (class comment): block at once, then spin, then keep the way that got more work
     * done until the hold ends.
     */
    private void decide(long now) {
        long trialNanos = TimeUnit.MILLISECONDS.toNanos(TRIAL_MILLIS);
        switch (trial) {
            case BLOCKING:
                if (now - trialStartNanos >= trialNanos) {
                    blockingWorkPerSecond = workPerSecondSinceTrialStart(now);
                    startTrial(Trial.SPINNING, now);
                }
                break;
            case SPINNING:
                if (now - trialStartNanos >= trialNanos) {
                    long spinning = workPerSecondSinceTrialStart(now);
                    boolean block = spinning * 100 <= blockingWorkPerSecond * (100 + SPIN_WINS_PERCENT);
                    if (LOG.isDebugEnabled()) {
                        LOG.debug("{}: shared CPU, work per second blocking {} vs spinning {}: {}", name,
                            blockingWorkPerSecond, spinning, block ? "blocking at once" : "spinning");
                    }
                    trial = Trial.NONE;
                    setContended(block);
                    contendedUntilNanos = now + TimeUnit.MILLISECONDS.toNanos(CONTENDED_HOLD_MILLIS);
                }
                break;
            case NONE:
            default:
                if (now - contendedUntilNanos < 0) {
                    break; // a decision holds
                }
                if (shared) {
                    startTrial(Trial.BLOCKING, now);
                } else {
                    setContended(false);
                }
                break;
        }
    }

    private void startTrial(Trial next, long now) {
        trial = next;
        trialStartNanos = now;
        trialStartWork = work;
        setContended(next == Trial.BLOCKING);
    }

    private long workPerSecondSinceTrialStart(long now) {
        return (work - trialStartWork) * TimeUnit.SECONDS.toNanos(1) / Math.max(1, now - trialStartNanos);
    }

    private void setContended(boolean blockAtOnce) {
        contended = blockAtOnce;
        if (blockAtOnce && (state == State.SPINNING || state == State.YIELDING)) {
            state = State.PARKING;
        }
    }

    /** True while the run delay shows the CPU shared (whether or not blocking was chosen). Any thread. */
    public boolean cpuShared() {
        return shared;
    }

    /** Where the current idle stretch stands. Strategy thread (or tests). */
    public State state() {
        return state;
    }

    /** The bound of the next block. Strategy thread (or tests). */
    public long parkNanos() {
        return parkNanos;
    }

    /** True while empty rounds block at once: a shared CPU where blocking did at least as much work. Any thread. */
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
