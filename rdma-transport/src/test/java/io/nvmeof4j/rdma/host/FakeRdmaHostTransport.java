package io.nvmeof4j.rdma.host;

import io.nvmeof4j.protocol.buffer.OffHeapBufferPool;
import io.nvmeof4j.protocol.spi.TransportAddress;
import io.nvmeof4j.protocol.spi.TransportType;
import io.nvmeof4j.protocol.spi.host.HostPollGroup;
import io.nvmeof4j.protocol.spi.host.HostQueue;
import io.nvmeof4j.protocol.spi.host.HostQueueListener;
import io.nvmeof4j.protocol.spi.host.HostQueueOptions;
import io.nvmeof4j.protocol.spi.host.HostTransport;
import io.nvmeof4j.protocol.spi.host.TransportConnectException;
import io.nvmeof4j.rdma.CmConnectRequest;
import io.nvmeof4j.rdma.FakeQueuePair;
import io.nvmeof4j.rdma.FakeRdmaFabric;
import io.nvmeof4j.rdma.FakeWaiter;
import io.nvmeof4j.rdma.MemoryKeys;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The host role of the real queue state machines ({@link RdmaHostPollGroup}, {@link RdmaHostQueue}) on a
 * {@link FakeRdmaFabric}: {@link #connect} does what {@code RdmaHostTransport.connect} does, with
 * {@link FakeRdmaFabric#accept} in place of the RDMA CM exchange. Unit tests only.
 */
public final class FakeRdmaHostTransport implements HostTransport {
    private final FakeRdmaFabric fabric;
    private final Map<RdmaHostPollGroup, HostMemory> memories = new ConcurrentHashMap<>();
    private final AtomicInteger nextPort = new AtomicInteger(50000);

    public FakeRdmaHostTransport(FakeRdmaFabric fabric) {
        this.fabric = fabric;
    }

    @Override
    public TransportType type() {
        return TransportType.RDMA;
    }

    @Override
    public RdmaHostPollGroup createPollGroup() {
        return new RdmaHostPollGroup(new FakeWaiter());
    }

    /** One registration cache and bounce pool per group, as {@code HostDevice} gives each host reactor. */
    private HostMemory memory(RdmaHostPollGroup group) {
        return memories.computeIfAbsent(group, g -> {
            MemoryRegistrar registrar = new MemoryRegistrar() {
                @Override
                public MemoryKeys register(ByteBuffer buffer) {
                    return fabric.memory.register(buffer);
                }

                @Override
                public void deregister(MemoryKeys keys) {
                    fabric.memory.deregister(keys);
                }
            };
            // The sizes HostDevice gives a real device's host reactor.
            ByteBuffer bounce = ByteBuffer.allocateDirect(HostDevice.BOUNCE_BYTES);
            return new HostMemory(new RegistrationCache(registrar, RegistrationCache.MAX_BYTES_DEFAULT,
                RegistrationCache.MAX_ENTRIES_DEFAULT), new OffHeapBufferPool(HostDevice.BOUNCE_MAX_BUFFER, bounce),
                fabric.memory.register(bounce));
        });
    }

    @Override
    public HostQueue connect(HostPollGroup group, TransportAddress address, HostQueueOptions options,
                             HostQueueListener listener) throws IOException {
        return connect(group, address, options, 0, 0xFFFF, listener);
    }

    /** Opens queue {@code queueId} of controller {@code controllerId}, both carried in the CM private data. */
    public HostQueue connect(HostPollGroup group, TransportAddress address, HostQueueOptions options, int queueId,
                             int controllerId, HostQueueListener listener) throws IOException {
        RdmaHostPollGroup rdmaGroup = (RdmaHostPollGroup) group;
        String peer = address.traddr() + ":" + address.trsvcid() + " from 10.0.2.15:" + nextPort.getAndIncrement();
        int depth = options.depth();
        int inCapsule = queueId == 0 ? 0 : options.inCapsuleDataSize();
        FakeQueuePair qp = new FakeQueuePair(fabric.memory);
        ByteBuffer queueMemory = ByteBuffer.allocateDirect(RdmaHostQueue.memoryBytes(depth, inCapsule, depth));
        MemoryKeys keys = fabric.memory.register(queueMemory);
        RdmaHostQueue queue = new RdmaHostQueue(rdmaGroup, memory(rdmaGroup), qp, address, peer, depth, inCapsule,
            depth, queueMemory, keys, listener, () -> fabric.memory.deregister(keys));
        if (queue.postInitialReceives() != 0) {
            throw new TransportConnectException(address.toString(), RdmaHostTransport.STEP_QUEUE_PAIR,
                "posting receives failed", null);
        }
        long timeoutMillis = options.connectTimeout().toMillis();
        FakeRdmaFabric.Accepted accepted;
        try {
            accepted = fabric.accept(address, CmConnectRequest.encode(queueId, depth, depth, controllerId), peer);
        } catch (IOException e) {
            fabric.memory.deregister(keys);
            throw new TransportConnectException(address.toString(), RdmaHostTransport.STEP_CM_CONNECT,
                e.getMessage(), e);
        }
        FakeQueuePair.pair(qp, accepted.qp);
        accepted.establish(timeoutMillis);
        CompletableFuture<Void> registered = new CompletableFuture<>();
        rdmaGroup.execute(() -> {
            rdmaGroup.register(queue);
            registered.complete(null);
        });
        try {
            registered.get(timeoutMillis, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new TransportConnectException(address.toString(), TransportConnectException.STEP_REGISTER,
                "interrupted", e);
        } catch (ExecutionException | TimeoutException e) {
            queue.close("registration timed out");
            throw new TransportConnectException(address.toString(), TransportConnectException.STEP_REGISTER,
                "poll group did not take the queue within " + timeoutMillis + " ms", e);
        }
        return queue;
    }

    @Override
    public void close() {
        memories.clear();
    }
}
