package io.nvmeof4j.protocol.spi.idle;

import io.nvmeof4j.protocol.spi.idle.AdaptiveIdleStrategy.State;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The state transitions of the adaptive idle strategy, driven by an injected clock and run delay. */
class AdaptiveIdleStrategyTest {
    private static final long US = TimeUnit.MICROSECONDS.toNanos(1);
    private static final long MS = TimeUnit.MILLISECONDS.toNanos(1);
    private static final long SPIN = 50 * US;

    private long now = 1_000 * MS;
    /** -1: unreadable. */
    private long runDelay = 0;
    private final List<Long> blocks = new ArrayList<>();

    private AdaptiveIdleStrategy strategy(int maxYields, boolean measure) {
        return new AdaptiveIdleStrategy("test", blocks::add, SPIN, maxYields, MS, 8 * MS, () -> now,
            measure ? () -> runDelay : null);
    }

    private void idleAt(AdaptiveIdleStrategy s, long at) {
        now = at;
        s.idle(0);
    }

    @Test
    void shouldSpinThenYieldThenBlockWithABoundDoublingToTheMaximum() {
        AdaptiveIdleStrategy s = strategy(2, false);
        long start = now;
        idleAt(s, start);
        assertThat(s.state()).isEqualTo(State.SPINNING);
        idleAt(s, start + 49 * US);
        assertThat(s.state()).as("still within the spin time").isEqualTo(State.SPINNING);
        assertThat(blocks).isEmpty();

        idleAt(s, start + SPIN);
        assertThat(s.state()).isEqualTo(State.YIELDING);
        idleAt(s, start + SPIN + US);
        assertThat(s.state()).isEqualTo(State.YIELDING);
        assertThat(blocks).as("two yields before the first block").isEmpty();

        for (int i = 0; i < 6; i++) {
            idleAt(s, start + SPIN + (2 + i) * US);
        }
        assertThat(s.state()).isEqualTo(State.PARKING);
        assertThat(blocks).containsExactly(MS, 2 * MS, 4 * MS, 8 * MS, 8 * MS, 8 * MS);
    }

    /** A strategy that learns its spin up to {@code maxSpin}, no yields, no contention measurement. */
    private AdaptiveIdleStrategy learning(long spin, long maxSpin) {
        return new AdaptiveIdleStrategy("test", blocks::add, spin, maxSpin, 0, MS, 8 * MS, () -> now, null);
    }

    /** What an empty round costs in the stretches below. */
    private static final long ROUND = US;

    /** Empty rounds of {@link #ROUND} from {@code start} until {@code end} or until the strategy blocks. */
    private void emptyRounds(AdaptiveIdleStrategy s, long start, long end) {
        for (now = start; now < end && s.state() != State.PARKING; now += ROUND) {
            s.idle(0);
        }
    }

    /**
     * One idle stretch from {@code start}: empty rounds until {@code gap} (blocking once the spin is over, the block
     * ending with the work), then a round with work.
     */
    private void stretch(AdaptiveIdleStrategy s, long start, long gap) {
        emptyRounds(s, start, start + gap);
        now = start + gap;
        s.idle(1);
    }

    @Test
    void shouldLearnToSpinOverAShortGapThatBlocked() {
        AdaptiveIdleStrategy s = learning(SPIN, 500 * US);
        stretch(s, now, 200 * US);
        assertThat(blocks).as("the first stretch blocked after the configured spin").hasSize(1);
        assertThat(s.spinNanos()).as("a quarter more than the gap").isEqualTo(250 * US);

        long start = now + MS;
        emptyRounds(s, start, start + 250 * US);
        assertThat(s.state()).as("still spinning where it blocked before").isEqualTo(State.SPINNING);
        assertThat(blocks).hasSize(1);
        emptyRounds(s, now, start + 250 * US + 250 * US / 4 + ROUND);
        assertThat(s.state()).as("blocks at most a quarter of the spin late").isEqualTo(State.PARKING);
        assertThat(now - ROUND - start).isGreaterThanOrEqualTo(250 * US);
        assertThat(blocks).hasSize(2);
    }

