package io.nvmeof4j.protocol.spi;

/**
 * A unit of data-path work owned by one reactor thread (SPDK's poll group): the queues of one transport, a
 * block-device channel, a task queue. The reactor calls {@link #poll()} in a loop and, when a round finds no
 * work, spins a little and then {@link #await(long) blocks}; another thread makes it return with {@link #wakeup()}.
 */
public interface PollGroup extends AutoCloseable {
    /**
     * Does whatever work is ready without blocking: reads, parses, dispatches, sends, completes.
     * Reactor thread only.
     *
     * @return how much work was done; 0 tells the reactor it may idle
     */
    int poll();

    /**
     * The end of a reactor round that found work: sends what the groups polled after this one handed it (a
     * response whose block I/O completed in the block-device group's poll), in the same round instead of after
     * the next round's socket poll. Reactor thread only.
     *
     * @return how much work was done
     */
    default int endRound() {
        return 0;
    }

    /**
     * Blocks the reactor thread until work may be ready, {@link #wakeup()} is called, or the timeout passes.
     * A poll group that cannot block (a busy-polled device) returns at once. Reactor thread only.
     */
    void await(long timeoutNanos);

    /** Any thread: makes the current or the next {@link #await(long)} return promptly. */
    void wakeup();

    /** Closes every queue and socket this group owns. Reactor thread, or any thread once the reactor stopped. */
    @Override
    void close();
}
