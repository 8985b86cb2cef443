package io.nvmeof4j.protocol.spi.transport;

import io.nvmeof4j.protocol.buffer.OffHeapBufferPool;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/** Commands that find the pool dry wait in arrival order; a newcomer never overtakes them. */
class BufferWaitQueueTest {
    private static final int MIB = 1 << 20;

    private static final class Waiting implements BufferWaitQueue.Waiter<Waiting> {
        final String name;
        final int length;
        boolean gone;
        Waiting next;
        ByteBuffer granted;
        boolean dropped;

        Waiting(String name, int length) {
            this.name = name;
            this.length = length;
        }

        @Override
        public Waiting nextWaiting() {
            return next;
        }

        @Override
        public void nextWaiting(Waiting next) {
            this.next = next;
        }

        @Override
        public int bufferLength() {
            return length;
        }

        @Override
        public boolean waitAbandoned() {
            return gone;
        }

        @Override
        public void bufferGranted(ByteBuffer buffer) {
            granted = buffer;
            order.add(name);
        }

        @Override
        public void dropWaiting() {
            dropped = true;
        }
    }

    private static final List<String> order = new ArrayList<>();

    @Test
    void shouldGrantBuffersInArrivalOrderAndDropAbandonedWaiters() {
        order.clear();
        OffHeapBufferPool pool = new OffHeapBufferPool(MIB, ByteBuffer.allocateDirect(2 * MIB));
        BufferWaitQueue<Waiting> queue = new BufferWaitQueue<>(pool);
        ByteBuffer a = queue.acquireInOrder(MIB);
        ByteBuffer b = queue.acquireInOrder(MIB);
        assertThat(a).isNotNull();
        assertThat(b).isNotNull();
        assertThat(queue.acquireInOrder(MIB)).as("pool dry").isNull();

        Waiting first = new Waiting("first", MIB);
        Waiting gone = new Waiting("gone", MIB);
        Waiting third = new Waiting("third", MIB);
        queue.park(first);
        queue.park(gone);
        queue.park(third);
        assertThat(queue.waits()).isEqualTo(3);
        queue.release(a);
        // A buffer is back, but commands wait: a newcomer queues behind them rather than taking it.
        assertThat(queue.acquireInOrder(MIB)).isNull();
        gone.gone = true;
        assertThat(queue.grant()).isEqualTo(1);
        assertThat(order).containsExactly("first");
        queue.release(b);
        assertThat(queue.grant()).isEqualTo(1);
        assertThat(gone.dropped).isTrue();
        assertThat(order).containsExactly("first", "third");
        assertThat(queue.isEmpty()).isTrue();
        queue.release(first.granted);
        queue.release(third.granted);
        assertThat(pool.buffersInUse()).isZero();
    }

    /**
     * The TCP and RDMA poll groups of a reactor share its pool, each with its own wait queue, and each grants its
     * waiters every round: a large command parked in one is granted once the other's small buffers free a slab.
     */
    @Test
    void shouldGrantAWaiterOfAnotherQueueOnceReleasesFreeAWholeSlab() {
        ByteBuffer region = ByteBuffer.allocateDirect(2 << 20);
        OffHeapBufferPool pool = new OffHeapBufferPool(1 << 20, region);
        BufferWaitQueue<Waiting> tcp = new BufferWaitQueue<>(pool);
        BufferWaitQueue<Waiting> rdma = new BufferWaitQueue<>(pool);
        List<ByteBuffer> small = new ArrayList<>();
        ByteBuffer b;
        while ((b = tcp.acquireInOrder(4096)) != null) {
            small.add(b);
        }
        assertThat(small).hasSize(512);
        Waiting large = new Waiting("large", 128 << 10);
        assertThat(rdma.acquireInOrder(large.bufferLength())).isNull();
        rdma.park(large);
        for (int i = 0; i < 255; i++) { // all of the first slab but one, and nothing of the second
            tcp.release(small.get(i));
        }
        assertThat(rdma.grant()).as("no slab is wholly free yet").isZero();
        tcp.release(small.get(255));
        assertThat(rdma.grant()).isEqualTo(1);
        assertThat(large.granted.capacity()).isEqualTo(128 << 10);
        assertThat(pool.regionOffset(large.granted)).as("inside the freed first slab").isBetween(0L, 7L << 17);
        assertThat(rdma.isEmpty()).isTrue();
        assertThat(pool.buffersInUse()).isEqualTo(256 + 1);
    }
}
