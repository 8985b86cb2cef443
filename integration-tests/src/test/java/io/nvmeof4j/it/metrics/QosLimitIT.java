package io.nvmeof4j.it.metrics;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.nvmeof4j.initiator.ConnectOptions;
import io.nvmeof4j.initiator.HostIdentity;
import io.nvmeof4j.initiator.NvmeofController;
import io.nvmeof4j.initiator.NvmeofHost;
import io.nvmeof4j.initiator.NvmeofNamespace;
import io.nvmeof4j.target.config.TargetConfig;
import io.nvmeof4j.target.daemon.TargetDaemon;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.ToDoubleFunction;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Per-namespace QoS limits ({@code bdev_set_qos_limit}) measured end to end: our initiator over NVMe/TCP on
 * 127.0.0.1 keeps a bounded load on a RAM namespace served by two reactors (two I/O queues), and the rate the host
 * sees follows the limit: the IOPS limit from the configuration file, a read and a write bandwidth limit set live
 * through the HTTP API, and the removal of the limits while the load runs. No command fails, the limits are in the
 * file, and {@code nvmeof_target_resource_waits_total{resource="qos"}} counts the I/Os that waited. The machine is
 * shared and busy, so rates are checked within ±15 %, never above, and a run below is repeated only when the process
 * was measurably starved of CPU during it (see {@link #measure}); once the limit is removed the rate must be far
 * above it.
 */
class QosLimitIT {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String NQN = "nqn.2014-08.io.nvmeof4j:qos";
    private static final String QOS = "/api/v1/subsystems/" + NQN + "/namespaces/1/qos";
    private static final int IOPS_LIMIT = 2000;
    private static final int READ_MIB_LIMIT = 8;
    private static final int WRITE_MIB_LIMIT = 4;
    private static final double TOLERANCE = 0.15;
    /**
     * Commands kept in flight: enough that a limited namespace always has I/O waiting at the target (64 is 32 ms of
     * the IOPS limit, 16 of 128 KiB is 250 ms of the read limit), so the limit, not the host, sets the rate.
     */
    private static final int IOPS_DEPTH = 64;
    private static final int BANDWIDTH_DEPTH = 16;
    private static final long BUCKET_NANOS = TimeUnit.MILLISECONDS.toNanos(100);
    private static final int ATTEMPTS = 3;
    private static final long STARVED_MILLIS = 50;

    @TempDir
    Path dir;

    /** What a bounded load run saw: completions per 100 ms bucket, bytes per bucket, failures. */
    record Run(long[] ios, long[] bytes, long failures, long longestPauseMillis) {
        /** I/Os a second over buckets [from, to). */
        double iops(int from, int to) {
            long n = 0;
            for (int b = from; b < to; b++) {
                n += ios[b];
            }
            return n * 1e9 / ((to - from) * BUCKET_NANOS);
        }

        /** MiB a second over buckets [from, to). */
        double mibPerSecond(int from, int to) {
            long n = 0;
            for (int b = from; b < to; b++) {
                n += bytes[b];
            }
            return n * 1e9 / ((to - from) * BUCKET_NANOS) / (1 << 20);
        }

        long total() {
            long n = 0;
            for (long i : ios) {
                n += i;
            }
            return n;
        }
    }

    /**
     * Keeps {@code depth} commands of {@code blocks} blocks in flight for {@code buckets} × 100 ms (then drains,
     * bounded), calling {@code midway} once at bucket {@code midwayBucket}. Completions after the window are checked
     * but not counted.
     */
    private static Run load(NvmeofNamespace ns, boolean write, int blocks, int depth, int buckets, int midwayBucket,
                            Runnable midway) throws Exception {
        int size = blocks * ns.blockSize();
        ByteBuffer data = ByteBuffer.allocateDirect(size);
        for (int i = 0; i < size; i++) {
            data.put(i, (byte) i);
        }
        ByteBuffer[] readBuffers = new ByteBuffer[depth]; // one per slot: no direct allocation per read
        for (int i = 0; i < depth; i++) {
            readBuffers[i] = ByteBuffer.allocateDirect(size);
        }
        long span = ns.blockCount() / blocks;
        long[] ios = new long[buckets];
        long[] bytes = new long[buckets];
        long failures = 0;
        @SuppressWarnings("unchecked")
        CompletableFuture<?>[] inFlight = new CompletableFuture[depth];
        long next = 0;
        long begin = System.nanoTime();
        long end = begin + buckets * BUCKET_NANOS;
        long drainDeadline = end + TimeUnit.SECONDS.toNanos(30);
        boolean midwayDone = midway == null;
        long lastRound = begin;
        long longestPause = 0;
        for (int i = 0; i < depth; i++) {
            long lba = (next++ % span) * blocks;
            inFlight[i] = write ? ns.write(lba, data.duplicate()) : ns.read(lba, readBuffers[i].clear());
        }
        while (true) {
            long now = System.nanoTime();
            longestPause = Math.max(longestPause, now - lastRound);
            lastRound = now;
            if (!midwayDone && now - begin >= midwayBucket * BUCKET_NANOS) {
                midway.run();
                midwayDone = true;
            }
            boolean any = false;
            for (int i = 0; i < depth; i++) {
                CompletableFuture<?> f = inFlight[i];
                if (f == null) {
                    continue;
                }
                any = true;
                if (!f.isDone()) {
                    continue;
                }
                if (f.isCompletedExceptionally()) {
                    failures++;
                } else if (now < end) {
                    int bucket = (int) ((now - begin) / BUCKET_NANOS);
                    ios[bucket]++;
                    bytes[bucket] += size;
                }
                long lba = (next++ % span) * blocks;
                inFlight[i] = now < end
                    ? (write ? ns.write(lba, data.duplicate()) : ns.read(lba, readBuffers[i].clear())) : null;
            }
            if (!any) {
                break;
            }
            assertThat(now).as("the load drained within 30 s of its end").isLessThan(drainDeadline);
            LockSupport.parkNanos(20_000);
        }
        return new Run(ios, bytes, failures, TimeUnit.NANOSECONDS.toMillis(longestPause));
    }

    private static double qosWaits(Http http) throws Exception {
        PrometheusText m = new PrometheusText(http.get("/metrics").body());
        return m.valueOrZero("nvmeof_target_resource_waits_total", Map.of("reactor", "0", "resource", "qos"))
            + m.valueOrZero("nvmeof_target_resource_waits_total", Map.of("reactor", "1", "resource", "qos"));
    }

    /**
     * Runs {@code load} and checks its rate within ±{@link #TOLERANCE} of {@code limit}. Never faster than the limit
     * allows is checked on every run. A run below the bound is repeated (at most {@value #ATTEMPTS} runs) only when
     * this process was starved of CPU during it: the load loop, which turns every 20 µs, stopped for more than
     * {@value #STARVED_MILLIS} ms (the machine is shared with other builds and a QEMU guest). Every run is printed.
     */
    private static Run measure(String what, double limit, Callable<Run> load, ToDoubleFunction<Run> rate)
        throws Exception {
        for (int attempt = 1; ; attempt++) {
            Run run = load.call();
            double measured = rate.applyAsDouble(run);
            System.out.printf("qos: %s: limit %.1f, measured %.2f (run %d; the load loop paused at most %d ms); "
                + "I/Os per 100 ms: %s%n", what, limit, measured, attempt, run.longestPauseMillis(),
                java.util.Arrays.toString(run.ios()));
            assertThat(run.failures()).as("failed commands").isZero();
            assertThat(measured).as("%s: %.2f measured, never more than the limit %.1f (+%.0f %%)", what, measured,
                limit, TOLERANCE * 100).isLessThanOrEqualTo(limit * (1 + TOLERANCE));
            if (measured >= limit * (1 - TOLERANCE) || attempt == ATTEMPTS
                || run.longestPauseMillis() < STARVED_MILLIS) {
                assertWithin(measured, limit, what);
                return run;
            }
        }
    }

    private static void assertWithin(double measured, double limit, String what) {
        assertThat(measured).as("%s: %.1f measured against a limit of %.1f (±%.0f %%)", what, measured, limit,
            TOLERANCE * 100).isBetween(limit * (1 - TOLERANCE), limit * (1 + TOLERANCE));
    }

    @Test
    void shouldHoldANamespaceToItsLimitsAndLetItGoWhenTheyAreRemoved() throws Exception {
        Path file = dir.resolve("target.json");
        Files.writeString(file, MetricsTarget.oneNamespaceConfig(NQN, 2, """
            "device": {"backend": "ram", "size": "64M", "block_size": 4096}, "qos": {"rw_ios_per_sec": %d}\
            """.formatted(IOPS_LIMIT)));
        try (TargetDaemon daemon = TargetDaemon.start(TargetConfig.load(file));
             NvmeofHost host = NvmeofHost.create(HostIdentity.generate(), 2);
             NvmeofController ctrl = host.connect(daemon.listenAddresses().get(0), NQN,
                 ConnectOptions.defaults().withIoQueues(2).withQueueDepth(128))) {
            Http http = new Http(daemon);
            NvmeofNamespace ns = ctrl.namespace(1);
            assertThat(json(http.get("/api/v1/subsystems/" + NQN + "/namespaces/1")).at("/qos/rw_ios_per_sec")
                .asLong()).isEqualTo(IOPS_LIMIT);

            // 1. The IOPS limit from the file, on 4 KiB reads from two queues (two reactors share the budget).
            double waitsBefore = qosWaits(http);
            // The first second is warm-up (the first heavy use of both sides' code paths stalled for 300 ms once);
            // 3 s measured after it.
            Run limited = measure("IOPS under rw_ios_per_sec", IOPS_LIMIT,
                () -> load(ns, false, 1, IOPS_DEPTH, 40, 0, null), r -> r.iops(10, 40));
            double waited = qosWaits(http) - waitsBefore;
            assertThat(waited).as("I/Os counted as waiting for the QoS budget").isGreaterThan(limited.total() / 2.0);

            // 2. A read bandwidth limit set live (HTTP API) replaces the IOPS limit: 128 KiB reads.
            JsonNode set = json(http.post(QOS, "{\"rw_ios_per_sec\": 0, \"r_mbytes_per_sec\": " + READ_MIB_LIMIT
                + ", \"w_mbytes_per_sec\": " + WRITE_MIB_LIMIT + "}"));
            assertThat(set.at("/qos/r_mbytes_per_sec").asLong()).isEqualTo(READ_MIB_LIMIT);
            assertThat(set.at("/qos/rw_ios_per_sec").asLong()).isZero();
            measure("read MiB/s under r_mbytes_per_sec", READ_MIB_LIMIT,
                () -> load(ns, false, 32, BANDWIDTH_DEPTH, 30, 0, null), r -> r.mibPerSecond(5, 30));

            // 3. The write limit, on 64 KiB writes.
            measure("write MiB/s under w_mbytes_per_sec", WRITE_MIB_LIMIT,
                () -> load(ns, true, 16, BANDWIDTH_DEPTH, 30, 0, null), r -> r.mibPerSecond(5, 30));
            // Persisted: the file holds the limits set live.
            JsonNode saved = JSON.readTree(file.toFile()).at("/subsystems/0/namespaces/0/qos");
            assertThat(saved.toString()).isEqualTo("{\"r_mbytes_per_sec\":" + READ_MIB_LIMIT
                + ",\"w_mbytes_per_sec\":" + WRITE_MIB_LIMIT + "}");

            // 4. The IOPS limit again, removed (all limits) half way through a running load: the rest runs free.
            json(http.post(QOS, "{\"rw_ios_per_sec\": " + IOPS_LIMIT + ", \"r_mbytes_per_sec\": 0, "
                + "\"w_mbytes_per_sec\": 0}"));
            Run released = load(ns, false, 1, IOPS_DEPTH, 40, 20, () -> {
                try {
                    assertThat(json(http.post(QOS, "{\"rw_ios_per_sec\": 0}")).at("/qos/rw_ios_per_sec").asLong())
                        .isZero();
                } catch (Exception e) {
                    throw new AssertionError(e);
                }
            });
            // Per 100 ms: a dip is the shared machine (the unlimited part dips too), printed to tell it from QoS.
            System.out.println("qos: I/Os per 100 ms, limit removed at 2 s: " + java.util.Arrays.toString(released.ios()));
            double before = released.iops(5, 20);
            double after = released.iops(22, 40);
            System.out.printf("qos: %.0f IOPS limited, %.0f IOPS once the limit was removed while running%n", before,
                after);
            // Held to the limit until the removal (its accuracy is measured above), then free.
            assertThat(before).as("IOPS before the removal").isLessThanOrEqualTo(IOPS_LIMIT * (1 + TOLERANCE));
            assertThat(after).as("IOPS after the limit was removed").isGreaterThan(IOPS_LIMIT * 1.5)
                .isGreaterThan(before * 2);
            assertThat(released.failures()).isZero();
            assertThat(JSON.readTree(file.toFile()).at("/subsystems/0/namespaces/0").has("qos")).isFalse();

            PrometheusText m = new PrometheusText(http.get("/metrics").body());
            assertThat(m.valueOrZero("nvmeof_target_commands_failed_total", Map.of("subsystem", NQN)))
                .as("failed commands").isZero();
            // Bad input: answered 400, nothing changed.
            assertThat(http.post(QOS, "{\"rw_ios_per_sec\": -1}").status()).isEqualTo(400);
            assertThat(http.post(QOS, "{\"iops\": 1000}").status()).isEqualTo(400);
            assertThat(http.post(QOS, "{}").status()).isEqualTo(400);
            assertThat(http.post("/api/v1/subsystems/" + NQN + "/namespaces/9/qos", "{\"rw_ios_per_sec\": 1000}")
                .status()).isEqualTo(404);
            assertThat(daemon.model().subsystem(NQN).namespace(1).qos().enabled()).isFalse();
        }
    }

    private static JsonNode json(Http.Response r) throws Exception {
        assertThat(r.status()).as("HTTP status of %s", r.body()).isEqualTo(200);
        return JSON.readTree(r.body());
    }
}
