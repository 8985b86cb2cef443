package io.nvmeof4j.rdma;

import io.nvmeof4j.protocol.buffer.OffHeapBufferPool;
import io.nvmeof4j.protocol.command.CompletionQueueEntry;
import io.nvmeof4j.protocol.command.NvmeStatus;
import io.nvmeof4j.protocol.command.SglDescriptor;
import io.nvmeof4j.protocol.command.SubmissionQueueEntry;
import io.nvmeof4j.protocol.spi.PortOptions;
import io.nvmeof4j.protocol.spi.Request;
import io.nvmeof4j.protocol.spi.TransportAddress;
import io.nvmeof4j.protocol.spi.TransportType;
import io.nvmeof4j.protocol.spi.AddressFamily;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Random;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/** The controller-side queue state machine against a fake queue pair playing the host. */
class RdmaControllerQueueTest {
    private static final PortOptions PORT = new PortOptions(4096, 128, 1 << 20);

    private FakeMemory memory;
    private OffHeapBufferPool pool;
    private RdmaPollGroup group;
    private RamHandlers handlers;
    private FakeQueuePair qp;
    private RdmaControllerQueue queue;
    private ByteBuffer hostMemory;
    private MemoryKeys hostKeys;
    private MemoryKeys queueKeys;
    private MemoryKeys poolKeys;
    private int cid = 1;

    @BeforeEach
    void setUp() {
        memory = new FakeMemory();
        ByteBuffer region = ByteBuffer.allocateDirect(8 << 20);
        pool = new OffHeapBufferPool(1 << 20, region);
        poolKeys = memory.register(region);
        group = new RdmaPollGroup(pool, new FakeWaiter(), null);
        group.poll(); // binds the reactor thread: this one
        handlers = new RamHandlers();
        hostMemory = ByteBuffer.allocateDirect(2 << 20).order(ByteOrder.LITTLE_ENDIAN);
        hostKeys = memory.register(hostMemory);
        open(1, 32);
    }

    private void open(int qid, int sqSize) {
        QueueSizing sizing = QueueSizing.of(CmConnectRequest.encode(qid, sqSize, sqSize, 1), PORT, 16, 16);
        ByteBuffer queueMemory = ByteBuffer.allocateDirect(RdmaQueueMemory.memoryBytes(sizing));
        queueKeys = memory.register(queueMemory);
        qp = new FakeQueuePair(memory);
        MemoryKeys keys = queueKeys;
        queue = new RdmaControllerQueue(group, qp, sizing, PORT, handlers,
            new TransportAddress(TransportType.RDMA, AddressFamily.IPV4, "10.0.2.15", "4420"), "10.0.2.15:50000",
            queueMemory, keys, poolKeys, () -> memory.deregister(keys));
        assertThat(queue.postInitialReceives()).isZero();
        assertThat(qp.postedReceives()).isEqualTo(sqSize);
        queue.onEstablished();
        assertThat(handlers.opened).containsExactly(queue);
    }

    private byte[] capsule(int opcode, long slba, int sglId, long address, int length, int key, byte[] inline) {
        ByteBuffer b = ByteBuffer.allocate(64 + (inline == null ? 0 : inline.length)).order(ByteOrder.LITTLE_ENDIAN);
        SubmissionQueueEntry sqe = new SubmissionQueueEntry().wrap(b, 0).clear();
        sqe.opcode(opcode).flags(SubmissionQueueEntry.FLAGS_PSDT_SGL).commandId(cid++).nsid(1);
        b.putLong(40, slba);
        SglDescriptor sgl = sqe.sgl1();
        sgl.id(sglId).address(address);
        if ((sglId >> 4) == SglDescriptor.TYPE_KEYED_DATA_BLOCK) {
            sgl.keyedLength(length).key(key);
        } else {
            sgl.length(length);
        }
        if (inline != null) {
            b.put(64, inline);
        }
        return b.array();
    }

    private CompletionQueueEntry lastResponse() {
        FakeQueuePair.Sent sent = qp.sent.get(qp.sent.size() - 1);
        assertThat(sent.bytes()).hasSize(16);
        return new CompletionQueueEntry().wrap(ByteBuffer.wrap(sent.bytes()).order(ByteOrder.LITTLE_ENDIAN), 0);
    }

