package io.nvmeof4j.jni.rdma;

import io.nvmeof4j.jni.NativeHandle;
import io.nvmeof4j.jni.NativeIoException;

/**
 * A reliable-connected queue pair created on a CM id ({@code rdma_create_qp}); librdmacm moves it through INIT/RTR/
 * RTS as the connection is established. Work requests are posted in batches from preallocated
 * {@link SendWorkRequests} / {@link ReceiveWorkRequests}: one JNI crossing and one chained {@code ibv_post_send} /
 * {@code ibv_post_recv} per batch ({@link #post}: both in one crossing), no allocation.
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
        return post(null, 0, requests, count);
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
        return post(requests, count, null, 0);
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
     * Posts receives {@code 0 .. receiveCount-1} as one chained {@code ibv_post_recv}, then sends
     * {@code 0 .. sendCount-1} as one chained {@code ibv_post_send}, in ONE JNI crossing (a count of 0 skips that
     * list, which may then be null): what a reactor round staged for one queue. Receives go first, so a receive
     * reposted for a command is there before that command's response reaches the peer.
     *
     * @return 0, or -errno: the failing list's {@code failedIndex()} names its first entry not posted (those before
     *         it were posted and will complete); when the receives failed, no send was posted (the sends'
     *         {@code failedIndex()} is 0)
     */
    public int post(ReceiveWorkRequests receives, int receiveCount, SendWorkRequests sends, int sendCount) {
        long qp = handle();
        checkCount(receiveCount, receives == null ? 0 : receives.capacity(), "receives");
        checkCount(sendCount, sends == null ? 0 : sends.capacity(), "send work requests");
        if (receiveCount + sendCount == 0) {
            throw new IllegalArgumentException("a post of nothing on " + this);
        }
        long recvFirst = 0;
        long sendFirst = 0;
        if (receiveCount > 0) {
            receives.terminate(receiveCount);
            recvFirst = receives.address();
        }
        if (sendCount > 0) {
            sends.terminate(sendCount);
            sendFirst = sends.address();
        }
        long rc = post0(qp, recvFirst, ReceiveWorkRequests.stride(), sendFirst, SendWorkRequests.stride());
        if (receiveCount > 0) {
            receives.relink(receiveCount);
        }
        if (sendCount > 0) {
            sends.relink(sendCount);
        }
        if (rc == 0) {
            if (receiveCount > 0) {
                receives.failedIndex(-1);
            }
            if (sendCount > 0) {
                sends.failedIndex(-1);
            }
            return 0;
        }
        long code = -rc;
        int index = (int) ((code >>> 32) & 0xFFFF);
        if ((code & POST_SEND_FAILED) != 0) {
            if (receiveCount > 0) {
                receives.failedIndex(-1);
            }
            sends.failedIndex(index);
        } else {
            receives.failedIndex(index);
            if (sendCount > 0) {
                sends.failedIndex(0);
            }
        }
        return -(int) (code & 0xffffffffL);
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

    private static void checkCount(int count, int capacity, String what) {
        if (count < 0 || count > capacity) {
            throw new IllegalArgumentException("post of " + count + " " + what + " of " + capacity);
        }
    }

    /** In {@link #post0}'s result: the send chain failed (else the receive chain did). */
    private static final long POST_SEND_FAILED = 1L << 48;

    /**
     * ibv_post_recv(qp, recvFirst, &bad) unless recvFirst is 0, then ibv_post_send(qp, sendFirst, &bad) unless
     * sendFirst is 0; 0, or -([POST_SEND_FAILED] | index of bad &lt;&lt; 32 | errno) where index = (bad - first) /
     * stride of the failing list.
     */
    private static native long post0(long qp, long recvFirst, int recvStride, long sendFirst, int sendStride);

    /** ibv_query_qp's qp_state, or -errno. */
    private static native int queryState0(long qp);
}
