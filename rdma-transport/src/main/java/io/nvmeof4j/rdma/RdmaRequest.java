package io.nvmeof4j.rdma;

import io.nvmeof4j.protocol.command.CompletionQueueEntry;
import io.nvmeof4j.protocol.command.DataDirection;
import io.nvmeof4j.protocol.command.SubmissionQueueEntry;
import io.nvmeof4j.protocol.spi.Request;
import io.nvmeof4j.protocol.spi.TransportQueue;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;

/**
 * One command context of an {@link RdmaControllerQueue}, reused for every command that lands in it. It owns a copy
 * of the received SQE and the 16-byte response capsule (in the queue's registered memory, sent from there).
 * <p>Life: FREE → READING (RDMA READ of keyed write data posted) or PARKED (waiting for a pool buffer) →
 * EXECUTING (with the handler) → COMPLETING ({@link #complete} called, maybe on another thread) → SENDING (the
 * response SEND, chained after the RDMA WRITE of read data, is posted) → FREE when the SEND completes. Everything
 * but {@link #complete} runs on the reactor thread.
 */
final class RdmaRequest implements Request {
    static final int FREE = 0;
    static final int READING = 1;
    static final int PARKED = 2;
    static final int EXECUTING = 3;
    static final int COMPLETING = 4;
    static final int SENDING = 5;

    static final int TRANSFER_NONE = 0;
    static final int TRANSFER_IN_CAPSULE = 1;
    /** Keyed host-to-controller: the target RDMA READs, then executes. */
    static final int TRANSFER_READ = 2;
    /** Keyed controller-to-host: the target executes, then RDMA WRITEs before the response. */
    static final int TRANSFER_WRITE = 3;

    private static final VarHandle STATE;

    static {
        try {
            STATE = MethodHandles.lookup().findVarHandle(RdmaRequest.class, "state", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    final RdmaControllerQueue queue;
    final int index;
    private final SubmissionQueueEntry sqe = new SubmissionQueueEntry();
    private final ByteBuffer sqeBuffer;
    private final CompletionQueueEntry cqe = new CompletionQueueEntry();
    /** Registered address of the response capsule. */
    final long responseAddress;

    @SuppressWarnings("unused") // accessed through STATE
    private volatile int state;
    int commandId;
    DataDirection direction = DataDirection.NONE;
    int transfer;
    int dataLength;
    ByteBuffer data;
    /** Whether {@link #data} is a pool buffer (else a view of the receive buffer, for in-capsule data). */
    boolean pooled;
    /** The receive this command's in-capsule data sits in, reposted when the command completes; -1 if none. */
    int heldReceive = -1;
    long remoteAddress;
    int remoteKey;
    /** rkey to invalidate with SEND_WITH_INV (keyed SGL subtype 0xF), or 0. */
    int invalidateKey;
    long receivedNanos;
    long sequence;

    int completionStatus;
    RdmaRequest completedNext;
    RdmaRequest parkedNext;

    RdmaRequest(RdmaControllerQueue queue, int index, ByteBuffer sqeBuffer, ByteBuffer responseView,
                long responseAddress) {
        this.queue = queue;
        this.index = index;
        this.sqeBuffer = sqeBuffer;
        this.responseAddress = responseAddress;
        sqe.wrap(sqeBuffer, 0);
        cqe.wrap(responseView, 0);
    }

    // ---- Request ---------------------------------------------------------------------------------------------

    @Override
    public TransportQueue queue() {
        return queue;
    }

    @Override
    public SubmissionQueueEntry command() {
        return sqe;
    }

    @Override
    public CompletionQueueEntry response() {
        return cqe;
    }

    @Override
    public ByteBuffer data() {
        return data;
    }

    @Override
    public int dataLength() {
        return dataLength;
    }

    @Override
    public long receivedNanos() {
        return receivedNanos;
    }

    @Override
    public long sequence() {
        return sequence;
    }

    @Override
    public void complete(int nvmeStatus) {
        if (!STATE.compareAndSet(this, EXECUTING, COMPLETING)) {
            throw new IllegalStateException("command " + commandId + " on " + queue.peer()
                + " completed twice, or completed while not executing");
        }
        RdmaPollGroup group = queue.group;
        if (Thread.currentThread() == group.reactorThread()) {
            queue.onCompleted(this, nvmeStatus);
        } else {
            completionStatus = nvmeStatus;
            group.enqueueCompletion(this); // its CAS publishes the status and the handler's data writes
        }
    }

    /** Takes back a command the handler failed on, unless it was completed meanwhile. */
    boolean abandon() {
        return STATE.compareAndSet(this, EXECUTING, COMPLETING);
    }

    @Override
    public int slot() {
        return index;
    }

    // ---- reactor thread ----------------------------------------------------------------------------------------

    int state() {
        return (int) STATE.getOpaque(this);
    }

    void state(int newState) {
        STATE.setRelease(this, newState);
    }

    /** The handler took this command (so it hears when the response is sent). */
    boolean reachedHandler;

    /** Takes a received SQE (64 bytes at {@code offset} of {@code source}) into this context. */
    void begin(ByteBuffer source, int offset, long nowNanos, long sequence) {
        for (int i = 0; i < SubmissionQueueEntry.LENGTH; i += 8) {
            sqeBuffer.putLong(i, source.getLong(offset + i));
        }
        cqe.clear();
        commandId = sqe.commandId();
        direction = sqe.dataDirection();
        receivedNanos = nowNanos;
        this.sequence = sequence;
        transfer = TRANSFER_NONE;
        dataLength = 0;
        data = null;
        pooled = false;
        reachedHandler = false;
        heldReceive = -1;
        remoteAddress = 0;
        remoteKey = 0;
        invalidateKey = 0;
        state(READING); // "not FREE": the exact pre-execution state is set by the queue
    }

    void fillCompletion(int status, int sqId, int sqHead) {
        cqe.commandId(commandId).sqId(sqId).sqHead(sqHead).status(status);
    }

    @Override
    public String toString() {
        return "RdmaRequest[index=" + index + " cid=" + commandId + " state=" + state() + " transfer=" + transfer
            + " length=" + dataLength + "]";
    }
}
