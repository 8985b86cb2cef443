package io.nvmeof4j.jni.rdma;

/**
 * The RDMA CM event types ({@code enum rdma_cm_event_type}, in its order: the C side asserts the values).
 */
public enum CmEventType {
    /** {@code rdma_resolve_addr} succeeded. */
    ADDR_RESOLVED(false),
    /** {@code rdma_resolve_addr} failed; status is -errno. */
    ADDR_ERROR(true),
    /** {@code rdma_resolve_route} succeeded. */
    ROUTE_RESOLVED(false),
    /** {@code rdma_resolve_route} failed; status is -errno. */
    ROUTE_ERROR(true),
    /** A peer asks to connect (on a listener); the event's id is a new CM id for that connection. */
    CONNECT_REQUEST(false),
    /** The peer accepted (only when no QP was created on the id). */
    CONNECT_RESPONSE(false),
    /** Connecting failed after the request was sent; status is -errno. */
    CONNECT_ERROR(true),
    /** The peer does not answer (IB CM timeout); status is -errno (typically -ETIMEDOUT). */
    UNREACHABLE(true),
    /** The peer rejected; status is the transport's reason (IB CM 28 = consumer reject, 8 = no listener), private data may carry the application's record. */
    REJECTED(true),
    /** The connection is up. */
    ESTABLISHED(false),
    /** The connection went down (the peer disconnected, or after a local {@code rdma_disconnect}). */
    DISCONNECTED(false),
    /** The RDMA device went away: everything on it must be closed. */
    DEVICE_REMOVAL(true),
    MULTICAST_JOIN(false),
    MULTICAST_ERROR(true),
    /** The local address changed (bonding failover, for example). */
    ADDR_CHANGE(false),
    /** The QP left the time-wait state and can be reused. */
    TIMEWAIT_EXIT(false);

    private static final CmEventType[] VALUES = values();

    private final boolean error;

    CmEventType(boolean error) {
        this.error = error;
    }

    /** True for events that report a failure of the step in progress. */
    public boolean isError() {
        return error;
    }

    /** The {@code enum rdma_cm_event_type} value. */
    public int value() {
        return ordinal();
    }

    /** The type for a native value; null when this build does not know it. */
    public static CmEventType of(int value) {
        return value >= 0 && value < VALUES.length ? VALUES[value] : null;
    }
}
