package io.nvmeof4j.protocol.spi;

import java.net.InetAddress;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.TimeUnit;

/**
 * The queues of one port that have not completed their setup (see {@link ConnectionLimits}), oldest first, with a
 * count per peer address. A transport admits each new queue ({@link #admit}), attaches how to close it
 * ({@link Entry#attach}), and releases it when its Connect succeeds or it closes ({@link Entry#release}); some thread
 * of the transport calls {@link #expire} now and then.
 * <p>Thread-safe (one monitor). Only connection setup and teardown use it, never a command.
 */
public final class PendingConnections {
    /** Why a pending queue was refused or closed: the {@code reason} of the refusal meter. */
    public enum Refusal {
        /** The port had {@link ConnectionLimits#maxPending} pending queues: the oldest was closed. */
        PORT_LIMIT("port_limit"),
        /** The peer address had {@link ConnectionLimits#maxPendingPerHost} pending queues: the new one was refused. */
        HOST_LIMIT("host_limit"),
        /** No Connect within {@link ConnectionLimits#connectTimeoutNanos}. */
        CONNECT_TIMEOUT("connect_timeout"),
        /**
         * The Connect was refused (Controller Busy): the queue's buffers did not fit the queue buffer budget
         * ({@link TransportQueue#install}).
         */
        QUEUE_BUFFER_BUDGET("queue_buffer_budget"),
        /** The Connect was refused (Controller Busy): allocating the queue's buffers failed (no direct memory). */
        DIRECT_MEMORY("direct_memory"),
        /**
         * The Connect was refused (Connect Invalid Parameters): its QID is not the one the NVMe-oF/RDMA CM request
         * opened the queue pair for.
         */
        QUEUE_ID_MISMATCH("queue_id_mismatch");

        private final String tag;

        Refusal(String tag) {
            this.tag = tag;
        }

        /** The meter tag value. */
        public String tag() {
            return tag;
        }
    }

    /** Closes a pending queue that was evicted or timed out; runs on the thread that found out, never under a lock. */
    @FunctionalInterface
    public interface Closer {
        void close(Refusal why);
    }

    /** One pending queue. */
    public final class Entry {
        private final InetAddress peer;
        private final long deadlineNanos;
        private Entry prev;
        private Entry next;
        private Closer closer;
        /** Released (Connect done or closed) or refused: no longer counted. */
        private boolean done;
        private Refusal refusal;

        private Entry(InetAddress peer, long deadlineNanos) {
            this.peer = peer;
            this.deadlineNanos = deadlineNanos;
        }

        public InetAddress peer() {
            return peer;
        }

        /**
         * Says how to close this queue if it is evicted or times out. False when that already happened (before the
         * transport had anything to close): the caller closes it itself, for {@link #refusal()}.
         */
        public boolean attach(Closer closer) {
            synchronized (PendingConnections.this) {
                if (refusal != null) {
                    return false;
                }
                this.closer = closer;
                return true;
            }
        }

        /** The queue completed Connect or closed: it no longer counts. Idempotent. */
        public void release() {
            synchronized (PendingConnections.this) {
                if (!done) {
                    unlink(this);
                }
            }
        }

        /** Why it was closed, or null. */
        public Refusal refusal() {
            synchronized (PendingConnections.this) {
                return refusal;
            }
        }
    }

    /**
     * How long a thread that only sweeps a port waits while none of its queues is pending (a new connection wakes it
     * earlier): bounded, yet rare. A 100-200 ms sweep grain cost a wake-up 5-10 times a second on the JVM's
     * housekeeping CPU, beside a busy host poller in the benchmarks (issue 17).
     */
    public static final long IDLE_WAIT_NANOS = TimeUnit.SECONDS.toNanos(10);

    private final ConnectionLimits limits;
    private final Map<InetAddress, int[]> perHost = new HashMap<>();
    private Entry oldest;
    private Entry newest;
    private int count;

    public PendingConnections(ConnectionLimits limits) {
        this.limits = Objects.requireNonNull(limits, "limits");
    }

    public ConnectionLimits limits() {
        return limits;
    }

    /** Pending queues now. */
    public synchronized int count() {
        return count;
    }

    /** Pending queues of {@code peer} now. */
    public synchronized int count(InetAddress peer) {
        int[] n = perHost.get(peer);
        return n == null ? 0 : n[0];
    }

    /**
     * A new queue from {@code peer}: its entry, or null when the peer is at its limit (refuse the queue:
     * {@link Refusal#HOST_LIMIT}). At the port's limit the oldest pending queue is closed first (its
     * {@link Closer} runs with {@link Refusal#PORT_LIMIT} before this returns).
     */
    public Entry admit(InetAddress peer, long nowNanos) {
        Objects.requireNonNull(peer, "peer");
        Entry evicted = null;
        Closer evictedCloser;
        Entry entry;
        synchronized (this) {
            int[] n = perHost.get(peer);
            if (n != null && n[0] >= limits.maxPendingPerHost()) {
                return null;
            }
            if (count >= limits.maxPending()) {
                evicted = oldest;
                refuse(evicted, Refusal.PORT_LIMIT);
                n = perHost.get(peer); // the evicted entry may have been the peer's last
            }
            evictedCloser = evicted == null ? null : evicted.closer;
            entry = new Entry(peer, nowNanos + limits.connectTimeoutNanos());
            if (n == null) {
                n = new int[1];
                perHost.put(peer, n);
            }
            n[0]++;
            count++;
            entry.prev = newest;
            if (newest == null) {
                oldest = entry;
            } else {
                newest.next = entry;
            }
            newest = entry;
        }
        if (evictedCloser != null) {
            evictedCloser.close(Refusal.PORT_LIMIT);
        }
        return entry;
    }

    /**
     * How long the thread that calls {@link #expire} may wait before the next call is due: until the oldest pending
     * queue's deadline (0 when it has passed), or {@link #IDLE_WAIT_NANOS} (at most) while none is pending.
     */
    public synchronized long nanosToNextExpiry(long nowNanos) {
        if (oldest == null) {
            return IDLE_WAIT_NANOS;
        }
        return Math.min(IDLE_WAIT_NANOS, Math.max(0, oldest.deadlineNanos - nowNanos));
    }

    /** Closes every queue pending past its deadline; returns how many. */
    public int expire(long nowNanos) {
        List<Closer> closers = null;
        int expired = 0;
        synchronized (this) {
            // Deadlines grow with admission order (one timeout per port), so the expired ones are at the front.
            while (oldest != null && nowNanos - oldest.deadlineNanos >= 0) {
                Entry e = oldest;
                refuse(e, Refusal.CONNECT_TIMEOUT);
                expired++;
                if (e.closer != null) {
                    if (closers == null) {
                        closers = new ArrayList<>();
                    }
                    closers.add(e.closer);
                }
            }
        }
        if (closers != null) {
            for (Closer c : closers) {
                c.close(Refusal.CONNECT_TIMEOUT);
            }
        }
        return expired;
    }

    private void refuse(Entry e, Refusal why) {
        e.refusal = why;
        unlink(e);
    }

    private void unlink(Entry e) {
        e.done = true;
        if (e.prev == null) {
            oldest = e.next;
        } else {
            e.prev.next = e.next;
        }
        if (e.next == null) {
            newest = e.prev;
        } else {
            e.next.prev = e.prev;
        }
        e.prev = null;
        e.next = null;
        count--;
        int[] n = perHost.get(e.peer);
        if (--n[0] == 0) {
            perHost.remove(e.peer);
        }
    }
}
