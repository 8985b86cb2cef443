package io.nvmeof4j.initiator;

import io.nvmeof4j.protocol.admin.ActiveNamespaceIdList;
import io.nvmeof4j.protocol.admin.AdminOpcode;
import io.nvmeof4j.protocol.admin.AsyncEvent;
import io.nvmeof4j.protocol.admin.ChangedNamespaceList;
import io.nvmeof4j.protocol.admin.FeatureIdentifier;
import io.nvmeof4j.protocol.admin.IdentifyCommand;
import io.nvmeof4j.protocol.admin.IdentifyNamespace;
import io.nvmeof4j.protocol.admin.LogPageIdentifier;
import io.nvmeof4j.protocol.admin.NamespaceIdDescriptorList;
import io.nvmeof4j.protocol.auth.Dhchap;
import io.nvmeof4j.protocol.auth.GeneratedPsk;
import io.nvmeof4j.protocol.auth.HostAuthentication;
import io.nvmeof4j.protocol.command.NvmeStatus;
import io.nvmeof4j.protocol.fabrics.ControllerRegisters;
import io.nvmeof4j.protocol.spi.TransportAddress;
import io.nvmeof4j.protocol.spi.host.HostQueue;
import io.nvmeof4j.protocol.spi.TransportType;
import io.nvmeof4j.protocol.spi.host.HostQueueOptions;
import io.nvmeof4j.protocol.spi.host.HostStatus;
import io.nvmeof4j.protocol.spi.host.HostTlsPsk;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * A connected NVMe controller: its admin queue and I/O queues, keep-alive, asynchronous events, and recovery.
 *
 * <h2>Bring-up</h2>
 * As the Linux host (wire reference 2.5): the admin queue ({@link AdminConnection}), Set Features Number of Queues,
 * then each I/O queue on its own connection with a Connect carrying the CNTLID and SQSIZE = min(queue depth,
 * MQES + 1, MAXCMD) − 1; Set Features Async Event Configuration and one Asynchronous Event Request when the
 * controller announces namespace notices (OAES bit 8); the namespace scan (Identify CNS 02h, then per NSID CNS 00h
 * and, from NVMe 1.3, CNS 03h); Keep Alive every KATO/2.
 *
 * <h2>Recovery</h2>
 * Any queue closing, a command timing out or a Keep Alive failing starts error recovery, as in the Linux host: the
 * state becomes {@link ControllerState#RECONNECTING}, every queue is torn down (I/O in flight comes back with a path
 * error and is requeued, unless it timed out), and the whole bring-up is retried after {@code reconnectDelay},
 * doubling up to {@code maxReconnectDelay}, until it succeeds (a new CNTLID; the requeued and newly submitted I/O
 * then flows) or the controller-loss timeout passes ({@link ControllerState#LOST}: waiting and new I/O fail with a
 * message naming the controller and the last error). A Connect refused with DNR ends recovery at once.
 */
public final class NvmeofController implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(NvmeofController.class);
    private static final int MAX_IDENTIFIED_NAMESPACES = ActiveNamespaceIdList.MAX_ENTRIES;
    /** The Linux RDMA host never opens queues deeper than this (NVME_RDMA_MAX_QUEUE_SIZE). */
    static final int RDMA_MAX_QUEUE_SIZE = 256;
    /** OAES / Async Event Configuration bit 11: ANA change notices. */
    static final int AEC_ANA_CHANGE = 1 << 11;

    private final NvmeofHost host;
    private final TransportAddress address;
    private final String subsystemNqn;
    private final ConnectOptions options;
    private final String peer;
    private final Object lock = new Object();
    private final List<NamespaceListener> listeners = new CopyOnWriteArrayList<>();

    private volatile ControllerState state = ControllerState.RECONNECTING;
    private volatile String unavailableReason;
    private volatile AdminConnection admin;
    /** The I/O queues' transport queues of the current association (for the post-bring-up check). */
    private volatile List<HostQueue> currentQueues = List.of();
    private volatile long maxTransferBytes = 1 << 20;
    private volatile List<NvmeofNamespace> namespaces = List.of();
    private IoQueue[] ioQueues = new IoQueue[0];
    private int queueSize;
    private ScheduledFuture<?> keepAliveTask;
    /** The current admin connection's, or null (no KATO, or not yet live). */
    private volatile KeepAliveSender keepAliveSender;
    private long recoveryStartNanos;
    private int reconnectAttempts;
    private volatile String lastError;
    private volatile int reconnects;
    /** Set by a {@link MultipathController} that owns this controller as one of its paths. */
    private volatile PathEvents pathEvents;

    /** What a multipath controller hears from one of its paths (control threads). */
    interface PathEvents {
        /** The state changed (LIVE after a reconnect, RECONNECTING, LOST, CLOSED). */
        void onStateChanged(NvmeofController path);

        /** An ANA change notice arrived: read the ANA log (with RAE 0, which re-arms the event). */
        void onAnaChange(NvmeofController path);
    }

    private NvmeofController(NvmeofHost host, TransportAddress address, String subsystemNqn, ConnectOptions options) {
        this.host = host;
        this.address = address;
        this.subsystemNqn = subsystemNqn;
        this.options = options;
        this.peer = address + " (" + subsystemNqn + ")";
    }

    static NvmeofController connect(NvmeofHost host, TransportAddress address, String subsystemNqn,
                                    ConnectOptions options) throws IOException {
        NvmeofController controller = new NvmeofController(host, address, subsystemNqn, options);
        try {
            controller.bringUp(true);
        } catch (IOException | RuntimeException e) {
            synchronized (controller.lock) {
                controller.state = ControllerState.CLOSED;
            }
            controller.releaseQueues();
            throw e;
        }
        synchronized (controller.lock) {
            controller.state = ControllerState.LIVE;
        }
        controller.afterBringUp(false);
        return controller;
    }

    // ---- public API ----------------------------------------------------------------------------------------------

    public TransportAddress address() {
        return address;
    }

    public String subsystemNqn() {
        return subsystemNqn;
    }

    public ConnectOptions options() {
        return options;
    }

    public ControllerState state() {
        return state;
    }

    /** The controller id of the current association (it changes on every reconnect). */
    public int controllerId() {
        AdminConnection a = admin;
        return a == null ? -1 : a.controllerId;
    }

    /**
     * Re-authenticates the admin queue with DH-HMAC-CHAP, a re-authentication the host requests (NVMe Base 2.1
     * 8.3.5; the Linux host runs one when its dhchap secret is rewritten through sysfs). Under secure channel
     * concatenation the Negotiate carries SC_C REPLACETLSPSK, as the Linux host's does: the controller replaces the
     * PSK this association runs under, for its later connections; the queues already up keep their TLS sessions,
     * and a reconnect generates a new PSK anyway, so the host keeps none. Each step is bounded by the admin timeout.
     *
     * @throws NvmeofException naming the step and the reason when either side refuses (a Failure1 also ends the
     *                         controller on the target, and recovery follows)
     */
    public void reauthenticate() throws NvmeofException {
        AdminConnection a = liveAdmin("DH-HMAC-CHAP re-authentication");
        HostAuthentication.Result r = DhchapAuthenticator.authenticate(a.queue, peer, 0, options,
            host.identity().hostNqn().value(), subsystemNqn, options.adminTimeout(),
            options.secureChannelConcat() ? Dhchap.SC_C_REPLACETLSPSK : Dhchap.SC_C_NOSC);
        if (r.generatedPsk() != null) {
            r.generatedPsk().clear();
        }
    }

    /** Identify Controller as read at the last (re)connect. */
    public ControllerInfo identifyController() {
        AdminConnection a = admin;
        if (a == null) {
            throw new IllegalStateException("controller " + peer + " has not been identified");
        }
        return a.info;
    }

    /** NVMe version (the VS property). */
    public int version() {
        AdminConnection a = admin;
        return a == null ? 0 : a.version;
    }

    /** The active namespaces as of the last scan (connect, reconnect, or a namespace-change event). */
    public List<NvmeofNamespace> namespaces() {
        return namespaces;
    }

    /** The active namespace {@code nsid}, or null. */
    public NvmeofNamespace namespace(int nsid) {
        for (NvmeofNamespace ns : namespaces) {
            if (ns.nsid() == nsid) {
                return ns;
            }
        }
        return null;
    }

    /** Scans the namespaces again now (blocking) and returns the new list. */
    public List<NvmeofNamespace> rescanNamespaces() throws IOException {
        AdminConnection a = liveAdmin("namespace scan");
        List<NvmeofNamespace> scanned = scanNamespaces(a);
        namespaces = scanned;
        return scanned;
    }

    public void addNamespaceListener(NamespaceListener listener) {
        listeners.add(listener);
    }

    public void removeNamespaceListener(NamespaceListener listener) {
        listeners.remove(listener);
    }

    /** I/O queues in use (the controller may grant fewer than asked). */
    public int ioQueueCount() {
        return ioQueues.length;
    }

    /** Entries per I/O queue after clamping to MQES + 1 and MAXCMD. */
    public int ioQueueSize() {
        return queueSize;
    }

    /** Largest data transfer of one command (MDTS); bigger I/O is split. */
    public long maxTransferBytes() {
        return maxTransferBytes;
    }

    /** How many times recovery reconnected this controller. */
    public int reconnectCount() {
        return reconnects;
    }

    /** The host's meters, or null. */
    HostMetrics hostMetrics() {
        return host.metrics();
    }

    /** Where a log line or an error names this controller: {@code "tcp://127.0.0.1:4420 (nqn...)"}. */
    public String peer() {
        return peer;
    }

    void pathEvents(PathEvents events) {
        this.pathEvents = events;
    }

    private void notifyState() {
        PathEvents events = pathEvents;
        if (events != null) {
            try {
                events.onStateChanged(this);
            } catch (RuntimeException e) {
                LOG.warn("{}: multipath state handler failed", peer, e);
            }
        }
    }

    /** Get Log Page on the admin queue (control path; blocks up to the admin timeout). */
    ByteBuffer readLogPage(String step, int lid, int bytes, boolean retainEvent) throws NvmeofException {
        AdminConnection a = liveAdmin(step);
        ByteBuffer data = Commands.direct(bytes);
        a.getLogPage(step, lid, 0xFFFF_FFFF, data, bytes, 0, retainEvent);
        return data;
    }

    // ---- bring-up ------------------------------------------------------------------------------------------------

    private void bringUp(boolean first) throws IOException {
        // Secure channel concatenation: every (re)connect generates a new PSK first, as the Linux host revokes the
        // generated key when it resets a controller; it serves this bring-up's queues and is cleared after.
        GeneratedPsk generated = !options.secureChannelConcat() ? null : AdminConnection.generateTlsPsk(
            host.transport(address.type()), host.reactor(address.type(), 0).group, address, subsystemNqn,
            host.identity(), options);
        try {
            bringUp(first, generated);
        } finally {
            if (generated != null) {
                generated.clear();
            }
        }
    }

    private void bringUp(boolean first, GeneratedPsk generated) throws IOException {
        String hostNqn = host.identity().hostNqn().value();
        HostTlsPsk generatedTls = generated == null ? null : HostTlsPsk.generated(generated, hostNqn, subsystemNqn);
        AdminConnection a = AdminConnection.open(host.transport(address.type()), host.reactor(address.type(), 0).group,
            address, subsystemNqn, host.identity(), options, generatedTls,
            (q, reason) -> onAdminClosed(q, reason));
        if (a.replacedPsk != null) {
            generatedTls = HostTlsPsk.generated(a.replacedPsk, hostNqn, subsystemNqn);
        }
        List<HostQueue> opened = new ArrayList<>();
        try {
            ControllerInfo info = a.info;
            if (info.controllerType() != 0 && info.controllerType() != 1) {
                throw new NvmeofException(peer, "Identify Controller", NvmeofException.NO_STATUS,
                    "controller type " + info.controllerType() + " is not an I/O controller"
                        + (info.controllerType() == 2 ? " (a discovery controller: use discover)" : ""), null);
            }
            if (info.ioCommandCapsuleSize() < 4) {
                throw new NvmeofException(peer, "Identify Controller", NvmeofException.NO_STATUS,
                    "IOCCSZ " + info.ioCommandCapsuleSize() + " below 4 (a 64-byte command)", null);
            }
            int wanted = first ? options.ioQueues() : ioQueues.length;
            Cqe queues = a.setFeatures("Set Features (Number of Queues)", FeatureIdentifier.NUMBER_OF_QUEUES,
                (wanted - 1) | (wanted - 1) << 16);
            int granted = Math.min(queues.dw0() & 0xFFFF, queues.dw0() >>> 16) + 1;
            int count = Math.min(wanted, granted);
            if (!first && count < ioQueues.length) {
                throw new NvmeofException(peer, "Set Features (Number of Queues)", NvmeofException.NO_STATUS,
                    "the controller now grants " + granted + " I/O queues, " + ioQueues.length + " were in use",
                    null);
            }
            int size = Math.min(options.queueDepth(), ControllerRegisters.capMaxQueueEntries(a.capabilities));
            if (info.maxOutstandingCommands() > 0) {
                size = Math.min(size, info.maxOutstandingCommands());
            }
            if (address.type() == TransportType.RDMA) {
                size = Math.min(size, RDMA_MAX_QUEUE_SIZE); // the Linux host's NVME_RDMA_MAX_QUEUE_SIZE
            }
            if (first) {
                queueSize = size;
                maxTransferBytes = info.maxDataTransferBytes() == 0 ? 1L << 30 : info.maxDataTransferBytes();
                IoQueue[] created = new IoQueue[count];
                for (int qid = 1; qid <= count; qid++) {
                    HostReactor reactor = host.reactor(address.type(), qid - 1);
                    created[qid - 1] = new IoQueue(this, qid, reactor, options.maxOutstandingRequests(),
                        options.commandTimeout().toNanos());
                    reactor.addQueue(created[qid - 1]);
                }
                ioQueues = created;
            } else {
                size = Math.min(size, queueSize);
                maxTransferBytes = info.maxDataTransferBytes() == 0 ? 1L << 30 : info.maxDataTransferBytes();
            }
            for (IoQueue ioQueue : ioQueues) {
                String step = "Connect (I/O queue " + ioQueue.qid + ")";
                HostQueueOptions queueOptions = new HostQueueOptions(size, options.headerDigest(),
                    options.dataDigest(), info.inCapsuleDataSize(), options.connectTimeout());
                HostQueue q = AdminConnection.openTransport(host.transport(address.type()), ioQueue.reactor.group,
                    address, peer, generatedTls != null ? queueOptions.withTls(generatedTls)
                        : options.queueOptions(queueOptions, host.identity(), subsystemNqn), ioQueue.qid,
                    a.controllerId, ioQueue);
                opened.add(q);
                Cqe connect = AdminConnection.fabricsConnect(q, peer, step, ioQueue.qid, size, 0, a.controllerId,
                    subsystemNqn, host.identity(), options.disableSqFlowControl(), options.connectTimeout());
                AdminConnection.authenticateIfRequired(q, peer, ioQueue.qid, connect, options, subsystemNqn,
                    host.identity(), Dhchap.SC_C_NOSC);
            }
            if (first) {
                namespaces = scanNamespaces(a);
            }
            admin = a;
            currentQueues = List.copyOf(opened);
            for (int i = 0; i < ioQueues.length; i++) {
                IoQueue ioQueue = ioQueues[i];
                HostQueue q = opened.get(i);
                ioQueue.reactor.execute(() -> {
                    ioQueue.attach(q);
                    if (!q.isOpen()) {
                        onQueueClosed(ioQueue.qid, "I/O queue " + ioQueue.qid + " closed during bring-up");
                    }
                });
            }
        } catch (IOException | RuntimeException e) {
            for (HostQueue q : opened) {
                q.close("controller bring-up failed");
            }
            a.queue.close("controller bring-up failed: " + e.getMessage());
            throw e;
        } finally {
            if (a.replacedPsk != null) {
                a.replacedPsk.clear();
            }
        }
    }

    /** Keep-alive and asynchronous events, and after a reconnect a namespace rescan. */
    private void afterBringUp(boolean reconnected) {
        AdminConnection a = admin;
        // A queue that closed while the state was not yet LIVE could not start recovery: do it now.
        if (!a.queue.isOpen()) {
            startRecovery("admin queue closed during bring-up");
            return;
        }
        for (HostQueue q : currentQueues) {
            if (!q.isOpen()) {
                startRecovery("I/O queue to " + q.peer() + " closed during bring-up");
                return;
            }
        }
        startKeepAlive(a);
        try {
            enableAsyncEvents(a);
        } catch (NvmeofException e) {
            LOG.warn("{}: asynchronous events not enabled: {}", peer, e.getMessage());
        }
        if (reconnected) {
            try {
                List<NvmeofNamespace> before = namespaces;
                List<NvmeofNamespace> after = scanNamespaces(a);
                namespaces = after;
                if (!sameNamespaces(before, after)) {
                    notifyListeners(List.of(), after);
                }
            } catch (NvmeofException e) {
                LOG.warn("{}: namespace rescan after reconnect failed: {}", peer, e.getMessage());
            }
        }
    }

    private void startKeepAlive(AdminConnection a) {
        long kato = options.keepAliveTimeout().toMillis();
        if (kato == 0) {
            return;
        }
        long period = Math.max(1, kato / 2);
        KeepAliveSender sender = new KeepAliveSender(a.queue, kato);
        synchronized (lock) {
            cancelKeepAlive();
            keepAliveSender = sender;
            keepAliveTask = host.timer().scheduleAtFixedRate(() -> sendKeepAlive(a, sender), period, period,
                TimeUnit.MILLISECONDS);
        }
    }

    private void cancelKeepAlive() {
        ScheduledFuture<?> task = keepAliveTask;
        if (task != null) {
            task.cancel(false);
            keepAliveTask = null;
        }
    }

    /** Keep Alives completed with success on the current admin connection (tests). */
    long keepAlivesCompleted() {
        KeepAliveSender sender = keepAliveSender;
        return sender == null ? 0 : sender.completedOk();
    }

    /** Timer thread: nothing here or in the sender allocates on the reactor (KeepAliveSender). */
    private void sendKeepAlive(AdminConnection a, KeepAliveSender sender) {
        if (state != ControllerState.LIVE || a != admin) {
            return;
        }
        String failure = sender.tick();
        if (failure != null && a == admin) {
            startRecovery(failure);
        }
    }

    private void enableAsyncEvents(AdminConnection a) throws NvmeofException {
        int events = a.info.optionalAsyncEvents() & (FeatureIdentifier.AEC_NAMESPACE_ATTRIBUTE | AEC_ANA_CHANGE);
        if (events == 0) {
            return;
        }
        a.setFeatures("Set Features (Async Event Configuration)", FeatureIdentifier.ASYNC_EVENT_CONFIGURATION, events);
        submitAsyncEventRequest(a);
    }

    private void submitAsyncEventRequest(AdminConnection a) {
        Commands.submit(a.queue, sqe -> sqe.opcode(AdminOpcode.ASYNC_EVENT_REQUEST), null, 0)
            .whenComplete((cqe, error) -> {
                if (error != null) {
                    return;
                }
                if (!cqe.ok()) {
                    int code = NvmeStatus.code(cqe.status());
                    // Path errors and aborts are what a closing or shutting-down controller does to a pending AER.
                    if (code != HostStatus.HOST_PATH_ERROR && code != NvmeStatus.ABORTED_SQ_DELETION
                        && code != NvmeStatus.ABORTED_BY_REQUEST) {
                        LOG.warn("{}: Asynchronous Event Request failed: {}", peer, HostStatus.describe(cqe.status()));
                    }
                    return;
                }
                host.control().execute(() -> onAsyncEvent(a, cqe.dw0()));
            });
    }

    private void onAsyncEvent(AdminConnection a, int dw0) {
        int type = AsyncEvent.type(dw0);
        int info = AsyncEvent.info(dw0);
        int logId = AsyncEvent.logPageId(dw0);
        LOG.info("{}: asynchronous event type {} info 0x{} log 0x{}", peer, type, Integer.toHexString(info),
            Integer.toHexString(logId));
        try {
            if (type == AsyncEvent.TYPE_NOTICE && info == AsyncEvent.NOTICE_NAMESPACE_ATTRIBUTE_CHANGED) {
                ByteBuffer log = Commands.direct(ChangedNamespaceList.LENGTH);
                // RAE 0: reading the log re-arms the event.
                a.getLogPage("Get Log Page (Changed Namespace List)", LogPageIdentifier.CHANGED_NAMESPACE_LIST,
                    0xFFFF_FFFF, log, ChangedNamespaceList.LENGTH, 0, false);
                ChangedNamespaceList list = new ChangedNamespaceList().wrap(log, 0);
                List<Integer> changed = new ArrayList<>();
                if (!list.isOverflow()) {
                    for (int i = 0; i < list.count(); i++) {
                        changed.add(list.nsid(i));
                    }
                }
                List<NvmeofNamespace> scanned = scanNamespaces(a);
                namespaces = scanned;
                notifyListeners(Collections.unmodifiableList(changed), scanned);
            } else if (type == AsyncEvent.TYPE_NOTICE && info == AsyncEvent.NOTICE_ANA_CHANGE) {
                PathEvents events = pathEvents;
                if (events != null) {
                    events.onAnaChange(this); // it reads the ANA log with RAE 0, re-arming the event
                } else {
                    a.getLogPage("Get Log Page (ANA)", LogPageIdentifier.ANA, 0, Commands.direct(4096), 4096, 0,
                        false);
                }
            }
        } catch (NvmeofException e) {
            LOG.warn("{}: handling asynchronous event 0x{} failed: {}", peer, Integer.toHexString(dw0), e.getMessage());
        }
        if (a == admin && state == ControllerState.LIVE) {
            submitAsyncEventRequest(a);
        }
    }

    private void notifyListeners(List<Integer> changed, List<NvmeofNamespace> current) {
        for (NamespaceListener listener : listeners) {
            try {
                listener.onNamespacesChanged(this, changed, current);
            } catch (RuntimeException e) {
                LOG.warn("{}: namespace listener failed", peer, e);
            }
        }
    }

    private static boolean sameNamespaces(List<NvmeofNamespace> a, List<NvmeofNamespace> b) {
        if (a.size() != b.size()) {
            return false;
        }
        for (int i = 0; i < a.size(); i++) {
            if (a.get(i).nsid() != b.get(i).nsid() || !a.get(i).sameGeometry(b.get(i))) {
                return false;
            }
        }
        return true;
    }

    /** Identify CNS 02h, then per NSID CNS 00h and (NVMe ≥ 1.3) CNS 03h; keeps unchanged namespace objects. */
    private List<NvmeofNamespace> scanNamespaces(AdminConnection a) throws NvmeofException {
        ByteBuffer data = Commands.direct(IdentifyCommand.DATA_LENGTH);
        a.identify("Identify (active namespace list)", IdentifyCommand.CNS_ACTIVE_NAMESPACE_LIST, 0, data);
        ActiveNamespaceIdList list = new ActiveNamespaceIdList().wrap(data, 0);
        int count = Math.min(list.count(), MAX_IDENTIFIED_NAMESPACES);
        int[] nsids = new int[count];
        for (int i = 0; i < count; i++) {
            nsids[i] = list.nsid(i);
        }
        Map<Integer, NvmeofNamespace> previous = new HashMap<>();
        for (NvmeofNamespace ns : namespaces) {
            previous.put(ns.nsid(), ns);
        }
        List<NvmeofNamespace> result = new ArrayList<>();
        for (int nsid : nsids) {
            ByteBuffer idns = Commands.direct(IdentifyCommand.DATA_LENGTH);
            Cqe cqe = a.identifyAnyStatus("Identify Namespace " + nsid, IdentifyCommand.CNS_NAMESPACE, nsid, idns);
            if (!cqe.ok()) {
                LOG.warn("{}: Identify Namespace {} failed: {}; skipping it", peer, nsid,
                    HostStatus.describe(cqe.status()));
                continue;
            }
            IdentifyNamespace ns = new IdentifyNamespace().wrap(idns, 0);
            long size = ns.size();
            if (size == 0) {
                continue; // inactive
            }
            int format = (ns.formattedLbaSize() & 0xF) | ((ns.formattedLbaSize() >>> 5) & 0x3) << 4;
            int shift = ns.lbaFormatDataSizeShift(format);
            if (shift < 9 || shift > 20 || ns.lbaFormatMetadataSize(format) != 0) {
                LOG.warn("{}: namespace {} has LBA format {} (LBADS {}, metadata {}); not supported, skipping",
                    peer, nsid, format, shift, ns.lbaFormatMetadataSize(format));
                continue;
            }
            byte[] nguid = nonZero(ns.nguid());
            byte[] eui64 = nonZero(ns.eui64());
            UUID uuid = null;
            if (a.version >= ControllerRegisters.VERSION_1_3) {
                ByteBuffer descriptors = Commands.direct(IdentifyCommand.DATA_LENGTH);
                Cqe d = a.identifyAnyStatus("Identify (namespace id descriptors) " + nsid,
                    IdentifyCommand.CNS_NAMESPACE_ID_DESCRIPTORS, nsid, descriptors);
                if (d.ok()) {
                    NamespaceIdDescriptorList list3 = new NamespaceIdDescriptorList().wrap(descriptors, 0);
                    int at = list3.find(NamespaceIdDescriptorList.NIDT_UUID);
                    if (at >= 0 && list3.idLength(at) == NamespaceIdDescriptorList.UUID_LENGTH) {
                        uuid = NamespaceIdDescriptorList.uuid(list3.id(at));
                    }
                    at = list3.find(NamespaceIdDescriptorList.NIDT_NGUID);
                    if (nguid == null && at >= 0 && list3.idLength(at) == NamespaceIdDescriptorList.NGUID_LENGTH) {
                        nguid = nonZero(list3.id(at));
                    }
                }
            }
            NvmeofNamespace fresh = new NvmeofNamespace(this, nsid, shift, size, nguid, uuid, eui64);
            NvmeofNamespace old = previous.get(nsid);
            result.add(fresh.sameGeometry(old) ? old : fresh);
        }
        return Collections.unmodifiableList(result);
    }

    private static byte[] nonZero(byte[] bytes) {
        for (byte b : bytes) {
            if (b != 0) {
                return bytes;
            }
        }
        return null;
    }

    private AdminConnection liveAdmin(String step) throws NvmeofException {
        host.checkNotOnReactor(step + " on " + peer);
        AdminConnection a = admin;
        if (state != ControllerState.LIVE || a == null) {
            throw new NvmeofException(peer, step, NvmeofException.NO_STATUS, "controller is " + state
                + (unavailableReason == null ? "" : ": " + unavailableReason), null);
        }
        return a;
    }

    // ---- I/O queue selection (data path) -------------------------------------------------------------------------

    /**
     * The I/O queue for the calling thread: on a host reactor thread, a queue that reactor owns (no hand-off);
     * elsewhere the thread's id picks one, so one thread's I/O stays in one queue (like the Linux host's per-CPU
     * mapping) and threads spread over the queues.
     */
    IoQueue selectQueue() {
        IoQueue[] queues = ioQueues;
        Thread current = Thread.currentThread();
        for (IoQueue q : queues) {
            if (q.reactor.thread() == current) {
                return q;
            }
        }
        return queues[(int) (current.getId() % queues.length)];
    }

    boolean isReactorThread() {
        return host.isReactorThread();
    }

    /** Whether I/O that could not be sent (or came back with a path error) may wait for a reconnect. */
    boolean mayRetry() {
        ControllerState s = state;
        return s == ControllerState.LIVE || s == ControllerState.RECONNECTING;
    }

    String unavailableReason() {
        String reason = unavailableReason;
        return reason != null ? reason : "controller " + peer + " is " + state;
    }

    // ---- recovery ------------------------------------------------------------------------------------------------

    private void onAdminClosed(HostQueue queue, String reason) {
        AdminConnection a = admin;
        if (a != null && a.queue == queue) {
            startRecovery("admin queue closed: " + reason);
        }
    }

    void onQueueClosed(int qid, String reason) {
        startRecovery("I/O queue " + qid + " closed: " + reason);
    }

    /** Any thread, never blocks: tears everything down and starts reconnecting, unless already doing so. */
    void startRecovery(String reason) {
        synchronized (lock) {
            if (state != ControllerState.LIVE) {
                return;
            }
            state = ControllerState.RECONNECTING;
            unavailableReason = "controller " + peer + " is reconnecting after: " + reason;
            recoveryStartNanos = System.nanoTime();
            reconnectAttempts = 0;
            lastError = reason;
            cancelKeepAlive();
        }
        LOG.warn("{}: {}; tearing the queues down and reconnecting (controller-loss timeout {} s)", peer, reason,
            options.controllerLossTimeout().toSeconds());
        host.control().execute(this::notifyState);
        host.control().execute(() -> {
            teardown(reason);
            scheduleReconnect();
        });
    }

    private void teardown(String reason) {
        AdminConnection a = admin;
        if (a != null) {
            a.queue.close(reason);
        }
        for (IoQueue q : ioQueues) {
            q.closeTransport(reason);
        }
        // The transports of the latest bring-up reach their I/O queues later, as reactor tasks: close them here
        // too, so a close or recovery racing a reconnect cannot leave them open.
        List<HostQueue> latest = currentQueues;
        if (latest != null) {
            for (HostQueue q : latest) {
                q.close(reason);
            }
        }
    }

    private void scheduleReconnect() {
        long delay;
        synchronized (lock) {
            if (state != ControllerState.RECONNECTING) {
                return;
            }
            long base = options.reconnectDelay().toMillis();
            long backoff = base << Math.min(reconnectAttempts, 20);
            delay = Math.min(backoff, options.maxReconnectDelay().toMillis());
            long left = options.controllerLossTimeout().toMillis()
                - TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - recoveryStartNanos);
            delay = Math.max(0, Math.min(delay, left));
        }
        host.timer().schedule(() -> host.control().execute(this::reconnect), delay, TimeUnit.MILLISECONDS);
    }

    private void reconnect() {
        synchronized (lock) {
            if (state != ControllerState.RECONNECTING) {
                return;
            }
            reconnectAttempts++;
        }
        try {
            bringUp(false);
        } catch (IOException | RuntimeException e) {
            lastError = e.getMessage();
            boolean permanent = e instanceof NvmeofException && ((NvmeofException) e).status() >= 0
                && NvmeStatus.isDnr(((NvmeofException) e).status());
            long elapsed = System.nanoTime() - recoveryStartNanos;
            if (permanent || elapsed >= options.controllerLossTimeout().toNanos()) {
                lose(permanent ? "the controller refused the reconnect for good" : "no reconnect within the "
                    + "controller-loss timeout of " + options.controllerLossTimeout().toMillis() + " ms");
            } else {
                LOG.info("{}: reconnect attempt {} failed: {}", peer, reconnectAttempts, e.getMessage());
                scheduleReconnect();
            }
            return;
        }
        boolean closedMeanwhile;
        synchronized (lock) {
            closedMeanwhile = state != ControllerState.RECONNECTING;
            if (!closedMeanwhile) {
                state = ControllerState.LIVE;
                unavailableReason = null;
                reconnects++;
            }
        }
        if (closedMeanwhile) {
            teardown("controller closed during reconnect");
            return;
        }
        LOG.info("{}: reconnected as controller {} after {} attempt(s)", peer, controllerId(), reconnectAttempts);
        afterBringUp(true);
        notifyState();
    }

    private void lose(String why) {
        synchronized (lock) {
            if (state != ControllerState.RECONNECTING) {
                return;
            }
            state = ControllerState.LOST;
            unavailableReason = "controller " + peer + " lost: " + why + " (" + reconnectAttempts
                + " reconnect attempt(s); last error: " + lastError + ")";
        }
        LOG.error("{}", unavailableReason);
        teardown("controller lost");
        for (IoQueue q : ioQueues) {
            q.reactor.execute(q::failWaiting);
        }
        notifyState();
    }

    // ---- close ---------------------------------------------------------------------------------------------------

    /**
     * Disconnects: I/O queues closed (their I/O fails), shutdown notification (CC.SHN, bounded), admin queue closed.
     * Idempotent.
     */
    @Override
    public void close() {
        boolean wasLive;
        synchronized (lock) {
            if (state == ControllerState.CLOSED) {
                return;
            }
            wasLive = state == ControllerState.LIVE;
            state = ControllerState.CLOSED;
            unavailableReason = "controller " + peer + " is closed";
            cancelKeepAlive();
        }
        for (IoQueue q : ioQueues) {
            q.closeTransport("controller closed");
        }
        AdminConnection a = admin;
        if (a != null) {
            if (wasLive) {
                a.shutdownAndClose("controller closed");
            } else {
                a.queue.close("controller closed");
            }
        }
        releaseQueues();
        host.forget(this);
    }

    private void releaseQueues() {
        for (IoQueue q : ioQueues) {
            try {
                q.retire();
            } catch (IllegalStateException e) {
                // the reactor is already closed
            }
        }
    }

    @Override
    public String toString() {
        return "NvmeofController[" + peer + " cntlid=" + controllerId() + " " + state + "]";
    }
}
