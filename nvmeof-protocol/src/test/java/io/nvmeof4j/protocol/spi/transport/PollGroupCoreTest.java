package io.nvmeof4j.protocol.spi.transport;

import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/** What a poll round runs of the tasks handed to a poll group. */
class PollGroupCoreTest {
    private final List<String> ran = new ArrayList<>();
    private int wakeups;
    private final PollGroupCore core = new PollGroupCore("test", () -> wakeups++);

    @Test
    void shouldRunOnlyTheTasksQueuedBeforeTheRoundBegan() {
        core.execute(() -> {
            ran.add("a");
            core.execute(() -> ran.add("c")); // handed over during the round
        });
        core.execute(() -> ran.add("b"));

        assertThat(core.beginPoll()).isEqualTo(2);
        assertThat(ran).containsExactly("a", "b");
        assertThat(core.hasTasks()).isTrue();

        assertThat(core.beginPoll()).as("the next round runs it").isEqualTo(1);
        assertThat(ran).containsExactly("a", "b", "c");
        assertThat(core.beginPoll()).isZero();
        assertThat(wakeups).as("a reactor that is not waiting is not woken").isZero();
    }

    @Test
    void shouldWakeAReactorOnlyWhileItWaits() {
        core.beginWait();
        core.execute(() -> ran.add("a"));
        assertThat(wakeups).as("handed over while it waits: woken once").isEqualTo(1);
        core.endWait();
        core.execute(() -> ran.add("b"));
        assertThat(wakeups).as("handed over while it polls: not woken").isEqualTo(1);
        assertThat(core.beginPoll()).isEqualTo(2);
        assertThat(ran).containsExactly("a", "b");
    }

    @Test
    void shouldRunEverythingLeftWhenClosingAndSurviveAFailingTask() {
        core.execute(() -> {
            throw new IllegalStateException("boom");
        });
        core.execute(() -> core.execute(() -> ran.add("late")));
        core.execute(() -> ran.add("b"));

        assertThat(core.runTasks()).as("closing drains until empty, including tasks queued meanwhile").isEqualTo(4);
        assertThat(ran).containsExactly("b", "late");
        assertThat(core.hasTasks()).isFalse();
    }
}
