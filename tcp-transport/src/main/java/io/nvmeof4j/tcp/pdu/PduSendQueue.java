package io.nvmeof4j.tcp.pdu;

import io.nvmeof4j.tcp.tls.TcpStream;

import java.io.IOException;
import java.nio.ByteBuffer;

/**
 * The send side of one NVMe/TCP connection, either role: an intrusive FIFO of {@link PduSendJob}s flushed with
 * gathering writes from the jobs' own buffers (preallocated headers, the data buffers themselves; digests are
 * computed when a job is armed). One {@link #flush} writes at most {@link #WRITE_BUDGET} times and stops at the
 * first short write: the socket is full, so the queue asks for OP_WRITE and resumes where the write stopped. While
 * the socket takes everything, OP_WRITE stays off. Reactor thread only.
 */
public final class PduSendQueue {
    /** Gathering writes per flush before other connections get their turn. */
    static final int WRITE_BUDGET = 16;
    /**
     * Byte ranges in one gathering write (the length of a poll group's {@code iov}): a queue depth of 32 in one
     * system call, read responses (header, data, response capsule) and in-capsule writes (capsule, data) alike.
     */
    public static final int IOV_LENGTH = 128;

    /** What the connection that owns the queue does for it. */
    public interface Owner {
        /** Jobs were queued while OP_WRITE is off: flush in this reactor round (once, however often asked). */
        void requestFlush();

        /** {@link #writeInterest()} changed: set the key's interest set. */
        void writeInterestChanged();

        /** A write failed: close the connection, naming the peer and {@code e}. */
        void sendFailed(IOException e);
    }

    private final Owner owner;
    private PduSendJob head;
    private PduSendJob tail;
    private boolean writeInterest;
    /** Set by {@link #terminateWith}: the last job the connection sends; jobs that finish before it are dropped. */
    private PduSendJob last;
    private boolean closed;

    public PduSendQueue(Owner owner) {
        this.owner = owner;
    }

    /** Whether the queue waits for OP_WRITE (the socket was full, or TLS records are still pending). */
    public boolean writeInterest() {
        return writeInterest;
    }

    public void writeInterest(boolean on) {
        if (writeInterest != on) {
            writeInterest = on;
            owner.writeInterestChanged();
        }
    }

    public void enqueue(PduSendJob job) {
        job.next = null;
        job.queued = true;
        if (tail == null) {
            head = job;
        } else {
            tail.next = job;
        }
        tail = job;
        if (!writeInterest) {
            owner.requestFlush(); // with OP_WRITE armed the socket is full: the selector will call flush
        }
    }

    /**
     * Writes queued PDUs until the socket is full, nothing is left, or the budget is spent; returns the work done.
     *
     * @param iov the reactor's scratch array for gathering writes, at least {@link PduSendJob#MAX_SEGMENTS} long
     *            ({@link #IOV_LENGTH}); a write takes as many whole jobs' ranges as it holds
     */
    public int flush(TcpStream stream, ByteBuffer[] iov) {
        if (closed) {
            return 0;
        }
        try {
            if (!stream.flushPending()) {
                writeInterest(true); // TLS records of an earlier write still wait for the socket
                return 1;
            }
        } catch (IOException e) {
            owner.sendFailed(e);
            return 1;
        }
        int work = 0;
        for (int round = 0; round < WRITE_BUDGET && head != null; round++) {
            int count = 0;
            long total = 0;
            for (PduSendJob job = head; job != null && count + job.count - job.index <= iov.length; job = job.next) {
                ByteBuffer shared = job.pendingSharedBuffer();
                if (shared != null && contains(iov, count, shared)) {
                    break; // one position per buffer: this range goes in the next write
                }
                for (int i = job.index; i < job.count; i++) {
                    ByteBuffer segment = job.segments[i];
                    segment.limit(job.limits[i]);
                    segment.position(job.positions[i]);
                    iov[count++] = segment;
                    total += job.limits[i] - job.positions[i];
                }
                if (job.hasNextPdu()) {
                    break; // its next PDU is armed only after this one is out
                }
            }
            long written;
            try {
                written = stream.write(iov, 0, count);
            } catch (IOException e) {
                clear(iov, count);
                owner.sendFailed(e);
                return work + 1;
            }
            work++;
            recordPositions(count);
            clear(iov, count);
            if (retireWritten()) {
                return work;
            }
            if (written < total || stream.hasPendingOutput()) {
                writeInterest(true); // the socket is full: wait for OP_WRITE
                return work;
            }
        }
        if (head == null) {
            writeInterest(false);
        } else if (!writeInterest) {
            owner.requestFlush(); // budget spent with the socket still writable: continue next round
        }
        return work;
    }

    /** How far each gathered segment got: the buffers' positions after the write. */
    private void recordPositions(int count) {
        int seen = 0;
        for (PduSendJob job = head; job != null && seen < count; job = job.next) {
            for (int i = job.index; i < job.count && seen < count; i++, seen++) {
                job.positions[i] = job.segments[i].position();
            }
        }
    }

    /** Retires the jobs at the head that went out whole, arming the next PDU of a multi-PDU job; true once closed. */
    private boolean retireWritten() {
        while (head != null) {
            PduSendJob job = head;
            if (!job.armedSegmentsWritten()) {
                return false;
            }
            if (last != null && job != last) {
                pop().dropped(); // a PDU that had started went out whole; nothing more follows it
                continue;
            }
            if (job.armNext()) {
                return false;
            }
            pop().sent();
            if (closed) {
                return true;
            }
        }
        return false;
    }

    private PduSendJob pop() {
        PduSendJob job = head;
        head = job.next;
        if (head == null) {
            tail = null;
        }
        job.next = null;
        job.queued = false;
        job.releaseSegments();
        return job;
    }

    /**
     * Makes {@code job} (a TermReq) the last thing sent: queued jobs are dropped, except one whose PDU is partly on
     * the wire, which goes out whole first (the peer must be able to parse up to the TermReq).
     */
    public void terminateWith(PduSendJob job) {
        PduSendJob keep = head != null && head.armedSegmentsStarted() ? head : null;
        PduSendJob drop = keep != null ? keep.next : head;
        head = keep;
        tail = keep;
        if (keep != null) {
            keep.next = null;
        }
        dropChain(drop);
        last = job;
        enqueue(job);
    }

    /** The connection closed: every queued job is dropped and nothing is sent any more. */
    public void close() {
        closed = true;
        PduSendJob drop = head;
        head = null;
        tail = null;
        dropChain(drop);
    }

    private static void dropChain(PduSendJob job) {
        while (job != null) {
            PduSendJob next = job.next;
            job.next = null;
            job.queued = false;
            job.releaseSegments();
            job.dropped();
            job = next;
        }
    }

    public boolean isEmpty() {
        return head == null;
    }

    private static boolean contains(ByteBuffer[] iov, int count, ByteBuffer buffer) {
        for (int i = 0; i < count; i++) {
            if (iov[i] == buffer) {
                return true;
            }
        }
        return false;
    }

    /** Lets go of the buffers (a caller's, a pool's) the scratch array held for the write. */
    private static void clear(ByteBuffer[] iov, int count) {
        for (int i = 0; i < count; i++) {
            iov[i] = null;
        }
    }
}
