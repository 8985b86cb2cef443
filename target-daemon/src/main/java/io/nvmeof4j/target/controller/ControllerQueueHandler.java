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
 * NSID, then delegates: no allocation, no lock, no logging. Two counters per queue (commands received, written
 * only by the reactor; commands completed, from any thread) give the keep-alive timer its traffic and the
 * shutdown its in-flight count.
 */
final class ControllerQueueHandler implements QueueHandler {
    private static final VarHandle RECEIVED;
    private static final VarHandle COMPLETED;

    static {
        try {
            MethodHandles.Lookup lookup = MethodHandles.lookup();
            RECEIVED = lookup.findVarHandle(ControllerQueueHandler.class, "received", long.class);
            COMPLETED = lookup.findVarHandle(ControllerQueueHandler.class, "completed", long.class);
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

    /** Written by the reactor thread only (release), read by the keep-alive timer and shutdown (acquire). */
    @SuppressWarnings("unused") // through RECEIVED
    private long received;
    @SuppressWarnings("unused") // through COMPLETED
    private long completed;
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

    long completedCount() {
        return (long) COMPLETED.getVolatile(this);
    }

    /** Commands received and not yet completed. */
    long inFlight() {
        return receivedCount() - completedCount();
    }

    void commandCompleted() {
        COMPLETED.getAndAdd(this, 1L);
    }

    @Override
    public void onCommand(Request transportRequest) {
        RECEIVED.setRelease(this, (long) RECEIVED.getOpaque(this) + 1);
        Request request = tracked(transportRequest);
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

    private Request tracked(Request transportRequest) {
        Object attachment = transportRequest.attachment();
        if (attachment instanceof TrackedRequest) {
            TrackedRequest tracked = (TrackedRequest) attachment;
            if (tracked.handler() == this && tracked.delegate() == transportRequest) {
                return tracked;
            }
        }
        TrackedRequest tracked = new TrackedRequest(transportRequest, this);
        transportRequest.attach(tracked);
        return tracked;
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
