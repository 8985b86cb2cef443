package io.nvmeof4j.rdma.host;

import io.nvmeof4j.protocol.buffer.OffHeapBufferPool;
import io.nvmeof4j.protocol.command.CompletionQueueEntry;
import io.nvmeof4j.protocol.command.SubmissionQueueEntry;
import io.nvmeof4j.protocol.spi.PortOptions;
import io.nvmeof4j.protocol.spi.TransportAddress;
import io.nvmeof4j.protocol.spi.host.HostCommandCallback;
import io.nvmeof4j.protocol.spi.host.HostStatus;
import io.nvmeof4j.rdma.CmConnectRequest;
import io.nvmeof4j.rdma.ControllerEnd;
import io.nvmeof4j.rdma.FakeMemory;
import io.nvmeof4j.rdma.FakeQueuePair;
import io.nvmeof4j.rdma.FakeWaiter;
import io.nvmeof4j.rdma.MemoryKeys;
import io.nvmeof4j.protocol.spi.TransportType;
import io.nvmeof4j.protocol.spi.AddressFamily;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The host queue state machine against our controller queue state machine, joined by a fake RC connection: capsules
 * and responses cross as SENDs, data by the controller's RDMA READ/WRITE on the host's registered memory.
 */
class RdmaHostQueueTest {
    private static final PortOptions PORT = new PortOptions(4096, 128, 1 << 20);

    private final FakeMemory memory = new FakeMemory();
    private final List<String> closedReasons = new ArrayList<>();
    private final List<int[]> completions = new ArrayList<>();
    private final HostCommandCallback record = (cqe, ctx) -> completions.add(new int[] {cqe.commandId(), cqe.status()});
    private ControllerEnd controller;
    private RdmaHostPollGroup group;
    private RdmaHostQueue queue;
    private FakeQueuePair hostQp;
    private RegistrationCache cache;

    private void open(int qid, int depth, int inCapsule) {
        controller = new ControllerEnd(memory, CmConnectRequest.encode(qid, depth, depth, 1), PORT);
        controller.establish();
        group = new RdmaHostPollGroup(new FakeWaiter());
        group.poll();
        MemoryRegistrar registrar = new MemoryRegistrar() {
            @Override
            public MemoryKeys register(ByteBuffer buffer) throws IOException {
                return memory.register(buffer);
            }

            @Override
            public void deregister(MemoryKeys keys) {
                memory.deregister(keys);
            }
        };
        cache = new RegistrationCache(registrar, 64 << 20, 16);
        ByteBuffer bounceRegion = ByteBuffer.allocateDirect(4 << 20);
        HostMemory hostMemory = new HostMemory(cache, new OffHeapBufferPool(1 << 20, bounceRegion),
            memory.register(bounceRegion));
        hostQp = new FakeQueuePair(memory);
        FakeQueuePair.pair(hostQp, controller.qp);
        ByteBuffer queueMemory = ByteBuffer.allocateDirect(RdmaHostQueue.memoryBytes(depth, inCapsule, depth));
        MemoryKeys keys = memory.register(queueMemory);
        queue = new RdmaHostQueue(group, hostMemory, hostQp,
            new TransportAddress(TransportType.RDMA, AddressFamily.IPV4, "10.0.2.15", "4420"), "10.0.2.15:4420",
            depth, inCapsule, depth, queueMemory, keys, (q, reason) -> closedReasons.add(reason),
            () -> memory.deregister(keys));
        assertThat(queue.postInitialReceives()).isZero();
        group.register(queue);
    }

    private void pump() {
        for (int i = 0; i < 10; i++) {
            controller.group.poll();
            group.poll();
        }
    }

    private static SubmissionQueueEntry sqe(int opcode, long slba) {
        SubmissionQueueEntry sqe = new SubmissionQueueEntry().wrap(ByteBuffer.allocateDirect(64)
            .order(ByteOrder.LITTLE_ENDIAN), 0).clear();
        sqe.opcode(opcode).flags(SubmissionQueueEntry.FLAGS_PSDT_SGL).nsid(1).cdw10And11(slba);
        return sqe;
    }

    private static ByteBuffer randomDirect(int n, long seed) {
        byte[] b = new byte[n];
        new Random(seed).nextBytes(b);
        ByteBuffer buffer = ByteBuffer.allocateDirect(n);
        buffer.put(0, b);
        return buffer;
    }

