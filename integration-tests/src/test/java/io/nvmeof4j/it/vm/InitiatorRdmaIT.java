package io.nvmeof4j.it.vm;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Our initiator over NVMe-oF/RDMA (Soft-RoCE in the QEMU guest) against the Linux kernel target nvmet-rdma and
 * against our own daemon: {@link KernelTargetProbe} (discover, connect with 1 and 4 I/O queues, write-then-verify at
 * 4 KiB / 128 KiB / 1 MiB, FUA, deallocate, flush, disconnect, a callback-API load) and {@code bin/nvmeof perf -t rdma}
 * for 5 s against each, and {@code bin/nvmeof discover/identify/write/read -t rdma} against the kernel target.
 * Placement as in {@link InitiatorVsKernelTargetIT}: everything inside the guest, since RDMA
 * needs both ends on its rxe0.
 *
 * <p>Checks run in {@code integration-tests/vm/guest/initiator-rdma.sh}; this class asserts on its PASS/FAIL lines
 * (the probe's names prefixed {@code kernel-} and {@code ours-}) and on both perf JSON summaries. Logs stay in
 * {@code integration-tests/target/vm-rdma-initiator-it-<time>/}.
 */
class InitiatorRdmaIT {
    private static final Duration BUILD_TIMEOUT = Duration.ofMinutes(10);
    private static final Duration GUEST_TIMEOUT = Duration.ofSeconds(Long.getLong("nvmeof4j.it.guestSeconds", 600));
    private static final List<String> PROBE_CHECKS = List.of(
        "discover", "connect-q1", "namespace-q1", "write-verify-q1-4k", "write-verify-q1-128k",
        "write-verify-q1-1m", "write-fua-q1", "write-shared-q1", "deallocate-zeroes-q1", "flush-q1",
        "disconnect-q1", "connect-q4", "namespace-q4", "write-verify-q4-4k", "write-verify-q4-128k",
        "write-verify-q4-1m", "write-fua-q4", "read-shared-q4", "write-verify-threads-q4", "deallocate-zeroes-q4",
        "flush-q4", "disconnect-q4", "perf-lib-4k-randread-qd16", "probe", "perf-cli");

    private static Path repo;
    private static Path vm;

    @BeforeAll
    static void prepareGuest() throws Exception {
        repo = VmHarness.prepareGuest();
        vm = repo.resolve("integration-tests/vm");
    }

    @Test
    void ourInitiatorShouldWorkOverRdmaAgainstTheKernelTargetAndOurs() throws Exception {
        Path work = VmHarness.workDir("vm-rdma-initiator-it-");
        Path results = work.resolve("results");
        // Both launchers build the tree when stale: let them do it here on the host, never inside the guest.
        for (String launcher : List.of("bin/nvmeof", "bin/nvmeof-target")) {
            List<String> cmd = launcher.endsWith("target") ? List.of(repo.resolve(launcher).toString(), "--version")
                : List.of(repo.resolve(launcher).toString(), "help", "perf");
            VmHarness.Result r = VmHarness.run(cmd, Map.of(), BUILD_TIMEOUT, "[" + launcher + "] ",
                work.resolve(launcher.replace('/', '-') + ".log"));
            assertThat(r.exitCode()).as("%s on the host; output:\n%s", cmd, r.tail(20)).isZero();
        }

        Map<String, String> env = new LinkedHashMap<>();
        env.put("PROBE_CP", VmHarness.testClasspath());
        env.put("JAVA_BIN", Path.of(System.getProperty("java.home"), "bin", "java").toString());
        env.put("PROBE_SEED", Long.toString(ThreadLocalRandom.current().nextLong(1, Long.MAX_VALUE)));
        env.put("PERF_SECONDS", "5");
        env.put("PERF_QD", "16");
        List<String> cmd = new ArrayList<>(List.of(vm.resolve("run-guest.sh").toString(),
            "--timeout", Long.toString(GUEST_TIMEOUT.toSeconds()), "--results", results.toString()));
        env.forEach((k, v) -> {
            cmd.add("--env");
            cmd.add(k + "=" + v);
        });
        cmd.add(vm.resolve("guest/initiator-rdma.sh").toString());
        VmHarness.Result guest = VmHarness.runGuest("InitiatorRdmaIT", cmd, GUEST_TIMEOUT.plusSeconds(90),
            work.resolve("guest.log"));

        List<String> expected = new ArrayList<>(List.of("PASS rxe-up", "PASS kernel-target-setup",
            "PASS ours-target-start", "PASS ours-target-stop", "PASS ours-log-clean", "PASS kernel-cli-discover",
            "PASS kernel-cli-identify", "PASS kernel-cli-write-read"));
        for (String label : List.of("kernel", "ours")) {
            for (String check : PROBE_CHECKS) {
                expected.add("PASS " + label + "-" + check);
            }
        }
        // Only our target offers them (nvmet has no fused commands, Copy or Verify): the fused pair over RDMA.
        expected.addAll(List.of("PASS ours-compare-and-write-q1", "PASS ours-copy-q1", "PASS ours-verify-q1"));
        List<String> failures = guest.lines().stream().filter(l -> l.startsWith("FAIL ")).toList();
        assertThat(guest.timedOut()).as("run-guest.sh hung past its own timeout").isFalse();
        assertThat(failures).as("FAIL lines from the guest; tail:\n%s", guest.tail(60)).isEmpty();
        assertThat(guest.lines()).as("guest output (exit %d), tail:\n%s", guest.exitCode(), guest.tail(60))
            .containsAll(expected);
        assertThat(guest.exitCode()).as("guest script exit code; tail:\n%s", guest.tail(40)).isZero();
        for (String label : List.of("kernel", "ours")) {
            JsonNode summary = new ObjectMapper().readTree(results.resolve("perf-" + label + ".json").toFile());
            JsonNode iops = summary.findValue("iops");
            assertThat(iops).as("iops in %s", summary).isNotNull();
            assertThat(iops.asDouble()).as("%s perf IOPS in %s", label, summary).isPositive();
            JsonNode errors = summary.get("errors");
            if (errors != null) {
                assertThat(errors.asLong()).as("I/O errors in %s", summary).isZero();
            }
        }
    }
}
