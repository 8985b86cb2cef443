package io.nvmeof4j.tcp;

import io.nvmeof4j.protocol.spi.BufferPool;
import io.nvmeof4j.protocol.spi.PendingConnections;
import io.nvmeof4j.protocol.spi.transport.BufferWaitQueue;
import io.nvmeof4j.protocol.spi.transport.CompletionInbox;
import io.nvmeof4j.protocol.spi.transport.DataMapping;
import io.nvmeof4j.protocol.spi.transport.FlushList;
import io.nvmeof4j.protocol.spi.transport.PollGroupCore;
import io.nvmeof4j.protocol.spi.transport.RoundClock;
import io.nvmeof4j.protocol.spi.reactor.SelectorPollGroup;
import io.nvmeof4j.protocol.tcp.Crc32cDigest;
import io.nvmeof4j.tcp.pdu.PduSendQueue;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;
import java.util.ArrayList;
import java.util.List;
import java.util.function.LongSupplier;

/**
 * The NVMe/TCP share of one reactor: a {@link SocketSelector} and the connections registered with it, the reactor's
 * data buffer pool, and the hand-over points other threads use (SPDK's poll group).
 * <p>{@link #poll()} does one round without blocking: control tasks (new connections, disconnects), ready sockets
 * (through {@code selectNow} with a reused consumer, so no selected-key set and no iterator garbage; busy sockets
 * read directly between epoll rounds, see {@link SocketSelector}), completions
 * handed over by other threads, commands waiting for pool buffers, and pending sends. Nothing in a round allocates
 * once connections are set up.
 * <p>Control tasks, the reactor binding and the wake-up flag are the shared {@link PollGroupCore}; completions from
 * other threads arrive through a {@link CompletionInbox} (one CAS each, never full, nothing allocated), drained in
 * arrival order each round, the selector woken only when the reactor is (about to be) blocked in {@link #await};
 * commands waiting for pool buffers wait in a {@link BufferWaitQueue}; connections with sends staged this round are
 * in a {@link FlushList}.
 * <p>Two clock reads at most per round and connection, none per command: capsules are stamped with the round's
 * {@link RoundClock} (read when the round takes its first capsule), responses with a second one that begins anew
 * with every connection's gathering write and is read after the write returned, when the first response it carried
 * is reported sent.
 */
public final class TcpPollGroup implements SelectorPollGroup {
    private static final Logger LOG = LoggerFactory.getLogger(TcpPollGroup.class);

    final TcpControllerTransport transport;
    final BufferPool pool;
    final TcpTransportOptions options;
    /** Shared by the group's connections: everything here runs on the reactor thread. */
    final Crc32cDigest crc = new Crc32cDigest();
    final ByteBuffer[] iov = new ByteBuffer[PduSendQueue.IOV_LENGTH];
    /** The SGL rules' flyweight result, used by the group's connections one command at a time. */
    final DataMapping dataMapping = DataMapping.forTcp();

    private final SocketSelector selector = new SocketSelector("NVMe/TCP poll group", this::onKeyReady);
    private final PollGroupCore core;
    /** Stamps the responses of one gathering write ({@link #sentNanos}). */
    private final RoundClock sendClock;
    private final CompletionInbox<TcpRequest> inbox = new CompletionInbox<>();
    private final BufferWaitQueue<TcpRequest> bufferWaits;

    private final List<TcpConnection> connections = new ArrayList<>();
    private final FlushList<TcpConnection> flushList = new FlushList<>(16);
    private final List<TcpConnection> terminating = new ArrayList<>();

    TcpPollGroup(TcpControllerTransport transport, BufferPool pool, TcpTransportOptions options) {
        this(transport, pool, options, System::nanoTime);
    }

