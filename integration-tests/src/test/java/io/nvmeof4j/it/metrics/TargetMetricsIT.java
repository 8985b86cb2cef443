package io.nvmeof4j.it.metrics;

import io.nvmeof4j.initiator.ConnectOptions;
import io.nvmeof4j.initiator.HostIdentity;
import io.nvmeof4j.initiator.NvmeofController;
import io.nvmeof4j.initiator.NvmeofHost;
import io.nvmeof4j.initiator.NvmeofIoException;
import io.nvmeof4j.initiator.NvmeofNamespace;
import io.nvmeof4j.protocol.command.NvmeStatus;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * After known I/O through our initiator, the daemon's {@code GET /metrics} shows exactly that I/O: timer counts
 * per op, namespace and transport, histogram buckets adding up to the count, byte counters, failures by status,
 * the controller and queue gauges, and the reactor's idling gauges.
 */
class TargetMetricsIT {
    private static final int WRITES = 300;
    private static final int READS = 200;
    private static final int FAILED_READS = 6;
    private static final int FLUSHES = 7;
    private static final int WRITE_ZEROES = 5;
    private static final int DEALLOCATES = 4;
    private static final int COMPARES = 3;
    private static final int VERIFIES = 2;
    private static final int COPIES = 2;

    @TempDir
    Path dir;

