package io.nvmeof4j.tcp;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.SelectableChannel;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.util.function.Consumer;

/**
 * The selector of an NVMe/TCP poll group, either role: the sockets of its queues, one non-blocking round
 * ({@link #selectNow}) and the reactor's bounded wait ({@link #select}). Ready keys go to one consumer made once, so
 * neither allocates (no selected-key set, no iterator). Reactor thread, except {@link #wakeup}.
 */
public final class SocketSelector {
    private static final Logger LOG = LoggerFactory.getLogger(SocketSelector.class);

    private final String name;
    private final Selector selector;
    private final Consumer<SelectionKey> onReady;

    /**
     * @param name    names the poll group in errors, e.g. "NVMe/TCP poll group"
     * @param onReady gets each ready key
     */
    public SocketSelector(String name, Consumer<SelectionKey> onReady) {
        this.name = name;
        this.onReady = onReady;
        try {
            this.selector = Selector.open();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot open a selector for an " + name, e);
        }
    }

    /** The JDK selector itself, for the reactor's one wait primitive (the io_uring joins its wake-up eventfd). */
    public Selector nioSelector() {
        return selector;
    }

    /** Hands every ready key to the consumer without blocking; returns how many. */
    public int selectNow() {
        try {
            return selector.selectNow(onReady);
        } catch (IOException e) {
            throw new UncheckedIOException(name + " selector failed", e);
        }
    }

    /** Blocks until a socket is ready, {@link #wakeup} is called, or the timeout passes (rounded up to 1 ms). */
    public void select(long timeoutNanos) {
        if (timeoutNanos <= 0) {
            selectNow();
            return;
        }
        try {
            selector.select(onReady, Math.max(1L, (timeoutNanos + 999_999L) / 1_000_000L));
        } catch (IOException e) {
            throw new UncheckedIOException(name + " selector failed", e);
        }
    }

    public SelectionKey register(SelectableChannel channel, int ops, Object attachment) throws ClosedChannelException {
        return channel.register(selector, ops, attachment);
    }

    /** Any thread: makes the current or the next {@link #select} return. */
    public void wakeup() {
        selector.wakeup();
    }

    public void close() {
        try {
            selector.close();
        } catch (IOException e) {
            LOG.debug("error closing the selector of an {}", name, e);
        }
    }
}