    /** @param clock the monotonic nanosecond clock rounds and sends are stamped with (tests count its reads) */
    TcpPollGroup(TcpControllerTransport transport, BufferPool pool, TcpTransportOptions options, LongSupplier clock) {
        this.transport = transport;
        this.pool = pool;
        this.options = options;
        this.core = new PollGroupCore("NVMe/TCP poll group", selector::wakeup, new RoundClock(clock));
        this.sendClock = new RoundClock(clock);
        this.bufferWaits = new BufferWaitQueue<>(pool);
    }

    /** The pool this group draws data buffers from. */
    public BufferPool pool() {
        return pool;
    }

    /** Connections currently owned by this group (a gauge; reactor thread for an exact value). */
    public int connectionCount() {
        return connections.size();
    }

    boolean inReactorThread() {
        return core.inReactorThread();
    }

    /** By when the capsules of this round arrived: one clock read per round (reactor thread). */
    long roundNanos() {
        return core.clock().now();
    }

    /** A connection's gathering write begins: the responses it sends get a stamp read after it. */
    void beginSendBatch() {
        sendClock.beginRound();
    }

    /** By when the responses of the current gathering write had left: one clock read per write (reactor thread). */
    long sentNanos() {
        return sendClock.now();
    }

    // ---- PollGroup ---------------------------------------------------------------------------------------------

    @Override
    public int poll() {
        int work = core.beginPoll();
        work += selector.selectNow();
        work += inbox.drain();
        if (!bufferWaits.isEmpty()) {
            work += bufferWaits.grant();
        }
        work += flushAll();
        if (!bufferWaits.isEmpty()) {
            // Sends just finished may have returned buffers: let waiting commands have them in this round.
            int granted = bufferWaits.grant();
            if (granted > 0) {
                work += granted + flushAll();
            }
        }
        if (!terminating.isEmpty()) {
            expireTerminations();
        }
        return work;
    }

    @Override
    public int endRound() {
        return flushList.size() == 0 ? 0 : flushAll();
    }

    @Override
    public void await(long timeoutNanos) {
        core.beginWait(); // then the volatile reads below: pairs with enqueueCompletion (PollGroupCore)
        try {
            if (!inbox.isEmpty() || core.hasTasks() || flushList.size() > 0) {
                return;
            }
            selector.select(timeoutNanos);
        } finally {
            core.endWait();
        }
    }

    @Override
    public void wakeup() {
        selector.wakeup();
    }

    /** The reactor's one wait primitive: its io_uring wakes this selector too (SelectorPollGroup). */
    @Override
    public Selector selector() {
        return selector.nioSelector();
    }

    @Override
    public void close() {
        if (!core.markClosed()) {
            return;
        }
        core.runTasks(); // hand-overs still queued: their sockets get closed (register sees closed)
        for (TcpConnection connection : new ArrayList<>(connections)) {
            connection.close("poll group closed");
        }
        inbox.drain();
        bufferWaits.dropAll();
        selector.close();
    }

    // ---- hand-over from other threads ----------------------------------------------------------------------------

    /** Any thread: runs {@code task} on the reactor thread during a coming {@link #poll()}. */
    void execute(Runnable task) {
        core.execute(task);
    }

    /** Acceptor thread: a new connection for this group. */
    void adopt(SocketChannel channel, TcpListener listener, PendingConnections.Entry pending) {
        if (core.isClosed()) {
            pending.release();
            closeQuietly(channel);
            return;
        }
        execute(() -> register(channel, listener, pending));
    }

    /** Any thread other than the reactor: a command completed; the reactor finishes it. */
    void enqueueCompletion(TcpRequest request) {
        inbox.push(request);
        core.wakeIfSleeping();
    }

    // ---- connections -------------------------------------------------------------------------------------------

