package io.nvmeof4j.target.metrics;

import io.micrometer.core.instrument.Clock;
import io.micrometer.core.instrument.Timer;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.nvmeof4j.protocol.command.NvmeStatus;
import io.nvmeof4j.protocol.spi.TransportType;
import io.nvmeof4j.target.backend.RamBlockDevice;
import io.nvmeof4j.target.model.Namespace;
import io.nvmeof4j.target.model.Subsystem;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import org.junit.jupiter.api.Test;

import java.util.EnumSet;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import static org.assertj.core.api.Assertions.assertThat;

/** The Prometheus registry's wall clock is read per scrape, not per recorded latency. */
class CachedWallClockTest {
    private static final String NQN = "nqn.2026-11.io.nvmeof4j:clock";
    private static final int TCP = TransportType.TCP.ordinal();

    private final AtomicLong wallReads = new AtomicLong();
    private final AtomicLong wallMillis = new AtomicLong(1_800_000_000_000L);

    private long readWall() {
        wallReads.incrementAndGet();
        return wallMillis.addAndGet(10);
    }

    @Test
    void shouldRecordWithoutReadingTheWallClockAndReadItOncePerScrape() {
        TargetMetrics metrics = TargetMetrics.prometheus(EnumSet.of(TransportType.TCP),
            new CachedWallClock(this::readWall));
        Subsystem subsystem = new Subsystem(NQN, "SN", "MN", "FR", true);
        Namespace ns = new Namespace(1, new RamBlockDevice("clock", 1 << 20, 512), UUID.randomUUID(), new byte[16]);
        NamespaceMeters meters = metrics.bindNamespace(subsystem, ns);
        long before = wallReads.get();

        for (int i = 1; i <= 10_000; i++) {
            meters.record(TCP, TargetMeterNames.OP_READ, i * 1_000L, NvmeStatus.SUCCESS, 4096);
        }

        assertThat(wallReads.get() - before).as("wall clock reads while recording 10,000 latencies").isZero();
        String text = metrics.scrape();
        assertThat(wallReads.get() - before).as("wall clock reads of one scrape").isEqualTo(1);
        Timer timer = meters.timer(TCP, TargetMeterNames.OP_READ);
        assertThat(timer.count()).isEqualTo(10_000);
        assertThat(timer.max(TimeUnit.NANOSECONDS)).as("max since start").isEqualTo(10_000_000.0);
        assertThat(timer.totalTime(TimeUnit.NANOSECONDS)).isEqualTo(1_000.0 * 10_000 * 10_001 / 2);
        assertThat(text).contains("nvmeof_target_io_seconds_count{nsid=\"1\",op=\"read\",subsystem=\"" + NQN
            + "\",transport=\"tcp\"} 10000").contains("nvmeof_target_io_seconds_max{").contains("_bucket{");
    }

    /** Why the cache: with a live clock every record reads the wall time twice (max window, histogram). */
    @Test
    void shouldShowThatALiveRegistryClockIsReadOnEveryRecord() {
        Clock live = new Clock() {
            @Override
            public long wallTime() {
                return readWall();
            }

            @Override
            public long monotonicTime() {
                return System.nanoTime();
            }
        };
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT,
            new PrometheusRegistry(), live);
        Timer timer = Timer.builder("clock.test").publishPercentileHistogram()
            .distributionStatisticExpiry(TargetMetrics.NEVER_ROTATE).distributionStatisticBufferLength(1)
            .register(registry);
        long before = wallReads.get();
        for (int i = 0; i < 1_000; i++) {
            timer.record(1_000, TimeUnit.NANOSECONDS);
        }
        assertThat(wallReads.get() - before).as("live wall clock reads for 1,000 records").isEqualTo(2_000);
    }
}
