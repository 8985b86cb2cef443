package io.nvmeof4j.jni.rdma;

import io.nvmeof4j.jni.Errno;

import java.io.IOException;

/**
 * An RDMA CM step failed: the peer rejected (with its status and private data), address or route resolution
 * failed, the peer was unreachable, or the wait for the step's event timed out. Names the peer, the step, the event
 * and the status, and keeps them as values for callers (NVMe-oF maps a reject's private data to an NVMe status).
 */
public final class RdmaCmException extends IOException {
    private static final long serialVersionUID = 1L;

    private final String peer;
    private final String step;
    private final transient CmEventType event;
    private final int status;
    private final int errno;
    private final byte[] privateData;

    /**
     * @param event       the event that reported the failure, or null (timeout, or a call that failed at once)
     * @param status      the event's status (REJECTED: the transport reason; errors: -errno), or 0
     * @param errno       the errno of the failure (ETIMEDOUT for a timeout, ECONNREFUSED for a reject), positive
     * @param privateData the peer's private data (REJECTED), or null
     */
    public RdmaCmException(String peer, String step, CmEventType event, int status, int errno, byte[] privateData,
                           String detail) {
        super("RDMA CM " + step + " with " + peer + " failed: "
            + (event != null ? event + " status " + status + ", " : "") + Errno.describe(errno)
            + (privateData != null && privateData.length > 0 ? ", " + privateData.length + " bytes of private data" : "")
            + (detail != null ? " (" + detail + ")" : ""));
        this.peer = peer;
        this.step = step;
        this.event = event;
        this.status = status;
        this.errno = errno;
        this.privateData = privateData == null ? new byte[0] : privateData.clone();
    }

    /** The remote address, {@code host:port}. */
    public String peer() {
        return peer;
    }

    /** The step: {@code resolve address}, {@code resolve route}, {@code connect}, {@code accept}, ... */
    public String step() {
        return step;
    }

    /** The event that reported the failure; null for a timeout. */
    public CmEventType event() {
        return event;
    }

    /** The event's status: the reject reason for REJECTED, -errno for the error events, 0 for a timeout. */
    public int status() {
        return status;
    }

    /** A positive errno summarising the failure (ECONNREFUSED, ETIMEDOUT, EHOSTUNREACH, ...). */
    public int errno() {
        return errno;
    }

    /** True when the peer rejected the connection. */
    public boolean isRejected() {
        return event == CmEventType.REJECTED;
    }

    /** True when the wait for the step's event timed out. */
    public boolean isTimeout() {
        return event == null && errno == Errno.ETIMEDOUT;
    }

    /** The private data of a reject (a copy; empty when none). */
    public byte[] privateData() {
        return privateData.clone();
    }
}
