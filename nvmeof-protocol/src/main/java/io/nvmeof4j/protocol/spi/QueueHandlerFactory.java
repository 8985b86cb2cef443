package io.nvmeof4j.protocol.spi;

/** Creates the command layer's handler for each new queue a listener accepts. */
@FunctionalInterface
public interface QueueHandlerFactory {
    /** Called on the queue's reactor thread when the transport-level connection is established (TCP: after ICResp). */
    QueueHandler open(TransportQueue queue);

    /**
     * The transport refused or closed a queue that had not completed its Connect ({@link ConnectionLimits}): for
     * metrics. Any transport thread (acceptor, CM event thread, reactor); must not block.
     *
     * @param peer the host's address, {@code "10.0.2.15:51234"}
     */
    default void onConnectionRefused(TransportType transport, String peer, PendingConnections.Refusal reason) {
    }
}
