package io.nvmeof4j.target.reactor;

import io.nvmeof4j.protocol.spi.reactor.WakesSelector;

import java.nio.channels.Selector;

/**
 * A {@link io.nvmeof4j.protocol.spi.PollGroup} whose work can finish without waking the group the reactor blocks
 * on (a selector): block-device I/O completing in an io_uring, I/O waiting for a QoS timeslice. While such a group
 * has work in flight, an idle {@link Reactor} must still notice it: either the group wakes the reactor's selector
 * itself ({@link #wakeSelector}, the io_uring: the reactor then blocks on the selector alone), or the reactor blocks
 * in <em>this</em> group's {@code await}, bounded by {@link Reactor#IN_FLIGHT_AWAIT_NANOS}.
 */
public interface InFlightAware extends WakesSelector {
    /** True while operations are outstanding whose completion only this group notices. Reactor thread. */
    boolean hasInFlight();

    /**
     * Makes this group's completions wake a thread blocked in {@code selector} from now on (between
     * {@link #armWakeup()} and {@link #disarmWakeup()}). Returns false when it cannot (the default). Reactor thread,
     * or before the reactor starts.
     */
    @Override
    default boolean wakeSelector(Selector selector) {
        return false;
    }

    /** True when completions wake {@code selector} ({@link #wakeSelector} succeeded for it). Reactor thread. */
    @Override
    default boolean wakes(Selector selector) {
        return false;
    }

    /**
     * The reactor is about to block in the selector this group wakes: returns false when work is already waiting (do
     * not block). Reactor thread.
     */
    @Override
    default boolean armWakeup() {
        return true;
    }

    /** The block is over: completions need not wake the selector until the next {@link #armWakeup()}. */
    @Override
    default void disarmWakeup() {
    }
}
