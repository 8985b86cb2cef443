package io.nvmeof4j.target.controller;

import io.nvmeof4j.protocol.HostId;
import io.nvmeof4j.protocol.admin.ChangedNamespaceList;
import io.nvmeof4j.protocol.admin.FeatureIdentifier;
import io.nvmeof4j.protocol.admin.IdentifyController;
import io.nvmeof4j.protocol.command.NvmeStatus;
import io.nvmeof4j.protocol.fabrics.ControllerRegisters;
import io.nvmeof4j.protocol.reservation.ReservationNotificationLog;
import io.nvmeof4j.protocol.spi.Request;
import io.nvmeof4j.protocol.spi.TransportAddress;
import io.nvmeof4j.protocol.spi.TransportType;
import io.nvmeof4j.target.model.Port;
import io.nvmeof4j.target.model.Subsystem;
import io.nvmeof4j.target.model.TargetModel;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.ScheduledFuture;

/**
 * One NVMe controller of the dynamic controller model: created by an admin-queue Connect, owning that admin queue
 * and the I/O queues connected to it with its CNTLID, gone when the admin queue closes, the keep-alive timer
 * expires or the target shuts down. A discovery controller (Connect to the discovery NQN) is the same object with
 * no subsystem, no I/O queues and the discovery admin command set ({@link DiscoveryCommands} instead of
 * {@link AdminCommands}, chosen here once). Asynchronous events and the logs they point to are {@link AsyncEvents}.
 * <p>State (wire reference 6): CC as the host wrote it; CSTS.RDY set when CC.EN goes 0→1 with the fabrics
 * entry sizes (IOSQES 6, IOCQES 4), MPS 0, AMS 0 and CSS 000b or 110b, else CSTS.CFS; EN 1→0 clears RDY;
 * SHN ≠ 0 reports the shutdown complete at once (SHST 10b): nothing is cached here. Admin commands other than fabrics
 * commands and all I/O commands need EN = 1 and RDY = 1 (the command entry checks {@link #isReady()}).
 * <p>Thread-safety: the admin queue's reactor runs admin commands; I/O reactors read {@link #isReady()} and the
 * subsystem; the keep-alive timer and the management API call in from their threads. Control state is guarded
 * by one lock; the I/O path reads only a volatile flag.
 */
public final class Controller {
    private static final Logger LOG = LoggerFactory.getLogger(Controller.class);

    /** AERL + 1: Asynchronous Event Requests a controller parks (Identify AERL is 3, like the Linux target). */
    public static final int ASYNC_EVENT_REQUEST_LIMIT = 4;
    /**
     * Keep-alive timeout of a discovery controller whose host asked for none: such sessions are reaped after two
     * idle minutes, as the Linux target does (NVMET_DISC_KATO_MS).
     */
    public static final long DISCOVERY_IDLE_TIMEOUT_MILLIS = 120_000;
    /**
     * Smallest non-zero KATO in force: nvmet rounds KATO up to whole seconds (DIV_ROUND_UP(kato, 1000)) and SPDK
     * raises it to its min_kato (10 s), so no host working with either expects to be reaped sooner than this.
     */
    public static final long MIN_KEEP_ALIVE_TIMEOUT_MILLIS = 1000;
    /** CAP.TO: 15 × 500 ms = 7.5 s for CSTS.RDY to follow CC.EN (we answer at once). */
    public static final int CAP_TIMEOUT_500MS = 15;
    /** VS of both I/O and discovery controllers. */
    public static final int VERSION = ControllerRegisters.VERSION_1_3;

    private final ControllerRegistry registry;
    private final int cntlid;
    private final Subsystem subsystem;
    private final String subsystemNqn;
    private final String hostNqn;
    private final HostId hostId;
    private final Port port;
    private final TransportType transportType;
    private final TransportAddress localAddress;
    private final String peer;
    private final Instant createdAt = Instant.now();
    private final long capabilities;
    private final int maxIoQueues;
    /** The admin command set: the NVM one, or the discovery one. */
    private final AdminCommandSet admin;
    private final AsyncEvents events;
    private final TargetModel model;

