package io.nvmeof4j.it.vm;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The Linux kernel NVMe/RDMA host (nvme-rdma, nvme-cli, fio) against our daemon over Soft-RoCE, both inside the QEMU
 * guest (RDMA needs both ends on the guest's rxe0 at 10.0.2.15): {@code nvme discover -t rdma}, {@code nvme connect
 * -t rdma} with 1 I/O queue and the full fio matrix (write + verify=crc32c and read back at 4 KiB in-capsule, 128 KiB
 * and 1 MiB by keyed SGLs, QD 1 and QD 32), {@code blkdiscard}, flush, disconnect, then a reconnect with 2 I/O queues
 * (dd write/read/compare) and disconnect; the daemon stops on SIGTERM with a clean log. Last, a second daemon
 * started with one NVMe/TCP port only gets an RDMA listener through the management API (its running reactors get
 * their RDMA poll groups then): the kernel host connects to it over RDMA, fio writes and verifies, disconnects, and
 * the listener is removed through the API again.
 *
 * <p>Checks run in {@code integration-tests/vm/guest/kernel-host-vs-our-rdma-target.sh} (which starts our daemon in
 * the guest and drives {@code kernel-host-vs-target.sh} with {@code TRTYPE=rdma}); this class asserts on its
 * PASS/FAIL lines. {@code NVMEOF4J_SKIP_VM_TESTS=1} skips it. Logs stay in
 * {@code integration-tests/target/vm-rdma-host-it-<time>/}.
 */
class LinuxKernelHostRdmaIT {
    private static final Duration BUILD_TIMEOUT = Duration.ofMinutes(10);
    private static final Duration GUEST_TIMEOUT = Duration.ofSeconds(Long.getLong("nvmeof4j.it.guestSeconds", 600));
    private static final List<String> EXPECTED = List.of(
        "PASS rxe-up", "PASS ours-target-start", "PASS discover",
        "PASS connect-q1-digest-off", "PASS id-ctrl-q1-digest-off", "PASS id-ns-q1-digest-off",
        "PASS fio-verify-q1-digest-off-bs4k-qd1", "PASS fio-verify-q1-digest-off-bs4k-qd32",
        "PASS fio-verify-q1-digest-off-bs128k-qd1", "PASS fio-verify-q1-digest-off-bs128k-qd32",
        "PASS fio-verify-q1-digest-off-bs1m-qd1", "PASS fio-verify-q1-digest-off-bs1m-qd32",
        "PASS discard-zeroes-q1-digest-off", "PASS flush-q1-digest-off", "PASS disconnect-q1-digest-off",
        "PASS nvm-extras-q1-digest-off-identify", "PASS nvm-extras-q1-digest-off-compare-equal",
        "PASS nvm-extras-q1-digest-off-compare-differs", "PASS nvm-extras-q1-digest-off-copy",
        "PASS nvm-extras-q1-digest-off-copy-above-mcl", "PASS nvm-extras-q1-digest-off-verify",
        "PASS nvm-extras-q1-digest-off-verify-beyond",
        "PASS connect-q2-digest-off", "PASS disconnect-q2-digest-off",
        // Namespace 3: a loop device with 4096-byte sectors, O_DIRECT; 4 KiB writes arrive in-capsule.
        "PASS loop-4k-sectors", "PASS connect-fio-namespaces",
        "PASS fio-verify-ns3-bs4k-qd1", "PASS fio-verify-ns3-bs4k-qd32", "PASS discard-zeroes-ns3",
        "PASS disconnect-fio-namespaces",
        "PASS ours-target-stop", "PASS ours-log-clean",
        // A daemon started with NVMe/TCP only: an RDMA listener added live through the management API.
        "PASS live-tcp-only-start", "PASS live-rdma-listener-added", "PASS live-rdma-connect",
        "PASS live-rdma-fio-verify-bs4k-qd16", "PASS live-rdma-fio-verify-bs128k-qd4", "PASS live-rdma-disconnect",
        "PASS live-rdma-listener-removed", "PASS live-daemon-stop", "PASS live-daemon-log-clean");

    private static Path repo;
    private static Path vm;

    @BeforeAll
    static void prepareGuest() throws Exception {
        repo = VmHarness.prepareGuest();
        vm = repo.resolve("integration-tests/vm");
    }

    @Test
    void theLinuxRdmaHostShouldWorkAgainstOurTarget() throws Exception {
        Path work = VmHarness.workDir("vm-rdma-host-it-");
        Path results = work.resolve("results");
        // The launcher builds the tree when its output is stale: let it do so here, never inside the guest.
        Path launcher = repo.resolve("bin/nvmeof-target");
        VmHarness.Result version = VmHarness.run(List.of(launcher.toString(), "--version"), Map.of(), BUILD_TIMEOUT,
            "[nvmeof-target] ", work.resolve("launcher.log"));
        assertThat(version.exitCode()).as("bin/nvmeof-target --version on the host; output:\n%s", version.tail(20))
            .isZero();

        VmHarness.Result guest = VmHarness.runGuest("LinuxKernelHostRdmaIT", List.of(vm.resolve("run-guest.sh")
                .toString(), "--timeout", Long.toString(GUEST_TIMEOUT.toSeconds()), "--results", results.toString(),
                vm.resolve("guest/kernel-host-vs-our-rdma-target.sh").toString()),
            GUEST_TIMEOUT.plusSeconds(90), work.resolve("guest.log"));

        List<String> failures = guest.lines().stream().filter(l -> l.startsWith("FAIL ")).toList();
        assertThat(guest.timedOut()).as("run-guest.sh hung past its own timeout").isFalse();
        assertThat(failures).as("FAIL lines from the guest; tail:\n%s", guest.tail(60)).isEmpty();
        assertThat(guest.lines()).as("guest output (exit %d), tail:\n%s", guest.exitCode(), guest.tail(60))
            .containsAll(EXPECTED);
        assertThat(guest.exitCode()).as("guest script exit code; tail:\n%s", guest.tail(40)).isZero();
        String daemonLog = Files.readString(results.resolve("ours-daemon.log"));
        assertThat(daemonLog).as("our daemon's log").contains("NVMe/RDMA listening on rdma://10.0.2.15:4420")
            .contains("registered once");
        assertThat(Files.readString(results.resolve("ours-live-daemon.log"))).as("the TCP-only daemon's log")
            .contains("NVMe-oF/RDMA served from now on")
            .contains("NVMe/RDMA listening on rdma://10.0.2.15:4421");
    }
}
