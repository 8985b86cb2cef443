package io.nvmeof4j.jni.rdma;

import io.nvmeof4j.jni.NativeHandle;

import java.nio.channels.Selector;
import java.util.concurrent.locks.ReentrantLock;
import java.util.concurrent.locks.ReentrantReadWriteLock;

/**
 * A completion channel ({@code struct ibv_comp_channel}) plus an eventfd to wake its waiter: an adaptive reactor
 * arms its completion queues ({@link CompletionQueue#requestNotify(boolean)}), polls them once more, then blocks in
 * {@link CompletionChannelSet#await(long)} over the channels of every device it serves until a completion event
 * arrives on one of them, another thread calls {@link #wakeup()} (work was queued for the reactor), or the timeout
 * passes. The channel's fd is non-blocking, so it may also go into a reactor's own epoll set ({@link #fd()}).
 *
 * <p>Each event a wait takes is counted on its completion queue and must be acknowledged
 * ({@link CompletionQueue#ackEvents()}, batched as the reactor likes); closing a queue acknowledges what is left.
 * Closing the channel closes the completion queues still attached to it.
 *
 * <p>Threading: a wait holds this channel's waiter lock for one waiting thread at a time (a second one waits for the
 * first); {@link #wakeup()} is safe from any thread at any time, also while or after the channel is closed (then it
 * does nothing: producers cannot avoid that race). {@link #close()} is safe from any thread: it wakes a waiting
 * thread (the set polls this channel's eventfd too), waits for it to let go of the waiter lock, then destroys the
 * queues and the channel, so no wait or wake-up ever touches freed memory.
 *
 * <h2>Joined to a reactor's selector</h2>
 * A reactor that also serves sockets blocks in its NIO {@link Selector}, not here. {@link #joinSelector} adds this
 * channel's fd to that selector's epoll set, one shot ({@code EPOLLIN | EPOLLONESHOT}), through a duplicate of the
 * selector's epoll fd that the channel keeps: a completion event then ends the reactor's select (the JDK finds no key
 * for the fd and ignores the event; the select has returned all the same). Each drain of this channel by a
 * {@link CompletionChannelSet} wait that found it readable re-arms the join, after taking its events, under the
 * waiter lock. Closing takes the fd out of the epoll set, under the waiter lock, before the channel (and so its fd) is
 * destroyed: no {@code epoll_ctl} of ours can reach a file that reuses the fd number.
 */
public final class CompletionChannel extends NativeHandle {
    private final VerbsContext context;
    private final Children queues = new Children();
    // The CQs attached here, for mapping the native CQ of an event back to its Java object (usually one or two).
    private volatile CompletionQueue[] attached = new CompletionQueue[0];
    private final int fd;
    private final long nativeChannel;
    // Held around the native wait and the mapping of its events (and by a CQ's ack/destroy): see CompletionQueue.
    private final ReentrantLock waiter = new ReentrantLock();
    // Read: a wakeup() writing the eventfd; write: release() destroying it.
    private final ReentrantReadWriteLock wakeLock = new ReentrantReadWriteLock();

