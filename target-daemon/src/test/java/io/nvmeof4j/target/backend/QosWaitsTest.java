package io.nvmeof4j.target.backend;

import io.nvmeof4j.protocol.command.NvmeStatus;
import io.nvmeof4j.protocol.spi.idle.IdleMode;
import io.nvmeof4j.target.reactor.Reactor;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * I/O over a namespace's QoS limit on a running reactor: it waits, in order, and completes; removing the limit lets
 * the waiting I/O go at once; a stopping reactor answers what still waits. A RAM device, a real reactor thread.
 */
class QosWaitsTest {
    private Reactor reactor;
    private QosWaits waits;
    private RamBlockDevice device;
    private final QosBudget budget = new QosBudget();

    @BeforeEach
    void start() {
        reactor = new Reactor("qos-reactor", IdleMode.ADAPTIVE, TimeUnit.MICROSECONDS.toNanos(50));
        reactor.add(new DataPathPressureTest.ParkingGroup());
        waits = new QosWaits("qos-reactor QoS");
        reactor.add(waits);
        reactor.start();
        device = new RamBlockDevice("qos", 1 << 20, 512);
    }

    @AfterEach
    void stop() {
        reactor.stop(Duration.ofSeconds(5));
        device.close();
    }

    /** An I/O that records where in the completion order it finished, and its status. */
    private static final class OrderedIo extends BlockIo {
        final AtomicInteger sequence;
        final CountDownLatch done;
        volatile int position = -1;
        volatile int status = -1;

        OrderedIo(int index, AtomicInteger sequence, CountDownLatch done) {
            this.sequence = sequence;
            this.done = done;
            prepare(Op.READ, (index % 2048) * 512L, 512, ByteBuffer.allocateDirect(512), false);
        }

        @Override
        public void complete(int nvmeStatus) {
            status = nvmeStatus;
            position = sequence.getAndIncrement();
            done.countDown();
        }
    }

    private OrderedIo[] submitOnReactor(int count, CountDownLatch done) {
        AtomicInteger sequence = new AtomicInteger();
        OrderedIo[] ios = new OrderedIo[count];
        for (int i = 0; i < count; i++) {
            ios[i] = new OrderedIo(i, sequence, done);
        }
        reactor.execute(() -> {
            for (OrderedIo io : ios) {
                budget.submit(io, device);
            }
        });
        return ios;
    }

    @Test
    void shouldHoldIosOverTheLimitAndCompleteEveryOneInOrder() throws Exception {
        budget.limits(new QosLimits(2000, 0, 0, 0)); // 2 a millisecond
        int count = 300;
        CountDownLatch done = new CountDownLatch(count);
        long begin = System.nanoTime();
        OrderedIo[] ios = submitOnReactor(count, done);
        assertThat(done.await(10, TimeUnit.SECONDS)).isTrue();
        long elapsedMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - begin);
        // At most CATCH_UP_SLICES timeslices' budget (20 I/Os) can be there when the task runs; the rest go at 2 a
        // millisecond: at least 140 ms (never faster than the limit).
        assertThat(elapsedMillis).isGreaterThanOrEqualTo(140);
        for (int i = 0; i < count; i++) {
            assertThat(ios[i].status).isEqualTo(NvmeStatus.SUCCESS);
            assertThat(ios[i].position).isEqualTo(i);
        }
        // All but what the budget held when the task ran waited.
        long burst = 2L * QosBudget.CATCH_UP_SLICES;
        assertThat(waits.waits()).isBetween(count - burst - 2, (long) count - 2);
        assertThat(budget.waits()).isEqualTo(waits.waits());
    }

    @Test
    void shouldAbortTheSelectedWaitingIosAndKeepTheOthersInOrder() throws Exception {
        budget.limits(new QosLimits(1000, 0, 0, 0)); // 1 a millisecond: 600 I/Os wait for most of a second
        int count = 600;
        CountDownLatch done = new CountDownLatch(count);
        OrderedIo[] ios = submitOnReactor(count, done);
        java.util.concurrent.CompletableFuture<Integer> aborted = new java.util.concurrent.CompletableFuture<>();
        // Preempt and Abort's selection: here every odd one, as if it came from the preempted host.
        reactor.execute(() -> aborted.complete(waits.abortWaiting(
            io -> io instanceof OrderedIo o && indexOf(ios, o) % 2 == 1, NvmeStatus.ABORTED_PREEMPT_AND_ABORT)));
        int n = aborted.get(5, TimeUnit.SECONDS);
        assertThat(n).as("odd I/Os still waiting when the abort ran").isGreaterThan(200);
        assertThat(done.await(10, TimeUnit.SECONDS)).isTrue();
        int abortedSeen = 0;
        int lastKept = -1;
        for (int i = 0; i < count; i++) {
            if (ios[i].status == NvmeStatus.ABORTED_PREEMPT_AND_ABORT) {
                assertThat(i % 2).as("only selected I/Os are aborted").isEqualTo(1);
                abortedSeen++;
            } else {
                assertThat(ios[i].status).isEqualTo(NvmeStatus.SUCCESS);
                if (i % 2 == 0) {
                    assertThat(ios[i].position).as("kept I/Os stay in order").isGreaterThan(lastKept);
                    lastKept = ios[i].position;
                }
            }
        }
        assertThat(abortedSeen).isEqualTo(n);
        CountDownLatch idle = new CountDownLatch(1);
        java.util.concurrent.atomic.AtomicInteger left = new java.util.concurrent.atomic.AtomicInteger(-1);
        reactor.execute(() -> {
            left.set(waits.waiting());
            idle.countDown();
        });
        assertThat(idle.await(5, TimeUnit.SECONDS)).isTrue();
        assertThat(left.get()).as("nothing left counted as waiting").isZero();
    }

    private static int indexOf(OrderedIo[] ios, OrderedIo io) {
        for (int i = 0; i < ios.length; i++) {
            if (ios[i] == io) {
                return i;
            }
        }
        return -1;
    }

    @Test
    void shouldLetWaitingIosGoWhenTheLimitIsRemoved() throws Exception {
        budget.limits(new QosLimits(1000, 0, 0, 0));
        int count = 3000; // three seconds at the limit
        CountDownLatch done = new CountDownLatch(count);
        submitOnReactor(count, done);
        Thread.sleep(50);
        assertThat(done.getCount()).isGreaterThan(count - 200);
        long removed = System.nanoTime();
        budget.limits(QosLimits.NONE);
        assertThat(done.await(2, TimeUnit.SECONDS)).isTrue();
        assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - removed)).isLessThan(1000);
    }

    @Test
    void shouldAnswerWhatStillWaitsWhenTheReactorStops() throws Exception {
        budget.limits(new QosLimits(1000, 0, 0, 0));
        int count = 1000;
        CountDownLatch done = new CountDownLatch(count);
        OrderedIo[] ios = submitOnReactor(count, done);
        Thread.sleep(30);
        reactor.stop(Duration.ofSeconds(5));
        assertThat(done.await(5, TimeUnit.SECONDS)).isTrue();
        int ok = 0;
        int notReady = 0;
        for (OrderedIo io : ios) {
            if (io.status == NvmeStatus.SUCCESS) {
                ok++;
            } else if (io.status == NvmeStatus.NAMESPACE_NOT_READY) {
                notReady++;
            }
        }
        assertThat(ok + notReady).isEqualTo(count);
        assertThat(ok).isBetween(1, 500);
    }
}
