package io.nvmeof4j.target.http;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The audit trail of the management API on logger {@value #LOGGER}: one line for every change request (POST,
 * DELETE) that presented the token, whatever its result: who (the token's id, never the token), the peer, the
 * method and path, the status. Refused requests (no or a wrong token, a foreign Host) and refused connections are
 * logged too, but at most one line a second with a count of those left out, and without stack traces: a
 * client hammering the port must not fill the disk.
 */
final class AuditLog {
    static final String LOGGER = "nvmeof4j.audit";
    static final String UNAUTHENTICATED = "unauthenticated";
    private static final Logger LOG = LoggerFactory.getLogger(LOGGER);
    private static final long INTERVAL_NANOS = TimeUnit.SECONDS.toNanos(1);

    private final AtomicLong nextRefusalNanos = new AtomicLong(Long.MIN_VALUE);
    private final AtomicLong suppressed = new AtomicLong();

    /** An authenticated change request and its result. */
    void change(String tokenId, SocketAddress peer, String method, String path, int status) {
        LOG.info("token {} from {}: {} {} -> {}", tokenId, text(peer), method, path, status);
    }

    /** A request refused before it was authenticated (or for its Host), rate-limited. */
    void refused(SocketAddress peer, String method, String path, int status, String why) {
        if (admit()) {
            LOG.warn("{} from {}: {} {} -> {} ({}){}", UNAUTHENTICATED, text(peer), method, path, status, why,
                suppressedNote());
        }
    }

    /** A connection closed by a limit, rate-limited. */
    void refusedConnection(SocketAddress peer, String why) {
        if (admit()) {
            LOG.warn("connection from {} closed: {}{}", text(peer), why, suppressedNote());
        }
    }

    private boolean admit() {
        long now = System.nanoTime();
        long next = nextRefusalNanos.get();
        if ((next != Long.MIN_VALUE && now - next < 0) || !nextRefusalNanos.compareAndSet(next, now + INTERVAL_NANOS)) {
            suppressed.incrementAndGet();
            return false;
        }
        return true;
    }

    private String suppressedNote() {
        long n = suppressed.getAndSet(0);
        return n == 0 ? "" : " (" + n + " more refusals not logged in the last second)";
    }

    static String text(SocketAddress a) {
        if (a instanceof InetSocketAddress i && i.getAddress() != null) {
            return HostCheck.literal(i.getAddress()) + ":" + i.getPort();
        }
        return String.valueOf(a);
    }
}
