package io.nvmeof4j.it.container;

import io.nvmeof4j.initiator.ConnectOptions;
import io.nvmeof4j.initiator.DiscoveryEntry;
import io.nvmeof4j.initiator.HostIdentity;
import io.nvmeof4j.initiator.NvmeofController;
import io.nvmeof4j.initiator.NvmeofHost;
import io.nvmeof4j.initiator.NvmeofNamespace;
import io.nvmeof4j.protocol.spi.TransportAddress;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Test layer 4: the daemon's container image ({@code deploy/Dockerfile}) started by Testcontainers with host
 * networking, driven by initiator-lib over NVMe/TCP on 127.0.0.1. See {@link TargetContainer} for the set-up.
 */
class TargetContainerIT {
    private static final Duration IO_TIMEOUT = Duration.ofSeconds(30);

    @BeforeAll
    static void buildImage() throws Exception {
        TargetContainer.buildImage();
    }

    /**
     * Discover, connect, write and read back on the file and the RAM namespace, then the same counts in the
     * daemon's Prometheus {@code /metrics}; after the container stopped, the file on the mounted volume holds
     * the written bytes.
     */
    @Test
    void shouldServeVerifiedIoAndMetricsFromTheImage(TestInfo info) throws Exception {
        Path dir = workDir(info);
        byte[] big = random(1, 1 << 20);
        byte[] mid = random(2, 128 << 10);
        byte[] small = random(3, TargetContainer.BLOCK_SIZE);
        long lastFileLba = TargetContainer.FILE_NAMESPACE_BYTES / TargetContainer.BLOCK_SIZE - 1;
        String logs;
        try (TargetContainer target = TargetContainer.start(dir);
             NvmeofHost host = NvmeofHost.create(HostIdentity.generate(), 1)) {
            List<DiscoveryEntry> entries = host.discover(TransportAddress.tcp("127.0.0.1", target.discoveryPort()));
            DiscoveryEntry entry = entries.stream()
                .filter(e -> e.subsystemType() == DiscoveryEntry.SUBTYPE_NVM && TargetContainer.NQN.equals(e.subsystemNqn()))
                .findFirst().orElseThrow(() -> new AssertionError("no entry for " + TargetContainer.NQN + " in " + entries));
            assertThat(entry.transportAddress()).isEqualTo("127.0.0.1");
            assertThat(entry.transportServiceId()).isEqualTo(Integer.toString(target.ioPort()));

            try (NvmeofController ctrl = host.connect(entry.address(), TargetContainer.NQN,
                ConnectOptions.defaults().withIoQueues(2))) {
                for (int nsid : new int[] {TargetContainer.FILE_NSID, TargetContainer.RAM_NSID}) {
                    NvmeofNamespace ns = ctrl.namespace(nsid);
                    assertThat(ns.blockSize()).as("nsid %d block size", nsid).isEqualTo(TargetContainer.BLOCK_SIZE);
                    assertThat(ns.sizeBytes()).as("nsid %d size", nsid).isEqualTo(nsid == TargetContainer.FILE_NSID
                        ? TargetContainer.FILE_NAMESPACE_BYTES : TargetContainer.RAM_NAMESPACE_BYTES);
                    long lastLba = ns.blockCount() - 1;
                    write(ns, 0, big);
                    write(ns, 1000, mid);
                    write(ns, lastLba, small);
                    assertThat(read(ns, 0, big.length)).as("nsid %d: 1 MiB at LBA 0", nsid).isEqualTo(big);
                    assertThat(read(ns, 1000, mid.length)).as("nsid %d: 128 KiB at LBA 1000", nsid).isEqualTo(mid);
                    assertThat(read(ns, lastLba, small.length)).as("nsid %d: last block", nsid).isEqualTo(small);
                    ns.flush().get(IO_TIMEOUT.toSeconds(), TimeUnit.SECONDS);
                }

                // Every I/O above went through the container's daemon: its meters count exactly these.
                // A command is counted once the daemon sent its response, a moment after the host may have it: wait
                // (bounded) for the last command, the RAM namespace's flush, then check everything exactly.
                Map<String, String> lastFlush = Map.of("subsystem", TargetContainer.NQN,
                    "nsid", Integer.toString(TargetContainer.RAM_NSID), "op", "flush");
                checkApiNeedsTheToken(target);
                String metrics = scrape(target.httpPort());
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
                while (total(metrics, "nvmeof_target_io_seconds_count", lastFlush).orElse(0) < 1
                    && System.nanoTime() < deadline) {
                    Thread.sleep(10);
                    metrics = scrape(target.httpPort());
                }
                long written = (long) big.length + mid.length + small.length;
                for (int nsid : new int[] {TargetContainer.FILE_NSID, TargetContainer.RAM_NSID}) {
                    Map<String, String> ns = Map.of("subsystem", TargetContainer.NQN, "nsid", Integer.toString(nsid));
                    assertThat(sample(metrics, "nvmeof_target_io_written_bytes_total", ns))
                        .as("written bytes of nsid %d in /metrics", nsid).isEqualTo(written);
                    assertThat(sample(metrics, "nvmeof_target_io_read_bytes_total", ns))
                        .as("read bytes of nsid %d in /metrics", nsid).isEqualTo(written);
                    assertThat(sample(metrics, "nvmeof_target_io_seconds_count", with(ns, "op", "write")))
                        .as("timed writes of nsid %d (an I/O over MDTS is split by the host)", nsid)
                        .isGreaterThanOrEqualTo(3);
                    assertThat(sample(metrics, "nvmeof_target_io_seconds_count", with(ns, "op", "read")))
                        .as("timed reads of nsid %d", nsid).isGreaterThanOrEqualTo(3);
                    assertThat(sample(metrics, "nvmeof_target_io_seconds_count", with(ns, "op", "flush")))
                        .as("timed flushes of nsid %d", nsid).isEqualTo(1);
                }
                assertThat(sample(metrics, "nvmeof_target_controllers", Map.of("subsystem", TargetContainer.NQN)))
                    .as("live controllers").isEqualTo(1);
            }
            target.sigterm();
            assertThat(target.awaitExit(TargetContainer.STOP_TIMEOUT)).as("exit code after SIGTERM; output:\n%s",
                TargetContainer.tail(target.log(), 30)).isZero();
            logs = target.log();
        }
        assertThat(logs).contains("nvmeof4j target stopped");
        assertThat(fileBytes(dir.resolve("ns1.img"), 0, big.length)).as("ns1.img at 0 on the host").isEqualTo(big);
        assertThat(fileBytes(dir.resolve("ns1.img"), 1000L * TargetContainer.BLOCK_SIZE, mid.length))
            .as("ns1.img at LBA 1000 on the host").isEqualTo(mid);
        assertThat(fileBytes(dir.resolve("ns1.img"), lastFileLba * TargetContainer.BLOCK_SIZE, small.length))
            .as("ns1.img last block on the host").isEqualTo(small);
        deleteWorkDir(dir);
    }