    private static byte[] random(int n, long seed) {
        byte[] b = new byte[n];
        new Random(seed).nextBytes(b);
        return b;
    }

    @Test
    void shouldTakeInCapsuleWriteAndAnswerKeyedReadWithWriteBeforeResponse() {
        byte[] data = random(4096, 1);
        qp.deliver(capsule(0x01, 8, SglDescriptor.ID_IN_CAPSULE, 0, 4096, 0, data));
        group.poll();
        CompletionQueueEntry cqe = lastResponse();
        assertThat(cqe.status()).isEqualTo(NvmeStatus.SUCCESS);
        assertThat(cqe.commandId()).isEqualTo(1);
        assertThat(cqe.sqId()).isEqualTo(0); // no Connect yet
        assertThat(qp.sent.get(0).invalidateRkey()).isZero();
        assertThat(qp.postedReceives()).isEqualTo(32); // the receive holding the data was posted again

        qp.deliver(capsule(0x02, 8, SglDescriptor.ID_KEYED_INVALIDATE, hostKeys.address() + 4096, 4096,
            hostKeys.rkey(), null));
        group.poll();
        assertThat(lastResponse().status()).isEqualTo(NvmeStatus.SUCCESS);
        assertThat(qp.writes).isEqualTo(1);
        assertThat(qp.sent.get(1).invalidateRkey()).isEqualTo(hostKeys.rkey()); // SEND_WITH_INV for 0x4F
        byte[] back = new byte[4096];
        hostMemory.get(4096, back);
        assertThat(back).isEqualTo(data);
        group.poll();
        assertThat(pool.buffersInUse()).isZero();
        assertThat(queue.commandsOutstanding()).isZero();
        // Each response SEND completed once: the handler heard of both (metrics end there).
        assertThat(handlers.responsesSent).hasSize(2).startsWith(1);
    }

    /**
     * What a round of commands needs posted (their receives again, their data and responses) leaves in one flush:
     * one JNI crossing with one ibv_post_send (one system call on Soft-RoCE), however many commands the round took.
     */
    @Test
    void shouldPostARoundsReceivesAndResponsesInOneFlush() {
        byte[] data = random(8 * 4096, 3);
        System.arraycopy(data, 0, handlers.ram, 0, data.length);
        int before = qp.flushes;
        for (int i = 0; i < 8; i++) {
            qp.deliver(capsule(0x02, i * 8L, SglDescriptor.ID_KEYED_ADDRESS, hostKeys.address() + i * 4096L, 4096,
                hostKeys.rkey(), null));
        }
        assertThat(qp.postedReceives()).isEqualTo(24);
        group.poll();
        assertThat(qp.flushes - before).as("posts in the round").isEqualTo(1);
        assertThat(qp.postedReceives()).isEqualTo(32);
        assertThat(qp.stagedReceives()).isZero();
        assertThat(qp.writes).isEqualTo(8);
        assertThat(qp.sent).hasSize(8);
        for (FakeQueuePair.Sent sent : qp.sent) {
            CompletionQueueEntry cqe = new CompletionQueueEntry().wrap(
                ByteBuffer.wrap(sent.bytes()).order(ByteOrder.LITTLE_ENDIAN), 0);
            assertThat(cqe.status()).isEqualTo(NvmeStatus.SUCCESS);
        }
        byte[] back = new byte[data.length];
        hostMemory.get(0, back);
        assertThat(back).isEqualTo(data);
        group.poll(); // the SEND completions: nothing new to post
        assertThat(qp.flushes - before).isEqualTo(1);
        assertThat(queue.commandsOutstanding()).isZero();
        assertThat(pool.buffersInUse()).isZero();
        // one clock read for the round: the 8 capsules polled together carry its time as their arrival
        assertThat(handlers.receivedNanos).hasSize(8).containsOnly(handlers.receivedNanos.get(0));
        long firstRound = handlers.receivedNanos.get(0);
        qp.deliver(capsule(0x02, 0, SglDescriptor.ID_KEYED_ADDRESS, hostKeys.address(), 4096, hostKeys.rkey(), null));
        group.poll();
        assertThat(handlers.receivedNanos).hasSize(9);
        assertThat(handlers.receivedNanos.get(8)).isGreaterThan(firstRound);
    }

