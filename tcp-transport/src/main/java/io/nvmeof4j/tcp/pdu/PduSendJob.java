package io.nvmeof4j.tcp.pdu;

import java.nio.ByteBuffer;

/**
 * Something a connection sends: one or more PDUs, each armed as up to {@link #MAX_SEGMENTS} byte ranges (header,
 * data, data digest, and for the last C2HData of a read the response capsule) that {@link PduSendQueue} writes with
 * one gathering write. Each range's position and limit are kept here, not in its buffer, so that jobs of several
 * commands can send disjoint ranges of one caller buffer (the host role). Jobs are an intrusive FIFO, so queuing
 * allocates nothing. Reactor thread only.
 */
public abstract class PduSendJob {
    public static final int MAX_SEGMENTS = 4;

    /** The armed ranges' buffers: a subclass fills {@code segments[0..count)} and calls {@link #armSegments}. */
    protected final ByteBuffer[] segments = new ByteBuffer[MAX_SEGMENTS];
    final int[] positions = new int[MAX_SEGMENTS];
    final int[] limits = new int[MAX_SEGMENTS];
    int count;
    /** First segment that still has bytes to send. */
    int index;
    /** Index of the segment whose buffer other jobs may also send from, or -1. */
    int sharedIndex = -1;
    /** Position of segment 0 when the current PDU was armed: tells whether any of it went out yet. */
    private int firstStart;
    PduSendJob next;
    boolean queued;

    /** Arms the next PDU(s): {@code segments[0..count)}, each from its buffer's position to its limit as they are now. */
    protected final void armSegments(int count) {
        armSegments(count, -1);
    }

    /**
     * As {@link #armSegments(int)}, where {@code segments[shared]} is a buffer other jobs may send other ranges of:
     * a buffer has one position, so one gathering write takes at most one range of it.
     */
    protected final void armSegments(int count, int shared) {
        for (int i = 0; i < count; i++) {
            positions[i] = segments[i].position();
            limits[i] = segments[i].limit();
        }
        this.count = count;
        this.index = 0;
        this.sharedIndex = shared;
        this.firstStart = positions[0];
    }

    /** Whether the job is in a send queue (queued, or partly written). */
    public final boolean isQueued() {
        return queued;
    }

    /** Whether every byte of the armed segments has been written (moving {@link #index} past finished ones). */
    final boolean armedSegmentsWritten() {
        while (index < count && positions[index] >= limits[index]) {
            index++;
        }
        return index == count;
    }

    /** Whether part of the armed PDU already went out (it must then be finished before anything else is sent). */
    final boolean armedSegmentsStarted() {
        return index > 0 || positions[0] != firstStart;
    }

    /** The shared buffer while its range is still to be written, else null. */
    final ByteBuffer pendingSharedBuffer() {
        return sharedIndex >= index && sharedIndex >= 0 ? segments[sharedIndex] : null;
    }

    /** Lets go of the buffers (a caller's or a pool's) once the job left the queue. */
    final void releaseSegments() {
        for (int i = 0; i < MAX_SEGMENTS; i++) {
            segments[i] = null;
        }
        count = 0;
        index = 0;
        sharedIndex = -1;
    }

    /** Whether more PDUs follow the armed ones; the queue then sends nothing after this job until they are armed. */
    protected abstract boolean hasNextPdu();

    /** Arms the next PDU once the current one is written; false when the job is complete. */
    protected abstract boolean armNext();

    /** Everything was written; the job is out of the queue (it may be queued again from here). */
    protected abstract void sent();

    /** The connection is closing or terminating and the job will not be (fully) sent: release what it holds. */
    protected abstract void dropped();
}
