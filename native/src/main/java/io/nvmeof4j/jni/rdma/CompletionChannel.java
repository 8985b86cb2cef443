package io.nvmeof4j.jni.rdma;

import io.nvmeof4j.jni.NativeHandle;
import io.nvmeof4j.jni.NativeIoException;

/**
 * A completion channel ({@code struct ibv_comp_channel}) plus an eventfd to wake its waiter: an adaptive reactor
 * arms its completion queues ({@link CompletionQueue#requestNotify(boolean)}), polls them once more, then blocks in
 * {@link #await(long)} until a completion event arrives, another thread calls {@link #wakeup()} (work was queued
 * for the reactor), or the timeout passes. The channel's fd is non-blocking, so it may also go into a reactor's own
 * epoll set ({@link #fd()}).
 *
 * <p>Each event returned by {@link #await(long)} is counted on its completion queue and must be acknowledged
 * ({@link CompletionQueue#ackEvents()}, batched as the reactor likes); closing a queue acknowledges what is left.
 * Closing the channel closes the completion queues still attached to it.
 */
public final class CompletionChannel extends NativeHandle {
    private final VerbsContext context;
    private final Children queues = new Children();
    // The CQs attached here, for mapping the native CQ of an event back to its Java object (usually one or two).
    private volatile CompletionQueue[] attached = new CompletionQueue[0];
    private final int fd;

    CompletionChannel(long handle, VerbsContext context) {
        super(handle, "completion channel on " + context.deviceName());
        this.context = context;
        this.fd = fd0(handle);
    }

    static long create(long context) {
        return create0(context);
    }

    /** The device context. */
    public VerbsContext context() {
        return context;
    }

    /** The channel's file descriptor (non-blocking): readable when a completion event is pending. */
    public int fd() {
        handle();
        return fd;
    }

    /**
     * Waits up to {@code timeoutNanos} (0 = just look, negative = wait without limit is refused) for a completion
     * event ({@code poll} on the channel fd and the wake-up eventfd, then {@code ibv_get_cq_event}).
     *
     * @return the completion queue the event is for (its unacknowledged count is raised by one; re-arm it with
     *         {@link CompletionQueue#requestNotify(boolean)} before polling it), or {@code null} on timeout or
     *         wake-up
     */
    public CompletionQueue await(long timeoutNanos) throws NativeIoException {
        if (timeoutNanos < 0) {
            throw new IllegalArgumentException("a wait needs a timeout: " + timeoutNanos);
        }
        long rc = wait0(handle(), timeoutNanos);
        if (rc == 0) {
            return null;
        }
        NativeIoException.check("ibv_get_cq_event", rc);
        for (CompletionQueue cq : attached) {
            if (cq.nativeCq() == rc) {
                cq.eventReceived();
                return cq;
            }
        }
        // An event for a queue closed in the meantime (cannot happen with one owning thread): ack it here.
        CompletionQueue.ackRaw(rc, 1);
        return null;
    }

    /**
     * Makes a current or the next {@link #await(long)} return (writes the eventfd). Callable from any thread while
     * the channel is open.
     */
    public void wakeup() {
        wake0(handle());
    }

    void attach(CompletionQueue cq) {
        synchronized (this) {
            CompletionQueue[] next = java.util.Arrays.copyOf(attached, attached.length + 1);
            next[next.length - 1] = cq;
            attached = next;
        }
        queues.add(cq);
    }

    void detach(CompletionQueue cq) {
        synchronized (this) {
            CompletionQueue[] current = attached;
            int n = 0;
            CompletionQueue[] next = new CompletionQueue[Math.max(0, current.length - 1)];
            for (CompletionQueue q : current) {
                if (q != cq && n < next.length) {
                    next[n++] = q;
                }
            }
            attached = n == next.length ? next : java.util.Arrays.copyOf(next, n);
        }
        queues.remove(cq);
    }

    long handleForChild() {
        return handle();
    }

    @Override
    protected void release(long handle) {
        queues.closeAll();
        destroy0(handle);
        context.detach(this);
    }

    /** ibv_create_comp_channel (fd made non-blocking) + eventfd; a shim struct pointer or -errno. */
    private static native long create0(long context);

    /** The comp channel's fd. */
    private static native int fd0(long channel);

    /** poll(channel fd, eventfd, timeout) then ibv_get_cq_event; the CQ pointer, 0 on timeout/wake-up, or -errno. */
    private static native long wait0(long channel, long timeoutNanos);

    /** Writes 1 to the eventfd. */
    private static native int wake0(long channel);

    /** ibv_destroy_comp_channel, close(eventfd), free; 0 or -errno. */
    private static native int destroy0(long channel);
}