    /**
     * In-capsule data lies on a page boundary in every receive, whatever the address of the queue's memory, so an
     * O_DIRECT write straight from it is accepted on any device with logical blocks up to 4 KiB.
     */
    @Test
    void shouldPlaceEveryReceivesInCapsuleDataOnAPageBoundary() {
        for (long address : new long[] {0x10_0000_0000L, 0x7f00_0000_1010L, 0x7f00_0000_0fc0L, 0x7f00_0000_0fc1L}) {
            int base = RdmaQueueMemory.receiveBase(address);
            assertThat(base).isBetween(0, RdmaQueueMemory.DATA_ALIGNMENT - 1);
            assertThat((address + base + 64) % RdmaQueueMemory.DATA_ALIGNMENT).as("address %x", address).isZero();
        }
        QueueSizing sizing = QueueSizing.of(CmConnectRequest.encode(1, 32, 32, 1), PORT, 16, 16);
        assertThat(sizing.inCapsuleDataSize()).isPositive();
        for (int i = 0; i < sizing.receiveQueueSize(); i++) {
            assertThat(queue.inCapsuleDataAddress(i) % RdmaQueueMemory.DATA_ALIGNMENT).as("receive %d", i).isZero();
        }
        long end = queue.inCapsuleDataAddress(sizing.receiveQueueSize() - 1) + sizing.inCapsuleDataSize();
        assertThat(end).as("last receive inside the queue memory")
            .isLessThanOrEqualTo(queueKeys.address() + RdmaQueueMemory.memoryBytes(sizing)
                - sizing.contexts() * 80L);
    }

    @Test
    void shouldFetchKeyedWriteDataByRdmaReadBeforeExecuting() {
        byte[] data = random(1 << 20, 2);
        hostMemory.put(0, data);
        qp.deliver(capsule(0x01, 0, SglDescriptor.ID_KEYED_ADDRESS, hostKeys.address(), 1 << 20, hostKeys.rkey(),
            null));
        group.poll();
        assertThat(qp.reads).isEqualTo(1);
        group.poll(); // the READ completion: execute, respond
        assertThat(lastResponse().status()).isEqualTo(NvmeStatus.SUCCESS);
        assertThat(qp.sent.get(0).invalidateRkey()).isZero(); // 0x40: plain SEND
        byte[] stored = new byte[1 << 20];
        System.arraycopy(handlers.ram, 0, stored, 0, stored.length);
        assertThat(stored).isEqualTo(data);
        group.poll();
        assertThat(pool.buffersInUse()).isZero();
    }

    @Test
    void shouldRefuseBadSglsWithTheirStatus() {
        // in-capsule data larger than the queue's inline size: SGL offset invalid (nvmet_rdma_map_sgl_inline)
        qp.deliver(capsule(0x01, 0, SglDescriptor.ID_IN_CAPSULE, 0, 8192, 0, null));
        group.poll();
        assertThat(lastResponse().status()).isEqualTo(NvmeStatus.SGL_OFFSET_INVALID | NvmeStatus.DNR);
        // keyed length above MDTS
        qp.deliver(capsule(0x02, 0, SglDescriptor.ID_KEYED_ADDRESS, hostKeys.address(), (1 << 20) + 4096,
            hostKeys.rkey(), null));
        group.poll();
        assertThat(lastResponse().status()).isEqualTo(NvmeStatus.SGL_DATA_LENGTH_INVALID | NvmeStatus.DNR);
        // the TCP transport data block means nothing on RDMA
        qp.deliver(capsule(0x02, 0, SglDescriptor.ID_TCP_TRANSPORT, 0, 4096, 0, null));
        group.poll();
        assertThat(lastResponse().status()).isEqualTo(NvmeStatus.SGL_DESCRIPTOR_TYPE_INVALID | NvmeStatus.DNR);
        // in-capsule data on a read
        qp.deliver(capsule(0x02, 0, SglDescriptor.ID_IN_CAPSULE, 0, 512, 0, new byte[512]));
        group.poll();
        assertThat(lastResponse().status()).isEqualTo(NvmeStatus.INVALID_FIELD | NvmeStatus.DNR);
        group.poll();
        assertThat(queue.commandsOutstanding()).isZero();
        assertThat(qp.postedReceives()).isEqualTo(32);
    }