    /**
     * Writes (each LBA once, its block a pattern derived from the LBA) stream from four threads at 16 in flight
     * each; once 2,000 are acknowledged the container gets SIGTERM with writes in flight. The daemon must exit 0,
     * and every acknowledged write must be in the file on the mounted volume, read on the host after the container
     * stopped, and again through the initiator from a new container on the same volume.
     */
    @Test
    void shouldKeepEveryAcknowledgedWriteWhenStoppedWithSigtermUnderLoad(TestInfo info) throws Exception {
        Path dir = workDir(info);
        int bs = TargetContainer.BLOCK_SIZE;
        long blocks = TargetContainer.FILE_NAMESPACE_BYTES / bs;
        Set<Long> acknowledged = ConcurrentHashMap.newKeySet();
        AtomicInteger failed = new AtomicInteger();
        AtomicLong nextLba = new AtomicLong();
        AtomicInteger inFlight = new AtomicInteger();
        int inFlightAtSigterm;
        int ackedAtSigterm;
        int ackedAtExit;
        long stopMillis;
        int exitCode;
        String logs;
        // Short reconnect and loss timeouts: after the daemon is gone, writes still waiting fail within seconds
        // instead of being retried for the default 10 minutes.
        ConnectOptions options = ConnectOptions.defaults().withIoQueues(2)
            .withCommandTimeout(Duration.ofSeconds(10))
            .withReconnect(Duration.ofMillis(500), Duration.ofSeconds(1), Duration.ofSeconds(3));
        try (TargetContainer target = TargetContainer.start(dir);
             NvmeofHost host = NvmeofHost.create(HostIdentity.generate(), 1)) {
            NvmeofController ctrl = host.connect(TransportAddress.tcp("127.0.0.1", target.ioPort()),
                TargetContainer.NQN, options);
            NvmeofNamespace ns = ctrl.namespace(TargetContainer.FILE_NSID);
            List<Thread> writers = new ArrayList<>();
            long stopAt = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            for (int t = 0; t < 4; t++) {
                Thread w = new Thread(() -> {
                    Semaphore window = new Semaphore(16);
                    try {
                        // Until the daemon is gone (a write failed) or the LBAs or the time run out.
                        while (failed.get() == 0 && System.nanoTime() < stopAt) {
                            if (!window.tryAcquire(5, TimeUnit.SECONDS)) {
                                continue;
                            }
                            long lba = nextLba.getAndIncrement();
                            if (lba >= blocks) {
                                window.release();
                                break;
                            }
                            inFlight.incrementAndGet();
                            ns.write(lba, ByteBuffer.wrap(pattern(lba, bs))).whenComplete((ok, error) -> {
                                if (error == null) {
                                    acknowledged.add(lba);
                                } else {
                                    failed.incrementAndGet();
                                }
                                inFlight.decrementAndGet();
                                window.release();
                            });
                        }
                        // Wait (bounded) for this thread's writes to complete or fail.
                        window.tryAcquire(16, 30, TimeUnit.SECONDS);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                }, "container-it-writer-" + t);
                w.start();
                writers.add(w);
            }
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(45);
            while (acknowledged.size() < 2000 && System.nanoTime() < deadline && failed.get() == 0) {
                Thread.sleep(5);
            }
            assertThat(acknowledged).as("writes acknowledged before SIGTERM (failed: %d)", failed.get()).hasSizeGreaterThanOrEqualTo(2000);
            inFlightAtSigterm = inFlight.get();
            ackedAtSigterm = acknowledged.size();
            long signalled = System.nanoTime();
            target.sigterm();
            exitCode = target.awaitExit(TargetContainer.STOP_TIMEOUT);
            stopMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - signalled);
            ackedAtExit = acknowledged.size();
            for (Thread w : writers) {
                w.join(TimeUnit.SECONDS.toMillis(60));
                assertThat(w.isAlive()).as("%s still running", w.getName()).isFalse();
            }
            logs = target.log();
            ctrl.close();
        }
        System.out.printf("TargetContainerIT: SIGTERM after %d acknowledged writes, %d in flight; the container exited "
                + "%d ms later with %d acknowledged; in the end %d acknowledged, %d failed%n",
            ackedAtSigterm, inFlightAtSigterm, stopMillis, ackedAtExit, acknowledged.size(), failed.get());
        assertThat(exitCode).as("exit code after SIGTERM; output:\n%s", TargetContainer.tail(logs, 30)).isZero();
        assertThat(inFlightAtSigterm).as("writes in flight when SIGTERM was sent").isPositive();
        // The stop cut the stream: writes submitted after the daemon stopped taking commands failed (the host
        // gives up after its 3 s controller-loss timeout), and the namespace was far from written through.
        assertThat(failed.get()).as("writes that failed because the daemon stopped").isPositive();
        assertThat(acknowledged.size()).as("acknowledged writes").isLessThan((int) blocks);
        assertThat(logs).contains("nvmeof4j target stopped");

        // On the host, from the file the container wrote.
        List<Long> lost = new ArrayList<>();
        try (RandomAccessFile f = new RandomAccessFile(dir.resolve("ns1.img").toFile(), "r")) {
            byte[] block = new byte[bs];
            for (long lba : acknowledged) {
                f.seek(lba * bs);
                f.readFully(block);
                if (!java.util.Arrays.equals(block, pattern(lba, bs))) {
                    lost.add(lba);
                }
            }
        }
        assertThat(lost).as("acknowledged writes missing from ns1.img (of %d acknowledged, %d failed)",
            acknowledged.size(), failed.get()).isEmpty();

        // Through the initiator, from a new container serving the same volume and configuration.
        List<Long> sample = new ArrayList<>(acknowledged);
        java.util.Collections.shuffle(sample, new Random(7));
        sample = sample.subList(0, Math.min(256, sample.size()));
        try (TargetContainer restarted = TargetContainer.start(dir);
             NvmeofHost host = NvmeofHost.create(HostIdentity.generate(), 1);
             NvmeofController ctrl = host.connect(TransportAddress.tcp("127.0.0.1", restarted.ioPort()),
                 TargetContainer.NQN, ConnectOptions.defaults())) {
            NvmeofNamespace ns = ctrl.namespace(TargetContainer.FILE_NSID);
            for (long lba : sample) {
                assertThat(read(ns, lba, bs)).as("LBA %d after the restart", lba).isEqualTo(pattern(lba, bs));
            }
        }
        deleteWorkDir(dir);
    }

