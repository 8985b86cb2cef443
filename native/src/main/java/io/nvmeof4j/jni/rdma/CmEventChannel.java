package io.nvmeof4j.jni.rdma;

import io.nvmeof4j.jni.Errno;
import io.nvmeof4j.jni.NativeHandle;
import io.nvmeof4j.jni.NativeIoException;

import java.util.ArrayDeque;
import java.util.Iterator;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import java.util.function.Predicate;

/**
 * An RDMA CM event channel ({@code struct rdma_event_channel}) and the CM ids created on it. Its fd is always
 * non-blocking: {@link #nextEvent(long)} waits with {@code poll} on it and on a wake-up eventfd, until the timeout
 * passes, so no CM wait ever hangs; {@link #pollEvent()} just looks. A reactor may put {@link #fd()} in its own
 * epoll set and call {@link #pollEvent()} when it is readable.
 *
 * <p>Each event is copied out (type, status, ids, connection parameters, private data), its id looked up, and then
 * acknowledged ({@code rdma_ack_cm_event}) before it is returned. {@link #awaitEvent} waits for one id's event and
 * parks the events of other ids it meets at once; {@link #nextEvent(long)} returns parked events first, and
 * {@link #awaitEvent} takes a parked event of its id (or its failure) first.
 *
 * <p>Threading: {@link #nextEvent}, {@link #pollEvent} and {@link #awaitEvent} may be called from several threads:
 * one of them reads the channel at a time (the others wait for it, or for an event it parks for them), and each
 * event is read and decoded once. Waiting for different ids' events on several threads ({@link #awaitEvent}) works;
 * mixing {@link #nextEvent} (which returns any id's event) with {@link #awaitEvent} on other threads hands the
 * awaited events to whoever reads them. {@link #wakeup()} is safe from any thread, also while or after the channel
 * is closed (a no-op then); it ends the current (or the next) wait of one reader. {@link #close()} is safe from any
 * thread: it wakes the reader, waits for it to finish, then closes the ids and destroys the channel.
 *
 * <p>Closing the channel closes the CM ids still open on it (and their queue pairs).
 */
public final class CmEventChannel extends NativeHandle {
    // Marks "woken" inside this class (never returned).
    private static final CmEvent WOKEN = new CmEvent(null, 0, null, null, null, 0);

    private final Map<Long, CmId> ids = new ConcurrentHashMap<>();
    private final Children children = new Children();
    private final CmEventRecord record = new CmEventRecord(); // used by the reader only
    private final long recordAddress = record.address();
    private final int fd;
    private final long nativeChannel;
    // Guards deferred and reader; changed is signalled when an event is parked or the reader role is free.
    private final ReentrantLock state = new ReentrantLock();
    private final Condition changed = state.newCondition();
    private final ArrayDeque<CmEvent> deferred = new ArrayDeque<>();
    private Thread reader; // the thread reading the channel (native wait + read + decode + ack), or the closer
    // Read: a wakeup() writing the eventfd; write: release() destroying it.
    private final ReentrantReadWriteLock wakeLock = new ReentrantReadWriteLock();

    private CmEventChannel(long handle) {
        super(handle, "RDMA CM event channel");
        this.fd = fd0(handle);
        this.nativeChannel = handle;
    }

    /** Creates an event channel ({@code rdma_create_event_channel}, fd made non-blocking) with its wake-up eventfd. */
    public static CmEventChannel create() throws NativeIoException {
        Rdma.ensureLoaded();
        return new CmEventChannel(NativeIoException.check("rdma_create_event_channel", create0()));
    }

    /** The channel fd (non-blocking): readable when a CM event is pending. */
    public int fd() {
        handle();
        return fd;
    }

    /**
     * Creates a CM id on this channel for the TCP port space ({@code rdma_create_id(RDMA_PS_TCP)}, reliable
     * connected), carrying {@code context} for the caller (a connection index, for example).
     */
    public CmId createId(long context) throws NativeIoException {
        long id = NativeIoException.check("rdma_create_id", CmId.create(handle()));
        return register(new CmId(id, this, context, null));
    }

    /** The next event without waiting, or null. */
    public CmEvent pollEvent() throws NativeIoException {
        return nextEvent(0);
    }

    /**
     * The next event (a parked one first), waiting at most {@code timeoutNanos} (0 = do not wait); null on timeout
     * or {@link #wakeup()}. For CONNECT_REQUEST the event carries a new {@link CmId} (registered on this channel,
     * carrying the listener's context) that the caller must accept, or reject (which closes it), or close.
     */
    public CmEvent nextEvent(long timeoutNanos) throws NativeIoException {
        if (timeoutNanos < 0) {
            throw new IllegalArgumentException("a wait needs a timeout: " + timeoutNanos);
        }
        CmEvent e = take(event -> true, timeoutNanos);
        return e == WOKEN ? null : e;
    }

