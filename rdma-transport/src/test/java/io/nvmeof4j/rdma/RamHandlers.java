package io.nvmeof4j.rdma;

import io.nvmeof4j.protocol.command.NvmeStatus;
import io.nvmeof4j.protocol.command.SubmissionQueueEntry;
import io.nvmeof4j.protocol.spi.ConnectRefusedException;
import io.nvmeof4j.protocol.spi.QueueHandler;
import io.nvmeof4j.protocol.spi.QueueHandlerFactory;
import io.nvmeof4j.protocol.spi.Request;
import io.nvmeof4j.protocol.spi.TransportQueue;

import java.nio.ByteBuffer;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.LinkedBlockingQueue;

/**
 * A fake command layer for the RDMA state machine tests: Write (0x01) stores into RAM at SLBA × 512, Read (0x02)
 * returns it, anything else succeeds without data; every command on namespace {@link #FAILING_NSID} fails with Invalid
 * Namespace. Fabrics commands (0x7F) are a Connect: {@link TransportQueue#install} (whose refusal is the answer), then
 * {@link TransportQueue#connected}.
 * With {@link #hold} set, commands wait in {@link #held} for the test to complete them. With
 * {@link #completeDuringDispatch} above 1, commands wait until that many have arrived; the last one's onCommand then
 * completes them all, oldest first, on another thread and returns only once that thread is done, so every completion
 * lands between the queue's dispatch and its return from onCommand, each time.
 */
public final class RamHandlers implements QueueHandlerFactory {
    public static final int FAILING_NSID = 2;
    public final byte[] ram = new byte[4 << 20];
    final List<TransportQueue> opened = new CopyOnWriteArrayList<>();
    public final List<String> closed = new CopyOnWriteArrayList<>();
    final LinkedBlockingQueue<Request> held = new LinkedBlockingQueue<>();
    /** CIDs whose response SEND completed ({@link QueueHandler#onResponseSent}), in order. */
    final List<Integer> responsesSent = new CopyOnWriteArrayList<>();
    /** {@link Request#receivedNanos()} of each command taken, in order. */
    final List<Long> receivedNanos = new CopyOnWriteArrayList<>();
    public volatile boolean hold;
    volatile int completeDuringDispatch;
    /** CIDs in the order {@link Request#complete} was called for them by {@link #completeDuringDispatch}. */
    final List<Integer> completionOrder = new CopyOnWriteArrayList<>();
    /** {@link Request#slot()} of every command {@link #completeDuringDispatch} held, in arrival order. */
    final List<Integer> slots = new CopyOnWriteArrayList<>();

    @Override
    public QueueHandler open(TransportQueue queue) {
        opened.add(queue);
        return new QueueHandler() {
            @Override
            public void onResponseSent(Request request, long sentNanos) {
                responsesSent.add(request.command().commandId());
            }

            @Override
            public void onCommand(Request request) {
                receivedNanos.add(request.receivedNanos());
                if (hold) {
                    held.add(request);
                    return;
                }
                int together = completeDuringDispatch;
                if (together > 1) {
                    slots.add(request.slot());
                    held.add(request);
                    if (held.size() >= together) {
                        completeHeldOnAnotherThreadAndWait();
                    }
                    return;
                }
                request.complete(execute(request));
            }

            @Override
            public void onClosed(String reason) {
                closed.add(reason);
            }
        };
    }

    /** Completes every held command, oldest first, on a new thread, and waits (at most 5 s) until it is done. */
    private void completeHeldOnAnotherThreadAndWait() {
        List<Request> commands = new java.util.ArrayList<>();
        held.drainTo(commands);
        Thread backend = new Thread(() -> {
            for (Request r : commands) {
                int status = execute(r);
                completionOrder.add(r.command().commandId());
                r.complete(status);
            }
        }, "test-backend");
        backend.start();
        try {
            backend.join(5_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted waiting for the backend's completions", e);
        }
        if (backend.isAlive()) {
            throw new IllegalStateException("the backend did not complete " + commands.size() + " commands in 5 s");
        }
    }

    int execute(Request request) {
        SubmissionQueueEntry sqe = request.command();
        if (sqe.opcode() != 0x7F && sqe.nsid() == FAILING_NSID) {
            return NvmeStatus.INVALID_NAMESPACE | NvmeStatus.DNR;
        }
        ByteBuffer data = request.data();
        int at = (int) (sqe.cdw10And11() * 512);
        switch (sqe.opcode()) {
            case 0x7F: {
                // Connect as the target does it: install (the transport may refuse), then connected.
                int qid = sqe.cdw(10) >>> 16;
                int sqSize = (sqe.cdw(11) & 0xFFFF) + 1;
                try {
                    request.queue().install(qid, sqSize);
                } catch (ConnectRefusedException e) {
                    return e.status();
                }
                request.queue().connected(qid, sqSize, false);
                return NvmeStatus.SUCCESS;
            }
            case 0x01:
                data.get(0, ram, at, request.dataLength());
                return NvmeStatus.SUCCESS;
            case 0x02:
                data.put(0, ram, at, request.dataLength());
                return NvmeStatus.SUCCESS;
            default:
                return NvmeStatus.SUCCESS;
        }
    }
}
