package io.nvmeof4j.initiator;

import io.nvmeof4j.protocol.spi.host.HostPollGroup;
import io.nvmeof4j.protocol.spi.transport.RoundClock;
import org.junit.jupiter.api.Test;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;

import static org.assertj.core.api.Assertions.assertThat;

/** The host reactor's loop with the shared adaptive idle strategy, over a poll group that only records. */
class HostReactorTest {
    private static final long MS = TimeUnit.MILLISECONDS.toNanos(1);

    @Test
    void shouldBackOffToTheTimerPeriodAndUseLittleCpuWhenIdle() throws Exception {
        RecordingGroup group = new RecordingGroup();
        HostReactor reactor = new HostReactor("host-reactor-idle", group, 0);
        try {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (!group.timeouts.contains(HostReactor.TIMER_PERIOD_NANOS) && System.nanoTime() - deadline < 0) {
                Thread.sleep(5);
            }
            assertThat(group.timeouts).as("blocks of 1, 2, 4, 8 ms, then the 10 ms timer period")
                .startsWith(MS, 2 * MS, 4 * MS, 8 * MS, 10 * MS);
            assertThat(group.timeouts).allMatch(t -> t <= HostReactor.TIMER_PERIOD_NANOS);

            ThreadMXBean threads = ManagementFactory.getThreadMXBean();
            long id = reactor.thread().getId();
            long cpuBefore = threads.getThreadCpuTime(id);
            Thread.sleep(500);
            long cpu = threads.getThreadCpuTime(id) - cpuBefore;
            assertThat(cpu).as("CPU time of an idle host reactor over 500 ms").isLessThan(50 * MS);
        } finally {
            reactor.close();
        }
        assertThat(group.closed.get()).as("the reactor closes its poll group").isTrue();
        assertThat(reactor.thread().isAlive()).isFalse();
    }

    @Test
    void shouldRunATaskHandedOverWhileBlocked() throws Exception {
        RecordingGroup group = new RecordingGroup();
        HostReactor reactor = new HostReactor("host-reactor-task", group, 0);
        try {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (group.timeouts.size() < 3 && System.nanoTime() - deadline < 0) {
                Thread.sleep(1);
            }
            CountDownLatch ran = new CountDownLatch(1);
            List<Thread> on = new CopyOnWriteArrayList<>();
            reactor.execute(() -> {
                on.add(Thread.currentThread());
                ran.countDown();
            });
            assertThat(ran.await(5, TimeUnit.SECONDS)).isTrue();
            assertThat(on).containsExactly(reactor.thread());
        } finally {
            reactor.close();
        }
    }

    /** {@code nvmeof4j.host.idle_strategy=busy}: the reactor polls without ever blocking, and still runs tasks. */
    @Test
    void shouldNeverBlockWhenAskedToBusyPoll() throws Exception {
        RecordingGroup group = new RecordingGroup();
        HostReactor reactor;
        System.setProperty(NvmeofHost.IDLE_PROP_NAME, "busy");
        try {
            reactor = new HostReactor("host-reactor-busy", group, 0);
        } finally {
            System.clearProperty(NvmeofHost.IDLE_PROP_NAME);
        }
        try {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (group.polls.get() < 10_000 && System.nanoTime() - deadline < 0) {
                Thread.sleep(5);
            }
            CountDownLatch ran = new CountDownLatch(1);
            reactor.execute(ran::countDown);
            assertThat(ran.await(5, TimeUnit.SECONDS)).isTrue();
            assertThat(group.polls.get()).as("polls").isGreaterThanOrEqualTo(10_000);
            assertThat(group.timeouts).as("blocks of a busy-polling reactor").isEmpty();
        } finally {
            reactor.close();
        }
    }

    @Test
    void shouldRefuseAnUnknownIdleStrategyNamingTheProperty() {
        System.setProperty(NvmeofHost.IDLE_PROP_NAME, "sometimes");
        try {
            org.assertj.core.api.Assertions.assertThatThrownBy(
                    () -> new HostReactor("host-reactor-bad", new RecordingGroup(), 0))
                .isInstanceOf(IllegalArgumentException.class).hasMessage("nvmeof4j.host.idle_strategy: unknown idle "
                    + "strategy 'sometimes' (expected busy or adaptive)");
        } finally {
            System.clearProperty(NvmeofHost.IDLE_PROP_NAME);
        }
    }

    @Test
    void shouldReadTheClockAtMostOncePerRoundHoweverManyCompletionsItStamps() throws Exception {
        AtomicLong reads = new AtomicLong();
        RecordingGroup group = new RecordingGroup(() -> reads.incrementAndGet() * 1_000);
        group.stampsPerPoll = 32; // as if each poll handled 32 completions, each reading the time for its meters
        HostReactor reactor = new HostReactor("host-reactor-clock", group, 0);
        try {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (group.polls.get() < 200 && System.nanoTime() - deadline < 0) {
                Thread.sleep(1);
            }
        } finally {
            reactor.close();
        }
        long rounds = group.polls.get();
        assertThat(rounds).isGreaterThanOrEqualTo(200);
        // One read per round (the completions' and the timer's shared), one per wait, one when the clock was made;
        // a round or wait in progress when counted adds one.
        assertThat(reads.get()).as("clock reads for %d rounds of 32 stamps each", rounds)
            .isLessThanOrEqualTo(rounds + group.timeouts.size() + 2);
        assertThat(group.stamps.get()).isGreaterThanOrEqualTo(32 * rounds);
    }

    /** A poll group with no sockets: tasks run in poll(), await waits for a wakeup or the timeout. */
    private static final class RecordingGroup implements HostPollGroup {
        final List<Long> timeouts = new CopyOnWriteArrayList<>();
        final AtomicBoolean closed = new AtomicBoolean();
        private final ConcurrentLinkedQueue<Runnable> tasks = new ConcurrentLinkedQueue<>();
        private final Semaphore wake = new Semaphore(0);
        private volatile Thread thread;
        private final RoundClock clock;
        final AtomicLong polls = new AtomicLong();
        final AtomicLong stamps = new AtomicLong();
        volatile int stampsPerPoll;

        RecordingGroup() {
            this(System::nanoTime);
        }

        RecordingGroup(LongSupplier source) {
            clock = new RoundClock(source);
        }

        @Override
        public int poll() {
            thread = Thread.currentThread();
            clock.beginRound();
            for (int i = stampsPerPoll; i > 0; i--) {
                clock.now();
                stamps.incrementAndGet();
            }
            polls.incrementAndGet();
            int n = 0;
            Runnable task;
            while ((task = tasks.poll()) != null) {
                task.run();
                n++;
            }
            return n;
        }

        @Override
        public void await(long timeoutNanos) {
            timeouts.add(timeoutNanos);
            if (!tasks.isEmpty()) {
                return;
            }
            try {
                wake.tryAcquire(timeoutNanos, TimeUnit.NANOSECONDS);
                wake.drainPermits();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }

        @Override
        public void wakeup() {
            wake.release();
        }

        @Override
        public void execute(Runnable task) {
            tasks.add(task);
            wake.release();
        }

        @Override
        public RoundClock clock() {
            return clock;
        }

        @Override
        public boolean inPollGroupThread() {
            return Thread.currentThread() == thread;
        }

        @Override
        public void close() {
            closed.set(true);
        }
    }
}
