package io.nvmeof4j.protocol.spi.idle;

/**
 * What a reactor thread does after a round of polling (Agrona's {@code IdleStrategy} shape): the loop is
 * {@code while (running) idle.idle(doWork());}. A round that did work resets the strategy; an empty round lets it
 * spin, yield or block.
 * <p>Our own interface rather than Agrona's because the one implementation worth sharing
 * ({@link AdaptiveIdleStrategy}) must serve the target's reactors and the initiator's, and the only module both
 * depend on is this one, which stays JDK-only (plus the SLF4J API); Agrona's runner would not fit either (its close
 * interrupts the thread, which closes NIO channels). The three methods are Agrona's, plus {@link #close()}.
 * <p>An instance belongs to one thread and is called only from it.
 */
public interface IdleStrategy extends AutoCloseable {
    /** @param workCount what the last round did; 0 lets the strategy idle, more resets it */
    void idle(int workCount);

    /** Forgets the idle time so far: the next empty round starts idling from the beginning. */
    void reset();

    /** The name of this strategy in configuration and logs ({@code busy}, {@code adaptive}). */
    String alias();

    /** Releases what the strategy holds (a {@code /proc} file); it is not used afterwards. Same thread. */
    @Override
    default void close() {
    }
}
