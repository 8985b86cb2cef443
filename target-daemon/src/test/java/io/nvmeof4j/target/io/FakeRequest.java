package io.nvmeof4j.target.io;

import io.nvmeof4j.protocol.command.CompletionQueueEntry;
import io.nvmeof4j.protocol.command.NvmeStatus;
import io.nvmeof4j.protocol.command.SubmissionQueueEntry;
import io.nvmeof4j.protocol.spi.Request;
import io.nvmeof4j.protocol.spi.TransportQueue;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Test double of a transport's {@link Request}: an SQE in a little-endian buffer, an optional data buffer, and a
 * completion that can be awaited (bounded). Reusable like a queue slot: {@link #reset} prepares the next command
 * and keeps the slot's {@link IoContext}, as the command layer's per-slot context does.
 */
final class FakeRequest implements Request {
    private final ByteBuffer sqeBuffer = ByteBuffer.allocate(SubmissionQueueEntry.LENGTH).order(ByteOrder.LITTLE_ENDIAN);
    private final ByteBuffer cqeBuffer = ByteBuffer.allocate(CompletionQueueEntry.LENGTH).order(ByteOrder.LITTLE_ENDIAN);
    private final SubmissionQueueEntry sqe = new SubmissionQueueEntry().wrap(sqeBuffer, 0);
    private final CompletionQueueEntry cqe = new CompletionQueueEntry().wrap(cqeBuffer, 0);
    private final AtomicInteger completions = new AtomicInteger();
    private ByteBuffer data;
    /** The slot's I/O context, kept across commands like the command layer's per-slot context keeps it. */
    final IoContext io = new IoContext();
    private volatile int status = -1;
    private volatile CountDownLatch done = new CountDownLatch(1);

    /** A new command in this slot: opcode, NSID 1, no data; the I/O context stays. */
    FakeRequest reset(int opcode) {
        sqe.clear().opcode(opcode).flags(SubmissionQueueEntry.FLAGS_PSDT_SGL).commandId(7).nsid(1);
        cqe.clear();
        data = null;
        status = -1;
        completions.set(0);
        done = new CountDownLatch(1);
        return this;
    }

    FakeRequest slba(long slba) {
        sqe.cdw10And11(slba);
        return this;
    }

    FakeRequest cdw(int n, int value) {
        sqe.cdw(n, value);
        return this;
    }

    /** The data buffer the SGL describes: position 0, limit {@code length}, little-endian, direct. */
    FakeRequest data(int length) {
        data = ByteBuffer.allocateDirect(length).order(ByteOrder.LITTLE_ENDIAN);
        return this;
    }

    FakeRequest data(ByteBuffer buffer) {
        data = buffer.duplicate().order(ByteOrder.LITTLE_ENDIAN).clear().limit(buffer.limit());
        return this;
    }

    /** Waits (at most 10 s) for the completion and returns its status. */
    int awaitStatus() {
        try {
            if (!done.await(10, TimeUnit.SECONDS)) {
                throw new AssertionError("command did not complete within 10 s");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
        if (completions.get() != 1) {
            throw new AssertionError("completed " + completions.get() + " times");
        }
        return status;
    }

    int completions() {
        return completions.get();
    }

    @Override
    public TransportQueue queue() {
        return null;
    }

    @Override
    public SubmissionQueueEntry command() {
        return sqe;
    }

    @Override
    public CompletionQueueEntry response() {
        return cqe;
    }

    @Override
    public ByteBuffer data() {
        return data;
    }

    @Override
    public int dataLength() {
        return data == null ? 0 : data.limit();
    }

    @Override
    public long receivedNanos() {
        return 0;
    }

    /** The capsule order number a transport would give; tests set it for fused pairs. */
    private long sequence;

    @Override
    public long sequence() {
        return sequence;
    }

    public FakeRequest sequence(long sequence) {
        this.sequence = sequence;
        return this;
    }

    @Override
    public void complete(int nvmeStatus) {
        status = nvmeStatus;
        if (completions.incrementAndGet() > 1) {
            throw new AssertionError("completed twice: " + NvmeStatus.describe(nvmeStatus));
        }
        done.countDown();
    }

    @Override
    public int slot() {
        return 0;
    }
}
