package io.nvmeof4j.tcp;

import io.nvmeof4j.protocol.spi.PortOptions;
import io.nvmeof4j.protocol.spi.QueueHandlerFactory;
import io.nvmeof4j.protocol.spi.TransportAddress;
import io.nvmeof4j.protocol.spi.TransportListener;
import io.nvmeof4j.tcp.tls.PskResolver;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.net.StandardSocketOptions;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A listening NVMe/TCP port. A dedicated acceptor thread blocks in {@code accept()} (so no reactor ever does);
 * closing the server channel wakes it at once. Accepted sockets get TCP_NODELAY (the Linux host sets it too:
 * a response must not wait for Nagle) and go round-robin to the poll groups.
 */
final class TcpListener implements TransportListener {
    private static final Logger LOG = LoggerFactory.getLogger(TcpListener.class);
    private static final long JOIN_TIMEOUT_MILLIS = 5_000;
    /** Pause after an accept error (e.g. out of file descriptors) so the loop does not spin. */
    private static final long ACCEPT_ERROR_BACKOFF_MILLIS = 100;

    private final TcpControllerTransport transport;
    private final ServerSocketChannel server;
    private final TransportAddress address;
    private final PortOptions options;
    private final List<TcpPollGroup> groups;
    private final QueueHandlerFactory handlers;
    private final Thread acceptor;
    private final AtomicBoolean closed = new AtomicBoolean();
    private int nextGroup;

    TcpListener(TcpControllerTransport transport, ServerSocketChannel server, TransportAddress address,
                PortOptions options, List<TcpPollGroup> groups, QueueHandlerFactory handlers) {
        this.transport = transport;
        this.server = server;
        this.address = address;
        this.options = options;
        this.groups = List.copyOf(groups);
        this.handlers = handlers;
        this.acceptor = new Thread(this::acceptLoop, "nvmeof-tcp-accept-" + address.trsvcid());
        this.acceptor.setDaemon(true);
    }

    void start() {
        acceptor.start();
        LOG.info("NVMe/TCP listening on {}", address);
    }

    @Override
    public TransportAddress address() {
        return address;
    }

    @Override
    public PortOptions options() {
        return options;
    }

    QueueHandlerFactory handlers() {
        return handlers;
    }

    PskResolver pskResolver() {
        return transport.pskResolver();
    }

    private void acceptLoop() {
        while (!closed.get()) {
            SocketChannel channel;
            try {
                channel = server.accept();
            } catch (ClosedChannelException e) {
                break; // close() closed the server channel (AsynchronousCloseException is one of these)
            } catch (IOException e) {
                if (closed.get()) {
                    break;
                }
                LOG.warn("NVMe/TCP accept on {} failed", address, e);
                try {
                    Thread.sleep(ACCEPT_ERROR_BACKOFF_MILLIS);
                } catch (InterruptedException interrupted) {
                    Thread.currentThread().interrupt();
                    break;
                }
                continue;
            }
            try {
                channel.setOption(StandardSocketOptions.TCP_NODELAY, true);
                channel.configureBlocking(false);
            } catch (IOException e) {
                LOG.warn("NVMe/TCP: cannot set up an accepted socket on {}", address, e);
                try {
                    channel.close();
                } catch (IOException ignored) {
                    // already failing
                }
                continue;
            }
            TcpPollGroup group = groups.get(nextGroup);
            nextGroup = (nextGroup + 1) % groups.size();
            group.adopt(channel, this);
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
        if (Thread.currentThread() != acceptor) {
            try {
                acceptor.join(JOIN_TIMEOUT_MILLIS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            if (acceptor.isAlive()) {
                LOG.warn("NVMe/TCP acceptor for {} did not stop within {} ms", address, JOIN_TIMEOUT_MILLIS);
            }
        }
        transport.removeListener(this);
        LOG.info("NVMe/TCP stopped listening on {}", address);
    }

    @Override
    public String toString() {
        return "TcpListener[" + address + "]";
    }
}
