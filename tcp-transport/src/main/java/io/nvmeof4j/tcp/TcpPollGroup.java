package io.nvmeof4j.tcp;

import io.nvmeof4j.protocol.spi.BufferPool;
import io.nvmeof4j.protocol.spi.PendingConnections;
import io.nvmeof4j.protocol.spi.reactor.SelectorPollGroup;
import io.nvmeof4j.protocol.tcp.Crc32cDigest;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.function.Consumer;

/**
 * The NVMe/TCP share of one reactor: a {@link Selector} and the connections registered with it, the reactor's
 * data buffer pool, and the hand-over points other threads use (SPDK's poll group).
 * <p>{@link #poll()} does one round without blocking: control tasks (new connections, disconnects), ready sockets
 * (through {@code selectNow} with a reused consumer, so no selected-key set and no iterator garbage), completions
 * handed over by other threads, commands waiting for pool buffers, and pending sends. Nothing in a round allocates
 * once connections are set up.
 * <p>Completions from other threads go on an intrusive lock-free stack (each {@link TcpRequest} is its own node,
 * so the hand-over is one CAS, can never be full, and allocates nothing), drained in arrival order each round.
 * The producer wakes the selector only when the reactor is (about to be) blocked in {@link #await}.
 */
public final class TcpPollGroup implements SelectorPollGroup {
    private static final Logger LOG = LoggerFactory.getLogger(TcpPollGroup.class);

    /** Buffers in one gathering write: several complete responses, or one multi-part data PDU. */
    private static final int IOV_LENGTH = 64;

    private static final VarHandle COMPLETED_HEAD;

