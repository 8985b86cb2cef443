package io.nvmeof4j.tcp;

import io.nvmeof4j.protocol.spi.JvmOptions;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.channels.CancelledKeyException;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.SelectableChannel;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.util.Arrays;
import java.util.function.Consumer;

/**
 * The selector of an NVMe/TCP poll group, either role: the sockets of its queues, one non-blocking round
 * ({@link #selectNow}) and the reactor's bounded wait ({@link #select}). Ready keys go to one consumer made once, so
 * neither allocates (no selected-key set, no iterator). Reactor thread, except {@link #wakeup}.
 * <p><b>Direct reads.</b> The sockets an epoll round found readable (at most {@value #DIRECT_READ_SOCKETS_PROP_NAME},
 * default {@value #DIRECT_READ_SOCKETS_DEFAULT}, of them; when more were, none) are read directly by the next
 * non-blocking rounds, a {@code read} each that returns EAGAIN when nothing came, instead of an {@code epoll_wait}
 * followed by a {@code read} of each ready socket; every {@value #EPOLL_EVERY}th round asks epoll again, about every
 * socket, and picks the sockets anew: those that brought bytes since the last epoll round stay, the others go, the
 * ones it found readable join. A queue carrying a steady stream of commands or completions is then one
 * system call per round instead of two (one took 1.0-1.3 µs on this project's benchmark machine; SPDK's sockets ask
 * epoll first too), while an idle socket beside it (the admin queue's) costs nothing between epoll rounds, which see
 * its data at most {@value #EPOLL_EVERY} rounds later. A round asks epoll at once when a socket it would read waits for
 * OP_WRITE, holds its reads back or was closed (epoll then lets the key go; the JDK closes a registered channel's
 * file descriptor only then). The reactor's blocking wait ({@link #select}) is always epoll.
 */
public final class SocketSelector {
    private static final Logger LOG = LoggerFactory.getLogger(SocketSelector.class);

    /** How many sockets an epoll round may hand to direct reads; 0 turns direct reads off. */
    public static final String DIRECT_READ_SOCKETS_PROP_NAME = "nvmeof4j.tcp.direct_read_sockets";
    /** A host reactor's I/O queue or a target reactor's busy connection, with room for a second. */
    public static final int DIRECT_READ_SOCKETS_DEFAULT = 2;
    static final int DIRECT_READ_SOCKETS_MAX = 64;
    /** Rounds from one epoll round to the next while sockets are read directly (a power of two). */
    static final int EPOLL_EVERY = 16;

    /** A registered socket (the key's attachment) that rounds may read without asking epoll first. */
    public interface ReadableSocket {
        /** Reads and handles what the socket holds, without blocking; whether any bytes came. */
        boolean onReadable();
    }

    private final String name;
    private final Selector selector;
    private final Consumer<SelectionKey> onReady;
    private final Consumer<SelectionKey> onSelected = this::onSelected;
    /**
     * The sockets rounds read directly, their keys, and whether each brought bytes since the last epoll round (which
     * keeps those that did, drops the others and adds the ones it found readable); none when more than fit.
     */
    private final ReadableSocket[] direct;
    private final SelectionKey[] directKeys;
    private final boolean[] directActive;
    private int directCount;
    private boolean directOverflow;
    private int rounds;

    /**
     * @param name    names the poll group in errors, e.g. "NVMe/TCP poll group"
     * @param onReady gets each ready key
     * @throws IllegalArgumentException {@value #DIRECT_READ_SOCKETS_PROP_NAME} is malformed or out of range
     */
    public SocketSelector(String name, Consumer<SelectionKey> onReady) {
        this.name = name;
        this.onReady = onReady;
        int directReadSockets = directReadSocketsFromProperty();
        this.direct = new ReadableSocket[directReadSockets];
        this.directKeys = new SelectionKey[directReadSockets];
        this.directActive = new boolean[directReadSockets];
        try {
            this.selector = Selector.open();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot open a selector for an " + name, e);
        }
    }

    /** {@value #DIRECT_READ_SOCKETS_PROP_NAME}, checked ({@link JvmOptions}). */
    public static int directReadSocketsFromProperty() {
        return JvmOptions.intOption(DIRECT_READ_SOCKETS_PROP_NAME, DIRECT_READ_SOCKETS_DEFAULT, 0,
            DIRECT_READ_SOCKETS_MAX);
    }

    /** The JDK selector itself, for the reactor's one wait primitive (the io_uring joins its wake-up eventfd). */
    public Selector nioSelector() {
        return selector;
    }

    /**
     * One non-blocking round: reads the sockets the last epoll round found readable, or asks epoll and hands every
     * ready key to the consumer (see the class comment). Returns how many sockets brought bytes or were ready.
     */
    public int selectNow() {
        if (directCount > 0 && (++rounds & (EPOLL_EVERY - 1)) != 0 && directOnlyReading()) {
            int work = 0;
            for (int i = 0; i < directCount; i++) {
                if (direct[i].onReadable()) {
                    directActive[i] = true;
                    work++;
                }
            }
            return work;
        }
        beginEpollRound();
        try {
            return endEpollRound(selector.selectNow(onSelected));
        } catch (IOException e) {
            throw new UncheckedIOException(name + " selector failed", e);
        }
    }

    private boolean directOnlyReading() {
        for (int i = 0; i < directCount; i++) {
            try {
                if (directKeys[i].interestOps() != SelectionKey.OP_READ) {
                    return false;
                }
            } catch (CancelledKeyException e) {
                return false; // closed: epoll lets the key go
            }
        }
        return true;
    }

    /** Keeps the direct sockets that brought bytes since the last epoll round; the round adds what it finds ready. */
    private void beginEpollRound() {
        int kept = 0;
        for (int i = 0; i < directCount; i++) {
            if (directActive[i] && directKeys[i].isValid()) {
                direct[kept] = direct[i];
                directKeys[kept++] = directKeys[i];
            }
        }
        clearDirectFrom(kept);
        directOverflow = false;
        rounds = 0;
    }

    private void clearDirectFrom(int count) {
        Arrays.fill(direct, count, directCount, null);
        Arrays.fill(directKeys, count, directCount, null);
        Arrays.fill(directActive, 0, directCount, false);
        directCount = count;
    }

    private int endEpollRound(int ready) {
        if (directOverflow) {
            clearDirectFrom(0); // more sockets are busy than direct reads would pay for: epoll every round
        }
        return ready;
    }

    private void onSelected(SelectionKey key) {
        if (key.isValid() && key.isReadable() && key.attachment() instanceof ReadableSocket && !isDirect(key)) {
            if (directCount < direct.length) {
                direct[directCount] = (ReadableSocket) key.attachment();
                directKeys[directCount++] = key;
            } else {
                directOverflow = true;
            }
        }
        onReady.accept(key);
    }

    private boolean isDirect(SelectionKey key) {
        for (int i = 0; i < directCount; i++) {
            if (directKeys[i] == key) {
                return true;
            }
        }
        return false;
    }

    /** Blocks until a socket is ready, {@link #wakeup} is called, or the timeout passes (rounded up to 1 ms). */
    public void select(long timeoutNanos) {
        if (timeoutNanos <= 0) {
            selectNow();
            return;
        }
        beginEpollRound();
        try {
            endEpollRound(selector.select(onSelected, Math.max(1L, (timeoutNanos + 999_999L) / 1_000_000L)));
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
