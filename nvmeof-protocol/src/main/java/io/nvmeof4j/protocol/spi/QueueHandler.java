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
     * The response of a command this handler completed has left: NVMe/TCP wrote its last PDU (the CapsuleResp, or the
     * last C2HData carrying SUCCESS) to the socket; NVMe-oF/RDMA's response SEND completed. Reactor thread, before
     * the transport reuses the request: the end of a command's latency as the target sees it (metrics). Not called
     * when the queue went away before the response was sent. Must not block or allocate.
     *
     * @param sentNanos {@link System#nanoTime()} by when the response had left, read once per batch of responses
     *                  (NVMe/TCP: once per gathering write, after it returned; NVMe-oF/RDMA: the poll round that
     *                  reaped the SEND), never before the command's {@link Request#receivedNanos()} was read
     */
    default void onResponseSent(Request request, long sentNanos) {
    }

    /**
     * The queue is gone (the host closed it, a protocol error, {@link TransportQueue#disconnect}); called once.
     * Requests still executing will complete into nothing.
     */
    void onClosed(String reason);
}
