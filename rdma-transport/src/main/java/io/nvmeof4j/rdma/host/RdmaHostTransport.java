package io.nvmeof4j.rdma.host;

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
import io.nvmeof4j.jni.rdma.Rdma;
import io.nvmeof4j.jni.rdma.VerbsContext;
import io.nvmeof4j.protocol.spi.TransportAddress;
import io.nvmeof4j.protocol.spi.TransportType;
import io.nvmeof4j.protocol.spi.host.HostPollGroup;
import io.nvmeof4j.protocol.spi.host.HostQueue;
import io.nvmeof4j.protocol.spi.host.HostQueueListener;
import io.nvmeof4j.protocol.spi.host.HostQueueOptions;
import io.nvmeof4j.protocol.spi.host.HostTransport;
import io.nvmeof4j.protocol.spi.host.TransportConnectException;
import io.nvmeof4j.rdma.CmConnectReject;
import io.nvmeof4j.rdma.CmConnectRequest;
import io.nvmeof4j.rdma.DeviceWaiter;
import io.nvmeof4j.rdma.JniQueuePair;
import io.nvmeof4j.rdma.MemoryKeys;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * NVMe-oF/RDMA in the host role: {@link #connect} is the Linux host's {@code nvme_rdma_alloc_queue} +
 * {@code nvme_rdma_cm_handler}: resolve address and route (3 s each, bounded by the connect timeout), create the
 * completion queue and RC queue pair with the poll group's resources on the device the route goes through (made on
 * first use, {@link HostDevices}: one host reactor may reach its controllers through several devices), post HRQSIZE
 * receives, connect with the CM request
 * private data (QID, HRQSIZE, HSQSIZE, CNTLID) and responder_resources = the device's max_qp_rd_atom,
 * initiator_depth 0, retry 7, RNR retry 7, and wait for ESTABLISHED. A reject is reported with the controller's
 * status ({@link CmConnectReject}). Every wait is bounded and every failure names the peer and the step.
 * <p>One CM event channel serves all queues of this transport; a thread hands each event to the connect waiting for
 * it or, once the queue is up, tears the queue down on DISCONNECTED and the like.
 */
public final class RdmaHostTransport implements HostTransport {
    private static final Logger LOG = LoggerFactory.getLogger(RdmaHostTransport.class);
    /** nvme-rdma's NVME_RDMA_CM_TIMEOUT_MS for address and route resolution. */
    static final int RESOLVE_TIMEOUT_MILLIS = 3000;
    public static final String STEP_RESOLVE_ROUTE = "resolve route";
    public static final String STEP_CM_CONNECT = "RDMA CM connect";
    public static final String STEP_QUEUE_PAIR = "create queue pair";
    private static final long EVENT_WAIT_NANOS = TimeUnit.MILLISECONDS.toNanos(200);

    private final CmEventChannel channel;
    private final Thread eventThread;
    private final Map<CmId, BlockingQueue<CmEvent>> connecting = new ConcurrentHashMap<>();
    private final Map<CmId, RdmaHostQueue> live = new ConcurrentHashMap<>();
    private volatile boolean closed;

    /** @throws UnsupportedOperationException when RDMA is unavailable here; the cause says why */
    public RdmaHostTransport() {
        Throwable cause = Rdma.unavailabilityCause();
        if (cause != null) {
            throw new UnsupportedOperationException("RDMA is unavailable: " + cause.getMessage(), cause);
        }
        try {
            channel = CmEventChannel.create();
        } catch (NativeIoException e) {
            throw new UnsupportedOperationException("RDMA CM event channel: " + e.getMessage(), e);
        }
        eventThread = new Thread(this::eventLoop, "nvmeof-rdma-host-cm");
        eventThread.setDaemon(true);
        eventThread.start();
    }

    @Override
    public TransportType type() {
        return TransportType.RDMA;
    }

    @Override
    public RdmaHostPollGroup createPollGroup() {
        if (closed) {
            throw new IllegalStateException("NVMe/RDMA host transport is closed");
        }
        return new RdmaHostPollGroup(new DeviceWaiter());
    }

    /** Opens an admin queue (QID 0, CNTLID 0xFFFF in the CM request). */
    @Override
    public HostQueue connect(HostPollGroup group, TransportAddress address, HostQueueOptions options,
                             HostQueueListener listener) throws IOException {
        return connect(group, address, options, 0, 0xFFFF, listener);
    }