    private final Object lock = new Object();
    /** Index = QID; [0] is the admin queue. Guarded by lock. */
    private final ControllerQueueHandler[] queues;
    private int cc;
    private int csts;
    private volatile boolean ready;
    private boolean shutdownNotified;
    private boolean destroyed;
    private int grantedIoQueues;
    private long keepAliveTimeoutMillis;
    private ScheduledFuture<?> keepAliveTask;
    /** Identifies the current timer chain: a check from a cancelled chain that already started does nothing. */
    private long keepAliveEpoch;
    /**
     * Target shutdown is draining: new commands end at once (Aborted – SQ Deletion) instead of executing or being
     * parked, so the queues empty. Written under {@link #lock}, read by the data path without it.
     */
    private volatile boolean draining;


    Controller(ControllerRegistry registry, int cntlid, Subsystem subsystem, String subsystemNqn, String hostNqn,
               HostId hostId, Port port, TransportType transportType, TransportAddress localAddress, String peer,
               long keepAliveTimeoutMillis, TargetModel model) {
        this.registry = registry;
        this.cntlid = cntlid;
        this.subsystem = subsystem;
        this.subsystemNqn = Objects.requireNonNull(subsystemNqn);
        this.hostNqn = Objects.requireNonNull(hostNqn);
        this.hostId = Objects.requireNonNull(hostId);
        this.port = Objects.requireNonNull(port);
        this.transportType = Objects.requireNonNull(transportType);
        this.localAddress = localAddress;
        this.peer = peer;
        this.maxIoQueues = subsystem == null ? 0 : registry.maxIoQueues();
        this.queues = new ControllerQueueHandler[maxIoQueues + 1];
        this.capabilities = ControllerRegisters.capabilities(port.options().maxQueueSize(), CAP_TIMEOUT_500MS, true);
        this.grantedIoQueues = maxIoQueues;
        this.events = new AsyncEvents(subsystem == null, defaultAsyncEventConfig());
        this.keepAliveTimeoutMillis = keepAliveTimeoutMillis == 0 && subsystem == null
            ? DISCOVERY_IDLE_TIMEOUT_MILLIS : effectiveKeepAliveTimeout(keepAliveTimeoutMillis);
        this.model = Objects.requireNonNull(model);
        this.admin = subsystem == null ? new DiscoveryCommands(this) : new AdminCommands(this);
    }

    // ---------------------------------------------------------------- identity (management API)

    public int cntlid() {
        return cntlid;
    }

    /** The subsystem, or null for a discovery controller. */
    public Subsystem subsystem() {
        return subsystem;
    }

    public String subsystemNqn() {
        return subsystemNqn;
    }

    public boolean isDiscovery() {
        return subsystem == null;
    }

    public String hostNqn() {
        return hostNqn;
    }

    public HostId hostId() {
        return hostId;
    }

    /** The host's address of the admin queue. */
    public String peer() {
        return peer;
    }

    public Port port() {
        return port;
    }

    public TransportType transportType() {
        return transportType;
    }

    TransportAddress localAddress() {
        return localAddress;
    }

    public Instant createdAt() {
        return createdAt;
    }

    public long keepAliveTimeoutMillis() {
        synchronized (lock) {
            return keepAliveTimeoutMillis;
        }
    }

    /** CSTS as the host would read it. */
    public int controllerStatus() {
        synchronized (lock) {
            return csts;
        }
    }

    /** True once the target's shutdown started draining this controller. */
    boolean isDraining() {
        return draining;
    }

    /** CC.EN = 1 and CSTS.RDY = 1: the controller processes admin and I/O commands. */
    public boolean isReady() {
        return ready;
    }

    /** QIDs of the connected queues, admin (0) first. */
    public int[] queueIds() {
        synchronized (lock) {
            int n = 0;
            for (ControllerQueueHandler q : queues) {
                if (q != null) {
                    n++;
                }
            }
            int[] ids = new int[n];
            int i = 0;
            for (int qid = 0; qid < queues.length; qid++) {
                if (queues[qid] != null) {
                    ids[i++] = qid;
                }
            }
            return ids;
        }
    }

    /** The connected queues, admin (0) first, with their commands outstanding (a snapshot; management API, metrics). */
    public List<QueueInfo> queues() {
        List<QueueInfo> list = new ArrayList<>();
        synchronized (lock) {
            for (int qid = 0; qid < queues.length; qid++) {
                ControllerQueueHandler q = queues[qid];
                if (q != null) {
                    list.add(new QueueInfo(qid, q.queue().peer(), q.queue().commandsOutstanding()));
                }
            }
        }
        return list;
    }

