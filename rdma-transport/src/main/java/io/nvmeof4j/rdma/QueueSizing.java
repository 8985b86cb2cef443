package io.nvmeof4j.rdma;

import io.nvmeof4j.protocol.spi.PortOptions;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * What one controller-side queue pair looks like, decided from the host's CM connect request before anything is
 * allocated (wire reference 4, "nvmet sizing"), or the reject status that refuses it.
 * <ul>
 *   <li>receive queue: HSQSIZE + 1 receives of 64 + in-capsule bytes (the in-capsule bytes are the port's
 *       {@code inline_data_size} on I/O queues and 0 on the admin queue, where the Linux host never sends any);</li>
 *   <li>command contexts: RQ + HRQSIZE. A context lives from the command's receive to the completion of its
 *       response SEND, which can come after the host already sent the next command into the same receive, so there
 *       are more contexts than receives;</li>
 *   <li>send queue: two work requests per context (RDMA READ or WRITE, then the response SEND) plus one;</li>
 *   <li>completion queue: RQ + send queue, like nvmet's RQ + 2 × SQ;</li>
 *   <li>ORD (initiator depth for our RDMA READs): min(host responder resources, device max_qp_init_rd_atom).</li>
 * </ul>
 *
 * @param queueId           QID from the request
 * @param controllerId      CNTLID from the request (meaningful on I/O queues)
 * @param receiveQueueSize  receives posted: HSQSIZE + 1
 * @param hostReceiveQueueSize HRQSIZE: responses the host can take at once
 * @param contexts          command contexts
 * @param sendQueueSize     send work requests
 * @param completionQueueSize CQ entries
 * @param inCapsuleDataSize in-capsule bytes each receive takes after the 64-byte SQE
 * @param initiatorDepth    RDMA READs outstanding at once (accept's initiator_depth)
 */
public record QueueSizing(int queueId, int controllerId, int receiveQueueSize, int hostReceiveQueueSize, int contexts,
                          int sendQueueSize, int completionQueueSize, int inCapsuleDataSize, int initiatorDepth) {
    /** The Linux admin queue depth (NVME_AQ_DEPTH): an admin queue may not be larger. */
    public static final int ADMIN_QUEUE_SIZE = 32;

    /** Bytes of one receive buffer: the SQE and the in-capsule data. */
    public int receiveBufferSize() {
        return 64 + inCapsuleDataSize;
    }

    /** The REP private data for this queue: CRQSIZE = HSQSIZE + 1, as nvmet answers. */
    public byte[] acceptPrivateData() {
        return CmConnectAccept.encode(receiveQueueSize);
    }

    /**
     * Checks a CM connect request. Returns a {@link CmConnectReject} status (1..8) to refuse it with, or 0.
     *
     * @param privateData         the REQ private data as received (may be longer than 32 bytes: CM pads it)
     * @param hostResponderResources the host's responder resources (its IRD: how many of our RDMA READs it serves)
     * @param deviceMaxInitiatorDepth the local device's max_qp_init_rd_atom
     */
    public static int check(byte[] privateData, PortOptions port, int hostResponderResources,
                            int deviceMaxInitiatorDepth) {
        if (privateData == null || privateData.length < CmConnectRequest.LENGTH) {
            return CmConnectReject.STS_INVALID_PRIVATE_DATA_LENGTH;
        }
        CmConnectRequest req = new CmConnectRequest().wrap(ByteBuffer.wrap(privateData).order(ByteOrder.LITTLE_ENDIAN), 0);
        if (req.recordFormat() != CmConnectRequest.RECFMT_1_0) {
            return CmConnectReject.STS_INVALID_RECFMT;
        }
        int qid = req.queueId();
        if (qid == 0xFFFF) {
            return CmConnectReject.STS_INVALID_QID;
        }
        int rq = req.hostSendQueueSize() + 1;
        // SQSIZE 0 (a one-entry queue) is invalid in Connect as well; the admin queue is at most 32 (nvmet's check).
        if (rq < 2 || (qid == 0 && rq > ADMIN_QUEUE_SIZE) || (qid > 0 && rq > port.maxQueueSize())) {
            return CmConnectReject.STS_INVALID_HSQSIZE;
        }
        int hrq = req.hostReceiveQueueSize();
        if (hrq < 1 || hrq > Math.max(ADMIN_QUEUE_SIZE, port.maxQueueSize())) {
            return CmConnectReject.STS_INVALID_HRQSIZE;
        }
        if (hostResponderResources < 1) {
            // Without inbound RDMA READ resources at the host we could never fetch keyed write data (or Connect data).
            return CmConnectReject.STS_INVALID_IRD;
        }
        if (deviceMaxInitiatorDepth < 1) {
            return CmConnectReject.STS_INVALID_ORD;
        }
        return 0;
    }

    /** The sizing of a request {@link #check} accepted. */
    public static QueueSizing of(byte[] privateData, PortOptions port, int hostResponderResources,
                                 int deviceMaxInitiatorDepth) {
        int status = check(privateData, port, hostResponderResources, deviceMaxInitiatorDepth);
        if (status != 0) {
            throw new IllegalArgumentException("connect request refused: " + CmConnectReject.statusName(status));
        }
        CmConnectRequest req = new CmConnectRequest().wrap(ByteBuffer.wrap(privateData).order(ByteOrder.LITTLE_ENDIAN), 0);
        int qid = req.queueId();
        int rq = req.hostSendQueueSize() + 1;
        int hrq = req.hostReceiveQueueSize();
        int contexts = rq + hrq;
        int sq = 2 * contexts + 1;
        int inline = qid == 0 ? 0 : port.inlineDataSize();
        return new QueueSizing(qid, req.controllerId(), rq, hrq, contexts, sq, rq + sq, inline,
            Math.min(hostResponderResources, deviceMaxInitiatorDepth));
    }
}
