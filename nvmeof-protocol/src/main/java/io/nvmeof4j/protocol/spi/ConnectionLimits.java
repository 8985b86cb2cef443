package io.nvmeof4j.protocol.spi;

import java.util.concurrent.TimeUnit;

/**
 * Limits on the queues of one port that have not completed their setup yet: a TCP connection until its ICReq and
 * Fabrics Connect, an RDMA queue from its CM connect request until its Fabrics Connect. Such a queue holds a
 * socket or a queue pair and its memory without any host having proved anything; without limits, idle sockets
 * pile up to the file-descriptor limit and nobody can connect any more.
 * <p>A real host trips none of the defaults. The Linux host sends ICReq as soon as TCP connects and waits 10 s for
 * ICResp; it then sets up every I/O queue's connection (ICReq done, one per CPU, at most {@code qid_max}, 128 by
 * default) before it sends their Connects one after another, so one host can have qid_max + 1 queues pending at once
 * for a moment. SPDK's host gives ICResp 2 s (10 s when connecting asynchronously). Neither nvmet nor SPDK's target
 * bounds pending connections (an idle socket is held until the host or TCP keep-alive drops it).
 *
 * @param maxPending          pending queues per port; over it, the oldest pending one is closed to make room (a real
 *                            host finishes in milliseconds, so the oldest pending queue is the least likely to be one)
 * @param maxPendingPerHost   pending queues per peer address; over it, the new one is refused (only that address
 *                            is affected)
 * @param connectTimeoutNanos how long a queue may stay pending before it is closed
 */
public record ConnectionLimits(int maxPending, int maxPendingPerHost, long connectTimeoutNanos) {
    public static final int MAX_PENDING_DEFAULT = 1024;
    /** Twice the default qid_max (128) plus the admin queue: a host setting up all its queues, and a reconnect. */
    public static final int MAX_PENDING_PER_HOST_DEFAULT = 256;
    public static final long CONNECT_TIMEOUT_MS_DEFAULT = 30_000;

    public static final int MAX_PENDING_LIMIT = 1 << 20;
    public static final long CONNECT_TIMEOUT_MS_MIN = 100;
    public static final long CONNECT_TIMEOUT_MS_MAX = 3_600_000;

    public ConnectionLimits {
        if (maxPending < 1 || maxPending > MAX_PENDING_LIMIT) {
            throw new IllegalArgumentException("max pending connections " + maxPending + " outside 1.."
                + MAX_PENDING_LIMIT);
        }
        if (maxPendingPerHost < 1 || maxPendingPerHost > maxPending) {
            throw new IllegalArgumentException("max pending connections per host " + maxPendingPerHost
                + " outside 1.." + maxPending + " (the port's max pending connections)");
        }
        long ms = TimeUnit.NANOSECONDS.toMillis(connectTimeoutNanos);
        if (ms < CONNECT_TIMEOUT_MS_MIN || ms > CONNECT_TIMEOUT_MS_MAX) {
            throw new IllegalArgumentException("connect timeout " + ms + " ms outside " + CONNECT_TIMEOUT_MS_MIN
                + ".." + CONNECT_TIMEOUT_MS_MAX);
        }
    }

    public static ConnectionLimits defaults() {
        return new ConnectionLimits(MAX_PENDING_DEFAULT, MAX_PENDING_PER_HOST_DEFAULT,
            TimeUnit.MILLISECONDS.toNanos(CONNECT_TIMEOUT_MS_DEFAULT));
    }

    public long connectTimeoutMillis() {
        return TimeUnit.NANOSECONDS.toMillis(connectTimeoutNanos);
    }
}
