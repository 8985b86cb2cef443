package io.nvmeof4j.rdma;

import io.nvmeof4j.protocol.buffer.OffHeapBufferPool;
import io.nvmeof4j.protocol.spi.AddressFamily;
import io.nvmeof4j.protocol.spi.BufferPool;
import io.nvmeof4j.protocol.spi.ControllerTransport;
import io.nvmeof4j.protocol.spi.PollGroup;
import io.nvmeof4j.protocol.spi.PortOptions;
import io.nvmeof4j.protocol.spi.QueueHandlerFactory;
import io.nvmeof4j.protocol.spi.TransportAddress;
import io.nvmeof4j.protocol.spi.TransportListener;
import io.nvmeof4j.protocol.spi.TransportType;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A fake RDMA fabric for the transport conformance suite: the controller-role transport of the real queue state
 * machines ({@link RdmaPollGroup}, {@link RdmaControllerQueue}) over {@link FakeQueuePair}s and one
 * {@link FakeMemory}, with listeners a fake host transport ({@code host.FakeRdmaHostTransport}) connects to in
 * place of the RDMA CM: {@link #accept} is what {@code RdmaListener} does on a CONNECT_REQUEST. Unit tests only.
 */
public final class FakeRdmaFabric {
    public final FakeMemory memory = new FakeMemory();
    private final Map<Integer, Listener> listeners = new ConcurrentHashMap<>();
    private final Map<RdmaPollGroup, MemoryKeys> poolKeys = new ConcurrentHashMap<>();
    private final AtomicInteger nextPort = new AtomicInteger(4420);

    /** The controller-role transport on this fabric. */
    public ControllerTransport controllerTransport() {
        return new ControllerTransport() {
            @Override
            public TransportType type() {
                return TransportType.RDMA;
            }

            @Override
            public PollGroup createPollGroup(BufferPool pool) {
                OffHeapBufferPool offHeap = (OffHeapBufferPool) pool;
                MemoryKeys keys = memory.register(offHeap.region()); // once per protection domain, as GroupDevices
                RdmaPollGroup group = new RdmaPollGroup(offHeap, new FakeWaiter(), () -> memory.deregister(keys));
                poolKeys.put(group, keys);
                return group;
            }

            @Override
            public TransportListener listen(TransportAddress address, PortOptions options, List<PollGroup> groups,
                                            QueueHandlerFactory handlers) {
                int port = address.port() == 0 ? nextPort.getAndIncrement() : address.port();
                Listener listener = new Listener(address.withPort(port), options,
                    groups.stream().map(RdmaPollGroup.class::cast).toList(), handlers);
                if (listeners.putIfAbsent(port, listener) != null) {
                    throw new IllegalStateException("port " + port + " in use on the fake fabric");
                }
                return listener;
            }

            @Override
            public void close() {
                listeners.clear();
            }
        };
    }

    /** The controller's side of an accepted connection: its queue pair, and the step that makes the queue live. */
    public static final class Accepted {
        public final FakeQueuePair qp;
        private final RdmaControllerQueue queue;

        Accepted(FakeQueuePair qp, RdmaControllerQueue queue) {
            this.qp = qp;
            this.queue = queue;
        }

        /** ESTABLISHED: the queue starts on its group's reactor; waits (bounded) until it did. */
        public void establish(long timeoutMillis) throws IOException {
            CompletableFuture<Void> done = new CompletableFuture<>();
            queue.group.execute(() -> {
                queue.onEstablished();
                done.complete(null);
            });
            try {
                done.get(timeoutMillis, TimeUnit.MILLISECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IOException("interrupted", e);
            } catch (ExecutionException | TimeoutException e) {
                throw new IOException("controller queue " + queue + " not established within " + timeoutMillis
                    + " ms (is its reactor polling?)", e);
            }
        }
    }

    /**
     * A host's connect request reaching the listener on {@code address}: checks its private data as
     * {@code RdmaListener} does, builds the controller queue on the next group with every receive posted.
     *
     * @throws IOException "nobody listens" or the reject status, as the host would learn from the CM
     */
    public Accepted accept(TransportAddress address, byte[] privateData, String hostPeer) throws IOException {
        Listener listener = listeners.get(address.port());
        if (listener == null) {
            throw new IOException("rejected (CM reason 8: nobody listens there) at " + address);
        }
        int status = QueueSizing.check(privateData, listener.options, 16, 16);
        if (status != 0) {
            throw new IOException("the controller rejected the queue: " + CmConnectReject.statusName(status));
        }
        QueueSizing sizing = QueueSizing.of(privateData, listener.options, 16, 16);
        RdmaPollGroup group = listener.nextGroup();
        ByteBuffer queueMemory = ByteBuffer.allocateDirect(RdmaControllerQueue.memoryBytes(sizing));
        MemoryKeys keys = memory.register(queueMemory);
        FakeQueuePair qp = new FakeQueuePair(memory);
        RdmaControllerQueue queue = new RdmaControllerQueue(group, qp, sizing, listener.options, listener.handlers,
            listener.address, hostPeer, queueMemory, keys, poolKeys.get(group), () -> memory.deregister(keys));
        if (queue.postInitialReceives() != 0) {
            throw new IOException("posting the controller's receives failed");
        }
        return new Accepted(qp, queue);
    }

    private final class Listener implements TransportListener {
        final TransportAddress address;
        final PortOptions options;
        final List<RdmaPollGroup> groups;
        final QueueHandlerFactory handlers;
        private final AtomicInteger next = new AtomicInteger();

        Listener(TransportAddress address, PortOptions options, List<RdmaPollGroup> groups,
                 QueueHandlerFactory handlers) {
            this.address = new TransportAddress(TransportType.RDMA, AddressFamily.IPV4, address.traddr(),
                address.trsvcid());
            this.options = options;
            this.groups = List.copyOf(groups);
            this.handlers = handlers;
        }

        RdmaPollGroup nextGroup() {
            return groups.get(Math.floorMod(next.getAndIncrement(), groups.size()));
        }

        @Override
        public TransportAddress address() {
            return address;
        }

        @Override
        public PortOptions options() {
            return options;
        }

        @Override
        public void close() {
            listeners.remove(address.port(), this);
        }
    }
}
