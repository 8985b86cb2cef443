package io.nvmeof4j.rdma;

import io.nvmeof4j.protocol.spi.PendingConnections;

import java.net.InetAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

/**
 * The accepted queues of one RDMA port that have not completed their Fabrics Connect, on top of the port's
 * {@link PendingConnections}. The RDMA transport learns of a Connect only through the queue's id
 * ({@link RdmaControllerQueue#queueId()}), so {@link #sweep} looks rather than being told. CM event thread only.
 */
final class PendingQueues {
    private record Tracked(RdmaControllerQueue queue, PendingConnections.Entry entry, BooleanSupplier gone) {
    }

    /** How long the CM thread waits for an event while a queue awaits its Connect: the connect timeout's grain. */
    static final long SWEEP_WAIT_NANOS = TimeUnit.MILLISECONDS.toNanos(200);

    private final PendingConnections pending;
    private final List<Tracked> tracked = new ArrayList<>();

    PendingQueues(PendingConnections pending) {
        this.pending = pending;
    }

    /** See {@link PendingConnections#admit}: null when {@code peer} is at its limit (reject the request). */
    PendingConnections.Entry admit(InetAddress peer, long nowNanos) {
        return pending.admit(peer, nowNanos);
    }

    /**
     * An accepted queue: {@code closer} disconnects it if it is evicted or times out; {@code gone} says when it has
     * closed by itself.
     */
    void track(RdmaControllerQueue queue, PendingConnections.Entry entry, BooleanSupplier gone,
               PendingConnections.Closer closer) {
        if (!entry.attach(closer)) {
            closer.close(entry.refusal());
            return;
        }
        tracked.add(new Tracked(queue, entry, gone));
    }

    /** Forgets the queues that connected or went away, then disconnects those past the connect timeout. */
    void sweep(long nowNanos) {
        for (int i = tracked.size() - 1; i >= 0; i--) {
            Tracked t = tracked.get(i);
            if (t.queue().queueId() >= 0 || t.gone().getAsBoolean() || t.entry().refusal() != null) {
                t.entry().release();
                tracked.remove(i);
            }
        }
        pending.expire(nowNanos);
    }

    /**
     * How long the CM thread may wait for its next event before {@link #sweep} is due: with none pending, the port's
     * idle wait (a connect request, or the transport's shutdown, wakes it earlier).
     */
    long eventWaitNanos() {
        return tracked.isEmpty() && pending.count() == 0 ? PendingConnections.IDLE_WAIT_NANOS : SWEEP_WAIT_NANOS;
    }

    /** Pending queues of the port now. */
    int count() {
        return pending.count();
    }
}
