package io.nvmeof4j.initiator;

import io.nvmeof4j.protocol.spi.host.HostStatus;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Keep-alive, command timeouts, reconnect after the target goes away, and the controller-loss timeout. */
class RecoveryIT {
    private static final long TIMEOUT_S = 20;

    @TempDir
    Path dir;

    private static void eventually(String what, long millis, BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + millis * 1_000_000L;
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("not within " + millis + " ms: " + what);
            }
            Thread.sleep(10);
        }
    }

    @Test
    void shouldHoldAnIdleConnectionBeyondThreeKeepAliveTimeouts() throws Exception {
        try (InJvmTarget target = new InJvmTarget(dir);
             NvmeofHost host = NvmeofHost.create(HostIdentity.generate(), 1)) {
            NvmeofController controller = host.connect(target.ioAddress(), InJvmTarget.NQN_A,
                ConnectOptions.defaults().withIoQueues(1).withKeepAliveTimeout(Duration.ofSeconds(1)));
            int cntlid = controller.controllerId();
            Thread.sleep(3_500); // idle: only Keep Alive keeps the target from declaring the controller dead
            assertThat(controller.state()).isEqualTo(ControllerState.LIVE);
            assertThat(controller.reconnectCount()).isZero();
            assertThat(controller.controllerId()).isEqualTo(cntlid);
            assertThat(target.daemon().registry().controller(cntlid)).as("the target's controller").isNotNull();
            ByteBuffer data = Bytes.random(4096, 1);
            controller.namespace(1).write(8, data).get(TIMEOUT_S, TimeUnit.SECONDS);
            assertThat(Bytes.array(controller.namespace(1).read(8, 8).get(TIMEOUT_S, TimeUnit.SECONDS)))
                .isEqualTo(Bytes.array(data));
        }
    }

    @Test
    void shouldFailATimedOutCommandNamingQueueAndCidThenReconnect() throws Exception {
        try (InJvmTarget target = new InJvmTarget(dir);
             FreezableProxy proxy = new FreezableProxy(target.ioAddress());
             NvmeofHost host = NvmeofHost.create(HostIdentity.generate(), 1)) {
            NvmeofController controller = host.connect(proxy.address(), InJvmTarget.NQN_A,
                ConnectOptions.defaults().withIoQueues(1).withKeepAliveTimeout(Duration.ofSeconds(30))
                    .withCommandTimeout(Duration.ofMillis(500))
                    .withReconnect(Duration.ofMillis(100), Duration.ofMillis(500), Duration.ofSeconds(30)));
            NvmeofNamespace ns = controller.namespace(1);
            ns.write(0, Bytes.random(512, 3)).get(TIMEOUT_S, TimeUnit.SECONDS);

            proxy.freeze();
            long start = System.nanoTime();
            CompletableFuture<ByteBuffer> stuck = ns.read(0, 1);
            assertThatThrownBy(() -> stuck.get(TIMEOUT_S, TimeUnit.SECONDS))
                .isInstanceOf(ExecutionException.class)
                .cause()
                .isInstanceOf(NvmeofIoException.class)
                .hasMessageContaining("HOST_ABORTED_COMMAND")
                .hasMessageContaining("Read command (CID ")
                .hasMessageContaining("on I/O queue 1 to " + proxy.address())
                .hasMessageContaining("no completion within 500 ms")
                .satisfies(e -> assertThat(((NvmeofIoException) e).status() & 0x7FF)
                    .isEqualTo(HostStatus.HOST_ABORTED_COMMAND));
            assertThat(System.nanoTime() - start).isLessThan(TimeUnit.SECONDS.toNanos(5));
            assertThat(controller.state()).isEqualTo(ControllerState.RECONNECTING);

            // I/O submitted while reconnecting waits, then completes once the target answers again.
            ByteBuffer data = Bytes.random(4096, 4);
            CompletableFuture<Void> waiting = ns.write(64, data);
            Thread.sleep(200);
            assertThat(waiting).isNotDone();
            proxy.dropConnections();
            proxy.thaw();
            waiting.get(TIMEOUT_S, TimeUnit.SECONDS);
            eventually("LIVE again", 10_000, () -> controller.state() == ControllerState.LIVE);
            assertThat(controller.reconnectCount()).isGreaterThanOrEqualTo(1);
            assertThat(Bytes.array(ns.read(64, 8).get(TIMEOUT_S, TimeUnit.SECONDS))).isEqualTo(Bytes.array(data));
        }
    }

    @Test
    void shouldRequeueIoInFlightWhenTheConnectionDrops() throws Exception {
        try (InJvmTarget target = new InJvmTarget(dir);
             FreezableProxy proxy = new FreezableProxy(target.ioAddress());
             NvmeofHost host = NvmeofHost.create(HostIdentity.generate(), 1)) {
            NvmeofController controller = host.connect(proxy.address(), InJvmTarget.NQN_A,
                ConnectOptions.defaults().withIoQueues(2).withKeepAliveTimeout(Duration.ofSeconds(30))
                    .withReconnect(Duration.ofMillis(100), Duration.ofMillis(500), Duration.ofSeconds(30)));
            NvmeofNamespace ns = controller.namespace(2);
            proxy.freeze();
            // In flight (sent, held by the frozen proxy) when every connection drops: requeued, not failed.
            List<CompletableFuture<Void>> writes = new java.util.ArrayList<>();
            List<ByteBuffer> data = new java.util.ArrayList<>();
            for (int i = 0; i < 16; i++) {
                ByteBuffer b = Bytes.random(4096 * (1 + i % 8), 100 + i);
                data.add(b);
                writes.add(ns.write(i * 16L, b));
            }
            Thread.sleep(200);
            assertThat(writes).noneMatch(CompletableFuture::isDone);
            proxy.dropConnections();
            proxy.thaw();
            CompletableFuture.allOf(writes.toArray(new CompletableFuture[0])).get(TIMEOUT_S, TimeUnit.SECONDS);
            assertThat(controller.reconnectCount()).isGreaterThanOrEqualTo(1);
            for (int i = 0; i < 16; i++) {
                ByteBuffer back = ns.read(i * 16L, data.get(i).remaining() / 4096).get(TIMEOUT_S, TimeUnit.SECONDS);
                assertThat(Bytes.array(back)).as("write %d", i).isEqualTo(Bytes.array(data.get(i)));
            }
        }
    }

    @Test
    void shouldReconnectAfterTheDaemonRestartsAndKeepTheFileData() throws Exception {
        try (InJvmTarget target = new InJvmTarget(dir);
             NvmeofHost host = NvmeofHost.create(InJvmTarget.HOST_B, 1)) {
            NvmeofController controller = host.connect(target.ioAddress(), InJvmTarget.NQN_B,
                ConnectOptions.defaults().withIoQueues(2).withKeepAliveTimeout(Duration.ofSeconds(1))
                    .withReconnect(Duration.ofMillis(200), Duration.ofSeconds(1), Duration.ofSeconds(60)));
            NvmeofNamespace ns = controller.namespace(1);
            assertThat(ns.blockSize()).isEqualTo(4096);
            ByteBuffer before = Bytes.random(128 * 1024, 5);
            ns.write(100, before, true).get(TIMEOUT_S, TimeUnit.SECONDS);
            int firstCntlid = controller.controllerId();
            List<NamespaceListenerCall> calls = new java.util.concurrent.CopyOnWriteArrayList<>();
            controller.addNamespaceListener((c, changed, now) -> calls.add(new NamespaceListenerCall(changed, now)));

            target.stop();
            eventually("RECONNECTING", 10_000, () -> controller.state() == ControllerState.RECONNECTING);
            // Submitted while the target is away: waits for the reconnect instead of failing.
            ByteBuffer during = Bytes.random(8192, 6);
            CompletableFuture<Void> write = ns.write(200, during);
            CompletableFuture<ByteBuffer> read = ns.read(100, 32);
            Thread.sleep(500);
            assertThat(write).isNotDone();
            assertThat(read).isNotDone();

            target.restart();
            write.get(TIMEOUT_S, TimeUnit.SECONDS);
            assertThat(Bytes.array(read.get(TIMEOUT_S, TimeUnit.SECONDS))).isEqualTo(Bytes.array(before));
            assertThat(controller.state()).isEqualTo(ControllerState.LIVE);
            assertThat(controller.reconnectCount()).isGreaterThanOrEqualTo(1);
            assertThat(Bytes.array(ns.read(200, 2).get(TIMEOUT_S, TimeUnit.SECONDS))).isEqualTo(Bytes.array(during));
            assertThat(controller.namespace(1)).as("same namespace object after reconnect").isSameAs(ns);
            assertThat(firstCntlid).isPositive();
            assertThat(calls).as("namespaces unchanged: no listener call").isEmpty();
        }
    }

    record NamespaceListenerCall(List<Integer> changed, List<NvmeofNamespace> now) { }

    @Test
    void shouldFailWaitingIoAfterTheControllerLossTimeout() throws Exception {
        try (InJvmTarget target = new InJvmTarget(dir);
             NvmeofHost host = NvmeofHost.create(HostIdentity.generate(), 1)) {
            NvmeofController controller = host.connect(target.ioAddress(), InJvmTarget.NQN_A,
                ConnectOptions.defaults().withIoQueues(1).withKeepAliveTimeout(Duration.ofSeconds(1))
                    .withReconnect(Duration.ofMillis(100), Duration.ofMillis(300), Duration.ofMillis(1500)));
            NvmeofNamespace ns = controller.namespace(1);
            target.stop();
            eventually("RECONNECTING", 10_000, () -> controller.state() != ControllerState.LIVE);
            CompletableFuture<ByteBuffer> waiting = ns.read(0, 1);
            assertThatThrownBy(() -> waiting.get(TIMEOUT_S, TimeUnit.SECONDS))
                .cause()
                .isInstanceOf(NvmeofIoException.class)
                .hasMessageContaining("HOST_PATH_ERROR")
                .hasMessageContaining("lost")
                .hasMessageContaining("controller-loss timeout of 1500 ms")
                .hasMessageContaining("last error");
            assertThat(controller.state()).isEqualTo(ControllerState.LOST);
            // New I/O fails at once, with the same explanation.
            int[] status = {-1};
            CompletableFuture<Void> done = new CompletableFuture<>();
            assertThat(ns.submitRead(0, 1, ByteBuffer.allocateDirect(512), (s, c) -> {
                status[0] = s;
                done.complete(null);
            }, null)).isTrue();
            done.get(5, TimeUnit.SECONDS);
            assertThat(status[0] & 0x7FF).isEqualTo(HostStatus.HOST_PATH_ERROR);
        }
    }
}
