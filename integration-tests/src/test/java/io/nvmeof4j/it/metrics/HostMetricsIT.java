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
import io.nvmeof4j.protocol.spi.idle.AdaptiveIdleStrategy;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
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

    /**
     * An application that closes its host and makes another on the same registry: the controllers gauge reads the
     * new host (the closed host's gauge, which would keep the name, is gone with it).
     */
    @Test
    void shouldCountTheControllersOfANewHostOnTheSameRegistry() throws Exception {
        MeterRegistry registry = new SimpleMeterRegistry();
        try (MetricsTarget target = MetricsTarget.start(dir)) {
            try (NvmeofHost first = NvmeofHost.create(HostIdentity.generate(), 1, registry);
                 NvmeofController ctrl = first.connect(target.ioAddress(), MetricsTarget.OPEN,
                     ConnectOptions.defaults().withIoQueues(1))) {
                assertThat(registry.get(HostMeterNames.CONTROLLERS).gauge().value()).isEqualTo(1);
            }
            assertThat(registry.find(HostMeterNames.CONTROLLERS).gauges()).isEmpty();
            try (NvmeofHost second = NvmeofHost.create(HostIdentity.generate(), 1, registry)) {
                assertThat(registry.get(HostMeterNames.CONTROLLERS).gauge().value()).isZero();
                try (NvmeofController ctrl = second.connect(target.ioAddress(), MetricsTarget.OPEN,
                    ConnectOptions.defaults().withIoQueues(1))) {
                    assertThat(registry.get(HostMeterNames.CONTROLLERS).gauge().value()).isEqualTo(1);
                }
            }
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

    /**
     * Each adaptive reactor's idling, after I/O through each: the spin learned lies between the host's configured
     * spin and the most the strategy may learn ({@value AdaptiveIdleStrategy#MAX_SPIN_US_PROP_NAME}), a wake-up's run
     * delay is well under a second, the shared flag is 0 or 1. The gauges go with the host.
     */
    @Test
    void shouldPublishTheIdlingOfEachAdaptiveReactor() throws Exception {
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        try (MetricsTarget target = MetricsTarget.start(dir)) {
            try (NvmeofHost host = NvmeofHost.create(HostIdentity.generate(), 2, registry);
                 NvmeofController ctrl = host.connect(target.ioAddress(), MetricsTarget.OPEN,
                     ConnectOptions.defaults().withIoQueues(2))) {
                // I/O queue 1 is on reactor 0, queue 2 on reactor 1; a thread's id picks its queue (id mod 2).
                NvmeofNamespace ns1 = ctrl.namespace(1);
                for (Thread t : List.of(threadWithIdParity(0, () -> readBlocks(ns1)),
                                        threadWithIdParity(1, () -> readBlocks(ns1)))) {
                    t.start();
                    t.join(TimeUnit.SECONDS.toMillis(30));
                    assertThat(t.isAlive()).as("%s done", t.getName()).isFalse();
                }
                assertThat(registry.get(HostMeterNames.IO).tag(HostMeterNames.TAG_OP, "read")
                    .tag(HostMeterNames.TAG_NSID, "1").timer().count()).isEqualTo(2 * 50);

                PrometheusText m = new PrometheusText(registry.scrape());
                // The host's reactors (NVMe/TCP: 0 and 1), no others: RDMA's are made on first use only.
                assertThat(m.samples("nvmeof_host_reactor_idle_spin_seconds", s -> true))
                    .extracting(s -> s.label("reactor")).containsExactlyInAnyOrder("0", "1");
                double minSpin = AdaptiveIdleStrategy.SPIN_NANOS_DEFAULT / 1e9; // the host's configured spin
                double maxSpin = Math.max(minSpin, TimeUnit.MICROSECONDS.toNanos(Long.getLong(
                    AdaptiveIdleStrategy.MAX_SPIN_US_PROP_NAME, AdaptiveIdleStrategy.MAX_SPIN_US_DEFAULT)) / 1e9);
                for (String reactor : List.of("0", "1")) {
                    Map<String, String> tag = Map.of("reactor", reactor);
                    assertThat(m.value("nvmeof_host_reactor_idle_spin_seconds", tag))
                        .as("learned spin of reactor %s (s)", reactor).isBetween(minSpin, maxSpin);
                    assertThat(m.value("nvmeof_host_reactor_wakeup_delay_seconds", tag))
                        .as("wake-up run delay of reactor %s (s)", reactor).isBetween(0.0, 1.0);
                    assertThat(m.value("nvmeof_host_reactor_cpu_shared", tag))
                        .as("CPU of reactor %s shared", reactor).isIn(0.0, 1.0);
                }
            }
            // Closed: the gauges went with the reactors (a later host on this registry registers its own).
            assertThat(registry.find(HostMeterNames.REACTOR_IDLE_SPIN).gauges()).isEmpty();
            assertThat(registry.find(HostMeterNames.REACTOR_WAKEUP_DELAY).gauges()).isEmpty();
            assertThat(registry.find(HostMeterNames.REACTOR_CPU_SHARED).gauges()).isEmpty();
        }
    }

    /** A host that busy-polls ({@code nvmeof4j.host.idle_strategy=busy}) has no idling to show: no reactor gauges. */
    @Test
    void shouldPublishNoIdlingGaugesForABusyPollingHost() throws Exception {
        MeterRegistry registry = new SimpleMeterRegistry();
        NvmeofHost busy;
        System.setProperty(NvmeofHost.IDLE_PROP_NAME, "busy"); // read when the host makes its reactors
        try {
            busy = NvmeofHost.create(HostIdentity.generate(), 1, registry);
        } finally {
            System.clearProperty(NvmeofHost.IDLE_PROP_NAME);
        }
        try (MetricsTarget target = MetricsTarget.start(dir);
             NvmeofHost host = busy;
             NvmeofController ctrl = host.connect(target.ioAddress(), MetricsTarget.OPEN,
                 ConnectOptions.defaults().withIoQueues(1))) {
            readBlocks(ctrl.namespace(1));
            assertThat(registry.get(HostMeterNames.IO).tag(HostMeterNames.TAG_OP, "read")
                .tag(HostMeterNames.TAG_NSID, "1").timer().count()).as("reads metered").isEqualTo(50);
            assertThat(registry.find(HostMeterNames.REACTOR_IDLE_SPIN).gauges()).isEmpty();
            assertThat(registry.find(HostMeterNames.REACTOR_WAKEUP_DELAY).gauges()).isEmpty();
            assertThat(registry.find(HostMeterNames.REACTOR_CPU_SHARED).gauges()).isEmpty();
        }
    }

    /** 50 single-block reads, one at a time: a gap between commands for the reactor to idle through. */
    private static void readBlocks(NvmeofNamespace ns) {
        try {
            for (int i = 0; i < 50; i++) {
                ns.read(i, 1).get(10, TimeUnit.SECONDS);
            }
        } catch (Exception e) {
            throw new AssertionError("read on " + Thread.currentThread().getName() + " failed", e);
        }
    }

    /** An unstarted thread whose id is {@code parity} mod 2 (ids are given when a thread is made). */
    private static Thread threadWithIdParity(int parity, Runnable body) {
        while (true) {
            Thread t = new Thread(body, "host-metrics-io-" + parity);
            if (t.getId() % 2 == parity) {
                return t;
            }
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
