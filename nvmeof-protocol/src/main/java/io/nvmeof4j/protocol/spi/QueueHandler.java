package io.nvmeof4j.protocol.spi;

/**
 * The command layer's side of one queue: the transport calls it on the queue's reactor thread.
 */
public interface QueueHandler {
    /**
     * A command is ready to execute (all its host data has arrived). The handler completes it, now or later,
     * from any thread, with {@link Request#complete(int)}. Must not block the reactor.
     */
    void onCommand(Request request);

    /**
     * The queue is gone (the host closed it, a protocol error, {@link TransportQueue#disconnect}); called once.
     * Requests still executing will complete into nothing.
     */
    void onClosed(String reason);
}
