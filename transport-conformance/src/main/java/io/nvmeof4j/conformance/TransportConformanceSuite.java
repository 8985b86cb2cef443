package io.nvmeof4j.conformance;

import io.nvmeof4j.conformance.HostSide.Completion;
import io.nvmeof4j.conformance.HostSide.Pending;
import io.nvmeof4j.conformance.HostSide.Queue;
import io.nvmeof4j.protocol.admin.AdminOpcode;
import io.nvmeof4j.protocol.admin.FeatureIdentifier;
import io.nvmeof4j.protocol.admin.IdentifyCommand;
import io.nvmeof4j.protocol.admin.LogPageIdentifier;
import io.nvmeof4j.protocol.buffer.OffHeapBufferPool;
import io.nvmeof4j.protocol.command.NvmeStatus;
import io.nvmeof4j.protocol.command.SubmissionQueueEntry;
import io.nvmeof4j.protocol.fabrics.ControllerRegisters;
import io.nvmeof4j.protocol.io.NvmOpcode;
import io.nvmeof4j.protocol.spi.PortOptions;
import io.nvmeof4j.protocol.spi.TransportQueue;
import io.nvmeof4j.protocol.spi.host.HostStatus;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.BooleanSupplier;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The transport conformance suite: one set of cases written against the transport SPI ({@code ControllerTransport},
 * {@code TransportListener}, {@code QueueHandler}, {@code Request} on the controller side; {@code HostTransport},
 * {@code HostQueue} on the host side) and run once per binding, as Netty runs its testsuite once per transport.
 * A binding's test extends this class and says how to make its transports ({@link TransportUnderTest}):
 * NVMe/TCP over loopback and NVMe-oF/RDMA over the fake queue pair in their modules' unit tests, NVMe-oF/RDMA over
 * Soft-RoCE in the guest (integration-tests, {@code RdmaJniIT}).
 * <p>Each case starts its own target (a {@link ConformanceController} behind the binding's listener) and host and
 * tears both down; every wait is bounded by {@link TransportUnderTest#timeout()}. Bytes are checked end to end,
 * statuses by their NVMe codes, and at the end of each case no pool buffer and no command may be left over.
 */
public abstract class TransportConformanceSuite {
    /** In-capsule data of the I/O queues (the port's inline_data_size). */
    protected static final int IN_CAPSULE = 8192;
    protected static final int MDTS = 1 << 20;
    protected static final PortOptions PORT = new PortOptions(IN_CAPSULE, 128, MDTS);
    /**
     * Bytes of each reactor's pool: room for a slab of every size class the cases use (a pool never moves memory
     * between classes) and a queue depth of the largest transfers.
     */
    private static final int POOL_CAPACITY = 32 << 20;
    private static final int NAMESPACE_BYTES = 16 << 20;
    private static final int IO_DEPTH = 32;
    /** A reserved admin opcode (bits 1:0 00b, no data) and an NVM one moving data to the host (10b). */
    private static final int UNKNOWN_ADMIN_OPCODE = 0x3C;
    private static final int UNKNOWN_IO_OPCODE_WITH_DATA = 0x7E;

    private TransportUnderTest transport;
    private final List<PollLoop> loops = new ArrayList<>();
    private final List<TargetSide> targets = new ArrayList<>();
    private final List<HostSide> hosts = new ArrayList<>();
    private final List<Queue> queues = new ArrayList<>();
    private ConformanceController controller;
    private TargetSide target;
    private HostSide host;
    private Queue admin;

    /** The binding under test; called once per case. */
    protected abstract TransportUnderTest transportUnderTest();

    @BeforeEach
    void createTransport() {
        transport = transportUnderTest();
    }

    /**
     * Target on {@code reactors} reactors with {@code port} and pools of {@code poolCapacity} bytes, a host, and
     * the admin queue connected and enabled (CC.EN = 1, as a host does before anything else).
     */
    private void start(int reactors, PortOptions port, int poolCapacity) throws Exception {
        controller = new ConformanceController(NAMESPACE_BYTES);
        List<PollLoop> targetLoops = new ArrayList<>();
        PollLoop shared = transport.onePollThread() ? loop("fabric") : null;
        for (int i = 0; i < reactors; i++) {
            targetLoops.add(shared != null ? shared : loop("target-reactor-" + i));
        }
        target = new TargetSide(transport, targetLoops, port, poolCapacity, controller);
        targets.add(target);
        host = new HostSide(transport, shared != null ? shared : loop("host-reactor"));
        hosts.add(host);
        admin = track(host.connectAdmin(target.address()));
        assertThat(admin.execute(Commands.propertySet(ControllerRegisters.CC, 0x0046_0001)).status())
            .as("Property Set CC.EN").isEqualTo(NvmeStatus.SUCCESS);
    }

    private void start() throws Exception {
        start(2, PORT, POOL_CAPACITY);
    }

    private PollLoop loop(String name) {
        PollLoop loop = new PollLoop(transport.name() + " " + name);
        loops.add(loop);
        return loop;
    }

    private Queue track(Queue queue) {
        queues.add(queue);
        return queue;
    }

    private Queue connectIo(int queueId) throws Exception {
        return track(host.connectIo(target.address(), queueId, admin.controllerId, IO_DEPTH, IN_CAPSULE));
    }

    /** As a daemon stops: listeners, queues, reactors (closing their groups), then the transports. */
    @AfterEach
    void tearDown() throws Exception {
        List<Throwable> failures = new ArrayList<>();
        for (TargetSide t : targets) {
            run(failures, t.listener::close);
        }
        for (Queue q : queues) {
            run(failures, () -> q.close("conformance case ends"));
        }
        for (PollLoop loop : loops) {
            run(failures, loop::close);
        }
        for (HostSide h : hosts) {
            run(failures, h::close);
        }
        for (TargetSide t : targets) {
            run(failures, t::close);
        }
        if (!failures.isEmpty()) {
            AssertionError error = new AssertionError(transport.name() + ": teardown failed: " + failures.get(0),
                failures.get(0));
            failures.stream().skip(1).forEach(error::addSuppressed);
            throw error;
        }
    }

    private interface Step {
        void run() throws Exception;
    }

    private static void run(List<Throwable> failures, Step step) {
        try {
            step.run();
        } catch (Throwable t) {
            failures.add(t);
        }
    }

    // ---------------------------------------------------------------------------------------------------------
    // Bring-up

    @Test
    void shouldBringUpTheAdminQueueAndIoQueuesOverEveryReactor() throws Exception {
        start();
        assertThat(admin.controllerId).as("CNTLID from the Connect response").isPositive();
        Completion cap = admin.execute(Commands.propertyGet(ControllerRegisters.CAP, true));
        assertThat(cap.status()).isEqualTo(NvmeStatus.SUCCESS);
        assertThat(cap.result64()).as("CAP carried in DW0 and DW1").isEqualTo(ConformanceController.CAP);
        assertThat(cap.sqId()).as("SQID of an admin completion").isZero();
        assertThat(admin.execute(Commands.propertyGet(ControllerRegisters.VS, false)).dw0())
            .isEqualTo(ConformanceController.VS);
        assertThat(admin.execute(Commands.propertyGet(ControllerRegisters.CC, false)).dw0()).isEqualTo(0x0046_0001);
        assertThat(admin.execute(Commands.propertyGet(ControllerRegisters.CSTS, false)).dw0() & 1)
            .as("CSTS.RDY").isEqualTo(1);

        List<Queue> io = new ArrayList<>();
        for (int qid = 1; qid <= 3; qid++) {
            io.add(connectIo(qid));
        }
        for (Queue q : io) {
            assertThat(q.controllerId).isEqualTo(admin.controllerId);
            assertThat(q.queue.inCapsuleDataSize()).as("host in-capsule size of I/O queue %d", q.queueId)
                .isEqualTo(IN_CAPSULE);
            byte[] bytes = ConformanceController.pattern(q.queueId, 4096);
            ByteBuffer out = direct(bytes);
            Completion w = q.execute(Commands.io(NvmOpcode.WRITE, 1, q.queueId * 8L, 8), out, 0, 4096);
            assertThat(w.status()).isEqualTo(NvmeStatus.SUCCESS);
            assertThat(w.sqId()).as("SQID of a completion on I/O queue %d", q.queueId).isEqualTo(q.queueId);
            assertThat(w.cid()).as("CID matched to the submitted one").isEqualTo(w.submittedCid());
            ByteBuffer in = ByteBuffer.allocateDirect(4096);
            assertThat(q.execute(Commands.io(NvmOpcode.READ, 1, q.queueId * 8L, 8), in, 0, 4096).status())
                .isEqualTo(NvmeStatus.SUCCESS);
            assertThat(bytesOf(in)).isEqualTo(bytes);
        }
        assertThat(controller.queues).extracting(TransportQueue::queueId).containsExactlyInAnyOrder(0, 1, 2, 3);
        for (Queue q : io) {
            // Connect, Write, Read one after another: the submission queue's order, counted from 1.
            assertThat(controller.sequences.get(controllerQueue(q.queueId))).as("Request.sequence() on queue %d",
                q.queueId).containsExactly(1L, 2L, 3L);
        }
        assertThat(controller.badReceiveTimes.get()).as("Request.receivedNanos() outside the queue's life").isZero();
        eventually("onResponseSent for every completed command", () -> controller.responsesSent.get()
            == controller.completed.get());
        assertThat(controller.badSentTimes.get()).as("onResponseSent's stamp before the command arrived").isZero();
        for (TransportQueue tq : controller.queues) {
            assertThat(tq.transportType()).isEqualTo(target.address().type());
            assertThat(tq.localAddress().trsvcid()).isEqualTo(target.address().trsvcid());
            assertThat(tq.peer()).isNotBlank();
            assertThat(tq.inCapsuleDataSize()).as("controller in-capsule size of queue %d", tq.queueId())
                .isEqualTo(tq.queueId() == 0 ? transport.adminInCapsuleDataSize() : IN_CAPSULE);
        }
        assertNothingLeftOver();
    }

    @Test
    void shouldRefuseAnIoQueueConnectNamingAnUnknownController() throws Exception {
        start();
        assertThatThrownBy(() -> track(host.connectIo(target.address(), 1, 0x7777, IO_DEPTH, IN_CAPSULE)))
            .hasMessageContaining("0x182 CONNECT_INVALID_PARAMETERS");
        Queue io = connectIo(1);
        assertThat(io.execute(Commands.io(NvmOpcode.FLUSH, 1, 0, 0)).status()).isEqualTo(NvmeStatus.SUCCESS);
    }

    // ---------------------------------------------------------------------------------------------------------
    // Admin commands

    @Test
    void shouldAnswerEveryAdminCommandTheTargetServesWithItsData() throws Exception {
        start();
        for (int cns : ConformanceController.IDENTIFY_CNS) {
            int nsid = cns == IdentifyCommand.CNS_CONTROLLER || cns == IdentifyCommand.CNS_IO_COMMAND_SET ? 0 : 1;
            ByteBuffer in = ByteBuffer.allocateDirect(IdentifyCommand.DATA_LENGTH);
            Completion c = admin.execute(Commands.identify(cns, nsid), in, 0, IdentifyCommand.DATA_LENGTH);
            assertThat(c.status()).as("Identify CNS %02xh", cns).isEqualTo(NvmeStatus.SUCCESS);
            assertThat(bytesOf(in)).as("Identify CNS %02xh data", cns)
                .isEqualTo(ConformanceController.pattern(ConformanceController.identifySeed(cns, nsid),
                    IdentifyCommand.DATA_LENGTH));
        }
        // Identify into the middle of a heap buffer: the bytes around the range stay as they were.
        ByteBuffer heap = ByteBuffer.wrap(new byte[3 * 4096]);
        assertThat(admin.execute(Commands.identify(IdentifyCommand.CNS_CONTROLLER, 0), heap, 4096, 4096).status())
            .isEqualTo(NvmeStatus.SUCCESS);
        byte[] all = heap.array();
        assertThat(slice(all, 4096, 4096)).isEqualTo(ConformanceController.pattern(
            ConformanceController.identifySeed(IdentifyCommand.CNS_CONTROLLER, 0), 4096));
        assertThat(slice(all, 0, 4096)).containsOnly(0);
        assertThat(slice(all, 8192, 4096)).containsOnly(0);

        for (int lid : ConformanceController.LOG_PAGES) {
            for (int[] lengthAndOffset : new int[][] {{512, 0}, {4096, 0}, {12, 8}, {256, 1024}}) {
                int length = lengthAndOffset[0];
                int offset = lengthAndOffset[1];
                ByteBuffer in = ByteBuffer.allocateDirect(length);
                Completion c = admin.execute(Commands.getLogPage(lid, length, offset), in, 0, length);
                assertThat(c.status()).as("Get Log Page %02xh, %d bytes at %d", lid, length, offset)
                    .isEqualTo(NvmeStatus.SUCCESS);
                byte[] page = ConformanceController.pattern(ConformanceController.logPageSeed(lid), offset + length);
                assertThat(bytesOf(in)).as("Get Log Page %02xh, %d bytes at %d", lid, length, offset)
                    .isEqualTo(slice(page, offset, length));
            }
        }

        for (int fid : ConformanceController.SETTABLE_FEATURES) {
            int value = fid == FeatureIdentifier.NUMBER_OF_QUEUES ? 0x0003_0003 : 0x0100 | fid;
            Completion set = admin.execute(Commands.setFeatures(fid, value));
            assertThat(set.status()).as("Set Features %02xh", fid).isEqualTo(NvmeStatus.SUCCESS);
            Completion get = admin.execute(Commands.getFeatures(fid));
            assertThat(get.status()).as("Get Features %02xh", fid).isEqualTo(NvmeStatus.SUCCESS);
            assertThat(get.dw0()).as("Get Features %02xh DW0", fid).isEqualTo(value);
        }
        assertThat(admin.execute(Commands.getFeatures(FeatureIdentifier.VOLATILE_WRITE_CACHE)).dw0()).isZero();
        ByteBuffer hostId = ByteBuffer.allocateDirect(ConformanceController.HOST_IDENTIFIER_LENGTH);
        assertThat(admin.execute(Commands.getFeatures(FeatureIdentifier.HOST_IDENTIFIER), hostId, 0,
            ConformanceController.HOST_IDENTIFIER_LENGTH).status()).isEqualTo(NvmeStatus.SUCCESS);
        assertThat(bytesOf(hostId)).isEqualTo(ConformanceController.pattern(
            ConformanceController.hostIdentifierSeed(admin.controllerId), ConformanceController.HOST_IDENTIFIER_LENGTH));

        assertThat(admin.execute(Commands.sqe(AdminOpcode.KEEP_ALIVE)).status()).isEqualTo(NvmeStatus.SUCCESS);
        assertStatus(admin.execute(Commands.setFeatures(FeatureIdentifier.VOLATILE_WRITE_CACHE, 1)),
            NvmeStatus.FEATURE_NOT_CHANGEABLE);
        ByteBuffer unused = ByteBuffer.allocateDirect(4096);
        assertStatus(admin.execute(Commands.identify(IdentifyCommand.CNS_NVM_SET_LIST, 0), unused, 0, 4096),
            NvmeStatus.INVALID_FIELD);
        assertStatus(admin.execute(Commands.getLogPage(LogPageIdentifier.DISCOVERY, 1024, 0), unused, 0, 1024),
            NvmeStatus.INVALID_FIELD);
        assertNothingLeftOver();
    }

    @Test
    void shouldCompleteAsyncEventRequestsWhenAnEventComesAndFailTheRestWhenTheQueueCloses() throws Exception {
        start();
        List<Pending> aers = new ArrayList<>();
        for (int i = 0; i < ConformanceController.AERL_PLUS_ONE; i++) {
            aers.add(admin.submit(Commands.sqe(AdminOpcode.ASYNC_EVENT_REQUEST), null, 0, 0));
        }
        eventually("every AER reached the controller",
            () -> controller.outstandingAsyncEvents() == ConformanceController.AERL_PLUS_ONE);
        assertStatus(admin.execute(Commands.sqe(AdminOpcode.ASYNC_EVENT_REQUEST)),
            NvmeStatus.ASYNC_EVENT_REQUEST_LIMIT_EXCEEDED);
        // Other admin commands overtake the outstanding AERs.
        assertThat(admin.execute(Commands.sqe(AdminOpcode.KEEP_ALIVE)).status()).isEqualTo(NvmeStatus.SUCCESS);
        assertThat(aers).noneMatch(Pending::isDone);

        assertThat(controller.raiseAsyncEvent(0x0002_0002)).isTrue(); // from this thread, as an event source does
        eventually("one AER completed", () -> aers.stream().filter(Pending::isDone).count() == 1);
        Completion event = aers.stream().filter(Pending::isDone).findFirst().orElseThrow().get();
        assertThat(event.status()).isEqualTo(NvmeStatus.SUCCESS);
        assertThat(event.dw0()).as("the event's DW0").isEqualTo(0x0002_0002);

        admin.close("host shuts the controller down");
        for (Pending p : aers) {
            Completion c = admin.await(p);
            if (c.cid() != event.cid()) {
                assertThat(c.status()).as("an AER outstanding when the queue closed").isEqualTo(
                    HostStatus.HOST_PATH_ERROR);
            }
        }
        eventually("the host queue's listener told", () -> admin.closedReasons.size() == 1);
        eventually("the controller's queue closed", () -> controller.closed.size() == 1);
        // What is still outstanding in the controller completes into nothing.
        while (controller.raiseAsyncEvent(0)) {
            // every one of them
        }
        eventually("no command left in the admin queue", () -> controller.queues.get(0).commandsOutstanding() == 0);
        assertThat(aers).allSatisfy(p -> assertThat(p.callbacks.get()).as("callbacks of one AER").isEqualTo(1));
    }

    // ---------------------------------------------------------------------------------------------------------
    // I/O

    @Test
    void shouldMoveDataAtEverySizeClassAndReadBackTheSameBytes() throws Exception {
        start();
        Queue io = connectIo(1);
        int[] sizes = {512, 4096, IN_CAPSULE - 512, IN_CAPSULE, IN_CAPSULE + 512, 65536, 131072, 262144 + 4096,
            MDTS / 2 + 512, MDTS};
        long lba = 0;
        for (int size : sizes) {
            byte[] bytes = ConformanceController.pattern(size, size);
            Completion w = io.execute(Commands.io(NvmOpcode.WRITE, 1, lba, size / 512), direct(bytes), 0, size);
            assertThat(w.status()).as("write of %d bytes", size).isEqualTo(NvmeStatus.SUCCESS);
            assertThat(controller.ram(lba * 512, size)).as("namespace after a write of %d bytes", size)
                .isEqualTo(bytes);
            ByteBuffer in = ByteBuffer.allocateDirect(size);
            Completion r = io.execute(Commands.io(NvmOpcode.READ, 1, lba, size / 512), in, 0, size);
            assertThat(r.status()).as("read of %d bytes", size).isEqualTo(NvmeStatus.SUCCESS);
            assertThat(bytesOf(in)).as("read of %d bytes", size).isEqualTo(bytes);
            lba += size / 512;
        }
        // Heap buffers, and a range inside a larger buffer whose other bytes must stay as they were.
        int size = 128 * 1024;
        byte[] bytes = ConformanceController.pattern(-1, size);
        assertThat(io.execute(Commands.io(NvmOpcode.WRITE, 1, lba, size / 512), ByteBuffer.wrap(bytes), 0, size)
            .status()).isEqualTo(NvmeStatus.SUCCESS);
        ByteBuffer framed = ByteBuffer.allocate(size + 8192);
        assertThat(io.execute(Commands.io(NvmOpcode.READ, 1, lba, size / 512), framed, 4096, size).status())
            .isEqualTo(NvmeStatus.SUCCESS);
        assertThat(slice(framed.array(), 4096, size)).isEqualTo(bytes);
        assertThat(slice(framed.array(), 0, 4096)).containsOnly(0);
        assertThat(slice(framed.array(), 4096 + size, 4096)).containsOnly(0);
        ByteBuffer smallIn = ByteBuffer.allocate(IN_CAPSULE);
        assertThat(io.execute(Commands.io(NvmOpcode.WRITE, 1, lba, IN_CAPSULE / 512), ByteBuffer.wrap(bytes), 0,
            IN_CAPSULE).status()).isEqualTo(NvmeStatus.SUCCESS);
        assertThat(io.execute(Commands.io(NvmOpcode.READ, 1, lba, IN_CAPSULE / 512), smallIn, 0, IN_CAPSULE)
            .status()).isEqualTo(NvmeStatus.SUCCESS);
        assertThat(smallIn.array()).isEqualTo(slice(bytes, 0, IN_CAPSULE));
        assertThat(io.execute(Commands.io(NvmOpcode.FLUSH, 1, 0, 0)).status()).isEqualTo(NvmeStatus.SUCCESS);
        assertNothingLeftOver();
    }

    @Test
    void shouldKeepAQueueFullOfMixedSizesInFlightOnSeveralQueuesAndReadEveryByteBack() throws Exception {
        start();
        List<Queue> io = List.of(connectIo(1), connectIo(2));
        int perQueue = 2 * IO_DEPTH;
        int[] sizes = {512, 4096, IN_CAPSULE, IN_CAPSULE + 4096, 65536, 131072};
        int slot = 128 * 1024; // bytes of namespace per command: 128 of them fill it
        ByteBuffer[] out = new ByteBuffer[io.size() * perQueue];
        int[] length = new int[out.length];
        ThreadLocalRandom random = ThreadLocalRandom.current();
        for (int round = 0; round < 2; round++) {
            boolean write = round == 0;
            List<Pending> pending = new ArrayList<>();
            List<String> what = new ArrayList<>();
            for (int i = 0; i < out.length; i++) {
                Queue q = io.get(i % io.size());
                long lba = (long) i * slot / 512;
                if (write) {
                    length[i] = sizes[random.nextInt(sizes.length)];
                    out[i] = direct(ConformanceController.pattern(1000 + i, length[i]));
                } else {
                    out[i] = ByteBuffer.allocateDirect(length[i]);
                }
                pending.add(q.submit(Commands.io(write ? NvmOpcode.WRITE : NvmOpcode.READ, 1, lba, length[i] / 512),
                    out[i], 0, length[i]));
                what.add((write ? "write " : "read ") + length[i] + " bytes on queue " + q.queueId);
                if (pending.size() % IO_DEPTH == 0) {
                    awaitAll(io.get(0), pending, what); // 32 at a time: half a queue depth on each queue
                }
            }
            awaitAll(io.get(0), pending, what);
        }
        for (int i = 0; i < out.length; i++) {
            assertThat(bytesOf(out[i])).as("command %d, %d bytes", i, length[i])
                .isEqualTo(ConformanceController.pattern(1000 + i, length[i]));
        }
        assertNothingLeftOver();
    }

    // ---------------------------------------------------------------------------------------------------------
    // Malformed commands

    @Test
    void shouldAnswerMalformedCommandsWithTheirNvmeStatusAndKeepServingTheQueue() throws Exception {
        start();
        Queue io = connectIo(1);
        byte[] canary = ConformanceController.pattern(0xCA, 65536);

        // PSDT 00b (PRPs) on a fabric: Invalid Field, before any data moves; in-capsule data skipped.
        SubmissionQueueEntry prpWrite = Commands.io(NvmOpcode.WRITE, 1, 0, 8).flags(0);
        assertStatus(io.execute(prpWrite, direct(canary), 0, 4096), NvmeStatus.INVALID_FIELD);
        SubmissionQueueEntry prpRead = Commands.io(NvmOpcode.READ, 1, 0, 128).flags(0);
        ByteBuffer in = direct(canary);
        assertStatus(io.execute(prpRead, in, 0, 65536), NvmeStatus.INVALID_FIELD);
        assertThat(bytesOf(in)).as("host buffer after a refused read").isEqualTo(canary);

        // Longer than MDTS: SGL Data Length Invalid, both directions.
        int tooLong = MDTS + 4096;
        ByteBuffer big = ByteBuffer.allocateDirect(tooLong);
        assertStatus(io.execute(Commands.io(NvmOpcode.WRITE, 1, 0, tooLong / 512), big, 0, tooLong),
            NvmeStatus.SGL_DATA_LENGTH_INVALID);
        assertStatus(io.execute(Commands.io(NvmOpcode.READ, 1, 0, tooLong / 512), big, 0, tooLong),
            NvmeStatus.SGL_DATA_LENGTH_INVALID);

        // Opcodes nobody serves, with and without data.
        assertStatus(admin.execute(Commands.sqe(UNKNOWN_ADMIN_OPCODE)), NvmeStatus.INVALID_OPCODE);
        in = direct(canary);
        assertStatus(io.execute(Commands.sqe(UNKNOWN_IO_OPCODE_WITH_DATA).nsid(1), in, 0, 4096),
            NvmeStatus.INVALID_OPCODE);
        assertThat(bytesOf(in)).as("host buffer after a failed command moving data to the host").isEqualTo(canary);

        // Beyond the namespace, and another namespace.
        long last = controller.lbaCount() - 4;
        in = direct(canary);
        assertStatus(io.execute(Commands.io(NvmOpcode.READ, 1, last, 8), in, 0, 4096), NvmeStatus.LBA_OUT_OF_RANGE);
        assertThat(bytesOf(in)).isEqualTo(canary);
        assertStatus(io.execute(Commands.io(NvmOpcode.WRITE, 1, last, 128), direct(canary), 0, 65536),
            NvmeStatus.LBA_OUT_OF_RANGE);
        assertThat(controller.ram(last * 512, 2048)).as("namespace tail after a refused write").containsOnly(0);
        assertStatus(io.execute(Commands.io(NvmOpcode.READ, 7, 0, 8), ByteBuffer.allocateDirect(4096), 0, 4096),
            NvmeStatus.INVALID_NAMESPACE);

        // The queue still serves.
        byte[] bytes = ConformanceController.pattern(7, 4096);
        assertThat(io.execute(Commands.io(NvmOpcode.WRITE, 1, 0, 8), direct(bytes), 0, 4096).status())
            .isEqualTo(NvmeStatus.SUCCESS);
        in = ByteBuffer.allocateDirect(4096);
        assertThat(io.execute(Commands.io(NvmOpcode.READ, 1, 0, 8), in, 0, 4096).status())
            .isEqualTo(NvmeStatus.SUCCESS);
        assertThat(bytesOf(in)).isEqualTo(bytes);
        assertNothingLeftOver();
    }

    // ---------------------------------------------------------------------------------------------------------
    // Pool exhaustion

    @Test
    void shouldHoldCommandsWhileTheBufferPoolIsExhaustedAndLoseNone() throws Exception {
        int mdts = 128 * 1024;
        // One slab for the 128 KiB class and one for whatever small buffers the binding takes first (NVMe-oF/RDMA
        // reads the Connect data into a pool buffer): at most 16 buffers of 128 KiB, fewer than the reads.
        int poolCapacity = 2 * OffHeapBufferPool.SLAB_SIZE;
        int poolBuffers = poolCapacity / mdts;
        start(1, new PortOptions(IN_CAPSULE, 128, mdts), poolCapacity);
        Queue io = connectIo(1);
        int commands = 24;
        ByteBuffer written = ByteBuffer.allocateDirect(commands * mdts);
        written.put(0, ConformanceController.pattern(42, commands * mdts));
        List<Pending> writes = new ArrayList<>();
        for (int i = 0; i < commands; i++) {
            writes.add(io.submit(Commands.io(NvmOpcode.WRITE, 1, (long) i * mdts / 512, mdts / 512), written,
                i * mdts, mdts));
        }
        awaitAll(io, writes, null);

        controller.holdReads = true;
        ByteBuffer read = ByteBuffer.allocateDirect(commands * mdts);
        List<Pending> reads = new ArrayList<>();
        for (int i = 0; i < commands; i++) {
            reads.add(io.submit(Commands.io(NvmOpcode.READ, 1, (long) i * mdts / 512, mdts / 512), read, i * mdts,
                mdts));
        }
        eventually("reads holding pool buffers reached the controller", () -> controller.heldCount() > 0);
        Thread.sleep(200); // let every read that can get a buffer arrive
        assertThat(controller.heldCount()).as("reads executing with a pool of at most %d buffers", poolBuffers)
            .isBetween(1, poolBuffers).isLessThan(commands);
        assertThat(reads).noneMatch(Pending::isDone);

        // In-capsule data and commands without data do not wait for the pool.
        byte[] small = ConformanceController.pattern(43, 4096);
        long smallLba = (long) commands * mdts / 512;
        assertThat(io.execute(Commands.io(NvmOpcode.WRITE, 1, smallLba, 8), direct(small), 0, 4096).status())
            .as("in-capsule write while the pool is exhausted").isEqualTo(NvmeStatus.SUCCESS);
        assertThat(io.execute(Commands.io(NvmOpcode.FLUSH, 1, 0, 0)).status()).isEqualTo(NvmeStatus.SUCCESS);
        assertThat(admin.execute(Commands.sqe(AdminOpcode.KEEP_ALIVE)).status()).isEqualTo(NvmeStatus.SUCCESS);
        assertThat(controller.ram(smallLba * 512, 4096)).isEqualTo(small);

        controller.holdReads = false;
        // The released reads give their buffers back and the waiting ones execute at once (releasing until all are
        // done covers one that read holdReads just before it changed).
        eventually("every read completed", () -> {
            controller.releaseHeld();
            return reads.stream().allMatch(Pending::isDone);
        });
        awaitAll(io, reads, null);
        assertThat(bytesOf(read)).isEqualTo(ConformanceController.pattern(42, commands * mdts));
        assertNothingLeftOver();
    }

    // ---------------------------------------------------------------------------------------------------------
    // Disconnect with commands in flight

    @Test
    void shouldFailCommandsInFlightWithTheHostPathErrorWhenTheControllerDisconnects() throws Exception {
        start();
        Queue io = connectIo(1);
        List<Pending> inFlight = submitHeldMix(io);
        TransportQueue controllerQueue = controllerQueue(1);
        controllerQueue.disconnect("conformance: the controller disconnects");
        assertFailedWithPathError(io, inFlight);
        eventually("the controller's queue closed", () -> controller.closed.size() == 1);
        assertAfterDisconnect(io, controllerQueue, inFlight);
    }

    @Test
    void shouldFailCommandsInFlightWithTheHostPathErrorWhenTheHostClosesTheQueue() throws Exception {
        start();
        Queue io = connectIo(1);
        List<Pending> inFlight = submitHeldMix(io);
        TransportQueue controllerQueue = controllerQueue(1);
        io.close("conformance: the host closes the queue");
        assertFailedWithPathError(io, inFlight);
        assertThat(io.closedReasons).containsExactly("conformance: the host closes the queue");
        eventually("the controller noticed the queue closed", () -> controller.closed.size() == 1);
        assertAfterDisconnect(io, controllerQueue, inFlight);
    }

    /** Reads, in-capsule writes and writes pulled from the host, all held in the controller once their data is in. */
    private List<Pending> submitHeldMix(Queue io) {
        controller.holdIo = true;
        List<Pending> pending = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            pending.add(io.submit(Commands.io(NvmOpcode.READ, 1, i * 128L, 128), ByteBuffer.allocateDirect(65536), 0,
                65536));
            pending.add(io.submit(Commands.io(NvmOpcode.WRITE, 1, 1024 + i * 8L, 8),
                direct(ConformanceController.pattern(i, 4096)), 0, 4096));
            pending.add(io.submit(Commands.io(NvmOpcode.WRITE, 1, 2048 + i * 128L, 128),
                direct(ConformanceController.pattern(i, 65536)), 0, 65536));
        }
        try {
            eventually("every command reached the controller", () -> controller.heldCount() == pending.size());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
        assertThat(pending).noneMatch(Pending::isDone);
        return pending;
    }

    private TransportQueue controllerQueue(int queueId) {
        return controller.queues.stream().filter(q -> q.queueId() == queueId).findFirst()
            .orElseThrow(() -> new AssertionError("no controller queue " + queueId));
    }

    private void assertFailedWithPathError(Queue io, List<Pending> inFlight) throws Exception {
        for (Pending p : inFlight) {
            Completion c = io.await(p);
            assertThat(c.status()).as("a command in flight when the queue went away").isEqualTo(
                HostStatus.HOST_PATH_ERROR);
        }
        eventually("the host queue's listener told", () -> io.closedReasons.size() == 1);
        assertThat(io.queue.isOpen()).isFalse();
        assertThat(io.queue.commandsOutstanding()).isZero();
        assertThatThrownBy(() -> io.execute(Commands.io(NvmOpcode.FLUSH, 1, 0, 0)))
            .hasMessageContaining("submit refused");
    }

    /** The held commands complete into nothing; nothing is leaked and the other queues still serve. */
    private void assertAfterDisconnect(Queue io, TransportQueue controllerQueue, List<Pending> inFlight)
        throws Exception {
        controller.holdIo = false;
        assertThat(controller.releaseHeld()).isEqualTo(inFlight.size());
        eventually("the controller's queue has no command left", () -> controllerQueue.commandsOutstanding() == 0);
        assertThat(admin.execute(Commands.sqe(AdminOpcode.KEEP_ALIVE)).status()).isEqualTo(NvmeStatus.SUCCESS);
        Queue again = connectIo(2);
        assertThat(again.execute(Commands.io(NvmOpcode.FLUSH, 1, 0, 0)).status()).isEqualTo(NvmeStatus.SUCCESS);
        assertThat(inFlight).allSatisfy(p -> assertThat(p.callbacks.get()).as("callbacks of one command")
            .isEqualTo(1));
        assertThat(io.closedReasons).hasSize(1);
        assertThat(controller.closed).hasSize(1);
        assertNothingLeftOver();
    }

    // ---------------------------------------------------------------------------------------------------------

    /** No pool buffer handed out and no command outstanding on any live queue, host or controller side. */
    private void assertNothingLeftOver() throws InterruptedException {
        eventually("every pool buffer given back", () -> target.buffersInUse() == 0);
        for (Queue q : queues) {
            if (q.queue.isOpen()) {
                eventually("no command outstanding on host queue " + q.queueId, () -> q.queue.commandsOutstanding()
                    == 0);
            }
        }
        for (TransportQueue tq : controller.queues) {
            eventually("no command outstanding on controller queue " + tq.queueId(),
                () -> tq.commandsOutstanding() == 0);
        }
        assertThat(controller.completed.get()).as("commands completed vs commands received")
            .isEqualTo(controller.commands.get() - controller.heldCount() - controller.outstandingAsyncEvents());
    }

    private void awaitAll(Queue queue, List<Pending> pending, List<String> what) throws Exception {
        for (int i = 0; i < pending.size(); i++) {
            Completion c = queue.await(pending.get(i));
            assertThat(c.status()).as(what == null ? "command " + i : what.get(i)).isEqualTo(NvmeStatus.SUCCESS);
            assertThat(c.callbacks()).isEqualTo(1);
        }
    }

    private static void assertStatus(Completion c, int expected) {
        assertThat(NvmeStatus.describe(NvmeStatus.code(c.status()))).isEqualTo(NvmeStatus.describe(expected));
        assertThat(NvmeStatus.isDnr(c.status())).as("DNR of %s", NvmeStatus.describe(c.status())).isTrue();
    }

    private void eventually(String what, BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + transport.timeout().toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError(transport.name() + ": not within " + transport.timeout() + ": " + what);
            }
            Thread.sleep(2);
        }
    }

    private static ByteBuffer direct(byte[] bytes) {
        ByteBuffer b = ByteBuffer.allocateDirect(bytes.length);
        b.put(0, bytes);
        return b;
    }

    /** All of a buffer's bytes, whatever position and limit the transport left it with. */
    private static byte[] bytesOf(ByteBuffer buffer) {
        byte[] out = new byte[buffer.capacity()];
        buffer.duplicate().clear().get(0, out);
        return out;
    }

    private static byte[] slice(byte[] bytes, int offset, int length) {
        byte[] out = new byte[length];
        System.arraycopy(bytes, offset, out, 0, length);
        return out;
    }
}