    CompletionChannel(long handle, VerbsContext context) {
        super(handle, "completion channel on " + context.deviceName());
        this.context = context;
        this.fd = fd0(handle);
        this.nativeChannel = handle;
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
     * Makes a current or the next wait on this channel return (writes the eventfd). Safe from any thread; a no-op
     * once the channel is closed (or while it is being closed: the closing thread wakes the waiter itself).
     */
    public void wakeup() {
        ReentrantReadWriteLock.ReadLock lock = wakeLock.readLock();
        if (!lock.tryLock()) {
            return; // release() holds the write lock
        }
        try {
            if (!isClosed()) {
                wake0(nativeChannel); // not handle(): close() may mark it closed meanwhile, release() waits for us
            }
        } finally {
            lock.unlock();
        }
    }

    /**
     * Joins this channel's fd to {@code selector}'s epoll set (class comment), once. Returns 0, or {@code -errno}:
     * {@code -EOPNOTSUPP} when the selector is not the JDK's epoll selector (another JDK or provider), {@code -EBUSY}
     * when the channel already joined one, {@code -EBADF} when the selector is closed. Any thread.
     *
     * @throws IllegalStateException when the channel is closed
     */
    public int joinSelector(Selector selector) {
        if (!selector.isOpen()) {
            return -io.nvmeof4j.jni.Errno.EBADF;
        }
        waiter.lock(); // release() destroys under it: the channel stays valid for the join
        try {
            return joinSelector0(handle(), selector);
        } finally {
            waiter.unlock();
        }
    }

    /**
     * 0 when a channel can join {@code selector} ({@link #joinSelector}): it is the JDK's epoll selector, whose epoll
     * fd is reachable; else {@code -EOPNOTSUPP} (or {@code -EBADF}: closed). Loads the library.
     */
    public static int joinable(Selector selector) {
        Rdma.ensureLoaded();
        if (!selector.isOpen()) {
            return -io.nvmeof4j.jni.Errno.EBADF;
        }
        int rc = selectorEpoll0(selector);
        return rc < 0 ? rc : 0;
    }

    /** The join of {@link #joinSelector} for a bare fd (tests): our duplicate of the epoll fd, or -errno. */
    static int joinFd(Selector selector, int fd) {
        Rdma.ensureLoaded();
        return joinFd0(selector, fd);
    }

    /** Re-arms a bare fd joined with {@link #joinFd} (tests). 0 or -errno. */
    static int rearmFd(int epfd, int fd) {
        return rearmFd0(epfd, fd);
    }

    /** Takes a bare fd out again and closes the duplicate (tests). 0 or -errno. */
    static int leaveFd(int epfd, int fd) {
        return leaveFd0(epfd, fd);
    }

    /** The lock a waiter holds around the native wait (CompletionQueue acks and destroys under it). */
    ReentrantLock waiterLock() {
        return waiter;
    }

    /** The wake-up eventfd, for a {@link CompletionChannelSet} to poll (valid while the channel is open). */
    int wakeFd() {
        return wakeFd0(handle());
    }

    /** The pointer of the native channel, for a {@link CompletionChannelSet} (its waiter lock keeps it valid). */
    long nativeChannel() {
        return nativeChannel;
    }

    /**
     * The queue an event taken from this channel is for, its unacknowledged count raised by one; called under the
     * waiter lock. Null cannot happen: a queue is acked, destroyed and detached under that lock, and armed only once
     * attached.
     */
    CompletionQueue eventReceived(long nativeCq) {
        for (CompletionQueue cq : attached) {
            if (cq.nativeCq() == nativeCq) {
                cq.eventReceived();
                return cq;
            }
        }
        return null;
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

    /** The native pointer of the device context, for comparisons (one VerbsContext object per context pointer). */
    long nativeContext() {
        return context.nativeContext();
    }

    @Override
    protected void release(long handle) {
        RuntimeException childFailure = null;
        int rc;
        wakeLock.writeLock().lock();
        try {
            wake0(handle); // the waiter, if any, returns and lets go of the waiter lock
            waiter.lock();
            try {
                childFailure = queues.closeAllCollecting();
                rc = destroy0(handle);
            } finally {
                waiter.unlock();
            }
        } finally {
            wakeLock.writeLock().unlock();
        }
        context.detach(this);
        Children.checkDestroy("ibv_destroy_comp_channel on " + context.deviceName(), rc, childFailure);
    }

    /** ibv_create_comp_channel (fd made non-blocking) + eventfd; a shim struct pointer or -errno. */
    private static native long create0(long context);

    /** The comp channel's fd. */
    private static native int fd0(long channel);

    /** The wake-up eventfd. */
    private static native int wakeFd0(long channel);

    /** Writes 1 to the eventfd. */
    private static native int wake0(long channel);

    /** epoll_ctl(ADD, one shot) of the channel fd through a kept duplicate of the selector's epoll fd; 0 or -errno. */
    private static native int joinSelector0(long channel, Selector selector);

    /** The selector's epoll fd (not ours), or -EOPNOTSUPP. */
    private static native int selectorEpoll0(Selector selector);

    /** The join for a bare fd: the duplicate epoll fd, or -errno. */
    private static native int joinFd0(Selector selector, int fd);

    private static native int rearmFd0(int epfd, int fd);

    private static native int leaveFd0(int epfd, int fd);

    /**
     * Out of a joined selector's epoll set (and the duplicate closed), ibv_destroy_comp_channel, close(eventfd), free;
     * 0 or -errno (then nothing is freed).
     */
    private static native int destroy0(long channel);
}