    /**
     * Opens queue {@code queueId} of controller {@code controllerId}: the RDMA CM request carries both (the QID
     * must equal the one the following Fabrics Connect names).
     */
    public HostQueue connect(HostPollGroup group, TransportAddress address, HostQueueOptions options, int queueId,
                             int controllerId, HostQueueListener listener) throws IOException {
        if (!(group instanceof RdmaHostPollGroup)) {
            throw new IllegalArgumentException("poll group " + group + " is not an NVMe/RDMA host poll group");
        }
        if (address.type() != TransportType.RDMA) {
            throw new IllegalArgumentException("not an RDMA address: " + address);
        }
        if (closed) {
            throw new IllegalStateException("NVMe/RDMA host transport is closed");
        }
        RdmaHostPollGroup rdmaGroup = (RdmaHostPollGroup) group;
        String where = address.toString();
        long deadline = System.nanoTime() + options.connectTimeout().toNanos();
        InetSocketAddress remote;
        try {
            remote = new InetSocketAddress(address.inetAddress(), address.port());
        } catch (IOException | RuntimeException e) {
            throw new TransportConnectException(where, TransportConnectException.STEP_RESOLVE,
                "'" + address.traddr() + "' is not an IP address (host names are not resolved)", e);
        }
        int depth = options.depth();
        // The Linux host never sends in-capsule data on the admin queue (nvmet's admin receives hold just the SQE).
        int inCapsule = queueId == 0 ? 0 : options.inCapsuleDataSize();
        BlockingQueue<CmEvent> events = new LinkedBlockingQueue<>();
        CmId id;
        try {
            id = channel.createId(0);
        } catch (NativeIoException e) {
            throw new TransportConnectException(where, TransportConnectException.STEP_RESOLVE, e.getMessage(), e);
        }
        connecting.put(id, events);
        CompletionQueue cq = null;
        MemoryRegion mr = null;
        JniQueuePair verbs = null;
        boolean handedOver = false;
        try {
            id.resolveAddress(null, remote, millis(deadline, RESOLVE_TIMEOUT_MILLIS));
            await(events, id, CmEventType.ADDR_RESOLVED, deadline, where, TransportConnectException.STEP_RESOLVE);
            VerbsContext context = id.verbsContext();
            HostDevice device = device(rdmaGroup, context, where);
            id.resolveRoute(millis(deadline, RESOLVE_TIMEOUT_MILLIS));
            await(events, id, CmEventType.ROUTE_RESOLVED, deadline, where, STEP_RESOLVE_ROUTE);

            int receives = depth; // HRQSIZE: a response per command slot
            int sendWr = depth + 1;
            cq = device.pd.context().createCompletionQueue(sendWr + receives, device.channel, 0);
            QueuePair qp = id.createQueuePair(device.pd, cq, cq, new QueuePairCapabilities(sendWr, receives, 1, 1, 0));
            ByteBuffer memory = ByteBuffer.allocateDirect(RdmaHostQueue.memoryBytes(depth, inCapsule, receives));
            mr = device.pd.registerMemory(memory, MemoryRegion.LOCAL_WRITE);
            verbs = new JniQueuePair(id, qp, cq, RdmaHostPollGroup.POLL_BATCH);
            MemoryRegion region = mr;
            String peer = describe(id, remote);
            RdmaHostQueue queue = new RdmaHostQueue(rdmaGroup, device.memory, verbs, address, peer, depth, inCapsule,
                receives, memory, new MemoryKeys(region.address(), region.length(), region.lkey(), region.rkey()),
                listener, () -> {
                    live.remove(id);
                    region.close();
                });
            int rc = queue.postInitialReceives();
            if (rc < 0) {
                throw new TransportConnectException(where, STEP_QUEUE_PAIR, "posting receives: errno " + -rc, null);
            }
            int responderResources = Math.max(1, Math.min(255, device.attributes.maxQpRdAtom()));
            id.connect(new ConnectionParameters(CmConnectRequest.encode(queueId, depth, receives, controllerId),
                responderResources, 0, 1, 7, 7));
            await(events, id, CmEventType.ESTABLISHED, deadline, where, STEP_CM_CONNECT);
            live.put(id, queue);
            connecting.remove(id);
            register(rdmaGroup, queue, deadline, where);
            handedOver = true;
            LOG.debug("NVMe/RDMA host {}: queue {} established ({} slots, in-capsule {})", peer, queueId, depth,
                inCapsule);
            return queue;
        } catch (NativeIoException e) {
            throw new TransportConnectException(where, STEP_QUEUE_PAIR, e.getMessage(), e);
        } finally {
            connecting.remove(id);
            if (!handedOver) {
                live.remove(id);
                if (verbs != null) {
                    verbs.destroy();
                } else {
                    id.close();
                    if (cq != null) {
                        cq.close();
                    }
                }
                if (mr != null) {
                    mr.close();
                }
            }
        }
    }

    private static HostDevice device(RdmaHostPollGroup group, VerbsContext context, String where)
        throws TransportConnectException {
        HostDevices devices;
        synchronized (group) {
            if (!(group.resources instanceof HostDevices)) {
                group.resources = new HostDevices((DeviceWaiter) group.waiter());
            }
            devices = (HostDevices) group.resources;
        }
        try {
            return devices.device(context);
        } catch (NativeIoException | RuntimeException e) {
            throw new TransportConnectException(where, STEP_QUEUE_PAIR, "device " + context.deviceName()
                + ": " + e.getMessage(), e);
        }
    }

    private static int millis(long deadline, int cap) {
        long left = (deadline - System.nanoTime()) / 1_000_000;
        return (int) Math.max(1, Math.min(cap, left));
    }

