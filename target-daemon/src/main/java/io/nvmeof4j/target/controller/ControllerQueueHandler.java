package io.nvmeof4j.target.controller;

import io.nvmeof4j.protocol.admin.AdminOpcode;
import io.nvmeof4j.protocol.ana.AnaState;
import io.nvmeof4j.protocol.command.NvmeStatus;
import io.nvmeof4j.protocol.command.SubmissionQueueEntry;
import io.nvmeof4j.protocol.fabrics.ConnectCommand;
import io.nvmeof4j.protocol.fabrics.ConnectData;
import io.nvmeof4j.protocol.fabrics.FabricsCommandType;
import io.nvmeof4j.protocol.fabrics.PropertyCommand;
import io.nvmeof4j.protocol.spi.QueueHandler;
import io.nvmeof4j.protocol.spi.Request;
import io.nvmeof4j.protocol.spi.TransportQueue;
import io.nvmeof4j.target.auth.AuthenticationCommands;
import io.nvmeof4j.target.backend.ReactorBackends;
import io.nvmeof4j.target.io.NvmCommandExecutor;
import io.nvmeof4j.target.metrics.NamespaceMeters;
import io.nvmeof4j.target.metrics.SubsystemMeters;
import io.nvmeof4j.target.metrics.TargetMeterNames;
import io.nvmeof4j.target.metrics.TargetMetrics;
import io.nvmeof4j.target.model.Namespace;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.Arrays;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * The command layer's side of one queue (one TCP connection or RDMA queue pair), and the target's one command entry:
 * every command the transport hands over passes {@link #onCommand}, which is shaped like nvmet's
 * {@code nvmet_req_init} (drivers/nvme/target/core.c): the checks every command needs are made once, here, then the
 * command goes to the class of its command set.
 * <ol>
 *   <li>Flags: PSDT other than 01b (fabrics data is always described by SGLs) → Invalid Field + DNR; a fused command
 *       (FUSE ≠ 00b) before Connect or on the admin queue → Invalid Field + DNR (fused operations exist for NVM I/O
 *       commands only). On an I/O queue fused halves go to {@link FusedPairs}.</li>
 *   <li>Queue state: a queue without a controller takes only Connect ({@link FabricsCommands#connect}; anything else
 *       is Command Sequence Error + DNR).</li>
 *   <li>Controller state: a controller draining for the target's shutdown ends new non-fabrics commands with Aborted –
 *       SQ Deletion; a queue that must authenticate and has not ({@link QueueAuthentication}) takes only
 *       Authentication Send/Receive, anything else is Authentication Required (0x191) + DNR; a controller not enabled
 *       (CC.EN = 0 or CSTS.RDY = 0) takes only fabrics commands, anything else is Command Sequence Error + DNR.</li>
 *   <li>Dispatch: fabrics commands (opcode 7Fh) to {@link FabricsCommands}; the admin queue's other commands to the
 *       controller's admin command set ({@link AdminCommands} for an NVM I/O controller, {@link DiscoveryCommands}
 *       for a discovery controller); an I/O queue's commands, after the namespace (Invalid Namespace + DNR), its ANA
 *       state on this port and its reservation, to {@link ReservationCommands} or the NVM executor
 *       ({@link NvmCommandExecutor}, which judges opcode, length and range). An admin opcode on an I/O queue is
 *       therefore Invalid Opcode + DNR, answered by the executor, as nvmet answers it.</li>
 * </ol>
 * <p>Per-slot command context: every transport slot of the queue has one {@link CommandContext}, found by
 * {@link Request#slot()} in an array sized at Connect; it holds the slot's in-flight counter wrapper, its metering
 * and the executor's I/O context, typed. An I/O queue's Connect resolves, on the queue's reactor, the block-I/O
 * resources its commands run on and opens its subsystem's device channels there ({@link ReactorBackends}); each
 * slot's I/O context is bound to them when made. The I/O path checks, resolves, counts the command in flight (Preempt and
 * Abort) and delegates: no allocation once the slot has been used, no lock, no logging. A counter of commands
 * received (written only by the reactor) gives the keep-alive timer its traffic; the shutdown's in-flight count
 * comes from the transport ({@link TransportQueue#commandsOutstanding()}), which also sees writes still receiving
 * their data.
 * <p>Metrics: with metrics on, commands go on wrapped in the slot's metering with the meters resolved for the
 * namespace (or, on the admin queue, the subsystem) and the queue's transport; failures found by the entry are
 * counted in the subsystem's failure table. Both without allocation once the slot has been used.
 */
final class ControllerQueueHandler implements QueueHandler {
    private static final Logger LOG = LoggerFactory.getLogger(ControllerQueueHandler.class);
    private static final VarHandle RECEIVED;

    static {
        try {
            RECEIVED = MethodHandles.lookup().findVarHandle(ControllerQueueHandler.class, "received", long.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private final FabricsCommands fabrics;
    private final ControllerRegistry registry;
    private final TransportQueue queue;
    private final NvmCommandExecutor nvm;
    /** Null when metrics are off. */
    private final TargetMetrics metrics;
    private final int transport;
    private final FusedPairs fused = new FusedPairs(this);
    /** The controller's subsystem meters, resolved at Connect; null when metrics are off. */
    private volatile SubsystemMeters subsystemMeters;
    /** Flyweights of the fabrics commands, used on this queue's reactor thread only. */
    final ConnectCommand connectCommand = new ConnectCommand();
    final ConnectData connectData = new ConnectData();
    final PropertyCommand propertyCommand = new PropertyCommand();

    /** Set on the reactor thread by a successful Connect; read there and, racily but harmlessly, by logging. */
    private volatile Controller controller;
    private volatile int queueId = -1;
    private volatile boolean closed;
    /** The per-slot command contexts, indexed by {@link Request#slot()}; reactor thread only. */
    private CommandContext[] contexts = new CommandContext[0];
    /**
     * An I/O queue's block-I/O resources on its reactor, resolved by its Connect there (null on the admin queue and off
     * the reactors): every slot's I/O context is bound to them when made. Reactor thread only.
     */
    private ReactorBackends backends;

    /**
     * I/O commands admitted (past the reservation check) and not yet completed, in two halves: the reactor counts a
     * command in {@link #inFlightHalf}, its completion (any thread) takes it off the same half. A Preempt and Abort
     * switches new commands to the other half ({@link #beginDrain}) and waits for the old one to empty: only the
     * commands admitted before it, never a stream of later ones.
     */
    private final AtomicLongArray inFlight = new AtomicLongArray(2);
    /** The half new commands count in; reactor thread only. */
    private int inFlightHalf;

    /** Written by the reactor thread only (release), read by the keep-alive timer (acquire). */
    @SuppressWarnings("unused") // through RECEIVED
    private long received;
    /** Last {@link #received} value the keep-alive timer saw; accessed under the controller's lock. */
    long keepAliveSeen;

    /** Non-null when this queue must authenticate; set at Connect on the reactor thread, peeked at by keep-alive. */
    private volatile QueueAuthentication auth;

    ControllerQueueHandler(FabricsCommands fabrics, ControllerRegistry registry, TransportQueue queue,
                           NvmCommandExecutor nvm, TargetMetrics metrics) {
        this.fabrics = fabrics;
        this.registry = registry;
        this.queue = queue;
        this.nvm = nvm;
        this.metrics = metrics;
        this.transport = TargetMetrics.transportIndex(queue.transportType());
    }

    TransportQueue queue() {
        return queue;
    }

    Controller controller() {
        return controller;
    }

    ControllerRegistry registry() {
        return registry;
    }

    TargetMetrics metrics() {
        return metrics;
    }

    int queueId() {
        return queueId;
    }

    boolean isClosed() {
        return closed;
    }

    QueueAuthentication authentication() {
        return auth;
    }

    void authentication(QueueAuthentication auth) {
        this.auth = auth;
    }

    /** Records a successful Connect (reactor thread, before the Connect completes). */
    void connected(Controller controller, int qid, int sqSize) {
        if (metrics != null) {
            SubsystemMeters m = metrics.subsystem(controller.subsystemNqn());
            subsystemMeters = m != null ? m : metrics.bindSubsystem(controller.subsystemNqn());
        }
        // One context per slot the queue may use; a transport with more slots grows the array on first use.
        contexts = new CommandContext[sqSize];
        if (qid != 0) {
            // Once, here, on the queue's reactor: its ring, QoS waits and the subsystem's device channels (a namespace
            // added later has its channel opened on every reactor when it is added).
            backends = ReactorBackends.current();
            if (backends != null) {
                for (Namespace namespace : controller.subsystem().namespaces()) {
                    backends.open(namespace.device());
                }
            }
        }
        this.controller = controller;
        this.queueId = qid;
    }

    long receivedCount() {
        return (long) RECEIVED.getAcquire(this);
    }

    /** Commands received and not yet answered, as the transport counts them. */
    long inFlight() {
        return queue.commandsOutstanding();
    }

    // ---- the command entry -------------------------------------------------------------------------------------

    @Override
    public void onCommand(Request request) {
        RECEIVED.setRelease(this, (long) RECEIVED.getOpaque(this) + 1);
        SubmissionQueueEntry sqe = request.command();
        int flags = sqe.flags();
        int fuse = flags & SubmissionQueueEntry.FUSE_MASK;
        Controller c = controller;
        if ((flags & SubmissionQueueEntry.PSDT_MASK) != SubmissionQueueEntry.FLAGS_PSDT_SGL) {
            failEarly(request, sqe, NvmeStatus.INVALID_FIELD | NvmeStatus.DNR, "PSDT other than SGL");
            return;
        }
        if (fuse != 0 && (c == null || queueId == 0)) {
            failEarly(request, sqe, NvmeStatus.INVALID_FIELD | NvmeStatus.DNR, "fused command outside an I/O queue");
            return;
        }
        if (c == null) {
            fabrics.connect(this, request);
            return;
        }
        boolean fabricsCommand = sqe.isFabrics();
        if (c.isDraining() && !fabricsCommand) {
            // Target shutdown: commands already in flight finish; new ones end now so the queue drains.
            fail(request, sqe, NvmeStatus.ABORTED_SQ_DELETION, "target shutting down");
            return;
        }
        QueueAuthentication a = auth;
        if (a != null && !a.isAuthenticated() && !AuthenticationCommands.isAuthentication(sqe)) {
            failEarly(request, sqe, NvmeStatus.FABRICS_AUTHENTICATION_REQUIRED | NvmeStatus.DNR,
                "queue not authenticated");
            return;
        }
        if (!fabricsCommand && !c.isReady()) {
            failEarly(request, sqe, NvmeStatus.COMMAND_SEQUENCE_ERROR | NvmeStatus.DNR,
                "controller not enabled (CC.EN/CSTS.RDY)");
            return;
        }
        if (queueId == 0) {
            adminCommand(c, request, sqe);
        } else if (fuse != 0 || fused.waiting()) {
            fused.onCommand(c, request, sqe, fuse);
        } else {
            ioCommand(c, request, sqe);
        }
    }

    /** The admin queue: fabrics commands and the controller's admin command set, metered per slot. */
    private void adminCommand(Controller c, Request request, SubmissionQueueEntry sqe) {
        Request r = request;
        SubsystemMeters m = subsystemMeters;
        // An Asynchronous Event Request waits for an event by design: its "latency" would swamp the admin timer.
        if (m != null && sqe.opcode() != AdminOpcode.ASYNC_EVENT_REQUEST) {
            r = context(request).metered.admin(m, transport);
        }
        if (sqe.isFabrics()) {
            fabrics.execute(this, c, r);
        } else {
            c.admin().execute(r);
        }
    }

    /** An I/O queue's command (nvmet_parse_io_cmd): fabrics commands, or namespace, ANA, reservation, execute. */
    void ioCommand(Controller c, Request request, SubmissionQueueEntry sqe) {
        if (sqe.isFabrics()) {
            fabrics.execute(this, c, request);
            return;
        }
        Namespace namespace = c.subsystem().namespace(sqe.nsid());
        if (namespace == null) {
            fail(request, sqe, NvmeStatus.INVALID_NAMESPACE | NvmeStatus.DNR, "inactive NSID");
            return;
        }
        // ANA: on a path whose group is inaccessible, lost or changing the host must go elsewhere (SCT 3, no DNR).
        int ana = AnaState.ioStatus(c.port().ana().state(namespace.anaGroupId()));
        if (ana != NvmeStatus.SUCCESS) {
            fail(request, sqe, ana, "ANA state of the namespace's group");
            return;
        }
        int opcode = sqe.opcode();
        if (ReservationCommands.isReservationCommand(opcode)) {
            ReservationCommands.execute(c, request, namespace);
            return;
        }
        int reservation = namespace.reservations().check(c.hostId(), opcode);
        if (reservation != NvmeStatus.SUCCESS) {
            fail(request, sqe, reservation, "reservation");
            return;
        }
        CommandContext context = context(request);
        Request admitted = context.inFlight.begin(inFlight, inFlightHalf);
        NamespaceMeters meters = metrics == null ? null : namespace.meters();
        if (meters != null) {
            admitted = context.metered.io(meters, TargetMeterNames.ioOp(opcode), transport);
        }
        nvm.execute(admitted, namespace, context.io);
    }

    /** A fused Compare and Write whose halves {@link FusedPairs} paired: the pair's own checks, then the executor. */
    void executeFusedPair(Controller c, Request compare, Request write) {
        SubmissionQueueEntry first = compare.command();
        SubmissionQueueEntry second = write.command();
        int status = NvmeStatus.SUCCESS;
        Namespace namespace = null;
        if (!c.isReady()) {
            status = NvmeStatus.COMMAND_SEQUENCE_ERROR | NvmeStatus.DNR; // disabled while a half waited
        } else if (first.nsid() != second.nsid()) {
            status = NvmeStatus.INVALID_FIELD | NvmeStatus.DNR; // a fused pair works on one namespace
        } else {
            namespace = c.subsystem().namespace(first.nsid());
            if (namespace == null) {
                status = NvmeStatus.INVALID_NAMESPACE | NvmeStatus.DNR;
            }
        }
        if (status != NvmeStatus.SUCCESS) {
            fail(compare, first, status, "fused pair");
            fail(write, second, status, "fused pair");
            return;
        }
        // The reservation applies to each half (Compare reads, Write writes); a refused half fails the other.
        int compareAccess = namespace.reservations().check(c.hostId(), first.opcode());
        int writeAccess = namespace.reservations().check(c.hostId(), second.opcode());
        if (compareAccess != NvmeStatus.SUCCESS || writeAccess != NvmeStatus.SUCCESS) {
            fail(compare, first, compareAccess != NvmeStatus.SUCCESS ? compareAccess : NvmeStatus.ABORTED_FAILED_FUSED,
                "reservation");
            fail(write, second, writeAccess != NvmeStatus.SUCCESS ? writeAccess : NvmeStatus.ABORTED_FAILED_FUSED,
                "reservation");
            return;
        }
        CommandContext compareContext = context(compare);
        CommandContext writeContext = context(write);
        Request admittedCompare = compareContext.inFlight.begin(inFlight, inFlightHalf);
        Request admittedWrite = writeContext.inFlight.begin(inFlight, inFlightHalf);
        NamespaceMeters meters = metrics == null ? null : namespace.meters();
        if (meters != null) {
            admittedCompare = compareContext.metered.io(meters, TargetMeterNames.ioOp(first.opcode()), transport);
            admittedWrite = writeContext.metered.io(meters, TargetMeterNames.ioOp(second.opcode()), transport);
        }
        nvm.executeFused(admittedCompare, admittedWrite, namespace, compareContext.io);
    }

    /**
     * The context of the request's slot, made the first time the slot carries a command after Connect (or when the
     * transport gave the slot a new request object). Reactor thread.
     */
    private CommandContext context(Request request) {
        int slot = request.slot();
        CommandContext[] cs = contexts;
        if (slot < cs.length) {
            CommandContext c = cs[slot];
            if (c != null && c.transportRequest == request) {
                return c;
            }
        } else {
            contexts = cs = Arrays.copyOf(cs, slot + 1);
        }
        CommandContext c = new CommandContext(request, queueId != 0, metrics != null, backends);
        cs[slot] = c;
        return c;
    }

    /** A command that failed a check of the entry; on an I/O queue it is also no fused partner of its neighbours. */
    private void failEarly(Request request, SubmissionQueueEntry sqe, int status, String why) {
        fail(request, sqe, status, why);
        fused.notAPartner(request.sequence());
    }

    /** Completes a command that failed before reaching its executor, counting it when metrics are on. */
    void fail(Request request, SubmissionQueueEntry sqe, int status, String why) {
        SubsystemMeters m = subsystemMeters;
        if (m != null) {
            m.recordEarlyFailure(queueId == 0 ? TargetMeterNames.OP_ADMIN : TargetMeterNames.ioOp(sqe.opcode()),
                status);
        }
        if (LOG.isDebugEnabled()) {
            LOG.debug("{}: {} cid {} failed with {}: {}", this, sqe.isFabrics()
                    ? FabricsCommandType.name(sqe.fabricsCommandType()) : String.format("opcode 0x%02x", sqe.opcode()),
                sqe.commandId(), NvmeStatus.describe(status), why);
        }
        request.complete(status);
    }

    // ---- commands in flight, for Preempt and Abort (counted on the reactor thread, drained by PreemptAndAbort) ----

    /**
     * The barrier of a Preempt and Abort, on this queue's reactor: every command this queue admitted before now is
     * counted in the current half. Makes new commands count in the other half and returns the half to wait for, or -1
     * while the other half still holds commands of an earlier drain (then the caller asks again).
     */
    int beginDrain() {
        int other = inFlightHalf ^ 1;
        if (inFlight.get(other) != 0) {
            return -1;
        }
        int old = inFlightHalf;
        inFlightHalf = other;
        return old;
    }

    /** Admitted commands of {@code half} not yet completed. Any thread. */
    long admittedInFlight(int half) {
        return inFlight.get(half);
    }

    /** Admitted commands not yet completed, both halves. Any thread. */
    long admittedInFlight() {
        return inFlight.get(0) + inFlight.get(1);
    }

    /** Number of fused halves waiting for a partner (tests). */
    int fusedHalvesWaiting() {
        return fused.halvesWaiting();
    }

    /** True while this queue's DH-HMAC-CHAP transaction runs (keep-alive then does not count its silence). */
    boolean authenticationPending() {
        QueueAuthentication a = auth;
        return a != null && a.isTransactionInProgress();
    }

    @Override
    public void onResponseSent(Request request, long sentNanos) {
        int slot = request.slot();
        CommandContext[] cs = contexts;
        if (slot < cs.length) {
            CommandContext c = cs[slot];
            if (c != null && c.metered != null && c.transportRequest == request) {
                c.metered.responseSent(sentNanos);
            }
        }
        QueueAuthentication a = auth;
        if (a != null) {
            a.responseSent(slot);
        }
    }

    @Override
    public void onClosed(String reason) {
        closed = true;
        fused.close();
        Controller c = controller;
        if (c != null) {
            c.queueClosed(this, reason);
        }
    }

    @Override
    public String toString() {
        return "queue " + queueId + " from " + queue.peer();
    }
}
