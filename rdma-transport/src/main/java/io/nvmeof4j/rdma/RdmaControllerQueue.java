package io.nvmeof4j.rdma;

import io.nvmeof4j.protocol.command.CompletionQueueEntry;
import io.nvmeof4j.protocol.command.NvmeStatus;
import io.nvmeof4j.protocol.command.SglDescriptor;
import io.nvmeof4j.protocol.command.SubmissionQueueEntry;
import io.nvmeof4j.protocol.spi.ConnectRefusedException;
import io.nvmeof4j.protocol.spi.PendingConnections;
import io.nvmeof4j.protocol.spi.PortOptions;
import io.nvmeof4j.protocol.spi.QueueHandler;
import io.nvmeof4j.protocol.spi.QueueHandlerFactory;
import io.nvmeof4j.protocol.spi.TransportAddress;
import io.nvmeof4j.protocol.spi.TransportType;
import io.nvmeof4j.protocol.spi.transport.AbstractTransportQueue;
import io.nvmeof4j.protocol.spi.transport.DataMapping;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.concurrent.TimeUnit;

import static io.nvmeof4j.rdma.RdmaQueueMemory.view;

/**
 * One NVMe queue over one RC queue pair, in the controller role (NVMe over Fabrics RDMA binding; wire reference 4).
 * Owned by one {@link RdmaPollGroup}, touched only by its reactor thread except {@link #disconnect} and
 * {@link #execute}, which hand work over.
 *
 * <h2>Memory</h2>
 * One direct buffer per queue, registered once when the queue is created: RQ receive buffers of 64 + in-capsule
 * bytes, a 16-byte response capsule per command context, and the contexts' SQE copies. Data of keyed SGLs lives in
 * buffers of the poll group's pool, whose region was registered once when the group was created.
 *
 * <h2>Receive</h2>
 * A receive completion carries one command capsule. Its SQE is copied into a free context, and unless in-capsule
 * data follows it, the receive is posted again at once; with in-capsule data (SGL 0x01) the receive buffer is the
 * command's data buffer and is posted again when the command completes, before its response goes out (as nvmet).
 * Keyed SGLs (0x40, 0x4F) take a pool buffer: host-to-controller data is fetched with an RDMA READ and the command
 * executes when the READ completes; for controller-to-host data the command executes first and its data goes out
 * as an unsignalled RDMA WRITE chained before the response SEND (RC ordering puts the data before the CQE).
 * Subtype 0xF is answered with SEND_WITH_INV on the host's rkey.
 *
 * <h2>Teardown</h2>
 * A work-completion error (other than a flush), a CM DISCONNECTED/TIMEWAIT_EXIT, a handler's
 * {@link #disconnect}, or the poll group closing: the queue pair is disconnected (to the error state, which flushes
 * every posted work request), the handler hears {@link QueueHandler#onClosed} once, and the queue keeps being polled
 * until every posted receive and send has come back (bounded by {@link #DRAIN_TIMEOUT_NANOS}); then the queue pair is
 * destroyed and its memory deregistered. Commands still executing complete into nothing and give back their
 * buffers.
 * <p>{@link RdmaWorkRequests} posts the work requests and counts those outstanding; {@link RdmaQueueMemory} lays out
 * the registered memory (receives, responses, SQE copies).
 */
final class RdmaControllerQueue extends AbstractTransportQueue implements PolledQueues.Polled {
    private static final Logger LOG = LoggerFactory.getLogger(RdmaControllerQueue.class);
    static final int ACCEPTED = 0;
    static final int LIVE = 1;
    static final int CLOSING = 2;
    static final int CLOSED = 3;

    /** Work request id kinds (bits 39:32); the low 32 bits are the receive or context index. */
    static final long WR_RECV = 1L << 32;
    static final long WR_SEND = 2L << 32;
    static final long WR_READ = 3L << 32;
    static final long WR_WRITE = 4L << 32;
    private static final long WR_KIND_MASK = 0xFFL << 32;

