package io.nvmeof4j.protocol.spi;

import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class MemoryBudgetTest {
    @Test
    void shouldReserveUpToTheLimitAndTakeBackWhatIsReleased() {
        MemoryBudget budget = new MemoryBudget(100, "test budget of 100 bytes");
        assertThat(budget.tryReserve(60)).isTrue();
        assertThat(budget.tryReserve(41)).as("over the limit").isFalse();
        assertThat(budget.reservedBytes()).as("a refusal reserves nothing").isEqualTo(60);
        assertThat(budget.tryReserve(40)).isTrue();
        assertThat(budget.availableBytes()).isZero();
        budget.release(60);
        assertThat(budget.tryReserve(41)).isTrue();
        assertThat(budget.reservedBytes()).isEqualTo(81);
        assertThatThrownBy(() -> budget.release(82)).isInstanceOf(IllegalArgumentException.class)
            .hasMessageContaining("releasing 82 of 81").hasMessageContaining("test budget of 100 bytes");
        assertThat(budget.reservedBytes()).as("a bad release changes nothing").isEqualTo(81);
        assertThatThrownBy(() -> budget.tryReserve(-1)).isInstanceOf(IllegalArgumentException.class);
        assertThat(MemoryBudget.unlimited("queue buffers").tryReserve(Long.MAX_VALUE)).isTrue();
    }

    /** Four threads race for a budget of 1,000 units: exactly 1,000 reservations of 1 succeed, never more. */
    @Test
    void shouldNeverReserveMoreThanTheLimitUnderContention() throws Exception {
        MemoryBudget budget = new MemoryBudget(1_000, "contended");
        AtomicInteger granted = new AtomicInteger();
        CountDownLatch start = new CountDownLatch(1);
        List<Thread> threads = new ArrayList<>();
        for (int t = 0; t < 4; t++) {
            Thread thread = new Thread(() -> {
                try {
                    start.await(5, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    return;
                }
                for (int i = 0; i < 1_000; i++) {
                    if (budget.tryReserve(1)) {
                        granted.incrementAndGet();
                    }
                }
            });
            thread.start();
            threads.add(thread);
        }
        start.countDown();
        for (Thread thread : threads) {
            thread.join(5_000);
            assertThat(thread.isAlive()).isFalse();
        }
        assertThat(granted.get()).isEqualTo(1_000);
        assertThat(budget.reservedBytes()).isEqualTo(1_000);
    }
}
