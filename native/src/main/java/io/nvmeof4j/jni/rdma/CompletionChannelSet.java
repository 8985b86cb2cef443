package io.nvmeof4j.jni.rdma;

import io.nvmeof4j.jni.NativeIoException;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;

/**
 * The completion channels one thread waits on together: a poll group serving queues on several RDMA devices has a
 * channel per device (a completion queue reports to a channel of its own device context), and a completion on any
 * of them must end the wait at once. {@link #await(long)} is one JNI call and one {@code ppoll} over every member's
 * channel fd and wake-up eventfd; it takes the pending events of every readable channel ({@code ibv_get_cq_event})
 * and maps each to its {@link CompletionQueue} ({@link #queue(int)}), for the caller to acknowledge.
 *
 * <p>No allocation per wait: the fds and channel pointers are laid out in a direct buffer when a member is added
 * (the only time the layout is rebuilt), the events land in a preallocated one.
 *
 * <pre>
 *  entry (16 bytes, one per member)          event (16 bytes, up to maxEvents per wait)
 *  0       4          8                16    0                8        12         16
 *  +-------+----------+----------------+     +----------------+--------+----------+
 *  | fd    | wake fd  | verbs_channel* |     | ibv_cq*        | entry  | reserved |
 *  +-------+----------+----------------+     +----------------+--------+----------+
 * </pre>
 *
 * <p>Threading: {@link #await(long)} is for one waiting thread (the reactor). It holds every open member's waiter
 * lock, in member order, around the native wait and the mapping of its events, which is the protocol a single
 * channel's wait keeps: a channel closed by another thread wakes the wait through its own eventfd (polled here),
 * then waits for that lock before it frees anything. A member found closed is dropped from the native layout (its fds
 * set to -1, which {@code ppoll} skips) and ends that wait at once, as a wake-up (the open members are looked at
 * without blocking): a wake-up written to it while it closed may be lost. A wait that finds a member readable whose
 * channel joined a selector ({@link CompletionChannel#joinSelector}) re-arms that join after taking its events. {@link #add} is the control path, any thread; {@link #wakeup()} is safe from any thread.
 */
public final class CompletionChannelSet {
    /** Members at most (the native side keeps its {@code pollfd} array on the stack). */
    public static final int MAX_MEMBERS = 64;
    static final int ENTRY_SIZE = 16;
    static final int ENTRY_FD = 0;
    static final int ENTRY_WAKE_FD = 4;
    static final int ENTRY_CHANNEL = 8;
    static final int EVENT_SIZE = 16;
    static final int EVENT_CQ = 0;
    static final int EVENT_ENTRY = 8;
    /** {@link #readiness(int)} bits: the member's fd was readable; its wake-up eventfd was written (and drained). */
    static final int READABLE = 1;
    static final int WOKEN = 2;

    /** One layout of the members, replaced (never changed but for closed members) when a member is added. */
    private static final class Members {
        final CompletionChannel[] channels; // null: a raw fd member (tests)
        final int[] wakeFds;
        final boolean[] dead; // the waiting thread's view of members found closed
        final ByteBuffer entries;
        final long entriesAddress;
        final ByteBuffer ready;
        final long readyAddress;

        /** No member: nothing native (the library is loaded only once a channel or fd is added). */
        Members() {
            channels = new CompletionChannel[0];
            wakeFds = new int[0];
            dead = new boolean[0];
            entries = null;
            entriesAddress = 0;
            ready = null;
            readyAddress = 0;
        }

        Members(CompletionChannel[] channels, int[] fds, int[] wakeFds, long[] pointers) {
            int n = channels.length;
            this.channels = channels;
            this.wakeFds = wakeFds;
            this.dead = new boolean[n];
            this.entries = ByteBuffer.allocateDirect(n * ENTRY_SIZE).order(ByteOrder.nativeOrder());
            this.ready = ByteBuffer.allocateDirect(n * Integer.BYTES).order(ByteOrder.nativeOrder());
            for (int i = 0; i < n; i++) {
                entries.putInt(i * ENTRY_SIZE + ENTRY_FD, fds[i]);
                entries.putInt(i * ENTRY_SIZE + ENTRY_WAKE_FD, wakeFds[i]);
                entries.putLong(i * ENTRY_SIZE + ENTRY_CHANNEL, pointers[i]);
            }
            this.entriesAddress = Rdma.address(entries);
            this.readyAddress = Rdma.address(ready);
        }