    static {
        try {
            COMPLETED_HEAD = MethodHandles.lookup().findVarHandle(TcpPollGroup.class, "completedHead", TcpRequest.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    final TcpControllerTransport transport;
    final BufferPool pool;
    final TcpTransportOptions options;
    /** Shared by the group's connections: everything here runs on the reactor thread. */
    final Crc32cDigest crc = new Crc32cDigest();
    final ByteBuffer[] iov = new ByteBuffer[IOV_LENGTH];

    private final Selector selector;
    private final Consumer<SelectionKey> readyKeyHandler = this::onKeyReady;
    private final ConcurrentLinkedQueue<Runnable> tasks = new ConcurrentLinkedQueue<>();
    private volatile Thread reactorThread;
    private volatile boolean sleeping;
    private volatile boolean closed;
    @SuppressWarnings("unused") // accessed through COMPLETED_HEAD
    private volatile TcpRequest completedHead;

    private final List<TcpConnection> connections = new ArrayList<>();
    private TcpConnection[] flushList = new TcpConnection[16];
    private int flushCount;
    private final List<TcpConnection> terminating = new ArrayList<>();
    private TcpRequest parkedHead;
    private TcpRequest parkedTail;
    /** Written by the reactor only. */
    private volatile long bufferWaits;

    TcpPollGroup(TcpControllerTransport transport, BufferPool pool, TcpTransportOptions options) {
        this.transport = transport;
        this.pool = pool;
        this.options = options;
        try {
            this.selector = Selector.open();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot open a selector for an NVMe/TCP poll group", e);
        }
    }

    /** The pool this group draws data buffers from. */
    public BufferPool pool() {
        return pool;
    }

    /** Connections currently owned by this group (a gauge; reactor thread for an exact value). */
    public int connectionCount() {
        return connections.size();
    }

    Thread reactorThread() {
        return reactorThread;
    }

    // ---- PollGroup ---------------------------------------------------------------------------------------------

    @Override
    public int poll() {
        bindReactorThread();
        int work = 0;
        if (!tasks.isEmpty()) {
            work += runTasks();
        }
        try {
            work += selector.selectNow(readyKeyHandler);
        } catch (IOException e) {
            throw new UncheckedIOException("NVMe/TCP poll group selector failed", e);
        }
        work += drainCompletions();
        if (parkedHead != null) {
            work += retryParked();
        }
        work += flushAll();
        if (parkedHead != null) {
            // Sends just finished may have returned buffers: let waiting commands have them in this round.
            int granted = retryParked();
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
    public void await(long timeoutNanos) {
        bindReactorThread();
        sleeping = true; // volatile write, then the volatile reads below: pairs with enqueueCompletion (Dekker)
        try {
            if (completedHead != null || !tasks.isEmpty() || flushCount > 0) {
                return;
            }
            if (timeoutNanos <= 0) {
                selector.selectNow(readyKeyHandler);
            } else {
                long millis = Math.max(1L, (timeoutNanos + 999_999L) / 1_000_000L);
                selector.select(readyKeyHandler, millis);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("NVMe/TCP poll group selector failed", e);
        } finally {
            sleeping = false;
        }
    }

    @Override
    public void wakeup() {
        selector.wakeup();
    }

    /** The reactor's one wait primitive: its io_uring wakes this selector too (SelectorPollGroup). */
    @Override
    public Selector selector() {
        return selector;
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        runTasks(); // hand-overs still queued: their sockets get closed (register sees closed)
        for (TcpConnection connection : new ArrayList<>(connections)) {
            connection.close("poll group closed");
        }
        drainCompletions();
        while (parkedHead != null) {
            TcpRequest request = parkedHead;
            parkedHead = request.parkedNext;
            request.parkedNext = null;
            request.connection.dropParked(request);
        }
        parkedTail = null;
        try {
            selector.close();
        } catch (IOException e) {
            LOG.debug("error closing an NVMe/TCP poll group selector", e);
        }
    }

    private void bindReactorThread() {
        if (reactorThread == null) {
            reactorThread = Thread.currentThread();
        }
    }

    // ---- hand-over from other threads ----------------------------------------------------------------------------

    /** Any thread: runs {@code task} on the reactor thread during a coming {@link #poll()}. */
    void execute(Runnable task) {
        tasks.add(task);
        selector.wakeup();
    }

    /** Acceptor thread: a new connection for this group. */
    void adopt(SocketChannel channel, TcpListener listener, PendingConnections.Entry pending) {
        if (closed) {
            pending.release();
            closeQuietly(channel);
            return;
        }
        execute(() -> register(channel, listener, pending));
    }

    /** Any thread other than the reactor: a command completed; the reactor finishes it. */
    void enqueueCompletion(TcpRequest request) {
        TcpRequest head;
        do {
            head = completedHead;
            request.completedNext = head;
        } while (!COMPLETED_HEAD.compareAndSet(this, head, request));
        if (sleeping) {
            selector.wakeup();
        }
    }

    private int runTasks() {
        int n = 0;
        Runnable task;
        while ((task = tasks.poll()) != null) {
            n++;
            try {
                task.run();
            } catch (RuntimeException e) {
                LOG.error("task on an NVMe/TCP poll group failed", e);
            }
        }
        return n;
    }

    private int drainCompletions() {
        if (completedHead == null) {
            return 0;
        }
        TcpRequest stack = (TcpRequest) COMPLETED_HEAD.getAndSet(this, (TcpRequest) null);
        // The stack is newest first: reverse it so completions go out in the order they happened.
        TcpRequest fifo = null;
        while (stack != null) {
            TcpRequest next = stack.completedNext;
            stack.completedNext = fifo;
            fifo = stack;
            stack = next;
        }
        int n = 0;
        while (fifo != null) {
            TcpRequest next = fifo.completedNext;
            fifo.completedNext = null;
            fifo.connection.onCompleted(fifo, fifo.completionStatus);
            fifo = next;
            n++;
        }
        return n;
    }

    // ---- connections -------------------------------------------------------------------------------------------

    private void register(SocketChannel channel, TcpListener listener, PendingConnections.Entry pending) {
        if (closed) {
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
            connection.key = channel.register(selector, SelectionKey.OP_READ, connection);
            connections.add(connection);
            if (flushList.length < connections.size()) {
                flushList = Arrays.copyOf(flushList, connections.size() * 2);
            }
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
        if (flushCount == flushList.length) {
            flushList = Arrays.copyOf(flushList, flushCount * 2); // only with closed connections still listed
        }
        flushList[flushCount++] = connection;
    }

    private int flushAll() {
        int count = flushCount;
        if (count == 0) {
            return 0;
        }
        int work = 0;
        for (int i = 0; i < count; i++) {
            TcpConnection connection = flushList[i];
            flushList[i] = null;
            connection.inFlushList = false;
            work += connection.flush();
        }
        // Connections that asked again during the loop were appended after the snapshot: move them down.
        int later = flushCount - count;
        System.arraycopy(flushList, count, flushList, 0, later);
        Arrays.fill(flushList, later, flushCount, null);
        flushCount = later;
        return work;
    }

    void addTerminating(TcpConnection connection) {
        terminating.add(connection);
    }


    private void expireTerminations() {
        long now = System.nanoTime();
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
        return parkedHead != null ? null : pool.acquire(length);
    }

    /** Commands that found the data-buffer pool dry (or others waiting) and waited for a buffer. Any thread. */
    public long bufferWaits() {
        return bufferWaits;
    }

    void release(ByteBuffer buffer) {
        pool.release(buffer);
    }

    /** Queues a command until the pool can give it a buffer. */
    void park(TcpRequest request) {
        bufferWaits = bufferWaits + 1; // the reactor is the only writer
        request.parkedNext = null;
        if (parkedTail == null) {
            parkedHead = request;
        } else {
            parkedTail.parkedNext = request;
        }
        parkedTail = request;
    }

    private int retryParked() {
        int granted = 0;
        while (parkedHead != null) {
            TcpRequest request = parkedHead;
            if (request.connection.isGone()) {
                popParked();
                request.connection.dropParked(request);
                continue;
            }
            ByteBuffer buffer = pool.acquire(request.dataLength);
            if (buffer == null) {
                break;
            }
            popParked();
            granted++;
            request.connection.onBufferGranted(request, buffer);
        }
        return granted;
    }

    private void popParked() {
        TcpRequest request = parkedHead;
        parkedHead = request.parkedNext;
        if (parkedHead == null) {
            parkedTail = null;
        }
        request.parkedNext = null;
    }

    @Override
    public String toString() {
        return "TcpPollGroup[connections=" + connections.size() + "]";
    }
}
