package io.nvmeof4j.initiator.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.nvmeof4j.initiator.ConnectOptions;
import io.nvmeof4j.jni.cpu.CpuAffinity;
import io.nvmeof4j.jni.cpu.CpuSet;
import io.nvmeof4j.jni.cpu.ReactorPinning;
import io.nvmeof4j.initiator.IoStatus;
import io.nvmeof4j.initiator.NvmeofController;
import io.nvmeof4j.initiator.NvmeofHost;
import io.nvmeof4j.initiator.NvmeofIoException;
import io.nvmeof4j.initiator.BlockNamespace;
import io.nvmeof4j.initiator.IoPolicy;
import io.nvmeof4j.initiator.MultipathController;
import io.nvmeof4j.initiator.MultipathNamespace;
import io.nvmeof4j.initiator.PathStats;
import io.nvmeof4j.protocol.ana.AnaState;
import io.nvmeof4j.protocol.spi.TransportAddress;
import org.HdrHistogram.Histogram;
import org.HdrHistogram.HistogramLogWriter;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

import java.io.IOException;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * {@code nvmeof perf}: a load generator in the manner of SPDK's perf. Each of {@code --queues} workers owns one I/O
 * queue, served by its own host reactor thread, and keeps {@code --queue-depth} I/Os in flight through the
 * allocation-free callback API. Latency is recorded on the completing thread into a per-worker HdrHistogram
 * recorder (one for reads, one for writes); the main thread merges them each second for the progress line and at
 * the end for the summary. A warm-up runs exactly the measured code on every thread (recording, the recorders'
 * flips, the progress line) and its intervals are thrown away, so the measured run starts with that code compiled.
 */
@Command(name = "perf", sortOptions = false, mixinStandardHelpOptions = true,
    description = {"Generate block I/O load (like SPDK's perf); print IOPS, MiB/s and latency",
        "percentiles each second and at the end. Each queue has its own host thread.",
        "Write workloads overwrite the namespace.", ""})
final class PerfCommand extends CliCommand {
    /** What to do: sequential or random, reads and/or writes. */
    enum Workload {
        READ(false, 100), WRITE(false, 0), RANDREAD(true, 100), RANDWRITE(true, 0), RANDRW(true, -1);

        final boolean random;
        final int readPercent;

        Workload(boolean random, int readPercent) {
            this.random = random;
            this.readPercent = readPercent;
        }

        String label() {
            return name().toLowerCase(Locale.ROOT);
        }
    }

    /** Bound on the direct buffers of one run (every slot of every queue has its own). */
    static final long MAX_BUFFER_BYTES = 1L << 30;
    /** A warm-up second is quiet when the JIT compiled for no longer than this in it (--warmup-max). */
    static final long WARMUP_QUIET_JIT_MILLIS = 2;
    static final int WARMUP_EXTENSION_DEFAULT = 30;
    static final double[] PERCENTILES = {50, 90, 99, 99.9, 99.99};
    static final String[] PERCENTILE_KEYS = {"p50", "p90", "p99", "p99.9", "p99.99"};
    /** How long the host reactors get to pin themselves (--cpus). */
    static final java.time.Duration PIN_TIMEOUT = java.time.Duration.ofSeconds(10);

    @Option(names = "--queue-depth", paramLabel = "N", defaultValue = "32",
        description = "I/Os kept in flight per queue. Default: ${DEFAULT-VALUE}.")
    int queueDepth;

    @Option(names = {"-o", "--io-size"}, paramLabel = "BYTES", defaultValue = "4096", converter = Sizes.class,
        description = "Bytes per I/O (K, M suffixes), a multiple of the block size. Default: ${DEFAULT-VALUE}.")
    long ioSize;

    @Option(names = {"-w", "--workload"}, paramLabel = "W", defaultValue = "randread",
        description = "read, write, randread, randwrite or randrw. Default: ${DEFAULT-VALUE}.")
    String workloadName;

    @Option(names = {"-M", "--rwmix"}, paramLabel = "PERCENT",
        description = "Reads in percent, for randrw. Default: 50.")
    Integer rwmix;

    @Option(names = "--time", paramLabel = "SECONDS", defaultValue = "10",
        description = "Run time. Default: ${DEFAULT-VALUE}.")
    int seconds;

    @Option(names = "--warmup", paramLabel = "SECONDS", defaultValue = "0",
        description = {"Run the workload this long first and leave it out of every figure (IOPS, latency, the",
            "allocation per I/O, the histogram log), as spdk_nvme_perf's warm-up. Default: ${DEFAULT-VALUE}."})
    int warmupSeconds;

    @Option(names = "--warmup-max", paramLabel = "SECONDS",
        description = {"Go on warming up past --warmup, a second at a time, until the JIT has compiled for no more",
            "than " + WARMUP_QUIET_JIT_MILLIS + " ms a second over a whole Keep Alive interval (KATO/2) and one",
            "second more, up to this many seconds of warm-up in all (a C2 compilation shares a CPU with the reactor",
            "or the target and stalls every I/O in flight; the first Keep Alives recompile the I/O path). Default:",
            "--warmup + " + WARMUP_EXTENSION_DEFAULT + " (none without --warmup)."})
    Integer warmupMaxSeconds;