    @Test
    void shouldTimeAStretchCaughtWhileSpinningByItsRoundsWithoutAClockRead() {
        long[] reads = new long[1];
        AdaptiveIdleStrategy s = new AdaptiveIdleStrategy("test", blocks::add, SPIN, 500 * US, 0, MS, 8 * MS,
            () -> { reads[0]++; return now; }, null);
        stretch(s, now, 200 * US); // blocked: learns 250 us and the cost of a round
        assertThat(s.spinNanos()).isEqualTo(250 * US);

        reads[0] = 0;
        stretch(s, now + MS, 100 * US + ROUND / 2); // the work arrives between two reads, half a round in
        assertThat(blocks).as("caught by the spin").hasSize(1);
        assertThat(reads[0]).as("the stretch's start and one read a quarter of the spin on; none at its end")
            .isEqualTo(2);
        assertThat(s.spinNanos()).as("an eighth of the way to a quarter more than the rounds counted")
            .isEqualTo(250 * US - (250 * US - (100 * US + ROUND) * 5 / 4) / 8);
    }

    @Test
    void shouldReadTheClockAboutFourTimesPerSpinWhateverItsRoundsCost() {
        long[] reads = new long[1];
        AdaptiveIdleStrategy s = new AdaptiveIdleStrategy("test", blocks::add, SPIN, 0, MS, 8 * MS,
            () -> { reads[0]++; return now; }, null);
        for (long roundCost : new long[] {200, 1_000, 5_000}) { // ns per empty round: 62 of 200 ns in a quarter
            for (int stretch = 0; stretch < 3; stretch++) { // the first measures the rounds, the others use it
                reads[0] = 0;
                long start = now;
                int rounds = 0;
                while (s.state() != State.PARKING) {
                    s.idle(0);
                    rounds++;
                    now += roundCost;
                }
                long spun = now - roundCost - start;
                assertThat(spun).as("spin of a stretch with %d ns rounds", roundCost).isGreaterThanOrEqualTo(SPIN);
                if (stretch > 0) { // the first after rounds got dearer ends late once: by the previous stride
                    assertThat(spun).as("spin of a stretch with %d ns rounds", roundCost)
                        .isLessThanOrEqualTo(SPIN + SPIN / 4 + roundCost);
                    assertThat(reads[0]).as("clock reads in %d rounds of %d ns", rounds, roundCost)
                        .isBetween(5L, 6L);
                }
                s.idle(1);
                now += MS;
            }
        }
        assertThat(blocks).as("one block per stretch, after its spin").hasSize(9);
    }

    @Test
    void shouldCountTheRoundsToTheSpinsEndWhileFewerThanTwoFitInAQuarterOfIt() {
        long[] reads = new long[1];
        AdaptiveIdleStrategy s = new AdaptiveIdleStrategy("test", blocks::add, SPIN, 0, MS, 8 * MS,
            () -> { reads[0]++; return now; }, null);
        for (long roundCost : new long[] {7 * US, 15 * US, 60 * US}) { // a quarter of the spin is 12.5 us
            for (int stretch = 0; stretch < 3; stretch++) { // the first measures the rounds, the others use it
                reads[0] = 0;
                long start = now;
                while (s.state() != State.PARKING) {
                    s.idle(0);
                    now += roundCost;
                }
                long spun = now - roundCost - start;
                assertThat(spun).as("spin of a stretch with %d ns rounds", roundCost).isGreaterThanOrEqualTo(SPIN);
                if (stretch > 0) {
                    assertThat(spun).as("within a round past the spin").isLessThan(SPIN + roundCost);
                    assertThat(reads[0]).as("one read to start the spin, one to end it (%d ns rounds)", roundCost)
                        .isEqualTo(2);
                }
                s.idle(1);
                now += MS;
            }
        }
    }

    @Test
    void shouldNotLearnASpinLongerThanTheMaximum() {
        AdaptiveIdleStrategy s = learning(SPIN, 500 * US);
        stretch(s, now, 450 * US);
        assertThat(s.spinNanos()).as("capped").isEqualTo(500 * US);
        stretch(s, now + MS, 5 * MS);
        assertThat(s.spinNanos()).as("a gap past the maximum halves the way back").isEqualTo(275 * US);
    }

    @Test
    void shouldGoBackToTheConfiguredSpinWhenTrafficIsSparse() {
        AdaptiveIdleStrategy s = learning(SPIN, 500 * US);
        stretch(s, now, 300 * US);
        assertThat(s.spinNanos()).isEqualTo(375 * US);
        for (int i = 0; i < 8; i++) {
            stretch(s, now + MS, 20 * MS);
        }
        assertThat(s.spinNanos()).isBetween(SPIN, SPIN + 2 * US);
    }

