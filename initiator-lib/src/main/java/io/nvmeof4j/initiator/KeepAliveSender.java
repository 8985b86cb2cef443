package io.nvmeof4j.initiator;

import io.nvmeof4j.protocol.admin.KeepAlive;
import io.nvmeof4j.protocol.command.CompletionQueueEntry;
import io.nvmeof4j.protocol.command.SubmissionQueueEntry;
import io.nvmeof4j.protocol.spi.host.HostCommandCallback;
import io.nvmeof4j.protocol.spi.host.HostQueue;
import io.nvmeof4j.protocol.spi.host.HostStatus;

import java.util.concurrent.TimeUnit;

/**
 * Keep Alive for one admin connection, sent every KATO/2 without allocating on the host reactor (issue 12 item 5):
 * the command, the task that submits it on the reactor and the completion callback are made once per connection;
 * the reactor only copies the prepared SQE into a command slot and, on completion, records the status. The timer
 * thread ({@link #tick()}) sends, and judges the previous Keep Alive: failed status, or no completion within KATO,
 * is the caller's cue to start recovery. One Keep Alive is outstanding at a time, as in the Linux host; a missing
 * completion is therefore noticed at the first tick past KATO (between KATO and 1.5 x KATO after sending).
 */
final class KeepAliveSender implements HostCommandCallback, Runnable {
    /** {@link #tick()}'s answer when all is well. */
    static final String OK = null;

    private final HostQueue queue;
    private final long katoNanos;
    private final long katoMillis;
    private final SubmissionQueueEntry sqe;
    /** Timer thread writes before handing over; reactor clears on completion. */
    private volatile boolean outstanding;
    private volatile long sentAtNanos;
    /** Written by the reactor; read by the timer thread. -1: nothing completed since the last tick. */
    private volatile int status = -1;
    /** Keep Alives completed successfully: written by the reactor only (tests, diagnostics). */
    private volatile long completedOk;

    KeepAliveSender(HostQueue queue, long katoMillis) {
        this.queue = queue;
        this.katoMillis = katoMillis;
        this.katoNanos = TimeUnit.MILLISECONDS.toNanos(katoMillis);
        this.sqe = new SubmissionQueueEntry().wrap(Commands.direct(SubmissionQueueEntry.LENGTH), 0);
        sqe.clear().flags(SubmissionQueueEntry.FLAGS_PSDT_SGL);
        KeepAlive.init(sqe, 0);
    }

    /**
     * Timer thread, every KATO/2: returns why the connection failed its keep-alive (then the caller recovers), or
     * {@link #OK} after sending the next Keep Alive (or while the previous one is still within KATO).
     */
    String tick() {
        int last = status;
        if (last > 0) {
            return "Keep Alive failed: " + HostStatus.describe(last);
        }
        if (outstanding) {
            return System.nanoTime() - sentAtNanos >= katoNanos
                ? "Keep Alive failed: no completion within KATO " + katoMillis + " ms" : OK;
        }
        status = -1;
        sentAtNanos = System.nanoTime();
        outstanding = true;
        try {
            if (queue.pollGroup().inPollGroupThread()) {
                run();
            } else {
                queue.pollGroup().execute(this);
            }
        } catch (IllegalStateException e) {
            outstanding = false;
            return "Keep Alive failed: " + e.getMessage();
        }
        return OK;
    }

    /** Reactor thread: submits the prepared command (the queue copies the SQE into its own slot). */
    @Override
    public void run() {
        if (queue.submit(sqe, null, 0, 0, this, null) < 0) {
            // Every slot busy or the queue closed: the host path error, judged by the next tick.
            onStatus(HostStatus.HOST_PATH_ERROR);
        }
    }

    /** Reactor thread. */
    @Override
    public void onCompletion(CompletionQueueEntry cqe, Object context) {
        onStatus(cqe.status());
    }

    private void onStatus(int completed) {
        if (completed == 0) {
            completedOk = completedOk + 1; // the reactor is the only writer
        }
        status = completed;
        outstanding = false;
    }

    /** Keep Alives that completed with success so far. Any thread. */
    long completedOk() {
        return completedOk;
    }
}
