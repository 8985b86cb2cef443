package io.nvmeof4j.protocol.spi;

/** Creates the command layer's handler for each new queue a listener accepts. */
@FunctionalInterface
public interface QueueHandlerFactory {
    /** Called on the queue's reactor thread when the transport-level connection is established (TCP: after ICResp). */
    QueueHandler open(TransportQueue queue);
}
