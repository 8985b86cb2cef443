package io.nvmeof4j.initiator.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.nvmeof4j.initiator.ReactorPinningIT;
import io.nvmeof4j.jni.cpu.CpuAffinity;
import io.nvmeof4j.jni.cpu.CpuSet;
import io.nvmeof4j.jni.cpu.ReactorPinning;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/** {@code nvmeof perf} for 2 s: progress lines, a summary with ordered percentiles, and one JSON object. */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class PerfIT {
    private CliTarget target;

    @BeforeAll
    void start(@TempDir Path dir) throws Exception {
        target = new CliTarget(dir);
    }

    @AfterAll
    void stop() {
        target.close();
    }

    @Test
    void shouldReportIopsAndOrderedPercentilesAtQueueDepth1() {
        Cli.Outcome r = Cli.run(Cli.args("perf", target.ioPort, "-n", CliTarget.NQN_A, "--workload", "randread",
            "--io-size", "4K", "--queue-depth", "1", "--time", "2"));
        assertThat(r.status()).as(r.toString()).isZero();
        assertThat(r.out()).contains("[  1 s]").contains("[  2 s]").contains("IOPS        : ")
            .contains("Throughput  : ").contains("Allocation  : ");
        Matcher iops = Pattern.compile("IOPS        : ([0-9,]+)").matcher(r.out());
        assertThat(iops.find()).isTrue();
        assertThat(Long.parseLong(iops.group(1).replace(",", ""))).isPositive();
        Matcher lat = Pattern.compile("Latency \\(us\\): min ([0-9.]+)  avg ([0-9.]+)  p50 ([0-9.]+)  p90 ([0-9.]+)  "
            + "p99 ([0-9.]+)  p99.9 ([0-9.]+)  p99.99 ([0-9.]+)  max ([0-9.]+)").matcher(r.out());
        assertThat(lat.find()).as(r.out()).isTrue();
        double previous = Double.parseDouble(lat.group(1));
        for (int g = 3; g <= 8; g++) {
            double v = Double.parseDouble(lat.group(g));
            assertThat(v).as("latency group %d", g).isGreaterThanOrEqualTo(previous);
            previous = v;
        }
        assertThat(Double.parseDouble(lat.group(3))).isPositive();
    }

    @Test
    void shouldPrintOneJsonObjectAtQueueDepth32() throws Exception {
        Cli.Outcome r = Cli.run(Cli.args("perf", target.ioPort, "-n", CliTarget.NQN_A, "--workload", "randread",
            "--io-size", "4096", "--queue-depth", "32", "--time", "2", "--json"));
        assertThat(r.status()).as(r.toString()).isZero();
        JsonNode s = new ObjectMapper().readTree(r.out());
        assertThat(r.out().trim().split("\n")).hasSize(1);
        assertThat(r.err()).contains("[  2 s]"); // progress goes to stderr with --json
        assertThat(s.get("workload").asText()).isEqualTo("randread");
        assertThat(s.get("queue_depth").asInt()).isEqualTo(32);
        assertThat(s.get("io_size").asInt()).isEqualTo(4096);
        assertThat(s.get("errors").asLong()).isZero();
        assertThat(s.get("ios").asLong()).isPositive();
        assertThat(s.get("reads").asLong()).isEqualTo(s.get("ios").asLong());
        assertThat(s.get("iops").asDouble()).isPositive();
        assertThat(s.get("mib_per_s").asDouble()).isCloseTo(s.get("iops").asDouble() * 4096 / (1 << 20),
            org.assertj.core.data.Percentage.withPercentage(0.1));
        JsonNode lat = s.get("latency_us");
        double previous = lat.get("min").asDouble();
        for (String key : new String[] {"p50", "p90", "p99", "p99.9", "p99.99", "max"}) {
            assertThat(lat.get(key).asDouble()).as(key).isGreaterThanOrEqualTo(previous);
            previous = lat.get(key).asDouble();
        }
        assertThat(lat.get("p50").asDouble()).isPositive();
        // The callback data path allocates nothing per I/O (CallbackAllocationIT holds it to < 1 byte); here
        // the whole run counts, class loading and JIT warm-up included.
        assertThat(s.get("allocated_bytes_per_io").asDouble()).isBetween(0.0, 16.0);
        assertThat(s.get("measured_threads").toString()).contains("nvmeof-host-reactor-0")
            .contains("nvmeof-perf-driver-0");
    }

    @Test
    void shouldMixReadsAndWritesOverTwoQueues() throws Exception {
        Cli.Outcome r = Cli.run(Cli.args("perf", target.ioPort, "-n", CliTarget.NQN_A, "--namespace-id", "2",
            "--workload", "randrw", "--rwmix", "70", "--io-size", "8K", "--queue-depth", "4", "--queues", "2",
            "--time", "1", "--json"));
        assertThat(r.status()).as(r.toString()).isZero();
        JsonNode s = new ObjectMapper().readTree(r.out());
        long reads = s.get("reads").asLong();
        long writes = s.get("writes").asLong();
        assertThat(reads + writes).isEqualTo(s.get("ios").asLong()).isPositive();
        assertThat((double) reads / (reads + writes)).isBetween(0.6, 0.8);
        assertThat(s.get("io_queues_granted").asInt()).isEqualTo(2);
        assertThat(s.get("measured_threads").toString()).contains("nvmeof-host-reactor-1");
    }

    @Test
    void shouldLeaveTheWarmupOutOfEveryFigure() throws Exception {
        Cli.Outcome r = Cli.run(Cli.args("perf", target.ioPort, "-n", CliTarget.NQN_A, "--namespace-id", "2",
            "--workload", "randrw", "--queue-depth", "4", "--warmup", "1", "--warmup-max", "1", "--time", "1",
            "--json"));
        assertThat(r.status()).as(r.toString()).isZero();
        // The warm-up records as the measured run does (its line has latencies), and its intervals are dropped.
        assertThat(r.err()).containsPattern("\\[warm-up   1 s\\] +[0-9,]+ IOPS .* p50 +[0-9.]+ us .* p99 +[0-9.]+ us"
            + " +\\(not counted; JIT [0-9]+ ms\\)").contains("[  1 s]");
        JsonNode s = new ObjectMapper().readTree(r.out());
        assertThat(s.get("time_s").asDouble()).as("the measured time only").isBetween(0.9, 1.6);
        // --warmup-max 1: no extension however busy the JIT was.
        assertThat(s.get("warmup_s").asInt()).isEqualTo(1);
        assertThat(r.err()).doesNotContain("[warm-up   2 s]");
        // Reads and writes are the counts of the two recorders' measured intervals: they add up to the
        // histogram's I/Os.
        assertThat(s.get("reads").asLong() + s.get("writes").asLong()).isEqualTo(s.get("ios").asLong())
            .isPositive();
        assertThat(s.get("errors").asLong()).isZero();
    }

    @Test
    void shouldSayThatVerifyCountsTheWarmupsWritesToo() {
        Cli.Outcome r = Cli.run(Cli.args("perf", target.ioPort, "-n", CliTarget.NQN_A, "--namespace-id", "2",
            "--workload", "randwrite", "--queue-depth", "4", "--verify", "--warmup", "1", "--warmup-max", "1",
            "--time", "1"));
        assertThat(r.status()).as(r.toString()).isZero();
        Matcher verify = Pattern.compile("Verify      : ([0-9,]+) writes read back and compared \\(the warm-up's "
            + "included\\), 0 mismatches").matcher(r.out());
        assertThat(verify.find()).as(r.out()).isTrue();
        assertThat(Long.parseLong(verify.group(1).replace(",", ""))).isPositive();

        Cli.Outcome cold = Cli.run(Cli.args("perf", target.ioPort, "-n", CliTarget.NQN_A, "--namespace-id", "2",
            "--workload", "randwrite", "--queue-depth", "4", "--verify", "--time", "1"));
        assertThat(cold.status()).as(cold.toString()).isZero();
        assertThat(cold.out()).containsPattern("Verify      : [0-9,]+ writes read back and compared, 0 mismatches");
    }

    @Test
    void shouldWarmUpUntilTheJitWasQuietForAKeepAliveIntervalAndNoLongerThanWarmupMax() throws Exception {
        // -k 2: a Keep Alive every second, so the warm-up ends after 2 quiet seconds in a row (or at 8).
        Cli.Outcome r = Cli.run(Cli.args("perf", target.ioPort, "-n", CliTarget.NQN_A, "--namespace-id", "2",
            "--workload", "randread", "--queue-depth", "8", "--warmup", "1", "--warmup-max", "8", "--time", "1",
            "-k", "2", "--json"));
        assertThat(r.status()).as(r.toString()).isZero();
        int quietNeeded = PerfCommand.Run.quietWarmupSeconds(java.time.Duration.ofSeconds(2));
        assertThat(quietNeeded).isEqualTo(2);
        JsonNode s = new ObjectMapper().readTree(r.out());
        int warmup = s.get("warmup_s").asInt();
        assertThat(warmup).isBetween(2, 8);
        Matcher jit = Pattern.compile("\\[warm-up +([0-9]+) s\\].*\\(not counted; JIT ([0-9]+) ms\\)").matcher(r.err());
        int lines = 0;
        int quiet = 0;
        while (jit.find()) {
            lines++;
            int tick = Integer.parseInt(jit.group(1));
            long compiled = Long.parseLong(jit.group(2));
            assertThat(tick).isEqualTo(lines);
            quiet = compiled <= PerfCommand.WARMUP_QUIET_JIT_MILLIS ? quiet + 1 : 0;
            // Every second before the last ended a streak of quiet seconds too short; the last one ended a long
            // enough streak, or was the limit.
            if (tick < warmup) {
                assertThat(quiet).as(r.err()).isLessThan(quietNeeded);
            }
            if (tick == warmup && warmup < 8) {
                assertThat(quiet).as(r.err()).isGreaterThanOrEqualTo(quietNeeded);
            }
        }
        assertThat(lines).as(r.err()).isEqualTo(warmup);
        assertThat(s.get("reads").asLong()).isEqualTo(s.get("ios").asLong()).isPositive();
    }

    @Test
    void shouldNeedAWholeKeepAliveIntervalOfQuietSecondsAndOneMore() {
        assertThat(PerfCommand.Run.quietWarmupSeconds(java.time.Duration.ofSeconds(5))).isEqualTo(4); // KA every 2.5 s
        assertThat(PerfCommand.Run.quietWarmupSeconds(java.time.Duration.ofSeconds(4))).isEqualTo(3);
        assertThat(PerfCommand.Run.quietWarmupSeconds(java.time.Duration.ofMillis(1500))).isEqualTo(2);
        assertThat(PerfCommand.Run.quietWarmupSeconds(java.time.Duration.ZERO)).isEqualTo(1); // no Keep Alive
        assertThat(PerfCommand.Run.quietWarmupSeconds(java.time.Duration.ofHours(1))).isEqualTo(60);
    }

    @Test
    void shouldLogEveryMeasuredIoSlowerThanSlowUs(@TempDir Path out) throws Exception {
        Path log = out.resolve("slow.txt");
        Cli.Outcome r = Cli.run(Cli.args("perf", target.ioPort, "-n", CliTarget.NQN_A, "--namespace-id", "2",
            "--workload", "randread", "--queue-depth", "1", "--warmup", "1", "--warmup-max", "1", "--time", "1",
            "--slow-log", log.toString(), "--slow-us", "0", "--json"));
        assertThat(r.status()).as(r.toString()).isZero();
        JsonNode s = new ObjectMapper().readTree(r.out());
        long ios = s.get("ios").asLong();
        java.util.List<String> lines = java.nio.file.Files.readAllLines(log);
        assertThat(lines.get(0)).startsWith("# submitted_us latency_us queue slot");
        java.util.List<String> entries = lines.subList(1, lines.size());
        // Every I/O takes more than 0 us: all of the measured run's are there (the ring keeps the last 65,536),
        // give or take the one in flight when the measurement began.
        assertThat((long) entries.size()).isBetween(Math.min(ios, PerfWorker.SLOW_LOG_ENTRIES) - 1, ios + 1);
        double maxLatency = 0;
        for (String e : entries) {
            String[] f = e.split(" ");
            double submitted = Double.parseDouble(f[0]);
            double latency = Double.parseDouble(f[1]);
            assertThat(submitted + latency).as(e).isBetween(0.0, s.get("time_s").asDouble() * 1e6 + 1e6);
            assertThat(latency).as(e).isPositive();
            assertThat(f[2]).isEqualTo("0");
            assertThat(f[3]).isEqualTo("0");
            maxLatency = Math.max(maxLatency, latency);
        }
        // What the log holds the histogram counted too (its max keeps 3 significant digits).
        assertThat(maxLatency).isLessThanOrEqualTo(s.get("latency_us").get("max").asDouble() * 1.001);
        assertThat(r.err()).contains("Slow log    : ").contains(" I/Os over 0 us in " + log);
    }

    @Test
    void shouldPinTheHostReactorToTheCpusGivenAndTheRestOfTheJvmToTheOthers() throws Exception {
        assumeTrue(CpuAffinity.isAvailable(), "no affinity library");
        CpuSet original = CpuAffinity.get(0);
        assumeTrue(original.containsAll(CpuSet.of(0, 1)), "this JVM may run on CPUs 0 and 1");
        // Sampled from /proc while perf runs, as an operator would see it.
        java.util.Set<String> reactorCpus = java.util.concurrent.ConcurrentHashMap.newKeySet();
        java.util.Set<String> driverCpus = java.util.concurrent.ConcurrentHashMap.newKeySet();
        java.util.concurrent.atomic.AtomicBoolean sampling = new java.util.concurrent.atomic.AtomicBoolean(true);
        Thread sampler = new Thread(() -> {
            while (sampling.get()) {
                try {
                    ReactorPinningIT.affinities().forEach((thread, cpus) -> {
                        if (thread.startsWith("nvmeof-host-re")) {
                            reactorCpus.add(cpus);
                        } else if (thread.startsWith("nvmeof-perf-dri")) {
                            driverCpus.add(cpus);
                        }
                    });
                    Thread.sleep(50);
                } catch (Exception e) {
                    return;
                }
            }
        }, "affinity-sampler");
        sampler.start();
        Cli.Outcome r;
        try {
            r = Cli.run(Cli.args("perf", target.ioPort, "-n", CliTarget.NQN_A, "--namespace-id", "2",
                "--queue-depth", "4", "--time", "1", "--cpus", "1", "--json"));
        } finally {
            sampling.set(false);
            sampler.join(5_000);
        }
        assertThat(r.status()).as(r.toString()).isZero();
        assertThat(r.err()).contains("Pinning     : nvmeof-host-reactor-0 pinned to CPU 1; housekeeping (JIT, GC, "
            + "other threads) on CPUs 0");
        JsonNode s = new ObjectMapper().readTree(r.out());
        assertThat(s.get("reactor_cpus").asText()).isEqualTo("1");
        assertThat(s.get("ios").asLong()).isPositive();
        assertThat(s.get("errors").asLong()).isZero();
        assertThat(reactorCpus).as("the host reactor while it ran").containsExactly("1");
        assertThat(driverCpus).as("the drivers (housekeeping) while they ran").containsExactly("0");
        assertThat(CpuAffinity.get(0)).as("every thread gets its CPUs back").isEqualTo(original);
        // SPDK perf's spelling, a core mask.
        Cli.Outcome mask = Cli.run(Cli.args("perf", target.ioPort, "-n", CliTarget.NQN_A, "--namespace-id", "2",
            "--queue-depth", "1", "--time", "1", "-c", "0x2"));
        assertThat(mask.status()).as(mask.toString()).isZero();
        assertThat(mask.out()).contains("Pinning     : nvmeof-host-reactor-0 pinned to CPU 1");
    }

    @Test
    void shouldRejectCpusBeyondTheMachineWithoutPinningAnything() throws Exception {
        Cli.Outcome r = Cli.run(Cli.args("perf", target.ioPort, "-n", CliTarget.NQN_A, "--namespace-id", "2",
            "--time", "1", "--cpus", "0-99999999"));
        assertThat(r.status()).isEqualTo(NvmeofCli.EXIT_USAGE);
        assertThat(r.err()).contains("--cpus CPU list \"0-99999999\": CPU 99999999 is beyond this machine's "
            + CpuAffinity.possibleCpus() + " CPU(s)");
        Cli.Outcome empty = Cli.run(Cli.args("perf", target.ioPort, "-n", CliTarget.NQN_A, "--namespace-id", "2",
            "--time", "1", "-c", "0x"));
        assertThat(empty.status()).isEqualTo(NvmeofCli.EXIT_USAGE);
        assertThat(empty.err()).contains("--cpus core mask \"0x\" has no hex digits (example: \"0x3\")");
        assertThat(ReactorPinning.active()).isNull();
    }

    @Test
    void shouldRejectAWarmupMaxBelowTheWarmup() {
        Cli.Outcome r = Cli.run(Cli.args("perf", target.ioPort, "-n", CliTarget.NQN_A, "--namespace-id", "2",
            "--warmup", "3", "--warmup-max", "2", "--time", "1"));
        assertThat(r.status()).isEqualTo(NvmeofCli.EXIT_USAGE);
        assertThat(r.err()).contains("--warmup-max 2 outside --warmup (3)..3600 seconds");
    }

    @Test
    void shouldRejectANegativeWarmup() {
        Cli.Outcome r = Cli.run(Cli.args("perf", target.ioPort, "-n", CliTarget.NQN_A, "--namespace-id", "2",
            "--warmup", "-1", "--time", "1"));
        assertThat(r.status()).isEqualTo(NvmeofCli.EXIT_USAGE);
        assertThat(r.err()).contains("--warmup -1 outside 0..3600 seconds");
    }

    @Test
    void shouldRejectAnIoSizeThatIsNotWholeBlocks() {
        Cli.Outcome r = Cli.run(Cli.args("perf", target.ioPort, "-n", CliTarget.NQN_A, "--namespace-id", "2",
            "--io-size", "512", "--time", "1"));
        assertThat(r.status()).isEqualTo(NvmeofCli.EXIT_USAGE);
        assertThat(r.err()).contains("--io-size 512 is not a multiple of namespace 2's 4096-byte blocks");
    }

    @Test
    void shouldWriteAReadableHistogramLogAndAnSvgChart(@TempDir Path out) throws Exception {
        Path log = out.resolve("run.hlog");
        Cli.Outcome r = Cli.run(Cli.args("perf", target.ioPort, "-n", CliTarget.NQN_A, "--workload", "randrw",
            "--io-size", "4K", "--queue-depth", "8", "--time", "2", "--json", "--histogram-file", log.toString(),
            "--metrics"));
        assertThat(r.status()).as(r.toString()).isZero();
        JsonNode s = new ObjectMapper().readTree(r.out());
        long ios = s.get("ios").asLong();
        assertThat(ios).isPositive();

        // The log reads back with HdrHistogram's own reader: interval histograms whose counts add up to the run.
        org.HdrHistogram.HistogramLogReader reader = new org.HdrHistogram.HistogramLogReader(log.toFile());
        org.HdrHistogram.Histogram sum = new org.HdrHistogram.Histogram(3);
        int intervals = 0;
        for (org.HdrHistogram.EncodableHistogram h = reader.nextIntervalHistogram(); h != null;
             h = reader.nextIntervalHistogram()) {
            sum.add((org.HdrHistogram.Histogram) h);
            intervals++;
        }
        reader.close();
        assertThat(intervals).isBetween(2, 3);
        assertThat(sum.getTotalCount()).isEqualTo(ios);
        assertThat(sum.getValueAtPercentile(50) / 1000.0).isCloseTo(s.get("latency_us").get("p50").asDouble(),
            org.assertj.core.data.Percentage.withPercentage(1));

        // The chart is well-formed SVG with the spectrum drawn.
        Path svg = out.resolve("run.svg");
        org.w3c.dom.Document doc = javax.xml.parsers.DocumentBuilderFactory.newInstance().newDocumentBuilder()
            .parse(svg.toFile());
        assertThat(doc.getDocumentElement().getTagName()).isEqualTo("svg");
        org.w3c.dom.NodeList lines = doc.getElementsByTagName("polyline");
        assertThat(lines.getLength()).isEqualTo(1);
        assertThat(((org.w3c.dom.Element) lines.item(0)).getAttribute("points").trim().split(" ").length)
            .isGreaterThan(10);
        assertThat(java.nio.file.Files.readString(svg)).contains("99.9%").contains("Latency");

        // --metrics: the library's meters counted every I/O of the run (and the probe I/O before it).
        java.util.regex.Matcher counted = Pattern.compile("nvmeof.host.io counted ([0-9,]+) I/Os").matcher(r.err());
        assertThat(counted.find()).as(r.err()).isTrue();
        assertThat(Long.parseLong(counted.group(1).replace(",", ""))).isGreaterThanOrEqualTo(ios);
    }
}
