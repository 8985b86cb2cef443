package io.nvmeof4j.rdma;

import io.nvmeof4j.protocol.buffer.OffHeapBufferPool;
import io.nvmeof4j.protocol.command.CompletionQueueEntry;
import io.nvmeof4j.protocol.command.SglDescriptor;
import io.nvmeof4j.protocol.command.SubmissionQueueEntry;
import io.nvmeof4j.protocol.spi.AddressFamily;
import io.nvmeof4j.protocol.spi.ConnectionLimits;
import io.nvmeof4j.protocol.spi.PendingConnections;
import io.nvmeof4j.protocol.spi.PendingConnections.Refusal;
import io.nvmeof4j.protocol.spi.PortOptions;
import io.nvmeof4j.protocol.spi.TransportAddress;
import io.nvmeof4j.protocol.spi.TransportType;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.net.InetAddress;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Pre-Connect limits of an RDMA port as the CM thread applies them, against real {@link RdmaControllerQueue}s over
 * fake queue pairs playing the host (the CM events themselves need a device: the guest tests cover those).
 */
class PendingQueuesTest {
    private static final PortOptions PORT = new PortOptions(4096, 128, 1 << 20);
    private static final long TIMEOUT_NANOS = TimeUnit.MILLISECONDS.toNanos(200);

    private FakeMemory memory;
    private RdmaPollGroup group;
    private RamHandlers handlers;
    private MemoryKeys poolKeys;
    private final List<Refusal> refusals = new ArrayList<>();

    @BeforeEach
    void setUp() {
        memory = new FakeMemory();
        ByteBuffer region = ByteBuffer.allocateDirect(8 << 20);
        OffHeapBufferPool pool = new OffHeapBufferPool(1 << 20, region);
        poolKeys = memory.register(region);
        group = new RdmaPollGroup(pool, new FakeWaiter(), null);
        group.poll(); // binds the reactor thread: this one
        handlers = new RamHandlers();
    }

    /** An accepted, established I/O queue 1 from {@code peer}, with its fake queue pair. */
    private record Accepted(RdmaControllerQueue queue, FakeQueuePair qp) {
    }

    private Accepted accept(String peer) {
        QueueSizing sizing = QueueSizing.of(CmConnectRequest.encode(1, 32, 32, 1), PORT, 16, 16);
        ByteBuffer queueMemory = ByteBuffer.allocateDirect(RdmaQueueMemory.memoryBytes(sizing));
        MemoryKeys keys = memory.register(queueMemory);
        FakeQueuePair qp = new FakeQueuePair(memory);
        RdmaControllerQueue queue = new RdmaControllerQueue(group, qp, sizing, PORT, handlers,
            new TransportAddress(TransportType.RDMA, AddressFamily.IPV4, "10.0.2.1", "4420"), peer + ":50000",
            queueMemory, keys, poolKeys, () -> memory.deregister(keys));
        assertThat(queue.postInitialReceives()).isZero();
        queue.onEstablished();
        return new Accepted(queue, qp);
    }

    private void track(PendingQueues pending, Accepted a, PendingConnections.Entry entry) {
        pending.track(a.queue(), entry, a.queue()::isGone, why -> {
            refusals.add(why);
            a.queue().disconnect(why.tag());
        });
    }

    /** Fabrics Connect for I/O queue 1 (32 entries) with its 1024 bytes of data in the capsule. */
    private static byte[] connectCapsule() {
        ByteBuffer b = ByteBuffer.allocate(64 + 1024).order(ByteOrder.LITTLE_ENDIAN);
        SubmissionQueueEntry sqe = new SubmissionQueueEntry().wrap(b, 0).clear();
        sqe.opcode(0x7F).flags(SubmissionQueueEntry.FLAGS_PSDT_SGL).commandId(7);
        b.put(4, (byte) 0x01);  // FCTYPE Connect (data host to controller)
        b.putInt(40, 1 << 16);  // CDW10: QID 1
        b.putInt(44, 31);       // CDW11: SQSIZE 31 (0-based)
        sqe.sgl1().id(SglDescriptor.ID_IN_CAPSULE).address(0).length(1024);
        return b.array();
    }

    private static InetAddress host(int n) throws Exception {
        return InetAddress.getByName("10.0.2." + n);
    }