    @Test
    void shouldShortenALearnedSpinSlowlyWhenCaughtWhileSpinning() {
        AdaptiveIdleStrategy s = learning(SPIN, 500 * US);
        stretch(s, now, 200 * US);
        int blocked = blocks.size();
        stretch(s, now + MS, 100 * US);
        assertThat(blocks).as("caught by the spin, no block").hasSize(blocked);
        assertThat(s.spinNanos()).as("an eighth of the way to 125 us").isEqualTo(250 * US - (125 * US) / 8);
    }

    @Test
    void shouldKeepTheSpinFixedWithoutALearningMaximum() {
        AdaptiveIdleStrategy s = strategy(0, false);
        stretch(s, now, 200 * US);
        assertThat(blocks).hasSize(1);
        assertThat(s.spinNanos()).isEqualTo(SPIN);
    }

    @Test
    void shouldNeverSpinWhenNoSpinIsConfigured() {
        AdaptiveIdleStrategy s = learning(0, 500 * US);
        stretch(s, now, 200 * US);
        idleAt(s, now + MS);
        assertThat(s.state()).as("blocks at once, nothing learned").isEqualTo(State.PARKING);
        assertThat(s.spinNanos()).isZero();
    }

    @Test
    void shouldStartOverAfterARoundWithWork() {
        AdaptiveIdleStrategy s = strategy(0, false);
        idleAt(s, now);
        idleAt(s, now + SPIN);
        idleAt(s, now + SPIN);
        assertThat(blocks).containsExactly(MS, 2 * MS);
        assertThat(s.parkNanos()).isEqualTo(4 * MS);

        s.idle(3);
        assertThat(s.state()).isEqualTo(State.ACTIVE);
        assertThat(s.parkNanos()).isEqualTo(MS);
        idleAt(s, now + US);
        assertThat(s.state()).as("spins again after work").isEqualTo(State.SPINNING);
        idleAt(s, now + SPIN);
        assertThat(blocks).containsExactly(MS, 2 * MS, MS);
    }

    @Test
    void shouldBlockAtOnceWithoutSpinOrYields() {
        AdaptiveIdleStrategy s = new AdaptiveIdleStrategy("test", blocks::add, 0, 0, MS, MS, () -> now, null);
        idleAt(s, now);
        assertThat(s.state()).isEqualTo(State.PARKING);
        assertThat(blocks).containsExactly(MS);
    }

    /** One 50 ms window: a round with {@code work} items, then an empty round at the window's end. */
    private void window(AdaptiveIdleStrategy s, long delayMillis, int work) {
        if (work > 0) {
            s.idle(work);
        }
        runDelay += delayMillis * MS;
        idleAt(s, now + 50 * MS);
    }

    /** Windows at 50 % run delay until a trial ends; the work per window for each way of idling. */
    private void trials(AdaptiveIdleStrategy s, int workBlocking, int workSpinning) {
        long windowsPerTrial = AdaptiveIdleStrategy.TRIAL_MILLIS / 50;
        for (int i = 0; i < windowsPerTrial; i++) {
            assertThat(s.contended()).as("blocking trial, window %d", i).isTrue();
            window(s, 25, workBlocking);
        }
        for (int i = 0; i < windowsPerTrial; i++) {
            assertThat(s.contended()).as("spinning trial, window %d", i).isFalse();
            window(s, 25, workSpinning);
        }
    }

    @Test
    void shouldStartWithABlockingTrialWhenTheRunDelayShowsASharedCpu() {
        AdaptiveIdleStrategy s = strategy(5, true);
        idleAt(s, now + 10 * MS);
        assertThat(s.state()).as("a CPU of its own: spins").isEqualTo(State.SPINNING);
        window(s, 25, 1); // runnable without a CPU for half the window
        assertThat(s.cpuShared()).isTrue();
        assertThat(s.contended()).as("the blocking trial").isTrue();
        assertThat(s.state()).as("the first empty round blocks: no spin, no yield").isEqualTo(State.PARKING);
        assertThat(blocks).containsExactly(MS);

        s.idle(1);
        idleAt(s, now + MS);
        assertThat(s.state()).isEqualTo(State.PARKING);
        assertThat(blocks).containsExactly(MS, MS);
    }

