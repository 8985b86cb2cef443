package io.nvmeof4j.rdma;

import io.nvmeof4j.protocol.command.CompletionQueueEntry;
import io.nvmeof4j.protocol.command.DataDirection;
import io.nvmeof4j.protocol.command.NvmeStatus;
import io.nvmeof4j.protocol.command.SglDescriptor;
import io.nvmeof4j.protocol.command.SubmissionQueueEntry;
import io.nvmeof4j.protocol.spi.PortOptions;
import io.nvmeof4j.protocol.spi.QueueHandler;
import io.nvmeof4j.protocol.spi.QueueHandlerFactory;
import io.nvmeof4j.protocol.spi.TransportAddress;
import io.nvmeof4j.protocol.spi.TransportQueue;
import io.nvmeof4j.protocol.spi.TransportType;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.concurrent.TimeUnit;

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
 */
final class RdmaControllerQueue implements TransportQueue {
    private static final Logger LOG = LoggerFactory.getLogger(RdmaControllerQueue.class);
    private static final VarHandle OUTSTANDING;

    static {
        try {
            OUTSTANDING = MethodHandles.lookup().findVarHandle(RdmaControllerQueue.class, "outstanding", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

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
    /** The pool region's registration with this queue's protection domain. */
    private final MemoryKeys poolKeys;
    /** Runs once the queue pair is destroyed: deregisters the memory, forgets the CM id. */
    private final Runnable onDestroyed;
    private final int receiveStride;
    private final int maxTransferSize;

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
    @SuppressWarnings("unused") // accessed through OUTSTANDING
    private int outstanding;
    private int postedReceives;
    private int sendWorkRequests;
    /** Per context: work requests posted and not yet known complete. */
    private final int[] contextWorkRequests;
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
        this.poolKeys = poolKeys;
        this.onDestroyed = onDestroyed;
        this.receiveStride = receiveStride(sizing);
        this.maxTransferSize = Math.min(portOptions.maxDataTransferSize(), group.pool().maxBufferSize());
        if (memory.capacity() < memoryBytes(sizing)) {
            throw new IllegalArgumentException("queue memory of " + memory.capacity() + " bytes, needs "
                + memoryBytes(sizing));
        }
        int rq = sizing.receiveQueueSize();
        int n = sizing.contexts();
        int responsesAt = rq * receiveStride;
        int sqesAt = responsesAt + n * CompletionQueueEntry.LENGTH;
        contexts = new RdmaRequest[n];
        freeContexts = new int[n];
        contextWorkRequests = new int[n];
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
                inCapsuleViews[i] = view(memory, i * receiveStride + SubmissionQueueEntry.LENGTH,
                    sizing.inCapsuleDataSize());
            }
        }
    }

    private static int receiveStride(QueueSizing sizing) {
        return (sizing.receiveBufferSize() + 63) & ~63;
    }

    /** Bytes of registered memory a queue of this sizing needs. */
    static int memoryBytes(QueueSizing sizing) {
        return sizing.receiveQueueSize() * receiveStride(sizing)
            + sizing.contexts() * (CompletionQueueEntry.LENGTH + SubmissionQueueEntry.LENGTH);
    }

