package io.nvmeof4j.it.tcp;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.nvmeof4j.initiator.ConnectOptions;
import io.nvmeof4j.initiator.ControllerState;
import io.nvmeof4j.initiator.IoPolicy;
import io.nvmeof4j.initiator.MultipathController;
import io.nvmeof4j.initiator.MultipathNamespace;
import io.nvmeof4j.initiator.NvmeofHost;
import io.nvmeof4j.initiator.PathStats;
import io.nvmeof4j.protocol.ana.AnaState;
import io.nvmeof4j.protocol.spi.TransportAddress;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.net.ServerSocket;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Our initiator's multipath against two daemon processes ({@code bin/nvmeof-target}) serving one subsystem from one
 * shared file, each on its own port of 127.0.0.1 (disjoint CNTLID ranges; daemon A's port ANA optimized, B's
 * non-optimized): I/O goes to the optimized path only; daemon A is killed with SIGKILL under a window of 16 writes
 * and every write still succeeds (the in-flight ones redone on B) and reads back intact; A restarted on the same
 * port is re-added and, optimized again, carries the I/O once more.
 */
class MultipathFailoverIT {
    private static final String NQN = "nqn.2014-08.io.nvmeof4j:multipath-it";
    private static final io.nvmeof4j.initiator.HostIdentity HOST = io.nvmeof4j.initiator.HostIdentity.of(
        "nqn.2014-08.io.nvmeof4j:multipath-it-host", UUID.fromString("cccccccc-3333-4333-8333-000000000003"));

    /** perf's progress line over two paths ends with {@code in flight per path A/B}; whole lines only. */
    private static final Pattern IN_FLIGHT = Pattern.compile("in flight per path (\\d+)/(\\d+)\\R");

    @TempDir
    Path dir;

    @Test
    void shouldFailOverVerifiedWritesWhenADaemonIsKilledAndReaddItWhenItComesBack() throws Exception {
        Path image = image("shared.img");
        int portA = freePort();
        int portB = freePort();
        Path configA = config("a", image, portA, 1, 99, "optimized");
        Path configB = config("b", image, portB, 100, 199, "non-optimized");
        ConnectOptions options = ConnectOptions.defaults().withIoQueues(1).withKeepAliveTimeout(Duration.ofSeconds(1))
            .withCommandTimeout(Duration.ofSeconds(5))
            .withReconnect(Duration.ofMillis(200), Duration.ofMillis(500), Duration.ofSeconds(120));
        DaemonProcess a = daemon(configA, "a1", portA);
        try (DaemonProcess b = daemon(configB, "b", portB);
             NvmeofHost host = NvmeofHost.create(HOST, 1);
             MultipathController mp = host.connectMultipath(List.of(TransportAddress.tcp("127.0.0.1", portA),
                 TransportAddress.tcp("127.0.0.1", portB)), NQN, options, IoPolicy.ROUND_ROBIN)) {
            MultipathNamespace ns = mp.namespace(1);
            assertThat(ns).as("namespace 1 over both paths").isNotNull();
            assertThat(ns.anaState(0)).as("ANA log of daemon A").isEqualTo(AnaState.OPTIMIZED);
            assertThat(ns.anaState(1)).as("ANA log of daemon B").isEqualTo(AnaState.NON_OPTIMIZED);
            writeAndVerify(ns, 0, 50, 1);
            assertThat(mp.pathStats().get(1).submitted()).as("round-robin over optimized paths only: nothing on B")
                .isZero();

            // SIGKILL daemon A under load.
            AtomicReference<Throwable> failure = new AtomicReference<>();
            AtomicInteger written = new AtomicInteger();
            Semaphore window = new Semaphore(16);
            List<CompletableFuture<Void>> all = new ArrayList<>();
            int total = 4000;
            int blocks = (int) Math.min(ns.blockCount(), 4096);
            CompletableFuture<Void> killed = null;
            DaemonProcess victim = a;
            for (int i = 0; i < total; i++) {
                if (!window.tryAcquire(60, TimeUnit.SECONDS)) {
                    throw new AssertionError("no write completed within 60 s; " + mp.pathStats());
                }
                if (i == 1000) {
                    // Stopped first (SIGSTOP): writes sent to A from now on stay in flight there, so the kill always
                    // has writes to fail over, however fast or slow this machine is right now.
                    victim.freeze();
                }
                long lba = i % blocks;
                all.add(ns.write(lba, pattern(lba, 2, ns.blockSize()), false).whenComplete((v, e) -> {
                    window.release();
                    if (e != null) {
                        failure.compareAndSet(null, e);
                    } else {
                        written.incrementAndGet();
                    }
                }));
                if (i == 1000) {
                    // Write 1000 went to A (the one optimized path) after the stop: it cannot complete there.
                    assertThat(mp.pathStats().get(0).inFlight()).as("writes held by the stopped daemon A: %s",
                        mp.pathStats()).isPositive();
                    // From another thread, so that writes keep going out while the process dies.
                    killed = CompletableFuture.runAsync(() -> {
                        try {
                            victim.kill();
                        } catch (InterruptedException e) {
                            Thread.currentThread().interrupt();
                        }
                    });
                }
            }
            CompletableFuture.allOf(all.toArray(new CompletableFuture[0])).handle((v, e) -> null)
                .get(120, TimeUnit.SECONDS);
            killed.get(30, TimeUnit.SECONDS);
            assertThat(failure.get()).as("no write failed; paths %s", mp.pathStats()).isNull();
            assertThat(written.get()).isEqualTo(total);
            List<PathStats> afterKill = mp.pathStats();
            System.out.printf("[multipath] after SIGKILL of daemon A: %s%n", afterKill);
            assertThat(afterKill.get(0).failedOver()).as("writes in flight on A moved to B: %s", afterKill)
                .isPositive();
            assertThat(afterKill.get(1).completed()).as("B carried the rest").isGreaterThan(0);
            assertThat(afterKill.get(0).state()).isEqualTo(ControllerState.RECONNECTING);
            verify(ns, 0, Math.min(total, blocks), 2);

            // A comes back on the same port: re-added, optimized again, and preferred again.
            a = daemon(configA, "a2", portA);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while ((mp.controller(0) == null || mp.controller(0).state() != ControllerState.LIVE
                || ns.anaState(0) != AnaState.OPTIMIZED) && System.nanoTime() < deadline) {
                Thread.sleep(50);
            }
            assertThat(mp.controller(0).state()).as("path A re-added").isEqualTo(ControllerState.LIVE);
            assertThat(ns.anaState(0)).isEqualTo(AnaState.OPTIMIZED);
            PathStats bBefore = mp.pathStats().get(1);
            long aBefore = mp.pathStats().get(0).completed();
            writeAndVerify(ns, 0, 50, 3);
            assertThat(mp.pathStats().get(0).completed() - aBefore).as("A carries the I/O again").isEqualTo(100);
            assertThat(mp.pathStats().get(1).submitted()).as("nothing more on non-optimized B")
                .isEqualTo(bBefore.submitted());
        } finally {
            a.close();
        }
    }

