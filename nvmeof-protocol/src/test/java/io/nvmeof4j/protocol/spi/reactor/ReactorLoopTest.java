package io.nvmeof4j.protocol.spi.reactor;

import io.nvmeof4j.protocol.spi.idle.AdaptiveIdleStrategy;
import org.junit.jupiter.api.Test;

import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;

/** The shared reactor loop over an agent that blocks on a semaphore: hand-over, wake-up, stop, failure. */
class ReactorLoopTest {
    private static final long SECOND = TimeUnit.SECONDS.toNanos(1);

    /** Tasks handed over through a queue; blocks up to the timeout unless woken. */
    private static final class QueueAgent implements ReactorLoop.Agent {
        final ConcurrentLinkedQueue<Runnable> tasks = new ConcurrentLinkedQueue<>();
        final Semaphore wake = new Semaphore(0);
        final AtomicInteger awaits = new AtomicInteger();
        final AtomicInteger wakeups = new AtomicInteger();
        final CountDownLatch stopped = new CountDownLatch(1);
        final AtomicReference<Thread> stoppedOn = new AtomicReference<>();
        volatile RuntimeException failNextRound;

        @Override
        public int doWork() {
            RuntimeException failure = failNextRound;
            if (failure != null) {
                throw failure;
            }
            int n = 0;
            Runnable task;
            while ((task = tasks.poll()) != null) {
                task.run();
                n++;
            }
            return n;
        }

        @Override
        public boolean hasPendingWork() {
            return !tasks.isEmpty();
        }

        @Override
        public void await(long timeoutNanos) {
            awaits.incrementAndGet();
            try {
                wake.tryAcquire(timeoutNanos, TimeUnit.NANOSECONDS);
                wake.drainPermits();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }

        @Override
        public void wakeup() {
            wakeups.incrementAndGet();
            wake.release();
        }

        @Override
        public void onStop() {
            stoppedOn.set(Thread.currentThread());
            stopped.countDown();
        }
    }

    private static ReactorLoop loop(QueueAgent agent, long maxParkNanos) {
        return new ReactorLoop("loop-test", agent,
            wait -> AdaptiveIdleStrategy.forCurrentThread("loop-test", wait, 0, maxParkNanos),
            body -> new Thread(body, "loop-test"));
    }

    @Test
    void shouldRunHandedOverWorkOnItsThreadPromptlyWhileBlockedForLong() throws Exception {
        QueueAgent agent = new QueueAgent();
        ReactorLoop loop = loop(agent, TimeUnit.SECONDS.toNanos(10)); // blocks of up to 10 s: only a wake-up helps
        loop.start();
        try {
            long deadline = System.nanoTime() + 10 * SECOND;
            while (agent.awaits.get() < 11 && System.nanoTime() - deadline < 0) { // 1, 2, ... 1024 ms: next 2 s
                Thread.sleep(10);
            }
            AtomicReference<Thread> ranOn = new AtomicReference<>();
            CountDownLatch ran = new CountDownLatch(1);
            long handed = System.nanoTime();
            agent.tasks.add(() -> {
                ranOn.set(Thread.currentThread());
                ran.countDown();
            });
            loop.wake();
            assertThat(ran.await(5, TimeUnit.SECONDS)).isTrue();
            assertThat(System.nanoTime() - handed).as("ns from hand-over to run").isLessThan(SECOND / 2);
            assertThat(ranOn.get()).isSameAs(loop.thread());
            assertThat(agent.wakeups.get()).as("woken once, since it was sleeping").isEqualTo(1);
        } finally {
            assertThat(loop.stop(5 * SECOND)).isTrue();
        }
        assertThat(agent.stopped.getCount()).isZero();
        assertThat(agent.stoppedOn.get()).as("onStop on the loop's thread").isSameAs(loop.thread());
        assertThat(loop.running()).isFalse();
    }

    @Test
    void shouldNotWakeABusyLoop() throws Exception {
        QueueAgent agent = new QueueAgent();
        ReactorLoop loop = new ReactorLoop("busy-loop-test", agent, wait -> new io.nvmeof4j.protocol.spi.idle
            .BusySpinIdleStrategy(), body -> new Thread(body, "busy-loop-test"));
        loop.start();
        try {
            for (int i = 0; i < 100; i++) {
                CountDownLatch ran = new CountDownLatch(1);
                agent.tasks.add(ran::countDown);
                loop.wake();
                assertThat(ran.await(5, TimeUnit.SECONDS)).isTrue();
            }
            assertThat(agent.awaits.get()).as("a busy-spinning loop never blocks").isZero();
            assertThat(agent.wakeups.get()).as("nor is it woken").isZero();
        } finally {
            assertThat(loop.stop(5 * SECOND)).isTrue();
        }
    }

    @Test
    void shouldReportTheAdaptiveStrategysSpinAndNoneForABusyOne() throws Exception {
        QueueAgent agent = new QueueAgent();
        long spin = TimeUnit.MICROSECONDS.toNanos(50);
        ReactorLoop adaptive = new ReactorLoop("adaptive-loop-test", agent,
            wait -> AdaptiveIdleStrategy.forCurrentThread("adaptive-loop-test", wait, spin, SECOND / 100),
            body -> new Thread(body, "adaptive-loop-test"));
        assertThat(adaptive.idleSpinNanos()).as("before the strategy exists").isZero();
        adaptive.start();
        try {
            long deadline = System.nanoTime() + 10 * SECOND;
            while (agent.awaits.get() == 0 && System.nanoTime() - deadline < 0) {
                Thread.sleep(1);
            }
            // Idle since it started (no gaps between commands to learn from): the configured spin.
            assertThat(adaptive.idleSpinNanos()).isEqualTo(spin);
        } finally {
            assertThat(adaptive.stop(5 * SECOND)).isTrue();
        }
        QueueAgent busyAgent = new QueueAgent();
        ReactorLoop busy = new ReactorLoop("busy-loop-test", busyAgent, wait -> new io.nvmeof4j.protocol.spi
            .idle.BusySpinIdleStrategy(), body -> new Thread(body, "busy-loop-test"));
        busy.start();
        try {
            // A round has run, so the loop's strategy exists (before it, any strategy reads as none).
            CountDownLatch ran = new CountDownLatch(1);
            busyAgent.tasks.add(ran::countDown);
            assertThat(ran.await(5, TimeUnit.SECONDS)).isTrue();
            assertThat(busy.idleSpinNanos()).isZero();
            assertThat(busy.cpuShared()).isFalse();
        } finally {
            assertThat(busy.stop(5 * SECOND)).isTrue();
        }
    }

    @Test
    void shouldEndAndCloseWhatItOwnsWhenARoundFailsUnexpectedly() throws Exception {
        QueueAgent agent = new QueueAgent();
        ReactorLoop loop = loop(agent, TimeUnit.MILLISECONDS.toNanos(10));
        loop.start();
        agent.failNextRound = new IllegalStateException("test: a round failed");
        assertThat(agent.stopped.await(5, TimeUnit.SECONDS)).as("onStop ran").isTrue();
        loop.thread().join(5_000);
        assertThat(loop.thread().isAlive()).isFalse();
        assertThat(loop.running()).isFalse();
        assertThat(loop.stop(SECOND)).isTrue();
    }
}