    @Option(names = {"--cpus", "-c"}, paramLabel = "LIST|MASK",
        description = {"Pin the host reactors to these CPUs (a list as taskset -c takes it, \"1\" or \"0-3,8\", or",
            "a core mask as spdk_nvme_perf -c takes it, \"0x2\"; reactor i on the i-th CPU, in turn) and move the",
            "rest of the JVM (JIT, GC, the drivers) to the other CPUs it may use. Default: not pinned."})
    String cpus;

    @Option(names = "--queues", paramLabel = "N", defaultValue = "1",
        description = "I/O queues, each with its own host reactor thread. Default: ${DEFAULT-VALUE}.")
    int queues;

    @Mixin
    NamespaceIdOption namespaceId;

    @Option(names = "--json", description = "Print the summary as one JSON object on stdout (progress to stderr).")
    boolean json;

    @Option(names = "--histogram-file", paramLabel = "PATH",
        description = {"Write the latency as an HdrHistogram log (one interval histogram per second; read it with",
            "HistogramLogReader or HdrHistogram's plotter) to PATH, and a percentile-spectrum chart to PATH",
            "with its extension replaced by .svg."})
    Path histogramFile;

    @Option(names = "--slow-log", paramLabel = "PATH",
        description = {"Write every measured I/O slower than --slow-us to PATH, one line each: its submission",
            "time (us since the measurement began), its latency (us), queue and slot; I/Os that wait together",
            "(a stall of the whole queue) show up as runs of equal submission times. At most "
                + PerfWorker.SLOW_LOG_ENTRIES + " per queue (the last ones)."})
    Path slowLogFile;

    @Option(names = "--slow-us", paramLabel = "MICROS", defaultValue = "1000",
        description = "What --slow-log counts as slow. Default: ${DEFAULT-VALUE}.")
    long slowMicros;

    @Option(names = "--verify", description = {"Read every write back at once and compare it with the pattern",
        "written (LBA and sequence number in every word); each I/O slot then works in its own stripe of the",
        "namespace. A mismatch fails the run."})
    boolean verify;

    @Option(names = "--metrics", description = {"Record into Micrometer meters too (nvmeof.host.*, percentile",
        "histograms on), as an application would: to measure what the library's metrics cost."})
    boolean metrics;