        void markDead(int i) {
            dead[i] = true;
            entries.putInt(i * ENTRY_SIZE + ENTRY_FD, -1);
            entries.putInt(i * ENTRY_SIZE + ENTRY_WAKE_FD, -1);
            entries.putLong(i * ENTRY_SIZE + ENTRY_CHANNEL, 0);
        }
    }

    private final int maxEvents;
    private final CompletionQueue[] eventQueues;
    // Made with the first member, published by the write of members.
    private ByteBuffer events;
    private long eventsAddress;
    private volatile Members members = new Members();
    // The fds and pointers of the current members, kept to rebuild the layout when one is added.
    private int[] fds = new int[0];
    private long[] pointers = new long[0];
    private Members lastWaited;
    private int eventCount;

    /** @param maxEvents completion events taken per wait at most (more stay pending for the next wait) */
    public CompletionChannelSet(int maxEvents) {
        if (maxEvents < 1) {
            throw new IllegalArgumentException("maxEvents must be at least 1: " + maxEvents);
        }
        this.maxEvents = maxEvents;
        this.eventQueues = new CompletionQueue[maxEvents];
    }

    /**
     * Adds {@code channel} (control path): the next wait covers it, and a current wait returns so that its thread
     * waits again over every member.
     *
     * @throws IllegalStateException when the channel is closed
     */
    public void add(CompletionChannel channel) {
        synchronized (this) {
            Members m = members;
            if (Arrays.asList(m.channels).contains(channel)) {
                return;
            }
            // handle() checks, under no lock, that it is open; a close racing with this add is seen by the wait.
            append(channel, channel.fd(), channel.wakeFd(), channel.nativeChannel());
        }
        wakeup();
    }

    /** Adds a bare fd and its wake-up fd (-1: none): reported by {@link #readiness(int)}, no events taken (tests). */
    synchronized void addFd(int fd, int wakeFd) {
        append(null, fd, wakeFd, 0);
    }

    private void append(CompletionChannel channel, int fd, int wakeFd, long pointer) {
        Members m = members;
        int n = m.channels.length;
        if (n == MAX_MEMBERS) {
            throw new IllegalStateException("a completion channel set waits on " + MAX_MEMBERS + " channels at most");
        }
        CompletionChannel[] channels = Arrays.copyOf(m.channels, n + 1);
        channels[n] = channel;
        int[] wakeFds = Arrays.copyOf(m.wakeFds, n + 1);
        wakeFds[n] = wakeFd;
        fds = Arrays.copyOf(fds, n + 1);
        fds[n] = fd;
        pointers = Arrays.copyOf(pointers, n + 1);
        pointers[n] = pointer;
        if (events == null) {
            events = ByteBuffer.allocateDirect(maxEvents * EVENT_SIZE).order(ByteOrder.nativeOrder());
            eventsAddress = Rdma.address(events);
        }
        Members next = new Members(channels, fds, wakeFds, pointers);
        for (int i = 0; i < n; i++) {
            if (m.channels[i] != null && m.channels[i].isClosed()) {
                next.markDead(i);
            }
        }
        members = next;
    }

    /** Members added (closed ones included). */
    public int size() {
        return members.channels.length;
    }