    @Test
    void shouldReportSqHeadAndQueueIdAfterConnect() {
        // Fabrics Connect: QID 1 at byte 42, SQSIZE 31 at byte 44, keyed data (1024 bytes) fetched by RDMA READ
        byte[] connect = capsule(0x7F, 0, SglDescriptor.ID_KEYED_ADDRESS, hostKeys.address(), 1024, hostKeys.rkey(),
            null);
        ByteBuffer b = ByteBuffer.wrap(connect).order(ByteOrder.LITTLE_ENDIAN);
        b.put(4, (byte) 0x01).putShort(40, (short) 0).putShort(42, (short) 1).putShort(44, (short) 31);
        b.putLong(40, 0).putShort(42, (short) 1).putShort(44, (short) 31);
        qp.deliver(connect);
        group.poll();
        group.poll();
        assertThat(queue.queueId()).isEqualTo(1);
        qp.deliver(capsule(0x00, 0, 0, 0, 0, 0, null));
        group.poll();
        CompletionQueueEntry cqe = lastResponse();
        assertThat(cqe.sqId()).isEqualTo(1);
        assertThat(cqe.sqHead()).isEqualTo(2);
    }

    /** Wire reference 4: the Connect's QID must be the one the CM request's private data opened the queue pair for. */
    @Test
    void shouldRefuseAConnectWhoseQidDiffersFromTheCmRequest() {
        // The queue pair was opened for QID 1; the Connect asks for QID 2.
        byte[] connect = capsule(0x7F, 0, SglDescriptor.ID_KEYED_ADDRESS, hostKeys.address(), 1024, hostKeys.rkey(),
            null);
        ByteBuffer b = ByteBuffer.wrap(connect).order(ByteOrder.LITTLE_ENDIAN);
        b.put(4, (byte) 0x01).putLong(40, 0).putShort(42, (short) 2).putShort(44, (short) 31);
        qp.deliver(connect);
        group.poll();
        group.poll();
        CompletionQueueEntry cqe = lastResponse();
        assertThat(cqe.status()).isEqualTo(NvmeStatus.FABRICS_CONNECT_INVALID_PARAMETERS | NvmeStatus.DNR);
        assertThat(queue.queueId()).as("still unconnected").isEqualTo(-1);
        assertThat(handlers.closed).isEmpty(); // refused, not torn down: the host may send the right Connect
        group.poll();
        assertThat(pool.buffersInUse()).isZero();
        assertThat(queue.commandsOutstanding()).isZero();
    }

