package io.nvmeof4j.initiator;

import io.nvmeof4j.protocol.command.SubmissionQueueEntry;
import io.nvmeof4j.protocol.spi.host.HostQueue;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Consumer;

/**
 * Control-path commands (Fabrics, admin, I/O-queue Connect): built on the caller's thread, submitted on the
 * queue's poll-group thread, awaited with a timeout. Allocates freely: nothing here is per-I/O.
 */
final class Commands {
    private Commands() {
    }

    static ByteBuffer direct(int bytes) {
        return ByteBuffer.allocateDirect(bytes).order(ByteOrder.LITTLE_ENDIAN);
    }

    /** Submits one command; the future completes on the poll-group thread. */
    static CompletableFuture<Cqe> submit(HostQueue queue, Consumer<SubmissionQueueEntry> fill, ByteBuffer data,
                                         int length) {
        SubmissionQueueEntry sqe = new SubmissionQueueEntry().wrap(direct(SubmissionQueueEntry.LENGTH), 0);
        sqe.clear().flags(SubmissionQueueEntry.FLAGS_PSDT_SGL);
        fill.accept(sqe);
        CompletableFuture<Cqe> result = new CompletableFuture<>();
        Runnable task = () -> {
            try {
                int cid = queue.submit(sqe, data, 0, length, (cqe, ctx) -> result.complete(
                    new Cqe(cqe.commandId(), cqe.status(), cqe.dw0(), cqe.dw1())), null);
                if (cid < 0) {
                    result.completeExceptionally(new IllegalStateException(queue.isOpen()
                        ? "every command slot of the queue is busy" : "the queue is closed"));
                }
            } catch (RuntimeException e) {
                result.completeExceptionally(e);
            }
        };
        if (queue.pollGroup().inPollGroupThread()) {
            task.run();
        } else {
            try {
                queue.pollGroup().execute(task);
            } catch (IllegalStateException e) {
                result.completeExceptionally(e);
            }
        }
        return result;
    }

    /**
     * Runs one command and waits for its completion (any status). On timeout the queue is closed: a command the
     * controller never answered leaves the queue in an unknown state (the Linux host resets it too).
     *
     * @throws NvmeofException naming peer and step, without a status, on timeout or when the queue failed
     */
    static Cqe call(HostQueue queue, String peer, String step, Consumer<SubmissionQueueEntry> fill, ByteBuffer data,
                    int length, Duration timeout) throws NvmeofException {
        CompletableFuture<Cqe> future = submit(queue, fill, data, length);
        try {
            return future.get(timeout.toNanos(), TimeUnit.NANOSECONDS);
        } catch (TimeoutException e) {
            queue.close(step + " timed out");
            throw new NvmeofException(peer, step, NvmeofException.NO_STATUS,
                "no completion within " + timeout.toMillis() + " ms", e);
        } catch (ExecutionException e) {
            throw new NvmeofException(peer, step, NvmeofException.NO_STATUS, e.getCause().getMessage(), e.getCause());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new NvmeofException(peer, step, NvmeofException.NO_STATUS, "interrupted", e);
        }
    }

    /** {@link #call}, failing on any status but success. */
    static Cqe callOk(HostQueue queue, String peer, String step, Consumer<SubmissionQueueEntry> fill, ByteBuffer data,
                      int length, Duration timeout) throws NvmeofException {
        Cqe cqe = call(queue, peer, step, fill, data, length, timeout);
        if (!cqe.ok()) {
            throw new NvmeofException(peer, step, cqe.status(), null, null);
        }
        return cqe;
    }
}
