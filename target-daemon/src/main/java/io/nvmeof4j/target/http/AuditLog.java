package io.nvmeof4j.target.http;

import io.nvmeof4j.protocol.log.RateLimitedLog;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.net.InetSocketAddress;
import java.net.SocketAddress;

/**
 * The audit trail of the management API on logger {@value #LOGGER}: one line for every change request (POST,
 * DELETE) that presented the token, whatever its result: who (the token's id, never the token), the peer, the
 * method and path, the status. Refused requests (no or a wrong token, a foreign Host) and refused connections are
 * logged too, through the same {@link RateLimitedLog} as the data ports: at most one line a second per peer
 * address with a count of those left out, and without stack traces: a client hammering the port must not fill
 * the disk.
 */
final class AuditLog {
    static final String LOGGER = "nvmeof4j.audit";
    static final String UNAUTHENTICATED = "unauthenticated";
    private static final Logger LOG = LoggerFactory.getLogger(LOGGER);
    private final RateLimitedLog refusals = new RateLimitedLog(LOG);

    /** An authenticated change request and its result. */
    void change(String tokenId, SocketAddress peer, String method, String path, int status) {
        LOG.info("token {} from {}: {} {} -> {}", tokenId, text(peer), method, path, status);
    }

    /** A request refused before it was authenticated (or for its Host), rate-limited per peer address. */
    void refused(SocketAddress peer, String method, String path, int status, String why) {
        refusals.warnFrom(keyOf(peer), "{} from {}: {} {} -> {} ({})", UNAUTHENTICATED, text(peer), method, path,
            status, why);
    }

    /** A connection closed by a limit, rate-limited per peer address. */
    void refusedConnection(SocketAddress peer, String why) {
        refusals.warnFrom(keyOf(peer), "connection from {} closed: {}", text(peer), why);
    }

    private static Object keyOf(SocketAddress peer) {
        return peer instanceof InetSocketAddress i && i.getAddress() != null ? i.getAddress() : "unknown peer";
    }

    static String text(SocketAddress a) {
        if (a instanceof InetSocketAddress i && i.getAddress() != null) {
            return HostCheck.literal(i.getAddress()) + ":" + i.getPort();
        }
        return String.valueOf(a);
    }
}
