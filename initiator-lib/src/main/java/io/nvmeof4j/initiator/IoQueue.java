package io.nvmeof4j.initiator;

import io.nvmeof4j.protocol.io.NvmOpcode;
import io.nvmeof4j.protocol.command.CompletionQueueEntry;
import io.nvmeof4j.protocol.command.NvmeStatus;
import io.nvmeof4j.protocol.command.SubmissionQueueEntry;
import io.nvmeof4j.protocol.reservation.ReservationCommand;
import io.nvmeof4j.protocol.spi.host.HostCommandCallback;
import io.nvmeof4j.protocol.spi.host.HostQueue;
import io.nvmeof4j.protocol.spi.host.HostQueueListener;
import io.nvmeof4j.protocol.spi.host.HostStatus;
import org.agrona.concurrent.ManyToManyConcurrentArrayQueue;
import org.agrona.concurrent.ManyToOneConcurrentArrayQueue;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.function.Consumer;

/**
 * One I/O queue of a controller, as the data path sees it: survives reconnects (the transport queue under it is
 * replaced), owns a pool of preallocated {@link IoRequest}s and belongs to one {@link HostReactor}.
 * <p>Submission: a thread takes a request from the pool (an MPMC ring), fills it and either starts it at once (on
 * the reactor thread) or offers it to the MPSC ring the reactor drains; both rings are Agrona array queues, so the
 * hand-off allocates nothing. On the reactor, a request goes to the pending FIFO and is cut into commands (MDTS, 65536
 * blocks) as transport slots free up. Completions arrive as {@link HostCommandCallback} calls; when the last command
 * of a request is back, the request returns to the pool and its {@link IoCallback} runs.
 * <p>Failures: a command with no completion within the command timeout fails its request with
 * HOST_ABORTED_COMMAND and makes the controller reset the connection (as the Linux host does). A command that comes
 * back with a path error (the connection dropped) requeues its whole request, which is submitted again after the
 * reconnect, unless the controller is lost or closed.
 */
final class IoQueue implements HostCommandCallback, HostQueueListener {
    private static final Logger LOG = LoggerFactory.getLogger(IoQueue.class);
    /** Not an opcode: a fused Compare (FUSE 01b) and Write (FUSE 10b) pair, sent back to back. */
    static final int OP_COMPARE_AND_WRITE = 0x105;
    private static final int FUSE_FIRST = 0x1;
    private static final int FUSE_SECOND = 0x2;
    /** NLB is 16 bits (0-based). */
    static final int MAX_BLOCKS_PER_COMMAND = 65536;

    final NvmeofController controller;
    final int qid;
    final HostReactor reactor;
    private final long commandTimeoutNanos;
    private final ManyToManyConcurrentArrayQueue<IoRequest> free;
    private final ManyToOneConcurrentArrayQueue<IoRequest> inbound;
    private final Consumer<IoRequest> starter = this::start;
    private final SubmissionQueueEntry sqe = new SubmissionQueueEntry()
        .wrap(ByteBuffer.allocateDirect(SubmissionQueueEntry.LENGTH).order(ByteOrder.LITTLE_ENDIAN), 0);

    /** The transport queue; replaced on the reactor thread after a reconnect. */
    private volatile HostQueue transport;
    /** The controller closed: the reactor no longer drains this queue on its own. */
    private volatile boolean retired;
    private IoRequest pendingHead;
    private IoRequest pendingTail;
    private IoRequest[] tracked = new IoRequest[0];
    private long[] deadlines = new long[0];
    private int[] trackedCid = new int[0];

    IoQueue(NvmeofController controller, int qid, HostReactor reactor, int maxOutstanding, long commandTimeoutNanos) {
        this.controller = controller;
        this.qid = qid;
        this.reactor = reactor;
        this.commandTimeoutNanos = commandTimeoutNanos;
        this.free = new ManyToManyConcurrentArrayQueue<>(Math.max(2, maxOutstanding));
        this.inbound = new ManyToOneConcurrentArrayQueue<>(Math.max(2, maxOutstanding));
        for (int i = 0; i < maxOutstanding; i++) {
            free.offer(new IoRequest(this));
        }
    }

