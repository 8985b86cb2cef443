package io.nvmeof4j.tcp;

import io.nvmeof4j.protocol.spi.BufferPool;
import io.nvmeof4j.protocol.spi.ControllerTransport;
import io.nvmeof4j.protocol.spi.MemoryBudget;
import io.nvmeof4j.protocol.spi.PollGroup;
import io.nvmeof4j.protocol.spi.PortOptions;
import io.nvmeof4j.protocol.spi.QueueHandlerFactory;
import io.nvmeof4j.protocol.spi.TransportAddress;
import io.nvmeof4j.protocol.spi.TransportListener;
import io.nvmeof4j.protocol.spi.TransportType;
import io.nvmeof4j.tcp.tls.PskResolver;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.channels.ServerSocketChannel;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * NVMe/TCP in the controller (target) role, in pure Java NIO (NVMe/TCP Transport Specification 1.0;
 * wire reference 5).
 * <p>Use: create one {@link TcpPollGroup} per reactor with {@link #createPollGroup(BufferPool)} (each reactor
 * thread then calls {@code poll()}/{@code await()} on it), then {@link #listen} on each port with those groups.
 * Connections are spread round-robin over the groups; each is served entirely by its group's reactor thread.
 * <p>Every connected queue charges the memory it holds (receive buffer, command slots, an in-capsule buffer per
 * slot) to the transport's queue buffer budget at Connect, and gives it back when it closes; a Connect that does
 * not fit is refused with Controller Busy (see {@code TcpConnection#install}).
 */
public final class TcpControllerTransport implements ControllerTransport {
    /** Pending connections the kernel queues before accept (nvmet uses the same). */
    private static final int BACKLOG = 128;

    private final TcpTransportOptions options;
    private final MemoryBudget queueBufferBudget;
    private final List<TcpListener> listeners = new CopyOnWriteArrayList<>();
    private volatile boolean closed;
    private volatile PskResolver pskResolver;

    public TcpControllerTransport() {
        this(TcpTransportOptions.defaults());
    }

    /** Without a limit on the queues' buffers (tests, embedding); the daemon gives its budget. */
    public TcpControllerTransport(TcpTransportOptions options) {
        this(options, MemoryBudget.unlimited("NVMe/TCP queue buffer budget"));
    }

    /** @param queueBufferBudget what every connected queue's buffers are charged to (shared by all ports) */
    public TcpControllerTransport(TcpTransportOptions options, MemoryBudget queueBufferBudget) {
        this.options = Objects.requireNonNull(options, "options");
        this.queueBufferBudget = Objects.requireNonNull(queueBufferBudget, "queueBufferBudget");
    }

    public TcpTransportOptions options() {
        return options;
    }

    public MemoryBudget queueBufferBudget() {
        return queueBufferBudget;
    }

    /**
     * What one connected queue of {@code sqSize} entries charges to the queue buffer budget: its receive buffer, its
     * command slots (at least 32) and an in-capsule buffer of {@code inCapsuleDataSize} per slot.
     */
    public static long queueBufferBytes(TcpTransportOptions options, int sqSize, int inCapsuleDataSize) {
        return TcpCommandSlots.queueCharge(options.receiveBufferSize(), Math.max(TcpCommandSlots.INITIAL_SLOTS, sqSize),
            inCapsuleDataSize);
    }

    /**
     * Where TLS ports find the PSK of a host that starts a handshake (the target's host keys; may change while
     * running). Without one, TLS handshakes are refused.
     */
    public void pskResolver(PskResolver resolver) {
        this.pskResolver = resolver;
    }

    PskResolver pskResolver() {
        return pskResolver;
    }

    @Override
    public TransportType type() {
        return TransportType.TCP;
    }

    @Override
    public TcpPollGroup createPollGroup(BufferPool pool) {
        Objects.requireNonNull(pool, "pool");
        return new TcpPollGroup(this, pool, options);
    }

    /** As above, stamping with {@code clock} instead of {@link System#nanoTime()} (tests count its reads). */
    TcpPollGroup createPollGroup(BufferPool pool, java.util.function.LongSupplier clock) {
        Objects.requireNonNull(pool, "pool");
        return new TcpPollGroup(this, pool, options, clock);
    }

    @Override
    public TransportListener listen(TransportAddress address, PortOptions portOptions, List<PollGroup> groups,
                                    QueueHandlerFactory handlers) throws IOException {
        Objects.requireNonNull(address, "address");
        Objects.requireNonNull(portOptions, "portOptions");
        Objects.requireNonNull(handlers, "handlers");
        if (closed) {
            throw new IllegalStateException("NVMe/TCP transport is closed");
        }
        if (address.type() != TransportType.TCP) {
            throw new IllegalArgumentException("not a TCP address: " + address);
        }
        if (groups == null || groups.isEmpty()) {
            throw new IllegalArgumentException("listen on " + address + " needs at least one poll group");
        }
        List<TcpPollGroup> tcpGroups = new ArrayList<>(groups.size());
        for (PollGroup group : groups) {
            if (!(group instanceof TcpPollGroup) || ((TcpPollGroup) group).transport != this) {
                throw new IllegalArgumentException("poll group " + group + " was not created by this transport");
            }
            TcpPollGroup tcpGroup = (TcpPollGroup) group;
            int poolMax = tcpGroup.pool.maxBufferSize();
            // In-capsule data has each queue slot's own buffer, so only R2T and C2H data come from the pool.
            if (poolMax < portOptions.maxDataTransferSize()) {
                throw new IllegalArgumentException("buffer pool of " + group + " serves at most " + poolMax
                    + " bytes, less than the port's max data transfer " + portOptions.maxDataTransferSize());
            }
            tcpGroups.add(tcpGroup);
        }
        ServerSocketChannel server = ServerSocketChannel.open();
        try {
            server.setOption(StandardSocketOptions.SO_REUSEADDR, true);
            server.bind(new InetSocketAddress(InetAddress.getByName(address.traddr()), address.port()), BACKLOG);
            int port = ((InetSocketAddress) server.getLocalAddress()).getPort();
            TcpListener listener = new TcpListener(this, server, address.withPort(port), portOptions, tcpGroups,
                handlers);
            listeners.add(listener);
            listener.start();
            return listener;
        } catch (IOException | RuntimeException e) {
            server.close();
            throw new IOException("cannot listen on " + address + ": " + e.getMessage(), e);
        }
    }

    void removeListener(TcpListener listener) {
        listeners.remove(listener);
    }

    /** Stops every listener; queues already accepted stay up until their poll groups close. */
    @Override
    public void close() {
        closed = true;
        for (TcpListener listener : listeners) {
            listener.close();
        }
    }
}