    private void register(SocketChannel channel, TcpListener listener, PendingConnections.Entry pending) {
        if (core.isClosed()) {
            pending.release();
            closeQuietly(channel);
            return;
        }
        String peer = "unknown peer";
        try {
            peer = describe(channel.getRemoteAddress());
            TcpConnection connection = new TcpConnection(this, listener, channel, peer, pending);
            if (!pending.attach(why -> {
                listener.refused(pending.peer(), connection.peer(), why);
                connection.disconnect(why.tag());
            })) {
                // Evicted or timed out while it waited for this reactor: it never started.
                listener.refused(pending.peer(), peer, pending.refusal());
                closeQuietly(channel);
                return;
            }
            connection.key = selector.register(channel, SelectionKey.OP_READ, connection);
            connections.add(connection);
            flushList.ensureCapacity(connections.size());
            LOG.debug("NVMe/TCP connection from {} on {}", peer, listener.address());
        } catch (IOException | RuntimeException | OutOfMemoryError e) {
            // OutOfMemoryError too: a connection's receive buffer is direct memory, which a flood can use up; the
            // new connection is closed and the reactor keeps serving the others.
            pending.release();
            TcpListener.REFUSALS.warnFrom(pending.peer(), "NVMe/TCP: cannot take a new connection from {} on {}: {}",
                peer, listener.address(), e);
            closeQuietly(channel);
        }
    }

    void unregister(TcpConnection connection) {
        connections.remove(connection);
        terminating.remove(connection);
    }

    static String describe(SocketAddress address) {
        if (address instanceof InetSocketAddress) {
            InetSocketAddress inet = (InetSocketAddress) address;
            String host = inet.getAddress() != null ? inet.getAddress().getHostAddress() : inet.getHostString();
            return (host.indexOf(':') >= 0 ? "[" + host + "]" : host) + ":" + inet.getPort();
        }
        return String.valueOf(address);
    }

    private static void closeQuietly(SocketChannel channel) {
        try {
            channel.close();
        } catch (IOException ignored) {
            // nothing to do: the socket is being thrown away
        }
    }

    private void onKeyReady(SelectionKey key) {
        if (!key.isValid()) {
            return;
        }
        TcpConnection connection = (TcpConnection) key.attachment();
        int ready = key.readyOps();
        if ((ready & SelectionKey.OP_WRITE) != 0) {
            connection.flush();
        }
        if ((ready & SelectionKey.OP_READ) != 0 && key.isValid()) {
            connection.onReadable();
        }
    }

    // ---- sends -------------------------------------------------------------------------------------------------

    void requestFlush(TcpConnection connection) {
        connection.inFlushList = true;
        flushList.add(connection);
    }

    private int flushAll() {
        int count = flushList.size();
        int work = 0;
        for (int i = 0; i < count; i++) {
            TcpConnection connection = flushList.take(i);
            connection.inFlushList = false;
            work += connection.flush();
        }
        // Connections that asked again during the loop were appended after the snapshot: keep them for next time.
        flushList.keepAfter(count);
        return work;
    }

    void addTerminating(TcpConnection connection) {
        terminating.add(connection);
    }


    private void expireTerminations() {
        long now = core.clock().now();
        for (int i = terminating.size() - 1; i >= 0; i--) {
            TcpConnection connection = terminating.get(i);
            if (now - connection.terminationDeadlineNanos >= 0) {
                connection.onDeadline();
            }
        }
    }

    // ---- data buffers ------------------------------------------------------------------------------------------

    /** A pool buffer, unless the pool is dry or commands are already waiting (first come, first served). */
    ByteBuffer acquireInOrder(int length) {
        return bufferWaits.acquireInOrder(length);
    }

    /** Commands that found the data-buffer pool dry (or others waiting) and waited for a buffer. Any thread. */
    public long bufferWaits() {
        return bufferWaits.waits();
    }

    void release(ByteBuffer buffer) {
        bufferWaits.release(buffer);
    }

    /** Queues a command until the pool can give it a buffer. */
    void park(TcpRequest request) {
        bufferWaits.park(request);
    }

    @Override
    public String toString() {
        return "TcpPollGroup[connections=" + connections.size() + "]";
    }
}
