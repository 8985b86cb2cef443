package io.nvmeof4j.jni.rdma;

import io.nvmeof4j.jni.Errno;
import io.nvmeof4j.jni.NativeHandle;
import io.nvmeof4j.jni.NativeIoException;

import java.util.ArrayDeque;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * An RDMA CM event channel ({@code struct rdma_event_channel}) and the CM ids created on it. Its fd is always
 * non-blocking: {@link #nextEvent(long)} waits with {@code poll} on it and on a wake-up eventfd, for at most the
 * timeout, so no CM wait ever hangs; {@link #pollEvent()} just looks. A reactor may put {@link #fd()} in its own
 * epoll set and call {@link #pollEvent()} when it is readable.
 *
 * <p>Each event is copied out (type, status, ids, connection parameters, private data) and acknowledged
 * ({@code rdma_ack_cm_event}) before it is returned. {@link #awaitEvent} waits for one id's event and keeps the
 * events of other ids it meets for later {@link #nextEvent(long)} calls.
 *
 * <p>Closing the channel closes the CM ids still open on it (and their queue pairs).
 */
public final class CmEventChannel extends NativeHandle {
    private final Map<Long, CmId> ids = new ConcurrentHashMap<>();
    private final Children children = new Children();
    private final ArrayDeque<CmEvent> deferred = new ArrayDeque<>();
    private final CmEventRecord record = new CmEventRecord();
    private final long recordAddress = record.address();
    private final int fd;

    private CmEventChannel(long handle) {
        super(handle, "RDMA CM event channel");
        this.fd = fd0(handle);
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
     * The next event, waiting at most {@code timeoutNanos} (0 = do not wait); null on timeout or
     * {@link #wakeup()}. For CONNECT_REQUEST the event carries a new {@link CmId} (registered on this channel,
     * carrying the listener's context) that the caller must accept, or reject, and close.
     */
    public CmEvent nextEvent(long timeoutNanos) throws NativeIoException {
        if (timeoutNanos < 0) {
            throw new IllegalArgumentException("a wait needs a timeout: " + timeoutNanos);
        }
        synchronized (deferred) {
            CmEvent e = deferred.pollFirst();
            if (e != null) {
                return e;
            }
        }
        long deadline = System.nanoTime() + timeoutNanos;
        long remaining = timeoutNanos;
        while (true) {
            int rc = NativeIoException.check("rdma_get_cm_event", getEvent0(handle(), remaining, recordAddress));
            if (rc == 0) {
                return null;
            }
            CmEvent event = decode();
            if (event != null) {
                return event;
            }
            // An event for an id closed meanwhile: drop it and keep waiting for the rest of the time.
            remaining = deadline - System.nanoTime();
            if (remaining <= 0) {
                return null;
            }
        }
    }

    /**
     * Waits until {@code id} gets an event of type {@code expected} (for a listener: a CONNECT_REQUEST whose
     * listen id is {@code id}) and returns it; events for other ids are kept for {@link #nextEvent(long)}.
     *
     * @param step what is waited for, for the exception ({@code "resolve address"}, {@code "connect"}, ...)
     * @throws RdmaCmException when an error event (REJECTED, UNREACHABLE, ADDR_ERROR, ...), another unexpected
     *                         event (DISCONNECTED while connecting) arrives for {@code id}, or the timeout passes
     */
    public CmEvent awaitEvent(CmId id, CmEventType expected, long timeoutNanos, String step)
            throws NativeIoException, RdmaCmException {
        long deadline = System.nanoTime() + timeoutNanos;
        ArrayDeque<CmEvent> others = new ArrayDeque<>();
        try {
            while (true) {
                long remaining = deadline - System.nanoTime();
                if (remaining <= 0) {
                    throw new RdmaCmException(id.peer(), step, null, 0, Errno.ETIMEDOUT, null,
                        "no " + expected + " within " + timeoutNanos / 1_000_000 + " ms");
                }
                int rc = NativeIoException.check("rdma_get_cm_event", getEvent0(handle(), remaining, recordAddress));
                if (rc == 0) {
                    continue;
                }
                CmEvent event = decode();
                if (event == null) {
                    continue;
                }
                boolean mine = event.id() == id || (event.type() == CmEventType.CONNECT_REQUEST && event.listenId() == id);
                if (!mine) {
                    others.addLast(event);
                    continue;
                }
                if (event.type() == expected) {
                    return event;
                }
                throw failure(id, step, event);
            }
        } finally {
            if (!others.isEmpty()) {
                synchronized (deferred) {
                    deferred.addAll(others);
                }
            }
        }
    }

    /** Makes a current or the next wait return early (writes the eventfd); callable from any thread. */
    public void wakeup() {
        wake0(handle());
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

    void unregister(CmId id) {
        ids.remove(id.nativeId());
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

    @Override
    protected void release(long handle) {
        children.closeAll();
        destroy0(handle);
    }

    /** rdma_create_event_channel (fd set O_NONBLOCK) + eventfd; shim struct pointer or -errno. */
    private static native long create0();

    private static native int fd0(long channel);

    /**
     * poll(channel fd, eventfd, timeout), then rdma_get_cm_event; copies the event into the record at
     * {@code record} and acks it. 1 = an event, 0 = timeout or wake-up, or -errno.
     */
    private static native int getEvent0(long channel, long timeoutNanos, long record);

    private static native int wake0(long channel);

    /** rdma_destroy_event_channel, close(eventfd), free. */
    private static native int destroy0(long channel);
}