    @Test
    void shouldConnectAdminQueueWithKeyedConnectData() {
        open(0, 32, 0);
        SubmissionQueueEntry connect = sqe(0x7F, 0);
        connect.buffer().put(4, (byte) 0x01); // FCTYPE Connect
        connect.buffer().putShort(42, (short) 0).putShort(44, (short) 31);
        ByteBuffer data = ByteBuffer.allocateDirect(1024);
        int cid = queue.submit(connect, data, 0, 1024, record, null);
        assertThat(cid).isPositive();
        pump();
        assertThat(completions).hasSize(1);
        assertThat(completions.get(0)).containsExactly(cid, 0);
        assertThat(controller.queueId()).isZero();
        assertThat(hostQp.sent.get(0).bytes()).hasSize(64); // never in-capsule data on the admin queue
        assertThat(controller.qp.reads).isEqualTo(1); // Connect data fetched by RDMA READ
        assertThat(queue.commandsOutstanding()).isZero();
    }

    @Test
    void shouldMoveDataInCapsuleAndByKeyedSglsAtEverySize() {
        open(1, 32, 4096);
        int[] sizes = {4096, 131072, 1 << 20};
        long slba = 0;
        for (int size : sizes) {
            ByteBuffer out = randomDirect(size, size);
            ByteBuffer in = ByteBuffer.allocateDirect(size);
            int w = queue.submit(sqe(0x01, slba), out, 0, size, record, null);
            pump();
            int r = queue.submit(sqe(0x02, slba), in, 0, size, record, null);
            pump();
            assertThat(completions).extracting(c -> c[0]).contains(w, r);
            assertThat(completions).allSatisfy(c -> assertThat(c[1]).isZero());
            assertThat(in).isEqualTo(out.clear());
            slba += size / 512 + 8;
        }
        // 4 KiB write in-capsule: SQE + data in one SEND; the others keyed 0x40 (never 0x4F: long-lived memory)
        assertThat(hostQp.sent.get(0).bytes()).hasSize(64 + 4096);
        assertThat(controller.qp.sent).allSatisfy(s -> assertThat(s.invalidateRkey()).isZero());
        assertThat(controller.qp.writes).isEqualTo(3);
        assertThat(controller.qp.reads).isEqualTo(2);
        assertThat(controller.pool.buffersInUse()).isZero();
        assertThat(queue.commandsOutstanding()).isZero();
    }

    @Test
    void shouldRegisterAReusedBufferOnceAndBounceHeapBuffers() {
        open(1, 32, 4096);
        ByteBuffer buffer = ByteBuffer.allocateDirect(16384);
        for (int i = 0; i < 20; i++) {
            queue.submit(sqe(i % 2 == 0 ? 0x01 : 0x02, 64), buffer, 0, 16384, record, null);
            pump();
        }
        assertThat(cache.registrations()).isEqualTo(1);
        byte[] heapOut = new byte[8192];
        new Random(7).nextBytes(heapOut);
        queue.submit(sqe(0x01, 256), ByteBuffer.wrap(heapOut), 0, 8192, record, null);
        pump();
        ByteBuffer heapIn = ByteBuffer.allocate(8192);
        queue.submit(sqe(0x02, 256), heapIn, 0, 8192, record, null);
        pump();
        assertThat(heapIn.array()).isEqualTo(heapOut);
        assertThat(cache.registrations()).isEqualTo(1); // heap buffers went through the bounce pool
        assertThat(completions).hasSize(22).allSatisfy(c -> assertThat(c[1]).isZero());
    }

    @Test
    void shouldGiveTheSlotBackWithoutACallbackWhenNoBounceBufferIsFree() {
        open(1, 32, 4096);
        int size = 1 << 20;
        byte[] pattern = new byte[size];
        new Random(11).nextBytes(pattern);
        queue.submit(sqe(0x01, 0), randomDirect(size, 11), 0, size, record, null);
        pump();
        assertThat(completions).hasSize(1);
        completions.clear();
        // Heap reads go through 1 MiB bounce buffers from a 4 MiB region: submitted without polling, they run out
        // of bounce buffers before they run out of the 32 slots.
        List<ByteBuffer> reads = new ArrayList<>();
        List<Integer> cids = new ArrayList<>();
        int refused = 0;
        for (int i = 0; i < 32 && refused == 0; i++) {
            ByteBuffer in = ByteBuffer.allocate(size);
            int cid = queue.submit(sqe(0x02, 0), in, 0, size, record, null);
            if (cid < 0) {
                refused++;
            } else {
                reads.add(in);
                cids.add(cid);
            }
        }
        assertThat(refused).isEqualTo(1);
        assertThat(reads).isNotEmpty().hasSizeLessThan(32);
        assertThat(queue.commandsOutstanding()).isEqualTo(reads.size());
        for (int i = 0; i < 10 && completions.size() < reads.size(); i++) {
            pump();
        }
        // Only the accepted reads complete, each once, with the data written; the refused submit has no callback.
        assertThat(completions).extracting(c -> c[0]).containsExactlyInAnyOrderElementsOf(cids);
        assertThat(completions).allSatisfy(c -> assertThat(c[1]).isZero());
        assertThat(reads).allSatisfy(in -> assertThat(in.array()).isEqualTo(pattern));
        assertThat(queue.commandsOutstanding()).isZero();
        ByteBuffer again = ByteBuffer.allocate(size);
        int cid = queue.submit(sqe(0x02, 0), again, 0, size, record, null);
        assertThat(cid).isPositive();
        pump();
        assertThat(completions.get(completions.size() - 1)).containsExactly(cid, 0);
        assertThat(again.array()).isEqualTo(pattern);
    }