    // ---- helpers -------------------------------------------------------------------------------------------------

    private static Path workDir(TestInfo info) {
        return TargetContainer.repoRoot().resolve("integration-tests/target/container-it")
            .resolve(info.getTestMethod().orElseThrow().getName() + "-" + System.currentTimeMillis());
    }

    /** After a passing test: the 64 MiB namespace file is of no more use (a failing test leaves it to look at). */
    private static void deleteWorkDir(Path dir) throws IOException {
        try (var files = java.nio.file.Files.list(dir)) {
            for (Path f : files.toList()) {
                java.nio.file.Files.delete(f);
            }
        }
        java.nio.file.Files.delete(dir);
    }

    /** A block's expected content: its LBA in the first 8 bytes, then bytes from a generator seeded with it. */
    private static byte[] pattern(long lba, int bs) {
        byte[] b = new byte[bs];
        new Random(lba * 0x9E3779B97F4A7C15L).nextBytes(b);
        ByteBuffer.wrap(b).putLong(lba);
        return b;
    }

    private static byte[] random(long seed, int n) {
        byte[] b = new byte[n];
        new Random(seed).nextBytes(b);
        return b;
    }

    private static void write(NvmeofNamespace ns, long lba, byte[] data) throws Exception {
        ns.write(lba, ByteBuffer.wrap(data)).get(IO_TIMEOUT.toSeconds(), TimeUnit.SECONDS);
    }