    // ---- any thread --------------------------------------------------------------------------------------------

    /**
     * Hands one request to the queue. Allocation-free on every thread.
     *
     * @return false when {@code maxOutstandingRequests} requests are already in the queue
     */
    boolean submit(int opcode, int nsid, long lba, long blocks, int blockShift, int cdw12Flags, int cdw11,
                   ByteBuffer buffer, IoCallback callback, Object context, HostMetrics.NamespaceMeters meters) {
        return submit(opcode, nsid, lba, blocks, blockShift, cdw12Flags, cdw11, buffer, callback, context, meters,
            false);
    }

    /** As above; {@code failFast}: a path error or an unusable controller completes the request with a path status
     *  (without DNR) so that a multipath caller redoes it on another path. */
    boolean submit(int opcode, int nsid, long lba, long blocks, int blockShift, int cdw12Flags, int cdw11,
                   ByteBuffer buffer, IoCallback callback, Object context, HostMetrics.NamespaceMeters meters,
                   boolean failFast) {
        IoRequest r = take(meters);
        if (r == null) {
            return false;
        }
        fill(r, opcode, nsid, lba, blocks, blockShift, cdw12Flags, buffer, callback, context);
        r.cdw11 = cdw11;
        r.failFast = failFast;
        if (opcode == NvmOpcode.DATASET_MANAGEMENT) {
            r.dsmRange.putInt(0, 0).putInt(4, (int) blocks).putLong(8, lba);
        }
        return enqueue(r);
    }

    /** A free request, its latency clock started when the namespace records metrics; null when the queue is full. */
    private IoRequest take(HostMetrics.NamespaceMeters meters) {
        IoRequest r = free.poll();
        if (r != null && meters != null) {
            r.meters = meters;
            // On the reactor (a callback submitting the next I/O) the round's time is already read, when the
            // completion that called back was handled: before this submission, so the latency counts a little more,
            // never less. Another thread reads the clock itself.
            r.submitNanos = reactor.inReactorThread() ? reactor.clock.now() : System.nanoTime();
        }
        return r;
    }

    /**
     * Hands over a fused Compare and Write of {@code blocks} blocks at {@code lba}: one request, two commands sent
     * next to each other on this queue. False when the queue is full.
     */
    boolean submitCompareAndWrite(int nsid, long lba, int blocks, int blockShift, ByteBuffer expected,
                                  ByteBuffer replacement, boolean fua, IoCallback callback, Object context,
                                  HostMetrics.NamespaceMeters meters) {
        IoRequest r = take(meters);
        if (r == null) {
            return false;
        }
        fill(r, OP_COMPARE_AND_WRITE, nsid, lba, blocks, blockShift, fua ? 1 << 30 : 0, expected, callback, context);
        r.writeBuffer = replacement;
        r.writeBufferPosition = replacement.position();
        r.writeBufferLimit = replacement.limit();
        return enqueue(r);
    }

    /** Hands over a Copy of {@code rangeCount} Source Range Entries (format 0) in {@code ranges} to {@code lba}. */
    boolean submitCopy(int nsid, long destinationLba, ByteBuffer ranges, int rangeCount, long totalBlocks,
                       int blockShift, boolean fua, IoCallback callback, Object context,
                       HostMetrics.NamespaceMeters meters) {
        IoRequest r = take(meters);
        if (r == null) {
            return false;
        }
        fill(r, NvmOpcode.COPY, nsid, destinationLba, totalBlocks, blockShift, fua ? 1 << 30 : 0, null, callback, context);
        r.copyRanges = ranges;
        r.copyRangeCount = rangeCount;
        return enqueue(r);
    }