    /** The connected I/O queues' handlers (a snapshot; Preempt and Abort drains them). */
    List<ControllerQueueHandler> ioQueueHandlers() {
        List<ControllerQueueHandler> list = new ArrayList<>();
        synchronized (lock) {
            for (int qid = 1; qid < queues.length; qid++) {
                if (queues[qid] != null) {
                    list.add(queues[qid]);
                }
            }
        }
        return list;
    }

    /** Connected I/O queues. */
    public int ioQueueCount() {
        return Math.max(0, queueIds().length - 1);
    }

    /** Closes every queue of this controller (management API "disconnect"); the controller goes away. */
    public void disconnect(String reason) {
        destroy(reason, false);
    }

    // ---------------------------------------------------------------- package: wiring

    /** The admin command set of this controller, for the command entry. */
    AdminCommandSet admin() {
        return admin;
    }

    TargetModel model() {
        return model;
    }

    ControllerRegistry registry() {
        return registry;
    }

    long capabilities() {
        return capabilities;
    }

    int maxIoQueues() {
        return maxIoQueues;
    }

    int optionalAsyncEvents() {
        return isDiscovery() ? IdentifyController.OAES_DISCOVERY_LOG_CHANGE_NOTICES
            : IdentifyController.OAES_NAMESPACE_ATTRIBUTE_NOTICES | IdentifyController.OAES_ANA_CHANGE_NOTICES;
    }

    /** Async Event Configuration bits a host may set: SMART critical warnings and the notices in OAES. */
    int asyncEventConfigMask() {
        return isDiscovery() ? FeatureIdentifier.AEC_DISCOVERY_LOG_CHANGE : 0x1F | optionalAsyncEvents();
    }

    int defaultAsyncEventConfig() {
        // Like the Linux target: the optional notices are enabled until the host says otherwise.
        return optionalAsyncEvents();
    }

    void attachAdminQueue(ControllerQueueHandler handler) {
        synchronized (lock) {
            queues[0] = handler;
        }
    }

    /**
     * Registers an I/O queue (reactor thread of that queue, during its Connect).
     *
     * @return 0 on success, else the Connect status; for Connect Invalid Parameters {@code invalidSqeOffset[0]}
     *         names the SQE field
     */
    int connectIoQueue(ControllerQueueHandler handler, int qid, int sqSize0Based, int[] invalidSqeOffset) {
        synchronized (lock) {
            if (destroyed) {
                return NvmeStatus.FABRICS_CONNECT_INVALID_PARAMETERS | NvmeStatus.DNR;
            }
            // Bounded by the configured qid_max, not by the Set Features 07h grant: nvmet (subsys->max_qid) and
            // SPDK (max_qpairs_per_ctrlr) both accept a QID the host did not ask for, and the slot exists.
            if (qid > maxIoQueues) {
                invalidSqeOffset[0] = io.nvmeof4j.protocol.fabrics.ConnectCommand.QID_OFFSET;
                return NvmeStatus.FABRICS_CONNECT_INVALID_PARAMETERS | NvmeStatus.DNR;
            }
            if (!ready) {
                return NvmeStatus.COMMAND_SEQUENCE_ERROR | NvmeStatus.DNR;
            }
            if (sqSize0Based == 0 || sqSize0Based > ControllerRegisters.capMaxQueueEntries(capabilities) - 1) {
                invalidSqeOffset[0] = io.nvmeof4j.protocol.fabrics.ConnectCommand.SQSIZE_OFFSET;
                return NvmeStatus.FABRICS_CONNECT_INVALID_PARAMETERS | NvmeStatus.DNR;
            }
            if (queues[qid] != null) {
                return NvmeStatus.COMMAND_SEQUENCE_ERROR | NvmeStatus.DNR;
            }
            queues[qid] = handler;
            handler.keepAliveSeen = handler.receivedCount();
            return NvmeStatus.SUCCESS;
        }
    }

    /** A queue's transport connection is gone (its reactor thread). */
    void queueClosed(ControllerQueueHandler handler, String reason) {
        int qid = handler.queueId();
        if (qid == 0) {
            destroy("admin queue closed (" + reason + ")", false);
            return;
        }
        releaseIoQueue(handler, qid);
        LOG.debug("controller {}: I/O queue {} from {} closed: {}", cntlid, qid, handler.queue().peer(), reason);
    }

