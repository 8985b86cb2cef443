package io.nvmeof4j.bench;

import io.nvmeof4j.protocol.spi.TransportType;
import io.nvmeof4j.target.backend.NullBlockDevice;
import io.nvmeof4j.target.metrics.NamespaceMeters;
import io.nvmeof4j.target.metrics.TargetMeterNames;
import io.nvmeof4j.target.metrics.TargetMetrics;
import io.nvmeof4j.target.model.Namespace;
import io.nvmeof4j.target.model.Subsystem;

import java.util.EnumSet;
import java.util.UUID;

/**
 * Benchmark (not a test): nanoseconds the target's metering adds to one I/O on the recording thread, measured
 * single-threaded so the machine's noise matters less than in an end-to-end run: the timer with its percentile
 * histogram and the byte counter on the daemon's Prometheus registry, plus one {@code System.nanoTime()} (what
 * {@code MeteredRequest} read per response until issue 17; the transports now stamp once per batch), against the same
 * loop doing nothing but reading the clock. Issue 17 measured the record itself drop from ~70 to ~23 ns once the
 * registry's wall clock was cached ({@code CachedWallClock}: Micrometer read it twice per record).
 * <pre>
 * java -cp … io.nvmeof4j.bench.MetricsRecordBenchmark [records per round (default 20000000)] [rounds (5)]
 * </pre>
 */
public final class MetricsRecordBenchmark {
    private static long sink;

    public static void main(String[] args) {
        long n = args.length > 0 ? Long.parseLong(args[0]) : 20_000_000L;
        int rounds = args.length > 1 ? Integer.parseInt(args[1]) : 5;
        TargetMetrics metrics = TargetMetrics.prometheus(EnumSet.of(TransportType.TCP));
        Subsystem subsystem = new Subsystem("nqn.2014-08.io.nvmeof4j:bench", "SN", "MN", "FR", true);
        Namespace ns = new Namespace(1, new NullBlockDevice("", 1L << 30, 4096), UUID.randomUUID(), new byte[16]);
        subsystem.addNamespace(ns);
        NamespaceMeters meters = metrics.bindNamespace(subsystem, ns);
        int tcp = TransportType.TCP.ordinal();
        for (int r = 0; r < rounds; r++) {
            long t0 = System.nanoTime();
            long received = t0;
            for (long i = 0; i < n; i++) {
                sink += System.nanoTime() - received;
            }
            long t1 = System.nanoTime();
            for (long i = 0; i < n; i++) {
                long latency = System.nanoTime() - received;
                meters.record(tcp, (i & 1) == 0 ? TargetMeterNames.OP_READ : TargetMeterNames.OP_WRITE,
                    latency & 0xFFFFF, 0, 4096);
            }
            long t2 = System.nanoTime();
            double base = (t1 - t0) / (double) n;
            double metered = (t2 - t1) / (double) n;
            System.out.printf("round %d: clock only %.1f ns, clock + record %.1f ns per I/O: metering adds %.1f ns%n",
                r + 1, base, metered, metered - base);
        }
        System.out.println("read timer count " + meters.timer(tcp, TargetMeterNames.OP_READ).count() + " (sink " + (sink & 1) + ")");
    }
}
