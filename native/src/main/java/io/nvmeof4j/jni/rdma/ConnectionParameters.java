package io.nvmeof4j.jni.rdma;

import java.util.Arrays;

/**
 * Parameters of {@code rdma_connect} / {@code rdma_accept} ({@code struct rdma_conn_param}), and as the peer sent
 * them in a CONNECT_REQUEST or ESTABLISHED event.
 *
 * @param privateData        bytes carried in the CM message (NVMe-oF: the RDMA CM request/accept record); at most
 *                           {@link #MAX_PRIVATE_DATA} bytes, less on the wire for some transports (IB CM REQ: 56,
 *                           REP: 196, REJ: 148)
 * @param responderResources RDMA READs this side answers at once (IRD)
 * @param initiatorDepth     RDMA READs this side issues at once (ORD)
 * @param flowControl        whether the HCA does end-to-end flow control (0/1)
 * @param retryCount         transport retries (0..7; ignored when accepting)
 * @param rnrRetryCount      receiver-not-ready retries (0..7, 7 = forever)
 */
public record ConnectionParameters(byte[] privateData, int responderResources, int initiatorDepth,
                                   int flowControl, int retryCount, int rnrRetryCount) {
    /** RDMA_MAX_PRIVATE_DATA. */
    public static final int MAX_PRIVATE_DATA = 256;

    public ConnectionParameters {
        privateData = privateData == null ? new byte[0] : privateData.clone();
        if (privateData.length > 255) {
            throw new IllegalArgumentException("private data of " + privateData.length + " bytes (255 at most)");
        }
        checkByte("responder_resources", responderResources);
        checkByte("initiator_depth", initiatorDepth);
        checkByte("flow_control", flowControl);
        if (retryCount < 0 || retryCount > 7 || rnrRetryCount < 0 || rnrRetryCount > 7) {
            throw new IllegalArgumentException("retry counts are 0..7: " + retryCount + ", " + rnrRetryCount);
        }
    }

    /** Defaults that suit NVMe-oF: no private data, IRD/ORD 16, flow control on, 7 retries, RNR retry forever. */
    public static ConnectionParameters defaults() {
        return new ConnectionParameters(null, 16, 16, 1, 7, 7);
    }

    /** The same with {@code data} as private data. */
    public ConnectionParameters withPrivateData(byte[] data) {
        return new ConnectionParameters(data, responderResources, initiatorDepth, flowControl, retryCount,
            rnrRetryCount);
    }

    /** The same with other IRD/ORD. */
    public ConnectionParameters withReadDepths(int responder, int initiator) {
        return new ConnectionParameters(privateData, responder, initiator, flowControl, retryCount, rnrRetryCount);
    }

    @Override
    public byte[] privateData() {
        return privateData.clone();
    }

    private static void checkByte(String name, int v) {
        if (v < 0 || v > 255) {
            throw new IllegalArgumentException(name + " must be 0..255: " + v);
        }
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof ConnectionParameters p && Arrays.equals(privateData, p.privateData)
            && responderResources == p.responderResources && initiatorDepth == p.initiatorDepth
            && flowControl == p.flowControl && retryCount == p.retryCount && rnrRetryCount == p.rnrRetryCount;
    }

    @Override
    public int hashCode() {
        return Arrays.hashCode(privateData) * 31 + responderResources * 7 + initiatorDepth;
    }

    @Override
    public String toString() {
        return "ConnectionParameters[private data " + privateData.length + " bytes, responder_resources "
            + responderResources + ", initiator_depth " + initiatorDepth + ", flow_control " + flowControl
            + ", retry_count " + retryCount + ", rnr_retry_count " + rnrRetryCount + "]";
    }
}
