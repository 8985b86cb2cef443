package io.nvmeof4j.target.reactor;

import io.nvmeof4j.protocol.spi.PollGroup;
import io.nvmeof4j.protocol.spi.idle.IdleMode;
import io.nvmeof4j.protocol.spi.reactor.SelectorPollGroup;
import io.nvmeof4j.protocol.spi.reactor.WakesSelector;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.channels.Selector;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class ReactorTest {
    private static final Duration STOP = Duration.ofSeconds(5);

    private final List<Reactor> reactors = new ArrayList<>();
    private final List<String> closeLog = new CopyOnWriteArrayList<>();

    @AfterEach
    void stopReactors() {
        for (Reactor r : reactors) {
            r.stop(STOP);
        }
    }

    private Reactor reactor(String name, IdleMode idle) {
        Reactor r = new Reactor(name, idle, TimeUnit.MICROSECONDS.toNanos(50));
        reactors.add(r);
        return r;
    }

    private static void await(String what, BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() - deadline > 0) {
                throw new AssertionError("timed out after 10 s waiting for: " + what);
            }
            Thread.sleep(1);
        }
    }

    @Test
    void shouldPollEveryGroupOnTheReactorThread() throws Exception {
        FakeGroup a = new FakeGroup("a");
        FakeGroup b = new FakeGroup("b");
        Reactor reactor = reactor("reactor-poll", IdleMode.BUSY).add(a).add(b);
        reactor.start();
        await("both groups polled", () -> a.polls.get() > 100 && b.polls.get() > 100);
        assertThat(a.pollThread.get().getName()).isEqualTo("reactor-poll");
        assertThat(b.pollThread.get()).isSameAs(a.pollThread.get());
        assertThat(reactor.pollGroups()).containsExactly(a, b);
        assertThat(reactor.isRunning()).isTrue();
    }

    /**
     * A socket group that sends in its poll what is pending, and a device group whose poll completes an I/O and
     * hands the socket group its response: the response leaves in the same round (endRound), not the next.
     */
    @Test
    void shouldSendAResponseCompletedByALaterGroupInTheSameRound() {
        List<String> log = new ArrayList<>();
        int[] pending = new int[1];
        int[] sent = new int[1];
        int[] completions = {1};
        PollGroup socket = new FakeGroup("socket") {
            @Override
            public int poll() {
                log.add("socket.poll");
                return send();
            }

            @Override
            public int endRound() {
                log.add("socket.endRound");
                return send();
            }

            private int send() {
                int n = pending[0];
                sent[0] += n;
                pending[0] = 0;
                return n;
            }
        };
        PollGroup device = new FakeGroup("device") {
            @Override
            public int poll() {
                log.add("device.poll");
                int n = completions[0];
                completions[0] = 0;
                pending[0] += n;
                return n;
            }
        };
        Reactor reactor = reactor("reactor-end-round", IdleMode.BUSY).add(socket).add(device);

        assertThat(reactor.doWork()).as("work in the round: a completion and its send").isEqualTo(2);
        assertThat(sent[0]).as("responses sent by the end of the round that completed them").isEqualTo(1);
        assertThat(log).containsExactly("socket.poll", "device.poll", "socket.endRound");

        log.clear();
        assertThat(reactor.doWork()).as("an empty round").isZero();
        assertThat(log).as("no round end without work: an idle spin round stays one poll per group")
            .containsExactly("socket.poll", "device.poll");
    }

    @Test
    void shouldNeverBlockWithTheBusyStrategy() throws Exception {
        FakeGroup group = new FakeGroup("busy");
        Reactor reactor = reactor("reactor-busy", IdleMode.BUSY).add(group);
        reactor.start();
        await("many idle rounds", () -> group.polls.get() > 10_000);
        assertThat(group.awaits.get()).isZero();
    }

    @Test
    void shouldCountTheTimeItsThreadWaitedForACpu() throws Exception {
        Reactor reactor = reactor("reactor-run-delay", IdleMode.BUSY).add(new FakeGroup("g"));
        assertThat(reactor.runDelayNanos()).as("not started").isEqualTo(-1);
        reactor.start();
        await("the thread's schedstat file", () -> reactor.runDelayNanos() >= 0);
        long before = reactor.runDelayNanos();
        // More busy threads than CPUs for a while: the busy reactor has to wait for a CPU now and then.
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        List<Thread> hogs = new ArrayList<>();
        for (int i = 0; i <= Runtime.getRuntime().availableProcessors(); i++) {
            Thread t = new Thread(() -> {
                while (System.nanoTime() - until < 0 && reactor.runDelayNanos() <= before) {
                    Thread.onSpinWait();
                }
            }, "run-delay-hog-" + i);
            t.start();
            hogs.add(t);
        }
        for (Thread t : hogs) {
            t.join(10_000);
        }
        assertThat(reactor.runDelayNanos()).as("run delay after competing for the CPUs").isGreaterThan(before);
        reactor.stop(STOP);
        assertThat(reactor.runDelayNanos()).as("the last value, once the thread has ended")
            .isGreaterThan(before);
    }

    @Test
    void shouldBlockInTheFirstGroupWhenIdleAndWakeOnExecute() throws Exception {
        FakeGroup first = new FakeGroup("first");
        FakeGroup second = new FakeGroup("second");
        Reactor reactor = reactor("reactor-idle", IdleMode.ADAPTIVE).add(first).add(second);
        reactor.start();
        await("the reactor blocks in the first group", () -> first.inAwait.get());
        assertThat(second.awaits.get()).as("only the first group is waited on").isZero();
        long timeout = first.lastAwaitTimeoutNanos.get();
        assertThat(timeout).as("bounded wait with several groups").isEqualTo(TimeUnit.MILLISECONDS.toNanos(1));

        CountDownLatch ran = new CountDownLatch(1);
        AtomicReference<Thread> taskThread = new AtomicReference<>();
        first.waitForever(); // from now on only a wakeup() ends an await
        await("blocked for good", () -> first.inAwait.get() && first.waitingForever.get());
        reactor.execute(() -> {
            taskThread.set(Thread.currentThread());
            ran.countDown();
        });
        assertThat(ran.await(10, TimeUnit.SECONDS)).as("task ran after wakeup").isTrue();
        assertThat(first.wakeups.get()).isGreaterThanOrEqualTo(1);
        assertThat(first.awaitsEndedByWakeup.get()).isGreaterThanOrEqualTo(1);
        assertThat(taskThread.get().getName()).isEqualTo("reactor-idle");
    }

    @Test
    void shouldBackOffToTheLongerWaitWithOneGroupAndWakeWhenTheGroupHasWork() throws Exception {
        FakeGroup group = new FakeGroup("only");
        Reactor reactor = reactor("reactor-one", IdleMode.ADAPTIVE).add(group);
        reactor.start();
        await("blocked", () -> group.inAwait.get());
        // Each block that ends without work doubles the next bound: 1, 2, 4 … 64, then 100 ms.
        await("backed off to 100 ms", () -> group.lastAwaitTimeoutNanos.get() == TimeUnit.MILLISECONDS.toNanos(100));
        assertThat(group.awaits.get()).as("1+2+…+64 ms first, one await each").isGreaterThanOrEqualTo(8);

        group.waitForever();
        await("blocked for good", () -> group.inAwait.get() && group.waitingForever.get());
        long pollsBefore = group.polls.get();
        Thread.sleep(50);
        assertThat(group.polls.get()).as("an idle reactor does not poll").isEqualTo(pollsBefore);

        // What a transport does when a socket becomes readable: work arrives, and the selector wakes up.
        group.pendingWork.set(3);
        group.wakeup();
        await("the work was polled", () -> group.workDone.get() == 3);
    }

    @Test
    void shouldBlockTheLongerWaitOnTheSelectorWhenTheOtherGroupsAreInFlightAwareAndIdle() throws Exception {
        FakeGroup selector = new FakeGroup("selector");
        IdleRing ring = new IdleRing();
        Reactor reactor = reactor("reactor-ring", IdleMode.ADAPTIVE).add(ring).add(selector);
        reactor.start();
        // An io_uring or QoS group with nothing in flight cannot receive anything: the reactor backs off to the
        // one-group bound on the selector instead of waking every millisecond.
        await("backed off to 100 ms on the selector",
            () -> selector.lastAwaitTimeoutNanos.get() == TimeUnit.MILLISECONDS.toNanos(100));
        assertThat(ring.awaits.get()).as("never blocked in the idle in-flight-aware group").isZero();

        selector.waitForever();
        await("blocked for good", () -> selector.inAwait.get() && selector.waitingForever.get());
        CountDownLatch ran = new CountDownLatch(1);
        reactor.execute(ran::countDown);
        assertThat(ran.await(5, TimeUnit.SECONDS)).as("a task wakes the selector it blocks on").isTrue();
    }

    @Test
    void shouldBlockTheFullBoundOnTheSelectorWhenTheOtherGroupJoinedItAndArmAroundEachBlock() throws Exception {
        SelectorGroup tcp = new SelectorGroup("tcp");
        Joiner rdma = new Joiner("rdma", true);
        Reactor reactor = reactor("reactor-joined", IdleMode.ADAPTIVE).add(rdma).add(tcp);
        reactor.start();
        // An NVMe-oF/RDMA group that joined the NVMe/TCP selector: one wait, backed off to the one-group bound.
        await("backed off to 100 ms on the selector",
            () -> tcp.lastAwaitTimeoutNanos.get() == TimeUnit.MILLISECONDS.toNanos(Reactor.AWAIT_MILLIS_ONE_GROUP));
        assertThat(rdma.joinedWith.get()).as("joined to the selector the reactor blocks in").isSameAs(tcp.selector());
        assertThat(rdma.awaits.get()).as("never blocked in the joined group").isZero();
        assertThat(rdma.armedDuringAwait.get()).as("armed while the reactor blocked").isTrue();
        await("every arm disarmed", () -> !tcp.inAwait.get() || rdma.arms.get() == rdma.disarms.get() + 1);

        // Work ready when the reactor arms (a completion before the queues were armed): no block, the work is polled.
        long awaitsBefore = tcp.awaits.get();
        tcp.waitForever();
        await("blocked for good", () -> tcp.inAwait.get() && tcp.waitingForever.get());
        rdma.readyAtArm.set(2);
        rdma.pendingWork.set(2);
        tcp.wakeup(); // what the joined fd does to the selector
        await("the joined group's work was polled", () -> rdma.workDone.get() == 2);
        assertThat(rdma.refusedArms.get()).as("arms that found work and kept the reactor from blocking")
            .isPositive();
        assertThat((long) tcp.awaits.get()).isGreaterThan(awaitsBefore);
    }

    @Test
    void shouldKeepTheMillisecondBoundWhenTheOtherGroupCannotJoinTheSelector() throws Exception {
        SelectorGroup tcp = new SelectorGroup("tcp");
        Joiner rdma = new Joiner("rdma", false); // a JDK whose selector has no reachable epoll fd
        Reactor reactor = reactor("reactor-unjoined", IdleMode.ADAPTIVE).add(tcp).add(rdma);
        reactor.start();
        await("blocks in the selector", () -> tcp.inAwait.get());
        Thread.sleep(200); // long enough to back off to 100 ms, were the bound not capped
        assertThat(tcp.lastAwaitTimeoutNanos.get()).as("bounded wait: the other group is looked at every ms")
            .isEqualTo(TimeUnit.MILLISECONDS.toNanos(Reactor.AWAIT_MILLIS_SEVERAL_GROUPS));
        assertThat(rdma.arms.get()).as("a group that did not join is never armed").isZero();
        rdma.pendingWork.set(3);
        await("work on the unjoined group is noticed by the bounded wait", () -> rdma.workDone.get() == 3);
    }

    @Test
    void shouldJoinAGroupAddedToARunningReactorToItsSelector() throws Exception {
        SelectorGroup tcp = new SelectorGroup("tcp");
        Reactor reactor = reactor("reactor-late-join", IdleMode.ADAPTIVE).add(tcp);
        reactor.start();
        await("backed off on the selector alone",
            () -> tcp.lastAwaitTimeoutNanos.get() == TimeUnit.MILLISECONDS.toNanos(Reactor.AWAIT_MILLIS_ONE_GROUP));
        Joiner rdma = new Joiner("rdma", true);
        reactor.add(rdma);
        await("joined on the reactor thread", () -> rdma.joinedWith.get() == tcp.selector());
        assertThat(rdma.joinThread.get().getName()).isEqualTo("reactor-late-join");
        await("armed around a block", () -> rdma.armedDuringAwait.get());
        // The hand-over was work, so the back-off starts again at 1 ms; one wait covering both lets it reach 100 ms.
        await("backed off to 100 ms again, on the selector",
            () -> tcp.lastAwaitTimeoutNanos.get() == TimeUnit.MILLISECONDS.toNanos(Reactor.AWAIT_MILLIS_ONE_GROUP));
        assertThat(rdma.awaits.get()).isZero();
    }

    /** A {@link FakeGroup} that is a selector's group: {@link #selector()} is a real, unused selector (identity only). */
    private final class SelectorGroup extends FakeGroup implements SelectorPollGroup {
        private final Selector selector;

        SelectorGroup(String name) throws IOException {
            super(name);
            this.selector = Selector.open();
        }

        @Override
        public Selector selector() {
            return selector;
        }

        @Override
        public void await(long timeoutNanos) {
            for (PollGroup g : reactorsGroups()) {
                if (g instanceof Joiner j && j.armed.get()) {
                    j.armedDuringAwait.set(true);
                }
            }
            super.await(timeoutNanos);
        }

        @Override
        public void close() {
            super.close();
            try {
                selector.close();
            } catch (IOException e) {
                throw new IllegalStateException(e);
            }
        }
    }

    /**
     * A {@link FakeGroup} that can (or cannot) wake a selector, as an NVMe-oF/RDMA poll group: records the join, counts
     * arms and disarms, and refuses an arm while {@code readyAtArm} is positive (work is already there).
     */
    private final class Joiner extends FakeGroup implements WakesSelector {
        private final boolean canJoin;
        private final SelectorGroup[] blockedIn = new SelectorGroup[1];
        final AtomicReference<Selector> joinedWith = new AtomicReference<>();
        final AtomicReference<Thread> joinThread = new AtomicReference<>();
        final AtomicInteger arms = new AtomicInteger();
        final AtomicInteger disarms = new AtomicInteger();
        final AtomicInteger refusedArms = new AtomicInteger();
        final AtomicInteger readyAtArm = new AtomicInteger();
        final java.util.concurrent.atomic.AtomicBoolean armed = new java.util.concurrent.atomic.AtomicBoolean();
        final java.util.concurrent.atomic.AtomicBoolean armedDuringAwait = new java.util.concurrent.atomic.AtomicBoolean();

        Joiner(String name, boolean canJoin) {
            super(name);
            this.canJoin = canJoin;
        }

        @Override
        public boolean wakeSelector(Selector selector) {
            if (!canJoin) {
                return false;
            }
            joinedWith.set(selector);
            joinThread.set(Thread.currentThread());
            return true;
        }

        @Override
        public boolean wakes(Selector selector) {
            return selector != null && joinedWith.get() == selector;
        }

        @Override
        public boolean armWakeup() {
            arms.incrementAndGet();
            armed.set(true);
            if (readyAtArm.get() > 0) {
                readyAtArm.decrementAndGet();
                refusedArms.incrementAndGet();
                return false;
            }
            return true;
        }

        @Override
        public void disarmWakeup() {
            disarms.incrementAndGet();
            armed.set(false);
        }
    }

    /** An {@link InFlightAware} group with nothing in flight (an idle io_uring). */
    private static final class IdleRing implements PollGroup, InFlightAware {
        final AtomicInteger awaits = new AtomicInteger();

        @Override
        public boolean hasInFlight() {
            return false;
        }

        @Override
        public int poll() {
            return 0;
        }

        @Override
        public void await(long timeoutNanos) {
            awaits.incrementAndGet();
        }

        @Override
        public void wakeup() {
        }

        @Override
        public void close() {
        }
    }

    @Test
    void shouldRunSubmittedTasksOnTheReactorThreadInOrderPerProducer() throws Exception {
        FakeGroup group = new FakeGroup("g");
        Reactor reactor = reactor("reactor-tasks", IdleMode.ADAPTIVE).add(group);
        reactor.start();
        int producers = 4;
        int perProducer = 500;
        List<List<Integer>> seen = new ArrayList<>();
        for (int p = 0; p < producers; p++) {
            seen.add(Collections.synchronizedList(new ArrayList<>()));
        }
        AtomicInteger offReactor = new AtomicInteger();
        CountDownLatch all = new CountDownLatch(producers * perProducer);
        List<Thread> threads = new ArrayList<>();
        for (int p = 0; p < producers; p++) {
            int producer = p;
            Thread t = new Thread(() -> {
                for (int i = 0; i < perProducer; i++) {
                    int value = i;
                    Runnable task = () -> {
                        if (!reactor.isReactorThread()) {
                            offReactor.incrementAndGet();
                        }
                        seen.get(producer).add(value);
                        all.countDown();
                    };
                    while (true) {
                        try {
                            reactor.execute(task);
                            break;
                        } catch (RejectedExecutionException full) {
                            Thread.onSpinWait(); // bounded queue full: the producer retries
                        }
                    }
                }
            }, "producer-" + p);
            threads.add(t);
            t.start();
        }
        assertThat(all.await(10, TimeUnit.SECONDS)).isTrue();
        for (Thread t : threads) {
            t.join(10_000);
        }
        assertThat(offReactor.get()).isZero();
        for (List<Integer> values : seen) {
            assertThat(values).hasSize(perProducer).isSorted();
        }
    }

    @Test
    void shouldRejectTasksUnlessRunning() {
        Reactor reactor = reactor("reactor-reject", IdleMode.ADAPTIVE);
        assertThatThrownBy(() -> reactor.execute(() -> { })).isInstanceOf(RejectedExecutionException.class)
            .hasMessageContaining("reactor-reject");
        reactor.start();
        assertThat(reactor.stop(STOP)).isTrue();
        assertThatThrownBy(() -> reactor.execute(() -> { })).isInstanceOf(RejectedExecutionException.class);
    }

    @Test
    void shouldKeepRunningWhenATaskThrows() throws Exception {
        Reactor reactor = reactor("reactor-task-fail", IdleMode.ADAPTIVE).add(new FakeGroup("g"));
        reactor.start();
        CountDownLatch after = new CountDownLatch(1);
        reactor.execute(() -> {
            throw new IllegalStateException("task failure (expected by the test)");
        });
        reactor.execute(after::countDown);
        assertThat(after.await(10, TimeUnit.SECONDS)).isTrue();
        assertThat(reactor.isRunning()).isTrue();
    }

    @Test
    void shouldStopPromptlyWhileBlockedAndCloseGroupsInReverseOrderOnItsThread() throws Exception {
        FakeGroup a = new FakeGroup("a");
        FakeGroup b = new FakeGroup("b");
        Reactor reactor = reactor("reactor-stop", IdleMode.ADAPTIVE)
            .add(a)
            .own(() -> closeLog.add("pool"))
            .add(b);
        reactor.start();
        await("blocked", () -> a.inAwait.get());
        a.waitForever();
        await("blocked for good", () -> a.inAwait.get() && a.waitingForever.get());

        long start = System.nanoTime();
        assertThat(reactor.stop(STOP)).isTrue();
        long millis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
        assertThat(millis).as("stop wakes the blocked reactor").isLessThan(2_000);
        assertThat(reactor.isRunning()).isFalse();
        assertThat(closeLog).containsExactly("b", "pool", "a");
        assertThat(a.closeThread.get().getName()).isEqualTo("reactor-stop");
        assertThat(b.closeThread.get().getName()).isEqualTo("reactor-stop");
        assertThat(reactor.stop(STOP)).as("idempotent").isTrue();
        assertThat(closeLog).hasSize(3);
    }

    @Test
    void shouldRunTasksQueuedBeforeStop() throws Exception {
        FakeGroup group = new FakeGroup("g");
        Reactor reactor = reactor("reactor-drain", IdleMode.ADAPTIVE).add(group);
        reactor.start();
        AtomicInteger ran = new AtomicInteger();
        for (int i = 0; i < 100; i++) {
            reactor.execute(ran::incrementAndGet);
        }
        assertThat(reactor.stop(STOP)).isTrue();
        assertThat(ran.get()).isEqualTo(100);
    }

    @Test
    void shouldCloseWhatItOwnsWhenStoppedBeforeStart() {
        Reactor reactor = reactor("reactor-never", IdleMode.ADAPTIVE)
            .add(new FakeGroup("a"))
            .own(() -> closeLog.add("pool"))
            .add(new FakeGroup("b"));
        assertThat(reactor.stop(STOP)).isTrue();
        assertThat(closeLog).containsExactly("b", "pool", "a");
        assertThatThrownBy(reactor::start).isInstanceOf(IllegalStateException.class);
    }

    @Test
    void shouldPollAGroupAddedWhileRunningAndCloseItOnStop() throws Exception {
        FakeGroup first = new FakeGroup("first");
        Reactor reactor = reactor("reactor-live", IdleMode.ADAPTIVE)
            .add(first)
            .own(() -> closeLog.add("pool"));
        reactor.start();
        await("backed off to the one-group bound",
            () -> first.lastAwaitTimeoutNanos.get() == TimeUnit.MILLISECONDS.toNanos(Reactor.AWAIT_MILLIS_ONE_GROUP));

        FakeGroup late = new FakeGroup("late");
        assertThat(reactor.add(late)).isSameAs(reactor);
        await("the late group is polled", () -> late.polls.get() > 0);
        assertThat(late.pollThread.get().getName()).isEqualTo("reactor-live");
        assertThat(reactor.pollGroups()).containsExactly(first, late);
        assertThat(reactor.pollGroup(FakeGroup.class)).isSameAs(first);
        // Two groups to wait on now: the block is bounded so work on the second is noticed within a millisecond.
        await("the idle bound follows the groups",
            () -> first.lastAwaitTimeoutNanos.get() == TimeUnit.MILLISECONDS.toNanos(Reactor.AWAIT_MILLIS_SEVERAL_GROUPS));
        late.pendingWork.set(5);
        await("work on the late group is done", () -> late.workDone.get() == 5);

        assertThat(reactor.stop(STOP)).isTrue();
        assertThat(closeLog).as("the late group closes first, before what was owned earlier")
            .containsExactly("late", "pool", "first");
        assertThat(late.closeThread.get().getName()).isEqualTo("reactor-live");
        assertThatThrownBy(() -> reactor.add(new FakeGroup("after-stop")))
            .isInstanceOf(IllegalStateException.class)
            .hasMessageContaining("reactor-live has stopped");
        assertThat(closeLog).hasSize(3);
    }

    @Test
    void shouldCloseAGroupAddedWhileRunningEvenIfStoppedBeforeItWasPolled() throws Exception {
        FakeGroup first = new FakeGroup("first");
        Reactor reactor = reactor("reactor-live-stop", IdleMode.ADAPTIVE).add(first);
        reactor.start();
        CountDownLatch blocked = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        // Hold the reactor thread in a task, so the hand-over is still queued when stop() is called.
        reactor.execute(() -> {
            blocked.countDown();
            try {
                release.await(10, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        assertThat(blocked.await(10, TimeUnit.SECONDS)).isTrue();
        FakeGroup late = new FakeGroup("late");
        reactor.add(late);
        Thread stopper = new Thread(() -> reactor.stop(STOP), "stopper");
        stopper.start();
        await("stop requested", () -> !reactor.isRunning());
        release.countDown();
        stopper.join(10_000);
        assertThat(stopper.isAlive()).isFalse();
        assertThat(late.polls.get()).as("stopped before the round that would poll it").isZero();
        assertThat(closeLog).containsExactly("late", "first");
    }

    @Test
    void shouldDropAndCloseAGroupThatKeepsFailingButServeTheOthers() throws Exception {
        FakeGroup healthy = new FakeGroup("healthy");
        FakeGroup broken = new FakeGroup("broken");
        broken.failure.set(new IllegalStateException("poll failure (expected by the test)"));
        Reactor reactor = reactor("reactor-faulty", IdleMode.BUSY).add(broken).add(healthy);
        reactor.start();
        await("broken group closed", () -> closeLog.contains("broken"));
        assertThat(broken.polls.get()).isEqualTo(Reactor.FATAL_CONSECUTIVE_FAILURES);
        long before = healthy.polls.get();
        await("healthy group still polled", () -> healthy.polls.get() > before + 100);
        assertThat(reactor.pollGroups()).containsExactly(healthy);
        assertThat(reactor.stop(STOP)).isTrue();
        assertThat(closeLog).containsExactly("broken", "healthy");
    }

    @Test
    void shouldDropAGroupAtOnceOnAnError() throws Exception {
        FakeGroup healthy = new FakeGroup("healthy");
        FakeGroup broken = new FakeGroup("broken");
        broken.error.set(new AssertionError("poll error (expected by the test)"));
        Reactor reactor = reactor("reactor-error", IdleMode.BUSY).add(healthy).add(broken);
        reactor.start();
        await("broken group closed", () -> closeLog.contains("broken"));
        assertThat(broken.polls.get()).isEqualTo(1);
        assertThat(reactor.isRunning()).isTrue();
    }

    @Test
    void shouldToleratePollFailuresThatStop() throws Exception {
        FakeGroup flaky = new FakeGroup("flaky");
        flaky.failuresLeft.set(5);
        flaky.failure.set(new IllegalStateException("transient poll failure (expected by the test)"));
        Reactor reactor = reactor("reactor-flaky", IdleMode.BUSY).add(flaky);
        reactor.start();
        await("polled past the failures", () -> flaky.polls.get() > 100);
        assertThat(closeLog).isEmpty();
    }

    /** The groups of every reactor of this test (for a group double to look at the others while it blocks). */
    private List<PollGroup> reactorsGroups() {
        List<PollGroup> all = new ArrayList<>();
        for (Reactor r : reactors) {
            all.addAll(r.pollGroups());
        }
        return all;
    }

    /** A poll group double: counts, records threads, and blocks in await on a semaphore that wakeup() releases. */
    private class FakeGroup implements PollGroup {
        final String name;
        final AtomicLong polls = new AtomicLong();
        final AtomicInteger awaits = new AtomicInteger();
        final AtomicInteger wakeups = new AtomicInteger();
        final AtomicInteger awaitsEndedByWakeup = new AtomicInteger();
        final AtomicInteger pendingWork = new AtomicInteger();
        final AtomicInteger workDone = new AtomicInteger();
        final AtomicInteger failuresLeft = new AtomicInteger(Integer.MAX_VALUE);
        final AtomicReference<RuntimeException> failure = new AtomicReference<>();
        final AtomicReference<Error> error = new AtomicReference<>();
        final AtomicLong lastAwaitTimeoutNanos = new AtomicLong();
        final AtomicReference<Thread> pollThread = new AtomicReference<>();
        final AtomicReference<Thread> closeThread = new AtomicReference<>();
        final java.util.concurrent.atomic.AtomicBoolean inAwait = new java.util.concurrent.atomic.AtomicBoolean();
        final java.util.concurrent.atomic.AtomicBoolean waitingForever = new java.util.concurrent.atomic.AtomicBoolean();
        private final Semaphore wake = new Semaphore(0);
        private volatile boolean forever;

        FakeGroup(String name) {
            this.name = name;
        }

        /** From now on await() ignores its timeout and returns only on wakeup(): a lost wakeup would hang. */
        void waitForever() {
            forever = true;
        }

        @Override
        public int poll() {
            polls.incrementAndGet();
            pollThread.set(Thread.currentThread());
            Error e = error.get();
            if (e != null) {
                throw e;
            }
            RuntimeException f = failure.get();
            if (f != null && failuresLeft.getAndDecrement() > 0) {
                throw f;
            }
            int work = pendingWork.getAndSet(0);
            workDone.addAndGet(work);
            return work;
        }

        @Override
        public void await(long timeoutNanos) {
            awaits.incrementAndGet();
            lastAwaitTimeoutNanos.set(timeoutNanos);
            boolean f = forever;
            waitingForever.set(f);
            inAwait.set(true);
            try {
                boolean woken = f ? wake.tryAcquire(30, TimeUnit.SECONDS) : wake.tryAcquire(timeoutNanos,
                    TimeUnit.NANOSECONDS);
                if (woken) {
                    awaitsEndedByWakeup.incrementAndGet();
                    wake.drainPermits();
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } finally {
                inAwait.set(false);
            }
        }

        @Override
        public void wakeup() {
            wakeups.incrementAndGet();
            wake.release();
        }

        @Override
        public void close() {
            closeThread.set(Thread.currentThread());
            closeLog.add(name);
        }

        @Override
        public String toString() {
            return name;
        }
    }
}