    /**
     * Issue 12: a command completed on another thread while the reactor is still inside the handler's onCommand moves
     * on through its completion only (the poll group's inbox). The step function used to look at the state again after
     * the dispatch: it then posted that command's response ahead of commands completed before it (and before the
     * completing thread had written the status), and the inbox moved the command a second time. Here every completion
     * lands in that window, each time: the handler completes a round's four commands, oldest first, on another thread
     * during the last one's dispatch and waits for that thread. Each command gets exactly one response SEND, with the
     * status the backend gave it, in the order the completions happened; the same contexts serve the next rounds.
     */
    @Test
    void shouldAnswerCommandsCompletedDuringTheirDispatchOnceEachInCompletionOrder() {
        byte[] stored = random(4096, 9);
        qp.deliver(capsule(0x01, 8, SglDescriptor.ID_IN_CAPSULE, 0, 4096, 0, stored));
        group.poll();
        assertThat(lastResponse().status()).isEqualTo(NvmeStatus.SUCCESS);
        group.poll();
        int rounds = 3;
        int perRound = 4;
        handlers.completeDuringDispatch = perRound;
        java.util.List<Integer> batched = new java.util.ArrayList<>();
        java.util.List<java.util.Set<Integer>> slotsByRound = new java.util.ArrayList<>();
        for (int round = 0; round < rounds; round++) {
            int first = cid;
            int slotsBefore = handlers.slots.size();
            int sentBefore = qp.sent.size();
            hostMemory.put(0, new byte[4096]).put(8192, new byte[4096]);
            // A read, a command the backend fails, a flush, a read: arriving together.
            qp.deliver(capsule(0x02, 8, SglDescriptor.ID_KEYED_ADDRESS, hostKeys.address(), 4096, hostKeys.rkey(),
                null));
            byte[] failing = capsule(0x00, 0, 0, 0, 0, 0, null);
            ByteBuffer.wrap(failing).order(ByteOrder.LITTLE_ENDIAN).putInt(4, RamHandlers.FAILING_NSID);
            qp.deliver(failing);
            qp.deliver(capsule(0x00, 0, 0, 0, 0, 0, null));
            qp.deliver(capsule(0x02, 8, SglDescriptor.ID_KEYED_ADDRESS, hostKeys.address() + 8192, 4096,
                hostKeys.rkey(), null));
            group.poll(); // the four capsules; the fourth's dispatch completes all four on the other thread
            group.poll(); // anything still to post, and the SEND completions: the contexts are free again

            assertThat(qp.sent).as("round %d: one response per command", round).hasSize(sentBefore + perRound);
            int[] expectedStatus = {NvmeStatus.SUCCESS, NvmeStatus.INVALID_NAMESPACE | NvmeStatus.DNR,
                NvmeStatus.SUCCESS, NvmeStatus.SUCCESS};
            for (int i = 0; i < perRound; i++) {
                byte[] bytes = qp.sent.get(sentBefore + i).bytes();
                assertThat(bytes).hasSize(16);
                CompletionQueueEntry cqe = new CompletionQueueEntry()
                    .wrap(ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN), 0);
                assertThat(cqe.commandId()).as("round %d, response %d", round, i).isEqualTo(first + i);
                assertThat(cqe.status()).as("status of CID %d", first + i).isEqualTo(expectedStatus[i]);
                batched.add(first + i);
            }
            byte[] back = new byte[4096];
            hostMemory.get(0, back);
            assertThat(back).as("round %d: first read's data", round).isEqualTo(stored);
            hostMemory.get(8192, back);
            assertThat(back).as("round %d: last read's data", round).isEqualTo(stored);
            slotsByRound.add(new java.util.TreeSet<>(handlers.slots.subList(slotsBefore, handlers.slots.size())));
        }
        group.poll();
        assertThat(handlers.completionOrder).as("completed oldest first").containsExactlyElementsOf(batched);
        assertThat(handlers.responsesSent).filteredOn(batched::contains).as("one response SEND completed per command")
            .containsExactlyElementsOf(batched);
        // The free list is LIFO: the contexts the first round freed serve the next rounds.
        assertThat(slotsByRound.get(0)).hasSize(perRound);
        assertThat(slotsByRound).as("contexts per round").allMatch(slotsByRound.get(0)::equals);
        assertThat(queue.commandsOutstanding()).isZero();
        assertThat(pool.buffersInUse()).isZero();
        assertThat(qp.postedReceives()).isEqualTo(32);
        assertThat(handlers.closed).isEmpty();
    }

    @Test
    void shouldTearDownOnShortCapsuleReturningEveryReceive() {
        qp.deliver(new byte[20]);
        group.poll();
        assertThat(handlers.closed).hasSize(1);
        assertThat(handlers.closed.get(0)).contains("20 bytes");
        assertThat(qp.disconnected).isTrue();
        group.poll(); // flushed receives come back
        assertThat(qp.destroyed).isTrue();
        assertThat(group.queueCount()).isZero();
        assertThat(memory.registrations()).isEqualTo(2); // pool region + host memory: the queue's is gone
    }

    @Test
    void shouldReleaseBuffersOfCommandsCompletingAfterDisconnect() throws Exception {
        handlers.hold = true;
        qp.deliver(capsule(0x02, 0, SglDescriptor.ID_KEYED_ADDRESS, hostKeys.address(), 131072, hostKeys.rkey(),
            null));
        qp.deliver(capsule(0x01, 0, SglDescriptor.ID_KEYED_ADDRESS, hostKeys.address(), 131072, hostKeys.rkey(),
            null));
        group.poll();
        group.poll();
        assertThat(handlers.held).hasSize(2);
        assertThat(pool.buffersInUse()).isEqualTo(2);
        queue.disconnect("keep-alive expired");
        group.poll();
        group.poll();
        assertThat(handlers.closed).containsExactly("keep-alive expired");
        assertThat(qp.destroyed).isTrue();
        assertThat(queue.commandsOutstanding()).isEqualTo(2);
        int sentBefore = qp.sent.size();
        Thread other = new Thread(() -> {
            Request r;
            while ((r = handlers.held.poll()) != null) {
                r.complete(NvmeStatus.SUCCESS);
            }
        });
        other.start();
        other.join(TimeUnit.SECONDS.toMillis(5));
        group.poll(); // the hand-over from the other thread
        assertThat(pool.buffersInUse()).isZero();
        assertThat(queue.commandsOutstanding()).isZero();
        assertThat(qp.sent).hasSize(sentBefore); // completed into nothing
    }

    @Test
    void shouldCloseOnRdmaReadErrorAndRecycleTheCommand() {
        qp.failNextRead = 10; // remote access error
        qp.deliver(capsule(0x01, 0, SglDescriptor.ID_KEYED_ADDRESS, hostKeys.address(), 8192, hostKeys.rkey(),
            null));
        group.poll();
        group.poll();
        assertThat(handlers.closed).hasSize(1);
        assertThat(handlers.closed.get(0)).contains("RDMA READ failed: remote access error");
        group.poll();
        assertThat(qp.destroyed).isTrue();
        assertThat(pool.buffersInUse()).isZero();
        assertThat(queue.commandsOutstanding()).isZero();
    }

    @Test
    void shouldParkCommandsWhenThePoolIsDryAndServeThemInOrder() {
        // take every 1 MiB buffer the 8 MiB region can give, then ask for one more
        java.util.List<ByteBuffer> taken = new java.util.ArrayList<>();
        ByteBuffer b;
        while ((b = pool.acquire(1 << 20)) != null) {
            taken.add(b);
        }
        qp.deliver(capsule(0x02, 0, SglDescriptor.ID_KEYED_ADDRESS, hostKeys.address(), 1 << 20, hostKeys.rkey(),
            null));
        group.poll();
        assertThat(qp.sent).isEmpty();
        assertThat(group.bufferWaits()).as("commands that waited for a buffer").isEqualTo(1);
        pool.release(taken.remove(0));
        group.poll();
        assertThat(lastResponse().status()).isEqualTo(NvmeStatus.SUCCESS);
        taken.forEach(pool::release);
        group.poll();
        assertThat(pool.buffersInUse()).isZero();
    }

    /**
     * A queue the CM accepted but that never got ESTABLISHED is the poll group's too: closing the group (daemon
     * shutdown stops the reactors before it closes the transport) destroys its queue pair and deregisters its memory.
     */
    @Test
    void shouldDestroyAnAcceptedButNotEstablishedQueueWhenItsGroupCloses() {
        QueueSizing sizing = QueueSizing.of(CmConnectRequest.encode(2, 32, 32, 1), PORT, 16, 16);
        ByteBuffer acceptedMemory = ByteBuffer.allocateDirect(RdmaQueueMemory.memoryBytes(sizing));
        MemoryKeys keys = memory.register(acceptedMemory);
        FakeQueuePair acceptedQp = new FakeQueuePair(memory);
        RdmaControllerQueue accepted = new RdmaControllerQueue(group, acceptedQp, sizing, PORT, handlers,
            new TransportAddress(TransportType.RDMA, AddressFamily.IPV4, "10.0.2.15", "4420"), "10.0.2.15:50001",
            acceptedMemory, keys, poolKeys, () -> memory.deregister(keys));
        assertThat(accepted.postInitialReceives()).isZero();
        group.adopt(accepted); // what the listener does right after rdma_accept
        group.poll();
        assertThat(group.acceptedCount()).isEqualTo(1);
        assertThat(group.queueCount()).as("only the established queue is polled").isEqualTo(1);
        assertThat(memory.registrations()).isEqualTo(4); // pool region, host memory, two queues

        group.close();
        assertThat(acceptedQp.destroyed).isTrue();
        assertThat(qp.destroyed).isTrue();
        assertThat(memory.registrations()).as("both queues' memory deregistered").isEqualTo(2);
        assertThat(handlers.opened).as("the accepted queue never reached the command layer").containsExactly(queue);
    }
}
