package io.nvmeof4j.it.vm;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The Linux kernel NVMe/TCP host (nvme-cli, fio, in a QEMU guest running Debian's stock kernel) against our
 * daemon running on this machine: discovery, connects with 1 and 4 I/O queues with and without header+data
 * digests, Identify values, fio write+verify at 4 KiB / 128 KiB / 1 MiB and QD 1 / 32, discard, flush,
 * disconnect; then a pattern is written, the daemon is stopped with SIGTERM and restarted on the same
 * configuration, and the pattern must still be on the file namespace.
 *
 * <p>The guest reaches the daemon's 127.0.0.1 ports at 10.0.2.2 (QEMU user-mode networking). Checks run in
 * {@code integration-tests/vm/guest/kernel-host-vs-target.sh}; this class asserts on its PASS/FAIL lines.
 * Set {@code NVMEOF4J_SKIP_VM_TESTS=1} to skip (it needs qemu and about 5 minutes of software emulation);
 * {@code -Dnvmeof4j.it.daemon=PATH} runs another launcher than {@code bin/nvmeof-target} (same command line).
 */
class LinuxKernelHostIT {
    private static final String SUBNQN = "nqn.2014-08.io.nvmeof4j:vm-it";
    private static final String MODEL = "nvmeof4j";
    private static final String SERIAL = "nvmeof4jvmit0001";
    private static final long NS_BYTES = 64L << 20;
    private static final Duration DAEMON_START_TIMEOUT =
        Duration.ofSeconds(Long.getLong("nvmeof4j.it.daemonStartSeconds", 600));
    private static final Duration GUEST_TIMEOUT = Duration.ofSeconds(Long.getLong("nvmeof4j.it.guestSeconds", 660));

    private static Path repo;
    private static Path vm;

    @BeforeAll
    static void prepareGuest() throws Exception {
        repo = VmHarness.prepareGuest();
        vm = repo.resolve("integration-tests/vm");
    }

    @Test
    void shouldPassTheKernelHostChecksAndKeepDataAcrossADaemonRestart() throws Exception {
        Path launcher = Path.of(System.getProperty("nvmeof4j.it.daemon", repo.resolve("bin/nvmeof-target").toString()));
        assertThat(launcher).as("the daemon launcher").isExecutable();
        Path work = VmHarness.workDir("vm-it-");
        int ioPort = VmHarness.freePort();
        int discoveryPort = VmHarness.freePort();
        while (discoveryPort == ioPort) {
            discoveryPort = VmHarness.freePort();
        }
        String hostId = UUID.randomUUID().toString();
        String hostNqn = "nqn.2014-08.org.nvmexpress:uuid:" + hostId;
        // Namespaces 3 and 4: loop devices (block devices, on this host where the daemon runs) with 4096- and
        // 512-byte sectors; the namespaces take their block size from the device.
        List<String> loops = new ArrayList<>();
        Path config = work.resolve("nvmeof-target.json");
        try {
            loops.add(attachLoop(work.resolve("loop4k.img"), 4096));
            loops.add(attachLoop(work.resolve("loop512.img"), 512));
            Files.writeString(config, config(ioPort, discoveryPort, hostNqn, work.resolve("ns1.img"), loops));
            runAgainstDaemon(launcher, work, config, ioPort, discoveryPort, hostId, hostNqn);
        } finally {
            for (String loop : loops) {
                VmHarness.run(List.of("losetup", "-d", loop), Map.of(), Duration.ofSeconds(30), "[losetup] ",
                    work.resolve("losetup.log"));
            }
        }
    }

    /** Attaches a new sparse 64 MiB image as a loop device with {@code sectorSize}-byte sectors; returns /dev/loopN. */
    private static String attachLoop(Path image, int sectorSize) throws Exception {
        try (java.io.RandomAccessFile f = new java.io.RandomAccessFile(image.toFile(), "rw")) {
            f.setLength(NS_BYTES);
        }
        VmHarness.Result r = VmHarness.run(List.of("losetup", "--find", "--show", "--sector-size",
            Integer.toString(sectorSize), image.toString()), Map.of(), Duration.ofSeconds(30), "[losetup] ",
            image.resolveSibling("losetup.log"));
        assertThat(r.exitCode()).as("losetup of %s: %s", image, r.tail(5)).isZero();
        String dev = r.lines().stream().filter(l -> l.startsWith("/dev/loop")).findFirst().orElseThrow(
            () -> new AssertionError("losetup printed no device: " + r.tail(5)));
        return dev.trim();
    }

    private void runAgainstDaemon(Path launcher, Path work, Path config, int ioPort, int discoveryPort, String hostId,
                                  String hostNqn) throws Exception {

        Map<String, String> env = new LinkedHashMap<>();
        env.put("SUBNQN", SUBNQN);
        env.put("TARGET_ADDR", "10.0.2.2");
        env.put("TARGET_PORT", Integer.toString(ioPort));
        env.put("DISCOVERY_PORT", Integer.toString(discoveryPort));
        env.put("HOSTNQN", hostNqn);
        env.put("HOSTID", hostId);
        env.put("EXPECT_MODEL", MODEL);
        env.put("EXPECT_SERIAL", SERIAL);
        // nsid 1: 64 MiB file with 4 KiB blocks; nsid 2: 64 MiB of RAM with 512-byte blocks
        env.put("EXPECT_NAMESPACES", "1:" + (NS_BYTES >> 12) + ":12 2:" + (NS_BYTES >> 9) + ":9 3:" + (NS_BYTES >> 12)
            + ":12 4:" + (NS_BYTES >> 9) + ":9");
        env.put("FIO_NSIDS", "3 4");
        // nvme compare / copy / verify against our target, data checked (nvmet serves none of them).
        env.put("EXPECT_NVM_EXTRAS", "1");
        env.put("NSID", "1");
        env.put("PATTERN_SEED", UUID.randomUUID().toString());

        VmHarness.Daemon daemon = VmHarness.Daemon.start(repo, launcher, config, work.resolve("daemon-1.log"));
        try {
            assertThat(daemon.waitForPorts(DAEMON_START_TIMEOUT, ioPort, discoveryPort))
                .as("daemon listening on 127.0.0.1:%d and :%d; log:\n%s", ioPort, discoveryPort, daemon.logTail(40))
                .isTrue();

            env.put("PHASE", "interop fio-namespaces write-pattern");
            VmHarness.Result first = runGuest(env, work, "guest-1.log");
            assertGuestPassed(first, daemon, List.of(
                "PASS discover",
                "PASS connect-q1-digest-off", "PASS connect-q4-digest-on",
                "PASS id-ctrl-q1-digest-off", "PASS id-ns-q1-digest-off", "PASS io-command-sets-q1-digest-off",
                "PASS list-subsys-q1-digest-off",
                "PASS fio-verify-q1-digest-off-bs4k-qd1", "PASS fio-verify-q1-digest-off-bs4k-qd32",
                "PASS fio-verify-q1-digest-off-bs128k-qd1", "PASS fio-verify-q1-digest-off-bs128k-qd32",
                "PASS fio-verify-q1-digest-off-bs1m-qd1", "PASS fio-verify-q1-digest-off-bs1m-qd32",
                "PASS fio-verify-q4-digest-on-bs4k-qd32", "PASS fio-verify-q4-digest-on-bs1m-qd32",
                "PASS discard-zeroes-q1-digest-off", "PASS flush-q1-digest-off", "PASS disconnect-q1-digest-off",
                "PASS nvm-extras-q1-digest-off-identify", "PASS nvm-extras-q1-digest-off-compare-equal",
                "PASS nvm-extras-q1-digest-off-compare-differs", "PASS nvm-extras-q1-digest-off-copy",
                "PASS nvm-extras-q1-digest-off-copy-above-mcl", "PASS nvm-extras-q1-digest-off-verify",
                "PASS nvm-extras-q1-digest-off-verify-beyond",
                "PASS disconnect-q4-digest-on",
                "PASS fio-verify-ns3-bs4k-qd32", "PASS fio-verify-ns3-bs128k-qd8", "PASS discard-zeroes-ns3",
                "PASS fio-verify-ns4-bs4k-qd32", "PASS fio-verify-ns4-bs128k-qd8", "PASS discard-zeroes-ns4",
                "PASS disconnect-fio-namespaces", "PASS write-pattern"));

            int exit = daemon.stop(Duration.ofSeconds(60));
            assertThat(exit).as("daemon exit code after SIGTERM; log:\n%s", daemon.logTail(40)).isIn(0, 143);
        } finally {
            daemon.close();
        }

        VmHarness.Daemon restarted = VmHarness.Daemon.start(repo, launcher, config, work.resolve("daemon-2.log"));
        try {
            assertThat(restarted.waitForPorts(DAEMON_START_TIMEOUT, ioPort, discoveryPort))
                .as("restarted daemon listening; log:\n%s", restarted.logTail(40)).isTrue();
            env.put("PHASE", "check-pattern");
            VmHarness.Result second = runGuest(env, work, "guest-2.log");
            assertGuestPassed(second, restarted, List.of("PASS connect-check-pattern", "PASS check-pattern",
                "PASS disconnect-check-pattern"));
            int exit = restarted.stop(Duration.ofSeconds(60));
            assertThat(exit).as("restarted daemon exit code after SIGTERM; log:\n%s", restarted.logTail(40))
                .isIn(0, 143);
        } finally {
            restarted.close();
        }
    }

    private static VmHarness.Result runGuest(Map<String, String> env, Path work, String logName) throws Exception {
        List<String> cmd = new ArrayList<>(List.of(vm.resolve("run-guest.sh").toString(),
            "--timeout", Long.toString(GUEST_TIMEOUT.toSeconds()), "--results", work.resolve("results").toString()));
        env.forEach((k, v) -> {
            cmd.add("--env");
            cmd.add(k + "=" + v);
        });
        cmd.add(vm.resolve("guest/kernel-host-vs-target.sh").toString());
        // run-guest.sh kills qemu itself at --timeout; this outer limit only catches a stuck wrapper.
        return VmHarness.run(cmd, Map.of(), GUEST_TIMEOUT.plusSeconds(90), "[guest] ", work.resolve(logName));
    }

    private static void assertGuestPassed(VmHarness.Result guest, VmHarness.Daemon daemon, List<String> expected) {
        List<String> failures = guest.lines().stream().filter(l -> l.startsWith("FAIL ")).toList();
        assertThat(guest.timedOut()).as("run-guest.sh hung past its own timeout").isFalse();
        assertThat(failures).as("FAIL lines from the guest; daemon log tail:\n%s", daemon.logTail(40)).isEmpty();
        assertThat(guest.lines()).as("guest output (exit %d), tail:\n%s", guest.exitCode(), guest.tail(40))
            .containsAll(expected);
        assertThat(guest.exitCode()).as("guest script exit code; tail:\n%s", guest.tail(40)).isZero();
    }

    /**
     * nvmetcli save-file shape: one I/O port, one discovery-only port, a file, a RAM and two block-device
     * namespaces (the loop devices, without block_size: the device's).
     */
    private static String config(int ioPort, int discoveryPort, String hostNqn, Path nsFile, List<String> loops) {
        return """
            {
              "hosts": [ {"nqn": "%s"} ],
              "ports": [
                {"portid": 1,
                 "addr": {"trtype": "tcp", "adrfam": "ipv4", "traddr": "127.0.0.1", "trsvcid": "%d", "treq": "not specified"},
                 "param": {"inline_data_size": "16384"}, "referrals": [], "subsystems": ["%s"]},
                {"portid": 2,
                 "addr": {"trtype": "tcp", "adrfam": "ipv4", "traddr": "127.0.0.1", "trsvcid": "%d"},
                 "referrals": [], "subsystems": ["nqn.2014-08.org.nvmexpress.discovery"]}
              ],
              "subsystems": [
                {"nqn": "%s",
                 "attr": {"allow_any_host": "1", "serial": "%s", "model": "%s", "version": "1.3"},
                 "allowed_hosts": [],
                 "namespaces": [
                   {"nsid": 1, "enable": 1,
                    "device": {"path": "%s", "uuid": "%s", "size": "64M", "block_size": 4096}},
                   {"nsid": 2, "enable": 1, "device": {"backend": "ram", "size": "64M", "block_size": 512}},
                   {"nsid": 3, "enable": 1, "device": {"path": "%s"}},
                   {"nsid": 4, "enable": 1, "device": {"path": "%s"}}
                 ]}
              ]
            }
            """.formatted(hostNqn, ioPort, SUBNQN, discoveryPort, SUBNQN, SERIAL, MODEL, nsFile,
            UUID.nameUUIDFromBytes(nsFile.toString().getBytes(java.nio.charset.StandardCharsets.UTF_8)), loops.get(0),
            loops.get(1));
    }
}
