package io.nvmeof4j.initiator.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.nvmeof4j.initiator.FreezableProxy;
import io.nvmeof4j.protocol.spi.TransportAddress;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Path;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code nvmeof perf --verify} over two paths (two TCP proxies on 127.0.0.1 in front of our target) while one
 * path's port closes mid-run: the run ends with no I/O error and no mismatch, the closed path's in-flight I/O moved
 * to the other path, and the per-path summary says so. The path is frozen first and closed only once perf's
 * progress line shows I/O in flight on it, so there always is I/O to fail over, however loaded the machine is.
 * Bounded: an 8-second run.
 */
class PerfFailoverIT {
    /** perf's progress line over two paths ends with {@code in flight per path A/B}; whole lines only. */
    private static final Pattern IN_FLIGHT = Pattern.compile("in flight per path (\\d+)/(\\d+)\\R");

    @TempDir
    Path dir;

    @Test
    void shouldVerifyEveryWriteWhileOnePathGoesAway() throws Exception {
        try (CliTarget target = new CliTarget(dir);
             FreezableProxy p0 = new FreezableProxy(TransportAddress.tcp("127.0.0.1", target.ioPort));
             FreezableProxy p1 = new FreezableProxy(TransportAddress.tcp("127.0.0.1", target.ioPort))) {
            String ports = p0.address().port() + "," + p1.address().port();
            StringWriter out = new StringWriter();
            StringWriter err = new StringWriter(); // read while perf runs: StringWriter is synchronized
            CompletableFuture<Integer> run = CompletableFuture.supplyAsync(() -> NvmeofCli.run(
                new ByteArrayInputStream(new byte[0]), new ByteArrayOutputStream(), new PrintWriter(out, true),
                new PrintWriter(err, true), "perf", "-t", "tcp", "-a", "127.0.0.1,127.0.0.1", "-s", ports, "-q",
                CliTarget.HOST_A, "-n", CliTarget.NQN_A, "--namespace-id", "2", "--iopolicy", "round-robin",
                "--workload", "randwrite", "--verify", "--io-size", "4K", "--queue-depth", "16", "--time", "8",
                "--json"));
            Matcher first = awaitProgress(err, 0, run);
            assertThat(Long.parseLong(first.group(1)) + Long.parseLong(first.group(2)))
                .as("I/O in flight in the first second: %s", err).isPositive();

            // Frozen: whatever round-robin sends down path 0 from now on stays in flight there.
            p0.freeze();
            // The line being printed now may have counted before the freeze; the next one counts I/O that can no
            // longer complete on path 0 (its completions are held too), so the count only grows until the close.
            int from = awaitProgress(err, err.toString().length(), run).end();
            long stuck = 0;
            for (int tick = 0; tick < 4 && stuck == 0; tick++) {
                Matcher m = awaitProgress(err, from, run);
                from = m.end();
                stuck = Long.parseLong(m.group(1));
            }
            assertThat(stuck).as("I/O held on the frozen path 0 before it closes: %s", err).isPositive();
            p0.close(); // drops what it holds: that I/O can only complete on path 1

            assertThat(run.get(60, TimeUnit.SECONDS)).as("perf exit; stdout %s%nstderr %s", out, err).isZero();
            JsonNode s = new ObjectMapper().readTree(out.toString());
            assertThat(s.get("errors").asLong()).isZero();
            assertThat(s.get("mismatches").asLong()).isZero();
            assertThat(s.get("verified").asLong()).as(out.toString()).isPositive();
            assertThat(s.get("iopolicy").asText()).isEqualTo("round-robin");
            JsonNode paths = s.get("paths");
            System.out.printf("[perf failover] %d I/Os held on frozen path 0 before its close; progress:%n%s"
                + "paths: %s%n", stuck, err, paths);
            assertThat(paths).hasSize(2);
            assertThat(paths.get(0).get("completed").asLong()).as("path 0 carried I/O before: %s", paths)
                .isPositive();
            assertThat(paths.get(0).get("failed_over").asLong()).as("I/O moved off the closed path: %s", paths)
                .isGreaterThanOrEqualTo(stuck);
            assertThat(paths.get(0).get("in_flight").asLong()).isZero();
            assertThat(paths.get(0).get("state").asText()).isEqualTo("RECONNECTING");
            assertThat(paths.get(1).get("completed").asLong()).isGreaterThan(paths.get(0).get("completed").asLong());
            assertThat(paths.get(1).get("failed").asLong()).isZero();
            assertThat(paths.get(1).get("submitted").asLong()).isEqualTo(paths.get(1).get("completed").asLong());
        }
    }

    /** The first progress line perf prints after {@code from} characters of stderr (within 15 s). */
    private static Matcher awaitProgress(StringWriter err, int from, CompletableFuture<Integer> run)
        throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
        while (System.nanoTime() < deadline) {
            String text = err.toString();
            Matcher m = IN_FLIGHT.matcher(text);
            if (from <= text.length() && m.find(from)) {
                return m;
            }
            if (run.isDone()) {
                throw new AssertionError("perf ended before the expected progress line: " + text);
            }
            Thread.sleep(20);
        }
        throw new AssertionError("no progress line within 15 s: " + err);
    }
}
