package io.nvmeof4j.target.limits;

import io.nvmeof4j.target.config.DaemonSettings;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class RamBudgetTest {
    private static final long MIB = 1L << 20;
    private static final long GIB = 1L << 30;
    private static final long TIB = 1L << 40;

    @Test
    void shouldDeriveTheSmallerOfDirectAndPhysicalMemoryLessThePoolsAndTheQueueBuffers() {
        RamBudget byPhysical = RamBudget.derived(32 * GIB, 24 * GIB, 64 * MIB, 512 * MIB);
        assertThat(byPhysical.limitBytes()).isEqualTo(24 * GIB - 64 * MIB - 512 * MIB);
        assertThat(byPhysical.describe())
            .contains("the machine's memory 24 GiB less 64 MiB of buffer pools and 512 MiB of queue buffers");
        RamBudget byDirect = RamBudget.derived(256 * MIB, 24 * GIB, 64 * MIB, 64 * MIB);
        assertThat(byDirect.limitBytes()).isEqualTo(128 * MIB);
        assertThat(byDirect.describe()).contains("direct-memory limit 256 MiB");
        assertThat(RamBudget.derived(64 * MIB, 24 * GIB, 32 * MIB, 64 * MIB).limitBytes()).isZero();
        assertThat(RamBudget.derived(-1, 24 * GIB, 0, 0).limitBytes()).isEqualTo(24 * GIB);
    }

    @Test
    void shouldDeriveFromThisJvmUnlessTheSettingSaysOtherwise() {
        DaemonSettings defaults = DaemonSettings.defaults();
        RamBudget derived = RamBudget.of(defaults);
        long physical = RamBudget.physicalMemory();
        long direct = RamBudget.maxDirectMemory();
        assertThat(physical).isPositive();
        assertThat(derived.limitBytes()).isEqualTo(Math.min(physical, direct)
            - defaults.reactors() * defaults.bufferPoolBytes() - defaults.queueBufferBudgetBytes());
        RamBudget set = RamBudget.of(defaults.withNamespaceLimits(List.of(), 3 * TIB));
        assertThat(set.limitBytes()).isEqualTo(3 * TIB);
        assertThat(set.describe()).contains("nvmeof4j.ram_budget_mib");
        assertThat(set.overcommitted()).as("3 TiB set on a machine with less: namespaces stay thin").isTrue();
        assertThat(derived.overcommitted()).as("the derived budget: namespaces are populated").isFalse();
        assertThat(RamBudget.of(defaults.withNamespaceLimits(List.of(), derived.limitBytes() / 2)).overcommitted())
            .as("a setting within what the JVM may use").isFalse();
    }

    @Test
    void shouldRefuseANamespaceLargerThanTheWholeBudget() {
        RamBudget budget = RamBudget.derived(-1, 24 * GIB, 64 * MIB, 512 * MIB);
        for (long size : new long[] {64 * TIB, TIB, 24 * GIB, Long.MAX_VALUE}) {
            assertThatThrownBy(() -> budget.reserve(size, "ns"))
                .isInstanceOfSatisfying(NamespaceRefusedException.class,
                    e -> assertThat(e.reason()).isEqualTo(NamespaceRefusedException.Reason.LARGER_THAN_BUDGET))
                .hasMessageContaining("ns: ").hasMessageContaining("ram_budget_mib");
        }
        assertThat(budget.reservedBytes()).isZero();
    }

    @Test
    void shouldRefuseTheNamespaceThatTakesTheSumOverTheBudgetAndTakeItBackOnRelease() throws Exception {
        RamBudget budget = new RamBudget(100 * MIB, "test");
        budget.reserve(40 * MIB, "a");
        budget.reserve(40 * MIB, "b");
        assertThatThrownBy(() -> budget.reserve(21 * MIB, "c"))
            .isInstanceOfSatisfying(NamespaceRefusedException.class,
                e -> assertThat(e.reason()).isEqualTo(NamespaceRefusedException.Reason.BUDGET_EXHAUSTED))
            .hasMessageContaining("c: 21 MiB of RAM does not fit").hasMessageContaining("80 MiB")
            .hasMessageContaining("20 MiB are left");
        assertThat(budget.reservedBytes()).isEqualTo(80 * MIB);
        budget.reserve(20 * MIB, "d");
        assertThat(budget.reservedBytes()).isEqualTo(100 * MIB);
        budget.release(40 * MIB);
        budget.reserve(21 * MIB, "c");
        assertThat(budget.reservedBytes()).isEqualTo(81 * MIB);
        assertThatThrownBy(() -> budget.release(82 * MIB)).isInstanceOf(IllegalArgumentException.class);
    }
}
