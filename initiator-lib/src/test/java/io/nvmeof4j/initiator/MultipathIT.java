package io.nvmeof4j.initiator;

import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.nvmeof4j.protocol.ana.AnaState;
import io.nvmeof4j.protocol.command.NvmeStatus;
import io.nvmeof4j.protocol.spi.TransportAddress;
import io.nvmeof4j.protocol.spi.TransportType;
import io.nvmeof4j.protocol.spi.host.HostStatus;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Multipath against our target in this JVM, reached over two TCP proxies on 127.0.0.1 (two paths to one
 * subsystem): path selection per policy and ANA state, failover of in-flight and new writes when one proxy's port
 * closes (its connections and its listener go away), verified by reading every block back, the path re-added when
 * the port comes back, and the per-path meters.
 */
class MultipathIT {
    private static final int BLOCK = 4096;

    @TempDir
    Path dir;

    private InJvmTarget target;
    private FreezableProxy proxy0;
    private FreezableProxy proxy1;
    private NvmeofHost host;
    private SimpleMeterRegistry registry;

    @BeforeEach
    void start() throws Exception {
        target = new InJvmTarget(dir);
        proxy0 = new FreezableProxy(target.ioAddress());
        proxy1 = new FreezableProxy(target.ioAddress());
        registry = new SimpleMeterRegistry();
        host = NvmeofHost.create(HostIdentity.defaultIdentity(), 1, registry);
    }

    @AfterEach
    void stop() {
        host.close();
        proxy0.close();
        proxy1.close();
        target.close();
    }

    private static ConnectOptions options() {
        return ConnectOptions.defaults().withIoQueues(1).withKeepAliveTimeout(Duration.ofSeconds(1))
            .withCommandTimeout(Duration.ofSeconds(5))
            .withReconnect(Duration.ofMillis(100), Duration.ofMillis(200), Duration.ofSeconds(30));
    }

    private MultipathController connect(IoPolicy policy) throws Exception {
        return host.connectMultipath(List.of(proxy0.address(), proxy1.address()), InJvmTarget.NQN_A, options(),
            policy);
    }

    @Test
    void shouldPickOptimizedPathsFirstPerPolicy() throws Exception {
        try (MultipathController mp = connect(IoPolicy.NUMA)) {
            MultipathNamespace ns = mp.namespace(2);
            assertThat(ns.blockSize()).isEqualTo(BLOCK);
            assertThat(mp.select(ns, -1)).as("numa, both optimized: the first path").isZero();
            assertThat(mp.select(ns, 0)).as("avoiding the path an I/O just failed on").isEqualTo(1);
            ns.anaState.set(0, AnaState.INACCESSIBLE);
            assertThat(mp.select(ns, -1)).isEqualTo(1);
            assertThat(mp.select(ns, 1)).as("the avoided path when it is the only usable one").isEqualTo(1);
            ns.anaState.set(1, AnaState.PERSISTENT_LOSS);
            assertThat(mp.select(ns, -1)).as("no usable path").isEqualTo(-1);
            ns.anaState.set(0, AnaState.NON_OPTIMIZED);
            ns.anaState.set(1, AnaState.CHANGE);
            assertThat(mp.select(ns, -1)).as("non-optimized when nothing is optimized").isZero();
            ns.anaState.set(1, AnaState.OPTIMIZED);
            assertThat(mp.select(ns, -1)).as("optimized before non-optimized").isEqualTo(1);

            mp.ioPolicy(IoPolicy.ROUND_ROBIN);
            ns.anaState.set(0, AnaState.OPTIMIZED);
            Set<Integer> picked = new HashSet<>();
            int previous = mp.select(ns, -1);
            for (int i = 0; i < 4; i++) {
                int p = mp.select(ns, -1);
                assertThat(p).as("round-robin alternates").isNotEqualTo(previous);
                picked.add(p);
                previous = p;
            }
            assertThat(picked).containsExactlyInAnyOrder(0, 1);
            ns.anaState.set(0, AnaState.NON_OPTIMIZED);
            for (int i = 0; i < 4; i++) {
                assertThat(mp.select(ns, -1)).as("round-robin over the optimized paths only").isEqualTo(1);
            }

            mp.ioPolicy(IoPolicy.QUEUE_DEPTH);
            ns.anaState.set(0, AnaState.OPTIMIZED);
            mp.paths[0].inFlight.addAndGet(5);
            assertThat(mp.select(ns, -1)).as("queue-depth: the path with fewer I/Os in flight").isEqualTo(1);
            mp.paths[1].inFlight.addAndGet(10);
            assertThat(mp.select(ns, -1)).isZero();
            ns.anaState.set(0, AnaState.NON_OPTIMIZED);
            assertThat(mp.select(ns, -1)).as("queue-depth: optimized first, however deep").isEqualTo(1);
            mp.paths[0].inFlight.addAndGet(-5);
            mp.paths[1].inFlight.addAndGet(-10);
        }
    }