    private static byte[] read(NvmeofNamespace ns, long lba, int bytes) throws Exception {
        ByteBuffer b = ns.read(lba, bytes / ns.blockSize()).get(IO_TIMEOUT.toSeconds(), TimeUnit.SECONDS);
        byte[] out = new byte[b.remaining()];
        b.get(out);
        return out;
    }

    private static byte[] fileBytes(Path file, long offset, int length) throws IOException {
        try (RandomAccessFile f = new RandomAccessFile(file.toFile(), "r")) {
            byte[] b = new byte[length];
            f.seek(offset);
            f.readFully(b);
            return b;
        }
    }

    /**
     * The container's management API: refused without the token (401, nothing listed), served with the token the
     * daemon made in its state directory (mode 0600).
     */
    private static void checkApiNeedsTheToken(TargetContainer target) throws Exception {
        HttpClient client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
        URI uri = URI.create("http://127.0.0.1:" + target.httpPort() + "/api/v1/subsystems");
        HttpResponse<String> refused = client.send(HttpRequest.newBuilder(uri).timeout(Duration.ofSeconds(10)).GET()
            .build(), HttpResponse.BodyHandlers.ofString());
        assertThat(refused.statusCode()).as("GET /api/v1/subsystems without a token; body: %s", refused.body())
            .isEqualTo(401);
        assertThat(refused.body()).doesNotContain(TargetContainer.NQN);
        HttpResponse<String> served = client.send(HttpRequest.newBuilder(uri).timeout(Duration.ofSeconds(10))
            .header("Authorization", "Bearer " + target.apiToken()).GET().build(), HttpResponse.BodyHandlers.ofString());
        assertThat(served.statusCode()).as("GET /api/v1/subsystems with the token; body: %s", served.body())
            .isEqualTo(200);
        assertThat(served.body()).contains(TargetContainer.NQN);
    }

    private static String scrape(int port) throws IOException, InterruptedException {
        HttpClient client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
        HttpResponse<String> r = client.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/metrics"))
            .timeout(Duration.ofSeconds(10)).GET().build(), HttpResponse.BodyHandlers.ofString());
        assertThat(r.statusCode()).as("GET /metrics status; body:\n%s", r.body()).isEqualTo(200);
        assertThat(r.headers().firstValue("Content-Type").orElse("")).startsWith("text/plain");
        return r.body();
    }

    private static Map<String, String> with(Map<String, String> labels, String key, String value) {
        Map<String, String> m = new HashMap<>(labels);
        m.put(key, value);
        return m;
    }

    private static final Pattern SAMPLE = Pattern.compile("^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\\{(.*)})?\\s+(\\S+)$");
    private static final Pattern LABEL = Pattern.compile("([a-zA-Z_][a-zA-Z0-9_]*)=\"((?:[^\"\\\\]|\\\\.)*)\"");

    /**
     * The sum of the samples of {@code name} (Prometheus text format) whose labels include {@code labels}, as a
     * whole number; fails when there is none.
     */
    private static long sample(String metrics, String name, Map<String, String> labels) {
        java.util.OptionalLong total = total(metrics, name, labels);
        assertThat(total).as("samples of %s%s in /metrics:\n%s", name, labels, metrics).isPresent();
        return total.getAsLong();
    }

    /** The sum of the samples of {@code name} whose labels include {@code labels}; empty when there are none. */
    private static java.util.OptionalLong total(String metrics, String name, Map<String, String> labels) {
        double sum = 0;
        int found = 0;
        for (String line : metrics.split("\n")) {
            Matcher m = SAMPLE.matcher(line.trim());
            if (line.startsWith("#") || !m.matches() || !m.group(1).equals(name)) {
                continue;
            }
            Map<String, String> have = new HashMap<>();
            if (m.group(2) != null) {
                Matcher l = LABEL.matcher(m.group(2));
                while (l.find()) {
                    have.put(l.group(1), l.group(2));
                }
            }
            if (have.entrySet().containsAll(labels.entrySet())) {
                sum += Double.parseDouble(m.group(3));
                found++;
            }
        }
        return found == 0 ? java.util.OptionalLong.empty() : java.util.OptionalLong.of(Math.round(sum));
    }
}
