package io.nvmeof4j.rdma;

import io.nvmeof4j.protocol.buffer.OffHeapBufferPool;
import io.nvmeof4j.protocol.spi.AddressFamily;
import io.nvmeof4j.protocol.spi.PortOptions;
import io.nvmeof4j.protocol.spi.TransportAddress;
import io.nvmeof4j.protocol.spi.TransportType;

import java.nio.ByteBuffer;

/**
 * The controller side of a fake RDMA connection for host-side tests: a poll group with a registered pool and one
 * controller queue on a fake queue pair, served by {@link RamHandlers}. Unit tests only.
 */
public final class ControllerEnd {
    public final FakeMemory memory;
    public final OffHeapBufferPool pool;
    public final RdmaPollGroup group;
    public final RamHandlers handlers = new RamHandlers();
    public final FakeQueuePair qp;
    private final RdmaControllerQueue queue;

    /** A controller queue for the CM request {@code privateData}, with every receive posted and established. */
    public ControllerEnd(FakeMemory memory, byte[] privateData, PortOptions port) {
        this.memory = memory;
        ByteBuffer region = ByteBuffer.allocateDirect(8 << 20);
        pool = new OffHeapBufferPool(1 << 20, region);
        MemoryKeys poolKeys = memory.register(region);
        group = new RdmaPollGroup(pool, new FakeWaiter(), null);
        QueueSizing sizing = QueueSizing.of(privateData, port, 16, 16);
        ByteBuffer queueMemory = ByteBuffer.allocateDirect(RdmaQueueMemory.memoryBytes(sizing));
        MemoryKeys keys = memory.register(queueMemory);
        qp = new FakeQueuePair(memory);
        queue = new RdmaControllerQueue(group, qp, sizing, port, handlers,
            new TransportAddress(TransportType.RDMA, AddressFamily.IPV4, "10.0.2.15", "4420"), "10.0.2.15:50000",
            queueMemory, keys, poolKeys, () -> memory.deregister(keys));
        if (queue.postInitialReceives() != 0) {
            throw new IllegalStateException("receives");
        }
    }

    /** On the thread that will poll: binds it as the reactor and establishes the queue. */
    public void establish() {
        group.poll();
        queue.onEstablished();
    }

    public int queueId() {
        return queue.queueId();
    }

    public int commandsOutstanding() {
        return queue.commandsOutstanding();
    }

    public void disconnect(String reason) {
        queue.disconnect(reason);
    }

    public boolean destroyed() {
        return queue.lifecycle() == RdmaControllerQueue.CLOSED;
    }
}