    @Test
    void shouldTakeRoundRobinTurnsPerReactorRoundAndKeepTheSharesFair() throws Exception {
        try (MultipathController mp = connect(IoPolicy.ROUND_ROBIN)) {
            MultipathNamespace ns = mp.namespace(2);
            HostReactor reactor = host.reactor(TransportType.TCP, 0);
            // Uneven batches, as completions of a large and a small batch come back in separate rounds: turns per
            // round (not per I/O count) would lock the large batch onto one path.
            int[] batches = {16, 1, 15, 2, 9, 1, 1, 12, 3, 16, 5, 1};
            long[] share = new long[2];
            long total = 0;
            long[] round = new long[1];
            long lastRound = -1;
            long roundIos = 0;
            long largestRound = 0;
            for (int i = 0; i < 240; i++) {
                int batch = batches[i % batches.length];
                int path = onReactor(reactor, () -> {
                    round[0] = ((HostReactor.ReactorThread) Thread.currentThread()).round;
                    int first = mp.select(ns, -1);
                    for (int k = 1; k < batch; k++) {
                        if (mp.select(ns, -1) != first) {
                            return -2;
                        }
                    }
                    return first;
                });
                assertThat(path).as("every I/O of one reactor round down one path").isNotNegative();
                share[path] += batch;
                total += batch;
                // Tasks handed over quickly can share one reactor round: the bound is the largest round's I/O.
                roundIos = round[0] == lastRound ? roundIos + batch : batch;
                lastRound = round[0];
                largestRound = Math.max(largestRound, roundIos);
                assertThat(Math.abs(share[0] - share[1])).as("shares after %d I/Os: %d / %d", total, share[0],
                    share[1]).isLessThanOrEqualTo(largestRound);
            }
            assertThat(largestRound).as("most tasks had a round of their own").isLessThan(total / 4);

            ns.anaState.set(0, AnaState.NON_OPTIMIZED);
            for (int i = 0; i < 6; i++) {
                assertThat(onReactor(reactor, () -> mp.select(ns, -1))).as("optimized paths only").isEqualTo(1);
            }
            ns.anaState.set(0, AnaState.OPTIMIZED);
            int[] midRound = new int[3];
            onReactor(reactor, () -> {
                midRound[0] = mp.select(ns, -1);
                ns.anaState.set(midRound[0], AnaState.INACCESSIBLE); // the round's path goes away mid-round
                midRound[1] = mp.select(ns, -1);
                midRound[2] = mp.select(ns, -1);
                ns.anaState.set(midRound[0], AnaState.OPTIMIZED);
                return 0;
            });
            assertThat(midRound[1]).as("the rest of the round on the usable path").isEqualTo(1 - midRound[0])
                .isEqualTo(midRound[2]);

            mp.roundRobinPerIo(true);
            assertThat(onReactor(reactor, () -> mp.select(ns, -1) + mp.select(ns, -1))).as("per I/O: 0 then 1")
                .isEqualTo(1);
            mp.roundRobinPerIo(false);
            assertThat(mp.select(ns, -1) + mp.select(ns, -1)).as("off the reactors: one I/O per turn").isEqualTo(1);
        }
    }

    /** Runs {@code task} as one host reactor task (within one reactor round) and returns its result. */
    private static int onReactor(HostReactor reactor, java.util.function.IntSupplier task) throws Exception {
        CompletableFuture<Integer> f = new CompletableFuture<>();
        reactor.execute(() -> {
            try {
                f.complete(task.getAsInt());
            } catch (Throwable t) {
                f.completeExceptionally(t);
            }
        });
        return f.get(10, TimeUnit.SECONDS);
    }

