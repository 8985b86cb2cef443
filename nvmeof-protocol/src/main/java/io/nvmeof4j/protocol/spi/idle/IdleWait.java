package io.nvmeof4j.protocol.spi.idle;

/**
 * How a reactor blocks when its {@link IdleStrategy} decides to: publish that it sleeps (so other threads handing
 * it work wake it), re-check what they may have handed over meanwhile, then wait on its primitive (a selector, a
 * completion channel, an io_uring) for at most the timeout.
 */
@FunctionalInterface
public interface IdleWait {
    /** Blocks the reactor thread until woken, until work may be ready, or at most {@code timeoutNanos}. */
    void block(long timeoutNanos);
}