    /**
     * Waits until {@code id} gets an event of type {@code expected} (for a listener: a CONNECT_REQUEST whose
     * listen id is {@code id}) and returns it; an event of {@code id} parked earlier counts (it is taken first).
     * Events for other ids are parked at once for {@link #nextEvent(long)} or another thread's awaitEvent.
     *
     * @param step what is waited for, for the exception ({@code "resolve address"}, {@code "connect"}, ...)
     * @throws RdmaCmException when an error event (REJECTED, UNREACHABLE, ADDR_ERROR, ...), another unexpected
     *                         event (DISCONNECTED while connecting) arrives for {@code id}, the timeout passes
     *                         ({@link RdmaCmException#isTimeout()}), or {@link #wakeup()} cancels the wait
     *                         (errno ECANCELED). An unexpected CONNECT_REQUEST it throws on is rejected and its id
     *                         closed.
     */
    public CmEvent awaitEvent(CmId id, CmEventType expected, long timeoutNanos, String step)
            throws NativeIoException, RdmaCmException {
        Predicate<CmEvent> mine = event -> event.id() == id
            || (event.type() == CmEventType.CONNECT_REQUEST && event.listenId() == id);
        CmEvent event = take(mine, Math.max(0, timeoutNanos));
        if (event == null) {
            throw new RdmaCmException(id.peer(), step, null, 0, Errno.ETIMEDOUT, null,
                "no " + expected + " within " + timeoutNanos / 1_000_000 + " ms");
        }
        if (event == WOKEN) {
            throw new RdmaCmException(id.peer(), step, null, 0, Errno.ECANCELED, null,
                "woken (wakeup()) while waiting for " + expected);
        }
        if (event.type() == expected) {
            return event;
        }
        RdmaCmException failure = failure(id, step, event);
        if (event.type() == CmEventType.CONNECT_REQUEST) {
            // Nobody else will see this request: reject it and free its id (reject closes it).
            try {
                event.id().reject(null);
            } catch (NativeIoException | RuntimeException e) {
                failure.addSuppressed(e);
            }
        }
        throw failure;
    }

    /**
     * Makes a current or the next wait return early (writes the eventfd): nextEvent returns null, awaitEvent throws
     * with ECANCELED. Safe from any thread; a no-op once the channel is closed.
     */
    public void wakeup() {
        ReentrantReadWriteLock.ReadLock lock = wakeLock.readLock();
        if (!lock.tryLock()) {
            return; // release() holds the write lock and wakes the reader itself
        }
        try {
            if (!isClosed()) {
                wake0(nativeChannel);
            }
        } finally {
            lock.unlock();
        }
    }

    /**
     * The first parked event that {@code wanted} accepts, else one read from the channel (parking the others),
     * waiting at most {@code timeoutNanos}; null on timeout, {@link #WOKEN} when woken or interrupted.
     */
    private CmEvent take(Predicate<CmEvent> wanted, long timeoutNanos) throws NativeIoException {
        long deadline = System.nanoTime() + timeoutNanos;
        boolean first = true;
        while (true) {
            state.lock();
            try {
                while (true) {
                    handle(); // closed: IllegalStateException
                    CmEvent parked = removeFirst(wanted);
                    if (parked != null) {
                        return parked;
                    }
                    long left = deadline - System.nanoTime();
                    if (reader == null && (left > 0 || first)) {
                        reader = Thread.currentThread();
                        break;
                    }
                    if (left <= 0) {
                        return null;
                    }
                    try {
                        changed.awaitNanos(left);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                        return WOKEN;
                    }
                }
            } finally {
                state.unlock();
            }
            first = false;
            CmEvent got = null;
            boolean woken = false;
            try {
                long rc = getEvent0(handle(), Math.max(0, deadline - System.nanoTime()), recordAddress);
                if (rc == -Errno.ECANCELED) {
                    woken = true;
                } else if (rc != 0) {
                    NativeIoException.check("rdma_get_cm_event", rc);
                    try {
                        got = decode();
                    } finally {
                        ack0(rc); // after the lookup: rdma_destroy_id of its id waits for this ack
                    }
                }
            } finally {
                state.lock();
                try {
                    reader = null;
                    if (got != null && !wanted.test(got)) {
                        deferred.addLast(got);
                        got = null;
                    }
                    changed.signalAll();
                } finally {
                    state.unlock();
                }
            }
            if (got != null) {
                return got;
            }
            if (woken) {
                return WOKEN;
            }
            // timeout, an event for someone else, or one for an id closed meanwhile: look again until the deadline
        }
    }

    private CmEvent removeFirst(Predicate<CmEvent> wanted) {
        for (Iterator<CmEvent> it = deferred.iterator(); it.hasNext(); ) {
            CmEvent e = it.next();
            if (wanted.test(e)) {
                it.remove();
                return e;
            }
        }
        return null;
    }

