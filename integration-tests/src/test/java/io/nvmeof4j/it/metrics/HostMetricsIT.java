package io.nvmeof4j.it.metrics;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.distribution.CountAtBucket;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.nvmeof4j.initiator.ConnectOptions;
import io.nvmeof4j.initiator.HostIdentity;
import io.nvmeof4j.initiator.HostMeterNames;
import io.nvmeof4j.initiator.NvmeofController;
import io.nvmeof4j.initiator.NvmeofHost;
import io.nvmeof4j.initiator.NvmeofNamespace;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The initiator library's meters ({@code nvmeof.host.*}) after known I/O, on the application's registry. */
class HostMetricsIT {
    @TempDir
    Path dir;

    @Test
    void shouldCountHostIoByOpAndNamespace() throws Exception {
        MeterRegistry registry = new SimpleMeterRegistry();
        try (MetricsTarget target = MetricsTarget.start(dir);
             NvmeofHost host = NvmeofHost.create(HostIdentity.generate(), 1, registry)) {
            try (NvmeofController ctrl = host.connect(target.ioAddress(), MetricsTarget.OPEN,
                ConnectOptions.defaults().withIoQueues(2))) {
                assertThat(registry.get(HostMeterNames.CONTROLLERS).gauge().value()).isEqualTo(1);
                NvmeofNamespace ns2 = ctrl.namespace(2); // 512-byte blocks
                ByteBuffer buf = ByteBuffer.allocateDirect(8 * 512);
                for (int i = 0; i < 40; i++) {
                    ns2.write(8L * i, buf.duplicate()).get(10, TimeUnit.SECONDS);
                }
                for (int i = 0; i < 25; i++) {
                    ns2.read(8L * i, buf.duplicate()).get(10, TimeUnit.SECONDS);
                }
                ns2.flush().get(10, TimeUnit.SECONDS);
                ns2.verify(0, 8).get(10, TimeUnit.SECONDS);
                ns2.copy(64, new long[] {0, 8}, new int[] {8, 8}, false).get(10, TimeUnit.SECONDS);
                ByteBuffer same = ByteBuffer.allocateDirect(512);
                ns2.read(0, same.duplicate()).get(10, TimeUnit.SECONDS);
                assertThat(ns2.compareAndWrite(0, same.duplicate(), same.duplicate()).get(10, TimeUnit.SECONDS))
                    .isTrue();
                assertThatThrownBy(() -> ns2.read(ns2.blockCount(), 1).get(10, TimeUnit.SECONDS))
                    .isInstanceOf(ExecutionException.class);

                Map<String, String> tags = Map.of(HostMeterNames.TAG_SUBSYSTEM, MetricsTarget.OPEN,
                    HostMeterNames.TAG_NSID, "2", HostMeterNames.TAG_TRANSPORT, "tcp");
                assertThat(timer(registry, tags, "write").count()).isEqualTo(40);
                assertThat(timer(registry, tags, "read").count()).isEqualTo(27);
                assertThat(timer(registry, tags, "flush").count()).isEqualTo(1);
                assertThat(timer(registry, tags, "compare").count()).isZero();
                assertThat(timer(registry, tags, "verify").count()).isEqualTo(1);
                assertThat(timer(registry, tags, "copy").count()).isEqualTo(1);
                assertThat(timer(registry, tags, "compare_and_write").count()).isEqualTo(1);
                assertThat(timer(registry, tags, "write").totalTime(TimeUnit.NANOSECONDS)).isPositive();
                assertThat(counter(registry, HostMeterNames.IO_WRITTEN_BYTES, tags).count()).isEqualTo(40 * 4096.0);
                assertThat(counter(registry, HostMeterNames.IO_READ_BYTES, tags).count()).isEqualTo(25 * 4096.0 + 512);
                assertThat(registry.get(HostMeterNames.COMMANDS_FAILED).tag(HostMeterNames.TAG_OP, "read")
                    .tag(HostMeterNames.TAG_STATUS, "0x080").tag(HostMeterNames.TAG_STATUS_NAME, "LBA_OUT_OF_RANGE")
                    .tag(HostMeterNames.TAG_NSID, "2").counter().count()).isEqualTo(1);
                // The target saw the same I/O; it times the fused pair as the two commands it is (a compare and a
                // write), where the host times the one operation its application submitted.
                PrometheusText m = new PrometheusText(target.http.get("/metrics").body());
                Map<String, String> targetTags = Map.of("subsystem", MetricsTarget.OPEN, "nsid", "2");
                assertThat(m.value("nvmeof_target_io_seconds_count", with(targetTags, "op", "write"))).isEqualTo(41);
                assertThat(m.value("nvmeof_target_io_seconds_count", with(targetTags, "op", "compare"))).isEqualTo(1);
                assertThat(m.value("nvmeof_target_io_seconds_count", with(targetTags, "op", "copy"))).isEqualTo(1);
                assertThat(m.value("nvmeof_target_io_seconds_count", with(targetTags, "op", "verify"))).isEqualTo(1);
            }
            assertThat(registry.get(HostMeterNames.CONTROLLERS).gauge().value()).isZero();
        }
    }

    @Test
    void shouldPublishAPercentileHistogramWhenAsked() throws Exception {
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        try (MetricsTarget target = MetricsTarget.start(dir);
             NvmeofHost host = NvmeofHost.create(HostIdentity.generate(), 1, registry, true);
             NvmeofController ctrl = host.connect(target.ioAddress(), MetricsTarget.OPEN,
                 ConnectOptions.defaults().withIoQueues(1))) {
            NvmeofNamespace ns1 = ctrl.namespace(1);
            for (int i = 0; i < 50; i++) {
                ns1.read(i, 1).get(10, TimeUnit.SECONDS);
            }
            Timer t = registry.get(HostMeterNames.IO).tag(HostMeterNames.TAG_OP, "read").tag(HostMeterNames.TAG_NSID, "1")
                .timer();
            assertThat(t.count()).isEqualTo(50);
            CountAtBucket[] buckets = t.takeSnapshot().histogramCounts();
            assertThat(buckets.length).isGreaterThan(20);
            assertThat(buckets[buckets.length - 1].count()).isEqualTo(50);
            PrometheusText text = new PrometheusText(registry.scrape());
            assertThat(text.value("nvmeof_host_io_seconds_bucket", Map.of("op", "read", "nsid", "1", "le", "+Inf")))
                .isEqualTo(50);
            assertThat(text.value("nvmeof_host_io_read_bytes_total", Map.of("nsid", "1"))).isEqualTo(50 * 4096.0);
        }
    }

    private static Map<String, String> with(Map<String, String> tags, String key, String value) {
        Map<String, String> all = new HashMap<>(tags);
        all.put(key, value);
        return all;
    }

    private static Timer timer(MeterRegistry registry, Map<String, String> tags, String op) {
        var search = registry.get(HostMeterNames.IO).tag(HostMeterNames.TAG_OP, op);
        for (var e : tags.entrySet()) {
            search = search.tag(e.getKey(), e.getValue());
        }
        return search.timer();
    }

    private static Counter counter(MeterRegistry registry, String name, Map<String, String> tags) {
        var search = registry.get(name);
        for (var e : tags.entrySet()) {
            search = search.tag(e.getKey(), e.getValue());
        }
        return search.counter();
    }
}
