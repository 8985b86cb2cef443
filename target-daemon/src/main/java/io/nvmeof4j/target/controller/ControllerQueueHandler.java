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
import io.nvmeof4j.target.io.NvmCommandExecutor;
import io.nvmeof4j.target.metrics.MeteredRequest;
import io.nvmeof4j.target.metrics.NamespaceMeters;
import io.nvmeof4j.target.metrics.SubsystemMeters;
import io.nvmeof4j.target.metrics.TargetMeterNames;
import io.nvmeof4j.target.metrics.TargetMetrics;
import io.nvmeof4j.target.model.Namespace;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * The command layer's side of one queue (one TCP connection or RDMA queue pair). Before a Connect it accepts
 * only Connect; afterwards the admin queue goes to its controller's {@link AdminCommands} and an I/O queue
 * straight to the NVM executor.
 * <p>The I/O path ({@link #onCommand} on an I/O queue) checks the flags, the controller's readiness, the NSID, the
 * ANA state of the namespace's group on this port and the namespace's reservation, then delegates: no allocation, no
 * lock, no logging. Reservation commands go to {@link ReservationCommands} (control operations). A counter of commands received (written only by the
 * reactor) gives the keep-alive timer its traffic; the shutdown's in-flight count comes from the transport
 * ({@link TransportQueue#commandsOutstanding()}), which also sees writes still receiving their data.
 * <p>Metrics: with metrics on, commands go on wrapped in the slot's {@link MeteredRequest} with the meters resolved
 * for the namespace (or, on the admin queue, the subsystem) and the queue's transport; failures found here are
 * counted in the subsystem's failure table. Both without allocation once the slot has been used.
 */
final class ControllerQueueHandler implements QueueHandler {
    private static final VarHandle RECEIVED;

    static {
        try {
            RECEIVED = MethodHandles.lookup().findVarHandle(ControllerQueueHandler.class, "received", long.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

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

    /** Written by the reactor thread only (release), read by the keep-alive timer (acquire). */
    @SuppressWarnings("unused") // through RECEIVED
    private long received;
    /** Last {@link #received} value the keep-alive timer saw; accessed under the controller's lock. */
    long keepAliveSeen;

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
        // Fabrics: data is always described by SGLs (PSDT 01b) and nvmet supports no fused operations.
        if ((flags & SubmissionQueueEntry.FUSE_MASK) != 0
            || (flags & SubmissionQueueEntry.PSDT_MASK) != SubmissionQueueEntry.FLAGS_PSDT_SGL) {
            fail(request, sqe, NvmeStatus.INVALID_FIELD | NvmeStatus.DNR);
            return;
        }
        Controller c = controller;
        if (c == null) {
            factory.connect(this, request);
            return;
        }
        if (c.isDraining() && !sqe.isFabrics()) {
            // Target shutdown: commands already in flight finish; new ones end now so the queue drains.
            fail(request, sqe, NvmeStatus.ABORTED_SQ_DELETION);
            return;
        }
        if (queueId != 0) {
            ioCommand(c, request, sqe);
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
        NamespaceMeters meters = metrics == null ? null : namespace.meters();
        if (meters == null) {
            nvm.execute(request, namespace);
        } else {
            nvm.execute(MeteredRequest.of(request).io(meters, TargetMeterNames.ioOp(sqe.opcode()), transport),
                namespace);
        }
    }

    @Override
    public void onResponseSent(Request request) {
        if (request.attachment() instanceof MeteredRequest m) {
            m.responseSent();
        }
    }

    @Override
    public void onClosed(String reason) {
        closed = true;
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