    private static void fill(IoRequest r, int opcode, int nsid, long lba, long blocks, int blockShift, int cdw12Flags,
                             ByteBuffer buffer, IoCallback callback, Object context) {
        r.opcode = opcode;
        r.nsid = nsid;
        r.lba = lba;
        r.blocks = blocks;
        r.blockShift = blockShift;
        r.cdw12Flags = cdw12Flags;
        r.cdw11 = 0;
        r.failFast = false;
        r.callback = callback;
        r.context = context;
        if (buffer != null) {
            r.buffer = buffer;
            r.bufferPosition = buffer.position();
            r.bufferLimit = buffer.limit();
        }
    }

    private boolean enqueue(IoRequest r) {
        if (reactor.inReactorThread() && controller.mayRetry()
            && (!r.failFast || controller.state() == ControllerState.LIVE)) {
            start(r);
            return true;
        }
        // Other threads hand over through the ring. So does a reactor-thread submit that would fail at once: a
        // callback that resubmits on failure then loops through the ring instead of recursing into itself.
        inbound.offer(r); // never full: the ring holds as many requests as the pool
        if (retired) {
            // Raced with close (offer, then read retired; close writes retired, then drains): fail it ourselves.
            failRetired();
        } else {
            reactor.wake();
        }
        return true;
    }

    /**
     * The controller is closed: the reactor stops polling this queue after one last {@link #failWaiting}. Any
     * thread.
     */
    void retire() {
        retired = true;
        failRetired();
        reactor.removeQueue(this);
    }

    private void failRetired() {
        try {
            reactor.execute(this::failWaiting);
        } catch (IllegalStateException e) {
            throw new IllegalStateException("the host is closed", e);
        }
    }

    /** Closes the transport queue (any thread); outstanding commands come back with a path error. */
    void closeTransport(String reason) {
        HostQueue q = transport;
        if (q != null) {
            q.close(reason);
        }
    }

    HostQueue transport() {
        return transport;
    }

    // ---- reactor thread ----------------------------------------------------------------------------------------

    /** Puts a (new or reconnected) transport queue under this I/O queue and submits what waits. */
    void attach(HostQueue queue) {
        if (tracked.length < queue.depth()) {
            tracked = new IoRequest[queue.depth()];
            deadlines = new long[queue.depth()];
            trackedCid = new int[queue.depth()];
        }
        transport = queue;
        pump();
    }

    int drainInbound() {
        return inbound.isEmpty() ? 0 : inbound.drain(starter);
    }

    boolean hasInbound() {
        return !inbound.isEmpty();
    }

    private void start(IoRequest r) {
        if (!controller.mayRetry()) {
            r.status = HostStatus.HOST_PATH_ERROR | NvmeStatus.DNR;
            r.errorDetail = controller.unavailableReason();
            finish(r);
            return;
        }
        if (r.failFast && controller.state() != ControllerState.LIVE) {
            r.status = HostStatus.HOST_PATH_ERROR;
            r.errorDetail = controller.unavailableReason();
            finish(r);
            return;
        }
        appendPending(r);
        pump();
    }

    private void appendPending(IoRequest r) {
        r.inPending = true;
        r.nextPending = null;
        if (pendingTail == null) {
            pendingHead = r;
        } else {
            pendingTail.nextPending = r;
        }
        pendingTail = r;
    }

    private void popPending() {
        IoRequest r = pendingHead;
        pendingHead = r.nextPending;
        if (pendingHead == null) {
            pendingTail = null;
        }
        r.nextPending = null;
        r.inPending = false;
    }

    /** Submits commands of pending requests while the transport has free slots. */
    private void pump() {
        while (pendingHead != null) {
            IoRequest r = pendingHead;
            if (r.status != 0 || r.retry) {
                popPending(); // failed (or to be redone) part-way: submit nothing more of it
                if (r.inFlight == 0) {
                    settle(r);
                }
                continue;
            }
            HostQueue q = transport;
            if (q == null || !q.isOpen() || !submitNext(q, r)) {
                return;
            }
            if (r.submittedAll) {
                popPending();
            }
        }
    }

