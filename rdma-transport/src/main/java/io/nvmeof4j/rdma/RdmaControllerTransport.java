package io.nvmeof4j.rdma;

import io.nvmeof4j.jni.NativeIoException;
import io.nvmeof4j.jni.rdma.CmEventChannel;
import io.nvmeof4j.jni.rdma.CmId;
import io.nvmeof4j.jni.rdma.Rdma;
import io.nvmeof4j.protocol.buffer.OffHeapBufferPool;
import io.nvmeof4j.protocol.spi.BufferPool;
import io.nvmeof4j.protocol.spi.ControllerTransport;
import io.nvmeof4j.protocol.spi.PollGroup;
import io.nvmeof4j.protocol.spi.PortOptions;
import io.nvmeof4j.protocol.spi.QueueHandlerFactory;
import io.nvmeof4j.protocol.spi.TransportAddress;
import io.nvmeof4j.protocol.spi.TransportListener;
import io.nvmeof4j.protocol.spi.TransportType;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * NVMe-oF/RDMA in the controller (target) role (NVMe over Fabrics 1.1 RDMA binding; wire reference 4), over the
 * JNI verbs and RDMA CM layer.
 * <p>Use like the NVMe/TCP transport: one {@link RdmaPollGroup} per reactor ({@link #createPollGroup}, with the
 * reactor's {@link OffHeapBufferPool}, which must be built over a region: the region is registered once per
 * protection domain), then {@link #listen} per port. Each listener has its own CM event channel served by a
 * thread; accepted queues are spread round-robin over the groups, and each queue's completion queue is polled by
 * its group's reactor.
 *
 * @throws UnsupportedOperationException from the constructor when RDMA is unavailable here (the cause says why:
 *                                       {@link Rdma#unavailabilityCause()})
 */
public final class RdmaControllerTransport implements ControllerTransport {
    static final int BACKLOG = 128;

    private final List<RdmaListener> listeners = new CopyOnWriteArrayList<>();
    private final Map<RdmaPollGroup, GroupDevices> groups = new ConcurrentHashMap<>();
    private volatile boolean closed;

    public RdmaControllerTransport() {
        Throwable cause = Rdma.unavailabilityCause();
        if (cause != null) {
            throw new UnsupportedOperationException("RDMA is unavailable: " + cause.getMessage(), cause);
        }
    }

    @Override
    public TransportType type() {
        return TransportType.RDMA;
    }

    @Override
    public RdmaPollGroup createPollGroup(BufferPool pool) {
        if (!(pool instanceof OffHeapBufferPool) || ((OffHeapBufferPool) pool).region() == null) {
            throw new IllegalArgumentException("an NVMe/RDMA poll group needs an OffHeapBufferPool built over a "
                + "region (new OffHeapBufferPool(max, region)), which is registered once with each device");
        }
        OffHeapBufferPool offHeap = (OffHeapBufferPool) pool;
        DeviceWaiter waiter = new DeviceWaiter();
        GroupDevices devices = new GroupDevices(offHeap, waiter);
        RdmaPollGroup group = new RdmaPollGroup(offHeap, waiter, devices);
        groups.put(group, devices);
        return group;
    }

    GroupDevices devices(RdmaPollGroup group) {
        return groups.get(group);
    }

    @Override
    public TransportListener listen(TransportAddress address, PortOptions options, List<PollGroup> pollGroups,
                                    QueueHandlerFactory handlers) throws IOException {
        if (closed) {
            throw new IllegalStateException("NVMe/RDMA transport is closed");
        }
        if (address.type() != TransportType.RDMA) {
            throw new IllegalArgumentException("not an RDMA address: " + address);
        }
        if (pollGroups == null || pollGroups.isEmpty()) {
            throw new IllegalArgumentException("listen on " + address + " needs at least one poll group");
        }
        List<RdmaPollGroup> rdmaGroups = new ArrayList<>();
        for (PollGroup g : pollGroups) {
            if (!(g instanceof RdmaPollGroup) || !groups.containsKey(g)) {
                throw new IllegalArgumentException("poll group " + g + " was not created by this transport");
            }
            RdmaPollGroup group = (RdmaPollGroup) g;
            int poolMax = group.pool().maxBufferSize();
            if (poolMax < options.maxDataTransferSize()) {
                throw new IllegalArgumentException("buffer pool of " + group + " serves at most " + poolMax
                    + " bytes, less than the port's max data transfer " + options.maxDataTransferSize());
            }
            rdmaGroups.add(group);
        }
        CmEventChannel channel = CmEventChannel.create();
        try {
            CmId id = channel.createId(0);
            InetAddress ip = InetAddress.getByName(address.traddr()); // an IP literal: parsed, never looked up
            id.bind(new InetSocketAddress(ip, address.port()));
            id.listen(BACKLOG);
            InetSocketAddress local = id.localAddress();
            int port = local != null ? local.getPort() : address.port();
            RdmaListener listener = new RdmaListener(this, channel, id, address.withPort(port), options, rdmaGroups,
                handlers);
            listener.prepareDevices();
            listeners.add(listener);
            listener.start();
            return listener;
        } catch (NativeIoException | RuntimeException e) {
            channel.close();
            throw new IOException("cannot listen on " + address + ": " + e.getMessage(), e);
        }
    }

    void removeListener(RdmaListener listener) {
        listeners.remove(listener);
    }

    /** Stops every listener and its CM event thread (poll groups, closed by their reactors, own the queues). */
    @Override
    public void close() {
        closed = true;
        for (RdmaListener listener : listeners) {
            listener.close();
            listener.shutdown();
        }
    }
}
