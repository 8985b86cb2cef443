package io.nvmeof4j.rdma;

import io.nvmeof4j.jni.NativeIoException;
import io.nvmeof4j.jni.rdma.CmId;
import io.nvmeof4j.jni.rdma.CompletionQueue;
import io.nvmeof4j.jni.rdma.QueuePair;
import io.nvmeof4j.jni.rdma.ReceiveWorkRequests;
import io.nvmeof4j.jni.rdma.SendWorkRequests;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@link QueuePairVerbs} over the JNI layer: one CM id with its RC queue pair and one completion queue for both
 * directions. Work requests are staged in preallocated {@link SendWorkRequests}/{@link ReceiveWorkRequests}
 * flyweights and posted by {@link #flush()} with one JNI crossing per round: the receives as one chained post, then
 * the sends as another (the RDMA WRITE and the response SEND of a read next to each other); completions are polled
 * in one crossing into a preallocated native array and copied into the caller's {@link WorkCompletions} arrays.
 * Nothing allocates per I/O.
 */
public final class JniQueuePair implements QueuePairVerbs {
    private static final Logger LOG = LoggerFactory.getLogger(JniQueuePair.class);

    private final CmId id;
    private final QueuePair qp;
    private final CompletionQueue cq;
    /** Send work requests staged per round at most (a fuller batch is posted at once). */
    static final int SEND_BATCH = 64;
    /** Receives staged per round at most (a fuller batch is posted at once). */
    static final int RECEIVE_BATCH = 64;
    /*
     * Capacities that are multiples of 4: the JNI layer's aligned allocation (Rdma.allocateAligned, alignedSlice(64))
     * comes out short when a batch's byte size is not a multiple of 64 (2 send WRs + SGEs = 288 bytes failed with
     * "newLimit > capacity"); 4 entries of either kind are a multiple of 64 bytes on x86-64.
     */
    private final SendWorkRequests sends = new SendWorkRequests(SEND_BATCH, 1);
    private final ReceiveWorkRequests receives = new ReceiveWorkRequests(RECEIVE_BATCH, 1);
    private int stagedSends;
    private int stagedReceives;
    private final io.nvmeof4j.jni.rdma.WorkCompletions polled;
    private boolean disconnected;
    private boolean destroyed;

    public JniQueuePair(CmId id, QueuePair qp, CompletionQueue cq, int pollBatch) {
        this.id = id;
        this.qp = qp;
        this.cq = cq;
        this.polled = new io.nvmeof4j.jni.rdma.WorkCompletions(pollBatch);
    }

    public CmId cmId() {
        return id;
    }

    @Override
    public int postReceive(long wrId, long address, int length, int lkey) {
        if (stagedReceives == RECEIVE_BATCH) {
            // Receives may always go early: nothing staged depends on them waiting.
            int n = stagedReceives;
            stagedReceives = 0;
            int rc = qp.postReceive(receives, n);
            if (rc < 0) {
                LOG.debug("{}: ibv_post_recv of {} receives failed at entry {}: errno {}", id.peer(), n,
                    receives.failedIndex(), -rc);
                return rc;
            }
        }
        int i = stagedReceives;
        receives.set(i, wrId).sge(i, 0, address, length, lkey);
        stagedReceives = i + 1;
        return 0;
    }

    /** Makes room for {@code n} more staged send entries, posting everything staged when full; 0 or -errno. */
    private int room(int n) {
        return stagedSends + n > SEND_BATCH ? flush() : 0;
    }

    @Override
    public int postSend(long wrId, long address, int length, int lkey, int invalidateRkey) {
        int rc = room(1);
        if (rc < 0) {
            return rc;
        }
        int i = stagedSends;
        if (invalidateRkey != 0) {
            sends.sendWithInvalidate(i, wrId, SendWorkRequests.FLAG_SIGNALED, invalidateRkey);
        } else {
            sends.send(i, wrId, SendWorkRequests.FLAG_SIGNALED);
        }
        sends.sge(i, 0, address, length, lkey);
        stagedSends = i + 1;
        return 0;
    }

    @Override
    public int postWriteAndSend(long writeWrId, long address, int length, int lkey, long remoteAddress, int rkey,
                                long sendWrId, long sendAddress, int sendLength, int sendLkey, int invalidateRkey) {
        int rc = room(2);
        if (rc < 0) {
            return rc;
        }
        int i = stagedSends;
        sends.rdmaWrite(i, writeWrId, 0, remoteAddress, rkey).sge(i, 0, address, length, lkey);
        if (invalidateRkey != 0) {
            sends.sendWithInvalidate(i + 1, sendWrId, SendWorkRequests.FLAG_SIGNALED, invalidateRkey);
        } else {
            sends.send(i + 1, sendWrId, SendWorkRequests.FLAG_SIGNALED);
        }
        sends.sge(i + 1, 0, sendAddress, sendLength, sendLkey);
        stagedSends = i + 2;
        return 0;
    }

    @Override
    public int postRead(long wrId, long address, int length, int lkey, long remoteAddress, int rkey) {
        int rc = room(1);
        if (rc < 0) {
            return rc;
        }
        int i = stagedSends;
        sends.rdmaRead(i, wrId, SendWorkRequests.FLAG_SIGNALED, remoteAddress, rkey).sge(i, 0, address, length, lkey);
        stagedSends = i + 1;
        return 0;
    }

    @Override
    public int flush() {
        int r = stagedReceives;
        int s = stagedSends;
        if (r + s == 0) {
            return 0;
        }
        stagedReceives = 0;
        stagedSends = 0;
        int rc = qp.post(receives, r, sends, s);
        if (rc < 0) {
            LOG.debug("{}: posting {} receives and {} send work requests failed (receive {}, send {} not posted): "
                + "errno {}", id.peer(), r, s, r > 0 ? receives.failedIndex() : -1, s > 0 ? sends.failedIndex() : -1,
                -rc);
        }
        return rc;
    }

    @Override
    public int staged() {
        return stagedSends + stagedReceives;
    }

    @Override
    public int discardStagedSends() {
        int n = stagedSends;
        stagedSends = 0;
        return n;
    }

    @Override
    public int discardStagedReceives() {
        int n = stagedReceives;
        stagedReceives = 0;
        return n;
    }

    @Override
    public int poll(WorkCompletions out) {
        if (out.capacity() < polled.capacity()) {
            throw new IllegalArgumentException("a batch of " + out.capacity() + " cannot take a poll of "
                + polled.capacity());
        }
        int n = cq.poll(polled);
        if (n <= 0) {
            return n;
        }
        for (int i = 0; i < n; i++) {
            out.wrId[i] = polled.wrId(i);
            out.status[i] = polled.status(i);
            out.opcode[i] = polled.opcode(i);
            out.byteLength[i] = polled.byteLength(i);
            out.vendorError[i] = polled.vendorError(i);
        }
        return n;
    }

    @Override
    public int armNotification() {
        try {
            cq.requestNotify(false);
            return 0;
        } catch (NativeIoException e) {
            return -e.errno();
        }
    }

    @Override
    public void disconnect() {
        if (disconnected || destroyed) {
            return;
        }
        disconnected = true;
        try {
            id.disconnect();
        } catch (NativeIoException | IllegalStateException e) {
            // Already disconnected by the peer (EINVAL), or the id is gone: the queue pair is in error either way.
            LOG.debug("{}: rdma_disconnect: {}", id.peer(), e.getMessage());
        }
    }

    @Override
    public void destroy() {
        if (destroyed) {
            return;
        }
        destroyed = true;
        // Destroy failures (EBUSY, ...) leak the native object and are reported; they must not stop the teardown.
        closeQuietly(id, "the CM id and queue pair"); // destroys the queue pair, then the id
        closeQuietly(cq, "the completion queue");
    }

    private void closeQuietly(AutoCloseable resource, String what) {
        try {
            resource.close();
        } catch (Exception e) {
            LOG.warn("{}: destroying {} failed: {}", id.peer(), what, e.getMessage());
        }
    }
}