    /**
     * Waits up to {@code timeoutNanos} (0: just look) for a completion event on any member, a {@link #wakeup()}, or
     * a member's close. Takes the events pending on every readable member, each counted on its queue
     * ({@link CompletionQueue#unacknowledgedEvents()}): acknowledge them ({@link CompletionQueue#ackEvents()}).
     *
     * @return the number of events taken, {@link #queue(int)} 0 to n-1; 0 on timeout or wake-up
     * @throws IllegalStateException when there is no member or every member is closed
     * @throws NativeIoException     when {@code ppoll} or {@code ibv_get_cq_event} fails
     */
    public int await(long timeoutNanos) throws NativeIoException {
        if (timeoutNanos < 0) {
            throw new IllegalArgumentException("a wait needs a timeout: " + timeoutNanos);
        }
        Members m = members;
        lastWaited = m;
        eventCount = 0;
        int n = m.channels.length;
        int locked = 0;
        boolean closedFound = false;
        int open = 0;
        try {
            for (; locked < n; locked++) {
                CompletionChannel c = m.channels[locked];
                if (c == null) {
                    open++;
                } else if (!m.dead[locked]) {
                    c.waiterLock().lock();
                    if (c.isClosed()) {
                        // Closed, maybe freed once we let go of its lock: never hand it to C again.
                        m.markDead(locked);
                        closedFound = true;
                    } else {
                        open++;
                    }
                }
            }
            if (open == 0) {
                throw new IllegalStateException(n == 0 ? "no completion channel in the set to wait on"
                    : "every completion channel of the set is closed (" + n + " added)");
            }
            // A member found closed ends the wait at once (a wake-up written to it while it closed may be lost), but
            // the open members are still drained: a member joined to a selector is re-armed only by a drain.
            int rc = wait0(m.entriesAddress, n, m.readyAddress, eventsAddress, maxEvents,
                closedFound ? 0 : timeoutNanos);
            if (rc < 0) {
                throw new NativeIoException("ppoll and ibv_get_cq_event over " + open + " completion channels", -rc);
            }
            for (int i = 0; i < rc; i++) {
                int entry = events.getInt(i * EVENT_SIZE + EVENT_ENTRY);
                eventQueues[i] = m.channels[entry].eventReceived(events.getLong(i * EVENT_SIZE + EVENT_CQ));
            }
            eventCount = rc;
            return rc;
        } finally {
            for (int i = locked - 1; i >= 0; i--) {
                CompletionChannel c = m.channels[i];
                if (c != null && c.waiterLock().isHeldByCurrentThread()) {
                    c.waiterLock().unlock();
                }
            }
        }
    }

    /** The queue event {@code i} of the last {@link #await(long)} is for (waiting thread). */
    public CompletionQueue queue(int i) {
        if (i < 0 || i >= eventCount) {
            throw new IndexOutOfBoundsException("event " + i + " of " + eventCount);
        }
        return eventQueues[i];
    }

    /** {@link #READABLE}/{@link #WOKEN} of member {@code i} in the last {@link #await(long)} (waiting thread). */
    int readiness(int i) {
        return lastWaited.ready.getInt(i * Integer.BYTES);
    }

    /**
     * Makes a current or the next {@link #await(long)} return: writes the wake-up eventfd of the first open member
     * (one write, whichever it is: the wait polls them all). Any thread; a no-op without members.
     */
    public void wakeup() {
        Members m = members;
        for (int i = 0; i < m.channels.length; i++) {
            CompletionChannel c = m.channels[i];
            if (c == null) {
                if (m.wakeFds[i] >= 0) {
                    wake0(m.wakeFds[i]);
                    return;
                }
            } else if (!c.isClosed()) {
                c.wakeup(); // a no-op if it closes meanwhile: then its close wakes the wait
                return;
            }
        }
    }

    /**
     * ppoll over count entries (fd and wake fd each), then ibv_get_cq_event on each readable channel; readiness bits
     * per entry into ready; the number of events written to events, or -errno.
     */
    private static native int wait0(long entries, int count, long ready, long events, int maxEvents,
                                    long timeoutNanos);

    /** Writes 1 to an eventfd (a raw member's wake fd); 0 or -errno. */
    private static native int wake0(int wakeFd);
}
