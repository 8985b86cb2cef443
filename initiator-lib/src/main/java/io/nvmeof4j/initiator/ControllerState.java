package io.nvmeof4j.initiator;

/** Life of an {@link NvmeofController}. */
public enum ControllerState {
    /** Queues connected; I/O flows. */
    LIVE,
    /** A queue failed (or a command timed out, or keep-alive failed): queues torn down, reconnecting with back-off.
     *  I/O submitted meanwhile, and retryable I/O that was in flight, waits for the reconnect. */
    RECONNECTING,
    /** No reconnect within the controller-loss timeout (or the controller refused us for good): every waiting and
     *  every new I/O fails. */
    LOST,
    /** Closed by the application. */
    CLOSED
}
