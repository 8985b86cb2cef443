package io.nvmeof4j.it.vm;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.nvmeof4j.protocol.spi.AddressFamily;
import io.nvmeof4j.protocol.spi.TransportType;
import io.nvmeof4j.target.config.TargetConfig;
import io.nvmeof4j.target.control.ControlPlane;
import io.nvmeof4j.target.daemon.TargetDaemon;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Live namespace changes reach the Linux kernel host: our daemon runs in this JVM (NVMe/TCP and HTTP on
 * 127.0.0.1, forwarded into the QEMU guest at 10.0.2.100, see run-guest.sh); the guest's kernel host connects, then
 * {@code integration-tests/vm/guest/kernel-host-namespace-hotplug.sh} adds a namespace through the management API
 * (curl), waits for the new block device, writes and reads it, removes the namespace and waits for the device to
 * go, all on the same controller (no reconnect); requests without the token, with a wrong one or with a foreign
 * Host header are refused (401, 421) across the guest's NAT. Then a subsystem, a listener and a namespace created
 * live through the control plane: the guest discovers and connects to them and does I/O; the listener is removed
 * live, the kernel's controller is disconnected and goes, and {@code nvme discover} no longer lists the subsystem.
 * A null namespace grown through the API reaches the kernel's block device ({@code blockdev --getsize64}) after the
 * namespace attribute notice, on the same controller; a shrink is refused. A discovery referral added through the API
 * is listed by {@code nvme discover} as a referral, and gone once removed.
 * About a minute of guest time.
 * Set {@code NVMEOF4J_SKIP_VM_TESTS=1} to skip.
 */
class KernelHostNamespaceHotplugIT {
    private static final String SUBNQN = "nqn.2014-08.io.nvmeof4j:vm-hotplug";
    private static final String LIVE_NQN = "nqn.2016-06.io.spdk:vm-live";
    private static final String LIVE_READY_HOST = "nqn.2014-08.org.nvmexpress:uuid:00000000-0000-0000-0000-00000000feed";
    private static final Duration GUEST_TIMEOUT = Duration.ofSeconds(Long.getLong("nvmeof4j.it.guestSeconds", 300));

    private static Path repo;

    @BeforeAll
    static void prepareGuest() throws Exception {
        repo = VmHarness.prepareGuest();
    }

    @Test
    void shouldShowAndHideNamespacesAddedAndRemovedThroughTheApi() throws Exception {
        VmHarness.runGuestLayer("KernelHostNamespaceHotplugIT", this::bootOnce);
    }

