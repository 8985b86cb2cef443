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

    @Test
    void shouldBlockAtOnceWhileTheRunDelayShowsASharedCpu() {
        AdaptiveIdleStrategy s = strategy(5, true);
        long start = now;
        idleAt(s, start + 10 * MS);
        assertThat(s.state()).as("a CPU of its own: spins").isEqualTo(State.SPINNING);
        s.idle(1);
        runDelay = 20 * MS; // runnable without a CPU for 40 % of the 50 ms window
        idleAt(s, start + 50 * MS);
        assertThat(s.contended()).isTrue();
        assertThat(s.state()).as("the first empty round blocks: no spin, no yield").isEqualTo(State.PARKING);
        assertThat(blocks).containsExactly(MS);

        s.idle(1);
        idleAt(s, start + 51 * MS);
        assertThat(s.state()).isEqualTo(State.PARKING);
        assertThat(blocks).containsExactly(MS, MS);
    }

    @Test
    void shouldStopSpinningWhenContentionIsMeasuredMidStretch() {
        AdaptiveIdleStrategy s = strategy(5, true);
        long start = now;
        idleAt(s, start + 49 * MS + 990 * US);
        assertThat(s.state()).isEqualTo(State.SPINNING);
        runDelay = 6 * MS; // 12 % of the window
        idleAt(s, start + 50 * MS);
        assertThat(s.contended()).isTrue();
        assertThat(s.state()).isEqualTo(State.PARKING);
        assertThat(blocks).as("blocked in the round that measured it").containsExactly(MS);
    }

    @Test
    void shouldTreatTenPercentOrLessAsNotShared() {
        AdaptiveIdleStrategy s = strategy(5, true);
        runDelay = 5 * MS; // exactly 10 % of a 50 ms window
        idleAt(s, now + 50 * MS);
        assertThat(s.contended()).isFalse();
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
    void shouldHoldTheContendedStateThenProbeSpinningWhenTheCompetitorLeaves() {
        AdaptiveIdleStrategy s = strategy(5, true);
        long start = now;
        runDelay = 10 * MS;
        idleAt(s, start + 50 * MS);
        assertThat(s.contended()).isTrue();

        // The competitor leaves: no more run delay, but the state holds for CONTENDED_HOLD_MILLIS.
        long t = start + 50 * MS;
        while (t + 50 * MS < start + 50 * MS + AdaptiveIdleStrategy.CONTENDED_HOLD_MILLIS * MS) {
            t += 50 * MS;
            idleAt(s, t);
            assertThat(s.contended()).as("held at %d ms", (t - start) / MS).isTrue();
        }
        idleAt(s, start + 50 * MS + AdaptiveIdleStrategy.CONTENDED_HOLD_MILLIS * MS);
        assertThat(s.contended()).as("a quiet window after the hold: back to spinning").isFalse();
        s.idle(1);
        idleAt(s, now + US);
        assertThat(s.state()).isEqualTo(State.SPINNING);
    }

    @Test
    void shouldExtendTheHoldWhileTheCompetitorStays() {
        AdaptiveIdleStrategy s = strategy(5, true);
        long start = now;
        long t = start;
        for (int i = 1; i <= 30; i++) { // 1.5 s, contended in every window
            t += 50 * MS;
            runDelay += 10 * MS;
            idleAt(s, t);
            assertThat(s.contended()).as("window %d", i).isTrue();
        }
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
    void shouldNeverBlockWhenBusy() {
        BusySpinIdleStrategy busy = new BusySpinIdleStrategy();
        for (int i = 0; i < 1000; i++) {
            busy.idle(0);
        }
        assertThat(busy.alias()).isEqualTo("busy");
    }
}
