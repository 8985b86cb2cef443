package io.nvmeof4j.tcp;

import io.nvmeof4j.protocol.log.RateLimitedLog;
import io.nvmeof4j.protocol.spi.ConnectionLimits;
import io.nvmeof4j.protocol.spi.PendingConnections;
import io.nvmeof4j.protocol.spi.PortOptions;
import io.nvmeof4j.protocol.spi.QueueHandlerFactory;
import io.nvmeof4j.protocol.spi.TransportAddress;
import io.nvmeof4j.protocol.spi.transport.AbstractTransportListener;
import io.nvmeof4j.tcp.tls.PskResolver;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.net.StandardSocketOptions;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.LongAdder;

/**
 * A listening NVMe/TCP port. A dedicated acceptor thread blocks in {@code accept()} (so no reactor ever does);
 * closing the server channel wakes it at once. Accepted sockets get TCP_NODELAY (the Linux host sets it too:
 * a response must not wait for Nagle), fixed send and receive buffers if configured
 * ({@link TcpTransportOptions#socketBufferSize}; autotuned by default), and go round-robin to the poll groups.
 * <p>Pre-Connect limits ({@link ConnectionLimits}): every accepted socket is pending until its Fabrics Connect
 * succeeds. A peer address at its limit has the new socket closed at once; at the port's limit the oldest pending
 * connection is closed to make room; a connection still pending after the connect timeout is closed. The acceptor
 * waits in accept() until the oldest pending connection's deadline, so it closes each at its time, and with none
 * pending for {@link PendingConnections#IDLE_WAIT_NANOS}: an idle port's acceptor stays asleep. Each refusal is
 * counted ({@link QueueHandlerFactory#onConnectionRefused}) and logged rate-limited per peer address.
 * <p>accept() failing (EMFILE, ENFILE, ENOBUFS) backs off exponentially from 10 ms to 1 s, logging one line a second
 * without a stack trace: the kernel keeps the connections queued in the backlog meanwhile.
 */
final class TcpListener extends AbstractTransportListener {
    private static final Logger LOG = LoggerFactory.getLogger(TcpListener.class);
    /** Refusals and accept failures: one line per peer address (or per port) a second. */
    static final RateLimitedLog REFUSALS = new RateLimitedLog(LOG);
    private static final long JOIN_TIMEOUT_MILLIS = 5_000;
    private static final long ACCEPT_BACKOFF_MIN_MILLIS = 10;
    private static final long ACCEPT_BACKOFF_MAX_MILLIS = 1_000;

    private final TcpControllerTransport transport;
    private final ServerSocketChannel server;
    private final List<TcpPollGroup> groups;
    private final PendingConnections pending;
    private final Thread acceptor;
    private volatile int acceptWaitMillis;
    private final AtomicBoolean closed = new AtomicBoolean();
    private final LongAdder acceptFailures = new LongAdder();
    private int nextGroup;

    TcpListener(TcpControllerTransport transport, ServerSocketChannel server, TransportAddress address,
                PortOptions options, List<TcpPollGroup> groups, QueueHandlerFactory handlers) {
        super(address, options, handlers, REFUSALS);
        this.transport = transport;
        this.server = server;
        this.groups = List.copyOf(groups);
        this.pending = new PendingConnections(options.connectionLimits());
        this.acceptor = new Thread(this::acceptLoop, "nvmeof-tcp-accept-" + address.trsvcid());
        this.acceptor.setDaemon(true);
    }

    void start() {
        acceptor.start();
        LOG.info("NVMe/TCP listening on {}", address);
    }

    QueueHandlerFactory handlers() {
        return handlers;
    }

    PskResolver pskResolver() {
        return transport.pskResolver();
    }

    /** Connections of this port that have not completed Connect (a snapshot, for tests and gauges). */
    int pendingCount() {
        return pending.count();
    }

    /** accept() calls that failed (EMFILE and the like) since the listener started. */
    long acceptFailures() {
        return acceptFailures.sum();
    }

    /**
     * Never lets the acceptor die while the port is open: out of file descriptors, even loading a class (opening
     * its jar) can fail, and a dead acceptor would leave the port deaf for good.
     */
    private void acceptLoop() {
        while (!closed.get() && server.isOpen() && !Thread.currentThread().isInterrupted()) {
            try {
                acceptUntilClosed();
            } catch (SocketException | RuntimeException | LinkageError | OutOfMemoryError e) {
                if (closed.get() || !server.isOpen()) {
                    return; // closed meanwhile (setSoTimeout on a closed socket throws): not a failure
                }
                acceptFailures.increment();
                try {
                    REFUSALS.warnFrom(this, "NVMe/TCP acceptor on {} failed: {}; continuing in {} ms", address, e,
                        ACCEPT_BACKOFF_MAX_MILLIS);
                } catch (RuntimeException | LinkageError | OutOfMemoryError ignored) {
                    // logging failed for the same reason: the backoff below still applies
                }
                try {
                    Thread.sleep(ACCEPT_BACKOFF_MAX_MILLIS);
                } catch (InterruptedException interrupted) {
                    Thread.currentThread().interrupt();
                    return;
                }
            }
        }
    }