    /**
     * {@code bin/nvmeof perf --verify} (a process) over both daemons, round-robin (both optimized), with daemon A
     * SIGKILLed a few seconds into the run: exit 0, no I/O error, no mismatch, A's in-flight I/O failed over. A is
     * stopped (SIGSTOP) first and killed once perf's progress line shows I/O in flight on it, so the kill always
     * has I/O to fail over.
     */
    @Test
    void shouldKeepPerfVerifyingWhileADaemonIsKilled() throws Exception {
        Path image = image("perf.img");
        int portA = freePort();
        int portB = freePort();
        Path configA = config("pa", image, portA, 1, 99, "optimized");
        Path configB = config("pb", image, portB, 100, 199, "optimized");
        Path out = dir.resolve("perf.out");
        Path err = dir.resolve("perf.err");
        try (DaemonProcess a = daemon(configA, "pa", portA);
             DaemonProcess b = daemon(configB, "pb", portB)) {
            Process perf = new ProcessBuilder(DaemonProcess.launcher().resolveSibling("nvmeof").toString(), "perf",
                "-t", "tcp", "-a", "127.0.0.1,127.0.0.1", "-s", portA + "," + portB, "-n", NQN, "-q", HOST.hostNqn().value(),
                "--iopolicy", "round-robin", "--reconnect-delay", "1", "--workload", "randwrite", "--verify",
                "--io-size", "4K", "--queue-depth", "16", "--time", "8", "--json")
                .redirectOutput(out.toFile()).redirectError(err.toFile()).start();
            try {
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
                while (!Files.readString(err).contains("nvmeof perf:") && perf.isAlive()
                    && System.nanoTime() < deadline) {
                    Thread.sleep(100);
                }
                Thread.sleep(2500);
                a.freeze();
                // The first progress line after the stop may have counted before it; from the second on, the count
                // is of I/O that can no longer complete on A, so it only grows until the kill.
                long stuck = 0;
                int lines = 0;
                int from = Files.readString(err).length();
                while ((lines < 2 || stuck == 0) && lines < 6 && perf.isAlive() && System.nanoTime() < deadline) {
                    String text = Files.readString(err);
                    Matcher m = IN_FLIGHT.matcher(text);
                    if (from <= text.length() && m.find(from)) {
                        lines++;
                        stuck = lines < 2 ? 0 : Long.parseLong(m.group(1));
                        from = m.end();
                    } else {
                        Thread.sleep(50);
                    }
                }
                assertThat(stuck).as("I/O held by the stopped daemon A; perf stderr:%n%s", Files.readString(err))
                    .isPositive();
                a.kill();
                assertThat(perf.waitFor(120, TimeUnit.SECONDS)).as("perf ended").isTrue();
                String stdout = Files.readString(out);
                assertThat(perf.exitValue()).as("perf exit; stderr:%n%s", Files.readString(err)).isZero();
                com.fasterxml.jackson.databind.JsonNode s = new ObjectMapper().readTree(
                    stdout.lines().filter(l -> l.startsWith("{")).reduce((x, y) -> y).orElseThrow());
                System.out.printf("[multipath] perf --verify with daemon A killed: %s%n", s);
                assertThat(s.get("errors").asLong()).isZero();
                assertThat(s.get("mismatches").asLong()).isZero();
                assertThat(s.get("verified").asLong()).isPositive();
                com.fasterxml.jackson.databind.JsonNode paths = s.get("paths");
                assertThat(paths.get(0).get("failed_over").asLong()).as("%s", paths).isGreaterThanOrEqualTo(stuck);
                assertThat(paths.get(0).get("in_flight").asLong()).isZero();
                assertThat(paths.get(0).get("state").asText()).isEqualTo("RECONNECTING");
                assertThat(paths.get(1).get("completed").asLong()).isGreaterThan(paths.get(0).get("completed")
                    .asLong());
            } finally {
                perf.destroyForcibly();
            }
        }
    }