    @Test
    void shouldCountEveryIoByOpNamespaceAndTransport() throws Exception {
        try (MetricsTarget target = MetricsTarget.start(dir);
             NvmeofHost host = NvmeofHost.create(HostIdentity.generate(), 1);
             NvmeofController ctrl = host.connect(target.ioAddress(), MetricsTarget.OPEN,
                 ConnectOptions.defaults().withIoQueues(1))) {
            NvmeofNamespace ns = ctrl.namespace(1);
            assertThat(ns.blockSize()).isEqualTo(4096);
            ByteBuffer block = ByteBuffer.allocateDirect(4096);
            for (int i = 0; i < 4096; i++) {
                block.put(i, (byte) (i * 7));
            }
            List<CompletableFuture<?>> pending = new ArrayList<>();
            for (int i = 0; i < WRITES; i++) {
                pending.add(ns.write(i, block.duplicate()));
                if (pending.size() == 16) {
                    awaitAll(pending);
                }
            }
            awaitAll(pending);
            for (int i = 0; i < READS; i++) {
                pending.add(ns.read(2L * i, ByteBuffer.allocateDirect(8192)));
                if (pending.size() == 16) {
                    awaitAll(pending);
                }
            }
            awaitAll(pending);
            for (int i = 0; i < FAILED_READS; i++) {
                // Beyond the end of the namespace: LBA Out of Range (0x080).
                CompletableFuture<Void> f = ns.read(ns.blockCount() + i, ByteBuffer.allocateDirect(4096));
                assertThatThrownBy(() -> f.get(10, TimeUnit.SECONDS)).isInstanceOf(ExecutionException.class)
                    .cause().isInstanceOf(NvmeofIoException.class)
                    .satisfies(e -> assertThat(NvmeStatus.code(((NvmeofIoException) e).status()))
                        .isEqualTo(NvmeStatus.LBA_OUT_OF_RANGE));
            }
            for (int i = 0; i < FLUSHES; i++) {
                ns.flush().get(10, TimeUnit.SECONDS);
            }
            for (int i = 0; i < WRITE_ZEROES; i++) {
                ns.writeZeroes(1000 + 8L * i, 8).get(10, TimeUnit.SECONDS);
            }
            for (int i = 0; i < DEALLOCATES; i++) {
                ns.deallocate(2000 + 8L * i, 8).get(10, TimeUnit.SECONDS);
            }
            for (int i = 0; i < VERIFIES; i++) {
                ns.verify(8L * i, 8).get(10, TimeUnit.SECONDS);
            }
            for (int i = 0; i < COPIES; i++) {
                ns.copy(3000 + 8L * i, new long[] {8L * i}, new int[] {8}, false).get(10, TimeUnit.SECONDS);
            }
            for (int i = 0; i < COMPARES; i++) {
                assertThat(ns.compare(i, block.duplicate()).get(10, TimeUnit.SECONDS)).isTrue();
            }

            Map<String, String> ns1 = Map.of("subsystem", MetricsTarget.OPEN, "nsid", "1", "transport", "tcp");
            // A command is recorded when the target's reactor has sent its response, which can be a moment after the
            // host got it: wait (bounded) until the last command, a compare, is in, then check everything exactly.
            Map<String, String> lastOp = new java.util.HashMap<>(ns1);
            lastOp.put("op", "compare");
            PrometheusText m;
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (true) {
                Http.Response r = target.http.get("/metrics");
                assertThat(r.status()).isEqualTo(200);
                m = new PrometheusText(r.body());
                if (m.valueOrZero("nvmeof_target_io_seconds_count", lastOp) >= COMPARES
                    || System.nanoTime() > deadline) {
                    break;
                }
                Thread.sleep(10);
            }

            assertCount(m, ns1, "write", WRITES);
            assertCount(m, ns1, "read", READS + FAILED_READS);
            assertCount(m, ns1, "flush", FLUSHES);
            assertCount(m, ns1, "write_zeroes", WRITE_ZEROES);
            assertCount(m, ns1, "deallocate", DEALLOCATES);
            assertCount(m, ns1, "compare", COMPARES);
            assertCount(m, ns1, "verify", VERIFIES);
            assertCount(m, ns1, "copy", COPIES);
            assertThat(m.value("nvmeof_target_io_written_bytes_total", ns1)).isEqualTo(WRITES * 4096.0);
            assertThat(m.value("nvmeof_target_io_read_bytes_total", ns1)).isEqualTo(READS * 8192.0);
            assertThat(m.value("nvmeof_target_commands_failed_total", Map.of("subsystem", MetricsTarget.OPEN,
                "op", "read", "status", "0x080", "status_name", "LBA_OUT_OF_RANGE"))).isEqualTo(FAILED_READS);
            assertThat(m.samples("nvmeof_target_commands_failed_total",
                s -> s.label("op").equals("write"))).isEmpty();

            // Namespace 2 saw nothing, but its meters exist from the start.
            Map<String, String> ns2 = Map.of("subsystem", MetricsTarget.OPEN, "nsid", "2", "transport", "tcp");
            assertCount(m, ns2, "write", 0);
            assertThat(m.value("nvmeof_target_io_written_bytes_total", ns2)).isZero();

            // Admin commands (Identify, Set Features, Property Get/Set, ...) are timed with nsid "0".
            assertThat(m.value("nvmeof_target_io_seconds_count", Map.of("subsystem", MetricsTarget.OPEN,
                "op", "admin", "nsid", "0", "transport", "tcp"))).isGreaterThan(3);

            assertThat(m.value("nvmeof_target_controllers", Map.of("subsystem", MetricsTarget.OPEN))).isEqualTo(1);
            assertThat(m.value("nvmeof_target_queue_pairs", Map.of("subsystem", MetricsTarget.OPEN))).isEqualTo(2);
            assertThat(m.value("nvmeof_target_controllers", Map.of("subsystem", MetricsTarget.CLOSED))).isZero();
            assertThat(m.value("nvmeof_target_queue_inflight_commands", Map.of("subsystem", MetricsTarget.OPEN,
                "cntlid", Integer.toString(ctrl.controllerId()), "qid", "1", "transport", "tcp"))).isZero();
            // The admin queue holds the parked Asynchronous Event Request(s).
            assertThat(m.value("nvmeof_target_queue_inflight_commands", Map.of("subsystem", MetricsTarget.OPEN,
                "cntlid", Integer.toString(ctrl.controllerId()), "qid", "0"))).isGreaterThanOrEqualTo(1);
            // Idle: every data buffer is back in the pool (the gauge reads the reactor's count, a moment behind).
            double inUse = m.value("nvmeof_target_pool_buffers_in_use", Map.of("reactor", "0"));
            for (long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(5); inUse != 0 && System.nanoTime() < end; ) {
                Thread.sleep(10);
                inUse = new PrometheusText(target.http.get("/metrics").body())
                    .value("nvmeof_target_pool_buffers_in_use", Map.of("reactor", "0"));
            }
            assertThat(inUse).as("pool buffers in use once idle").isZero();
            // Adaptive idling (the default): the spin learned from the gaps lies between the configured 50 us and
            // the 500 us it may grow to; no competitor shares the reactor's CPU for long in this test.
            Map<String, String> reactor0 = Map.of("reactor", "0");
            assertThat(m.value("nvmeof_target_reactor_idle_spin_seconds", reactor0)).as("learned spin (s)")
                .isBetween(50e-6, 500e-6);
            assertThat(m.value("nvmeof_target_reactor_wakeup_delay_seconds", reactor0)).as("wake-up run delay (s)")
                .isBetween(0.0, 1.0);
            assertThat(m.value("nvmeof_target_reactor_cpu_shared", reactor0)).as("CPU shared").isIn(0.0, 1.0);
            // Every reactor: the time its thread waited for its CPU (schedstat). value() fails unless reactor 0 has
            // exactly one sample; a later scrape never reads less. That it grows under contention is ReactorTest's.
            double runDelay = m.value("nvmeof_target_reactor_run_delay_seconds_total", reactor0);
            assertThat(new PrometheusText(target.http.get("/metrics").body())
                .value("nvmeof_target_reactor_run_delay_seconds_total", reactor0)).isGreaterThanOrEqualTo(runDelay);
        }
    }