    /** How long a closing queue waits for its flushed work requests before it is destroyed anyway. */
    static final long DRAIN_TIMEOUT_NANOS = TimeUnit.SECONDS.toNanos(2);

    final RdmaPollGroup group;
    private final QueuePairVerbs verbs;
    private final QueueSizing sizing;
    private final PortOptions portOptions;
    private final QueueHandlerFactory handlers;
    private final TransportAddress localAddress;
    private final String peer;
    private final ByteBuffer memory;
    private final MemoryKeys memoryKeys;
    /** Runs once the queue pair is destroyed: deregisters the memory, forgets the CM id. */
    private final Runnable onDestroyed;
    private final int receiveStride;
    /** Offset in {@link #memory} of receive 0 (its SQE): chosen so that its in-capsule data is page-aligned. */
    private final int receiveBase;
    private final int maxTransferSize;
    private final DataMapping dataMapping = DataMapping.forRdma();

    private final RdmaRequest[] contexts;
    private final int[] freeContexts;
    private int freeCount;
    /** In-capsule data views of each receive buffer (position 0, capacity = in-capsule size). */
    private final ByteBuffer[] inCapsuleViews;

    private int lifecycle = ACCEPTED;
    private QueueHandler handler;
    private volatile int queueId = -1;
    private int sqSize;
    private boolean sqFlowControlDisabled;
    private int sqHead;
    /** Capsules received so far: each command's {@link RdmaRequest#sequence()}. */
    private long capsulesReceived;
    private final RdmaWorkRequests workRequests;
    private long drainDeadline;
    private String closeReason;
    boolean registeredInGroup;

    RdmaControllerQueue(RdmaPollGroup group, QueuePairVerbs verbs, QueueSizing sizing, PortOptions portOptions,
                        QueueHandlerFactory handlers, TransportAddress localAddress, String peer, ByteBuffer memory,
                        MemoryKeys memoryKeys, MemoryKeys poolKeys, Runnable onDestroyed) {
        this.group = group;
        this.verbs = verbs;
        this.sizing = sizing;
        this.portOptions = portOptions;
        this.handlers = handlers;
        this.localAddress = localAddress;
        this.peer = peer;
        this.memory = memory.order(ByteOrder.LITTLE_ENDIAN);
        this.memoryKeys = memoryKeys;
        this.onDestroyed = onDestroyed;
        this.receiveStride = RdmaQueueMemory.receiveStride(sizing);
        this.receiveBase = RdmaQueueMemory.receiveBase(memoryKeys.address());
        this.maxTransferSize = Math.min(portOptions.maxDataTransferSize(), group.pool().maxBufferSize());
        if (memory.capacity() < RdmaQueueMemory.memoryBytes(sizing)) {
            throw new IllegalArgumentException("queue memory of " + memory.capacity() + " bytes, needs "
                + RdmaQueueMemory.memoryBytes(sizing));
        }
        int rq = sizing.receiveQueueSize();
        int n = sizing.contexts();
        int responsesAt = receiveBase + rq * receiveStride;
        int sqesAt = responsesAt + n * CompletionQueueEntry.LENGTH;
        contexts = new RdmaRequest[n];
        freeContexts = new int[n];
        workRequests = new RdmaWorkRequests(verbs, group, memoryKeys, poolKeys, n);
        for (int i = n - 1; i >= 0; i--) {
            int responseAt = responsesAt + i * CompletionQueueEntry.LENGTH;
            contexts[i] = new RdmaRequest(this, i, view(memory, sqesAt + i * SubmissionQueueEntry.LENGTH,
                SubmissionQueueEntry.LENGTH), view(memory, responseAt, CompletionQueueEntry.LENGTH),
                memoryKeys.address() + responseAt);
            freeContexts[freeCount++] = i;
        }
        inCapsuleViews = new ByteBuffer[rq];
        if (sizing.inCapsuleDataSize() > 0) {
            for (int i = 0; i < rq; i++) {
                inCapsuleViews[i] = view(memory, receiveBase + i * receiveStride + SubmissionQueueEntry.LENGTH,
                    sizing.inCapsuleDataSize());
            }
        }
    }

