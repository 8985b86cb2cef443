package io.nvmeof4j.initiator;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * One block I/O of the callback API, preallocated per {@link IoQueue} and recycled: it may become several NVMe
 * commands (split at MDTS, or at 65536 blocks), which it tracks until the last completes. Filled by the submitting
 * thread, then owned by the queue's reactor thread until it is recycled (the MPSC ring publishes it).
 */
final class IoRequest {
    final IoQueue queue;
    /** One DSM range (16 bytes: context attributes, length in LBAs, SLBA). */
    final ByteBuffer dsmRange = ByteBuffer.allocateDirect(16).order(ByteOrder.LITTLE_ENDIAN);

    int opcode;
    int nsid;
    long lba;
    /** Blocks to transfer in total (0 for Flush, 1 command for DSM). */
    long blocks;
    int blockShift;
    /** CDW12 bits besides NLB (FUA bit 30, DEAC bit 25). */
    int cdw12Flags;
    int cdw11;
    /** Multipath: a path error ends the request here (not DNR) for another path to redo, instead of waiting for
     *  this controller's reconnect. */
    boolean failFast;
    ByteBuffer buffer;
    int bufferPosition;
    int bufferLimit;
    /** Compare and Write: the data written when the compare matches (the compare's is {@link #buffer}). */
    ByteBuffer writeBuffer;
    int writeBufferPosition;
    int writeBufferLimit;
    /** Copy: the Source Range Entries and their count. */
    ByteBuffer copyRanges;
    int copyRangeCount;
    IoCallback callback;
    Object context;
    /** The namespace's meters when the host records metrics, else null; {@link #submitNanos} is then set. */
    HostMetrics.NamespaceMeters meters;
    long submitNanos;

    long nextBlock;
    boolean submittedAll;
    int inFlight;
    int status;
    boolean retry;
    boolean inPending;
    String errorDetail;
    IoRequest nextPending;

    IoRequest(IoQueue queue) {
        this.queue = queue;
    }

    void reset() {
        buffer = null;
        writeBuffer = null;
        copyRanges = null;
        copyRangeCount = 0;
        meters = null;
        callback = null;
        context = null;
        nextBlock = 0;
        submittedAll = false;
        inFlight = 0;
        status = 0;
        retry = false;
        inPending = false;
        errorDetail = null;
        nextPending = null;
        cdw12Flags = 0;
        cdw11 = 0;
        failFast = false;
    }
}
