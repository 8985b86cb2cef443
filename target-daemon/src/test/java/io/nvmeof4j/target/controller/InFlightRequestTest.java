package io.nvmeof4j.target.controller;

import org.junit.jupiter.api.Test;

import java.util.concurrent.atomic.AtomicLongArray;

import static org.assertj.core.api.Assertions.assertThat;

/** The in-flight count of a queue slot's commands: counted from begin to completion, never otherwise. */
class InFlightRequestTest {
    @Test
    void shouldCountABegunCommandUntilItCompletesAndNeverOneThatWasNotBegun() {
        FakeRequest transport = new FakeRequest(null, 0);
        InFlightRequest slot = new InFlightRequest(transport);
        AtomicLongArray queueCounters = new AtomicLongArray(2);

        assertThat(slot.begin(queueCounters, 1)).isSameAs(slot);
        assertThat(queueCounters.get(1)).isEqualTo(1);
        slot.complete(0);
        assertThat(queueCounters.get(1)).as("counted down at completion").isZero();
        assertThat(transport.completions()).isEqualTo(1);

        // Completed again without a begin (the admin queue's metered slots are never counted): the queue's counters
        // are not touched, the completion still reaches the transport.
        slot.complete(0x02);
        assertThat(queueCounters.get(0)).isZero();
        assertThat(queueCounters.get(1)).isZero();
        assertThat(transport.completions()).isEqualTo(2);

        // Begun again on the other half: counted there, and only there.
        slot.begin(queueCounters, 0);
        assertThat(queueCounters.get(0)).isEqualTo(1);
        slot.complete(0);
        assertThat(queueCounters.get(0)).isZero();
        assertThat(queueCounters.get(1)).isZero();
    }
}