    /** Address of receive {@code index}'s in-capsule data (tests check its alignment). */
    long inCapsuleDataAddress(int index) {
        return memoryKeys.address() + receiveBase + (long) index * receiveStride + SubmissionQueueEntry.LENGTH;
    }

    QueueSizing sizing() {
        return sizing;
    }

    // ---- TransportQueue ----------------------------------------------------------------------------------------

    @Override
    public TransportType transportType() {
        return TransportType.RDMA;
    }

    @Override
    public TransportAddress localAddress() {
        return localAddress;
    }

    @Override
    public String peer() {
        return peer;
    }

    /**
     * Refuses a Connect whose QID is not the one the host put in the CM private data (wire reference 4: they must be
     * equal): the queue pair was sized for that queue (admin or I/O), so a mismatch is answered Connect Invalid
     * Parameters, DNR, and the queue stays unconnected.
     */
    @Override
    public void install(int queueId, int sqSize) throws ConnectRefusedException {
        if (queueId != sizing.queueId()) {
            throw new ConnectRefusedException(NvmeStatus.FABRICS_CONNECT_INVALID_PARAMETERS | NvmeStatus.DNR,
                PendingConnections.Refusal.QUEUE_ID_MISMATCH, "NVMe/RDMA " + peer + ": Connect for QID " + queueId
                + " on the queue pair the CM request opened for QID " + sizing.queueId());
        }
    }

    @Override
    public void connected(int queueId, int sqSize, boolean sqFlowControlDisabled) {
        if (queueId < 0 || queueId > 0xFFFF) {
            throw new IllegalArgumentException("queue id " + queueId + " outside 0..65535");
        }
        if (sqSize < 1 || sqSize > 65536) {
            throw new IllegalArgumentException("SQ size " + sqSize + " outside 1..65536");
        }
        if (queueId != sizing.queueId()) {
            // install refuses such a Connect: getting here means the command layer skipped it.
            throw new IllegalArgumentException("Connect QID " + queueId + " on the queue pair opened for QID "
                + sizing.queueId() + " (install refuses it)");
        }
        this.queueId = queueId;
        this.sqSize = sqSize;
        this.sqFlowControlDisabled = sqFlowControlDisabled;
        this.sqHead %= sqSize;
        LOG.debug("NVMe/RDMA {}: queue {} connected, {} entries, SQ flow control {}", peer, queueId, sqSize,
            sqFlowControlDisabled ? "disabled" : "enabled");
    }

    @Override
    public int queueId() {
        return queueId;
    }

    @Override
    public int inCapsuleDataSize() {
        return sizing.inCapsuleDataSize();
    }

    @Override
    public void execute(Runnable task) {
        group.execute(task);
    }

    @Override
    public String toString() {
        return "RdmaControllerQueue[" + peer + " qid=" + sizing.queueId() + "]";
    }

    // ---- bring-up (before the queue is polled) -------------------------------------------------------------------

    /** Posts every receive; called once before the accept, so the host's first capsule always finds one. */
    int postInitialReceives() {
        for (int i = 0; i < sizing.receiveQueueSize(); i++) {
            int rc = postReceive(i);
            if (rc < 0) {
                return rc;
            }
        }
        return verbs.flush();
    }

    private int postReceive(int index) {
        return workRequests.postReceive(index, receiveBase + (long) index * receiveStride, sizing.receiveBufferSize());
    }