    /** The timer count, and the histogram: cumulative buckets, non-decreasing, the last (+Inf) equal to the count. */
    private static void assertCount(PrometheusText m, Map<String, String> namespace, String op, long expected) {
        Map<String, String> labels = new java.util.HashMap<>(namespace);
        labels.put("op", op);
        assertThat(m.value("nvmeof_target_io_seconds_count", labels)).as("count of %s", op).isEqualTo(expected);
        List<PrometheusText.Sample> buckets = new ArrayList<>(m.samples("nvmeof_target_io_seconds_bucket",
            s -> s.labels().entrySet().containsAll(labels.entrySet())));
        buckets.sort(Comparator.comparingDouble(s -> Double.parseDouble(s.label("le").replace("+Inf", "Infinity"))));
        assertThat(buckets.size()).as("buckets of %s", op).isGreaterThan(20);
        assertThat(Double.parseDouble(buckets.get(0).label("le"))).as("first bucket (s)").isLessThanOrEqualTo(2e-6);
        assertThat(Double.parseDouble(buckets.get(buckets.size() - 2).label("le"))).as("last finite bucket (s)")
            .isGreaterThanOrEqualTo(9.0);
        double previous = 0;
        long sumOfBuckets = 0;
        for (PrometheusText.Sample b : buckets) {
            assertThat(b.value()).as("cumulative bucket le=%s of %s", b.label("le"), op).isGreaterThanOrEqualTo(previous);
            sumOfBuckets += (long) (b.value() - previous);
            previous = b.value();
        }
        assertThat(sumOfBuckets).as("bucket counts of %s add up to the count", op).isEqualTo(expected);
        assertThat(buckets.get(buckets.size() - 1).label("le")).isEqualTo("+Inf");
        if (expected > 0) {
            assertThat(m.value("nvmeof_target_io_seconds_sum", labels)).as("sum of %s", op).isPositive();
        }
    }

    private static void awaitAll(List<CompletableFuture<?>> pending) throws Exception {
        for (CompletableFuture<?> f : pending) {
            f.get(10, TimeUnit.SECONDS);
        }
        pending.clear();
    }
}
