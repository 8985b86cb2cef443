package io.nvmeof4j.tcp;

import io.nvmeof4j.protocol.command.NvmeStatus;
import io.nvmeof4j.protocol.command.SubmissionQueueEntry;
import io.nvmeof4j.protocol.spi.ConnectRefusedException;
import io.nvmeof4j.protocol.spi.QueueHandler;
import io.nvmeof4j.protocol.spi.QueueHandlerFactory;
import io.nvmeof4j.protocol.spi.Request;
import io.nvmeof4j.protocol.spi.TransportQueue;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.List;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A fake command layer for transport tests: Fabrics Connect sets the queue up; Write stores into RAM, Read
 * returns what is stored (512-byte LBAs, namespace 1); namespace 2 fails every command with Invalid Namespace.
 * Commands complete inline on the reactor, on a backend thread, or are held for the test to complete.
 */
final class RamQueueHandlerFactory implements QueueHandlerFactory, AutoCloseable {
    static final int LBA_SIZE = 512;
    static final int FAILING_NSID = 2;
    static final int CNTLID = 1;
    /** A vendor opcode whose onCommand throws, to test the transport's reaction to a broken handler. */
    static final int THROWING_OPCODE = 0x81;

    /**
     * INLINE: complete on the reactor inside onCommand. BACKEND_THREAD: complete on an executor thread.
     * BACKEND_QUEUE: same, through a preallocated queue (nothing allocated on the reactor). HELD: the test completes.
     * COMPLETED_DURING_DISPATCH: held until {@link #batch} commands have arrived; the last one's onCommand then
     * completes them all, oldest first, on the backend thread and returns only once that thread is done, so every
     * completion lands between the transport's dispatch and its return from onCommand, each time.
     */
    enum Mode { INLINE, BACKEND_THREAD, BACKEND_QUEUE, HELD, COMPLETED_DURING_DISPATCH }

    /** What the handler saw of one command. */
    record Seen(int opcode, int commandId, int dataLength, String thread, boolean dataPresent, int slot) { }

    final ByteBuffer ram = ByteBuffer.allocateDirect(8 << 20).order(ByteOrder.LITTLE_ENDIAN);
    final List<TransportQueue> opened = new CopyOnWriteArrayList<>();
    final List<String> closed = new CopyOnWriteArrayList<>();
    final List<Seen> seen = new CopyOnWriteArrayList<>();
    /** CIDs whose responses the transport reported sent ({@link QueueHandler#onResponseSent}), in order. */
    final List<Integer> responsesSent = new CopyOnWriteArrayList<>();
    /** What {@link QueueHandler#onResponseSent} reported, with the command's received stamp, in order. */
    final List<Stamps> sentStamps = new CopyOnWriteArrayList<>();

    /** One response's stamps. */
    record Stamps(int commandId, long receivedNanos, long sentNanos) { }
    final LinkedBlockingQueue<Request> held = new LinkedBlockingQueue<>();
    /** CIDs in the order {@link Request#complete} was called for them. */
    final List<Integer> completionOrder = new CopyOnWriteArrayList<>();
    /** {@link Mode#COMPLETED_DURING_DISPATCH}: how many commands are completed together. */
    volatile int batch = 1;
    final AtomicInteger completionFailures = new AtomicInteger();
    /** Refusals the transport reported ({@link QueueHandlerFactory#onConnectionRefused}), in order. */
    final List<String> refusals = new CopyOnWriteArrayList<>();
    /** Connects the transport refused at {@link TransportQueue#install}, in order. */
    final List<ConnectRefusedException> connectRefusals = new CopyOnWriteArrayList<>();
    volatile Mode mode = Mode.INLINE;
    volatile boolean recording = true;
    private final ArrayBlockingQueue<Request> backendQueue = new ArrayBlockingQueue<>(4096);
    private volatile Thread backendQueueThread;
    private final ExecutorService backend = Executors.newSingleThreadExecutor(r -> {
        Thread t = new Thread(r, "test-backend");
        t.setDaemon(true);
        return t;
    });

    @Override
    public void onConnectionRefused(io.nvmeof4j.protocol.spi.TransportType transport, String peer,
                                    io.nvmeof4j.protocol.spi.PendingConnections.Refusal reason) {
        refusals.add(reason.name());
    }

    List<String> refusals() {
        return refusals;
    }

