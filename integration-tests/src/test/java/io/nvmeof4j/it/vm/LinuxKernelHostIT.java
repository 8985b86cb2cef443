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
 * <p>High availability, in the same two guest boots (guest/ha.sh): subsystem {@link #HA_NQN} is served by this
 * daemon on two ports (ANA optimized and non-optimized) and by a second daemon from the same shared file; the host
 * sees one namespace with its paths, fio verifies while a path goes inaccessible and back (management API PUT from
 * the guest), and while the second daemon is SIGKILLed (by this class, when the guest asks) and restarted.
 * Subsystem {@link #RESV_NQN}: nvme-cli reservation commands from two host NQNs; the reservation is checked again
 * after the daemon's restart.
 *
 * <p>The guest (restrict=on) reaches the daemon's 127.0.0.1 ports forwarded at 10.0.2.100 (run-guest.sh forwards
 * every {@code *_PORT} variable; TARGET_ADDR 10.0.2.2 is handed to the guest as 10.0.2.100). Checks run in
 * {@code integration-tests/vm/guest/kernel-host-vs-target.sh}; this class asserts on its PASS/FAIL lines.
 * Set {@code NVMEOF4J_SKIP_VM_TESTS=1} to skip (it needs qemu and about 5 minutes of software emulation);
 * {@code -Dnvmeof4j.it.daemon=PATH} runs another launcher than {@code bin/nvmeof-target} (same command line).
 */
class LinuxKernelHostIT {
    private static final String SUBNQN = "nqn.2014-08.io.nvmeof4j:vm-it";
    private static final String HA_NQN = "nqn.2014-08.io.nvmeof4j:vm-ha";
    private static final String RESV_NQN = "nqn.2014-08.io.nvmeof4j:vm-resv";
    /** The HA namespace's ANA group (group 1 stays the other subsystems'). */
    private static final int HA_GROUP = 2;
    private static final String MODEL = "nvmeof4j";
    private static final String SERIAL = "nvmeof4jvmit0001";
    private static final long NS_BYTES = 64L << 20;
    private static final Duration DAEMON_START_TIMEOUT =
        Duration.ofSeconds(Long.getLong("nvmeof4j.it.daemonStartSeconds", 600));
    private static final Duration GUEST_TIMEOUT = Duration.ofSeconds(Long.getLong("nvmeof4j.it.guestSeconds", 900));

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
        VmHarness.runGuestLayer("LinuxKernelHostIT", attempt -> runOnce(launcher, attempt));
    }

    /**
     * Both guest boots against fresh daemons, files and ports. The second boot checks what the first left in the
     * daemons, so a guest kernel crash in either ends this attempt at once and {@link VmHarness#runGuestLayer}
     * starts the whole test over.
     */
    private VmHarness.Result runOnce(Path launcher, int attempt) throws Exception {
        Path work = VmHarness.workDir(attempt == 1 ? "vm-it-" : "vm-it-boot" + attempt + "-");
        java.util.Set<Integer> ports = new java.util.LinkedHashSet<>();
        while (ports.size() < 5) {
            ports.add(VmHarness.freePort());
        }
        java.util.Iterator<Integer> free = ports.iterator();
        int ioPort = free.next();
        int discoveryPort = free.next();
        Ha ha = new Ha(free.next(), free.next(), free.next(), work.resolve("ha.img"), work.resolve("resv.img"));
        String hostId = UUID.randomUUID().toString();
        String hostNqn = "nqn.2014-08.org.nvmexpress:uuid:" + hostId;
        // Namespaces 3 and 4: loop devices (block devices, on this host where the daemon runs) with 4096- and
        // 512-byte sectors; the namespaces take their block size from the device.
        List<String> loops = new ArrayList<>();
        Path config = work.resolve("nvmeof-target.json");
        try {
            loops.add(attachLoop(work.resolve("loop4k.img"), 4096));
            loops.add(attachLoop(work.resolve("loop512.img"), 512));
            Files.writeString(config, config(ioPort, discoveryPort, hostNqn, work.resolve("ns1.img"), loops, ha));
            Files.createDirectories(work.resolve("daemon-b"));
            Files.writeString(ha.configB(work.resolve("daemon-b")), ha.configB());
            return runAgainstDaemon(launcher, work, config, ioPort, discoveryPort, hostId, hostNqn, ha);
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

    /** The two guest boots; returns the second's result, or the first's when the guest kernel crashed in it. */
    private VmHarness.Result runAgainstDaemon(Path launcher, Path work, Path config, int ioPort, int discoveryPort,
                                              String hostId, String hostNqn, Ha ha) throws Exception {

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
        env.put("HA_NQN", HA_NQN);
        env.put("HA_GRPID", Integer.toString(HA_GROUP));
        env.put("HA_A1_PORT", Integer.toString(ioPort));
        env.put("HA_A2_PORT", Integer.toString(ha.portA2()));
        env.put("HA_B_PORT", Integer.toString(ha.portB()));
        env.put("HA_HTTP_PORT", Integer.toString(ha.httpPort()));
        env.put("RESV_NQN", RESV_NQN);
        env.put("RESV_PORT2", Integer.toString(ha.portA2()));
        String hostId2 = UUID.randomUUID().toString();
        env.put("HOSTID2", hostId2);
        env.put("HOSTNQN2", "nqn.2014-08.org.nvmexpress:uuid:" + hostId2);

        VmHarness.Daemon daemon = VmHarness.Daemon.start(repo, launcher, config, work.resolve("daemon-1.log"));
        try {
            assertThat(daemon.waitForPorts(DAEMON_START_TIMEOUT, ioPort, discoveryPort, ha.portA2(), ha.httpPort()))
                .as("daemon listening on 127.0.0.1:%d and :%d; log:\n%s", ioPort, discoveryPort, daemon.logTail(40))
                .isTrue();
            env.put("API_TOKEN", Files.readString(config.resolveSibling("api-token")).strip());

            env.put("PHASE", "interop fio-namespaces write-pattern ha-ana ha-failover resv-setup");
            VmHarness.Result first;
            try (DaemonB b = new DaemonB(launcher, ha, work)) {
                first = runGuest(env, work, "guest-1.log");
                if (first.exitCode() == VmHarness.GUEST_KERNEL_CRASHED) {
                    return first;   // both daemons are stopped on the way out
                }
                assertThat(b.killed()).as("daemon B was SIGKILLed when the guest asked; %s", b.events()).isTrue();
            }
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
                "PASS disconnect-fio-namespaces", "PASS write-pattern",
                "PASS ha-connect-two-ports", "PASS ha-list-subsys-two-paths-ana", "PASS ha-sysfs-ana-states",
                "PASS ha-ana-inaccessible-seen-by-host", "PASS ha-ana-optimized-again", "PASS ha-ana-fio-verify-no-error",
                "PASS ha-two-daemons-one-subsystem", "PASS ha-failover-fio-verify-no-error",
                "PASS ha-failover-restarted-daemon-rejoins",
                "PASS resv-connect-two-hosts", "PASS resv-register-host1", "PASS resv-register-host2",
                "PASS resv-acquire-host1", "PASS resv-report", "PASS resv-non-holder-write-conflict",
                "PASS resv-holder-write"));

            int exit = daemon.stop(Duration.ofSeconds(60));
            assertThat(exit).as("daemon exit code after SIGTERM; log:\n%s", daemon.logTail(40)).isIn(0, 143);
        } finally {
            daemon.close();
        }

        VmHarness.Daemon restarted = VmHarness.Daemon.start(repo, launcher, config, work.resolve("daemon-2.log"));
        try {
            assertThat(restarted.waitForPorts(DAEMON_START_TIMEOUT, ioPort, discoveryPort))
                .as("restarted daemon listening; log:\n%s", restarted.logTail(40)).isTrue();
            env.put("PHASE", "check-pattern resv-check");
            VmHarness.Result second = runGuest(env, work, "guest-2.log");
            if (second.exitCode() == VmHarness.GUEST_KERNEL_CRASHED) {
                return second;
            }
            assertGuestPassed(second, restarted, List.of("PASS connect-check-pattern", "PASS check-pattern",
                "PASS disconnect-check-pattern", "PASS resv-survives-restart", "PASS resv-conflict-after-restart",
                "PASS resv-preempt-abort-host2", "PASS resv-preempted-host1-conflict", "PASS resv-write-after-preempt",
                "PASS resv-release-host2", "PASS resv-write-after-release", "PASS resv-unregister"));
            int exit = restarted.stop(Duration.ofSeconds(60));
            assertThat(exit).as("restarted daemon exit code after SIGTERM; log:\n%s", restarted.logTail(40))
                .isIn(0, 143);
            return second;
        } finally {
            restarted.close();
        }
    }

    /** The HA set-up: daemon A's second port and API, daemon B's port, the shared and the reservation files. */
    private record Ha(int portA2, int portB, int httpPort, Path sharedFile, Path resvFile) {
        Path configB(Path dir) {
            return dir.resolve("nvmeof-target-b.json");
        }

        /** Daemon B: only the HA subsystem, from the same file, with CNTLIDs of its own. */
        String configB() {
            return """
                {
                  "nvmeof4j": {"http": "off"},
                  "ports": [
                    {"portid": 1,
                     "addr": {"trtype": "tcp", "adrfam": "ipv4", "traddr": "127.0.0.1", "trsvcid": "%1$d"},
                     "ana_groups": [{"grpid": %4$d, "ana": {"state": "optimized"}}],
                     "subsystems": ["%2$s"]}
                  ],
                  "subsystems": [
                    {"nqn": "%2$s", "attr": {"allow_any_host": "1", "cntlid_min": 1000, "cntlid_max": 1999},
                     "namespaces": [
                       {"nsid": 1, "ana_grpid": %4$d, "device": {"path": "%3$s", "size": "64M", "shared": true}}
                     ]}
                  ]
                }
                """.formatted(portB, HA_NQN, sharedFile, HA_GROUP);
        }
    }

    /**
     * Daemon B for the failover check: started before the guest; when the guest creates {@code results/ha-kill-b}
     * (fio running over both daemons), it is killed with SIGKILL (the launcher and its JVM), restarted on the same
     * configuration after 3 s, and {@code ha-kill-b.done} says what happened.
     */
    private static final class DaemonB implements AutoCloseable {
        private final Path launcher;
        private final Ha ha;
        private final Path work;
        private final Thread watcher;
        private final List<String> events = java.util.Collections.synchronizedList(new ArrayList<>());
        private volatile VmHarness.Daemon current;
        private volatile boolean killed;
        private volatile boolean closing;

        DaemonB(Path launcher, Ha ha, Path work) throws Exception {
            this.launcher = launcher;
            this.ha = ha;
            this.work = work;
            current = start("daemon-b-1.log");
            watcher = new Thread(this::watch, "daemon-b-killer");
            watcher.setDaemon(true);
            watcher.start();
        }

        private VmHarness.Daemon start(String log) throws Exception {
            VmHarness.Daemon d = VmHarness.Daemon.start(repo, launcher, ha.configB(work.resolve("daemon-b")),
                work.resolve(log));
            if (!d.waitForPorts(DAEMON_START_TIMEOUT, ha.portB())) {
                String tail = d.logTail(40);
                d.close();
                throw new AssertionError("daemon B not listening on " + ha.portB() + "; log:\n" + tail);
            }
            return d;
        }

        private void watch() {
            Path marker = work.resolve("results").resolve("ha-kill-b");
            long deadline = System.nanoTime() + GUEST_TIMEOUT.toNanos();
            try {
                while (!closing && System.nanoTime() < deadline) {
                    if (Files.exists(marker)) {
                        Process p = current.process();
                        p.descendants().forEach(ProcessHandle::destroyForcibly);
                        p.destroyForcibly(); // SIGKILL
                        p.waitFor(30, java.util.concurrent.TimeUnit.SECONDS);
                        killed = true;
                        events.add("daemon B killed with SIGKILL (pid " + p.pid() + ")");
                        Thread.sleep(3000);
                        current = start("daemon-b-2.log");
                        events.add("daemon B restarted");
                        Files.writeString(marker.resolveSibling("ha-kill-b.done"), String.join("; ", events) + "\n");
                        return;
                    }
                    Thread.sleep(200);
                }
            } catch (Exception | AssertionError e) {
                events.add("failed: " + e);
            }
        }

        boolean killed() {
            return killed;
        }

        List<String> events() {
            return events;
        }

        @Override
        public void close() throws Exception {
            closing = true;
            watcher.join(DAEMON_START_TIMEOUT.toMillis() + 60_000);
            current.stop(Duration.ofSeconds(60));
            current.close();
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
    private static String config(int ioPort, int discoveryPort, String hostNqn, Path nsFile, List<String> loops,
                                 Ha ha) {
        // Daemon A's share of the HA set-up: its API for the guest (reached through a forwarded
        // port at 10.0.2.100, run-guest.sh), the HA subsystem on ports 1
        // and 3 with the shared file, the reservation subsystem on port 1.
        String haPart = """
                {"nqn": "%1$s", "attr": {"allow_any_host": "1", "cntlid_min": 1, "cntlid_max": 999},
                 "namespaces": [{"nsid": 1, "ana_grpid": %5$d, "device": {"path": "%3$s", "size": "64M", "shared": true}}]},
                {"nqn": "%2$s", "attr": {"allow_any_host": "1"},
                 "namespaces": [{"nsid": 1, "device": {"path": "%4$s", "size": "16M"}}]},
            """.formatted(HA_NQN, RESV_NQN, ha.sharedFile(), ha.resvFile(), HA_GROUP);
        String haPorts = """
                {"portid": 3,
                 "addr": {"trtype": "tcp", "adrfam": "ipv4", "traddr": "127.0.0.1", "trsvcid": "%1$d"},
                 "ana_groups": [{"grpid": %3$d, "ana": {"state": "non-optimized"}}],
                 "subsystems": ["%2$s", "%4$s"]},
            """.formatted(ha.portA2(), HA_NQN, HA_GROUP, RESV_NQN);
        return ("""
            {
              "nvmeof4j": {"http": "127.0.0.1:%d", "http_allowed_hosts": ["10.0.2.100"]},
              "hosts": [ {"nqn": "%s"} ],
              "ports": [
                {"portid": 1,
                 "addr": {"trtype": "tcp", "adrfam": "ipv4", "traddr": "127.0.0.1", "trsvcid": "%d", "treq": "not specified"},
                 "ana_groups": [{"grpid": %d, "ana": {"state": "optimized"}}],
                 "param": {"inline_data_size": "16384"}, "referrals": [], "subsystems": ["%s", "%s", "%s"]},
            """ + haPorts + """
                {"portid": 2,
                 "addr": {"trtype": "tcp", "adrfam": "ipv4", "traddr": "127.0.0.1", "trsvcid": "%d"},
                 "referrals": [], "subsystems": ["nqn.2014-08.org.nvmexpress.discovery"]}
              ],
              "subsystems": [
            """ + haPart + """
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
            """).formatted(ha.httpPort(), hostNqn, ioPort, HA_GROUP, SUBNQN, HA_NQN, RESV_NQN, discoveryPort, SUBNQN,
            SERIAL, MODEL, nsFile,
            UUID.nameUUIDFromBytes(nsFile.toString().getBytes(java.nio.charset.StandardCharsets.UTF_8)), loops.get(0),
            loops.get(1));
    }
}