    /** Compare and Write: both halves or neither, next to each other on the wire. */
    private boolean submitFusedPair(HostQueue q, IoRequest r) {
        if (q.depth() - q.commandsOutstanding() < 2) {
            return false; // the Write must follow the Compare at once: wait for two free slots
        }
        int blocks = (int) r.blocks;
        int length = blocks << r.blockShift;
        sqe.clear().opcode(NvmOpcode.COMPARE).flags(SubmissionQueueEntry.FLAGS_PSDT_SGL | FUSE_FIRST).nsid(r.nsid)
            .cdw10And11(r.lba).cdw(12, blocks - 1);
        int compareCid = q.submit(sqe, r.buffer, r.bufferPosition, length, this, r);
        if (compareCid < 0) {
            return false;
        }
        track(compareCid, r);
        sqe.clear().opcode(NvmOpcode.WRITE).flags(SubmissionQueueEntry.FLAGS_PSDT_SGL | FUSE_SECOND).nsid(r.nsid)
            .cdw10And11(r.lba).cdw(12, (blocks - 1) | r.cdw12Flags);
        int writeCid = q.submit(sqe, r.writeBuffer, r.writeBufferPosition, length, this, r);
        if (writeCid >= 0) {
            track(writeCid, r);
        } else if (r.status == 0) {
            // Cannot happen with two free slots on an open queue; if it does, the target answers the lone Compare
            // with Aborted - Missing Fused Command and the request fails with that status.
            LOG.warn("Compare and Write on I/O queue {} to {}: the Write half could not be submitted", qid,
                controller.peer());
        }
        r.nextBlock = r.blocks;
        r.submittedAll = true;
        return true;
    }

    private void track(int cid, IoRequest r) {
        int tag = cid & 0xFFF;
        tracked[tag] = r;
        trackedCid[tag] = cid;
        deadlines[tag] = reactor.clock.last() + commandTimeoutNanos;
        r.inFlight++;
    }

    private boolean submitNext(HostQueue q, IoRequest r) {
        if (r.opcode == OP_COMPARE_AND_WRITE) {
            return submitFusedPair(q, r);
        }
        long remaining = r.blocks - r.nextBlock;
        int chunk = 0;
        ByteBuffer data = null;
        int dataOffset = 0;
        int dataLength = 0;
        SubmissionQueueEntry command = sqe.clear().opcode(r.opcode).flags(SubmissionQueueEntry.FLAGS_PSDT_SGL)
            .nsid(r.nsid);
        switch (r.opcode) {
            case NvmOpcode.FLUSH:
                break;
            case NvmOpcode.DATASET_MANAGEMENT:
                command.cdw(10, 0).cdw(11, r.cdw11); // NR 0: one range
                data = r.dsmRange;
                dataLength = 16;
                chunk = (int) remaining;
                break;
            case ReservationCommand.OPC_REGISTER:
            case ReservationCommand.OPC_REPORT:
            case ReservationCommand.OPC_ACQUIRE:
            case ReservationCommand.OPC_RELEASE:
                // One command; "blocks" holds the data length in bytes, cdw12Flags CDW10.
                command.cdw(10, r.cdw12Flags).cdw(11, r.cdw11);
                data = r.buffer;
                dataOffset = r.bufferPosition;
                dataLength = (int) remaining;
                chunk = (int) remaining;
                break;
            case NvmOpcode.WRITE_ZEROES:
            case NvmOpcode.VERIFY:
                chunk = (int) Math.min(remaining, MAX_BLOCKS_PER_COMMAND);
                command.cdw10And11(r.lba + r.nextBlock).cdw(12, (chunk - 1) | r.cdw12Flags);
                break;
            case NvmOpcode.COPY:
                command.cdw10And11(r.lba).cdw(12, (r.copyRangeCount - 1) | r.cdw12Flags); // format 0
                data = r.copyRanges;
                dataOffset = r.copyRanges.position();
                dataLength = r.copyRangeCount * 32;
                chunk = (int) remaining;
                break;
            default: // read, write, compare
                int maxBlocks = (int) Math.min(MAX_BLOCKS_PER_COMMAND,
                    Math.max(1L, controller.maxTransferBytes() >>> r.blockShift));
                chunk = (int) Math.min(remaining, maxBlocks);
                command.cdw10And11(r.lba + r.nextBlock).cdw(12, (chunk - 1) | r.cdw12Flags);
                data = r.buffer;
                dataOffset = r.bufferPosition + (int) (r.nextBlock << r.blockShift);
                dataLength = chunk << r.blockShift;
                break;
        }
        int cid = q.submit(command, data, dataOffset, dataLength, this, r);
        if (cid < 0) {
            return false;
        }
        track(cid, r);
        r.nextBlock += chunk;
        if (r.nextBlock >= r.blocks) {
            r.submittedAll = true;
        }
        return true;
    }

