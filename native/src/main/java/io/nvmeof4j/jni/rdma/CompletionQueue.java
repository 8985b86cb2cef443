package io.nvmeof4j.jni.rdma;

import io.nvmeof4j.jni.NativeHandle;
import io.nvmeof4j.jni.NativeIoException;

/**
 * A completion queue ({@code struct ibv_cq}). The data path polls it in batches into a preallocated
 * {@link WorkCompletions} array ({@link #poll(WorkCompletions)}: one JNI crossing, one {@code ibv_poll_cq}, no Java
 * allocation); a reactor that goes idle arms it with {@link #requestNotify(boolean)} and waits on its
 * {@link CompletionChannel}.
 *
 * <p>Threading: {@link #poll}, {@link #requestNotify} are for its reactor thread. {@link #ackEvents()} and
 * {@link #close()} are safe from any thread: both take the channel's waiter lock, and close first wakes a thread
 * waiting on the channel, acknowledges the events still unacknowledged (else {@code ibv_destroy_cq} would wait for
 * them forever) and destroys the queue under that lock, so a concurrent {@link CompletionChannelSet#await(long)}
 * never returns a destroyed queue. Closing it closes the queue pairs still using it first.
 */
public final class CompletionQueue extends NativeHandle {
    private final VerbsContext context;
    private final CompletionChannel channel;
    private final long cq;
    private final int capacity;
    private final Children queuePairs = new Children();
    // Guarded by the channel's waiter lock (a channel-less queue never gets events).
    private int unackedEvents;

    CompletionQueue(long handle, VerbsContext context, CompletionChannel channel) {
        super(handle, "completion queue on " + context.deviceName());
        this.context = context;
        this.channel = channel;
        this.cq = handle;
        this.capacity = cqe0(handle);
    }

    static long create(long context, int minEntries, long channel, int vector) {
        return create0(context, minEntries, channel, vector);
    }

    long nativeCq() {
        return cq;
    }

    long handleForChild() {
        return handle();
    }

    /** Called by a wait on the channel (CompletionChannel.eventReceived) under its waiter lock. */
    void eventReceived() {
        unackedEvents++;
    }

    void addQueuePair(QueuePair qp) {
        queuePairs.add(qp);
    }

    void removeQueuePair(QueuePair qp) {
        queuePairs.remove(qp);
    }

    /** The device context. */
    public VerbsContext context() {
        return context;
    }

    /** The completion channel it reports to, or null. */
    public CompletionChannel channel() {
        return channel;
    }

    /** The number of entries the device gave it (at least the size asked for). */
    public int capacity() {
        return capacity;
    }

    /**
     * Polls up to {@code completions.capacity()} completions into {@code completions} ({@code ibv_poll_cq}).
     *
     * @return how many were polled (also {@link WorkCompletions#count()}), or -errno when polling failed
     */
    public int poll(WorkCompletions completions) {
        int n = poll0(handle(), completions.address(), completions.capacity());
        completions.count(Math.max(n, 0));
        return n;
    }

    /**
     * Arms the queue: the next completion (or, with {@code solicitedOnly}, the next solicited one) raises an event
     * on the channel ({@code ibv_req_notify_cq}). Poll once more after arming: completions that arrived before are
     * not announced.
     */
    public void requestNotify(boolean solicitedOnly) throws NativeIoException {
        NativeIoException.check("ibv_req_notify_cq", notify0(handle(), solicitedOnly));
    }

    /** Events {@link CompletionChannelSet#await(long)} took for this queue and not yet acknowledged. */
    public int unacknowledgedEvents() {
        if (channel == null) {
            return 0;
        }
        channel.waiterLock().lock();
        try {
            return unackedEvents;
        } finally {
            channel.waiterLock().unlock();
        }
    }

    /**
     * Acknowledges the events received so far ({@code ibv_ack_cq_events}, which takes a lock: batch it). Does
     * nothing once the queue is closed: its close acknowledged what was left.
     */
    public void ackEvents() {
        if (channel == null) {
            return;
        }
        channel.waiterLock().lock();
        try {
            int n = unackedEvents;
            if (n > 0 && !isClosed()) {
                ack0(cq, n);
                unackedEvents = 0;
            }
        } finally {
            channel.waiterLock().unlock();
        }
    }

    @Override
    protected void release(long handle) {
        RuntimeException childFailure = queuePairs.closeAllCollecting(); // ibv_destroy_cq: EBUSY while QPs use it
        int rc;
        if (channel != null) {
            channel.wakeup(); // a thread waiting on the channel lets go of the waiter lock
            channel.waiterLock().lock();
            try {
                if (unackedEvents > 0) {
                    // ibv_destroy_cq waits for every event to be acknowledged: never let it hang.
                    ack0(handle, unackedEvents);
                    unackedEvents = 0;
                }
                rc = destroy0(handle);
                channel.detach(this); // under the lock: await never maps an event to a destroyed queue
            } finally {
                channel.waiterLock().unlock();
            }
        } else {
            rc = destroy0(handle);
            context.detach(this);
        }
        Children.checkDestroy("ibv_destroy_cq on " + context.deviceName(), rc, childFailure);
    }

    /** ibv_create_cq(context, minEntries, NULL, channel or NULL, vector); pointer or -errno. */
    private static native long create0(long context, int minEntries, long channel, int vector);

    /** The cq's cqe (actual size). */
    private static native int cqe0(long cq);

    /** ibv_poll_cq(cq, max, (struct ibv_wc *) address); count or -errno. */
    private static native int poll0(long cq, long address, int max);

    /** ibv_req_notify_cq; 0 or -errno. */
    private static native int notify0(long cq, boolean solicitedOnly);

    /** ibv_ack_cq_events. */
    private static native void ack0(long cq, int events);

    /** ibv_destroy_cq; 0 or -errno. */
    private static native int destroy0(long cq);
}
