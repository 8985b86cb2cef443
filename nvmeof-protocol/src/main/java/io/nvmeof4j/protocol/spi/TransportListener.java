package io.nvmeof4j.protocol.spi;

/** A listening port of a {@link ControllerTransport}. */
public interface TransportListener extends AutoCloseable {
    /** The bound address, with the real port when port 0 was asked for. */
    TransportAddress address();

    PortOptions options();

    /** Stops accepting; queues already accepted stay up. Idempotent. */
    @Override
    void close();
}