    /**
     * Frees QID {@code qid} if {@code handler} holds it: its queue closed, or its Connect was refused after
     * {@link #connectIoQueue} took the QID (the transport could not set the queue up).
     */
    void releaseIoQueue(ControllerQueueHandler handler, int qid) {
        synchronized (lock) {
            if (qid > 0 && qid < queues.length && queues[qid] == handler) {
                queues[qid] = null;
            }
        }
    }

    /** Commands received on this controller's queues and not yet completed (parked AERs included). */
    long inFlightCommands() {
        long n = 0;
        synchronized (lock) {
            for (ControllerQueueHandler q : queues) {
                if (q != null) {
                    n += q.inFlight();
                }
            }
        }
        return n;
    }

    // ---------------------------------------------------------------- properties

    /** Property Get: the 4-byte registers (VS, CC, CSTS); -1L for an offset we do not implement. */
    long readRegister4(int offset) {
        synchronized (lock) {
            switch (offset) {
                case ControllerRegisters.VS:
                    return VERSION & 0xFFFF_FFFFL;
                case ControllerRegisters.CC:
                    return cc & 0xFFFF_FFFFL;
                case ControllerRegisters.CSTS:
                    return csts & 0xFFFF_FFFFL;
                default:
                    return -1L;
            }
        }
    }

    /** Property Set CC: the state machine of wire reference 6. */
    void writeControllerConfiguration(int value) {
        boolean enabled = false;
        boolean failed = false;
        boolean shutdown = false;
        synchronized (lock) {
            if (destroyed) {
                return;
            }
            int old = cc;
            cc = value;
            if (ControllerRegisters.ccEnabled(value) && !ControllerRegisters.ccEnabled(old)) {
                if (validEnableConfiguration(value)) {
                    csts = ControllerRegisters.CSTS_RDY;
                    ready = true;
                    enabled = true;
                    // A host that dies before enabling is still reaped; enabling restarts the clock (nvmet).
                    restartKeepAliveLocked();
                } else {
                    csts = ControllerRegisters.CSTS_CFS;
                    ready = false;
                    failed = true;
                }
            }
            if (!ControllerRegisters.ccEnabled(value) && ControllerRegisters.ccEnabled(old)) {
                csts &= ~ControllerRegisters.CSTS_RDY;
                ready = false;
            }
            int shn = ControllerRegisters.ccShutdownNotification(value);
            int oldShn = ControllerRegisters.ccShutdownNotification(old);
            if (shn != 0 && oldShn == 0) {
                // Nothing is cached: the shutdown is complete as soon as it is asked for.
                csts &= ~ControllerRegisters.CSTS_RDY;
                csts = (csts & ~ControllerRegisters.CSTS_SHST_MASK) | ControllerRegisters.CSTS_SHST_COMPLETE;
                ready = false;
                shutdownNotified = true;
                shutdown = true;
            }
            if (shn == 0 && oldShn != 0) {
                csts &= ~ControllerRegisters.CSTS_SHST_MASK;
            }
        }
        if (failed) {
            LOG.warn("controller {} of {} for host {} from {}: CC 0x{} rejected (IOSQES/IOCQES/MPS/AMS/CSS), CSTS.CFS set",
                cntlid, subsystemNqn, hostNqn, peer, Integer.toHexString(value));
        } else if (enabled) {
            LOG.debug("controller {}: enabled (CC 0x{})", cntlid, Integer.toHexString(value));
        } else if (shutdown) {
            LOG.info("controller {} of {} for host {} from {}: shutdown notification, shutdown complete", cntlid,
                subsystemNqn, hostNqn, peer);
        }
    }

    private boolean validEnableConfiguration(int value) {
        // Discovery controllers do not check the I/O entry sizes: the spec wants them 0 there but hosts send 6/4
        // (the Linux target skips the check for the same reason).
        if (!isDiscovery() && (ControllerRegisters.ccIoSqEntrySize(value) != ControllerRegisters.NVM_IOSQES
            || ControllerRegisters.ccIoCqEntrySize(value) != ControllerRegisters.NVM_IOCQES)) {
            return false;
        }
        // CSS 000b (NVM) and 110b (all supported I/O command sets, CAP.CSS bit 43): nvmet_css_supported. MPS and
        // AMS must be 0 as in nvmet_start_ctrl (SPDK refuses the Property Set itself); reserved bits are stored
        // and ignored, as both reference targets do.
        int css = ControllerRegisters.ccCommandSet(value);
        return ControllerRegisters.ccMemoryPageSize(value) == 0
            && ControllerRegisters.ccArbitration(value) == 0
            && (css == ControllerRegisters.CC_CSS_NVM || css == ControllerRegisters.CC_CSS_ALL_IO_COMMAND_SETS);
    }