    @Test
    void shouldSmoothOutABurstOfOneWindow() {
        AdaptiveIdleStrategy s = strategy(5, true);
        window(s, 20, 1); // 40 %: a JIT compilation on a pinned CPU, say
        assertThat(s.cpuShared()).isFalse();
        window(s, 0, 1);
        assertThat(s.contended()).isFalse();
        s.idle(1);
        idleAt(s, now + US);
        assertThat(s.state()).isEqualTo(State.SPINNING);
    }

    @Test
    void shouldTreatTenPercentOrLessAsNotShared() {
        AdaptiveIdleStrategy s = strategy(5, true);
        for (int i = 0; i < 20; i++) {
            window(s, 5, 1); // exactly 10 % of every window
        }
        assertThat(s.cpuShared()).isFalse();
        assertThat(s.contended()).isFalse();
    }

    @Test
    void shouldKeepSpinningOnASharedCpuWhenSpinningDidMoreWork() {
        AdaptiveIdleStrategy s = strategy(0, true);
        window(s, 25, 1);
        trials(s, 10, 20); // a CPU-bound competitor: the scheduler's slices serve a spinning reactor better
        assertThat(s.cpuShared()).isTrue();
        assertThat(s.contended()).as("spinning kept").isFalse();
        long decided = now;
        while (now + 50 * MS - decided < AdaptiveIdleStrategy.CONTENDED_HOLD_MILLIS * MS) {
            window(s, 25, 20);
            assertThat(s.contended()).as("held at %d ms", (now - decided) / MS).isFalse();
        }
        window(s, 25, 20);
        assertThat(s.contended()).as("the hold is over and the CPU still shared: a new blocking trial").isTrue();
    }

    @Test
    void shouldBlockOnASharedCpuWhenBlockingDidAsMuchWork() {
        AdaptiveIdleStrategy s = strategy(0, true);
        window(s, 25, 1);
        trials(s, 100, 104); // within SPIN_WINS_PERCENT: a tie goes to blocking, which leaves the CPU to others
        assertThat(s.contended()).isTrue();
        assertThat(s.state()).isEqualTo(State.PARKING);
    }

    @Test
    void shouldSpinAgainWhenTheCompetitorLeaves() {
        AdaptiveIdleStrategy s = strategy(5, true);
        window(s, 25, 1);
        trials(s, 40, 10); // the other end of the I/O on this CPU: blocking wins
        assertThat(s.contended()).isTrue();
        long decided = now;
        while (now - decided < AdaptiveIdleStrategy.CONTENDED_HOLD_MILLIS * MS) {
            window(s, 0, 40);
        }
        window(s, 0, 40);
        assertThat(s.cpuShared()).isFalse();
        assertThat(s.contended()).as("no run delay any more, the hold over: spins").isFalse();
        s.idle(1);
        idleAt(s, now + US);
        assertThat(s.state()).isEqualTo(State.SPINNING);
    }

    @Test
    void shouldMeasureTheRunDelayPerBlockAsTheWakeupCost() {
        AdaptiveIdleStrategy s = new AdaptiveIdleStrategy("test", blocks::add, 0, 0, MS, MS, () -> now,
            () -> runDelay);
        long start = now;
        for (int i = 0; i < 4; i++) {
            idleAt(s, start + i * MS);
        }
        runDelay = 2 * MS; // 4 % of the window: cheap wake-ups on a CPU of its own
        idleAt(s, start + 50 * MS);
        assertThat(blocks).hasSize(5);
        assertThat(s.wakeupCostNanos()).as("2 ms over the 4 blocks of the window").isEqualTo(500 * US);
        assertThat(s.contended()).isFalse();
    }

    @Test
    void shouldNeverAdaptWhenTheRunDelayCannotBeRead() {
        AdaptiveIdleStrategy s = strategy(5, true);
        runDelay = -1;
        long t = now + 50 * MS;
        idleAt(s, t);
        s.idle(1);
        idleAt(s, t + 50 * MS);
        assertThat(s.contended()).isFalse();
        assertThat(s.state()).isEqualTo(State.SPINNING);
    }

    @Test
    void shouldNotMeasureWithoutARunDelaySource() {
        AdaptiveIdleStrategy s = strategy(5, false);
        runDelay = 1_000 * MS;
        idleAt(s, now + 50 * MS);
        assertThat(s.measuresContention()).isFalse();
        assertThat(s.contended()).isFalse();
    }