    @Override
    public void onCompletion(CompletionQueueEntry cqe, Object context) {
        IoRequest r = (IoRequest) context;
        int tag = cqe.commandId() & 0xFFF;
        if (tag < tracked.length && tracked[tag] == r) {
            tracked[tag] = null;
        }
        r.inFlight--;
        int status = cqe.status();
        if (status != 0) {
            if (status == HostStatus.HOST_PATH_ERROR && controller.mayRetry() && !r.failFast) {
                r.retry = true; // the connection dropped: redo the request after the reconnect
            } else if (r.status == 0 || NvmeStatus.code(r.status) == NvmeStatus.ABORTED_FAILED_FUSED) {
                // A fused pair: the half that failed (a miscompare) says more than the other's "aborted".
                r.status = status;
                if (status == HostStatus.HOST_PATH_ERROR && !r.failFast) {
                    r.status |= NvmeStatus.DNR;
                    r.errorDetail = controller.unavailableReason();
                }
            }
        }
        if (!r.inPending && r.inFlight == 0) {
            settle(r);
        }
        pump();
    }

    /** Every command of the request is back (or none was sent): finish it, or requeue it for a retry. */
    private void settle(IoRequest r) {
        if (r.status == 0 && r.retry) {
            if (controller.mayRetry()) {
                r.retry = false;
                r.nextBlock = 0;
                r.submittedAll = false;
                appendPending(r);
                return;
            }
            r.status = HostStatus.HOST_PATH_ERROR | NvmeStatus.DNR;
            r.errorDetail = controller.unavailableReason();
        }
        finish(r);
    }

    private void finish(IoRequest r) {
        ByteBuffer buffer = r.buffer;
        if (buffer != null) {
            buffer.limit(r.bufferLimit);
            buffer.position(r.bufferPosition);
        }
        ByteBuffer writeBuffer = r.writeBuffer;
        if (writeBuffer != null) {
            writeBuffer.limit(r.writeBufferLimit);
            writeBuffer.position(r.writeBufferPosition);
        }
        IoCallback callback = r.callback;
        Object context = r.context;
        int status = r.status;
        String detail = r.errorDetail;
        HostMetrics.NamespaceMeters meters = r.meters;
        if (meters != null) {
            long now = reactor.inReactorThread() ? reactor.clock.now() : System.nanoTime();
            meters.record(HostMeterNames.op(r.opcode), now - r.submitNanos, status,
                r.blocks << r.blockShift);
        }
        r.reset();
        free.offer(r);
        if (detail != null && context instanceof ErrorDetailAware) {
            ((ErrorDetailAware) context).errorDetail(detail);
        }
        try {
            callback.onComplete(status, context);
        } catch (Throwable e) {
            // Whatever an application callback throws (an AssertionError too) must not end the reactor thread:
            // every queue on it, and every timeout check, would stop.
            LOG.error("I/O callback failed (queue {} of {})", qid, controller, e);
        }
    }

