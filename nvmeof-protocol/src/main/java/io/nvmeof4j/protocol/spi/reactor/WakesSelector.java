package io.nvmeof4j.protocol.spi.reactor;

import java.nio.channels.Selector;

/**
 * A poll group whose work can wake a reactor blocked in another group's {@link Selector} (a
 * {@link SelectorPollGroup}), so that the reactor waits on that selector alone, with its idle strategy's full bound
 * (docs/datapath.md, "One wait primitive per reactor"): an io_uring, whose completions signal the selector's wake-up
 * eventfd; an NVMe-oF/RDMA poll group, whose completion channels join the selector's epoll set. Between
 * {@link #armWakeup()} and {@link #disarmWakeup()} (the reactor's block) its work ends the select.
 */
public interface WakesSelector {
    /**
     * Makes this group's work wake a thread blocked in {@code selector} from now on, while armed. Returns false when
     * it cannot (another JDK's selector, an old kernel, already joined to another selector): the reactor then keeps
     * a bounded wait. Reactor thread, or before the reactor starts.
     */
    boolean wakeSelector(Selector selector);

    /** True when this group's work wakes {@code selector} ({@link #wakeSelector} succeeded for it). Reactor thread. */
    boolean wakes(Selector selector);

    /**
     * The reactor is about to block in the selector this group wakes: returns false when work is already waiting (do
     * not block). {@link #disarmWakeup()} follows either way. Reactor thread.
     */
    boolean armWakeup();

    /** The block is over: this group's work need not wake the selector until the next {@link #armWakeup()}. */
    void disarmWakeup();
}
