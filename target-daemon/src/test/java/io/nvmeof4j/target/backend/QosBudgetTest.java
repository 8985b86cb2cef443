package io.nvmeof4j.target.backend;

import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.util.concurrent.atomic.AtomicLong;

import static io.nvmeof4j.target.backend.BlockIo.Op.DEALLOCATE;
import static io.nvmeof4j.target.backend.BlockIo.Op.FLUSH;
import static io.nvmeof4j.target.backend.BlockIo.Op.READ;
import static io.nvmeof4j.target.backend.BlockIo.Op.WRITE;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The QoS budget with a clock the test steps: SPDK's timeslice arithmetic, exactly. */
class QosBudgetTest {
    private static final long SLICE = QosBudget.TIMESLICE_NANOS;
    private final AtomicLong now = new AtomicLong(1_000_000_000L);
    private final QosBudget budget = new QosBudget(now::get);

    private static final class Io extends BlockIo {
        Io(Op op, int length) {
            prepare(op, 0, length, op == READ || op == WRITE ? ByteBuffer.allocate(length) : null, false);
        }

        @Override
        public void complete(int nvmeStatus) {
        }
    }

    /** How many of {@code io} the budget lets go now. */
    private int admitted(BlockIo io, int tries) {
        int n = 0;
        for (int i = 0; i < tries; i++) {
            if (budget.tryTake(io)) {
                n++;
            }
        }
        return n;
    }

    @Test
    void shouldLetOneTimeslicesIosGoAndHoldTheRestUntilTheNextSlice() {
        budget.limits(new QosLimits(5000, 0, 0, 0)); // 5 per 1 ms timeslice
        Io read = new Io(READ, 4096);
        assertThat(admitted(read, 20)).isEqualTo(5);
        now.addAndGet(SLICE - 1);
        assertThat(admitted(read, 20)).isZero();
        now.addAndGet(1);
        assertThat(admitted(read, 20)).isEqualTo(5);
        // One second, stepped slice by slice as a polling reactor sees it: exactly the limit.
        int total = 0;
        for (int slice = 0; slice < 1000; slice++) {
            now.addAndGet(SLICE);
            total += admitted(read, 50);
        }
        assertThat(total).isEqualTo(5000);
    }

    @Test
    void shouldLetALargeIoOverrunOnceAndPayItOffInLaterSlices() {
        budget.limits(new QosLimits(0, 0, 1, 0)); // 1 MiB/s of reads: 1048 bytes a slice
        Io big = new Io(READ, 128 * 1024);
        assertThat(budget.tryTake(big)).isTrue(); // the budget was positive: it goes, 130,024 bytes in debt
        int slices = 0;
        while (!budget.tryTake(big)) {
            now.addAndGet(SLICE);
            slices++;
            assertThat(slices).isLessThan(1000);
        }
        // 1048 bytes a slice pay off 130,024 bytes of debt after 125 slices: 128 KiB per ~125 ms, 1 MiB/s.
        assertThat(slices).isEqualTo(125);
        // Time passing in one step pays the debt too (a reactor that slept through it).
        now.addAndGet(200 * SLICE);
        assertThat(budget.tryTake(big)).isTrue();
    }

    @Test
    void shouldNotSaveUpABurstWhileIdle() {
        budget.limits(new QosLimits(1000, 0, 0, 0)); // 1 per slice
        now.addAndGet(5_000 * SLICE); // five idle seconds
        Io read = new Io(READ, 512);
        assertThat(admitted(read, 100)).isEqualTo(QosBudget.CATCH_UP_SLICES);
    }

    @Test
    void shouldCreditEveryTimesliceALateReactorMissedWhileIoWaits() {
        budget.limits(new QosLimits(1000, 0, 0, 0)); // 1 per slice
        Io read = new Io(READ, 512);
        assertThat(admitted(read, 10)).isEqualTo(1);
        budget.countWait(); // an I/O waits; its reactor is descheduled for 50 ms
        now.addAndGet(50 * SLICE);
        assertThat(admitted(read, 100)).isEqualTo(50);
        budget.waitEnded();
        // A stall of more than a second is credited one second at most.
        budget.countWait();
        now.addAndGet(5_000 * SLICE);
        assertThat(admitted(read, 5_000)).isEqualTo(QosBudget.CATCH_UP_SLICES_WAITING);
        budget.waitEnded();
    }

    @Test
    void shouldGiveBackWhatItTookWhenALaterLimitRefuses() {
        budget.limits(new QosLimits(100_000, 0, 0, 1)); // 100 I/Os and 1048 written bytes a slice
        Io write = new Io(WRITE, 4096);
        Io read = new Io(READ, 4096);
        assertThat(budget.tryTake(write)).isTrue(); // 99 I/Os left, written bytes in debt
        assertThat(budget.tryTake(write)).isFalse(); // refused by the write limit: its I/O is given back
        assertThat(admitted(read, 200)).isEqualTo(99); // reads are not held by the write limit
    }