    /** Reactor timer: fails commands past their deadline and has the controller reset the connection. */
    void checkTimeouts(long now) {
        String timedOut = null;
        IoRequest[] t = tracked;
        for (int tag = 0; tag < t.length; tag++) {
            IoRequest r = t[tag];
            if (r != null && now - deadlines[tag] > 0) {
                t[tag] = null;
                String detail = String.format("%s command (CID %d, namespace %d, LBA %d) on I/O queue %d to %s "
                        + "got no completion within %d ms", opName(r.opcode), trackedCid[tag], r.nsid, r.lba, qid,
                    controller.peer(), commandTimeoutNanos / 1_000_000);
                if (r.status == 0) {
                    // Multipath: the Linux host fails a timed-out command over to another path too.
                    r.status = HostStatus.HOST_ABORTED_COMMAND | (r.failFast ? 0 : NvmeStatus.DNR);
                    r.errorDetail = detail;
                }
                if (timedOut == null) {
                    timedOut = detail;
                }
            }
        }
        if (timedOut != null) {
            LOG.warn("{}; resetting the controller connection", timedOut);
            // Recovery first, so that whoever sees the timed-out I/O fail also sees the controller reconnecting.
            controller.startRecovery("command timeout: " + timedOut);
            closeTransport("command timeout: " + timedOut);
        }
    }

    /** The controller is lost or closed: fail everything waiting here (reactor thread). */
    void failWaiting() {
        drainInbound(); // start() fails these at once
        while (pendingHead != null) {
            IoRequest r = pendingHead;
            popPending();
            if (r.status == 0) {
                r.status = HostStatus.HOST_PATH_ERROR | NvmeStatus.DNR;
                r.errorDetail = controller.unavailableReason();
            }
            if (r.inFlight == 0) {
                finish(r);
            }
        }
    }

    /**
     * The transport closed: multipath requests still waiting here for a slot end with a path error now (reactor
     * thread), so that they go to another path instead of waiting for this controller's reconnect.
     */
    void failFastWaiting(String reason) {
        IoRequest keep = null;
        IoRequest keepTail = null;
        while (pendingHead != null) {
            IoRequest r = pendingHead;
            popPending();
            if (!r.failFast) {
                r.nextPending = null;
                if (keepTail == null) {
                    keep = r;
                } else {
                    keepTail.nextPending = r;
                }
                keepTail = r;
                continue;
            }
            if (r.status == 0) {
                r.status = HostStatus.HOST_PATH_ERROR;
                r.errorDetail = "I/O queue " + qid + " to " + controller.peer() + " closed: " + reason;
            }
            if (r.inFlight == 0) {
                finish(r);
            }
        }
        for (IoRequest r = keep; r != null; ) {
            IoRequest next = r.nextPending;
            appendPending(r);
            r = next;
        }
    }

    @Override
    public void onClosed(HostQueue queue, String reason) {
        if (queue == transport) {
            controller.onQueueClosed(qid, reason);
            reactor.execute(() -> failFastWaiting(reason));
        }
    }

    static String opName(int opcode) {
        switch (opcode) {
            case NvmOpcode.FLUSH: return "Flush";
            case NvmOpcode.WRITE: return "Write";
            case NvmOpcode.READ: return "Read";
            case NvmOpcode.COMPARE: return "Compare";
            case NvmOpcode.WRITE_ZEROES: return "Write Zeroes";
            case NvmOpcode.DATASET_MANAGEMENT: return "Dataset Management";
            case NvmOpcode.VERIFY: return "Verify";
            case NvmOpcode.COPY: return "Copy";
            case OP_COMPARE_AND_WRITE: return "Compare and Write";
            case ReservationCommand.OPC_REGISTER: return "Reservation Register";
            case ReservationCommand.OPC_REPORT: return "Reservation Report";
            case ReservationCommand.OPC_ACQUIRE: return "Reservation Acquire";
            case ReservationCommand.OPC_RELEASE: return "Reservation Release";
            default: return String.format("opcode 0x%02x", opcode);
        }
    }

    /** A context object that wants the text explaining a host-side failure (the future API uses it). */
    interface ErrorDetailAware {
        void errorDetail(String detail);
    }
}