    @Test
    void shouldFailOutstandingCommandsWithPathErrorWhenTheControllerDisconnects() {
        open(1, 32, 4096);
        controller.handlers.hold = true;
        ByteBuffer in = ByteBuffer.allocateDirect(65536);
        int cid = queue.submit(sqe(0x02, 0), in, 0, 65536, record, null);
        pump();
        assertThat(completions).isEmpty();
        controller.disconnect("keep-alive expired");
        pump();
        assertThat(completions).hasSize(1);
        assertThat(completions.get(0)).containsExactly(cid, HostStatus.HOST_PATH_ERROR);
        assertThat(closedReasons).hasSize(1);
        assertThat(queue.isOpen()).isFalse();
        assertThat(queue.submit(sqe(0x02, 0), in, 0, 4096, record, null)).isEqualTo(-1);
        assertThat(queue.isDestroyed()).isTrue();
        assertThat(hostQp.destroyed).isTrue();
        assertThat(controller.destroyed()).isTrue();
        assertThat(group.queueCount()).isZero();
    }

    /**
     * A connect that gave up waiting for its poll group (whose reactor had not started) cleans up alone: when the
     * reactor runs later, it neither registers nor closes the queue, whose queue pair the caller has destroyed.
     */
    @Test
    void shouldLeaveATimedOutRegistrationToTheCallerAlone() throws Exception {
        RdmaHostPollGroup late = new RdmaHostPollGroup(new FakeWaiter()); // not polled yet: no reactor thread
        FakeQueuePair lateQp = new FakeQueuePair(memory);
        ByteBuffer bounceRegion = ByteBuffer.allocateDirect(1 << 20);
        HostMemory hostMemory = new HostMemory(new RegistrationCache(new MemoryRegistrar() {
            @Override
            public MemoryKeys register(ByteBuffer buffer) {
                return memory.register(buffer);
            }

            @Override
            public void deregister(MemoryKeys keys) {
                memory.deregister(keys);
            }
        }, 1 << 20, 4), new OffHeapBufferPool(1 << 20, bounceRegion), memory.register(bounceRegion));
        ByteBuffer queueMemory = ByteBuffer.allocateDirect(RdmaHostQueue.memoryBytes(4, 0, 4));
        MemoryKeys keys = memory.register(queueMemory);
        RdmaHostQueue lateQueue = new RdmaHostQueue(late, hostMemory, lateQp,
            new TransportAddress(TransportType.RDMA, AddressFamily.IPV4, "10.0.2.15", "4420"), "10.0.2.15:4420",
            4, 0, 4, queueMemory, keys, (q, reason) -> closedReasons.add(reason), () -> memory.deregister(keys));
        assertThat(lateQueue.postInitialReceives()).isZero();

        org.assertj.core.api.Assertions.assertThatThrownBy(() -> RdmaHostTransport.register(late, lateQueue,
                System.nanoTime() + 20_000_000L, "10.0.2.15:4420"))
            .isInstanceOf(io.nvmeof4j.protocol.spi.host.TransportConnectException.class)
            .hasMessageContaining("did not take the queue");
        late.poll(); // the reactor starts late and runs the hand-over task
        assertThat(late.queueCount()).as("not registered").isZero();
        assertThat(lateQp.disconnected).as("not touched by the group").isFalse();
        assertThat(closedReasons).isEmpty();
        late.close();
        assertThat(lateQp.destroyed).as("the caller's to destroy, not the group's").isFalse();
    }
}
