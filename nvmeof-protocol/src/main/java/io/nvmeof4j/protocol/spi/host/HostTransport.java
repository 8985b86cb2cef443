package io.nvmeof4j.protocol.spi.host;

import io.nvmeof4j.protocol.spi.TransportAddress;
import io.nvmeof4j.protocol.spi.TransportType;

import java.io.IOException;

/**
 * A transport binding in the host (initiator) role. Create one {@link HostPollGroup} per host reactor thread,
 * then open queues on them.
 */
public interface HostTransport extends AutoCloseable {
    TransportType type();

    /** A new poll group; the caller's reactor thread then polls it. */
    HostPollGroup createPollGroup();

    /**
     * Opens one queue to {@code address}, blocking the calling thread for at most
     * {@link HostQueueOptions#connectTimeout()}: the transport-level connect (NVMe/TCP: TCP connect with
     * TCP_NODELAY, ICReq, ICResp checked as the Linux host checks it), then hands the queue to {@code group}.
     * Must not be called on {@code group}'s own thread unless that thread is not polling.
     *
     * @throws TransportConnectException naming the peer and the step that failed (resolve, connect, ICReq/ICResp,
     *                                   register) and why
     */
    HostQueue connect(HostPollGroup group, TransportAddress address, HostQueueOptions options,
                      HostQueueListener listener) throws IOException;

    @Override
    void close();
}