    /**
     * One daemon and one guest boot. The guest's job changes the daemon's namespaces and listeners, so a boot after a
     * guest kernel crash ({@link VmHarness#runGuestLayer}) gets a fresh daemon and work directory.
     */
    private VmHarness.Result bootOnce(int attempt) throws Exception {
        Path work = VmHarness.workDir(attempt == 1 ? "vm-hotplug-" : "vm-hotplug-boot" + attempt + "-");
        String json = """
            {
              "nvmeof4j": {"http": "127.0.0.1:0", "http_allowed_hosts": ["10.0.2.100"]},
              "ports": [ {"portid": 1, "addr": {"trtype": "tcp", "adrfam": "ipv4", "traddr": "127.0.0.1", "trsvcid": "0"},
                          "subsystems": ["%s"]} ],
              "subsystems": [ {"nqn": "%s", "attr": {"allow_any_host": "1"},
                               "namespaces": [ {"nsid": 1, "device": {"backend": "ram", "size": "16M"}},
                                               {"nsid": 2, "device": {"backend": "null", "size": "16M"}} ]} ]
            }
            """.formatted(SUBNQN, SUBNQN);
        try (TargetDaemon daemon = TargetDaemon.start(TargetConfig.parse(json, work))) {
            int ioPort = daemon.listenAddresses().get(0).port();
            int httpPort = daemon.httpAddress().getPort();
            String token = Files.readString(daemon.apiTokenFile()).strip();
            String hostId = UUID.randomUUID().toString();
            String hostNqn = "nqn.2014-08.org.nvmexpress:uuid:" + hostId;
            // Created live: a subsystem allowing this host only, its own listener, a namespace.
            ControlPlane control = daemon.controlPlane();
            control.createSubsystem("test", LIVE_NQN, null, null, false, 1, 0xFFEF);
            control.addHost("test", LIVE_NQN, hostNqn);
            int livePort = Integer.parseInt(control.addListener("test", LIVE_NQN, TransportType.TCP, AddressFamily.IPV4,
                "127.0.0.1", "0").address().trsvcid());
            control.addNamespace("test", LIVE_NQN, TargetConfig.parseNamespace(new ObjectMapper().readTree(
                "{\"nsid\": 1, \"device\": {\"backend\": \"ram\", \"size\": \"16M\"}}"), "namespace", LIVE_NQN, work));
            AtomicReference<Throwable> removal = new AtomicReference<>();
            Thread remover = new Thread(() -> {
                // The guest allows LIVE_READY_HOST once it has done its I/O: then the listener goes, live.
                long deadline = System.nanoTime() + GUEST_TIMEOUT.toNanos();
                try {
                    while (!daemon.model().subsystem(LIVE_NQN).allowedHosts().contains(LIVE_READY_HOST)) {
                        if (System.nanoTime() - deadline > 0) {
                            return;
                        }
                        Thread.sleep(100);
                    }
                    control.removeListener("test", LIVE_NQN, TransportType.TCP, "127.0.0.1",
                        Integer.toString(livePort));
                } catch (Throwable t) {
                    removal.set(t);
                }
            }, "live-listener-remover");
            remover.setDaemon(true);
            remover.start();
            List<String> cmd = new ArrayList<>(List.of(repo.resolve("integration-tests/vm/run-guest.sh").toString(),
                "--timeout", Long.toString(GUEST_TIMEOUT.toSeconds()), "--results", work.resolve("results").toString(),
                "--env", "SUBNQN=" + SUBNQN,
                "--env", "TARGET_PORT=" + ioPort, "--env", "HTTP_PORT=" + httpPort, "--env", "API_TOKEN=" + token,
                "--env", "HOSTID=" + hostId, "--env", "HOSTNQN=" + hostNqn,
                "--env", "RESIZE_NSID=2", "--env", "PORTID=1",
                "--env", "LIVE_NQN=" + LIVE_NQN, "--env", "LIVE_PORT=" + livePort, "--env", "LIVE_READY_HOST=" + LIVE_READY_HOST,
                repo.resolve("integration-tests/vm/guest/kernel-host-namespace-hotplug.sh").toString()));
            VmHarness.Result guest = VmHarness.run(cmd, java.util.Map.of(), GUEST_TIMEOUT.plusSeconds(90), "[guest] ",
                work.resolve("guest.log"));
            if (guest.exitCode() == VmHarness.GUEST_KERNEL_CRASHED) {
                remover.interrupt();
                return guest;
            }

            assertThat(guest.timedOut()).as("run-guest.sh hung past its own timeout").isFalse();
            assertThat(guest.lines().stream().filter(l -> l.startsWith("FAIL ")).toList()).as("FAIL lines").isEmpty();
            assertThat(guest.lines()).as("guest output, tail:\n%s", guest.tail(40)).contains(
                "PASS connect", "PASS no-namespace-before", "PASS api-auth-refused", "PASS api-refused",
                "PASS refused-invisible", "PASS api-add", "PASS namespace-appeared",
                "PASS no-reconnect", "PASS new-namespace-io", "PASS api-remove", "PASS namespace-disappeared",
                "PASS still-connected", "PASS api-resize", "PASS namespace-resized", "PASS resize-no-reconnect",
                "PASS resize-shrink-refused", "PASS api-referral-add", "PASS referral-discovered",
                "PASS api-referral-remove", "PASS referral-gone", "PASS disconnect", "PASS live-discovered", "PASS live-connect",
                "PASS live-io", "PASS live-signal", "PASS live-listener-removed-disconnects", "PASS live-controller-gone",
                "PASS live-discovery-follows");
            remover.join(10_000);
            assertThat(removal.get()).as("removing the live listener").isNull();
            assertThat(daemon.model().ports()).noneMatch(p -> p.exports(LIVE_NQN));
            assertThat(daemon.registry().controllers(LIVE_NQN)).isEmpty();
            assertThat(guest.exitCode()).as("guest script exit code; tail:\n%s", guest.tail(40)).isZero();
            // The target side: namespace 7 is gone again, namespace 1 stayed.
            assertThat(daemon.model().subsystem(SUBNQN).namespaces()).extracting(ns -> ns.nsid()).containsExactly(1, 2);
            assertThat(daemon.model().subsystem(SUBNQN).namespace(2).blockCount()
                * daemon.model().subsystem(SUBNQN).namespace(2).blockSize()).isEqualTo(48L << 20);
            assertThat(daemon.model().referrals(1)).isEmpty();
            return guest;
        }
    }
}