    @Test
    void shouldRefuseBoundsThatCannotWork() {
        assertThatThrownBy(() -> new AdaptiveIdleStrategy("t", blocks::add, -1, 0, MS, MS, () -> now, null))
            .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new AdaptiveIdleStrategy("t", blocks::add, 0, 0, 0, MS, () -> now, null))
            .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new AdaptiveIdleStrategy("t", blocks::add, 0, 0, 2 * MS, MS, () -> now, null))
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("min park");
    }

    @Test
    void shouldMeasureTheCallingThreadUnlessTurnedOff() {
        String old = System.getProperty(AdaptiveIdleStrategy.ADAPT_TO_CONTENTION_PROP_NAME);
        try {
            System.setProperty(AdaptiveIdleStrategy.ADAPT_TO_CONTENTION_PROP_NAME, "false");
            try (AdaptiveIdleStrategy off = AdaptiveIdleStrategy.forCurrentThread("t", blocks::add, SPIN, MS)) {
                assertThat(off.measuresContention()).isFalse();
            }
            System.clearProperty(AdaptiveIdleStrategy.ADAPT_TO_CONTENTION_PROP_NAME);
            try (AdaptiveIdleStrategy on = AdaptiveIdleStrategy.forCurrentThread("t", blocks::add, SPIN, 8 * MS)) {
                assertThat(on.measuresContention()).as("Linux with schedstats")
                    .isEqualTo(new java.io.File("/proc/thread-self/schedstat").canRead());
                assertThat(on.alias()).isEqualTo("adaptive");
            }
        } finally {
            if (old != null) {
                System.setProperty(AdaptiveIdleStrategy.ADAPT_TO_CONTENTION_PROP_NAME, old);
            }
        }
    }

    @Test
    void shouldYieldOnlyAsOftenAsConfigured() {
        try (AdaptiveIdleStrategy none = AdaptiveIdleStrategy.forCurrentThread("t", blocks::add, 0, MS)) {
            none.idle(0);
            assertThat(none.state()).as("no yields by default: an empty round blocks").isEqualTo(State.PARKING);
            assertThat(blocks).containsExactly(MS);
        }
        blocks.clear();
        System.setProperty(AdaptiveIdleStrategy.MAX_YIELDS_PROP_NAME, "2");
        try (AdaptiveIdleStrategy two = AdaptiveIdleStrategy.forCurrentThread("t", blocks::add, 0, MS)) {
            two.idle(0);
            two.idle(0);
            assertThat(two.state()).isEqualTo(State.YIELDING);
            two.idle(0);
            assertThat(blocks).isEmpty();
            two.idle(0);
            assertThat(two.state()).isEqualTo(State.PARKING);
            assertThat(blocks).containsExactly(MS);
        } finally {
            System.clearProperty(AdaptiveIdleStrategy.MAX_YIELDS_PROP_NAME);
        }
    }

    @Test
    void shouldRefuseABadJvmOptionInsteadOfTakingTheDefault() {
        String[][] bad = {{AdaptiveIdleStrategy.MAX_YIELDS_PROP_NAME, "-1", "must be 0 or more"},
            {AdaptiveIdleStrategy.MAX_SPIN_US_PROP_NAME, "500us", "not a whole number; must be 0..1000000"},
            {AdaptiveIdleStrategy.MAX_SPIN_US_PROP_NAME, "1000001", "must be 0..1000000"},
            {AdaptiveIdleStrategy.ADAPT_TO_CONTENTION_PROP_NAME, "treu", "must be true or false"}};
        for (String[] option : bad) {
            System.setProperty(option[0], option[1]);
            try {
                assertThatThrownBy(AdaptiveIdleStrategy::checkJvmOptions).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageStartingWith("-D" + option[0] + "=" + option[1] + ": " + option[2]);
                assertThatThrownBy(() -> AdaptiveIdleStrategy.forCurrentThread("t", blocks::add, SPIN, MS))
                    .hasMessageStartingWith("-D" + option[0] + "=" + option[1] + ": ");
            } finally {
                System.clearProperty(option[0]);
            }
        }
    }

    @Test
    void shouldNeverBlockWhenBusy() {
        BusySpinIdleStrategy busy = new BusySpinIdleStrategy();
        for (int i = 0; i < 1000; i++) {
            busy.idle(0);
        }
        assertThat(busy.alias()).isEqualTo("busy");
    }
}