    @Test
    void shouldForgetAQueueOnceItConnectsAndDisconnectOneWithoutConnectAfterTheTimeout() throws Exception {
        PendingQueues pending = new PendingQueues(new PendingConnections(new ConnectionLimits(8, 8, TIMEOUT_NANOS)));
        long start = System.nanoTime();
        Accepted connects = accept("10.0.2.15");
        track(pending, connects, pending.admit(host(15), start));
        Accepted idle = accept("10.0.2.16");
        track(pending, idle, pending.admit(host(16), start));
        assertThat(pending.count()).isEqualTo(2);
        assertThat(pending.eventWaitNanos()).as("queues to time out").isEqualTo(PendingQueues.SWEEP_WAIT_NANOS);

        connects.qp().deliver(connectCapsule());
        for (int i = 0; i < 10 && connects.qp().sent.isEmpty(); i++) {
            group.poll();
        }
        CompletionQueueEntry cqe = new CompletionQueueEntry().wrap(
            ByteBuffer.wrap(connects.qp().sent.get(connects.qp().sent.size() - 1).bytes()).order(ByteOrder.LITTLE_ENDIAN), 0);
        assertThat(cqe.status()).as("Connect status").isZero();
        assertThat(connects.queue().queueId()).isEqualTo(1);

        pending.sweep(start + TIMEOUT_NANOS - 1);
        assertThat(pending.count()).as("the connected queue no longer counts").isEqualTo(1);
        assertThat(refusals).isEmpty();

        pending.sweep(start + TIMEOUT_NANOS);
        assertThat(refusals).containsExactly(Refusal.CONNECT_TIMEOUT);
        group.poll(); // the disconnect runs on the queue's reactor
        assertThat(idle.queue().isGone()).isTrue();
        assertThat(handlers.closed).containsExactly("connect_timeout");
        assertThat(connects.queue().isGone()).as("the connected queue outlives the timeout").isFalse();
        assertThat(pending.count()).isZero();
        pending.sweep(start + TIMEOUT_NANOS); // the next sweep forgets the timed-out queue
        assertThat(pending.eventWaitNanos()).as("nothing to time out").isEqualTo(PendingConnections.IDLE_WAIT_NANOS);
    }

    @Test
    void shouldRefuseAtTheHostLimitAndDisconnectTheOldestAtThePortLimit() throws Exception {
        PendingQueues pending = new PendingQueues(new PendingConnections(
            new ConnectionLimits(2, 1, TimeUnit.SECONDS.toNanos(10))));
        long now = System.nanoTime();
        Accepted first = accept("10.0.2.15");
        track(pending, first, pending.admit(host(15), now));
        assertThat(pending.admit(host(15), now)).as("a second request from 10.0.2.15 (REJ, no resources)").isNull();

        Accepted second = accept("10.0.2.16");
        track(pending, second, pending.admit(host(16), now));
        PendingConnections.Entry third = pending.admit(host(17), now);
        assertThat(third).as("a request from a third address at the port limit").isNotNull();
        assertThat(refusals).containsExactly(Refusal.PORT_LIMIT);
        group.poll();
        assertThat(first.queue().isGone()).as("the oldest pending queue").isTrue();
        assertThat(second.queue().isGone()).isFalse();
        assertThat(handlers.closed).containsExactly("port_limit");
    }

    @Test
    void shouldWaitTheSweepGrainOnlyWhileAQueueAwaitsItsConnect() throws Exception {
        PendingQueues pending = new PendingQueues(new PendingConnections(new ConnectionLimits(8, 8, TIMEOUT_NANOS)));
        assertThat(pending.eventWaitNanos()).as("a port with no connection")
            .isEqualTo(PendingConnections.IDLE_WAIT_NANOS);
        long now = System.nanoTime();
        PendingConnections.Entry admitted = pending.admit(host(15), now);
        assertThat(pending.eventWaitNanos()).as("admitted, not yet tracked").isEqualTo(PendingQueues.SWEEP_WAIT_NANOS);
        Accepted a = accept("10.0.2.15");
        track(pending, a, admitted);
        assertThat(pending.eventWaitNanos()).isEqualTo(PendingQueues.SWEEP_WAIT_NANOS);
        a.queue().disconnect("host disconnected");
        group.poll();
        pending.sweep(now);
        assertThat(pending.eventWaitNanos()).as("the queue went away").isEqualTo(PendingConnections.IDLE_WAIT_NANOS);
        assertThat(PendingConnections.IDLE_WAIT_NANOS).as("still a bounded wait")
            .isGreaterThan(PendingQueues.SWEEP_WAIT_NANOS).isLessThanOrEqualTo(TimeUnit.SECONDS.toNanos(10));
    }

    @Test
    void shouldForgetAQueueThatClosedByItself() throws Exception {
        PendingQueues pending = new PendingQueues(new PendingConnections(new ConnectionLimits(8, 1, TIMEOUT_NANOS)));
        long now = System.nanoTime();
        Accepted a = accept("10.0.2.15");
        track(pending, a, pending.admit(host(15), now));
        a.queue().disconnect("host disconnected");
        group.poll();
        pending.sweep(now);
        assertThat(pending.count()).isZero();
        assertThat(pending.admit(host(15), now)).as("the host's budget is back").isNotNull();
        assertThat(refusals).isEmpty();
    }
}
