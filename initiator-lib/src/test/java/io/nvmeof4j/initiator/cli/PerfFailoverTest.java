package io.nvmeof4j.initiator.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.nvmeof4j.initiator.FreezableProxy;
import io.nvmeof4j.protocol.spi.TransportAddress;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code nvmeof perf --verify} over two paths (two TCP proxies on 127.0.0.1 in front of our target) while one
 * path's port closes mid-run: the run ends with no I/O error and no mismatch, the closed path's in-flight I/O moved
 * to the other path, and the per-path summary says so. Bounded: a 4-second run.
 */
class PerfFailoverTest {
    @TempDir
    Path dir;

    @Test
    void shouldVerifyEveryWriteWhileOnePathGoesAway() throws Exception {
        try (CliTarget target = new CliTarget(dir);
             FreezableProxy p0 = new FreezableProxy(TransportAddress.tcp("127.0.0.1", target.ioPort));
             FreezableProxy p1 = new FreezableProxy(TransportAddress.tcp("127.0.0.1", target.ioPort))) {
            String ports = p0.address().port() + "," + p1.address().port();
            CompletableFuture<Cli.Outcome> run = CompletableFuture.supplyAsync(() -> Cli.run("perf", "-t", "tcp",
                "-a", "127.0.0.1,127.0.0.1", "-s", ports, "-q", CliTarget.HOST_A, "-n", CliTarget.NQN_A,
                "--namespace-id", "2", "--iopolicy", "round-robin", "--workload", "randwrite", "--verify",
                "--io-size", "4K", "--queue-depth", "16", "--time", "4", "--json"));
            Thread.sleep(2000);
            p0.close();
            Cli.Outcome r = run.get(60, TimeUnit.SECONDS);
            assertThat(r.status()).as(r.toString()).isZero();
            JsonNode s = new ObjectMapper().readTree(r.out());
            assertThat(s.get("errors").asLong()).isZero();
            assertThat(s.get("mismatches").asLong()).isZero();
            assertThat(s.get("verified").asLong()).as(r.out()).isPositive();
            assertThat(s.get("iopolicy").asText()).isEqualTo("round-robin");
            JsonNode paths = s.get("paths");
            assertThat(paths).hasSize(2);
            assertThat(paths.get(0).get("failed_over").asLong()).as("I/O moved off the closed path: %s", paths)
                .isPositive();
            assertThat(paths.get(0).get("state").asText()).isEqualTo("RECONNECTING");
            assertThat(paths.get(1).get("completed").asLong()).isGreaterThan(paths.get(0).get("completed").asLong());
            assertThat(paths.get(1).get("failed").asLong()).isZero();
        }
    }
}
