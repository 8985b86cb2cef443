package io.nvmeof4j.jni.rdma;

/**
 * One RDMA CM event, copied out of {@code struct rdma_cm_event} before it was acknowledged
 * ({@code rdma_ack_cm_event}), so everything here stays valid.
 *
 * @param type       the event type
 * @param status     0, -errno for address/route/connect errors, or the transport's reason for REJECTED
 * @param id         the CM id it concerns; for CONNECT_REQUEST a new id (not yet accepted) for the connection
 * @param listenId   for CONNECT_REQUEST the listening id, else null
 * @param parameters the connection parameters the peer sent (CONNECT_REQUEST, ESTABLISHED, CONNECT_RESPONSE,
 *                   REJECTED: private data only; empty for other events). IRD/ORD are as the receiving side
 *                   sees them: the CM swaps them, so a request's {@code responderResources} is the peer's
 *                   initiator depth (the READs this side must answer) and its {@code initiatorDepth} the peer's
 *                   responder resources (the most READs this side may issue)
 * @param qpNum      the peer's QP number when the event carries it, else 0
 */
public record CmEvent(CmEventType type, int status, CmId id, CmId listenId, ConnectionParameters parameters,
                      int qpNum) {

    /** The private data the peer sent (a copy; empty when none). */
    public byte[] privateData() {
        return parameters.privateData();
    }

    @Override
    public String toString() {
        return "CmEvent[" + type + ", status " + status + ", " + (id == null ? "no id" : id.describe())
            + ", private data " + parameters.privateData().length + " bytes]";
    }
}
