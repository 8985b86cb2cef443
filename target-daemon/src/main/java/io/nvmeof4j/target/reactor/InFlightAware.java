package io.nvmeof4j.target.reactor;

/**
 * A {@link io.nvmeof4j.protocol.spi.PollGroup} whose work can finish without waking the group the reactor blocks
 * on (the first one, a selector): block-device I/O completing in an io_uring. While such a group has work in
 * flight, an idle {@link Reactor} blocks in <em>this</em> group's {@code await}, bounded by
 * {@link Reactor#IN_FLIGHT_AWAIT_NANOS}, instead of sleeping on the selector for up to 100 ms.
 */
public interface InFlightAware {
    /** True while operations are outstanding whose completion only this group notices. Reactor thread. */
    boolean hasInFlight();
}
