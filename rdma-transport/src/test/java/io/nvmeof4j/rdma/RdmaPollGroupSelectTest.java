package io.nvmeof4j.rdma;

import io.nvmeof4j.protocol.buffer.OffHeapBufferPool;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.Selector;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The NVMe-oF/RDMA poll group as a {@link io.nvmeof4j.protocol.spi.reactor.WakesSelector}: joined through its waiter,
 * armed around a reactor's select (its waiter told first, so wake-ups reach the selector before the group's sleeping
 * flag is up), and an arm refused while work is waiting. The channels' epoll join itself is native
 * ({@code SelectorJoinTest}) and checked end to end on Soft-RoCE ({@code OneWaitReactorChecks}).
 */
class RdmaPollGroupSelectTest {
    private RdmaPollGroup group;
    private JoiningWaiter waiter;
    private Selector selector;

    /** A waiter that joins any selector and records the select hand-shake. */
    private static final class JoiningWaiter implements CompletionWaiter {
        volatile Selector joined;
        volatile boolean inSelect;
        final AtomicInteger enters = new AtomicInteger();
        final AtomicInteger wakeupsInSelect = new AtomicInteger();
        final AtomicInteger awaits = new AtomicInteger();

        @Override
        public boolean joinSelector(Selector selector) {
            joined = selector;
            return true;
        }

        @Override
        public Selector joinedSelector() {
            return joined;
        }

        @Override
        public void enterSelect() {
            enters.incrementAndGet();
            inSelect = true;
        }

        @Override
        public void leaveSelect() {
            inSelect = false;
        }

        @Override
        public void await(long timeoutNanos) {
            awaits.incrementAndGet();
        }

        @Override
        public void wakeup() {
            if (inSelect) {
                wakeupsInSelect.incrementAndGet();
            }
        }

        @Override
        public void close() {
        }
    }

    @BeforeEach
    void setUp() throws IOException {
        waiter = new JoiningWaiter();
        group = new RdmaPollGroup(new OffHeapBufferPool(1 << 20, ByteBuffer.allocateDirect(4 << 20)), waiter, null);
        group.poll(); // binds the reactor thread: this one
        selector = Selector.open();
    }

    @AfterEach
    void tearDown() throws IOException {
        group.close();
        selector.close();
    }

    @Test
    void shouldJoinTheSelectorThroughItsWaiterAndSayWhichItWakes() throws IOException {
        assertThat(group.wakes(selector)).as("before the join").isFalse();
        assertThat(group.wakeSelector(selector)).isTrue();
        assertThat(waiter.joined).isSameAs(selector);
        assertThat(group.wakes(selector)).isTrue();
        try (Selector other = Selector.open()) {
            assertThat(group.wakes(other)).isFalse();
        }
        assertThat(group.wakes(null)).isFalse();
    }

    @Test
    void shouldArmForTheSelectWithWakeUpsRoutedToTheSelectorAndDisarmAfter() {
        group.wakeSelector(selector);
        assertThat(group.armWakeup()).as("nothing waiting: the reactor may select").isTrue();
        assertThat(waiter.enters.get()).as("pending events taken, wake-ups routed").isEqualTo(1);
        assertThat(waiter.inSelect).isTrue();
        // Another thread hands a task over while the reactor selects: the wake-up goes the selector's way.
        Thread producer = new Thread(() -> group.execute(() -> { }), "producer");
        producer.start();
        assertThat(joinWithin(producer)).isTrue();
        assertThat(waiter.wakeupsInSelect.get()).as("wake-ups while armed").isEqualTo(1);
        group.disarmWakeup();
        assertThat(waiter.inSelect).as("after the select, wake-ups go to the channels' wait again").isFalse();
        assertThat(waiter.awaits.get()).as("the group's own wait is never entered").isZero();
        assertThat(group.poll()).as("the task handed over is run by the next poll").isEqualTo(1);
    }

    @Test
    void shouldRefuseToArmWhileATaskIsWaiting() {
        group.wakeSelector(selector);
        AtomicInteger ran = new AtomicInteger();
        group.execute(ran::incrementAndGet);
        assertThat(group.armWakeup()).as("work waiting: poll instead of selecting").isFalse();
        group.disarmWakeup();
        assertThat(group.poll()).isEqualTo(1);
        assertThat(ran.get()).isEqualTo(1);
        assertThat(group.armWakeup()).as("nothing left").isTrue();
        group.disarmWakeup();
    }

    private static boolean joinWithin(Thread t) {
        try {
            t.join(5000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        return !t.isAlive();
    }
}
