package io.nvmeof4j.rdma;

import java.nio.channels.Selector;

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

    /**
     * Makes completion events end a select on {@code selector} (a reactor that blocks in its NVMe/TCP selector):
     * true when every channel, present and future, joins it. False when it cannot (the default; another JDK's
     * selector; already joined to another one). Reactor thread.
     */
    default boolean joinSelector(Selector selector) {
        return false;
    }

    /** The selector {@link #joinSelector} succeeded for, or null. */
    default Selector joinedSelector() {
        return null;
    }

    /**
     * The reactor is about to block in the joined selector instead of {@link #await}: from now on {@link #wakeup()}
     * wakes the selector; takes (and acknowledges) the events pending on the channels, which re-arms their joins.
     * Reactor thread.
     */
    default void enterSelect() {
    }

    /** The select is over: {@link #wakeup()} wakes {@link #await} again. */
    default void leaveSelect() {
    }

    @Override
    void close();
}