    /** Events parked and not yet taken (tests). */
    int parkedEvents() {
        state.lock();
        try {
            return deferred.size();
        } finally {
            state.unlock();
        }
    }

    static RdmaCmException failure(CmId id, String step, CmEvent event) {
        int errno = switch (event.type()) {
            case REJECTED -> Errno.ECONNREFUSED;
            case UNREACHABLE -> event.status() < 0 ? -event.status() : Errno.EHOSTUNREACH;
            case ADDR_ERROR, ROUTE_ERROR, CONNECT_ERROR, MULTICAST_ERROR ->
                event.status() < 0 ? -event.status() : Errno.EIO;
            case DISCONNECTED -> Errno.ECONNRESET;
            case DEVICE_REMOVAL -> Errno.ENODEV;
            default -> Errno.EPROTO;
        };
        String detail = event.type().isError() ? null : "unexpected event while waiting";
        if (event.type() == CmEventType.REJECTED) {
            detail = "reject reason " + event.status() + (event.status() == 28 ? " (consumer reject)"
                : event.status() == 8 ? " (no listener: invalid service id)" : "");
        }
        return new RdmaCmException(id.peer(), step, event.type(), event.status(), errno, event.privateData(), detail);
    }

    CmId register(CmId id) {
        ids.put(id.nativeId(), id);
        children.add(id);
        return id;
    }

    /** Before rdma_destroy_id, and only this id's entry: a new id may reuse the pointer right after the destroy. */
    void unregister(CmId id) {
        ids.remove(id.nativeId(), id);
        children.remove(id);
    }

    long handleForChild() {
        return handle();
    }

    private CmEvent decode() {
        CmEventType type = CmEventType.of(record.type());
        int status = record.status();
        long idPtr = record.id();
        long listenPtr = record.listenId();
        ConnectionParameters params = record.parameters();
        int qpNum = record.qpNum();
        if (type == null) {
            return null;
        }
        CmId listener = listenPtr != 0 ? ids.get(listenPtr) : null;
        CmId id;
        if (type == CmEventType.CONNECT_REQUEST) {
            id = register(new CmId(idPtr, this, listener != null ? listener.context() : 0, listener));
        } else {
            id = ids.get(idPtr);
            if (id == null) {
                return null;
            }
        }
        return new CmEvent(type, status, id, listener, params, qpNum);
    }

    /** How long close waits for a thread inside {@link #nextEvent} to leave (it is woken first). */
    static final long CLOSE_WAIT_NANOS = TimeUnit.SECONDS.toNanos(5);

    @Override
    protected void release(long handle) {
        RuntimeException childFailure;
        wakeLock.writeLock().lock();
        try {
            wake0(handle); // the reader, if any, returns from its wait
            state.lock();
            try {
                long deadline = System.nanoTime() + CLOSE_WAIT_NANOS;
                boolean interrupted = false;
                while (reader != null) {
                    long left = deadline - System.nanoTime();
                    if (left <= 0) {
                        if (interrupted) {
                            Thread.currentThread().interrupt();
                        }
                        // The reader is stuck in native code on this channel: leave the channel (and its ids) open
                        // rather than free them under it.
                        throw new IllegalStateException("rdma_destroy_event_channel: a reader did not leave its wait "
                            + "within " + TimeUnit.NANOSECONDS.toMillis(CLOSE_WAIT_NANOS) + " ms; channel left open");
                    }
                    try {
                        changed.awaitNanos(left);
                    } catch (InterruptedException e) {
                        interrupted = true; // keep waiting (bounded); the flag is restored below
                    }
                }
                if (interrupted) {
                    Thread.currentThread().interrupt();
                }
                reader = Thread.currentThread(); // nobody reads any more; waiters see the channel closed
                changed.signalAll();
            } finally {
                state.unlock();
            }
            childFailure = children.closeAllCollecting();
            destroy0(handle);
        } finally {
            wakeLock.writeLock().unlock();
        }
        Children.checkDestroy("rdma_destroy_event_channel", 0, childFailure);
    }

    /** rdma_create_event_channel (fd set O_NONBLOCK) + eventfd; shim struct pointer or -errno. */
    private static native long create0();

    private static native int fd0(long channel);

    /**
     * rdma_get_cm_event, and poll(channel fd, eventfd) until the timeout passes; copies the event into the record
     * at {@code record}. The event pointer (to ack with {@link #ack0}), 0 = timeout, -ECANCELED = woken, or -errno.
     */
    private static native long getEvent0(long channel, long timeoutNanos, long record);

    /** rdma_ack_cm_event. */
    private static native void ack0(long event);

    private static native int wake0(long channel);

    /** rdma_destroy_event_channel, close(eventfd), free. */
    private static native int destroy0(long channel);
}
