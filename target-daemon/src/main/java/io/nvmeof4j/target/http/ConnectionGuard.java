package io.nvmeof4j.target.http;

import org.eclipse.jetty.io.Connection;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Connection limits and the request deadline of the HTTP listeners (a bean of each connector, told of every
 * connection it opens and closes).
 * <ul>
 *   <li>At most {@code maxConnections} open connections, at most {@code maxPerPeer} from one IP address: one that
 *       opens more has the extra ones closed at once, before anything is read from them.</li>
 *   <li>A connection must deliver a whole request (head and body) within {@code requestTimeout} of opening or of
 *       its previous response. Jetty's idle timeout alone cannot do this: a client that sends one byte every few
 *       seconds is never idle. {@link #sweep()} closes the laggards; a request being served is never cut.</li>
 * </ul>
 */
final class ConnectionGuard implements Connection.Listener {
    private final int maxConnections;
    private final int maxPerPeer;
    private final long timeoutNanos;
    private final AuditLog audit;
    private final Map<Connection, State> open = new ConcurrentHashMap<>();
    private final Map<InetAddress, Integer> perPeer = new ConcurrentHashMap<>();
    private final AtomicInteger total = new AtomicInteger();

    private static final class State {
        final InetAddress peer;
        volatile long since;
        /** Bytes the connection had received when {@link #since} was set: more means a request has begun. */
        volatile long bytesAtSince;
        volatile boolean busy;

        State(InetAddress peer, long since) {
            this.peer = peer;
            this.since = since;
        }
    }

    ConnectionGuard(int maxConnections, int maxPerPeer, Duration requestTimeout, AuditLog audit) {
        this.maxConnections = maxConnections;
        this.maxPerPeer = maxPerPeer;
        this.timeoutNanos = requestTimeout.toNanos();
        this.audit = audit;
    }

    @Override
    public void onOpened(Connection connection) {
        InetAddress peer = peer(connection.getEndPoint().getRemoteSocketAddress());
        State state = new State(peer, System.nanoTime());
        open.put(connection, state);
        int all = total.incrementAndGet();
        int fromPeer = peer == null ? 0 : perPeer.merge(peer, 1, Integer::sum);
        if (all > maxConnections || fromPeer > maxPerPeer) {
            audit.refusedConnection(connection.getEndPoint().getRemoteSocketAddress(), all > maxConnections
                ? "over http_max_connections (" + maxConnections + ")"
                : "over http_max_connections_per_peer (" + maxPerPeer + " from " + peer.getHostAddress() + ")");
            connection.getEndPoint().close();
        }
    }

    @Override
    public void onClosed(Connection connection) {
        State state = open.remove(connection);
        if (state != null) {
            total.decrementAndGet();
            if (state.peer != null) {
                perPeer.computeIfPresent(state.peer, (k, n) -> n <= 1 ? null : n - 1);
            }
        }
    }

    /** The request on {@code connection} has arrived whole and is being served: no deadline until it is answered. */
    void serving(Connection connection) {
        State s = open.get(connection);
        if (s != null) {
            s.busy = true;
        }
    }

    /** The response on {@code connection} is done: the next request has {@code requestTimeout} from now. */
    void answered(Connection connection) {
        State s = open.get(connection);
        if (s != null) {
            s.bytesAtSince = connection.getBytesIn();
            s.since = System.nanoTime();
            s.busy = false;
        }
    }

    /** Closes every connection that has been sending one request for longer than the deadline. */
    void sweep() {
        long now = System.nanoTime();
        for (Map.Entry<Connection, State> e : open.entrySet()) {
            State s = e.getValue();
            if (!s.busy && now - s.since > timeoutNanos) {
                Connection c = e.getKey();
                // An idle keep-alive connection (Prometheus between scrapes) is closed quietly; one that has
                // begun a request and not finished it is a slow or stalled client, worth a (rate-limited) line.
                if (c.getBytesIn() > s.bytesAtSince) {
                    audit.refusedConnection(c.getEndPoint().getRemoteSocketAddress(), "no whole request within "
                        + (timeoutNanos / 1_000_000) + " ms (http_request_timeout_ms)");
                }
                c.getEndPoint().close();
            }
        }
    }

    /** Open connections (all listeners). */
    int openConnections() {
        return total.get();
    }

    private static InetAddress peer(SocketAddress a) {
        return a instanceof InetSocketAddress i ? i.getAddress() : null;
    }
}
