package io.nvmeof4j.conformance;

import io.nvmeof4j.protocol.HostId;
import io.nvmeof4j.protocol.command.CompletionQueueEntry;
import io.nvmeof4j.protocol.command.NvmeStatus;
import io.nvmeof4j.protocol.command.SubmissionQueueEntry;
import io.nvmeof4j.protocol.fabrics.ConnectData;
import io.nvmeof4j.protocol.fabrics.ConnectResponse;
import io.nvmeof4j.protocol.spi.TransportAddress;
import io.nvmeof4j.protocol.spi.host.HostCommandCallback;
import io.nvmeof4j.protocol.spi.host.HostPollGroup;
import io.nvmeof4j.protocol.spi.host.HostQueue;
import io.nvmeof4j.protocol.spi.host.HostQueueOptions;
import io.nvmeof4j.protocol.spi.host.HostTransport;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The host role through the SPI only: a {@link HostTransport}, one host poll group on a {@link PollLoop}, and
 * queues opened on it with their Fabrics Connect. Commands are submitted on the poll-group thread, as the SPI
 * requires; the test thread waits for their completions with a bound.
 */
final class HostSide implements AutoCloseable {
    static final String HOST_NQN = "nqn.2014-08.org.nvmexpress:uuid:2b1d6a52-6c4e-4d3a-9c55-4e1a1c1d0f00";
    static final String SUBSYSTEM_NQN = "nqn.2024-01.io.nvmeof4j:conformance";
    static final HostId HOST_ID = new HostId(UUID.fromString("2b1d6a52-6c4e-4d3a-9c55-4e1a1c1d0f00"));

    final TransportUnderTest transportUnderTest;
    final HostTransport transport;
    final HostPollGroup group;
    final Duration timeout;

    HostSide(TransportUnderTest transportUnderTest, PollLoop loop) {
        this.transportUnderTest = transportUnderTest;
        this.transport = transportUnderTest.newHostTransport();
        this.group = transport.createPollGroup();
        this.timeout = transportUnderTest.timeout();
        loop.add(group);
    }

    /** Opens the admin queue and sends its Connect; the controller's CNTLID is {@link Queue#controllerId}. */
    Queue connectAdmin(TransportAddress address) throws Exception {
        return connect(address, 0, ConnectData.CNTLID_DYNAMIC, HostQueueOptions.admin(false, false, timeout));
    }

    /** Opens I/O queue {@code queueId} of controller {@code controllerId} and sends its Connect. */
    Queue connectIo(TransportAddress address, int queueId, int controllerId, int depth, int inCapsuleDataSize)
        throws Exception {
        return connect(address, queueId, controllerId, transportUnderTest.ioQueueOptions(depth, inCapsuleDataSize));
    }

    private Queue connect(TransportAddress address, int queueId, int controllerId, HostQueueOptions options)
        throws Exception {
        Queue queue = new Queue(queueId);
        queue.queue = transportUnderTest.connect(transport, group, address, options, queueId, controllerId,
            (q, reason) -> queue.closedReasons.add(reason));
        ByteBuffer data = ByteBuffer.allocateDirect(ConnectData.LENGTH).order(ByteOrder.LITTLE_ENDIAN);
        new ConnectData().wrap(data, 0).clear().hostId(HOST_ID).controllerId(controllerId)
            .subsystemNqn(SUBSYSTEM_NQN).hostNqn(HOST_NQN);
        Completion c = queue.execute(Commands.connect(queueId, options.depth() - 1), data, 0, ConnectData.LENGTH);
        if (c.status() != NvmeStatus.SUCCESS) {
            queue.queue.close("Connect failed");
            throw new AssertionError("Connect of queue " + queueId + " to " + address + " answered "
                + NvmeStatus.describe(c.status()));
        }
        queue.controllerId = ConnectResponse.controllerId(c.dw0());
        return queue;
    }

    @Override
    public void close() {
        transport.close();
    }

    /** A completion as the host saw it (copied out of the transport's flyweight). */
    record Completion(int submittedCid, int cid, int status, int dw0, int dw1, int sqId, int callbacks) {
        long result64() {
            return (dw0 & 0xFFFF_FFFFL) | ((long) dw1 << 32);
        }
    }

    /** One submitted command: its future completion and how many times its callback ran. */
    static final class Pending extends CompletableFuture<Completion> {
        final AtomicInteger callbacks = new AtomicInteger();
        volatile int cid = -1;
    }

    /** Completes each {@link Pending} from the callback: one long-lived callback object, as the SPI asks. */
    private static final HostCommandCallback CALLBACK = (CompletionQueueEntry cqe, Object context) -> {
        Pending p = (Pending) context;
        int n = p.callbacks.incrementAndGet();
        p.complete(new Completion(p.cid, cqe.commandId(), cqe.status(), cqe.dw0(), cqe.dw1(), cqe.sqId(), n));
    };

    /** One host queue with its Fabrics identity. */
    final class Queue {
        final int queueId;
        final List<String> closedReasons = new CopyOnWriteArrayList<>();
        HostQueue queue;
        int controllerId;

        Queue(int queueId) {
            this.queueId = queueId;
        }

        /**
         * Submits on the poll-group thread; the future completes with the command's completion. Submitting into a
         * full or closed queue fails the future with {@link IllegalStateException}.
         */
        Pending submit(SubmissionQueueEntry sqe, ByteBuffer data, int offset, int length) {
            Pending pending = new Pending();
            group.execute(() -> {
                try {
                    int cid = queue.submit(sqe, data, offset, length, CALLBACK, pending);
                    if (cid < 0) {
                        pending.completeExceptionally(new IllegalStateException("submit refused (queue "
                            + queueId + " full or closed)"));
                    } else {
                        pending.cid = cid; // before its callback: both run on this thread
                    }
                } catch (RuntimeException e) {
                    pending.completeExceptionally(e);
                }
            });
            return pending;
        }

        /** Submits and waits (bounded) for the completion. */
        Completion execute(SubmissionQueueEntry sqe, ByteBuffer data, int offset, int length) throws Exception {
            return await(submit(sqe, data, offset, length));
        }

        Completion execute(SubmissionQueueEntry sqe) throws Exception {
            return execute(sqe, null, 0, 0);
        }

        Completion await(Pending pending) throws Exception {
            try {
                return pending.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
            } catch (TimeoutException e) {
                throw new AssertionError("no completion within " + timeout + " on queue " + queueId + " ("
                    + queue.peer() + ")", e);
            } catch (ExecutionException e) {
                throw new AssertionError("submit on queue " + queueId + " failed: " + e.getCause(), e.getCause());
            }
        }

        void close(String reason) {
            queue.close(reason);
        }
    }
}
