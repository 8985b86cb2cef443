package io.nvmeof4j.it.vm;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Our initiator (initiator-lib and {@code bin/nvmeof perf}) against the Linux kernel NVMe/TCP target (nvmet-tcp,
 * configured through configfs) in the QEMU guest: discovery, connect with 1 and with 4 I/O queues, write-then-verify
 * of random data at 4 KiB, 128 KiB and 1 MiB at several offsets, a FUA write, deallocate then read zeros, flush,
 * disconnect, {@code perf} for 5 s (non-zero IOPS, a JSON summary with ordered percentiles), and multipath: {@code
 * perf --verify} over two nvmet ports of the subsystem while one port's ANA group goes inaccessible and the port is
 * then removed (no I/O error, every write read back intact, the I/O moved to the other path).
 *
 * <p><b>Where the initiator runs: inside the guest</b>, beside the kernel target, connecting to 127.0.0.1:4420
 * there. The guest sees the host's JDK and this build's classes through its 9p root, so
 * {@link KernelTargetProbe} (a main on this test classpath) and {@code bin/nvmeof} run there unchanged. Chosen over a
 * host-side initiator reaching the guest through {@code run-guest.sh --hostfwd} because nothing has to be coordinated
 * across the VM boundary (no readiness/"done" hand-shake, no ports picked on the host and re-mapped in discovery
 * entries, whose TRADDR/TRSVCID name the guest's own address), the data path does not go through QEMU's user-mode
 * TCP proxy (slirp), and it is the same placement as the benchmark ({@code bench-initiator.sh}), so the test proves
 * the benchmark's set-up too. The cost, a JVM under software emulation, is small: the whole guest run takes about
 * 30 s. The guest's JVMs run C1 only: with tiered compilation they crashed now and then under QEMU's emulation (see
 * the guest script).
 *
 * <p>Checks run in {@code integration-tests/vm/guest/initiator-vs-kernel-target.sh} (PASS/FAIL lines); this class
 * asserts on them and on the perf JSON the guest leaves in the results folder. Set {@code NVMEOF4J_SKIP_VM_TESTS=1}
 * to skip; {@code -Dnvmeof4j.it.cli=PATH} runs another launcher than {@code bin/nvmeof}. Logs stay in {@code integration-tests/target/vm-initiator-it-<time>/}.
 */
class InitiatorVsKernelTargetIT {
    private static final String SUBNQN = "nqn.2014-08.io.nvmeof4j:kernel-initiator-it";
    private static final Duration CLI_BUILD_TIMEOUT = Duration.ofMinutes(10);
    private static final Duration GUEST_TIMEOUT =
        Duration.ofSeconds(Long.getLong("nvmeof4j.it.guestSeconds", 420));
    private static final List<String> EXPECTED = List.of(
        "PASS kernel-target-setup", "PASS discover",
        "PASS connect-q1", "PASS namespace-q1", "PASS write-verify-q1-4k", "PASS write-verify-q1-128k",
        "PASS write-verify-q1-1m", "PASS write-fua-q1", "PASS write-shared-q1", "PASS deallocate-zeroes-q1",
        "PASS flush-q1", "PASS disconnect-q1",
        "PASS connect-q4", "PASS namespace-q4", "PASS write-verify-q4-4k", "PASS write-verify-q4-128k",
        "PASS write-verify-q4-1m", "PASS write-fua-q4", "PASS read-shared-q4", "PASS write-verify-threads-q4",
        "PASS deallocate-zeroes-q4", "PASS flush-q4", "PASS disconnect-q4",
        "PASS perf-lib-4k-randread-qd16", "PASS probe", "PASS perf-cli", "PASS perf-multipath");

    private static Path repo;
    private static Path vm;

    @BeforeAll
    static void prepareGuest() throws Exception {
        repo = VmHarness.prepareGuest();
        vm = repo.resolve("integration-tests/vm");
    }

    @Test
    void ourInitiatorShouldWorkAgainstTheLinuxKernelTarget() throws Exception {
        Path work = VmHarness.workDir("vm-initiator-it-");
        Path results = work.resolve("results");

        Path cli = Path.of(System.getProperty("nvmeof4j.it.cli", repo.resolve("bin/nvmeof").toString()));
        assertThat(cli).as("the nvmeof CLI launcher (bin/nvmeof)").isExecutable();
        // The launcher builds the tree when its build output is missing or stale: let it do that here, on the host,
        // and never inside the guest (whose root is a read-only view with a RAM overlay).
        VmHarness.Result help = VmHarness.run(List.of(cli.toString(), "help", "perf"), Map.of(), CLI_BUILD_TIMEOUT,
            "[nvmeof] ", work.resolve("cli-help.log"));
        assertThat(help.exitCode()).as("bin/nvmeof help perf on the host; output:\n%s", help.tail(20)).isZero();

        String classpath = VmHarness.testClasspath();
        Map<String, String> env = new LinkedHashMap<>();
        env.put("PROBE_CP", classpath);
        env.put("JAVA_BIN", Path.of(System.getProperty("java.home"), "bin", "java").toString());
        env.put("SUBNQN", SUBNQN);
        env.put("PROBE_SEED", Long.toString(ThreadLocalRandom.current().nextLong(1, Long.MAX_VALUE)));
        env.put("PERF_SECONDS", "5");
        env.put("PERF_QD", "16");
        env.put("NVMEOF_CLI", cli.toAbsolutePath().toString());

        long t0 = System.nanoTime();
        VmHarness.Result guest = runGuest(env, results, work.resolve("guest.log"));
        System.out.printf("[guest] finished in %d s%n", (System.nanoTime() - t0) / 1_000_000_000L);

        List<String> failures = guest.lines().stream().filter(l -> l.startsWith("FAIL ")).toList();
        assertThat(guest.timedOut()).as("run-guest.sh hung past its own timeout").isFalse();
        assertThat(failures).as("FAIL lines from the guest; tail:\n%s", guest.tail(60)).isEmpty();
        assertThat(guest.lines()).as("guest output (exit %d), tail:\n%s", guest.exitCode(), guest.tail(60))
            .containsAll(EXPECTED);
        assertThat(guest.exitCode()).as("guest script exit code; tail:\n%s", guest.tail(40)).isZero();

        Path perfJson = results.resolve("perf-cli.json");
        assertThat(perfJson).as("perf summary saved by the guest").isRegularFile();
        JsonNode summary = new ObjectMapper().readTree(perfJson.toFile());
        JsonNode iops = find(summary, "iops");
        assertThat(iops).as("an \"iops\" number in %s", summary).isNotNull();
        assertThat(iops.isNumber() && iops.asDouble() > 0).as("IOPS > 0 in %s", summary).isTrue();
        JsonNode p50 = findContaining(summary, "p50");
        JsonNode p99 = findContaining(summary, "p99");
        assertThat(p50).as("a p50 latency in %s", summary).isNotNull();
        assertThat(p99).as("a p99 latency in %s", summary).isNotNull();
        assertThat(p50.asDouble()).as("p50 in %s", summary).isPositive().isLessThanOrEqualTo(p99.asDouble());
        JsonNode errors = summary.get("errors");
        if (errors != null) {
            assertThat(errors.asLong()).as("I/O errors in %s", summary).isZero();
        }
    }

    private static VmHarness.Result runGuest(Map<String, String> env, Path results, Path log) throws Exception {
        List<String> cmd = new ArrayList<>(List.of(vm.resolve("run-guest.sh").toString(),
            "--timeout", Long.toString(GUEST_TIMEOUT.toSeconds()), "--results", results.toString()));
        env.forEach((k, v) -> {
            cmd.add("--env");
            cmd.add(k + "=" + v);
        });
        cmd.add(vm.resolve("guest/initiator-vs-kernel-target.sh").toString());
        // run-guest.sh kills qemu itself at --timeout; this outer limit only catches a stuck wrapper.
        return VmHarness.runGuest("InitiatorVsKernelTargetIT", cmd, GUEST_TIMEOUT.plusSeconds(90), log);
    }

    /** The first field named {@code name} (case-insensitive), depth first. */
    private static JsonNode find(JsonNode node, String name) {
        for (Iterator<Map.Entry<String, JsonNode>> it = node.fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            if (e.getKey().equalsIgnoreCase(name) && e.getValue().isNumber()) {
                return e.getValue();
            }
            JsonNode inner = find(e.getValue(), name);
            if (inner != null) {
                return inner;
            }
        }
        return null;
    }

    /** The first numeric field whose name contains {@code part} and does not continue with more digits (p99, not p99.9). */
    private static JsonNode findContaining(JsonNode node, String part) {
        for (Iterator<Map.Entry<String, JsonNode>> it = node.fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            String k = e.getKey().toLowerCase();
            int at = k.indexOf(part);
            if (at >= 0 && e.getValue().isNumber()) {
                int after = at + part.length();
                if (after >= k.length() || !(Character.isDigit(k.charAt(after)) || k.charAt(after) == '.'
                    || k.charAt(after) == '_' && after + 1 < k.length() && Character.isDigit(k.charAt(after + 1)))) {
                    return e.getValue();
                }
            }
            JsonNode inner = findContaining(e.getValue(), part);
            if (inner != null) {
                return inner;
            }
        }
        return null;
    }
}
