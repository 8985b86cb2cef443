package io.nvmeof4j.protocol.spi.transport;

import io.nvmeof4j.protocol.log.RateLimitedLog;
import io.nvmeof4j.protocol.spi.ConnectionLimits;
import io.nvmeof4j.protocol.spi.PendingConnections;
import io.nvmeof4j.protocol.spi.PortOptions;
import io.nvmeof4j.protocol.spi.QueueHandlerFactory;
import io.nvmeof4j.protocol.spi.TransportAddress;
import io.nvmeof4j.protocol.spi.TransportListener;
import io.nvmeof4j.protocol.spi.TransportType;
import org.slf4j.Logger;

import java.net.InetAddress;

/**
 * What a listening port does the same way whatever its binding: it knows its address, options and command layer,
 * it counts and logs the connections it refuses before their Fabrics Connect ({@link ConnectionLimits}: one line per
 * peer address a second, so a flood cannot fill the log), and it stops its own thread (acceptor, CM event thread)
 * within a bound when it closes. A binding's listener subclasses it and keeps how it accepts (a socket acceptor, the
 * RDMA CM).
 */
public abstract class AbstractTransportListener implements TransportListener {
    protected final TransportAddress address;
    protected final PortOptions options;
    protected final QueueHandlerFactory handlers;
    private final String transportName;
    private final RateLimitedLog log;

    /**
     * @param log the binding's rate-limited log (it names the binding's logger); shared with the binding's other
     *            per-peer lines so that one peer gets one line a second in all
     */
    protected AbstractTransportListener(TransportAddress address, PortOptions options, QueueHandlerFactory handlers,
                                        RateLimitedLog log) {
        this.transportName = address.type() == TransportType.RDMA ? "NVMe/RDMA" : "NVMe/TCP";
        this.address = address;
        this.options = options;
        this.handlers = handlers;
        this.log = log;
    }

    @Override
    public final TransportAddress address() {
        return address;
    }

    @Override
    public final PortOptions options() {
        return options;
    }

    /** Counts (the factory's hook) and logs a connection refused or closed before its Connect. Any thread. */
    public final void refused(InetAddress peerAddress, String peer, PendingConnections.Refusal why) {
        try {
            handlers.onConnectionRefused(address.type(), peer, why);
        } catch (RuntimeException e) {
            log.logger().debug("{} {}: refusal hook failed", transportName, address, e);
        }
        ConnectionLimits limits = options.connectionLimits();
        switch (why) {
            case HOST_LIMIT:
                log.warnFrom(peerAddress, "{} {}: refused {}: {} connections of that address have not completed "
                    + "Connect (max_pending_connections_per_host)", transportName, address, peer,
                    limits.maxPendingPerHost());
                break;
            case PORT_LIMIT:
                log.warnFrom(peerAddress, "{} {}: closed {}, the oldest of {} connections that have not completed "
                    + "Connect (max_pending_connections)", transportName, address, peer, limits.maxPending());
                break;
            case CONNECT_TIMEOUT:
                log.warnFrom(peerAddress, "{} {}: closed {}: no Connect within {} ms (connect_timeout_ms)",
                    transportName, address, peer, limits.connectTimeoutMillis());
                break;
            default:
                log.warnFrom(peerAddress, "{} {}: closed {}: {}", transportName, address, peer, why.tag());
        }
    }

    /**
     * Waits up to {@code timeoutMillis} for the listener's {@code thread} to end (unless called on it); false, with a
     * warning, when it is still alive.
     */
    protected final boolean join(Thread thread, long timeoutMillis, Logger logger) {
        if (Thread.currentThread() == thread) {
            return true;
        }
        try {
            thread.join(timeoutMillis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        if (thread.isAlive()) {
            logger.warn("{} {}: thread {} did not stop within {} ms", transportName, address, thread.getName(),
                timeoutMillis);
            return false;
        }
        return true;
    }
}