    /**
     * Reactor thread: the CM said ESTABLISHED. Only now may responses be posted (the queue pair is in RTS), so
     * only now is the queue polled; capsules that arrived meanwhile wait in its completion queue.
     */
    void onEstablished() {
        if (lifecycle != ACCEPTED) {
            return;
        }
        try {
            handler = handlers.open(this);
        } catch (RuntimeException e) {
            LOG.warn("NVMe/RDMA {}: queue handler factory failed", peer, e);
            close("queue handler factory failed: " + e);
            return;
        }
        if (handler == null) {
            close("queue handler factory refused the queue");
            return;
        }
        lifecycle = LIVE;
        group.register(this);
        LOG.debug("NVMe/RDMA {}: queue {} established ({} receives of {} bytes, {} contexts, ORD {})", peer,
            sizing.queueId(), sizing.receiveQueueSize(), sizing.receiveBufferSize(), sizing.contexts(),
            sizing.initiatorDepth());
    }

    // ---- completions ---------------------------------------------------------------------------------------------

    @Override
    public int armNotification() {
        return verbs.armNotification();
    }

    /**
     * Posts what this round staged: the reposted receives in one chained post, then the responses, RDMA READs and
     * WRITEs in another, one JNI crossing. Reactor thread.
     */
    int flush() {
        if (lifecycle == CLOSED || verbs.staged() == 0) {
            return 0;
        }
        int n = verbs.staged();
        int rc = verbs.flush();
        if (rc < 0) {
            close("posting " + n + " work requests failed: errno " + -rc);
        }
        return 1;
    }

    /** Polls this queue's completion queue once and handles what came. Reactor thread. */
    @Override
    public int poll(WorkCompletions wc) {
        if (lifecycle == CLOSED) {
            return 0;
        }
        int n = verbs.poll(wc);
        if (n < 0) {
            close("polling the completion queue failed: errno " + -n);
            return 1;
        }
        for (int i = 0; i < n; i++) {
            onWorkCompletion(wc.wrId[i], wc.status[i], wc.opcode[i], wc.byteLength[i], wc.vendorError[i]);
        }
        if (lifecycle == CLOSING) {
            checkDrained();
        }
        return n;
    }

    private void onWorkCompletion(long wrId, int status, int opcode, int byteLength, int vendorError) {
        long kind = wrId & WR_KIND_MASK;
        int index = (int) wrId;
        if (kind == WR_RECV) {
            workRequests.receiveCompleted();
            if (status != WorkCompletions.STATUS_SUCCESS) {
                onError("receive", status, vendorError);
                return;
            }
            if (lifecycle == LIVE) {
                onCapsule(index, byteLength);
            }
            return;
        }
        RdmaRequest request = index >= 0 && index < contexts.length ? contexts[index] : null;
        if (request == null || (kind != WR_SEND && kind != WR_READ && kind != WR_WRITE)) {
            LOG.error("NVMe/RDMA {}: completion for an unknown work request 0x{}", peer, Long.toHexString(wrId));
            close("completion for an unknown work request");
            return;
        }
        if (status == WorkCompletions.STATUS_SUCCESS && kind == WR_SEND) {
            // A signalled SEND completing means the unsignalled RDMA WRITE before it completed too.
            workRequests.retire(index, workRequests.outstanding(index));
        } else {
            workRequests.retire(index, 1);
        }
        if (status != WorkCompletions.STATUS_SUCCESS) {
            onError(kind == WR_SEND ? "response SEND" : kind == WR_READ ? "RDMA READ" : "RDMA WRITE", status,
                vendorError);
            if (workRequests.outstanding(index) == 0 && lifecycle >= CLOSING
                && (request.state() == RdmaRequest.State.SENDING
                || request.state() == RdmaRequest.State.TRANSFERRING_HOST_TO_CONTROLLER)) {
                recycle(request);
            }
            return;
        }
        if (kind == WR_READ) {
            if (request.state() == RdmaRequest.State.TRANSFERRING_HOST_TO_CONTROLLER) {
                request.state(RdmaRequest.State.READY_TO_EXECUTE);
                advance(request);
            }
        } else if (kind == WR_SEND) {
            if (request.reachedHandler) {
                responseSent(request);
            }
            recycle(request);
        }
    }

