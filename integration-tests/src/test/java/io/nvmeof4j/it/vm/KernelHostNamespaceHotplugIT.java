package io.nvmeof4j.it.vm;

import io.nvmeof4j.target.config.TargetConfig;
import io.nvmeof4j.target.daemon.TargetDaemon;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Live namespace changes reach the Linux kernel host: our daemon runs in this JVM (NVMe/TCP and HTTP on
 * 127.0.0.1, reached from the QEMU guest at 10.0.2.2); the guest's kernel host connects, then
 * {@code integration-tests/vm/guest/kernel-host-namespace-hotplug.sh} adds a namespace through the management API
 * (curl), waits for the new block device, writes and reads it, removes the namespace and waits for the device to
 * go, all on the same controller (no reconnect); requests without the token, with a wrong one or with a foreign
 * Host header are refused (401, 421) across the guest's NAT. About a minute of guest time.
 * Set {@code NVMEOF4J_SKIP_VM_TESTS=1} to skip.
 */
class KernelHostNamespaceHotplugIT {
    private static final String SUBNQN = "nqn.2014-08.io.nvmeof4j:vm-hotplug";
    private static final Duration GUEST_TIMEOUT = Duration.ofSeconds(Long.getLong("nvmeof4j.it.guestSeconds", 300));

    private static Path repo;

    @BeforeAll
    static void prepareGuest() throws Exception {
        repo = VmHarness.prepareGuest();
    }

    @Test
    void shouldShowAndHideNamespacesAddedAndRemovedThroughTheApi() throws Exception {
        Path work = VmHarness.workDir("vm-hotplug-");
        String json = """
            {
              "nvmeof4j": {"http": "127.0.0.1:0", "http_allowed_hosts": ["10.0.2.2"]},
              "ports": [ {"portid": 1, "addr": {"trtype": "tcp", "adrfam": "ipv4", "traddr": "127.0.0.1", "trsvcid": "0"},
                          "subsystems": ["%s"]} ],
              "subsystems": [ {"nqn": "%s", "attr": {"allow_any_host": "1"},
                               "namespaces": [ {"nsid": 1, "device": {"backend": "ram", "size": "16M"}} ]} ]
            }
            """.formatted(SUBNQN, SUBNQN);
        try (TargetDaemon daemon = TargetDaemon.start(TargetConfig.parse(json, work))) {
            int ioPort = daemon.listenAddresses().get(0).port();
            int httpPort = daemon.httpAddress().getPort();
            String token = Files.readString(daemon.apiTokenFile()).strip();
            String hostId = UUID.randomUUID().toString();
            List<String> cmd = new ArrayList<>(List.of(repo.resolve("integration-tests/vm/run-guest.sh").toString(),
                "--timeout", Long.toString(GUEST_TIMEOUT.toSeconds()), "--results", work.resolve("results").toString(),
                "--env", "SUBNQN=" + SUBNQN, "--env", "TARGET_ADDR=10.0.2.2",
                "--env", "TARGET_PORT=" + ioPort, "--env", "HTTP_PORT=" + httpPort, "--env", "API_TOKEN=" + token,
                "--env", "HOSTID=" + hostId, "--env", "HOSTNQN=nqn.2014-08.org.nvmexpress:uuid:" + hostId,
                repo.resolve("integration-tests/vm/guest/kernel-host-namespace-hotplug.sh").toString()));
            VmHarness.Result guest = VmHarness.run(cmd, java.util.Map.of(), GUEST_TIMEOUT.plusSeconds(90), "[guest] ",
                work.resolve("guest.log"));

            assertThat(guest.timedOut()).as("run-guest.sh hung past its own timeout").isFalse();
            assertThat(guest.lines().stream().filter(l -> l.startsWith("FAIL ")).toList()).as("FAIL lines").isEmpty();
            assertThat(guest.lines()).as("guest output, tail:\n%s", guest.tail(40)).contains(
                "PASS connect", "PASS no-namespace-before", "PASS api-auth-refused", "PASS api-refused",
                "PASS refused-invisible", "PASS api-add", "PASS namespace-appeared",
                "PASS no-reconnect", "PASS new-namespace-io", "PASS api-remove", "PASS namespace-disappeared",
                "PASS still-connected", "PASS disconnect");
            assertThat(guest.exitCode()).as("guest script exit code; tail:\n%s", guest.tail(40)).isZero();
            // The target side: namespace 7 is gone again, namespace 1 stayed.
            assertThat(daemon.model().subsystem(SUBNQN).namespaces()).extracting(ns -> ns.nsid()).containsExactly(1);
        }
    }
}
