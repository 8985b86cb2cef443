package io.nvmeof4j.target.controller;

import io.nvmeof4j.protocol.command.NvmeStatus;
import io.nvmeof4j.protocol.command.SubmissionQueueEntry;
import io.nvmeof4j.protocol.io.NvmOpcode;
import io.nvmeof4j.protocol.spi.Request;
import io.nvmeof4j.target.io.NvmCommandExecutor;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * Pairs the halves of fused operations on one I/O queue (NVMe Base 2.0, 3.4.2). The one fused operation served is
 * Compare (FUSE 01b) then Write (FUSE 10b), next to each other in this queue: adjacency is judged by
 * {@link Request#sequence()} (the capsule order), not by the order commands reach the handler, since a half that
 * pulls its data (R2T, RDMA READ) arrives after a later command with in-capsule data. Whichever half comes first
 * waits here (a handful at most, reactor thread only) until its partner does; the pair then goes to
 * {@link ControllerQueueHandler#executeFusedPair} and on to {@link NvmCommandExecutor#executeFused}. Statuses, as
 * the spec and SPDK answer them:
 * <ul>
 *   <li>FUSE 11b, a first half that is not Compare or a second half that is not Write: Invalid Field in Command +
 *       DNR (FUSES only offers Compare and Write). A fused command on the admin queue or before Connect is refused
 *       the same way by the command entry, before it comes here.</li>
 *   <li>A half whose neighbour in the queue is not its partner (a plain command, or a half of the wrong kind):
 *       Aborted – Missing Fused Command (0x00A). A fused pair split across two queues is this case on both.</li>
 *   <li>A half whose partner never comes: Aborted – Missing Fused Command after
 *       {@link #PARTNER_TIMEOUT_MILLIS}. nvmet has no fused commands and SPDK waits for the next command
 *       without a limit; the spec sets none. One second is far above what a host needs to send two adjacent
 *       capsules and the second's data (at most MDTS), and a waiting half holds no LBA range: nothing else on
 *       the namespace waits for it.</li>
 *   <li>Halves naming different NSIDs: Invalid Field in Command + DNR for both.</li>
 *   <li>A half the namespace's reservation refuses: Reservation Conflict for it, Aborted – Failed Fused Command for
 *       the other (the Write of a preempted host must not slip past the fence inside a pair).</li>
 * </ul>
 */
final class FusedPairs {
    private static final Logger LOG = LoggerFactory.getLogger(FusedPairs.class);

    /** How long a fused half waits for its partner before it is answered Aborted – Missing Fused Command. */
    static final long PARTNER_TIMEOUT_MILLIS = 1000;
    /** How often the timer looks for a fused half past its time. */
    private static final long SWEEP_PERIOD_MILLIS = 100;
    /** Fused halves that may wait at once on one queue; a further one ends the oldest. */
    private static final int PARKED_MAX = 8;
    private static final int FUSE_FIRST = 0x1;
    private static final int FUSE_SECOND = 0x2;

    private final ControllerQueueHandler handler;
    // Halves waiting for their partner: reactor thread only, created at this queue's first fused command.
    private Request[] parked;
    private long[] parkedDeadline;
    private int parkedCount;
    /** The earliest deadline of a waiting half (0: none); read by the timer thread. */
    private volatile long earliestDeadline;
    private ScheduledFuture<?> timer;
    /** Timer thread: hands the sweep to the reactor only when a half is past its time. */
    private final Runnable timerCheck = this::timerCheck;
    private final Runnable sweep = this::sweep;

    FusedPairs(ControllerQueueHandler handler) {
        this.handler = handler;
    }

    /** True while a half waits: every command on the queue then passes here (it may be the missing neighbour). */
    boolean waiting() {
        return parkedCount != 0;
    }

    /** Number of halves waiting for a partner (tests). */
    int halvesWaiting() {
        return parkedCount;
    }

    /** A fused half, or any command while a half waits. Reactor thread. */
    void onCommand(Controller c, Request request, SubmissionQueueEntry sqe, int fuse) {
        long seq = request.sequence();
        if (fuse == 0) {
            notAPartner(seq);
            handler.ioCommand(c, request, sqe);
            return;
        }
        if (fuse == FUSE_FIRST && sqe.opcode() == NvmOpcode.COMPARE) {
            abortParked(seq - 1, FUSE_FIRST); // the first before this one was not followed by a second
            Request second = takeParked(seq + 1, FUSE_SECOND);
            if (second != null) {
                handler.executeFusedPair(c, request, second);
            } else {
                park(request);
            }
            return;
        }
        if (fuse == FUSE_SECOND && sqe.opcode() == NvmOpcode.WRITE) {
            abortParked(seq + 1, FUSE_SECOND); // the second after this one has no first before it
            Request first = takeParked(seq - 1, FUSE_FIRST);
            if (first != null) {
                handler.executeFusedPair(c, first, request);
            } else {
                park(request);
            }
            return;
        }
        // FUSE 11b (reserved), or a fused operation other than Compare and Write.
        handler.fail(request, sqe, NvmeStatus.INVALID_FIELD | NvmeStatus.DNR, "fused operation other than Compare"
            + " and Write");
        notAPartner(seq);
    }

    /** The command at {@code seq} is no fused partner: halves waiting next to it for one are answered now. */
    void notAPartner(long seq) {
        if (parkedCount != 0) {
            abortParked(seq - 1, FUSE_FIRST);
            abortParked(seq + 1, FUSE_SECOND);
        }
    }

    private void park(Request request) {
        if (parked == null) {
            parked = new Request[PARKED_MAX];
            parkedDeadline = new long[PARKED_MAX];
        }
        if (parkedCount == PARKED_MAX) {
            missingPartner(0, "more than " + PARKED_MAX + " fused halves waiting on one queue");
        }
        parked[parkedCount] = request;
        parkedDeadline[parkedCount] = request.receivedNanos() + TimeUnit.MILLISECONDS.toNanos(PARTNER_TIMEOUT_MILLIS);
        parkedCount++;
        updateDeadline();
        if (timer == null) {
            // One timer task per queue, created with its first fused command and cancelled with the queue.
            timer = handler.registry().scheduleAtFixedRate(timerCheck, SWEEP_PERIOD_MILLIS);
        }
    }

    private Request takeParked(long seq, int fuse) {
        for (int i = 0; i < parkedCount; i++) {
            Request r = parked[i];
            if (r.sequence() == seq && (r.command().flags() & SubmissionQueueEntry.FUSE_MASK) == fuse) {
                removeParked(i);
                return r;
            }
        }
        return null;
    }

    private void abortParked(long seq, int fuse) {
        for (int i = 0; i < parkedCount; i++) {
            Request r = parked[i];
            if (r.sequence() == seq && (r.command().flags() & SubmissionQueueEntry.FUSE_MASK) == fuse) {
                missingPartner(i, "the command next to it in the queue is not its partner");
                return;
            }
        }
    }

    private void missingPartner(int index, String why) {
        Request r = parked[index];
        removeParked(index);
        SubmissionQueueEntry sqe = r.command();
        boolean first = (sqe.flags() & SubmissionQueueEntry.FUSE_MASK) == FUSE_FIRST;
        LOG.warn("fused {} half (CID {}, NSID {}) on {}: {}; answered Aborted - Missing Fused Command",
            first ? "first (Compare)" : "second (Write)", sqe.commandId(), Integer.toUnsignedString(sqe.nsid()),
            handler, why);
        handler.fail(r, sqe, NvmeStatus.ABORTED_MISSING_FUSED, why);
    }

    private void removeParked(int index) {
        int last = --parkedCount;
        for (int i = index; i < last; i++) {
            parked[i] = parked[i + 1];
            parkedDeadline[i] = parkedDeadline[i + 1];
        }
        parked[last] = null;
        updateDeadline();
    }

    private void updateDeadline() {
        long earliest = 0;
        for (int i = 0; i < parkedCount; i++) {
            if (earliest == 0 || parkedDeadline[i] - earliest < 0) {
                earliest = parkedDeadline[i];
            }
        }
        earliestDeadline = earliest;
    }

    /** Timer thread. */
    private void timerCheck() {
        long deadline = earliestDeadline;
        if (deadline != 0 && System.nanoTime() - deadline >= 0 && !handler.isClosed()) {
            try {
                handler.queue().execute(sweep);
            } catch (RuntimeException e) {
                // The reactor is stopping: its queues close, and close() ends the waiting halves.
                LOG.debug("fused sweep for {} not run: {}", handler, e.toString());
            }
        }
    }

    /** Reactor thread: answers the halves whose partner did not come in time. */
    private void sweep() {
        long now = System.nanoTime();
        for (int i = parkedCount - 1; i >= 0; i--) {
            if (now - parkedDeadline[i] >= 0) {
                missingPartner(i, "its partner did not arrive within " + PARTNER_TIMEOUT_MILLIS + " ms");
            }
        }
    }

    /** The queue is gone (reactor thread): the waiting halves complete into nothing, their slots go back. */
    void close() {
        if (timer != null) {
            timer.cancel(false);
        }
        while (parkedCount > 0) {
            Request r = parked[parkedCount - 1];
            removeParked(parkedCount - 1);
            r.complete(NvmeStatus.ABORTED_SQ_DELETION);
        }
    }
}
