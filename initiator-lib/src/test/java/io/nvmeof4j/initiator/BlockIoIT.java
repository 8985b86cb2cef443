package io.nvmeof4j.initiator;

import io.nvmeof4j.protocol.command.NvmeStatus;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Connect, identify and block I/O against our target in this JVM: every API call, several sizes and depths. */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class BlockIoIT {
    private static final long TIMEOUT_S = 20;

    private InJvmTarget target;
    private NvmeofHost host;
    private NvmeofController controller;

    @BeforeAll
    void connect(@TempDir Path dir) throws Exception {
        target = new InJvmTarget(dir);
        host = NvmeofHost.create(HostIdentity.generate(), 2);
        controller = host.connect(target.ioAddress(), InJvmTarget.NQN_A,
            ConnectOptions.defaults().withIoQueues(2).withQueueDepth(128));
    }

    @AfterAll
    void disconnect() {
        if (host != null) {
            host.close();
        }
        if (target != null) {
            target.close();
        }
    }

    private NvmeofNamespace ns(int nsid) {
        NvmeofNamespace ns = controller.namespace(nsid);
        assertThat(ns).as("namespace %d", nsid).isNotNull();
        return ns;
    }

    @Test
    void shouldIdentifyTheControllerAndItsNamespaces() {
        ControllerInfo info = controller.identifyController();
        assertThat(info.serialNumber()).isEqualTo(InJvmTarget.SERIAL_A);
        assertThat(info.modelNumber()).isEqualTo(InJvmTarget.MODEL_A);
        assertThat(info.subsystemNqn()).isEqualTo(InJvmTarget.NQN_A);
        assertThat(info.controllerId()).isEqualTo(controller.controllerId()).isPositive();
        assertThat(info.maxDataTransferBytes()).isEqualTo(1 << 20);
        assertThat(info.inCapsuleDataSize()).isEqualTo(16384);
        assertThat(info.controllerType()).isEqualTo(1);
        assertThat(controller.state()).isEqualTo(ControllerState.LIVE);
        assertThat(controller.ioQueueCount()).isEqualTo(2);
        assertThat(controller.ioQueueSize()).isEqualTo(128);
        assertThat(controller.version()).isGreaterThanOrEqualTo(0x10300);
        assertThat(controller.namespaces()).extracting(NvmeofNamespace::nsid).containsExactly(1, 2);
        NvmeofNamespace ns1 = ns(1);
        assertThat(ns1.blockSize()).isEqualTo(512);
        assertThat(ns1.blockCount()).isEqualTo(InJvmTarget.A1_BYTES / 512);
        assertThat(ns1.sizeBytes()).isEqualTo(InJvmTarget.A1_BYTES);
        NvmeofNamespace ns2 = ns(2);
        assertThat(ns2.blockSize()).isEqualTo(4096);
        assertThat(ns2.blockCount()).isEqualTo(InJvmTarget.A2_BYTES / 4096);
        assertThat(ns1.uuid()).isNotNull().isNotEqualTo(ns2.uuid());
        assertThat(ns1.nguid()).hasSize(16);
        assertThat(host.controllers()).contains(controller);
        assertThat(controller.maxTransferBytes()).isEqualTo(1 << 20);
        assertThat(controller.peer()).contains(target.ioAddress().toString()).contains(InJvmTarget.NQN_A);
        assertThat(info.versionString()).startsWith("1.");
        assertThat(info.supportsCompare() && info.supportsDatasetManagement() && info.supportsWriteZeroes()).isTrue();
        // The target sees us under our identity.
        assertThat(target.daemon().registry().controller(controller.controllerId()).hostNqn())
            .isEqualTo(host.identity().hostNqn().value());
    }

    @ParameterizedTest(name = "namespace {0}, {1} bytes")
    @CsvSource({
        "1, 512", "1, 4096", "1, 16384", "1, 131072", "1, 1048576", "1, 4194304",
        "2, 4096", "2, 16384", "2, 131072", "2, 1048576", "2, 4194304",
    })
    void shouldWriteAndReadBackWithFutures(int nsid, int size) throws Exception {
        NvmeofNamespace ns = ns(nsid);
        long lba = (3L << 20) / ns.blockSize(); // 3 MiB in
        ByteBuffer data = Bytes.random(size, size + nsid);
        ns.write(lba, data).get(TIMEOUT_S, TimeUnit.SECONDS);
        assertThat(data.position()).as("position restored").isZero();
        assertThat(data.limit()).isEqualTo(size);
        ByteBuffer back = ns.read(lba, size / ns.blockSize()).get(TIMEOUT_S, TimeUnit.SECONDS);
        assertThat(Bytes.array(back)).isEqualTo(Bytes.array(data));
        // Reading into part of a larger buffer honours its position.
        ByteBuffer bigger = ByteBuffer.allocateDirect(size + 1024);
        bigger.position(512).limit(512 + size);
        ns.read(lba, bigger).get(TIMEOUT_S, TimeUnit.SECONDS);
        assertThat(bigger.position()).isEqualTo(512);
        assertThat(Bytes.array(bigger)).isEqualTo(Bytes.array(data));
    }

    @ParameterizedTest(name = "queue depth {0}")
    @ValueSource(ints = {1, 32, 128})
    void shouldVerifyCallbackIoAtQueueDepth(int depth) throws Exception {
        NvmeofNamespace ns = ns(1);
        int ios = 2_000;
        int blocks = 8; // 4 KiB
        int slotBytes = blocks * 512;
        ByteBuffer[] buffers = new ByteBuffer[depth];
        for (int i = 0; i < depth; i++) {
            buffers[i] = ByteBuffer.allocateDirect(slotBytes);
        }
        // Phase 1: write I/O number n to LBA region n (each with its own pattern); phase 2: read back and verify.
        for (int phase = 0; phase < 2; phase++) {
            boolean write = phase == 0;
            AtomicInteger next = new AtomicInteger();
            AtomicInteger done = new AtomicInteger();
            AtomicReference<String> failure = new AtomicReference<>();
            CompletableFuture<Void> finished = new CompletableFuture<>();
            int[] ioOfSlot = new int[depth];
            IoCallback[] self = new IoCallback[1];
            self[0] = (status, context) -> {
                int slot = (Integer) context;
                if (status != 0) {
                    failure.compareAndSet(null, "I/O " + ioOfSlot[slot] + ": " + IoStatus.describe(status));
                } else if (!write) {
                    ByteBuffer b = buffers[slot];
                    for (int i = 0; i < slotBytes; i += 4) {
                        if (b.getInt(i) != ioOfSlot[slot] * 31 + i) {
                            failure.compareAndSet(null, "I/O " + ioOfSlot[slot] + " read back wrong data at " + i);
                            break;
                        }
                    }
                }
                if (done.incrementAndGet() == ios) {
                    finished.complete(null);
                    return;
                }
                int n = next.getAndIncrement();
                if (n < ios) {
                    start(ns, write, n, slot, ioOfSlot, buffers, blocks, self[0]);
                }
            };
            for (int slot = 0; slot < depth && slot < ios; slot++) {
                start(ns, write, next.getAndIncrement(), slot, ioOfSlot, buffers, blocks, self[0]);
            }
            finished.get(60, TimeUnit.SECONDS);
            assertThat(failure.get()).isNull();
        }
    }

    private static void start(NvmeofNamespace ns, boolean write, int n, int slot, int[] ioOfSlot,
                              ByteBuffer[] buffers, int blocks, IoCallback callback) {
        ioOfSlot[slot] = n;
        ByteBuffer b = buffers[slot];
        b.clear();
        long lba = 100_000L + (long) n * blocks;
        boolean accepted;
        if (write) {
            for (int i = 0; i < b.capacity(); i += 4) {
                b.putInt(i, n * 31 + i);
            }
            accepted = ns.submitWrite(lba, blocks, b, false, callback, slot);
        } else {
            accepted = ns.submitRead(lba, blocks, b, callback, slot);
        }
        assertThat(accepted).isTrue();
    }

    @Test
    void shouldKeepDataConsistentWithManyThreadsOnSharedQueues() throws Exception {
        NvmeofNamespace ns = ns(2);
        int threads = 8;
        int iosPerThread = 200;
        List<CompletableFuture<Void>> results = new ArrayList<>();
        List<Thread> workers = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            int id = t;
            CompletableFuture<Void> result = new CompletableFuture<>();
            results.add(result);
            Thread worker = new Thread(() -> {
                try {
                    for (int i = 0; i < iosPerThread; i++) {
                        long lba = (long) id * 256 + (i % 64) * 4L; // each thread its own 1 MiB region
                        int size = 4096 * (1 + (i % 4));
                        ByteBuffer data = Bytes.random(size, id * 100_000L + i);
                        ns.write(lba, data, i % 7 == 0).get(TIMEOUT_S, TimeUnit.SECONDS);
                        ByteBuffer back = ns.read(lba, size / 4096).get(TIMEOUT_S, TimeUnit.SECONDS);
                        if (!java.util.Arrays.equals(Bytes.array(back), Bytes.array(data))) {
                            throw new AssertionError("thread " + id + " I/O " + i + " read back different data");
                        }
                    }
                    result.complete(null);
                } catch (Throwable e) {
                    result.completeExceptionally(e);
                }
            }, "io-worker-" + t);
            workers.add(worker);
            worker.start();
        }
        CompletableFuture.allOf(results.toArray(new CompletableFuture[0])).get(120, TimeUnit.SECONDS);
        for (Thread worker : workers) {
            worker.join(5_000);
        }
    }

    @Test
    void shouldPipelineManyAsyncWritesFromManyThreads() throws Exception {
        NvmeofNamespace ns = ns(1);
        int threads = 4;
        int perThread = 300;
        List<CompletableFuture<Void>> all = new java.util.concurrent.CopyOnWriteArrayList<>();
        List<Thread> workers = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            int id = t;
            Thread worker = new Thread(() -> {
                for (int i = 0; i < perThread; i++) {
                    ByteBuffer b = ByteBuffer.allocateDirect(512);
                    b.putLong(0, id * 1_000_000L + i).putLong(504, ~(id * 1_000_000L + i));
                    all.add(ns.write(20_000L + id * perThread + i, b));
                }
            });
            workers.add(worker);
            worker.start();
        }
        for (Thread worker : workers) {
            worker.join(30_000);
        }
        CompletableFuture.allOf(all.toArray(new CompletableFuture[0])).get(60, TimeUnit.SECONDS);
        ByteBuffer back = ns.read(20_000L, threads * perThread).get(TIMEOUT_S, TimeUnit.SECONDS);
        for (int id = 0; id < threads; id++) {
            for (int i = 0; i < perThread; i++) {
                int at = (id * perThread + i) * 512;
                assertThat(back.getLong(at)).isEqualTo(id * 1_000_000L + i);
                assertThat(back.getLong(at + 504)).isEqualTo(~(id * 1_000_000L + i));
            }
        }
    }

    @Test
    void shouldFlushWriteZeroesDeallocateAndCompare() throws Exception {
        NvmeofNamespace ns = ns(1);
        long lba = 50_000;
        ByteBuffer data = Bytes.random(64 * 512, 7);
        ns.write(lba, data, true).get(TIMEOUT_S, TimeUnit.SECONDS);
        ns.flush().get(TIMEOUT_S, TimeUnit.SECONDS);
        assertThat(ns.compare(lba, data).get(TIMEOUT_S, TimeUnit.SECONDS)).isTrue();
        ByteBuffer other = Bytes.random(64 * 512, 8);
        assertThat(ns.compare(lba, other).get(TIMEOUT_S, TimeUnit.SECONDS)).isFalse();

        ns.writeZeroes(lba, 16).get(TIMEOUT_S, TimeUnit.SECONDS);
        ByteBuffer back = ns.read(lba, 64).get(TIMEOUT_S, TimeUnit.SECONDS);
        assertThat(Bytes.array(back.duplicate().limit(16 * 512))).containsOnly(0);
        assertThat(Bytes.array(back.duplicate().position(16 * 512)))
            .isEqualTo(Bytes.array(data.duplicate().position(16 * 512)));

        ns.deallocate(lba + 16, 48).get(TIMEOUT_S, TimeUnit.SECONDS);
        back = ns.read(lba, 64).get(TIMEOUT_S, TimeUnit.SECONDS);
        assertThat(Bytes.array(back)).containsOnly(0); // DLFEAT: deallocated blocks read as zeroes

        // Write Zeroes larger than one command's NLB (65536 blocks) is split too.
        ns.write(10, Bytes.random(512, 9)).get(TIMEOUT_S, TimeUnit.SECONDS);
        ns.writeZeroes(0, 70_000).get(TIMEOUT_S, TimeUnit.SECONDS);
        assertThat(Bytes.array(ns.read(10, 1).get(TIMEOUT_S, TimeUnit.SECONDS))).containsOnly(0);
    }

    @Test
    void shouldReportTheStatusOfAFailedIo() throws Exception {
        NvmeofNamespace ns = ns(2);
        assertThatThrownBy(() -> ns.read(ns.blockCount(), 1).get(TIMEOUT_S, TimeUnit.SECONDS))
            .isInstanceOf(ExecutionException.class)
            .cause()
            .isInstanceOf(NvmeofIoException.class)
            .hasMessageContaining("Read of 1 blocks at LBA " + ns.blockCount())
            .hasMessageContaining("namespace 2")
            .hasMessageContaining("0x080 LBA_OUT_OF_RANGE")
            .satisfies(e -> assertThat(((NvmeofIoException) e).status() & 0x7FF)
                .isEqualTo(NvmeStatus.LBA_OUT_OF_RANGE));
        int[] seen = {-1};
        CompletableFuture<Void> done = new CompletableFuture<>();
        assertThat(ns.submitRead(ns.blockCount() + 10, 1, ByteBuffer.allocateDirect(4096), (status, ctx) -> {
            seen[0] = status;
            done.complete(null);
        }, null)).isTrue();
        done.get(TIMEOUT_S, TimeUnit.SECONDS);
        assertThat(NvmeStatus.code(seen[0])).isEqualTo(NvmeStatus.LBA_OUT_OF_RANGE);
    }

    @Test
    void shouldRefuseBlockingCallsOnAReactorThreadAndKeepTheQueues() throws Exception {
        NvmeofNamespace ns = ns(2);
        ByteBuffer buffer = ByteBuffer.allocateDirect(4096);
        CompletableFuture<List<Throwable>> refused = new CompletableFuture<>();
        assertThat(ns.submitRead(0, 1, buffer, (status, context) -> {
            // An application's I/O callback, on the host reactor thread, trying the blocking calls.
            List<Throwable> thrown = new ArrayList<>();
            for (java.util.concurrent.Callable<?> call : List.<java.util.concurrent.Callable<?>>of(
                controller::rescanNamespaces,
                () -> host.discover(target.ioAddress()),
                () -> host.connect(target.ioAddress(), InJvmTarget.NQN_A))) {
                try {
                    call.call();
                    thrown.add(null);
                } catch (Throwable t) {
                    thrown.add(t);
                }
            }
            refused.complete(thrown);
        }, null)).isTrue();
        List<Throwable> thrown = refused.get(TIMEOUT_S, TimeUnit.SECONDS);
        assertThat(thrown).hasSize(3).allSatisfy(t -> assertThat(t).isInstanceOf(IllegalStateException.class)
            .hasMessageContaining("was called on host reactor thread nvmeof-host-reactor-")
            .hasMessageContaining("call it from another thread"));
        assertThat(thrown.get(0)).hasMessageStartingWith("namespace scan on ");
        // Nothing waited, nothing timed out: the controller and its queues serve as before.
        assertThat(controller.state()).isEqualTo(ControllerState.LIVE);
        ByteBuffer pattern = ByteBuffer.allocateDirect(4096);
        for (int i = 0; i < 4096; i += 4) {
            pattern.putInt(i, 0x5EED_0000 + i);
        }
        ns.write(7, pattern).get(TIMEOUT_S, TimeUnit.SECONDS);
        ByteBuffer again = ByteBuffer.allocateDirect(4096);
        ns.read(7, again).get(TIMEOUT_S, TimeUnit.SECONDS);
        assertThat(again.getInt(4092)).as("read back after the refusals").isEqualTo(0x5EED_0000 + 4092);
        assertThat(controller.rescanNamespaces()).extracting(NvmeofNamespace::nsid).containsExactly(1, 2);
    }

    @Test
    void shouldRescanToTheSameNamespaces() throws Exception {
        List<NvmeofNamespace> before = controller.namespaces();
        List<NvmeofNamespace> after = controller.rescanNamespaces();
        assertThat(after).extracting(NvmeofNamespace::nsid).containsExactly(1, 2);
        assertThat(after.get(0)).as("unchanged namespaces keep their objects").isSameAs(before.get(0));
        assertThat(controller.namespace(99)).isNull();
    }

    @Test
    void shouldRejectBuffersThatDoNotFit() {
        NvmeofNamespace ns = ns(2);
        assertThatThrownBy(() -> ns.submitRead(0, 2, ByteBuffer.allocateDirect(4096), (s, c) -> { }, null))
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("4096 remaining");
        assertThatThrownBy(() -> ns.write(0, ByteBuffer.allocateDirect(100)))
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("block size");
        assertThatThrownBy(() -> ns.read(0, ByteBuffer.allocateDirect(4096).asReadOnlyBuffer()))
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("read-only");
    }

    @ParameterizedTest(name = "header digest {0}, data digest {1}, SQ flow control disabled {2}")
    @CsvSource({"true, true, false", "false, false, true", "true, false, true"})
    void shouldDoIoWithDigestsAndWithoutSqFlowControl(boolean hdgst, boolean ddgst, boolean noSqFlowControl)
        throws Exception {
        try (NvmeofController other = host.connect(target.ioAddress(), InJvmTarget.NQN_A,
            ConnectOptions.defaults().withIoQueues(1).withQueueDepth(32).withDigests(hdgst, ddgst)
                .withDisableSqFlowControl(noSqFlowControl))) {
            NvmeofNamespace ns = other.namespace(2);
            for (int size : new int[] {4096, 16384, 65536, 1 << 20, 3 << 20}) {
                ByteBuffer data = Bytes.random(size, size);
                ns.write(1024, data).get(TIMEOUT_S, TimeUnit.SECONDS);
                assertThat(Bytes.array(ns.read(1024, size / 4096).get(TIMEOUT_S, TimeUnit.SECONDS)))
                    .isEqualTo(Bytes.array(data));
            }
            assertThat(other.controllerId()).isNotEqualTo(controller.controllerId());
        }
    }

    @Test
    void shouldDiscoverTheSubsystems() throws Exception {
        List<DiscoveryEntry> entries = host.discover(target.discoveryAddress());
        // Like nvmet, the discovery log lists only what this host may connect to: not subsystem b.
        assertThat(entries).extracting(DiscoveryEntry::subsystemNqn)
            .contains(InJvmTarget.NQN_A, NvmeofHost.DISCOVERY_NQN).doesNotContain(InJvmTarget.NQN_B);
        DiscoveryEntry a = entries.stream().filter(e -> e.subsystemNqn().equals(InJvmTarget.NQN_A)).findFirst()
            .orElseThrow();
        assertThat(a.transportType()).isEqualTo(3);
        assertThat(a.subsystemType()).isEqualTo(DiscoveryEntry.SUBTYPE_NVM);
        assertThat(a.address()).isEqualTo(target.ioAddress());
        // An entry is directly usable to connect.
        try (NvmeofController viaDiscovery = host.connect(a.address(), a.subsystemNqn(),
            ConnectOptions.defaults().withIoQueues(1).withDisableSqFlowControl(a.supportsSqFlowControlDisable()))) {
            assertThat(viaDiscovery.namespaces()).hasSize(2);
        }
    }

    @Test
    void shouldRefuseIoAfterClose() throws Exception {
        NvmeofController other = host.connect(target.ioAddress(), InJvmTarget.NQN_A,
            ConnectOptions.defaults().withIoQueues(1).withKeepAliveTimeout(Duration.ofSeconds(2)));
        NvmeofNamespace ns = other.namespace(1);
        ns.write(0, Bytes.random(512, 1)).get(TIMEOUT_S, TimeUnit.SECONDS);
        other.close();
        assertThat(other.state()).isEqualTo(ControllerState.CLOSED);
        assertThat(host.controllers()).doesNotContain(other);
        assertThatThrownBy(() -> ns.read(0, 1).get(TIMEOUT_S, TimeUnit.SECONDS))
            .cause().isInstanceOf(NvmeofIoException.class).hasMessageContaining("closed");
    }
}
