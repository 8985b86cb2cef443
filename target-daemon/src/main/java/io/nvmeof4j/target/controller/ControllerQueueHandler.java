package io.nvmeof4j.target.controller;

import io.nvmeof4j.protocol.command.NvmeStatus;
import io.nvmeof4j.protocol.command.SubmissionQueueEntry;
import io.nvmeof4j.protocol.fabrics.ConnectCommand;
import io.nvmeof4j.protocol.fabrics.ConnectData;
import io.nvmeof4j.protocol.spi.QueueHandler;
import io.nvmeof4j.protocol.spi.Request;
import io.nvmeof4j.protocol.spi.TransportQueue;
import io.nvmeof4j.target.io.NvmCommandExecutor;
import io.nvmeof4j.target.model.Namespace;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * The command layer's side of one queue (one TCP connection or RDMA queue pair). Before a Connect it accepts
 * only Connect; afterwards the admin queue goes to its controller's {@link AdminCommands} and an I/O queue
 * straight to the NVM executor.
 * <p>The I/O path ({@link #onCommand} on an I/O queue) checks the flags, the controller's readiness and the
 * NSID, then delegates: no allocation, no lock, no logging. A counter of commands received (written only by the
 * reactor) gives the keep-alive timer its traffic; the shutdown's in-flight count comes from the transport
 * ({@link TransportQueue#commandsOutstanding()}), which also sees writes still receiving their data.
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

    ControllerQueueHandler(ControllerQueueHandlerFactory factory, TransportQueue queue, NvmCommandExecutor nvm) {
        this.factory = factory;
        this.queue = queue;
        this.nvm = nvm;
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
            request.complete(NvmeStatus.INVALID_FIELD | NvmeStatus.DNR);
            return;
        }
        Controller c = controller;
        if (c == null) {
            factory.connect(this, request);
            return;
        }
        if (c.isDraining() && !sqe.isFabrics()) {
            // Target shutdown: commands already in flight finish; new ones end now so the queue drains.
            request.complete(NvmeStatus.ABORTED_SQ_DELETION);
            return;
        }
        if (queueId != 0) {
            ioCommand(c, request, sqe);
            return;
        }
        c.admin().execute(request);
    }

    private void ioCommand(Controller c, Request request, SubmissionQueueEntry sqe) {
        if (sqe.opcode() == SubmissionQueueEntry.OPCODE_FABRICS) {
            // Only Connect (already done) and authentication may use an I/O queue; we offer no authentication.
            request.complete(NvmeStatus.INVALID_OPCODE | NvmeStatus.DNR);
            return;
        }
        if (!c.isReady()) {
            request.complete(NvmeStatus.COMMAND_SEQUENCE_ERROR | NvmeStatus.DNR);
            return;
        }
        Namespace namespace = c.subsystem().namespace(sqe.nsid());
        if (namespace == null) {
            request.complete(NvmeStatus.INVALID_NAMESPACE | NvmeStatus.DNR);
            return;
        }
        nvm.execute(request, namespace);
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