    private void acceptUntilClosed() throws SocketException {
        ServerSocket socket = server.socket();
        long backoffMillis = 0;
        while (!closed.get()) {
            long now = System.nanoTime();
            pending.expire(now);
            // Every wake-up of this thread preempts whatever runs on the housekeeping CPU, a busy host poller on a
            // small machine: it wakes for a connection or a deadline only (issue 17; a 100 ms grain was 10 a second).
            acceptWaitMillis = timeoutMillis(pending.nanosToNextExpiry(now));
            socket.setSoTimeout(acceptWaitMillis);
            SocketChannel channel;
            try {
                channel = socket.accept().getChannel();
                backoffMillis = 0;
            } catch (SocketTimeoutException e) {
                continue;
            } catch (ClosedChannelException e) {
                break; // close() closed the server channel (AsynchronousCloseException is one of these)
            } catch (IOException e) {
                if (closed.get() || !server.isOpen()) {
                    break;
                }
                // Out of file descriptors (EMFILE/ENFILE) or buffers: the expected failure under a flood. The
                // connection stays in the kernel's backlog; retrying at once would spin on the same error.
                acceptFailures.increment();
                backoffMillis = backoffMillis == 0 ? ACCEPT_BACKOFF_MIN_MILLIS
                    : Math.min(ACCEPT_BACKOFF_MAX_MILLIS, backoffMillis * 2);
                REFUSALS.warnFrom(this, "NVMe/TCP accept on {} failed: {}; retrying in {} ms", address, e,
                    backoffMillis);
                try {
                    Thread.sleep(backoffMillis);
                } catch (InterruptedException interrupted) {
                    Thread.currentThread().interrupt();
                    break;
                }
                continue;
            }
            admit(channel);
        }
    }

    /** accept()'s timeout for a wait of {@code nanos}: whole milliseconds, rounded up, at least 1 (0 is forever). */
    private static int timeoutMillis(long nanos) {
        return (int) Math.max(1, TimeUnit.NANOSECONDS.toMillis(nanos + 999_999));
    }

    /** How long the acceptor's current accept() waits at most (for tests). */
    int acceptWaitMillis() {
        return acceptWaitMillis;
    }

    private void admit(SocketChannel channel) {
        InetSocketAddress remote;
        try {
            remote = (InetSocketAddress) channel.getRemoteAddress();
            channel.setOption(StandardSocketOptions.TCP_NODELAY, true);
            int bufferSize = transport.options().socketBufferSize();
            if (bufferSize > 0) {
                channel.setOption(StandardSocketOptions.SO_SNDBUF, bufferSize);
                channel.setOption(StandardSocketOptions.SO_RCVBUF, bufferSize);
            }
            channel.configureBlocking(false);
        } catch (IOException | RuntimeException e) {
            REFUSALS.warnFrom(this, "NVMe/TCP: cannot set up an accepted socket on {}: {}", address, e);
            closeQuietly(channel);
            return;
        }
        if (remote == null || remote.getAddress() == null) {
            closeQuietly(channel); // the peer has already gone
            return;
        }
        PendingConnections.Entry entry = pending.admit(remote.getAddress(), System.nanoTime());
        if (entry == null) {
            // Closed before reading anything: no NVMe/TCP PDU can say why (nothing was negotiated yet).
            closeQuietly(channel);
            refused(remote.getAddress(), TcpPollGroup.describe(remote), PendingConnections.Refusal.HOST_LIMIT);
            return;
        }
        TcpPollGroup group = groups.get(nextGroup);
        nextGroup = (nextGroup + 1) % groups.size();
        group.adopt(channel, this, entry);
    }

    private static void closeQuietly(SocketChannel channel) {
        try {
            channel.close();
        } catch (IOException ignored) {
            // nothing to do: the socket is being thrown away
        }
    }

    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        try {
            server.close();
        } catch (IOException e) {
            LOG.debug("error closing the NVMe/TCP listener on {}", address, e);
        }
        join(acceptor, JOIN_TIMEOUT_MILLIS, LOG);
        transport.removeListener(this);
        LOG.info("NVMe/TCP stopped listening on {}", address);
    }

    @Override
    public String toString() {
        return "TcpListener[" + address + "]";
    }
}