    @Override
    public QueueHandler open(TransportQueue queue) {
        opened.add(queue);
        return new QueueHandler() {
            @Override
            public void onResponseSent(Request request, long sentNanos) {
                if (recording) {
                    responsesSent.add(request.command().commandId());
                    sentStamps.add(new Stamps(request.command().commandId(), request.receivedNanos(), sentNanos));
                }
            }

            @Override
            public void onCommand(Request request) {
                if (request.command().opcode() == THROWING_OPCODE) {
                    throw new IllegalStateException("handler bug on purpose");
                }
                if (recording) {
                    SubmissionQueueEntry sqe = request.command();
                    seen.add(new Seen(sqe.opcode(), sqe.commandId(), request.dataLength(),
                        Thread.currentThread().getName(), request.data() != null, request.slot()));
                }
                switch (mode) {
                    case INLINE:
                        execute(request);
                        break;
                    case BACKEND_THREAD:
                        backend.execute(() -> execute(request));
                        break;
                    case BACKEND_QUEUE:
                        if (!backendQueue.offer(request)) {
                            throw new IllegalStateException("backend queue full");
                        }
                        break;
                    case COMPLETED_DURING_DISPATCH:
                        held.add(request);
                        if (held.size() >= batch) {
                            completeHeldOnBackendAndWait();
                        }
                        break;
                    default:
                        held.add(request);
                        break;
                }
            }

            @Override
            public void onClosed(String reason) {
                closed.add(reason);
            }
        };
    }

    /** Runs a command against the RAM disk and completes it (any thread). */
    void execute(Request request) {
        SubmissionQueueEntry sqe = request.command();
        int status = NvmeStatus.SUCCESS;
        if (sqe.isFabrics()) {
            if (sqe.fabricsCommandType() == 0x01) { // Connect
                int qid = (sqe.cdw10() >>> 16) & 0xFFFF;
                int sqSize = (sqe.cdw11() & 0xFFFF) + 1;
                boolean flowControlDisabled = ((sqe.cdw11() >>> 16) & 0x04) != 0;
                try {
                    // As the daemon's Connect: the transport sets the queue up (and may refuse), then it is connected.
                    request.queue().install(qid, sqSize);
                    request.queue().connected(qid, sqSize, flowControlDisabled);
                    request.response().dw0(CNTLID);
                } catch (ConnectRefusedException e) {
                    connectRefusals.add(e);
                    onConnectionRefused(request.queue().transportType(), request.queue().peer(), e.reason());
                    status = e.status();
                }
            }
        } else if (sqe.nsid() == FAILING_NSID) {
            status = NvmeStatus.INVALID_NAMESPACE | NvmeStatus.DNR;
        } else {
            long offset = sqe.cdw10And11() * LBA_SIZE;
            int length = request.dataLength();
            switch (sqe.opcode()) {
                case 0x01: // Write
                    ram.put((int) offset, request.data(), 0, length);
                    break;
                case 0x02: // Read
                    request.data().put(0, ram, (int) offset, length);
                    break;
                default:
                    break;
            }
        }
        if (recording) {
            completionOrder.add(sqe.commandId());
        }
        try {
            request.complete(status);
        } catch (RuntimeException e) {
            completionFailures.incrementAndGet();
            throw e;
        }
    }

    /** Completes every held command, oldest first, on the backend thread, and waits (at most 5 s) until it is done. */
    private void completeHeldOnBackendAndWait() {
        List<Request> commands = new java.util.ArrayList<>();
        held.drainTo(commands);
        java.util.concurrent.Future<?> done = backend.submit(() -> commands.forEach(this::execute));
        try {
            done.get(5, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted waiting for the backend's completions", e);
        } catch (java.util.concurrent.ExecutionException | java.util.concurrent.TimeoutException e) {
            throw new IllegalStateException("the backend did not complete " + commands.size() + " commands in 5 s", e);
        }
    }

    /** Completes the oldest held command, waiting up to 5 s for one; returns its CID. */
    int completeHeld() throws InterruptedException {
        Request request = held.poll(5, TimeUnit.SECONDS);
        if (request == null) {
            throw new AssertionError("no command reached the handler within 5 s");
        }
        int cid = request.command().commandId();
        execute(request);
        return cid;
    }

    /** Starts the thread serving {@link Mode#BACKEND_QUEUE}. */
    void startBackendQueue() {
        Thread t = new Thread(() -> {
            try {
                while (!Thread.currentThread().isInterrupted()) {
                    execute(backendQueue.take());
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }, "test-backend-queue");
        t.setDaemon(true);
        t.start();
        backendQueueThread = t;
    }

    @Override
    public void close() {
        backend.shutdownNow();
        Thread t = backendQueueThread;
        if (t != null) {
            t.interrupt();
        }
    }
}
