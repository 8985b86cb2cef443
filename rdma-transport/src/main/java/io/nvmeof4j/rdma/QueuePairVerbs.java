package io.nvmeof4j.rdma;

/**
 * The verbs one NVMe-oF queue needs from its RC queue pair and its completion queue: the seam between the queue
 * state machines ({@link RdmaControllerQueue}, {@code RdmaHostQueue}) and the JNI layer, so those state machines can
 * be unit-tested against a fake. The production implementation ({@link JniQueuePair}) posts through the JNI
 * layer's preallocated work-request arrays; nothing here allocates.
 * <p>All addresses are virtual addresses inside memory registered with the queue pair's protection domain, and the
 * keys are that registration's lkey (local) or the peer's rkey (remote). Post methods return 0 or a negative errno
 * (the post failed and nothing was queued). One thread at a time: the owning poll group's.
 * <p><b>Work requests are staged</b> and go out with {@link #flush()}, which the poll group calls once per round
 * (and before it blocks): the receives reposted in a round in one chained {@code ibv_post_recv}, then all its
 * responses, RDMA READs and capsules in one chained {@code ibv_post_send}, both in one JNI crossing (SPDK's
 * per-round flush, {@code _poll_group_flush}). On Soft-RoCE every send post is a system call (the doorbell), so one
 * per round instead of one per command matters at depth; each crossing costs too. A full batch is posted at once
 * (receives alone; sends after the staged receives).
 */
public interface QueuePairVerbs {
    /** Stages one receive of {@code length} bytes at {@code address}. */
    int postReceive(long wrId, long address, int length, int lkey);

    /**
     * Posts a SEND of {@code length} bytes at {@code address}, signalled; with {@code invalidateRkey} != 0 a
     * SEND_WITH_INV that invalidates that rkey at the peer.
     */
    int postSend(long wrId, long address, int length, int lkey, int invalidateRkey);

    /**
     * Posts an unsignalled RDMA WRITE of local {@code [address, address + length)} to the peer's
     * {@code remoteAddress}/{@code rkey}, chained before a signalled SEND (or SEND_WITH_INV) in one post: RC ordering
     * puts the data before the response.
     */
    int postWriteAndSend(long writeWrId, long address, int length, int lkey, long remoteAddress, int rkey,
                         long sendWrId, long sendAddress, int sendLength, int sendLkey, int invalidateRkey);

    /** Posts a signalled RDMA READ of the peer's {@code remoteAddress}/{@code rkey} into local memory. */
    int postRead(long wrId, long address, int length, int lkey, long remoteAddress, int rkey);

    /**
     * Posts every staged receive (one chained post), then every staged send-queue work request (one chained post);
     * 0 or -errno (then the queue is lost).
     */
    int flush();

    /** Work requests (receives and send-queue ones) staged and not yet posted. */
    int staged();

    /** Drops the staged send-queue work requests (the queue is closing); returns how many there were. */
    int discardStagedSends();

    /** Drops the staged receives (the queue is closing); returns how many there were. */
    int discardStagedReceives();

    /** Polls this queue pair's completion queue into {@code out} (from index 0); returns how many, or -errno. */
    int poll(WorkCompletions out);

    /**
     * Arms the completion queue's notification (next completion wakes the completion channel). Returns 0 or -errno.
     * After arming, the caller polls once more before blocking, since a completion may have slipped in.
     */
    int armNotification();

    /** Starts an RDMA CM disconnect: the queue pair goes to error, every posted work request flushes. Idempotent. */
    void disconnect();

    /** Destroys the queue pair, its completion queue and the CM id. Idempotent. */
    void destroy();
}