    /** The response SEND completed: tell the handler that took the command (metrics end here). */
    private void responseSent(RdmaRequest request) {
        try {
            handler.onResponseSent(request, group.pollNanos());
        } catch (RuntimeException e) {
            LOG.warn("NVMe/RDMA {}: queue handler failed after sending CID {}", peer, request.commandId, e);
        }
    }

    private void onError(String what, int status, int vendorError) {
        if (status == WorkCompletions.STATUS_WR_FLUSH_ERROR && lifecycle >= CLOSING) {
            return; // the expected flush of a queue pair we disconnected
        }
        String reason = what + " failed: " + WorkCompletions.statusName(status) + " (vendor error 0x"
            + Integer.toHexString(vendorError) + ")";
        if (lifecycle < CLOSING) {
            LOG.warn("NVMe/RDMA {}: queue {}: {}; closing the queue", peer, sizing.queueId(), reason);
        }
        close(reason);
    }

    private void onCapsule(int receive, int byteLength) {
        if (byteLength < SubmissionQueueEntry.LENGTH) {
            // nvmet: "capsule size less than 64 bytes" is a fatal error of the queue.
            LOG.warn("NVMe/RDMA {}: command capsule of {} bytes, less than an SQE; closing", peer, byteLength);
            close("command capsule of " + byteLength + " bytes");
            return;
        }
        if (freeCount == 0) {
            LOG.warn("NVMe/RDMA {}: more than {} commands in flight on queue {}; closing", peer, contexts.length,
                sizing.queueId());
            close("more commands than the queue size");
            return;
        }
        RdmaRequest request = contexts[freeContexts[--freeCount]];
        commandTaken();
        request.begin(memory, receiveBase + receive * receiveStride, group.pollNanos(), ++capsulesReceived);
        // Before Connect sets the queue size, the CM request's HSQSIZE + 1 bounds it (the Connect itself counts).
        if (++sqHead >= (sqSize > 0 ? sqSize : sizing.receiveQueueSize())) {
            sqHead = 0;
        }
        request.completionStatus = mapData(request, receive, byteLength - SubmissionQueueEntry.LENGTH);
        if (request.heldReceive < 0 && !repost(receive)) {
            recycle(request);
            return;
        }
        advance(request);
    }

    private boolean repost(int receive) {
        int rc = postReceive(receive);
        if (rc < 0) {
            close("posting a receive failed: errno " + -rc);
            return false;
        }
        return true;
    }

    /**
     * Decides how the command's data moves from its SGL (the shared {@link DataMapping} rules); returns SUCCESS or the
     * status to fail it with before it reaches the handler.
     */
    private int mapData(RdmaRequest request, int receive, int inCapsuleBytes) {
        SubmissionQueueEntry sqe = request.command();
        int status = dataMapping.map(sqe, inCapsuleBytes, sizing.inCapsuleDataSize(), maxTransferSize);
        SglDescriptor sgl = sqe.sgl1();
        if (sqe.psdt() == 1 && sgl.id() == SglDescriptor.ID_KEYED_INVALIDATE) {
            request.invalidateKey = sgl.key(); // SEND_WITH_INV even when the command fails
        }
        if (status != NvmeStatus.SUCCESS) {
            return status;
        }
        request.transfer = dataMapping.transfer();
        request.dataLength = dataMapping.length();
        if (request.transfer == RdmaRequest.TRANSFER_IN_CAPSULE) {
            ByteBuffer view = inCapsuleViews[receive];
            view.clear().limit(request.dataLength);
            request.data = view;
            request.heldReceive = receive;
        } else if (request.transfer != RdmaRequest.TRANSFER_NONE) {
            request.remoteAddress = sgl.address();
            request.remoteKey = sgl.key();
        }
        return NvmeStatus.SUCCESS;
    }