    private static ByteBuffer view(ByteBuffer memory, int offset, int length) {
        return memory.slice(offset, length).order(ByteOrder.LITTLE_ENDIAN);
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

    @Override
    public void connected(int queueId, int sqSize, boolean sqFlowControlDisabled) {
        if (queueId < 0 || queueId > 0xFFFF) {
            throw new IllegalArgumentException("queue id " + queueId + " outside 0..65535");
        }
        if (sqSize < 1 || sqSize > 65536) {
            throw new IllegalArgumentException("SQ size " + sqSize + " outside 1..65536");
        }
        if (queueId != sizing.queueId()) {
            // The QID in the CM private data must equal the Connect QID (wire reference 4).
            LOG.warn("NVMe/RDMA {}: Connect for QID {} on the queue pair opened for QID {}; disconnecting", peer,
                queueId, sizing.queueId());
            disconnect("Connect QID " + queueId + " differs from the CM request's QID " + sizing.queueId());
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
    public int commandsOutstanding() {
        return (int) OUTSTANDING.getAcquire(this);
    }

    @Override
    public void disconnect(String reason) {
        String why = reason == null ? "disconnected" : reason;
        group.execute(() -> close(why));
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
        return 0;
    }

    private int postReceive(int index) {
        int rc = verbs.postReceive(WR_RECV | index, memoryKeys.address() + (long) index * receiveStride,
            sizing.receiveBufferSize(), memoryKeys.lkey());
        if (rc == 0) {
            postedReceives++;
        }
        return rc;
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

    int armNotification() {
        return verbs.armNotification();
    }

    /** Posts the responses, RDMA READs and WRITEs staged this round in one chained post. Reactor thread. */
    int flushSends() {
        if (lifecycle == CLOSED || verbs.stagedSends() == 0) {
            return 0;
        }
        int n = verbs.stagedSends();
        int rc = verbs.flushSends();
        if (rc < 0) {
            close("posting " + n + " send work requests failed: errno " + -rc);
        }
        return 1;
    }

    /** Polls this queue's completion queue once and handles what came. Reactor thread. */
    int poll(WorkCompletions wc) {
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
            postedReceives--;
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
            retireWorkRequests(request, contextWorkRequests[index]);
        } else {
            retireWorkRequests(request, 1);
        }
        if (status != WorkCompletions.STATUS_SUCCESS) {
            onError(kind == WR_SEND ? "response SEND" : kind == WR_READ ? "RDMA READ" : "RDMA WRITE", status,
                vendorError);
            if (contextWorkRequests[index] == 0 && lifecycle >= CLOSING
                && (request.state() == RdmaRequest.SENDING || request.state() == RdmaRequest.READING)) {
                recycle(request);
            }
            return;
        }
        if (kind == WR_READ) {
            if (lifecycle == LIVE && request.state() == RdmaRequest.READING) {
                dispatch(request);
            } else if (request.state() == RdmaRequest.READING) {
                recycle(request);
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
            handler.onResponseSent(request);
        } catch (RuntimeException e) {
            LOG.warn("NVMe/RDMA {}: queue handler failed after sending CID {}", peer, request.commandId, e);
        }
    }

    private void retireWorkRequests(RdmaRequest request, int count) {
        int index = request.index;
        int n = Math.min(count, contextWorkRequests[index]);
        contextWorkRequests[index] -= n;
        sendWorkRequests -= n;
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
        OUTSTANDING.setRelease(this, (int) OUTSTANDING.get(this) + 1);
        request.begin(memory, receive * receiveStride, System.nanoTime(), ++capsulesReceived);
        // Before Connect sets the queue size, the CM request's HSQSIZE + 1 bounds it (the Connect itself counts).
        if (++sqHead >= (sqSize > 0 ? sqSize : sizing.receiveQueueSize())) {
            sqHead = 0;
        }
        int status = mapData(request, receive, byteLength - SubmissionQueueEntry.LENGTH);
        if (request.heldReceive < 0 && !repost(receive)) {
            recycle(request);
            return;
        }
        if (status != NvmeStatus.SUCCESS) {
            request.state(RdmaRequest.COMPLETING);
            onCompleted(request, status);
            return;
        }
        switch (request.transfer) {
            case RdmaRequest.TRANSFER_READ:
            case RdmaRequest.TRANSFER_WRITE: {
                ByteBuffer buffer = group.acquireInOrder(request.dataLength);
                if (buffer == null) {
                    request.state(RdmaRequest.PARKED);
                    group.park(request);
                } else {
                    onBufferGranted(request, buffer);
                }
                return;
            }
            default:
                dispatch(request);
        }
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
     * Decides how the command's data moves from its SGL (wire reference 1.3 and 4); returns SUCCESS or the status
     * to fail it with before it reaches the handler.
     */
    private int mapData(RdmaRequest request, int receive, int inCapsuleBytes) {
        SubmissionQueueEntry sqe = request.command();
        if (sqe.psdt() != 1) {
            // FUSE is the command layer's to judge: it pairs fused commands by Request.sequence().
            return NvmeStatus.INVALID_FIELD | NvmeStatus.DNR;
        }
        SglDescriptor sgl = sqe.sgl1();
        int id = sgl.id();
        DataDirection direction = request.direction;
        if (sgl.type() == SglDescriptor.TYPE_KEYED_DATA_BLOCK) {
            if (id != SglDescriptor.ID_KEYED_ADDRESS && id != SglDescriptor.ID_KEYED_INVALIDATE) {
                return NvmeStatus.SGL_DESCRIPTOR_TYPE_INVALID | NvmeStatus.DNR;
            }
            if (id == SglDescriptor.ID_KEYED_INVALIDATE) {
                request.invalidateKey = sgl.key(); // SEND_WITH_INV even when the command fails
            }
            int length = sgl.keyedLength();
            if (length == 0) {
                return NvmeStatus.SUCCESS;
            }
            if (length > maxTransferSize) {
                return NvmeStatus.SGL_DATA_LENGTH_INVALID | NvmeStatus.DNR;
            }
            switch (direction) {
                case HOST_TO_CONTROLLER:
                    request.transfer = RdmaRequest.TRANSFER_READ;
                    break;
                case CONTROLLER_TO_HOST:
                    request.transfer = RdmaRequest.TRANSFER_WRITE;
                    break;
                case NONE:
                    return NvmeStatus.SGL_DATA_LENGTH_INVALID | NvmeStatus.DNR;
                default:
                    return NvmeStatus.INVALID_FIELD | NvmeStatus.DNR;
            }
            request.dataLength = length;
            request.remoteAddress = sgl.address();
            request.remoteKey = sgl.key();
            return NvmeStatus.SUCCESS;
        }
        long length = sgl.length();
        if (id == SglDescriptor.ID_IN_CAPSULE) {
            if (length == 0) {
                return NvmeStatus.SUCCESS;
            }
            if (direction != DataDirection.HOST_TO_CONTROLLER) {
                return NvmeStatus.INVALID_FIELD | NvmeStatus.DNR; // nvmet_rdma_map_sgl_inline
            }
            if (sgl.address() != 0 || length > sizing.inCapsuleDataSize()) {
                return NvmeStatus.SGL_OFFSET_INVALID | NvmeStatus.DNR;
            }
            if (length > inCapsuleBytes) {
                return NvmeStatus.SGL_DATA_LENGTH_INVALID | NvmeStatus.DNR;
            }
            ByteBuffer view = inCapsuleViews[receive];
            view.clear().limit((int) length);
            request.data = view;
            request.heldReceive = receive;
            request.transfer = RdmaRequest.TRANSFER_IN_CAPSULE;
            request.dataLength = (int) length;
            return NvmeStatus.SUCCESS;
        }
        // An all-zero (or zero-length unkeyed) descriptor just says "no data".
        if ((sgl.type() == SglDescriptor.TYPE_DATA_BLOCK || sgl.type() == SglDescriptor.TYPE_TRANSPORT_DATA_BLOCK)
            && length == 0) {
            return NvmeStatus.SUCCESS;
        }
        return NvmeStatus.SGL_DESCRIPTOR_TYPE_INVALID | NvmeStatus.DNR;
    }

    /** A pool buffer for a keyed transfer (at once or after parking): fetch the data or execute. */
    void onBufferGranted(RdmaRequest request, ByteBuffer buffer) {
        request.data = buffer;
        request.pooled = true;
        if (request.transfer == RdmaRequest.TRANSFER_READ) {
            request.state(RdmaRequest.READING);
            long local = poolKeys.address() + group.regionOffset(buffer);
            int rc = verbs.postRead(WR_READ | request.index, local, request.dataLength, poolKeys.lkey(),
                request.remoteAddress, request.remoteKey);
            if (rc < 0) {
                close("posting an RDMA READ failed: errno " + -rc);
                recycle(request);
                return;
            }
            contextWorkRequests[request.index] = 1;
            sendWorkRequests++;
        } else {
            dispatch(request);
        }
    }

    private void dispatch(RdmaRequest request) {
        ByteBuffer data = request.data;
        if (data != null) {
            data.clear();
            data.limit(request.dataLength);
        }
        request.state(RdmaRequest.EXECUTING);
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

    /** A command finished (reactor thread): send its data and response, or drop it if the queue is going. */
    void onCompleted(RdmaRequest request, int status) {
        if (lifecycle != LIVE) {
            recycle(request);
            return;
        }
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
        request.state(RdmaRequest.SENDING);
        int rc;
        int index = request.index;
        if (NvmeStatus.isSuccess(status) && request.transfer == RdmaRequest.TRANSFER_WRITE) {
            long local = poolKeys.address() + group.regionOffset(request.data);
            rc = verbs.postWriteAndSend(WR_WRITE | index, local, request.dataLength, poolKeys.lkey(),
                request.remoteAddress, request.remoteKey, WR_SEND | index, request.responseAddress,
                CompletionQueueEntry.LENGTH, memoryKeys.lkey(), request.invalidateKey);
            if (rc == 0) {
                contextWorkRequests[index] = 2;
                sendWorkRequests += 2;
            }
        } else {
            releaseData(request);
            rc = verbs.postSend(WR_SEND | index, request.responseAddress, CompletionQueueEntry.LENGTH,
                memoryKeys.lkey(), request.invalidateKey);
            if (rc == 0) {
                contextWorkRequests[index] = 1;
                sendWorkRequests++;
            }
        }
        if (rc < 0) {
            close("posting the response failed: errno " + -rc);
            recycle(request);
        }
    }

    /** The context is done: its pool buffer back, the context back on the free list. */
    void recycle(RdmaRequest request) {
        releaseData(request);
        if (request.state() != RdmaRequest.FREE) {
            request.state(RdmaRequest.FREE);
            request.heldReceive = -1;
            OUTSTANDING.setRelease(this, (int) OUTSTANDING.get(this) - 1);
            freeContexts[freeCount++] = request.index;
        }
    }

    private void releaseData(RdmaRequest request) {
        ByteBuffer data = request.data;
        if (data != null) {
            request.data = null;
            if (request.pooled) {
                request.pooled = false;
                group.release(data);
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
    void close(String reason) {
        if (lifecycle >= CLOSING) {
            return;
        }
        boolean wasLive = lifecycle == LIVE;
        lifecycle = CLOSING;
        closeReason = reason;
        drainDeadline = System.nanoTime() + DRAIN_TIMEOUT_NANOS;
        // Staged work requests never go out: they will not complete, so they are not waited for.
        sendWorkRequests -= verbs.discardStagedSends();
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
        boolean drained = postedReceives <= 0 && sendWorkRequests <= 0;
        if (!drained && System.nanoTime() - drainDeadline < 0) {
            return;
        }
        if (!drained) {
            LOG.warn("NVMe/RDMA {}: queue {}: {} receives and {} sends not flushed within {} ms; destroying anyway",
                peer, sizing.queueId(), postedReceives, sendWorkRequests, DRAIN_TIMEOUT_NANOS / 1_000_000);
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
            int state = request.state();
            // Executing commands give their buffers back when they complete; parked ones when the group drops them.
            if (state == RdmaRequest.READING || state == RdmaRequest.SENDING) {
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