    @Test
    void shouldSpreadRealIoByPolicyAndCountItPerPath() throws Exception {
        try (MultipathController mp = connect(IoPolicy.ROUND_ROBIN)) {
            MultipathNamespace ns = mp.namespace(2);
            writeAndVerify(ns, 0, 100, 1);
            List<PathStats> s = mp.pathStats();
            assertThat(s.get(0).completed() + s.get(1).completed()).isEqualTo(200); // 100 writes, 100 reads
            assertThat(s.get(0).completed()).as("round-robin: both paths carry I/O").isBetween(90L, 110L);

            ns.anaState.set(0, AnaState.INACCESSIBLE);
            writeAndVerify(ns, 100, 50, 2);
            List<PathStats> t = mp.pathStats();
            assertThat(t.get(0).submitted()).as("nothing on an inaccessible path").isEqualTo(s.get(0).submitted());
            assertThat(t.get(1).completed() - s.get(1).completed()).isEqualTo(100);

            mp.ioPolicy(IoPolicy.NUMA);
            ns.anaState.set(0, AnaState.OPTIMIZED);
            writeAndVerify(ns, 200, 50, 3);
            List<PathStats> u = mp.pathStats();
            assertThat(u.get(1).submitted()).as("numa: the first optimized path only").isEqualTo(t.get(1).submitted());
            assertThat(u.get(0).completed() - t.get(0).completed()).isEqualTo(100);
            assertThat(pathCounter(0, "completed")).isEqualTo(u.get(0).completed());
            assertThat(pathCounter(1, "completed")).isEqualTo(u.get(1).completed());
            assertThat(registry.get(HostMeterNames.PATH_LIVE).tag(HostMeterNames.TAG_PATH,
                proxy0.address().toString()).gauge().value()).isEqualTo(1.0);
        }
    }

    @Test
    void shouldFailOverInFlightAndNewWritesWhenAPortClosesAndReaddThePath() throws Exception {
        try (MultipathController mp = connect(IoPolicy.ROUND_ROBIN)) {
            MultipathNamespace ns = mp.namespace(2);
            int port0 = proxy0.address().port();
            AtomicReference<Throwable> failure = new AtomicReference<>();
            AtomicInteger written = new AtomicInteger();
            Semaphore window = new Semaphore(16);
            List<CompletableFuture<Void>> all = new ArrayList<>();
            long blocks = ns.blockCount();
            int total = 3000;
            for (int i = 0; i < total; i++) {
                if (!window.tryAcquire(30, TimeUnit.SECONDS)) {
                    throw new AssertionError("no write completed within 30 s; " + mp.pathStats());
                }
                if (i == 500) {
                    // Frozen first, so that the writes sent to path 0 from now on stay in flight there: the close
                    // below then always has I/O to fail over, however fast or slow this machine is right now.
                    proxy0.freeze();
                }
                if (i == 506) {
                    // Writes 500-505 took turns (this thread is no reactor: one I/O per turn), so 3 were sent to the
                    // frozen path and cannot complete there (writes sent before may still, if their completion had
                    // passed the proxy already).
                    assertThat(mp.pathStats().get(0).inFlight()).as("writes held on the frozen path: %s",
                        mp.pathStats()).isGreaterThanOrEqualTo(3);
                    proxy0.close(); // the port goes away with those writes in flight; it drops what it holds
                }
                long lba = i % blocks;
                CompletableFuture<Void> f = ns.write(lba, pattern(lba, 7), false).whenComplete((v, e) -> {
                    window.release();
                    if (e != null) {
                        failure.compareAndSet(null, e);
                    } else {
                        written.incrementAndGet();
                    }
                });
                all.add(f);
            }
            CompletableFuture.allOf(all.toArray(new CompletableFuture[0])).handle((v, e) -> null)
                .get(30, TimeUnit.SECONDS);
            assertThat(failure.get()).as("no write failed").isNull();
            assertThat(written.get()).isEqualTo(total);
            List<PathStats> after = mp.pathStats();
            assertThat(after.get(0).failedOver()).as("in-flight writes moved off the closed path: %s", after)
                .isGreaterThanOrEqualTo(3);
            assertThat(after.get(0).inFlight()).isZero();
            assertThat(after.get(0).state()).isEqualTo(ControllerState.RECONNECTING);
            assertThat(pathCounter(0, "failed_over")).isEqualTo(after.get(0).failedOver());
            verify(ns, 0, Math.min(total, (int) blocks), 7);

            // The port comes back: the path reconnects and carries I/O again.
            proxy0 = new FreezableProxy(target.ioAddress(), port0);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
            while (mp.controller(0).state() != ControllerState.LIVE && System.nanoTime() < deadline) {
                Thread.sleep(20);
            }
            assertThat(mp.controller(0).state()).as("path 0 re-added").isEqualTo(ControllerState.LIVE);
            long before = mp.pathStats().get(0).completed();
            writeAndVerify(ns, 0, 40, 8);
            assertThat(mp.pathStats().get(0).completed() - before).as("I/O on the re-added path").isPositive();
        }
    }

