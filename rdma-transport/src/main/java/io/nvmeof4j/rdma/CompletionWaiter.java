package io.nvmeof4j.rdma;

/**
 * How an idle poll group blocks: on the completion channel its queues' completion queues report to, with a timeout,
 * and how another thread interrupts that wait. The production implementation wraps the JNI completion channel;
 * unit tests use a fake.
 */
public interface CompletionWaiter extends AutoCloseable {
    /**
     * Blocks until a completion queue armed with {@link QueuePairVerbs#armNotification()} has a completion,
     * {@link #wakeup()} is called, or the timeout passes. Consumes and acknowledges the events it saw.
     */
    void await(long timeoutNanos);

    /** Any thread: makes the current or next {@link #await} return promptly. */
    void wakeup();

    @Override
    void close();
}
