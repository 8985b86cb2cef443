package io.nvmeof4j.rdma;

import io.nvmeof4j.jni.NativeIoException;
import io.nvmeof4j.jni.rdma.CmEvent;
import io.nvmeof4j.jni.rdma.CmEventChannel;
import io.nvmeof4j.jni.rdma.CmEventType;
import io.nvmeof4j.jni.rdma.CmId;
import io.nvmeof4j.jni.rdma.CompletionQueue;
import io.nvmeof4j.jni.rdma.ConnectionParameters;
import io.nvmeof4j.jni.rdma.MemoryRegion;
import io.nvmeof4j.jni.rdma.QueuePair;
import io.nvmeof4j.jni.rdma.QueuePairCapabilities;
import io.nvmeof4j.jni.rdma.VerbsContext;
import io.nvmeof4j.protocol.log.RateLimitedLog;
import io.nvmeof4j.protocol.spi.AddressFamily;
import io.nvmeof4j.protocol.spi.ConnectionLimits;
import io.nvmeof4j.protocol.spi.PendingConnections;
import io.nvmeof4j.protocol.spi.PortOptions;
import io.nvmeof4j.protocol.spi.QueueHandlerFactory;
import io.nvmeof4j.protocol.spi.TransportAddress;
import io.nvmeof4j.protocol.spi.TransportType;
import io.nvmeof4j.protocol.spi.transport.AbstractTransportListener;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A listening NVMe-oF/RDMA port: a CM id bound and listening on its own event channel, and a thread that handles
 * that channel's events (nvmet_rdma_cm_handler's job), so no reactor ever waits on the CM.
 * <ul>
 *   <li>CONNECT_REQUEST: the private data is checked ({@link QueueSizing#check}: length, RECFMT, QID, HSQSIZE,
 *       HRQSIZE, IRD/ORD) and refused with a REJ carrying the status; else the next poll group (round-robin) gets a
 *       completion queue, an RC queue pair and the queue's registered memory, every receive is posted, and the
 *       request is accepted with CRQSIZE and initiator_depth = min(host responder resources, device
 *       max_qp_init_rd_atom). A failure to allocate is refused with "no resources".</li>
 *   <li>ESTABLISHED: the queue starts being polled on its group's reactor (responses may only be posted now).</li>
 *   <li>DISCONNECTED, TIMEWAIT_EXIT, DEVICE_REMOVAL, ADDR_CHANGE and connect errors: the queue is torn down on its
 *       reactor.</li>
 * </ul>
 * Closing the listener destroys the listening id (no new connections); the thread keeps serving the events of the
 * queues already accepted until the transport closes.
 * <p>Pre-Connect limits ({@link ConnectionLimits}): a queue is pending from its connect request until its Fabrics
 * Connect. A peer address at its limit has the request refused with REJ status 6 (no resources) before anything is
 * allocated for it; at the port's limit the oldest pending queue is disconnected to make room; a queue still
 * pending after the connect timeout is disconnected (it was accepted already, so there is nothing left to reject).
 * While a queue is pending the event thread wakes at least every 200 ms and checks the pending queues then; with none
 * pending it sleeps until an event or the transport's shutdown ({@link CmEventChannel#wakeup()}), 10 s at most.
 * Refusals are counted ({@link QueueHandlerFactory#onConnectionRefused}) and logged rate-limited per peer address.
 */
final class RdmaListener extends AbstractTransportListener {
    private static final Logger LOG = LoggerFactory.getLogger(RdmaListener.class);
    /** Rejects and refusals: one line per peer address a second. */
    private static final RateLimitedLog PEER_LOG = new RateLimitedLog(LOG);
    private static final long JOIN_TIMEOUT_MILLIS = 5_000;

    private final RdmaControllerTransport transport;
    private final CmEventChannel channel;
    private final CmId listenId;
    private final List<RdmaPollGroup> groups;
    private final Thread thread;
    private final Map<CmId, RdmaControllerQueue> queues = new ConcurrentHashMap<>();
    private final PendingQueues pending;
    private final AtomicBoolean closed = new AtomicBoolean();
    private volatile boolean running = true;
    private int nextGroup;

    RdmaListener(RdmaControllerTransport transport, CmEventChannel channel, CmId listenId, TransportAddress address,
                 PortOptions options, List<RdmaPollGroup> groups, QueueHandlerFactory handlers) {
        super(address, options, handlers, PEER_LOG);
        this.transport = transport;
        this.channel = channel;
        this.listenId = listenId;
        this.groups = List.copyOf(groups);
        this.pending = new PendingQueues(new PendingConnections(options.connectionLimits()));
        this.thread = new Thread(this::eventLoop, "nvmeof-rdma-cm-" + address.trsvcid());
        this.thread.setDaemon(true);
    }

    /** When bound to a device's address, gives every group its device resources now rather than on first connect. */
    void prepareDevices() {
        VerbsContext context;
        try {
            context = listenId.verbsContext();
        } catch (NativeIoException e) {
            return; // a wildcard address: the device is known per connection
        }
        for (RdmaPollGroup group : groups) {
            try {
                transport.devices(group).device(context);
            } catch (NativeIoException | RuntimeException e) {
                LOG.warn("NVMe/RDMA {}: cannot prepare device {} for {}: {}", address, context.deviceName(), group,
                    e.getMessage());
            }
        }
    }

    void start() {
        thread.start();
        LOG.info("NVMe/RDMA listening on {}", address);
    }

    int queueCount() {
        return queues.size();
    }

    /** Queues of this port that have not completed Connect (a snapshot). */
    int pendingCount() {
        return pending.count();
    }

    private void eventLoop() {
        while (running) {
            CmEvent event;
            try {
                event = channel.nextEvent(pending.eventWaitNanos());
            } catch (NativeIoException | RuntimeException e) {
                if (!running) {
                    break;
                }
                PEER_LOG.warnFrom(this, "NVMe/RDMA {}: waiting for CM events failed: {}", address, e);
                sleepQuietly();
                continue;
            }
            if (event != null) {
                try {
                    onEvent(event);
                } catch (RuntimeException | LinkageError | OutOfMemoryError e) {
                    LOG.error("NVMe/RDMA {}: handling {} failed", address, event, e);
                }
            }
            try {
                pending.sweep(System.nanoTime());
            } catch (RuntimeException e) {
                LOG.error("NVMe/RDMA {}: checking pending queues failed", address, e);
            }
        }
    }

    private static void sleepQuietly() {
        try {
            Thread.sleep(100);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private void onEvent(CmEvent event) {
        CmEventType type = event.type();
        if (type == CmEventType.CONNECT_REQUEST) {
            onConnectRequest(event);
            return;
        }
        CmId id = event.id();
        if (id == listenId) {
            LOG.warn("NVMe/RDMA {}: listener event {} (status {})", address, type, event.status());
            return;
        }
        RdmaControllerQueue queue = queues.get(id);
        if (queue == null) {
            LOG.debug("NVMe/RDMA {}: {} for a queue already gone", address, type);
            return;
        }
        switch (type) {
            case ESTABLISHED:
                queue.group.execute(queue::onEstablished);
                break;
            case DISCONNECTED:
                queue.disconnect("host disconnected");
                break;
            case TIMEWAIT_EXIT:
            case DEVICE_REMOVAL:
            case ADDR_CHANGE:
            case REJECTED:
            case UNREACHABLE:
            case CONNECT_ERROR:
                queue.disconnect("RDMA CM " + type + " (status " + event.status() + ")");
                break;
            default:
                LOG.debug("NVMe/RDMA {}: ignoring {} on {}", address, type, id.peer());
        }
    }

    private void onConnectRequest(CmEvent event) {
        CmId id = event.id();
        String peer = id.peer();
        if (closed.get()) {
            reject(id, peer, CmConnectReject.STS_NO_RESOURCES, "the port is closing");
            return;
        }
        InetSocketAddress peerSocket = id.peerAddress();
        InetAddress peerAddress = peerSocket != null && peerSocket.getAddress() != null ? peerSocket.getAddress()
            : InetAddress.getLoopbackAddress(); // unknown: all such requests share one budget
        pending.sweep(System.nanoTime());
        PendingConnections.Entry entry = pending.admit(peerAddress, System.nanoTime());
        if (entry == null) {
            try {
                id.reject(CmConnectReject.encode(CmConnectReject.STS_NO_RESOURCES));
            } catch (NativeIoException | RuntimeException e) {
                LOG.debug("NVMe/RDMA {}: rdma_reject for {} failed: {}", address, peer, e.getMessage());
            }
            id.close();
            refused(peerAddress, peer, PendingConnections.Refusal.HOST_LIMIT);
            return;
        }
        boolean accepted = false;
        try {
            accepted = setUpQueue(event, id, peer, peerAddress, entry);
        } finally {
            if (!accepted) {
                entry.release();
            }
        }
    }

    /** Allocates, accepts and tracks the queue of a connect request; false when it was rejected. */
    private boolean setUpQueue(CmEvent event, CmId id, String peer, InetAddress peerAddress,
                               PendingConnections.Entry entry) {
        if (entry.refusal() != null) {
            reject(id, peer, CmConnectReject.STS_NO_RESOURCES, "evicted before it was set up");
            return false;
        }
        byte[] privateData = event.privateData();
        RdmaPollGroup group = groups.get(nextGroup);
        nextGroup = (nextGroup + 1) % groups.size();
        GroupDevices.Device device;
        try {
            device = transport.devices(group).device(id.verbsContext());
        } catch (NativeIoException | RuntimeException e) {
            reject(id, peer, CmConnectReject.STS_NO_RESOURCES, "device resources: " + e.getMessage());
            return false;
        }
        // The CM hands the passive side the request's values swapped to its own view: initiator_depth here is the
        // host's responder resources, which bound the RDMA READs we may have outstanding.
        int hostResponderResources = event.parameters().initiatorDepth();
        int deviceMax = device.attributes().maxQpInitRdAtom();
        int status = QueueSizing.check(privateData, options, hostResponderResources, deviceMax);
        if (status != 0) {
            reject(id, peer, status, "connect request " + describe(privateData) + ", host IRD "
                + hostResponderResources);
            return false;
        }
        QueueSizing sizing = QueueSizing.of(privateData, options, hostResponderResources, deviceMax);
        if (sizing.sendQueueSize() > device.attributes().maxQpWr() || sizing.completionQueueSize() > device
            .attributes().maxCqe()) {
            reject(id, peer, CmConnectReject.STS_NO_RESOURCES, "queue of " + sizing.sendQueueSize()
                + " send work requests / " + sizing.completionQueueSize() + " CQ entries exceeds device " + device.name());
            return false;
        }
        CompletionQueue cq = null;
        MemoryRegion memoryRegion = null;
        JniQueuePair verbs = null;
        try {
            VerbsContext context = device.pd().context();
            cq = context.createCompletionQueue(sizing.completionQueueSize(), device.channel(), 0);
            QueuePair qp = id.createQueuePair(device.pd(), cq, cq, new QueuePairCapabilities(sizing.sendQueueSize(),
                sizing.receiveQueueSize(), 1, 1, 0));
            ByteBuffer memory = ByteBuffer.allocateDirect(RdmaQueueMemory.memoryBytes(sizing));
            memoryRegion = device.pd().registerMemory(memory, MemoryRegion.LOCAL_WRITE);
            verbs = new JniQueuePair(id, qp, cq, RdmaPollGroup.POLL_BATCH);
            MemoryRegion mr = memoryRegion;
            RdmaControllerQueue queue = new RdmaControllerQueue(group, verbs, sizing, options, handlers,
                localAddress(id), peer, memory, new MemoryKeys(mr.address(), mr.length(), mr.lkey(), mr.rkey()),
                device.poolKeys(), () -> {
                    mr.close();
                    queues.remove(id);
                });
            int rc = queue.postInitialReceives();
            if (rc < 0) {
                throw new NativeIoException("ibv_post_recv", -rc, "initial receives of " + peer);
            }
            queues.put(id, queue);
            id.accept(new ConnectionParameters(sizing.acceptPrivateData(), 0, sizing.initiatorDepth(), 1, 7, 7));
            group.adopt(queue); // queued before this thread hands the group the queue's ESTABLISHED
            pending.track(queue, entry, () -> !queues.containsKey(id), why -> {
                refused(peerAddress, peer, why);
                queue.disconnect(why.tag());
            });
            LOG.debug("NVMe/RDMA {}: accepted queue {} from {} (RQ {}, SQ {}, CQ {}, in-capsule {}, ORD {})", address,
                sizing.queueId(), peer, sizing.receiveQueueSize(), sizing.sendQueueSize(),
                sizing.completionQueueSize(), sizing.inCapsuleDataSize(), sizing.initiatorDepth());
            return true;
        } catch (NativeIoException | RuntimeException | OutOfMemoryError e) {
            // OutOfMemoryError too: direct memory for the queue's buffers can run out with many hosts connected; the
            // host gets "no resources" and this CM thread keeps serving the port.
            queues.remove(id);
            PEER_LOG.warnFrom(peerAddress, "NVMe/RDMA {}: cannot set up queue {} for {}: {}", address,
                sizing.queueId(), peer, e);
            try {
                id.reject(CmConnectReject.encode(CmConnectReject.STS_NO_RESOURCES));
            } catch (NativeIoException | RuntimeException ignored) {
                // the id goes away below anyway
            }
            if (verbs != null) {
                verbs.destroy();
            } else {
                id.close();
                if (cq != null) {
                    cq.close();
                }
            }
            if (memoryRegion != null) {
                memoryRegion.close();
            }
            return false;
        }
    }

    private void reject(CmId id, String peer, int status, String why) {
        InetSocketAddress peerSocket = id.peerAddress();
        PEER_LOG.warnFrom(peerSocket == null ? null : peerSocket.getAddress(), "NVMe/RDMA {}: rejecting {}: {} ({})",
            address, peer, CmConnectReject.statusName(status), why);
        try {
            id.reject(CmConnectReject.encode(status));
        } catch (NativeIoException | RuntimeException e) {
            LOG.debug("NVMe/RDMA {}: rdma_reject for {} failed: {}", address, peer, e.getMessage());
        }
        id.close();
    }

    private static String describe(byte[] privateData) {
        if (privateData == null || privateData.length < CmConnectRequest.LENGTH) {
            return "with " + (privateData == null ? 0 : privateData.length) + " bytes of private data";
        }
        return new CmConnectRequest().wrap(ByteBuffer.wrap(privateData), 0).toString();
    }

    private TransportAddress localAddress(CmId id) {
        InetSocketAddress local = id.localAddress();
        if (local == null) {
            return address;
        }
        String ip = local.getAddress().getHostAddress();
        int scope = ip.indexOf('%');
        return new TransportAddress(TransportType.RDMA, local.getAddress() instanceof Inet6Address
            ? AddressFamily.IPV6 : AddressFamily.IPV4, scope < 0 ? ip : ip.substring(0, scope), address.trsvcid());
    }

    /** Stops accepting: the listening id goes; queues already accepted stay up. Idempotent. */
    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        listenId.close();
        LOG.info("NVMe/RDMA stopped listening on {}", address);
    }

    /** Stops the event thread and closes the channel with whatever ids are left (transport close). */
    void shutdown() {
        running = false;
        channel.wakeup();
        if (!join(thread, JOIN_TIMEOUT_MILLIS, LOG)) {
            // It may be inside a CM call on an id the channel close would destroy: leak rather than free under it.
            LOG.warn("NVMe/RDMA {}: its CM event channel is left open", address);
            transport.removeListener(this);
            return;
        }
        for (RdmaControllerQueue queue : queues.values()) {
            queue.disconnect("transport closed");
        }
        channel.close();
        transport.removeListener(this);
    }

    @Override
    public String toString() {
        return "RdmaListener[" + address + "]";
    }
}
