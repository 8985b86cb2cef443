package io.nvmeof4j.protocol.spi.transport;

import org.junit.jupiter.api.Test;

import java.util.concurrent.atomic.AtomicLong;

import static org.assertj.core.api.Assertions.assertThat;

/** A poll round reads the clock at most once, however many stamps it hands out. */
class RoundClockTest {
    private static final long STEP = 1_000;
    private final AtomicLong reads = new AtomicLong();
    private final RoundClock clock = new RoundClock(() -> STEP * reads.incrementAndGet());

    @Test
    void shouldReadOncePerRoundAndOnlyWhenAsked() {
        PollGroupCore core = new PollGroupCore("test", () -> { }, clock);
        assertThat(reads.get()).as("the first read, so last() is a time").isEqualTo(1);

        core.beginPoll();
        assertThat(reads.get()).as("a round nobody stamps reads nothing").isEqualTo(1);
        long[] stamps = new long[32];
        for (int i = 0; i < stamps.length; i++) {
            stamps[i] = core.clock().now(); // 32 capsules taken in one round
        }
        assertThat(reads.get()).as("reads for 32 stamps in one round").isEqualTo(2);
        assertThat(stamps).containsOnly(2 * STEP);

        core.beginPoll();
        assertThat(core.clock().last()).as("last() does not read").isEqualTo(2 * STEP);
        assertThat(core.clock().now()).as("the next round's stamp is the stepped clock's next value")
            .isEqualTo(3 * STEP);
        assertThat(reads.get()).isEqualTo(3);

        core.beginWait(); // a wait takes in what arrived while it blocked: stamped after it
        assertThat(core.clock().now()).isEqualTo(4 * STEP);
        core.endWait();
    }
}
