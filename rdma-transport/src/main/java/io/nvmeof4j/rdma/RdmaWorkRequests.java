package io.nvmeof4j.rdma;

import io.nvmeof4j.protocol.command.CompletionQueueEntry;

import static io.nvmeof4j.rdma.RdmaControllerQueue.WR_READ;
import static io.nvmeof4j.rdma.RdmaControllerQueue.WR_RECV;
import static io.nvmeof4j.rdma.RdmaControllerQueue.WR_SEND;
import static io.nvmeof4j.rdma.RdmaControllerQueue.WR_WRITE;

/**
 * The work requests one {@link RdmaControllerQueue} posts (receives, RDMA READs, RDMA WRITEs with their response
 * SEND) and the count of those not yet seen complete, per command context and in all: a closing queue is destroyed
 * only once every one came back (flushed), and a context is reused only once its own did. Reactor thread.
 */
final class RdmaWorkRequests {
    private final QueuePairVerbs verbs;
    private final RdmaPollGroup group;
    /** The queue's own memory: receives and responses. */
    private final MemoryKeys memoryKeys;
    /** The pool region's registration with this queue's protection domain: data buffers. */
    private final MemoryKeys poolKeys;
    /** Per context: work requests posted and not yet known complete. */
    private final int[] contextWorkRequests;
    private int postedReceives;
    private int sendWorkRequests;

    RdmaWorkRequests(QueuePairVerbs verbs, RdmaPollGroup group, MemoryKeys memoryKeys, MemoryKeys poolKeys,
                     int contexts) {
        this.verbs = verbs;
        this.group = group;
        this.memoryKeys = memoryKeys;
        this.poolKeys = poolKeys;
        this.contextWorkRequests = new int[contexts];
    }

    /** Stages receive {@code index} into the queue memory at {@code offset} (posted with the round's flush). */
    int postReceive(int index, long offset, int length) {
        int rc = verbs.postReceive(WR_RECV | index, memoryKeys.address() + offset, length, memoryKeys.lkey());
        if (rc == 0) {
            postedReceives++;
        }
        return rc;
    }

    void receiveCompleted() {
        postedReceives--;
    }

    /** Posts the RDMA READ of {@code request}'s data from the host into its pool buffer; returns 0 or -errno. */
    int postRead(RdmaRequest request) {
        long local = poolKeys.address() + group.regionOffset(request.data);
        int rc = verbs.postRead(WR_READ | request.index, local, request.dataLength, poolKeys.lkey(),
            request.remoteAddress, request.remoteKey);
        if (rc == 0) {
            contextWorkRequests[request.index] = 1;
            sendWorkRequests++;
        }
        return rc;
    }

    /**
     * Posts the response SEND of {@code request}, after the RDMA WRITE of its data to the host when {@code withData}
     * (one chained post, the WRITE unsignalled); returns 0 or -errno.
     */
    int postResponse(RdmaRequest request, boolean withData) {
        int index = request.index;
        int rc;
        if (withData) {
            long local = poolKeys.address() + group.regionOffset(request.data);
            rc = verbs.postWriteAndSend(WR_WRITE | index, local, request.dataLength, poolKeys.lkey(),
                request.remoteAddress, request.remoteKey, WR_SEND | index, request.responseAddress,
                CompletionQueueEntry.LENGTH, memoryKeys.lkey(), request.invalidateKey);
            if (rc == 0) {
                contextWorkRequests[index] = 2;
                sendWorkRequests += 2;
            }
        } else {
            rc = verbs.postSend(WR_SEND | index, request.responseAddress, CompletionQueueEntry.LENGTH,
                memoryKeys.lkey(), request.invalidateKey);
            if (rc == 0) {
                contextWorkRequests[index] = 1;
                sendWorkRequests++;
            }
        }
        return rc;
    }

    /** Work requests of context {@code index} posted and not yet known complete. */
    int outstanding(int index) {
        return contextWorkRequests[index];
    }

    /** {@code count} work requests of context {@code index} completed (at most as many as are outstanding). */
    void retire(int index, int count) {
        int n = Math.min(count, contextWorkRequests[index]);
        contextWorkRequests[index] -= n;
        sendWorkRequests -= n;
    }

    /** Staged work requests never go out: they will not complete, so they are not waited for. */
    void discardStaged() {
        sendWorkRequests -= verbs.discardStagedSends();
        postedReceives -= verbs.discardStagedReceives();
    }

    boolean drained() {
        return postedReceives <= 0 && sendWorkRequests <= 0;
    }

    int postedReceives() {
        return postedReceives;
    }

    int sendWorkRequests() {
        return sendWorkRequests;
    }
}
