package io.nvmeof4j.jni.rdma;

/**
 * The sizes of a queue pair ({@code struct ibv_qp_cap}): asked for at creation, and as granted by the device
 * ({@link QueuePair#capabilities()}, which may be larger).
 *
 * @param maxSendWr     outstanding send-queue work requests (SEND, RDMA READ/WRITE)
 * @param maxRecvWr     outstanding receives
 * @param maxSendSge    SGEs per send work request
 * @param maxRecvSge    SGEs per receive
 * @param maxInlineData bytes a send may carry inline ({@link SendWorkRequests#FLAG_INLINE})
 */
public record QueuePairCapabilities(int maxSendWr, int maxRecvWr, int maxSendSge, int maxRecvSge, int maxInlineData) {
    public QueuePairCapabilities {
        if (maxSendWr <= 0 || maxRecvWr <= 0 || maxSendSge <= 0 || maxRecvSge <= 0 || maxInlineData < 0) {
            throw new IllegalArgumentException("queue pair sizes must be positive (inline data ≥ 0): send_wr "
                + maxSendWr + ", recv_wr " + maxRecvWr + ", send_sge " + maxSendSge + ", recv_sge " + maxRecvSge
                + ", inline " + maxInlineData);
        }
    }
}