    /**
     * The one step function of a command's life (SPDK's {@code nvmf_rdma_request_process}): moves {@code request}
     * through as many {@link RdmaRequest.State states} as it can now, and returns where it must wait for something
     * else: a pool buffer, its RDMA READ, the command layer, its response SEND. Whatever ends a wait calls it again.
     * Reactor thread.
     */
    void advance(RdmaRequest request) {
        RdmaRequest.State before;
        do {
            before = request.state();
            switch (before) {
                case NEW:
                    request.state(request.completionStatus != NvmeStatus.SUCCESS ? RdmaRequest.State.EXECUTED
                        : request.keyed() ? RdmaRequest.State.NEED_BUFFER : RdmaRequest.State.READY_TO_EXECUTE);
                    break;
                case NEED_BUFFER:
                    if (!takeBuffer(request)) {
                        return; // parked: the wait queue hands it a buffer and calls this again
                    }
                    if (request.transfer == RdmaRequest.TRANSFER_READ && !postRead(request)) {
                        return;
                    }
                    request.state(request.transfer == RdmaRequest.TRANSFER_READ
                        ? RdmaRequest.State.TRANSFERRING_HOST_TO_CONTROLLER : RdmaRequest.State.READY_TO_EXECUTE);
                    break;
                case READY_TO_EXECUTE:
                    if (lifecycle != LIVE) {
                        recycle(request);
                        return;
                    }
                    // The completion moves it on from here: at once through complete() when the handler completes
                    // on this thread, else through the poll group's inbox. Looking at the state again here would
                    // race a completion made on another thread (its status may not be written yet, and the inbox
                    // would move it a second time).
                    dispatch(request);
                    return;
                case EXECUTED:
                    if (lifecycle != LIVE) {
                        recycle(request); // completes into nothing; its buffer goes back to the pool
                        return;
                    }
                    sendResponse(request);
                    break;
                default:
                    // FREE, TRANSFERRING_HOST_TO_CONTROLLER, EXECUTING, SENDING: waiting for something else
                    return;
            }
        } while (request.state() != before);
    }

    /** A buffer for a keyed transfer: one given by the wait queue, or one from the pool; false when it must wait. */
    private boolean takeBuffer(RdmaRequest request) {
        if (request.data == null) {
            ByteBuffer buffer = group.buffers().acquireInOrder(request.dataLength);
            if (buffer == null) {
                group.buffers().park(request);
                return false;
            }
            request.data = buffer;
            request.dataPooled = true;
        }
        return true;
    }

    /** The wait queue gives a parked command its buffer. */
    void onBufferGranted(RdmaRequest request, ByteBuffer buffer) {
        request.data = buffer;
        request.dataPooled = true;
        advance(request);
    }

    private boolean postRead(RdmaRequest request) {
        int rc = workRequests.postRead(request);
        if (rc < 0) {
            close("posting an RDMA READ failed: errno " + -rc);
            recycle(request);
            return false;
        }
        return true;
    }

    private void dispatch(RdmaRequest request) {
        ByteBuffer data = request.data;
        if (data != null) {
            data.clear();
            data.limit(request.dataLength);
        }
        request.state(RdmaRequest.State.EXECUTING);
        request.reachedHandler = true;
        try {
            handler.onCommand(request);
        } catch (RuntimeException e) {
            LOG.error("NVMe/RDMA {}: queue handler failed on CID {}", peer, request.commandId, e);
            if (request.abandon()) {
                recycle(request);
            }
            disconnect("queue handler failed: " + e);
        }
    }

    /** Posts the data (RDMA WRITE, for a successful read) and the response SEND: the command is SENDING. */
    private void sendResponse(RdmaRequest request) {
        int status = request.completionStatus;
        int sqHeadField = sqFlowControlDisabled ? CompletionQueueEntry.SQHD_FLOW_CONTROL_DISABLED : sqHead;
        request.fillCompletion(status, Math.max(queueId, 0), sqHeadField);
        if (request.heldReceive >= 0) {
            int receive = request.heldReceive;
            request.heldReceive = -1;
            request.data = null; // the receive buffer is the host's again
            if (!repost(receive)) {
                recycle(request);
                return;
            }
        }
        request.state(RdmaRequest.State.SENDING);
        boolean withData = NvmeStatus.isSuccess(status) && request.transfer == RdmaRequest.TRANSFER_WRITE;
        if (!withData) {
            releaseData(request);
        }
        int rc = workRequests.postResponse(request, withData);
        if (rc < 0) {
            close("posting the response failed: errno " + -rc);
            recycle(request);
        }
    }

