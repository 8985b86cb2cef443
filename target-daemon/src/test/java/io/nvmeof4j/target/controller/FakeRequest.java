package io.nvmeof4j.target.controller;

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

/** In-memory {@link Request}: a 64-byte SQE, a 16-byte CQE, a data buffer; records the completion. */
public final class FakeRequest implements Request {
    private final TransportQueue queue;
    private final SubmissionQueueEntry sqe = new SubmissionQueueEntry();
    private final CompletionQueueEntry cqe = new CompletionQueueEntry();
    private final ByteBuffer data;
    private final int dataLength;
    private final AtomicInteger completions = new AtomicInteger();
    private final CountDownLatch done = new CountDownLatch(1);
    private volatile int status = -1;
    private final int slot;

    public FakeRequest(TransportQueue queue, int dataLength) {
        this.queue = queue;
        if (queue instanceof FakeQueue) {
            ((FakeQueue) queue).outstanding.incrementAndGet();
        }
        // Like a transport's slots: no two requests of a queue share one (tests keep several in flight).
        this.slot = queue instanceof FakeQueue ? ((FakeQueue) queue).nextSlot() : 0;
        this.sqe.wrap(ByteBuffer.allocate(SubmissionQueueEntry.LENGTH).order(ByteOrder.LITTLE_ENDIAN), 0);
        this.cqe.wrap(ByteBuffer.allocate(CompletionQueueEntry.LENGTH).order(ByteOrder.LITTLE_ENDIAN), 0);
        this.dataLength = dataLength;
        this.data = dataLength == 0 ? null : ByteBuffer.allocate(dataLength).order(ByteOrder.LITTLE_ENDIAN);
        if (data != null) {
            // "contents undefined on entry": make stale bytes visible to tests that check zero fill
            for (int i = 0; i < dataLength; i++) {
                data.put(i, (byte) 0xA5);
            }
        }
    }

    @Override
    public TransportQueue queue() {
        return queue;
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
        return dataLength;
    }

    @Override
    public long receivedNanos() {
        return receivedNanos;
    }

    /** Like a transport's: when the capsule arrived. */
    private long receivedNanos = System.nanoTime();
    /** The stamp the response is reported sent with; null: the time it is reported. */
    private Long sentNanos;

    /** Stamps the command and its response as a transport's round clocks would (tests of the latency meters). */
    public FakeRequest stamps(long receivedNanos, long sentNanos) {
        this.receivedNanos = receivedNanos;
        this.sentNanos = sentNanos;
        return this;
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
        if (completions.incrementAndGet() == 1) {
            status = nvmeStatus;
            cqe.status(nvmeStatus);
            if (queue instanceof FakeQueue) {
                ((FakeQueue) queue).outstanding.decrementAndGet();
            }
            done.countDown();
        }
        // Like a transport: the response goes out at once, and the handler hears it was sent.
        if (queue instanceof FakeQueue && ((FakeQueue) queue).handler() != null) {
            ((FakeQueue) queue).handler().onResponseSent(this, sentNanos != null ? sentNanos : System.nanoTime());
        }
    }

    @Override
    public int slot() {
        return slot;
    }

    public boolean isCompleted() {
        return completions.get() > 0;
    }

    public int completions() {
        return completions.get();
    }

    /** The status given to complete(), or -1 while pending. */
    public int status() {
        return status;
    }

    public int dw0() {
        return cqe.dw0();
    }

    public long result64() {
        return cqe.result64();
    }

    public boolean await(long timeout, TimeUnit unit) throws InterruptedException {
        return done.await(timeout, unit);
    }

    @Override
    public String toString() {
        return "FakeRequest[" + sqe + (isCompleted() ? " -> " + NvmeStatus.describe(status) : " pending") + "]";
    }
}