    @Test
    void shouldLimitReadAndWriteOnly() {
        budget.limits(new QosLimits(1000, 1, 0, 0));
        assertThat(admitted(new Io(FLUSH, 0), 50)).isEqualTo(50);
        assertThat(admitted(new Io(DEALLOCATE, 0), 50)).isEqualTo(50);
        assertThat(admitted(new Io(WRITE, 512), 50)).isEqualTo(1);
    }

    @Test
    void shouldApplyNewLimitsAndTheirRemovalAtOnce() {
        budget.limits(new QosLimits(1000, 0, 0, 0));
        Io read = new Io(READ, 4096);
        assertThat(admitted(read, 10)).isEqualTo(1);
        budget.limits(new QosLimits(10_000, 0, 0, 0)); // a new limit starts with a full timeslice
        assertThat(admitted(read, 100)).isEqualTo(10);
        assertThat(budget.enabled()).isTrue();
        budget.limits(QosLimits.NONE);
        assertThat(budget.enabled()).isFalse();
        assertThat(admitted(read, 100)).isEqualTo(100);
        assertThat(budget.limits()).isEqualTo(QosLimits.NONE);
    }

    @Test
    void shouldNotAllocateWhileIosWaitAndGo() {
        java.lang.management.ThreadMXBean bean = java.lang.management.ManagementFactory.getThreadMXBean();
        org.junit.jupiter.api.Assumptions.assumeTrue(bean instanceof com.sun.management.ThreadMXBean);
        com.sun.management.ThreadMXBean threads = (com.sun.management.ThreadMXBean) bean;
        org.junit.jupiter.api.Assumptions.assumeTrue(threads.isThreadAllocatedMemorySupported());
        threads.setThreadAllocatedMemoryEnabled(true);
        budget.limits(new QosLimits(4000, 0, 0, 0)); // 4 a timeslice
        QosWaits waits = new QosWaits("allocation");
        int[] completed = new int[1];
        BlockIo[] ios = new BlockIo[64];
        for (int i = 0; i < ios.length; i++) {
            ByteBuffer buffer = ByteBuffer.allocateDirect(512);
            ios[i] = new BlockIo() {
                @Override
                public void complete(int nvmeStatus) {
                    completed[0] += nvmeStatus == 0 ? 1 : 1_000_000;
                }
            }.prepare(READ, i * 512L, 512, buffer, false);
        }
        try (RamBlockDevice device = new RamBlockDevice("allocation", 1 << 20, 512)) {
            Runnable round = () -> {
                for (BlockIo io : ios) {
                    waits.submit(budget, io, device);
                }
                while (waits.waiting() > 0) {
                    now.addAndGet(SLICE);
                    waits.poll();
                }
            };
            for (int i = 0; i < 200; i++) {
                round.run();
            }
            long before = threads.getThreadAllocatedBytes(Thread.currentThread().getId());
            for (int i = 0; i < 1000; i++) {
                round.run();
            }
            long allocated = threads.getThreadAllocatedBytes(Thread.currentThread().getId()) - before;
            assertThat(completed[0]).isEqualTo(1200 * ios.length);
            // At most a timeslice's 4 go at once each round (fewer when the last round left the slice spent).
            assertThat(waits.waits()).isBetween(1200L * (ios.length - 4), 1200L * ios.length);
            // 60,000 waits; allocating per wait would be megabytes.
            assertThat(allocated).as("bytes allocated for 64,000 I/Os, 60,000 of them waiting").isLessThan(4096);
        }
    }

    @Test
    void shouldRoundAndBoundLimitsAsSpdkDoes() {
        assertThat(QosLimits.of(1500, 0, 0, 0).rwIosPerSec()).isEqualTo(2000);
        assertThat(QosLimits.of(1, 0, 0, 0).rwIosPerSec()).isEqualTo(1000);
        assertThat(QosLimits.of(Long.MAX_VALUE, 0, 0, 0).rwIosPerSec()).isEqualTo(QosLimits.MAX_IOS_PER_SEC);
        assertThat(QosLimits.of(0, Long.MAX_VALUE, 0, 0).rwMbytesPerSec()).isEqualTo(QosLimits.MAX_MBYTES_PER_SEC);
        assertThat(QosLimits.of(0, 0, 0, 0).none()).isTrue();
        assertThatThrownBy(() -> QosLimits.of(-1, 0, 0, 0)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new QosLimits(1500, 0, 0, 0)).hasMessageContaining("multiple of 1000");
        // The largest limits still work out per timeslice without overflowing.
        budget.limits(QosLimits.of(Long.MAX_VALUE, Long.MAX_VALUE, Long.MAX_VALUE, Long.MAX_VALUE));
        now.addAndGet(1_000_000 * SLICE);
        assertThat(admitted(new Io(WRITE, 1 << 20), 1000)).isEqualTo(1000);
    }
}