    /** The context is done: its pool buffer back, the context back on the free list. */
    void recycle(RdmaRequest request) {
        releaseData(request);
        if (request.state() != RdmaRequest.State.FREE) {
            request.state(RdmaRequest.State.FREE);
            request.heldReceive = -1;
            commandDone();
            freeContexts[freeCount++] = request.index;
        }
    }

    private void releaseData(RdmaRequest request) {
        ByteBuffer data = request.data;
        if (data != null) {
            request.data = null;
            if (request.dataPooled) {
                request.dataPooled = false;
                group.buffers().release(data);
            }
        }
    }

    void dropParked(RdmaRequest request) {
        recycle(request);
    }

    boolean isGone() {
        return lifecycle >= CLOSING;
    }

    // ---- closing -------------------------------------------------------------------------------------------------

    /** Starts the teardown (reactor thread). Idempotent. */
    @Override
    protected void close(String reason) {
        if (lifecycle >= CLOSING) {
            return;
        }
        boolean wasLive = lifecycle == LIVE;
        lifecycle = CLOSING;
        closeReason = reason;
        drainDeadline = System.nanoTime() + DRAIN_TIMEOUT_NANOS;
        workRequests.discardStaged();
        verbs.disconnect();
        if (!registeredInGroup) {
            group.register(this); // polled until drained even if it never got established
        }
        LOG.info("NVMe/RDMA {}: queue {} closed: {}", peer, sizing.queueId(), reason);
        if (handler != null && wasLive) {
            try {
                handler.onClosed(reason);
            } catch (RuntimeException e) {
                LOG.warn("NVMe/RDMA {}: queue handler failed in onClosed", peer, e);
            }
        }
        checkDrained();
    }

    /** Destroys the queue pair once every posted work request came back flushed, or at the drain deadline. */
    void checkDrained() {
        if (lifecycle != CLOSING) {
            return;
        }
        boolean drained = workRequests.drained();
        if (!drained && System.nanoTime() - drainDeadline < 0) {
            return;
        }
        if (!drained) {
            LOG.warn("NVMe/RDMA {}: queue {}: {} receives and {} sends not flushed within {} ms; destroying anyway",
                peer, sizing.queueId(), workRequests.postedReceives(), workRequests.sendWorkRequests(),
                DRAIN_TIMEOUT_NANOS / 1_000_000);
        }
        finishClose();
    }

    /** Destroys everything now (the group is closing, or the queue drained). */
    void finishClose() {
        if (lifecycle == CLOSED) {
            return;
        }
        if (lifecycle < CLOSING) {
            close(closeReason != null ? closeReason : "poll group closed");
            if (lifecycle == CLOSED) {
                return;
            }
        }
        lifecycle = CLOSED;
        verbs.destroy();
        for (RdmaRequest request : contexts) {
            RdmaRequest.State state = request.state();
            // Executing commands give their buffers back when they complete; parked ones when the group drops them.
            if (state == RdmaRequest.State.TRANSFERRING_HOST_TO_CONTROLLER || state == RdmaRequest.State.SENDING) {
                recycle(request);
            }
        }
        group.unregister(this);
        try {
            onDestroyed.run();
        } catch (RuntimeException e) {
            LOG.warn("NVMe/RDMA {}: releasing the queue's resources failed", peer, e);
        }
        LOG.debug("NVMe/RDMA {}: queue {} destroyed ({})", peer, sizing.queueId(), closeReason);
    }

    int lifecycle() {
        return lifecycle;
    }
}