    private static void await(BlockingQueue<CmEvent> events, CmId id, CmEventType expected, long deadline,
                              String where, String step) throws TransportConnectException {
        while (true) {
            long left = deadline - System.nanoTime();
            CmEvent event;
            try {
                event = left <= 0 ? null : events.poll(left, TimeUnit.NANOSECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new TransportConnectException(where, step, "interrupted", e);
            }
            if (event == null) {
                throw new TransportConnectException(where, step, "no " + expected + " within the connect timeout",
                    null);
            }
            if (event.type() == expected) {
                return;
            }
            throw new TransportConnectException(where, step, failure(event), null);
        }
    }

    /** What an unexpected CM event during connect means, with the controller's reject status when it sent one. */
    static String failure(CmEvent event) {
        switch (event.type()) {
            case REJECTED: {
                byte[] pd = event.privateData();
                if (pd.length >= CmConnectReject.LENGTH) {
                    CmConnectReject rej = new CmConnectReject().wrap(ByteBuffer.wrap(pd), 0);
                    return "the controller rejected the queue: " + CmConnectReject.statusName(rej.status())
                        + " (STS " + rej.status() + ", CM reason " + event.status() + ")";
                }
                return "rejected (CM reason " + event.status() + (event.status() == 8
                    ? ": nobody listens there" : "") + ")";
            }
            case ADDR_ERROR:
                return "address resolution failed (errno " + -event.status() + "; is an RDMA device up on a route to "
                    + "it?)";
            case ROUTE_ERROR:
                return "route resolution failed (errno " + -event.status() + ")";
            case UNREACHABLE:
                return "the controller is unreachable (errno " + -event.status() + ")";
            case CONNECT_ERROR:
                return "connect error (errno " + -event.status() + ")";
            default:
                return "unexpected RDMA CM event " + event.type() + " (status " + event.status() + ")";
        }
    }

    /**
     * Hands the established queue to its poll group's thread, waiting at most until {@code deadline}. The hand-over has
     * one winner: the group's task registers the queue only if the caller still waits ({@code registered} completes
     * first), and a caller that gives up (timeout, interrupt) does so only if the task has not registered it yet. So a
     * timed-out queue is never touched by the group, and the caller's clean-up (destroy the queue pair, deregister the
     * memory) cannot pull resources from under a queue the group polls.
     */
    static void register(RdmaHostPollGroup group, RdmaHostQueue queue, long deadline, String where)
        throws TransportConnectException {
        String step = TransportConnectException.STEP_REGISTER;
        if (group.inPollGroupThread()) {
            group.register(queue);
            return;
        }
        CompletableFuture<Void> registered = new CompletableFuture<>();
        try {
            group.execute(() -> {
                if (registered.complete(null)) {
                    group.register(queue);
                }
            });
        } catch (IllegalStateException e) {
            throw new TransportConnectException(where, step, e.getMessage(), e);
        }
        try {
            registered.get(Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
        } catch (TimeoutException e) {
            if (registered.completeExceptionally(e)) {
                throw new TransportConnectException(where, step, "poll group did not take the queue within the "
                    + "connect timeout (is its reactor thread running?)", e);
            }
            // The group took it just now: it is the group's queue.
        } catch (ExecutionException e) {
            throw new TransportConnectException(where, step, String.valueOf(e.getCause()), e.getCause());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            if (registered.completeExceptionally(e)) {
                throw new TransportConnectException(where, step, "interrupted", e);
            }
        }
    }

    private void eventLoop() {
        while (!closed) {
            CmEvent event;
            try {
                event = channel.nextEvent(EVENT_WAIT_NANOS);
            } catch (NativeIoException | RuntimeException e) {
                if (closed) {
                    break;
                }
                LOG.warn("NVMe/RDMA host: waiting for CM events failed: {}", e.getMessage());
                try {
                    Thread.sleep(100);
                } catch (InterruptedException ie) {
                    break;
                }
                continue;
            }
            if (event == null) {
                continue;
            }
            BlockingQueue<CmEvent> waiting = connecting.get(event.id());
            if (waiting != null) {
                waiting.add(event);
                continue;
            }
            RdmaHostQueue queue = live.get(event.id());
            if (queue == null) {
                continue;
            }
            switch (event.type()) {
                case DISCONNECTED:
                case TIMEWAIT_EXIT:
                case DEVICE_REMOVAL:
                case ADDR_CHANGE:
                case CONNECT_ERROR:
                case UNREACHABLE:
                    queue.close(event.type() == CmEventType.DISCONNECTED ? "the controller disconnected"
                        : "RDMA CM " + event.type());
                    break;
                default:
                    break;
            }
        }
    }

    private static String describe(CmId id, InetSocketAddress remote) {
        InetSocketAddress local = id.localAddress();
        String r = remote.getAddress().getHostAddress() + ":" + remote.getPort();
        return local == null ? r : r + " from " + local.getAddress().getHostAddress() + ":" + local.getPort();
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        channel.wakeup();
        try {
            eventThread.join(5_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        if (eventThread.isAlive()) {
            // It may be inside a CM call on an id the channel close would destroy: leak rather than free under it.
            LOG.warn("NVMe/RDMA host: CM event thread did not stop within 5 s; its event channel is left open");
            return;
        }
        channel.close();
    }
}