    @Test
    void shouldHoldIoWhileNoPathIsUsableAndSendItWhenOneComesBack() throws Exception {
        try (MultipathController mp = connect(IoPolicy.NUMA)) {
            MultipathNamespace ns = mp.namespace(2);
            int port1 = proxy1.address().port();
            proxy0.close();
            proxy1.close();
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while ((mp.controller(0).state() == ControllerState.LIVE || mp.controller(1).state() == ControllerState.LIVE)
                && System.nanoTime() < deadline) {
                Thread.sleep(10);
            }
            CompletableFuture<Void> held = ns.write(9, pattern(9, 4), true);
            Thread.sleep(500);
            assertThat(held).as("no usable path: the write waits").isNotDone();
            proxy1 = new FreezableProxy(target.ioAddress(), port1);
            held.get(15, TimeUnit.SECONDS);
            verify(ns, 9, 1, 4);
            assertThat(mp.controller(1).state()).isEqualTo(ControllerState.LIVE);
        }
    }

    @Test
    void shouldDiscoverEveryPathOfTheSubsystem() throws Exception {
        assertThat(host.discoverPaths(target.discoveryAddress(), InJvmTarget.NQN_A))
            .containsExactly(target.ioAddress());
        assertThat(host.discoverPaths(target.discoveryAddress(), "nqn.2014-08.io.nvmeof4j:nothing-here")).isEmpty();
    }

    @Test
    void shouldTreatSct3StatusesAsPathErrorsAndMapAnaStatuses() {
        assertThat(MultipathNamespace.isPathError(HostStatus.HOST_PATH_ERROR)).isTrue();
        assertThat(MultipathNamespace.isPathError(NvmeStatus.ANA_INACCESSIBLE)).isTrue();
        assertThat(MultipathNamespace.isPathError(HostStatus.HOST_ABORTED_COMMAND)).isTrue();
        assertThat(MultipathNamespace.isPathError(HostStatus.HOST_PATH_ERROR | NvmeStatus.DNR)).isFalse();
        assertThat(MultipathNamespace.isPathError(NvmeStatus.RESERVATION_CONFLICT)).isFalse();
        assertThat(MultipathNamespace.isPathError(0x080)).isFalse();
        assertThat(MultipathNamespace.anaStateOf(NvmeStatus.ANA_INACCESSIBLE)).isEqualTo(AnaState.INACCESSIBLE);
        assertThat(MultipathNamespace.anaStateOf(NvmeStatus.ANA_PERSISTENT_LOSS))
            .isEqualTo(AnaState.PERSISTENT_LOSS);
        assertThat(MultipathNamespace.anaStateOf(NvmeStatus.ANA_TRANSITION)).isEqualTo(AnaState.CHANGE);
        assertThat(MultipathNamespace.anaStateOf(HostStatus.HOST_PATH_ERROR)).isZero();
    }

    private double pathCounter(int path, String outcome) {
        TransportAddress a = path == 0 ? proxy0.address() : proxy1.address();
        FunctionCounter c = registry.get(HostMeterNames.PATH_IOS).tag(HostMeterNames.TAG_PATH, a.toString())
            .tag(HostMeterNames.TAG_OUTCOME, outcome).functionCounter();
        return c.count();
    }

    static ByteBuffer pattern(long lba, int generation) {
        ByteBuffer b = ByteBuffer.allocateDirect(BLOCK);
        for (int i = 0; i < BLOCK; i += 8) {
            b.putLong(i, lba * 0x9E3779B97F4A7C15L ^ (long) generation << 48 ^ i);
        }
        return b;
    }

    private static void writeAndVerify(BlockNamespace ns, long first, int count, int generation) throws Exception {
        for (long lba = first; lba < first + count; lba++) {
            ns.write(lba, pattern(lba, generation), false).get(30, TimeUnit.SECONDS);
        }
        verify(ns, first, count, generation);
    }

    private static void verify(BlockNamespace ns, long first, int count, int generation) throws Exception {
        ByteBuffer back = ByteBuffer.allocateDirect(BLOCK);
        for (long lba = first; lba < first + count; lba++) {
            back.clear();
            ns.read(lba, back).get(30, TimeUnit.SECONDS);
            back.clear();
            assertThat(back).as("block %d", lba).isEqualTo(pattern(lba, generation));
        }
    }
}