    /** True once the host notified a shutdown (CC.SHN) on this controller. */
    public boolean isShutDown() {
        synchronized (lock) {
            return shutdownNotified;
        }
    }

    // ---------------------------------------------------------------- features

    int grantedIoQueues() {
        synchronized (lock) {
            return grantedIoQueues;
        }
    }

    /**
     * Set Features 07h: grants up to {@link #maxIoQueues} I/O queues.
     *
     * @return the completion DW0, or -1 when I/O queues already exist (Command Sequence Error)
     */
    long setNumberOfQueues(int requestedSq0Based, int requestedCq0Based) {
        synchronized (lock) {
            for (int qid = 1; qid < queues.length; qid++) {
                if (queues[qid] != null) {
                    return -1L;
                }
            }
            int sq = Math.min(requestedSq0Based + 1, maxIoQueues);
            int cq = Math.min(requestedCq0Based + 1, maxIoQueues);
            grantedIoQueues = Math.min(sq, cq);
            return FeatureIdentifier.numberOfQueuesResult(sq, cq) & 0xFFFF_FFFFL;
        }
    }

    int asyncEventConfig() {
        return events.config();
    }

    void asyncEventConfig(int value) {
        events.config(value);
    }

    /** The KATO in force for a host's request: 0 stays 0 (no keep-alive, as in nvmet and SPDK), else at least 1 s. */
    static long effectiveKeepAliveTimeout(long requestedMillis) {
        return requestedMillis == 0 ? 0 : Math.max(requestedMillis, MIN_KEEP_ALIVE_TIMEOUT_MILLIS);
    }

    void keepAliveTimeoutMillis(long millis) {
        synchronized (lock) {
            keepAliveTimeoutMillis = effectiveKeepAliveTimeout(millis);
            restartKeepAliveLocked();
        }
    }

    // ---------------------------------------------------------------- keep-alive

    /** Starts the timer after Connect (the Linux target starts it at controller creation too). */
    void startKeepAlive() {
        synchronized (lock) {
            restartKeepAliveLocked();
        }
    }

    /**
     * Keep Alive command (its reactor thread): nothing to do here. It was counted as traffic when it arrived, and the
     * check armed at enable re-arms itself for another KATO whenever a period saw traffic (see
     * {@link #keepAliveCheck}), so a Keep Alive neither takes the controller's lock nor schedules (allocates) on
     * the reactor; detection stays between KATO and 2 x KATO after the last command, as before.
     */
    void keepAliveReceived() {
    }

    private void restartKeepAliveLocked() {
        if (keepAliveTask != null) {
            keepAliveTask.cancel(false);
            keepAliveTask = null;
        }
        long epoch = ++keepAliveEpoch;
        if (destroyed || keepAliveTimeoutMillis == 0) {
            return;
        }
        snapshotTrafficLocked();
        keepAliveTask = registry.schedule(() -> keepAliveCheck(epoch), keepAliveTimeoutMillis);
    }

    /** Records the traffic seen so far; true when there was any since the previous snapshot. */
    private boolean snapshotTrafficLocked() {
        boolean traffic = false;
        for (ControllerQueueHandler q : queues) {
            if (q != null) {
                long seen = q.receivedCount();
                // A host computing its DH-HMAC-CHAP reply sends nothing meanwhile: the Linux host under emulation
                // was silent for more than a 5 s KATO over ffdhe8192. The transaction has its own bound.
                if (seen != q.keepAliveSeen || q.authenticationPending()) {
                    q.keepAliveSeen = seen;
                    traffic = true;
                }
            }
        }
        return traffic;
    }