    private static final com.sun.management.ThreadMXBean THREADS =
        (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();

    @Override
    int execute() throws Exception {
        String nqn = connection.requireNqn();
        Workload workload = workload();
        int readPercent = readPercent(workload);
        range(queueDepth, 1, 4096, "--queue-depth");
        if (seconds < 1 || seconds > 86_400) { // not range(): this message names the unit
            throw new CliUsageException("--time " + seconds + " outside 1..86400 seconds");
        }
        if (warmupSeconds < 0 || warmupSeconds > 3_600) {
            throw new CliUsageException("--warmup " + warmupSeconds + " outside 0..3600 seconds");
        }
        int warmupMax = warmupMaxSeconds != null ? warmupMaxSeconds
            : warmupSeconds == 0 ? 0 : warmupSeconds + WARMUP_EXTENSION_DEFAULT;
        if (warmupMax < warmupSeconds || warmupMax > 3_600) {
            throw new CliUsageException("--warmup-max " + warmupMax + " outside --warmup (" + warmupSeconds
                + ")..3600 seconds");
        }
        range(queues, 1, 64, "--queues");
        if (slowMicros < 0 || slowMicros > 3_600_000_000L) {
            throw new CliUsageException("--slow-us " + slowMicros + " outside 0..3600000000 microseconds");
        }
        if (ioSize < 1 || ioSize > (64 << 20)) {
            throw new CliUsageException("--io-size " + ioSize + " outside 1 byte..64 MiB");
        }
        if ((long) queues * queueDepth * ioSize > MAX_BUFFER_BYTES) {
            throw new CliUsageException("--queues x --queue-depth x --io-size = " + queues * queueDepth * ioSize
                + " bytes of I/O buffers, more than the " + (MAX_BUFFER_BYTES >> 20) + " MiB perf allows");
        }
        ConnectOptions options = connection.connectOptions(false, queues, queueDepth + 1, queueDepth);
        PrintWriter progress = json ? err() : out();
        io.micrometer.core.instrument.MeterRegistry registry = metrics
            ? new io.micrometer.core.instrument.simple.SimpleMeterRegistry() : null;
        List<TransportAddress> addresses = connection.addresses(ConnectionOptions.IO_PORT_DEFAULT);
        // First: the rest of the JVM moves to the housekeeping CPUs before the host's reactors start; last closed.
        try (ReactorPinning pinning = pin();
             NvmeofHost host = registry == null ? NvmeofHost.create(connection.identity(), queues, pinning)
                 : NvmeofHost.create(connection.identity(), queues, registry, true, pinning);
             Target t = Target.connect(host, addresses, nqn, options, connection.ioPolicy(), namespaceId.value)) {
            if (pinning != null) {
                progress.println("Pinning     : " + pinning.describe(pinning.awaitReactors(queues, PIN_TIMEOUT)));
                if (pinning.housekeepingShared()) {
                    progress.println("Pinning     : warning: --cpus " + cpus + " takes every CPU this process may run "
                        + "on; the JIT and GC share them with the reactors");
                }
            }
            BlockNamespace ns = t.namespace;
            if (ioSize % ns.blockSize() != 0 || ioSize / ns.blockSize() > ns.blockCount()) {
                throw new CliUsageException("--io-size " + ioSize + " is not a multiple of namespace " + ns.nsid()
                    + "'s " + ns.blockSize() + "-byte blocks, or larger than the namespace");
            }
            if (verify && ns.blockCount() / (ioSize / ns.blockSize()) < (long) queues * queueDepth) {
                throw new CliUsageException("--verify needs at least --queues x --queue-depth I/O slots of --io-size "
                    + "in the namespace");
            }
            int ioBytes = (int) ioSize;
            PerfWorker[] workers = new PerfWorker[queues];
            for (int i = 0; i < queues; i++) {
                workers[i] = new PerfWorker(i, ns, workload, readPercent, ioBytes, queueDepth, queues, verify);
                if (slowLogFile != null) {
                    workers[i].logSlowerThan(slowMicros);
                }
            }
            Run run = new Run(workers, t.ioQueueCount, options, t.multipath);
            if (histogramFile != null) {
                run.logTo(histogramFile);
            }
            progress.printf(Locale.ROOT, "nvmeof perf: %s, %d-byte I/O, queue depth %d x %d queue(s), %d s%s, "
                    + "namespace %d (%d x %d B) of %s%n", workload == Workload.RANDRW
                    ? "randrw " + readPercent + "% reads" : workload.label(), ioBytes, queueDepth, queues,
                seconds, warmupMax == 0 ? "" : " after a warm-up of " + warmupSeconds
                    + (warmupMax > warmupSeconds ? " to " + warmupMax : "") + " s", ns.nsid(),
                ns.blockCount(), ns.blockSize(), t.peer);
            progress.flush();
            Result result = run.execute(warmupSeconds, warmupMax, seconds, progress, ioBytes);
            if (slowLogFile != null) {
                long kept = writeSlowLog(slowLogFile, workers, result.measuredFromNanos, queueDepth);
                progress.printf(Locale.ROOT, "Slow log    : %,d measured I/Os over %d us in %s%n", kept, slowMicros,
                    slowLogFile);
            }
            if (histogramFile != null) {
                Path svg = svgPath(histogramFile);
                Files.writeString(svg, LatencyChart.svg(result.latency, String.format(Locale.ROOT,
                    "nvmeof perf: %s, %d-byte I/O, QD %d x %d, %s", workload.label(), ioBytes, queueDepth, queues,
                    t.peer)), StandardCharsets.UTF_8);
                progress.println("Histogram log: " + histogramFile + "; chart: " + svg);
            }
            if (registry != null) {
                double counted = registry.find(io.nvmeof4j.initiator.HostMeterNames.IO).timers().stream()
                    .mapToDouble(timer -> timer.count()).sum();
                progress.printf(Locale.ROOT, "Metrics     : nvmeof.host.io counted %,.0f I/Os%n", counted);
            }
            ObjectNode summary = summary(result, workload, readPercent, ioBytes, ns, t);
            if (json) {
                out().println(new ObjectMapper().writeValueAsString(summary));
            } else {
                printSummary(out(), result, ioBytes);
                if (verify) {
                    // Every write is checked, the warm-up's too: the count is not the measured I/Os'.
                    out().printf(Locale.ROOT, "Verify      : %,d writes read back and compared%s, %,d mismatches%n",
                        result.verified, warmupSeconds > 0 ? " (the warm-up's included)" : "", result.mismatches);
                }
                if (t.multipath != null) {
                    List<PathStats> stats = t.multipath.pathStats();
                    for (int i = 0; i < stats.size(); i++) {
                        PathStats p = stats.get(i);
                        out().printf(Locale.ROOT, "Path        : %s %s, ANA %s: %,d I/Os sent, %,d done, %,d failed, "
                            + "%,d failed over, %d in flight, %d re-added%n", p.address(), p.state(),
                            AnaState.name(((MultipathNamespace) ns).anaState(i)), p.submitted(), p.completed(),
                            p.failed(), p.failedOver(), p.inFlight(), p.rejoins());
                    }
                }
            }
            out().flush();
            if (result.mismatches > 0) {
                throw new IOException("verify: " + result.mismatches + " read-back(s) differed from what was written "
                    + "to namespace " + ns.nsid() + " of " + t.peer + "; the first at LBA " + result.firstMismatchLba);
            }
            if (result.errors > 0) {
                throw new NvmeofIoException(result.errors + " I/O(s) failed on namespace " + ns.nsid() + " of "
                    + t.peer + "; the first with " + (result.firstErrorStatus < 0
                    ? "the request pool full" : IoStatus.describe(result.firstErrorStatus)),
                    result.firstErrorStatus);
            }
        }
        return NvmeofCli.EXIT_OK;
    }

    /**
     * The I/Os of each worker's slow-log ring that completed in the measured run, oldest first; returns how many.
     * Once the workers stopped (the drain's atomic counter orders their writes before this read).
     */
    static long writeSlowLog(Path file, PerfWorker[] workers, long measuredFromNanos, int depth) throws IOException {
        long kept = 0;
        try (PrintStream out = new PrintStream(Files.newOutputStream(file), false, StandardCharsets.UTF_8)) {
            out.println("# submitted_us latency_us queue slot (nvmeof perf --slow-log)");
            for (PerfWorker w : workers) {
                for (long n = Math.max(0, w.slowCount - PerfWorker.SLOW_LOG_ENTRIES); n < w.slowCount; n++) {
                    int i = 3 * (int) (n & (PerfWorker.SLOW_LOG_ENTRIES - 1));
                    long submitted = w.slowLog[i];
                    // Completed in the measured run, as the histogram counts it.
                    if (submitted + w.slowLog[i + 1] - measuredFromNanos >= 0) {
                        out.printf(Locale.ROOT, "%.1f %.1f %d %d%n", (submitted - measuredFromNanos) / 1000.0,
                            w.slowLog[i + 1] / 1000.0, w.index, w.slowLog[i + 2] - (long) w.index * depth);
                        kept++;
                    }
                }
            }
            if (out.checkError()) {
                throw new IOException("writing the slow log " + file + " failed");
            }
        }
        return kept;
    }

    /** {@code run.hlog} → {@code run.svg}; a name without extension gets {@code .svg} appended. */
    static Path svgPath(Path log) {
        String name = log.getFileName().toString();
        int dot = name.lastIndexOf('.');
        return log.resolveSibling((dot > 0 ? name.substring(0, dot) : name) + ".svg");
    }

    /** {@code --cpus}: the plan (the rest of the JVM moved already), or null without the option. */
    private ReactorPinning pin() throws IOException {
        if (cpus == null) {
            return null;
        }
        CpuSet set;
        try {
            set = CpuSet.parse(cpus, CpuAffinity.possibleCpus());
        } catch (IllegalArgumentException e) {
            throw new CliUsageException("--cpus " + e.getMessage());
        }
        try {
            return ReactorPinning.start(set);
        } catch (IllegalArgumentException | IllegalStateException | UnsupportedOperationException e) {
            throw new CliUsageException("--cpus " + cpus + ": " + e.getMessage());
        }
    }

    private Workload workload() {
        try {
            return Workload.valueOf(workloadName.trim().toUpperCase(Locale.ROOT));
        } catch (IllegalArgumentException e) {
            throw new CliUsageException("--workload '" + workloadName
                + "' is not one of read, write, randread, randwrite, randrw");
        }
    }

    private int readPercent(Workload workload) {
        if (workload != Workload.RANDRW) {
            if (rwmix != null) {
                throw new CliUsageException("--rwmix applies to --workload randrw only");
            }
            return workload.readPercent;
        }
        return range(rwmix == null ? 50 : rwmix, 0, 100, "--rwmix");
    }

    /** What a run measured. */
    static final class Result {
        Histogram latency;
        double elapsedSeconds;
        /** Seconds of warm-up run (--warmup, or more up to --warmup-max while the JIT was busy). */
        int warmupSeconds;
        /** System.nanoTime() when the measurement began. */
        long measuredFromNanos;
        long reads;
        long writes;
        long errors;
        int firstErrorStatus;
        long allocatedBytes = -1;
        long verified;
        long mismatches;
        long firstMismatchLba = -1;
        List<String> threads = new ArrayList<>();

        long ios() {
            return latency.getTotalCount();
        }
    }

    /** One run: driver threads start the workers' first I/Os; the main thread times, reports and stops. */
    static final class Run {
        private final PerfWorker[] workers;
        private final int ioQueueCount;
        private final ConnectOptions options;
        private final CountDownLatch go = new CountDownLatch(1);
        private final CountDownLatch stopped = new CountDownLatch(1);
        private final long[] driverAllocated;
        /** Several paths: each progress line shows their I/Os in flight. Null for one path. */
        private final MultipathController multipath;
        private Path logFile;
        /** The last second's latencies of every worker, reads and writes merged ({@link #collect}). */
        private final Histogram interval = new Histogram(1, PerfWorker.HIGHEST_TRACKABLE_NANOS, 3);
        /** Every latency since the measured run began (since the warm-up began, until then). */
        private final Histogram total = new Histogram(1, PerfWorker.HIGHEST_TRACKABLE_NANOS, 3);
        private final Histogram[] recycledReads;
        private final Histogram[] recycledWrites;
        private long intervalReads;
        private long intervalWrites;

        /** Also write each second's interval histogram into an HdrHistogram log. */
        void logTo(Path file) {
            this.logFile = file;
        }

        Run(PerfWorker[] workers, int ioQueueCount, ConnectOptions options, MultipathController multipath) {
            this.workers = workers;
            this.ioQueueCount = ioQueueCount;
            this.options = options;
            this.multipath = multipath;
            this.driverAllocated = new long[workers.length];
            this.recycledReads = new Histogram[workers.length];
            this.recycledWrites = new Histogram[workers.length];
        }

        /**
         * Takes every recorder's interval into {@link #interval} and {@link #total}: one code path for warm-up and
         * measured ticks (the warm-up's total is reset when the measured run starts). Both only ever add the
         * recorders' own histograms: adding {@code interval} (another class) into {@code total} failed a type
         * speculation of {@code AbstractHistogram.add} at every tick (JFR {@code jdk.Deoptimization} once a second),
         * sending the add over its 33,792 counts back to the interpreter, on a CPU the target may need.
         */
        private long collect() {
            // The swaps first, back to back, then the time: an I/O completes in this interval or the next, and the
            // time returned is where the next begins (the slow log's measured run starts there too).
            for (int i = 0; i < workers.length; i++) {
                recycledReads[i] = workers[i].readLatency.getIntervalHistogram(recycledReads[i]);
                recycledWrites[i] = workers[i].writeLatency.getIntervalHistogram(recycledWrites[i]);
            }
            long swapped = System.nanoTime();
            interval.reset();
            intervalReads = 0;
            intervalWrites = 0;
            for (int i = 0; i < workers.length; i++) {
                intervalReads += recycledReads[i].getTotalCount();
                intervalWrites += recycledWrites[i].getTotalCount();
                interval.add(recycledReads[i]);
                interval.add(recycledWrites[i]);
                total.add(recycledReads[i]);
                total.add(recycledWrites[i]);
            }
            return swapped;
        }

        /**
         * Consecutive quiet seconds that end the warm-up: a whole Keep Alive interval (KATO/2, rounded up) and one
         * more, so that at least one Keep Alive completed in them; one without Keep Alive.
         */
        static int quietWarmupSeconds(Duration keepAliveTimeout) {
            long intervalMillis = keepAliveTimeout.toMillis() / 2;
            return intervalMillis == 0 ? 1 : (int) Math.min(60, (intervalMillis + 999) / 1000 + 1);
        }

        /** One progress line: IOPS of the last second, p50/p99 of {@code latency}. */
        private void printTick(PrintWriter progress, String tick, Histogram latency, int ioBytes, String note) {
            long n = interval.getTotalCount();
            progress.printf(Locale.ROOT, "[%s s] %,10d IOPS %10.2f MiB/s   p50 %8.2f us   p99 %8.2f us%s%s%n",
                tick, n, n * (double) ioBytes / (1 << 20), micros(latency.getValueAtPercentile(50)),
                micros(latency.getValueAtPercentile(99)), inFlightPerPath(), note);
            progress.flush();
        }

        /**
         * {@code warmup} seconds of the workload, or more up to {@code warmupMax} while the JIT is busy, left out of
         * the result; then {@code seconds} measured.
         */
        Result execute(int warmup, int warmupMax, int seconds, PrintWriter progress, int ioBytes)
            throws Exception {
            long waitMillis = options.commandTimeout().toMillis() + 5_000;
            CountDownLatch probed = new CountDownLatch(workers.length);
            int[][] probeStatus = new int[workers.length][1];
            Thread[] drivers = new Thread[workers.length];
            for (int i = 0; i < workers.length; i++) {
                PerfWorker w = workers[i];
                int index = i;
                Runnable body = () -> {
                    try {
                        w.probe(w.probeCallback(probed, probeStatus[index]));
                    } catch (RuntimeException e) {
                        probeStatus[index][0] = -1;
                        probed.countDown();
                        return;
                    }
                    try {
                        if (!go.await(waitMillis, TimeUnit.MILLISECONDS)) {
                            return;
                        }
                        long before = THREADS.getCurrentThreadAllocatedBytes();
                        w.start();
                        long after = THREADS.getCurrentThreadAllocatedBytes();
                        // Kept alive (and measured) until the run ends; it does nothing more meanwhile.
                        stopped.await((warmup + seconds) * 1000L + 2 * waitMillis, TimeUnit.MILLISECONDS);
                        driverAllocated[index] = after - before;
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                };
                drivers[i] = driverFor(i % ioQueueCount, body, "nvmeof-perf-driver-" + i);
                drivers[i].setDaemon(true);
            }
            for (Thread d : drivers) {
                d.start();
            }
            Result result = new Result();
            try {
                if (!probed.await(waitMillis, TimeUnit.MILLISECONDS)) {
                    throw new java.util.concurrent.TimeoutException("the first I/O did not complete within "
                        + waitMillis + " ms");
                }
                for (int[] s : probeStatus) {
                    if (s[0] != 0) {
                        throw new NvmeofIoException("the first read failed: " + (s[0] < 0
                            ? "the queue did not accept it" : IoStatus.describe(s[0])), s[0]);
                    }
                }
                Set<Thread> reactors = new LinkedHashSet<>();
                for (PerfWorker w : workers) {
                    reactors.add(w.callbackThread);
                }
                long reactorBefore = allocated(reactors);
                for (PerfWorker w : workers) {
                    w.readLatency.reset();
                    w.writeLatency.reset();
                }
                PrintStream logStream = null;
                HistogramLogWriter log = null;
                if (logFile != null) {
                    logStream = new PrintStream(Files.newOutputStream(logFile), false, StandardCharsets.UTF_8);
                    log = new HistogramLogWriter(logStream);
                    log.outputComment("nvmeof perf latency, nanoseconds; one interval histogram per second");
                    long nowMs = System.currentTimeMillis();
                    log.outputStartTime(nowMs);
                    log.setBaseTime(nowMs);
                    log.outputLegend();
                }
                // Before the I/Os start: with no warm-up every completion is measured (and in the slow log).
                long start = System.nanoTime();
                go.countDown();
                // The warm-up's ticks do what the measured ticks do (the interval's percentiles stand in for the
                // total's), and what they collect is dropped: the last one ends the warm-up. Past --warmup it goes
                // on until the JIT has been quiet for a Keep Alive interval and a second: a compilation on the
                // reactor's CPU (or the target's) stalls the I/Os in flight a scheduler slice (~4 ms), which a
                // measured run should not count as I/O latency. The interval matters because each of the first
                // Keep Alives takes a branch of the shared submit and receive path that I/O never takes (no data,
                // a CapsuleResp after reads that end in C2HData SUCCESS): C2 compiled it out, so one Keep Alive
                // after another makes one hot method after another not entrant, every KATO/2 for 10-20 s
                // (-Xlog:jit+compilation; docs/benchmarks.md). Quiet seconds between two Keep Alives prove nothing.
                java.lang.management.CompilationMXBean jit = ManagementFactory.getCompilationMXBean();
                boolean jitTimed = jit != null && jit.isCompilationTimeMonitoringSupported();
                long jitMillis = jitTimed ? jit.getTotalCompilationTime() : 0;
                int quietNeeded = quietWarmupSeconds(options.keepAliveTimeout());
                int quiet = 0;
                long warmupStart = start;
                for (int tick = 1; tick <= warmupMax; tick++) {
                    long due = warmupStart + TimeUnit.SECONDS.toNanos(tick);
                    for (long left = due - System.nanoTime(); left > 0; left = due - System.nanoTime()) {
                        LockSupport.parkNanos(left);
                    }
                    long swapped = collect();
                    long jitNow = jitTimed ? jit.getTotalCompilationTime() : jitMillis;
                    long compiled = jitNow - jitMillis;
                    jitMillis = jitNow;
                    quiet = compiled <= WARMUP_QUIET_JIT_MILLIS ? quiet + 1 : 0;
                    boolean last = tick == warmupMax || tick >= warmup && quiet >= quietNeeded;
                    if (last) {
                        total.reset();
                        start = swapped;
                        reactorBefore = allocated(reactors);
                        result.warmupSeconds = tick;
                    }
                    printTick(progress, String.format(Locale.ROOT, "warm-up %3d", tick), interval, ioBytes,
                        String.format(Locale.ROOT, "   (not counted; JIT %d ms)", compiled));
                    if (last) {
                        break;
                    }
                }
                result.measuredFromNanos = start;
                long intervalStartMs = System.currentTimeMillis();
                if (log != null) {
                    log.setBaseTime(intervalStartMs);
                }
                for (int tick = 1; tick <= seconds; tick++) {
                    long due = start + TimeUnit.SECONDS.toNanos(tick);
                    for (long left = due - System.nanoTime(); left > 0; left = due - System.nanoTime()) {
                        LockSupport.parkNanos(left);
                    }
                    if (tick == seconds) {
                        for (PerfWorker w : workers) {
                            w.requestStop();
                        }
                    }
                    collect();
                    result.reads += intervalReads;
                    result.writes += intervalWrites;
                    if (log != null) {
                        long nowMs = System.currentTimeMillis();
                        interval.setStartTimeStamp(intervalStartMs);
                        interval.setEndTimeStamp(nowMs);
                        log.outputIntervalHistogram(interval);
                        intervalStartMs = nowMs;
                    }
                    printTick(progress, String.format(Locale.ROOT, "%3d", tick), total, ioBytes, "");
                }
                result.elapsedSeconds = (System.nanoTime() - start) / 1e9;
                long drainDeadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(waitMillis);
                for (PerfWorker w : workers) {
                    while (w.active.get() > 0) {
                        if (System.nanoTime() - drainDeadline > 0) {
                            throw new java.util.concurrent.TimeoutException(w.active.get() + " I/O(s) of queue "
                                + w.index + " did not complete within " + waitMillis + " ms after the run");
                        }
                        LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(1));
                    }
                }
                // Completions between the last tick and the stop flag: count them too.
                collect();
                result.reads += intervalReads;
                result.writes += intervalWrites;
                if (log != null) {
                    if (interval.getTotalCount() > 0) {
                        interval.setStartTimeStamp(intervalStartMs);
                        interval.setEndTimeStamp(System.currentTimeMillis());
                        log.outputIntervalHistogram(interval);
                    }
                    logStream.close();
                    if (logStream.checkError()) {
                        throw new IOException("writing the histogram log " + logFile + " failed");
                    }
                }
                long reactorAfter = allocated(reactors);
                stopped.countDown();
                for (Thread d : drivers) {
                    d.join(waitMillis);
                }
                long driverBytes = 0;
                for (long a : driverAllocated) {
                    driverBytes += a;
                }
                result.latency = total;
                for (PerfWorker w : workers) {
                    if (w.errors.get() > 0 && result.errors == 0) {
                        result.firstErrorStatus = w.firstErrorStatus;
                    }
                    result.errors += w.errors.get();
                    result.verified += w.verified.get();
                    if (w.mismatches.get() > 0 && result.mismatches == 0) {
                        result.firstMismatchLba = w.firstMismatchLba;
                    }
                    result.mismatches += w.mismatches.get();
                }
                if (reactorBefore >= 0 && reactorAfter >= 0) {
                    result.allocatedBytes = reactorAfter - reactorBefore + driverBytes;
                }
                for (Thread t : reactors) {
                    result.threads.add(t.getName());
                }
                for (Thread d : drivers) {
                    result.threads.add(d.getName());
                }
                return result;
            } finally {
                for (PerfWorker w : workers) {
                    w.requestStop();
                }
                go.countDown();
                stopped.countDown();
            }
        }

        /** {@code "   in flight per path 3/13"} over several paths (where each path's I/O is now), else "". */
        private String inFlightPerPath() {
            if (multipath == null) {
                return "";
            }
            StringBuilder b = new StringBuilder("   in flight per path ");
            List<PathStats> stats = multipath.pathStats();
            for (int i = 0; i < stats.size(); i++) {
                b.append(i == 0 ? "" : "/").append(stats.get(i).inFlight());
            }
            return b.toString();
        }

        /**
         * A thread the library maps to I/O queue {@code queue}: a non-reactor thread submits to the queue its
         * thread id selects (id modulo the queue count), and the worker's callbacks then stay on that queue's
         * reactor. Thread ids are sequential, so a few tries find one; if not, the worker shares a queue.
         */
        private Thread driverFor(int queue, Runnable body, String name) {
            Thread candidate = null;
            for (int attempt = 0; attempt < 64 * ioQueueCount; attempt++) {
                candidate = new Thread(body, name);
                if (candidate.getId() % ioQueueCount == queue) {
                    return candidate;
                }
            }
            return candidate;
        }

        private static long allocated(Set<Thread> threads) {
            if (!THREADS.isThreadAllocatedMemorySupported() || !THREADS.isThreadAllocatedMemoryEnabled()) {
                return -1;
            }
            long sum = 0;
            for (Thread t : threads) {
                long a = THREADS.getThreadAllocatedBytes(t.getId());
                if (a < 0) {
                    return -1;
                }
                sum += a;
            }
            return sum;
        }
    }

    /** What perf drives: one controller, or several paths of one subsystem. */
    static final class Target implements AutoCloseable {
        final BlockNamespace namespace;
        final String peer;
        final int ioQueueCount;
        final MultipathController multipath;
        private final AutoCloseable connection;

        private Target(BlockNamespace namespace, String peer, int ioQueueCount, MultipathController multipath,
                       AutoCloseable connection) {
            this.namespace = namespace;
            this.peer = peer;
            this.ioQueueCount = ioQueueCount;
            this.multipath = multipath;
            this.connection = connection;
        }

        static Target connect(NvmeofHost host, List<TransportAddress> addresses, String nqn, ConnectOptions options,
                              IoPolicy policy, int nsid) throws IOException {
            if (addresses.size() == 1) {
                NvmeofController ctrl = host.connect(addresses.get(0), nqn, options);
                try {
                    return new Target(BlockIoCommand.namespace(ctrl, nsid), ctrl.peer(), ctrl.ioQueueCount(), null,
                        ctrl);
                } catch (RuntimeException e) {
                    ctrl.close();
                    throw e;
                }
            }
            MultipathController mp = host.connectMultipath(addresses, nqn, options, policy);
            MultipathNamespace ns = mp.namespace(nsid);
            if (ns == null) {
                mp.close();
                throw new CliUsageException("namespace " + nsid + " is not active on " + mp);
            }
            NvmeofController first = null;
            for (int i = 0; i < addresses.size() && first == null; i++) {
                first = mp.controller(i);
            }
            return new Target(ns, mp.toString(), first == null ? options.ioQueues() : first.ioQueueCount(), mp, mp);
        }

        @Override
        public void close() throws Exception {
            connection.close();
        }
    }

    static double micros(long nanos) {
        return nanos / 1000.0;
    }

    private ObjectNode summary(Result r, Workload workload, int readPercent, int ioBytes, BlockNamespace ns,
                               Target t) {
        ObjectMapper mapper = new ObjectMapper();
        ObjectNode o = mapper.createObjectNode();
        o.put("target", t.peer);
        o.put("namespace_id", ns.nsid());
        o.put("workload", workload.label());
        o.put("read_percent", readPercent);
        o.put("io_size", ioBytes);
        o.put("queue_depth", queueDepth);
        o.put("queues", queues);
        o.put("io_queues_granted", t.ioQueueCount);
        if (cpus != null) {
            o.put("reactor_cpus", CpuSet.parse(cpus, CpuAffinity.possibleCpus()).toString());
        }
        if (verify) {
            o.put("verified", r.verified);
            o.put("mismatches", r.mismatches);
        }
        if (t.multipath != null) {
            o.put("iopolicy", t.multipath.ioPolicy().configName());
            ArrayNode paths = o.putArray("paths");
            List<PathStats> stats = t.multipath.pathStats();
            for (int i = 0; i < stats.size(); i++) {
                PathStats p = stats.get(i);
                ObjectNode n = paths.addObject();
                n.put("address", p.address().toString());
                n.put("state", String.valueOf(p.state()));
                n.put("ana_state", AnaState.name(((MultipathNamespace) ns).anaState(i)));
                n.put("submitted", p.submitted());
                n.put("completed", p.completed());
                n.put("in_flight", p.inFlight());
                n.put("failed", p.failed());
                n.put("failed_over", p.failedOver());
                n.put("rejoins", p.rejoins());
            }
        }
        o.put("warmup_s", r.warmupSeconds);
        o.put("time_s", r.elapsedSeconds);
        o.put("ios", r.ios());
        o.put("reads", r.reads);
        o.put("writes", r.writes);
        o.put("errors", r.errors);
        o.put("iops", r.ios() / r.elapsedSeconds);
        o.put("mib_per_s", r.ios() * (double) ioBytes / (1 << 20) / r.elapsedSeconds);
        ObjectNode lat = o.putObject("latency_us");
        Histogram h = r.latency;
        lat.put("min", h.getTotalCount() == 0 ? 0 : micros(h.getMinValue()));
        lat.put("mean", h.getTotalCount() == 0 ? 0 : h.getMean() / 1000.0);
        for (int i = 0; i < PERCENTILES.length; i++) {
            lat.put(PERCENTILE_KEYS[i], micros(h.getValueAtPercentile(PERCENTILES[i])));
        }
        lat.put("max", micros(h.getMaxValue()));
        o.put("allocated_bytes", r.allocatedBytes);
        o.put("allocated_bytes_per_io", r.allocatedBytes < 0 || r.ios() == 0 ? -1
            : (double) r.allocatedBytes / r.ios());
        ArrayNode threads = o.putArray("measured_threads");
        r.threads.forEach(threads::add);
        return o;
    }

    private static void printSummary(PrintWriter out, Result r, int ioBytes) {
        Histogram h = r.latency;
        double iops = r.ios() / r.elapsedSeconds;
        out.println("========================================================================");
        out.printf(Locale.ROOT, "Total       : %,d I/Os (%,d reads, %,d writes) in %.2f s, %d errors%n", r.ios(),
            r.reads, r.writes, r.elapsedSeconds, r.errors);
        out.printf(Locale.ROOT, "IOPS        : %,.0f%n", iops);
        out.printf(Locale.ROOT, "Throughput  : %.2f MiB/s%n", iops * ioBytes / (1 << 20));
        StringBuilder lat = new StringBuilder();
        lat.append(String.format(Locale.ROOT, "min %.2f  avg %.2f", micros(h.getMinValue()), h.getMean() / 1000.0));
        for (int i = 0; i < PERCENTILES.length; i++) {
            lat.append(String.format(Locale.ROOT, "  %s %.2f", PERCENTILE_KEYS[i],
                micros(h.getValueAtPercentile(PERCENTILES[i]))));
        }
        lat.append(String.format(Locale.ROOT, "  max %.2f", micros(h.getMaxValue())));
        out.println("Latency (us): " + lat);
        if (r.allocatedBytes >= 0 && r.ios() > 0) {
            out.printf(Locale.ROOT, "Allocation  : %.4f bytes per I/O (%,d bytes over %,d I/Os on %s)%n",
                (double) r.allocatedBytes / r.ios(), r.allocatedBytes, r.ios(), String.join(", ", r.threads));
        } else {
            out.println("Allocation  : not measurable (per-thread allocation counters unavailable)");
        }
    }
}
