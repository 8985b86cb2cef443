package io.nvmeof4j.protocol.spi;

import java.io.IOException;
import java.util.List;

/**
 * A transport binding in the controller (target) role: NVMe/TCP, NVMe-oF/RDMA. The daemon creates one poll
 * group per reactor, then opens listeners whose accepted queues are spread over those groups.
 */
public interface ControllerTransport extends AutoCloseable {
    TransportType type();

    /** The transport's share of one reactor, drawing data buffers from that reactor's pool. */
    PollGroup createPollGroup(BufferPool pool);

    /**
     * Starts listening on {@code address} (port "0": any free port; see {@link TransportListener#address()}).
     * Each accepted queue goes to one of {@code groups} (poll groups this transport created) and gets its handler
     * from {@code handlers} on that group's thread. Accepting never blocks a reactor.
     */
    TransportListener listen(TransportAddress address, PortOptions options, List<PollGroup> groups,
                             QueueHandlerFactory handlers) throws IOException;

    /** Stops every listener. Poll groups are closed by their reactors. */
    @Override
    void close();
}