    /**
     * Runs KATO after the last (re)start. Any command received since then counts (traffic-based keep-alive,
     * CTRATT bit 6, as the Linux target does): the timer is re-armed for another KATO. Without traffic the
     * controller is fatal. Detection therefore happens between KATO and 2 × KATO after the last command,
     * the same window as the Linux target's.
     */
    private void keepAliveCheck(long epoch) {
        long kato;
        synchronized (lock) {
            if (destroyed || keepAliveTimeoutMillis == 0 || epoch != keepAliveEpoch) {
                return;
            }
            if (snapshotTrafficLocked()) {
                keepAliveTask = registry.schedule(() -> keepAliveCheck(epoch), keepAliveTimeoutMillis);
                return;
            }
            kato = keepAliveTimeoutMillis;
            csts |= ControllerRegisters.CSTS_CFS;
            ready = false;
        }
        LOG.warn("keep-alive timeout: controller {} of {} for host {} from {}: no command within KATO {} ms; "
            + "tearing it down", cntlid, subsystemNqn, hostNqn, peer, kato);
        destroy("keep-alive timeout (KATO " + kato + " ms)", true);
    }

    // ---------------------------------------------------------------- asynchronous events (AsyncEvents)

    /**
     * Asynchronous Event Request: completes at once when an event is pending, else parks the request.
     *
     * @return false when {@link #ASYNC_EVENT_REQUEST_LIMIT} requests are already parked
     */
    boolean parkAsyncEventRequest(Request request) {
        return events.park(request);
    }

    /** Namespace {@code nsid} was added, removed or changed: log 04h, and its notice when enabled and unmasked. */
    public void notifyNamespaceChanged(int nsid) {
        events.notifyNamespaceChanged(nsid);
    }

    /** An ANA group's state changed on this controller's port: its notice (log 0Ch) when enabled and unmasked. */
    public void notifyAnaChanged() {
        events.notifyAnaChanged();
    }

    void anaLogRead(boolean retainAsyncEvent) {
        events.anaLogRead(retainAsyncEvent);
    }

    void notifyReservation(int nsid, int type) {
        events.notifyReservation(nsid, type);
    }

    void readReservationLog(ReservationNotificationLog log, boolean retainAsyncEvent) {
        events.readReservationLog(log, retainAsyncEvent);
    }

    void reservationMask(int nsid, int mask) {
        events.reservationMask(nsid, mask);
    }

    int reservationMask(int nsid) {
        return events.reservationMask(nsid);
    }

    void notifyDiscoveryChanged() {
        events.notifyDiscoveryChanged();
    }

    void readChangedNamespaces(ChangedNamespaceList list, boolean retainAsyncEvent) {
        events.readChangedNamespaces(list, retainAsyncEvent);
    }

    void discoveryLogRead(boolean retainAsyncEvent) {
        events.discoveryLogRead(retainAsyncEvent);
    }

    /**
     * Shutdown: completes every parked Asynchronous Event Request with Aborted – SQ Deletion, and from now on any
     * new command at once, so only the commands already executing remain in flight while the registry drains.
     */
    void drain() {
        synchronized (lock) {
            draining = true;
        }
        for (Request r : events.drain()) {
            r.complete(NvmeStatus.ABORTED_SQ_DELETION);
        }
    }

    // ---------------------------------------------------------------- teardown

    /**
     * Tears the controller down: no more commands, timer cancelled, parked events aborted, every queue
     * disconnected, the CNTLID freed. Idempotent; any thread.
     *
     * @param fatal sets CSTS.CFS (keep-alive expiry)
     */
    void destroy(String reason, boolean fatal) {
        List<ControllerQueueHandler> toClose = new ArrayList<>();
        synchronized (lock) {
            if (destroyed) {
                return;
            }
            destroyed = true;
            ready = false;
            if (fatal) {
                csts |= ControllerRegisters.CSTS_CFS;
            }
            if (keepAliveTask != null) {
                keepAliveTask.cancel(false);
                keepAliveTask = null;
            }
            for (int qid = 0; qid < queues.length; qid++) {
                if (queues[qid] != null) {
                    toClose.add(queues[qid]);
                    queues[qid] = null;
                }
            }
        }
        registry.unregister(this);
        for (Request r : events.close()) {
            r.complete(NvmeStatus.ABORTED_SQ_DELETION);
        }
        for (ControllerQueueHandler q : toClose) {
            q.queue().disconnect(reason);
        }
        LOG.info("controller {} destroyed: {} {} for host {} from {}, {} queue(s) disconnected: {}", cntlid,
            isDiscovery() ? "discovery" : "subsystem", subsystemNqn, hostNqn, peer, toClose.size(), reason);
    }

    public boolean isDestroyed() {
        synchronized (lock) {
            return destroyed;
        }
    }

    @Override
    public String toString() {
        return "controller " + cntlid + " (" + subsystemNqn + ", host " + hostNqn + " from " + peer + ")";
    }
}
