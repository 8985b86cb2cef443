package io.nvmeof4j.jni.rdma;

import io.nvmeof4j.jni.NativeHandle;
import io.nvmeof4j.jni.NativeIoException;

/**
 * A reliable-connected queue pair created on a CM id ({@code rdma_create_qp}); librdmacm moves it through INIT/RTR/
 * RTS as the connection is established. Work requests are posted in batches from preallocated
 * {@link SendWorkRequests} / {@link ReceiveWorkRequests}: one JNI crossing and one chained {@code ibv_post_send} /
 * {@code ibv_post_recv} per batch, no allocation.
 *
 * <p>Keeps its CM id, protection domain and completion queues reachable, and is registered as their child: closing
 * its {@link CmId}, its protection domain or one of its completion queues closes it first (rdma-core would refuse to
 * free those while the QP uses them). Closing it destroys the QP ({@code rdma_destroy_qp}); close and its id's close
 * may run on different threads (the id serialises them, and the QP is always destroyed before the id).
 *
 * <p>Threading: posting is for one thread at a time (its reactor); closing it from another thread while a post
 * is in flight is the owner's job to prevent.
 */
public final class QueuePair extends NativeHandle {
    private final CmId id;
    private final ProtectionDomain pd;
    private final CompletionQueue sendCq;
    private final CompletionQueue recvCq;
    private final QueuePairCapabilities capabilities;
    private final int qpNum;

    QueuePair(long handle, CmId id, ProtectionDomain pd, CompletionQueue sendCq, CompletionQueue recvCq,
              QueuePairCapabilities capabilities, int qpNum) {
        super(handle, "queue pair " + qpNum + " of " + id.describe());
        this.id = id;
        this.pd = pd;
        this.sendCq = sendCq;
        this.recvCq = recvCq;
        this.capabilities = capabilities;
        this.qpNum = qpNum;
    }

    /** Registers this QP with its parents, so that closing one of them closes it first. */
    void attachToParents() {
        pd.addQueuePair(this);
        sendCq.addQueuePair(this);
        if (recvCq != sendCq) {
            recvCq.addQueuePair(this);
        }
    }

    /** The QP number (as {@link WorkCompletions#qpNum(int)} reports it). */
    public int qpNum() {
        return qpNum;
    }

    /** The sizes the device granted. */
    public QueuePairCapabilities capabilities() {
        return capabilities;
    }

    public CmId cmId() {
        return id;
    }

    public ProtectionDomain protectionDomain() {
        return pd;
    }

    public CompletionQueue sendCompletionQueue() {
        return sendCq;
    }

    public CompletionQueue receiveCompletionQueue() {
        return recvCq;
    }

    /**
     * Posts entries {@code 0 .. count-1} of {@code requests} as one chained {@code ibv_post_send}.
     *
     * @return 0, or -errno when the device refused an entry: {@link SendWorkRequests#failedIndex()} then names the
     *         first entry not posted (those before it were posted and will complete)
     */
    public int postSend(SendWorkRequests requests, int count) {
        long qp = handle();
        if (count <= 0 || count > requests.capacity()) {
            throw new IllegalArgumentException("post of " + count + " of " + requests.capacity() + " work requests");
        }
        requests.terminate(count);
        long rc = postSend0(qp, requests.address(), SendWorkRequests.stride());
        requests.relink(count);
        if (rc == 0) {
            requests.failedIndex(-1);
            return 0;
        }
        requests.failedIndex((int) (-rc >>> 32));
        return -(int) (-rc & 0xffffffffL);
    }

    /** {@link #postSend} that throws, naming the failing entry (control path and tests). */
    public void postSendOrThrow(SendWorkRequests requests, int count) throws NativeIoException {
        int rc = postSend(requests, count);
        if (rc < 0) {
            throw new NativeIoException("ibv_post_send on " + this, -rc,
                "work request " + requests.failedIndex() + " of " + count + " not posted");
        }
    }

    /**
     * Posts entries {@code 0 .. count-1} of {@code requests} as one chained {@code ibv_post_recv}.
     *
     * @return 0, or -errno with {@link ReceiveWorkRequests#failedIndex()} naming the first entry not posted
     */
    public int postReceive(ReceiveWorkRequests requests, int count) {
        long qp = handle();
        if (count <= 0 || count > requests.capacity()) {
            throw new IllegalArgumentException("post of " + count + " of " + requests.capacity() + " receives");
        }
        requests.terminate(count);
        long rc = postRecv0(qp, requests.address(), ReceiveWorkRequests.stride());
        requests.relink(count);
        if (rc == 0) {
            requests.failedIndex(-1);
            return 0;
        }
        requests.failedIndex((int) (-rc >>> 32));
        return -(int) (-rc & 0xffffffffL);
    }

    /** {@link #postReceive} that throws, naming the failing entry. */
    public void postReceiveOrThrow(ReceiveWorkRequests requests, int count) throws NativeIoException {
        int rc = postReceive(requests, count);
        if (rc < 0) {
            throw new NativeIoException("ibv_post_recv on " + this, -rc,
                "receive " + requests.failedIndex() + " of " + count + " not posted");
        }
    }

    /**
     * The QP's state ({@code ibv_query_qp}): 0 RESET, 1 INIT, 2 RTR, 3 RTS, 4 SQD, 5 SQE, 6 ERR.
     */
    public int state() throws NativeIoException {
        return NativeIoException.check("ibv_query_qp on " + this, queryState0(handle()));
    }

    @Override
    protected void release(long handle) {
        id.queuePairClosed(this); // skips when the id destroyed it already
        pd.removeQueuePair(this);
        sendCq.removeQueuePair(this);
        recvCq.removeQueuePair(this);
    }

    /**
     * ibv_post_send(qp, first, &bad); 0, or -(index of bad &lt;&lt; 32 | errno) where index = (bad - first) / stride.
     */
    private static native long postSend0(long qp, long first, int stride);

    /** ibv_post_recv, same result coding as postSend0. */
    private static native long postRecv0(long qp, long first, int stride);

    /** ibv_query_qp's qp_state, or -errno. */
    private static native int queryState0(long qp);
}
