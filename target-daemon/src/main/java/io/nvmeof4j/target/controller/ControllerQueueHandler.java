package io.nvmeof4j.target.controller;

import io.nvmeof4j.protocol.ana.AnaState;
import io.nvmeof4j.protocol.command.NvmeStatus;
import io.nvmeof4j.protocol.command.SubmissionQueueEntry;
import io.nvmeof4j.protocol.fabrics.ConnectCommand;
import io.nvmeof4j.protocol.fabrics.ConnectData;
import io.nvmeof4j.protocol.spi.QueueHandler;
import io.nvmeof4j.protocol.spi.Request;
import io.nvmeof4j.protocol.spi.TransportQueue;
import io.nvmeof4j.protocol.admin.AdminOpcode;
import io.nvmeof4j.protocol.auth.ControllerAuthentication;
import io.nvmeof4j.protocol.auth.Dhchap;
import io.nvmeof4j.protocol.auth.GeneratedPsk;
import io.nvmeof4j.target.auth.AuthenticationCommands;
import io.nvmeof4j.target.auth.HostKeys;
import io.nvmeof4j.target.io.NvmCommandExecutor;
import io.nvmeof4j.target.metrics.MeteredRequest;
import io.nvmeof4j.target.metrics.NamespaceMeters;
import io.nvmeof4j.target.metrics.SubsystemMeters;
import io.nvmeof4j.target.metrics.TargetMeterNames;
import io.nvmeof4j.target.metrics.TargetMetrics;
import io.nvmeof4j.target.model.Namespace;
import io.nvmeof4j.tcp.tls.DerivedPsk;
import io.nvmeof4j.tcp.tls.HostPskStore;
import io.nvmeof4j.tcp.tls.NvmeTlsKeys;
import io.nvmeof4j.tcp.tls.PskHash;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.security.SecureRandom;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * The command layer's side of one queue (one TCP connection or RDMA queue pair). Before a Connect it accepts
 * only Connect; afterwards the admin queue goes to its controller's {@link AdminCommands} and an I/O queue
 * straight to the NVM executor.
 * <p>The I/O path ({@link #onCommand} on an I/O queue) checks the flags, the controller's readiness, the NSID, the
 * ANA state of the namespace's group on this port and the namespace's reservation, counts the command in flight
 * ({@link InFlightRequest}, for Preempt and Abort), then delegates: no allocation, no lock, no logging. Reservation
 * commands go to {@link ReservationCommands} (control operations). A counter of commands received (written only by the
 * reactor) gives the keep-alive timer its traffic; the shutdown's in-flight count comes from the transport
 * ({@link TransportQueue#commandsOutstanding()}), which also sees writes still receiving their data.
 * <p>Metrics: with metrics on, commands go on wrapped in the slot's {@link MeteredRequest} with the meters resolved
 * for the namespace (or, on the admin queue, the subsystem) and the queue's transport; failures found here are
 * counted in the subsystem's failure table. Both without allocation once the slot has been used.
 * <p>DH-HMAC-CHAP: when the host has credentials ({@link HostKeys}), every queue (admin and I/O) must authenticate
 * after its Connect: until then only Authentication Send/Receive run, anything else gets Authentication Required
 * (0x191, DNR), as nvmet answers. A failed authentication, or one not finished within
 * {@link #AUTH_TIMEOUT_MILLIS} (or KATO when longer), makes the controller fatal once the Failure1 has left; while a
 * transaction runs, keep-alive does not count the queue's silence. An authentication command between two fused
 * halves breaks their adjacency like any other command.
 * <p>Secure channel concatenation: the admin queue of a connection without TLS to a TLS port takes SC_C NEWTLSPSK;
 * the PSK the transaction generates goes into the {@link HostPskStore} for the host's TLS reconnect. A queue under
 * such a PSK needs no authentication (no ATR, as nvmet), but its admin queue takes a host's REPLACETLSPSK, whose
 * new PSK replaces the old one for the controller's later connections. Everything else refuses SC_C (Failure1 03h).
 *
 * <h2>Fused operations (NVMe Base 2.0, 3.4.2)</h2>
 * The one fused operation served is Compare (FUSE 01b) then Write (FUSE 10b), next to each other in this queue:
 * adjacency is judged by {@link Request#sequence()} (the capsule order), not by the order commands reach this
 * handler, since a half that pulls its data (R2T, RDMA READ) arrives after a later command with in-capsule data.
 * Whichever half comes first waits here (a handful at most, reactor thread only) until its partner does; the
 * pair then goes to {@link NvmCommandExecutor#executeFused}. Statuses, as the spec and SPDK answer them:
 * <ul>
 *   <li>FUSE 11b, a fused command on the admin queue, a first half that is not Compare or a second half that is
 *       not Write: Invalid Field in Command + DNR (FUSES only offers Compare and Write).</li>
 *   <li>A half whose neighbour in the queue is not its partner (a plain command, or a half of the wrong kind):
 *       Aborted – Missing Fused Command (0x00A). A fused pair split across two queues is this case on both.</li>
 *   <li>A half whose partner never comes: Aborted – Missing Fused Command after
 *       {@link #FUSED_PARTNER_TIMEOUT_MILLIS}. nvmet has no fused commands and SPDK waits for the next command
 *       without a limit; the spec sets none. One second is far above what a host needs to send two adjacent
 *       capsules and the second's data (at most MDTS), and a waiting half holds no LBA range: nothing else on
 *       the namespace waits for it.</li>
 *   <li>Halves naming different NSIDs: Invalid Field in Command + DNR for both.</li>
 *   <li>A half the namespace's reservation refuses: Reservation Conflict for it, Aborted – Failed Fused Command for
 *       the other (the Write of a preempted host must not slip past the fence inside a pair).</li>
 * </ul>
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

    /** How long a fused half waits for its partner before it is answered Aborted – Missing Fused Command. */
    static final long FUSED_PARTNER_TIMEOUT_MILLIS = 1000;
    /** How often the timer looks for a fused half past its time. */
    private static final long FUSED_SWEEP_PERIOD_MILLIS = 100;
    /** Fused halves that may wait at once on one queue; a further one ends the oldest. */
    private static final int FUSED_PARKED_MAX = 8;
    private static final int FUSE_FIRST = 0x1;
    private static final int FUSE_SECOND = 0x2;
    private static final int OPC_COMPARE = 0x05;
    private static final int OPC_WRITE = 0x01;

    private final ControllerQueueHandlerFactory factory;
    private final TransportQueue queue;
    private final NvmCommandExecutor nvm;
    /** Null when metrics are off. */
    private final TargetMetrics metrics;
    private final int transport;
    /** The controller's subsystem meters, resolved at Connect; null when metrics are off. */
    private volatile SubsystemMeters subsystemMeters;
    /** Connect flyweights, used on this queue's reactor thread only. */
    final ConnectCommand connectCommand = new ConnectCommand();
    final ConnectData connectData = new ConnectData();

    /** Set on the reactor thread by a successful Connect; read there and, racily but harmlessly, by logging. */
    private volatile Controller controller;
    private volatile int queueId = -1;
    private volatile boolean closed;

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

    /** Non-null when this queue must authenticate; set and used on the reactor thread, peeked at by keep-alive. */
    private volatile ControllerAuthentication auth;
    private AuthenticationCommands authCommands;
    private long authTimeoutMillis;
    /** The generated PSK (its identity) this queue's TLS connection runs under, or null; reactor thread. */
    private String generatedPskIdentity;
    /** A timer check of {@link #auth}'s deadline is on its way; reactor thread only. */
    private boolean authCheckScheduled;
    /** The auth response after which the controller goes (Failure1 sent / Failure2 received); reactor thread. */
    private Request disconnectAfter;

    // Fused halves waiting for their partner: reactor thread only, created at this queue's first fused command.
    private Request[] parked;
    private long[] parkedDeadline;
    private int parkedCount;
    /** The earliest deadline of a waiting half (0: none); read by the timer thread. */
    private volatile long fusedDeadline;
    private ScheduledFuture<?> fusedTimer;
    /** Timer thread: hands the sweep to the reactor only when a half is past its time. */
    private final Runnable fusedTimerCheck = this::fusedTimerCheck;
    private final Runnable fusedSweep = this::sweepFused;

    ControllerQueueHandler(ControllerQueueHandlerFactory factory, TransportQueue queue, NvmCommandExecutor nvm,
                           TargetMetrics metrics) {
        this.factory = factory;
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

    int queueId() {
        return queueId;
    }

    boolean isClosed() {
        return closed;
    }

    /** Records a successful Connect (reactor thread, before the Connect completes). */
    void connected(Controller controller, int qid) {
        if (metrics != null) {
            SubsystemMeters m = metrics.subsystem(controller.subsystemNqn());
            subsystemMeters = m != null ? m : metrics.bindSubsystem(controller.subsystemNqn());
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

    @Override
    public void onCommand(Request request) {
        RECEIVED.setRelease(this, (long) RECEIVED.getOpaque(this) + 1);
        SubmissionQueueEntry sqe = request.command();
        int flags = sqe.flags();
        int fuse = flags & SubmissionQueueEntry.FUSE_MASK;
        // Fabrics: data is always described by SGLs (PSDT 01b).
        if ((flags & SubmissionQueueEntry.PSDT_MASK) != SubmissionQueueEntry.FLAGS_PSDT_SGL) {
            fail(request, sqe, NvmeStatus.INVALID_FIELD | NvmeStatus.DNR);
            if (parkedCount != 0) {
                notAPartner(request.sequence());
            }
            return;
        }
        Controller c = controller;
        if (c == null || queueId == 0) {
            if (fuse != 0) {
                // No fused operation exists for Fabrics or admin commands.
                fail(request, sqe, NvmeStatus.INVALID_FIELD | NvmeStatus.DNR);
                return;
            }
            if (c == null) {
                factory.connect(this, request);
                return;
            }
        }
        if (c.isDraining() && !sqe.isFabrics()) {
            // Target shutdown: commands already in flight finish; new ones end now so the queue drains.
            fail(request, sqe, NvmeStatus.ABORTED_SQ_DELETION);
            return;
        }
        ControllerAuthentication a = auth;
        if (a != null) {
            boolean authCommand = AuthenticationCommands.isAuthentication(sqe);
            if (authCommand || !a.isAuthenticated()) {
                if (parkedCount != 0) {
                    notAPartner(request.sequence());
                }
                if (!authCommand) {
                    fail(request, sqe, NvmeStatus.FABRICS_AUTHENTICATION_REQUIRED | NvmeStatus.DNR);
                    return;
                }
                boolean wasPending = a.isPending(); // the first authentication, or a re-authentication, running
                boolean failed = authCommands.execute(request, a);
                GeneratedPsk generated = a.takeGeneratedPsk();
                if (generated != null) {
                    storeGeneratedPsk(c, generated);
                }
                if (metrics != null && (failed || (wasPending && !a.isPending() && a.isAuthenticated()))) {
                    metrics.authentication(!failed, a.hash(), a.group());
                }
                if (failed) {
                    disconnectAfter = request;
                } else if (!authCheckScheduled && a.isPending()) {
                    // A re-authentication started: bound it like the first one.
                    scheduleAuthenticationCheck(c, authTimeoutMillis);
                }
                return;
            }
        }
        if (queueId != 0) {
            if (fuse != 0 || parkedCount != 0) {
                fusedOrNeighbour(c, request, sqe, fuse);
            } else {
                ioCommand(c, request, sqe);
            }
            return;
        }
        SubsystemMeters m = subsystemMeters;
        if (m == null || sqe.opcode() == AdminOpcode.ASYNC_EVENT_REQUEST) {
            // An Asynchronous Event Request waits for an event by design: its "latency" would swamp the admin timer.
            c.admin().execute(request);
        } else {
            c.admin().execute(MeteredRequest.of(request).admin(m, transport));
        }
    }

    /** Completes a command that failed here, counting it when metrics are on. */
    private void fail(Request request, SubmissionQueueEntry sqe, int status) {
        SubsystemMeters m = subsystemMeters;
        if (m != null) {
            m.recordEarlyFailure(queueId == 0 ? TargetMeterNames.OP_ADMIN : TargetMeterNames.ioOp(sqe.opcode()),
                status);
        }
        request.complete(status);
    }

    private void ioCommand(Controller c, Request request, SubmissionQueueEntry sqe) {
        if (sqe.opcode() == SubmissionQueueEntry.OPCODE_FABRICS) {
            // Only Connect (already done) and authentication may use an I/O queue; we offer no authentication.
            fail(request, sqe, NvmeStatus.INVALID_OPCODE | NvmeStatus.DNR);
            return;
        }
        if (!c.isReady()) {
            fail(request, sqe, NvmeStatus.COMMAND_SEQUENCE_ERROR | NvmeStatus.DNR);
            return;
        }
        Namespace namespace = c.subsystem().namespace(sqe.nsid());
        if (namespace == null) {
            fail(request, sqe, NvmeStatus.INVALID_NAMESPACE | NvmeStatus.DNR);
            return;
        }
        // ANA: on a path whose group is inaccessible, lost or changing the host must go elsewhere (SCT 3, no DNR).
        int ana = AnaState.ioStatus(c.port().ana().state(namespace.anaGroupId()));
        if (ana != NvmeStatus.SUCCESS) {
            fail(request, sqe, ana);
            return;
        }
        int opcode = sqe.opcode();
        if (ReservationCommands.isReservationCommand(opcode)) {
            ReservationCommands.execute(c, request, namespace);
            return;
        }
        int reservation = namespace.reservations().check(c.hostId(), opcode);
        if (reservation != NvmeStatus.SUCCESS) {
            fail(request, sqe, reservation);
            return;
        }
        Request admitted = admit(request);
        NamespaceMeters meters = metrics == null ? null : namespace.meters();
        if (meters == null) {
            nvm.execute(admitted, namespace);
        } else {
            nvm.execute(MeteredRequest.of(admitted).io(meters, TargetMeterNames.ioOp(sqe.opcode()), transport),
                namespace);
        }
    }

    // ---- commands in flight, for Preempt and Abort (counted on the reactor thread, drained by PreemptAndAbort) ----

    /** Counts an admitted I/O command in the current half until it completes. Reactor thread. */
    private Request admit(Request request) {
        return InFlightRequest.of(request).begin(inFlight, inFlightHalf);
    }

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

    // ---- fused operations (reactor thread) -----------------------------------------------------------------------

    /** A fused half, or any command while a half waits (it may be the neighbour that says the partner is missing). */
    private void fusedOrNeighbour(Controller c, Request request, SubmissionQueueEntry sqe, int fuse) {
        long seq = request.sequence();
        if (fuse == 0) {
            notAPartner(seq);
            ioCommand(c, request, sqe);
            return;
        }
        if (fuse == FUSE_FIRST && sqe.opcode() == OPC_COMPARE) {
            abortParked(seq - 1, FUSE_FIRST); // the first before this one was not followed by a second
            Request second = takeParked(seq + 1, FUSE_SECOND);
            if (second != null) {
                executePair(c, request, second);
            } else {
                park(request);
            }
            return;
        }
        if (fuse == FUSE_SECOND && sqe.opcode() == OPC_WRITE) {
            abortParked(seq + 1, FUSE_SECOND); // the second after this one has no first before it
            Request first = takeParked(seq - 1, FUSE_FIRST);
            if (first != null) {
                executePair(c, first, request);
            } else {
                park(request);
            }
            return;
        }
        // FUSE 11b (reserved), or a fused operation other than Compare and Write.
        fail(request, sqe, NvmeStatus.INVALID_FIELD | NvmeStatus.DNR);
        notAPartner(seq);
    }

    /** The command at {@code seq} is no fused partner: halves waiting next to it for one are answered now. */
    private void notAPartner(long seq) {
        abortParked(seq - 1, FUSE_FIRST);
        abortParked(seq + 1, FUSE_SECOND);
    }

    private void executePair(Controller c, Request compare, Request write) {
        SubmissionQueueEntry first = compare.command();
        SubmissionQueueEntry second = write.command();
        int status = NvmeStatus.SUCCESS;
        Namespace namespace = null;
        if (!c.isReady()) {
            status = NvmeStatus.COMMAND_SEQUENCE_ERROR | NvmeStatus.DNR;
        } else if (first.nsid() != second.nsid()) {
            status = NvmeStatus.INVALID_FIELD | NvmeStatus.DNR; // a fused pair works on one namespace
        } else {
            namespace = c.subsystem().namespace(first.nsid());
            if (namespace == null) {
                status = NvmeStatus.INVALID_NAMESPACE | NvmeStatus.DNR;
            }
        }
        if (status != NvmeStatus.SUCCESS) {
            fail(compare, first, status);
            fail(write, second, status);
            return;
        }
        // The reservation applies to each half (Compare reads, Write writes); a refused half fails the other.
        int compareAccess = namespace.reservations().check(c.hostId(), first.opcode());
        int writeAccess = namespace.reservations().check(c.hostId(), second.opcode());
        if (compareAccess != NvmeStatus.SUCCESS || writeAccess != NvmeStatus.SUCCESS) {
            fail(compare, first, compareAccess != NvmeStatus.SUCCESS ? compareAccess : NvmeStatus.ABORTED_FAILED_FUSED);
            fail(write, second, writeAccess != NvmeStatus.SUCCESS ? writeAccess : NvmeStatus.ABORTED_FAILED_FUSED);
            return;
        }
        Request admittedCompare = admit(compare);
        Request admittedWrite = admit(write);
        NamespaceMeters meters = metrics == null ? null : namespace.meters();
        if (meters == null) {
            nvm.executeFused(admittedCompare, admittedWrite, namespace);
        } else {
            nvm.executeFused(
                MeteredRequest.of(admittedCompare).io(meters, TargetMeterNames.ioOp(first.opcode()), transport),
                MeteredRequest.of(admittedWrite).io(meters, TargetMeterNames.ioOp(second.opcode()), transport),
                namespace);
        }
    }

    private void park(Request request) {
        if (parked == null) {
            parked = new Request[FUSED_PARKED_MAX];
            parkedDeadline = new long[FUSED_PARKED_MAX];
        }
        if (parkedCount == FUSED_PARKED_MAX) {
            missingPartner(0, "more than " + FUSED_PARKED_MAX + " fused halves waiting on one queue");
        }
        parked[parkedCount] = request;
        parkedDeadline[parkedCount] = request.receivedNanos()
            + TimeUnit.MILLISECONDS.toNanos(FUSED_PARTNER_TIMEOUT_MILLIS);
        parkedCount++;
        updateFusedDeadline();
        if (fusedTimer == null) {
            // One timer task per queue, created with its first fused command and cancelled with the queue.
            fusedTimer = factory.registry().scheduleAtFixedRate(fusedTimerCheck, FUSED_SWEEP_PERIOD_MILLIS);
        }
    }

    private Request takeParked(long seq, int fuse) {
        for (int i = 0; i < parkedCount; i++) {
            Request r = parked[i];
            if (r.sequence() == seq && (r.command().flags() & SubmissionQueueEntry.FUSE_MASK) == fuse) {
                removeParked(i);
                return r;
            }
        }
        return null;
    }

    private void abortParked(long seq, int fuse) {
        for (int i = 0; i < parkedCount; i++) {
            Request r = parked[i];
            if (r.sequence() == seq && (r.command().flags() & SubmissionQueueEntry.FUSE_MASK) == fuse) {
                missingPartner(i, "the command next to it in the queue is not its partner");
                return;
            }
        }
    }

    private void missingPartner(int index, String why) {
        Request r = parked[index];
        removeParked(index);
        SubmissionQueueEntry sqe = r.command();
        boolean first = (sqe.flags() & SubmissionQueueEntry.FUSE_MASK) == FUSE_FIRST;
        LOG.warn("fused {} half (CID {}, NSID {}) on I/O queue {} from {}: {}; answered Aborted - Missing Fused Command",
            first ? "first (Compare)" : "second (Write)", sqe.commandId(), Integer.toUnsignedString(sqe.nsid()),
            queueId, queue.peer(), why);
        fail(r, sqe, NvmeStatus.ABORTED_MISSING_FUSED);
    }

    private void removeParked(int index) {
        int last = --parkedCount;
        for (int i = index; i < last; i++) {
            parked[i] = parked[i + 1];
            parkedDeadline[i] = parkedDeadline[i + 1];
        }
        parked[last] = null;
        updateFusedDeadline();
    }

    private void updateFusedDeadline() {
        long earliest = 0;
        for (int i = 0; i < parkedCount; i++) {
            if (earliest == 0 || parkedDeadline[i] - earliest < 0) {
                earliest = parkedDeadline[i];
            }
        }
        fusedDeadline = earliest;
    }

    /** Timer thread. */
    private void fusedTimerCheck() {
        long deadline = fusedDeadline;
        if (deadline != 0 && System.nanoTime() - deadline >= 0 && !closed) {
            try {
                queue.execute(fusedSweep);
            } catch (RuntimeException e) {
                // The reactor is stopping: its queues close, and onClosed ends the waiting halves.
                LOG.debug("fused sweep for {} not run: {}", this, e.toString());
            }
        }
    }

    /** Reactor thread: answers the halves whose partner did not come in time. */
    private void sweepFused() {
        long now = System.nanoTime();
        for (int i = parkedCount - 1; i >= 0; i--) {
            if (now - parkedDeadline[i] >= 0) {
                missingPartner(i, "its partner did not arrive within " + FUSED_PARTNER_TIMEOUT_MILLIS + " ms");
            }
        }
    }

    /** Number of fused halves waiting for a partner (tests). */
    int fusedHalvesWaiting() {
        return parkedCount;
    }

    @Override
    public void onResponseSent(Request request) {
        Object a = request.attachment();
        if (a instanceof InFlightRequest counted) {
            a = counted.attachment(); // an I/O command: the metering sits behind its in-flight count
        }
        if (a instanceof MeteredRequest m) {
            m.responseSent();
        }
        if (request == disconnectAfter) {
            disconnectAfter = null;
            authenticationFailed(auth.lastFailure());
        }
    }

    /**
     * Called by the Connect (reactor thread, before it completes): when the host has DH-HMAC-CHAP credentials and
     * this is not a discovery controller, the queue must authenticate, unless its TLS connection runs under a PSK
     * that DH-HMAC-CHAP generated: then it starts authenticated (its admin queue may still replace the PSK).
     *
     * @param generatedPsk the identity of the generated PSK the queue's TLS connection runs under, or null
     * @return true when it must: the Connect response then carries ATR
     */
    boolean requireAuthentication(HostKeys keys, Controller c, SecureRandom random, String generatedPsk) {
        if (c.isDiscovery() || keys.get(c.hostNqn()) == null) {
            return false;
        }
        String host = c.hostNqn();
        boolean underGenerated = generatedPsk != null;
        generatedPskIdentity = generatedPsk;
        authTimeoutMillis = Math.max(c.keepAliveTimeoutMillis(), AUTH_TIMEOUT_MILLIS);
        auth = new ControllerAuthentication(() -> keys.get(host), host, c.subsystemNqn(), random,
            TimeUnit.MILLISECONDS.toNanos(authTimeoutMillis), System.nanoTime(), secureChannel(c, underGenerated),
            underGenerated);
        authCommands = new AuthenticationCommands();
        if (underGenerated) {
            return false;
        }
        scheduleAuthenticationCheck(c, authTimeoutMillis);
        return true;
    }

    /** What SC_C this queue takes (nvmet_auth_negotiate: admin queue only, NEWTLSPSK without TLS, else REPLACE). */
    private ControllerAuthentication.SecureChannel secureChannel(Controller c, boolean underGenerated) {
        if (queueId != 0) {
            return ControllerAuthentication.SecureChannel.none("I/O queue " + queueId
                + " (secure channel concatenation is negotiated on the admin queue only)");
        }
        if (underGenerated) {
            return new ControllerAuthentication.SecureChannel(Dhchap.SC_C_REPLACETLSPSK,
                "the admin queue already runs under a generated TLS PSK (REPLACETLSPSK replaces it)");
        }
        if (queue.secureChannelPskIdentity() != null) {
            return ControllerAuthentication.SecureChannel.none("the admin queue runs under TLS with a configured PSK");
        }
        if (!c.port().options().tls()) {
            return ControllerAuthentication.SecureChannel.none("port " + c.port().portId()
                + " does not speak TLS (addr.tsas), so the host could not reconnect under the generated PSK");
        }
        return new ControllerAuthentication.SecureChannel(Dhchap.SC_C_NEWTLSPSK,
            "the admin queue is not under TLS yet (NEWTLSPSK generates the first PSK)");
    }

    /**
     * Turns the PSK a transaction generated into the TLS PSK and identity both sides derive, and keeps it for the
     * host: NEWTLSPSK for its TLS reconnect (unbound until the admin Connect there, dropped after
     * {@link #GENERATED_PSK_UNUSED_TIMEOUT_MILLIS} without), REPLACETLSPSK in place of the one this queue runs under.
     */
    private void storeGeneratedPsk(Controller c, GeneratedPsk generated) {
        HostPskStore psks = c.registry().tlsKeys();
        DerivedPsk psk;
        try {
            if (psks == null) {
                return;
            }
            psk = NvmeTlsKeys.deriveGenerated(PskHash.byId(generated.hash().id()), generated.key(), c.hostNqn(),
                c.subsystemNqn());
        } finally {
            generated.clear();
        }
        String identity = psk.identity().toString();
        if (generated.secureChannel() == Dhchap.SC_C_REPLACETLSPSK) {
            if (psks.replaceGenerated(generatedPskIdentity, psk)) {
                LOG.info("{}: REPLACETLSPSK from {}: generated TLS PSK {} replaces {}", c, queue.peer(), identity,
                    generatedPskIdentity);
                generatedPskIdentity = identity;
            } else {
                psk.clear();
                LOG.warn("{}: REPLACETLSPSK from {}: the generated TLS PSK {} is gone; nothing replaced", c,
                    queue.peer(), generatedPskIdentity);
            }
            return;
        }
        psks.addGenerated(psk, TimeUnit.MILLISECONDS.toNanos(GENERATED_PSK_UNUSED_TIMEOUT_MILLIS));
        LOG.info("{}: secure channel concatenation from {}: generated TLS PSK {} for the host's TLS reconnect",
            c, queue.peer(), identity);
    }

    /**
     * How long a PSK generated by NEWTLSPSK waits for the host's TLS admin Connect under it. The Linux host
     * reconnects at once (nvme_tcp_setup_ctrl restarts the admin queue right after the transaction); the bound only
     * keeps a host that never comes back from leaving PSKs behind.
     */
    static final long GENERATED_PSK_UNUSED_TIMEOUT_MILLIS = 120_000;

    /**
     * Bound on one authentication transaction, and on the first authentication after Connect. nvmet uses KATO
     * (120 s without one); a 5 s KATO is too short for a host computing an ffdhe8192 exchange on a slow machine
     * (the Linux host under emulation needed more), so never less than nvmet's 120 s. A host that never starts
     * authenticating and sends nothing is still dropped by keep-alive after KATO.
     */
    static final long AUTH_TIMEOUT_MILLIS = 120_000;

    /** True while this queue's DH-HMAC-CHAP transaction runs (keep-alive then does not count its silence). */
    boolean authenticationPending() {
        ControllerAuthentication a = auth;
        return a != null && a.isTransactionInProgress();
    }

    private void scheduleAuthenticationCheck(Controller c, long delayMillis) {
        authCheckScheduled = true;
        c.registry().schedule(() -> queue.execute(() -> {
            authCheckScheduled = false;
            ControllerAuthentication a = auth;
            if (closed || a == null || a.mustDisconnect()) {
                return;
            }
            if (a.isExpired(System.nanoTime())) {
                authenticationFailed("authentication not completed within " + delayMillis + " ms");
            } else if (a.isPending()) {
                scheduleAuthenticationCheck(c, delayMillis);
            }
        }), delayMillis);
    }

    private void authenticationFailed(String why) {
        Controller c = controller;
        if (c != null) {
            // nvmet_ctrl_fatal_error: a queue that failed DH-HMAC-CHAP takes its controller down.
            c.destroy("DH-HMAC-CHAP on queue " + queueId + " from " + queue.peer() + " failed: " + why, true);
        }
    }

    @Override
    public void onClosed(String reason) {
        closed = true;
        if (fusedTimer != null) {
            fusedTimer.cancel(false);
        }
        while (parkedCount > 0) {
            // The queue is gone: these complete into nothing, but their slots go back to the transport.
            Request r = parked[parkedCount - 1];
            removeParked(parkedCount - 1);
            r.complete(NvmeStatus.ABORTED_SQ_DELETION);
        }
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
