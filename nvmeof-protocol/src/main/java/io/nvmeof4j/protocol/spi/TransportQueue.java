package io.nvmeof4j.protocol.spi;

/**
 * A controller-role queue pair as the command layer sees it: one TCP connection or one RDMA queue pair.
 * Until a Fabrics Connect succeeds on it the queue has no identity; the handler tells the transport what the
 * Connect established with {@link #connected}.
 */
public interface TransportQueue {
    TransportType transportType();

    /**
     * The local address the host reached for this queue: the listen address, or, for a wildcard listener
     * (0.0.0.0, ::), the concrete address the connection arrived on (discovery reports that one).
     */
    TransportAddress localAddress();

    /** The host's address, for logs and errors: {@code "10.0.2.15:51234"}. */
    String peer();

    /**
     * The host NQN a secure channel authenticated (NVMe/TCP TLS: the PSK identity's), or null on a queue without
     * one. A Connect naming another host NQN is refused: a PSK vouches for one host only.
     */
    default String secureChannelHostNqn() {
        return null;
    }

    /**
     * The whole PSK identity of the secure channel ({@code NVMe1G01 <hostnqn> <subnqn> <digest>}), or null on a queue
     * without one. The target tells a PSK that DH-HMAC-CHAP generated (secure channel concatenation, {@code G})
     * from a configured one ({@code R}) by it.
     */
    default String secureChannelPskIdentity() {
        return null;
    }

    /**
     * Sets up what the queue needs for the size a Connect asks for (nvmet's {@code install_queue}): called on the
     * queue's reactor thread once the Connect passed its checks, before it takes effect ({@link #connected}, which
     * must follow with the same queue id and size). Whatever it takes is given back when the queue closes, however it
     * closes; calling it again (a second Connect after a refused one) replaces the earlier set-up.
     * <p>NVMe/TCP allocates the queue's per-slot buffers here, charged to the daemon's queue buffer budget.
     *
     * @param queueId 0 for the admin queue
     * @param sqSize  submission queue size, 1-based (Connect SQSIZE + 1)
     * @throws ConnectRefusedException the memory is not there (the budget is spent, or the allocation failed): the
     *                                 Connect is refused with the exception's status and nothing is kept
     */
    default void install(int queueId, int sqSize) throws ConnectRefusedException {
    }

    /**
     * Records the outcome of a successful Connect. Called on the queue's reactor thread, after {@link #install}
     * and before the Connect request is completed.
     *
     * @param queueId 0 for the admin queue
     * @param sqSize submission queue size, 1-based (Connect SQSIZE + 1)
     * @param sqFlowControlDisabled Connect CATTR bit 2: SQHD is reported as 0xFFFF, and NVMe/TCP may complete a
     *                              read with the C2HData SUCCESS flag instead of a response capsule
     */
    void connected(int queueId, int sqSize, boolean sqFlowControlDisabled);

    /** The queue id set by {@link #connected}, or -1 before Connect. */
    int queueId();

    /** Bytes of in-capsule data this queue accepts (8 KiB on the admin queue, the port's inline size on I/O queues). */
    int inCapsuleDataSize();

    /**
     * Commands the host submitted on this queue that are not answered yet: still receiving their data (R2T),
     * executing, or with a response not yet fully written to the network. Any thread (a snapshot); the daemon's
     * shutdown waits for it to reach zero before it disconnects the queue.
     */
    int commandsOutstanding();

    /**
     * Closes the connection (keep-alive expiry, controller teardown, shutdown). Any thread, idempotent. In-flight
     * requests still complete into nothing; {@link QueueHandler#onClosed} follows on the reactor thread.
     */
    void disconnect(String reason);

    /** Runs a control-plane task on this queue's reactor thread (may allocate; not for the per-I/O path). */
    void execute(Runnable task);
}
