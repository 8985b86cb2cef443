package io.nvmeof4j.tcp;

import java.nio.ByteBuffer;

/**
 * Something a connection sends: one or more PDUs, each described as up to {@link #MAX_SEGMENTS} buffers
 * (header, data, data digest, and for the last data PDU of a read the response capsule) that a gathering write
 * sends together. Jobs form an intrusive FIFO per connection ({@link #nextJob}), so queuing allocates nothing.
 * <p>Reactor thread only.
 */
abstract class SendJob {
    static final int MAX_SEGMENTS = 4;

    final ByteBuffer[] segments = new ByteBuffer[MAX_SEGMENTS];
    int segmentCount;
    /** First segment that still has bytes to send. */
    int segmentIndex;
    /** Position of segment 0 when the current PDU was armed: tells whether any of it went out yet. */
    private int firstSegmentStart;
    SendJob nextJob;

    /** Arms the segments of the next PDU(s); {@code segments[0..count)} must be positioned at their first byte. */
    final void armSegments(int count) {
        segmentCount = count;
        segmentIndex = 0;
        firstSegmentStart = segments[0].position();
    }

    /** Whether every byte of the armed segments has been written. */
    final boolean armedSegmentsWritten() {
        while (segmentIndex < segmentCount && !segments[segmentIndex].hasRemaining()) {
            segmentIndex++;
        }
        return segmentIndex == segmentCount;
    }

    /** Whether part of the armed PDU already went out (it must then be finished before anything else is sent). */
    final boolean armedSegmentsStarted() {
        return segmentIndex > 0 || segments[0].position() != firstSegmentStart;
    }

    /** Whether more PDUs follow the armed ones; the connection then sends nothing else until they are armed. */
    abstract boolean hasMorePdus();

    /** Arms the next PDU once the current one is written; false when the job is complete. */
    abstract boolean armNextPdu();

    /** Everything was written. */
    abstract void onSent();

    /** The connection is closing or terminating and the job will not be (fully) sent: release what it holds. */
    abstract void onDropped();
}