    /** A 32 MiB file both daemons serve as their namespace: the paths' I/O meets in it. */
    private Path image(String name) throws IOException {
        Path image = dir.resolve(name);
        try (RandomAccessFile f = new RandomAccessFile(image.toFile(), "rw")) {
            f.setLength(32L << 20);
        }
        return image;
    }

    private DaemonProcess daemon(Path config, String name, int port) throws Exception {
        return DaemonProcess.start(List.of(DaemonProcess.launcher().toString(), "--config",
            config.toString()), dir.resolve("daemon-" + name + ".log"), port);
    }

    private Path config(String name, Path image, int port, int cntlidMin, int cntlidMax, String anaState)
        throws IOException {
        Path d = Files.createDirectories(dir.resolve(name));
        String json = """
            {
              "nvmeof4j": {"http": "off", "reactors": 1, "buffer_pool_mib": 16},
              "ports": [
                {"portid": 1, "addr": {"trtype": "tcp", "adrfam": "ipv4", "traddr": "127.0.0.1", "trsvcid": "%3$d"},
                 "ana_groups": [{"grpid": 1, "ana": {"state": "%6$s"}}],
                 "subsystems": ["%1$s"]}
              ],
              "subsystems": [
                {"nqn": "%1$s", "attr": {"allow_any_host": "1", "cntlid_min": %4$d, "cntlid_max": %5$d},
                 "namespaces": [{"nsid": 1, "ana_grpid": 1, "device": {"path": %2$s, "shared": true}}]}
              ]
            }
            """.formatted(NQN, new ObjectMapper().writeValueAsString(image.toString()), port, cntlidMin, cntlidMax,
            anaState);
        Path file = d.resolve("target.json");
        Files.writeString(file, json, StandardCharsets.UTF_8);
        return file;
    }

    static ByteBuffer pattern(long lba, int generation, int blockSize) {
        ByteBuffer b = ByteBuffer.allocateDirect(blockSize);
        for (int i = 0; i < blockSize; i += 8) {
            b.putLong(i, lba * 0x9E3779B97F4A7C15L ^ (long) generation << 48 ^ i);
        }
        return b;
    }

    private static void writeAndVerify(MultipathNamespace ns, long first, int count, int generation) throws Exception {
        for (long lba = first; lba < first + count; lba++) {
            ns.write(lba, pattern(lba, generation, ns.blockSize()), false).get(30, TimeUnit.SECONDS);
        }
        verify(ns, first, count, generation);
    }

    private static void verify(MultipathNamespace ns, long first, int count, int generation) throws Exception {
        ByteBuffer back = ByteBuffer.allocateDirect(ns.blockSize());
        for (long lba = first; lba < first + count; lba++) {
            back.clear();
            ns.read(lba, back).get(30, TimeUnit.SECONDS);
            back.clear();
            assertThat(back).as("block %d", lba).isEqualTo(pattern(lba, generation, ns.blockSize()));
        }
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }
}
