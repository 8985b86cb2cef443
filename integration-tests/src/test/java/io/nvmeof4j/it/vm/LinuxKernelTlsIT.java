package io.nvmeof4j.it.vm;

import io.nvmeof4j.tcp.tls.ConfiguredPsk;
import org.junit.jupiter.api.Test;

import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * NVMe/TCP TLS 1.3 against Linux 6.12, in ONE boot of the 6.12 guest (Debian bookworm-backports' kernel, with the
 * trixie root's nvme-cli 2.13, tlshd and keyctl): the kernel host against our daemon on this machine (TLS-required
 * and plain ports, PSK identity versions 0 and 1, fio verify, a wrong PSK and a plain connect refused), and our
 * initiator ({@code bin/nvmeof}) against the kernel target's TLS port (verified I/O, wrong PSK and plain refused).
 * Checks run in {@code integration-tests/vm/guest/tls.sh}; this class asserts on its PASS/FAIL lines and that the
 * daemon still serves afterwards.
 * <p>The 6.12 kernel: {@code run-guest.sh --kernel 6.12} where the harness has it (the second-kernel part of
 * {@code prepare.sh}); otherwise a guest cache whose {@code current.env} names a 6.12 kernel, given as
 * {@code NVMEOF4J_VM_CACHE_612}. {@code TRIXIE_ROOT} comes from the cache's {@code current.env} (prepare.sh's
 * trixie part). Set {@code NVMEOF4J_SKIP_VM_TESTS=1} to skip.
 * <p>One boot per kernel layer: once the 6.12 authentication layer ({@code LinuxKernelAuthIT}) is on the same
 * branch, its boot should run {@code tls.sh} too and this class fold into it.
 */
class LinuxKernelTlsIT {
    private static final String SUBNQN = "nqn.2026-11.io.nvmeof4j:tls-guest";
    private static final Duration DAEMON_START_TIMEOUT = Duration.ofSeconds(600);
    private static final Duration GUEST_TIMEOUT = Duration.ofSeconds(Long.getLong("nvmeof4j.it.guestSeconds", 900));

    @Test
    void shouldInteroperateWithLinux612OverTlsBothWays() throws Exception {
        Path repo = VmHarness.prepareGuest();
        Path runGuest = repo.resolve("integration-tests/vm/run-guest.sh");
        boolean kernelOption = Files.readString(runGuest).contains("--kernel 6.12");
        String defaultCache = System.getProperty("user.home") + "/.cache/nvmeof4j-vm";
        Path cache = Path.of(kernelOption ? System.getenv().getOrDefault("NVMEOF4J_VM_CACHE", defaultCache)
            : System.getenv().getOrDefault("NVMEOF4J_VM_CACHE_612", defaultCache + "-6.12"));
        Path env612 = cache.resolve("current.env");
        assertThat(env612).as("the guest cache %s (run-guest.sh --kernel 6.12: %s)", cache, kernelOption).exists();
        String trixie = Files.readAllLines(env612).stream().filter(l -> l.startsWith("TRIXIE_ROOT="))
            .map(l -> l.substring("TRIXIE_ROOT=".length())).findFirst().orElse("");
        assertThat(trixie).as("TRIXIE_ROOT in %s (prepare.sh's trixie block)", env612).isNotEmpty();

        Path work = VmHarness.workDir("vm-tls-");
        int tlsPort = VmHarness.freePort();
        int plainPort = VmHarness.freePort();
        while (plainPort == tlsPort) {
            plainPort = VmHarness.freePort();
        }
        String hostId = UUID.randomUUID().toString();
        String hostNqn = "nqn.2014-08.org.nvmexpress:uuid:" + hostId;
        String wrongHostNqn = "nqn.2014-08.org.nvmexpress:uuid:" + UUID.randomUUID();
        SecureRandom random = new SecureRandom();
        byte[] raw = new byte[32];
        random.nextBytes(raw);
        String key = ConfiguredPsk.of(1, raw).toInterchangeFormat();
        random.nextBytes(raw);
        String otherKey = ConfiguredPsk.of(1, raw).toInterchangeFormat();
        Path config = work.resolve("nvmeof-target.json");
        Files.writeString(config, """
            {
              "hosts": [{"nqn": "%1$s", "tls_key": "%2$s"}, {"nqn": "%3$s", "tls_key": "%4$s"}],
              "ports": [
                {"portid": 1, "addr": {"trtype": "tcp", "adrfam": "ipv4", "traddr": "127.0.0.1", "trsvcid": "%5$d",
                                       "treq": "required", "tsas": "tls1.3"}, "subsystems": ["%7$s"]},
                {"portid": 2, "addr": {"trtype": "tcp", "adrfam": "ipv4", "traddr": "127.0.0.1", "trsvcid": "%6$d"},
                 "subsystems": ["%7$s"]}
              ],
              "subsystems": [{"nqn": "%7$s", "attr": {"allow_any_host": "1"},
                "namespaces": [{"nsid": 1, "enable": 1, "device": {"backend": "ram", "size": "64M", "block_size": 4096}}]}]
            }
            """.formatted(hostNqn, key, wrongHostNqn, otherKey, tlsPort, plainPort, SUBNQN));

        Path launcher = repo.resolve("bin/nvmeof-target");
        try (VmHarness.Daemon daemon = VmHarness.Daemon.start(repo, launcher, config, work.resolve("daemon.log"))) {
            assertThat(daemon.waitForPorts(DAEMON_START_TIMEOUT, tlsPort, plainPort))
                .as("daemon listening; log:\n%s", daemon.logTail(40)).isTrue();
            Map<String, String> env = new LinkedHashMap<>();
            env.put("TRIXIE_ROOT", trixie);
            env.put("SUBNQN", SUBNQN);
            env.put("TLS_PORT", Integer.toString(tlsPort));
            env.put("PLAIN_PORT", Integer.toString(plainPort));
            env.put("HOSTNQN", hostNqn);
            env.put("HOSTID", hostId);
            env.put("WRONG_HOSTNQN", wrongHostNqn);
            env.put("TLS_KEY", key);
            List<String> cmd = new ArrayList<>(List.of(runGuest.toString(),
                "--timeout", Long.toString(GUEST_TIMEOUT.toSeconds()), "--results", work.resolve("results").toString()));
            if (kernelOption) {
                cmd.addAll(List.of("--kernel", "6.12"));
            }
            env.forEach((k, v) -> {
                cmd.add("--env");
                cmd.add(k + "=" + v);
            });
            cmd.add(repo.resolve("integration-tests/vm/guest/tls.sh").toString());
            VmHarness.Result guest = VmHarness.run(cmd, Map.of("NVMEOF4J_VM_CACHE", cache.toString()),
                GUEST_TIMEOUT.plusSeconds(90), "[guest] ", work.resolve("guest.log"));

            List<String> failures = guest.lines().stream().filter(l -> l.startsWith("FAIL ")).toList();
            assertThat(guest.timedOut()).as("run-guest.sh hung past its own timeout").isFalse();
            assertThat(failures).as("FAIL lines from the guest; daemon log tail:\n%s", daemon.logTail(40)).isEmpty();
            assertThat(guest.lines()).as("guest output (exit %d), tail:\n%s", guest.exitCode(), guest.tail(40))
                .contains("PASS tlshd-running", "PASS kernel-tls-connect-v0", "PASS kernel-tls-fio-verify-v0",
                    "PASS kernel-tls-connect-v1", "PASS kernel-tls-fio-verify-v1", "PASS kernel-plain-connect",
                    "PASS kernel-wrong-psk-refused", "PASS kernel-plain-on-tls-port-refused",
                    "PASS nvmet-tls-port-setup", "PASS our-initiator-tls-verified-io",
                    "PASS our-initiator-wrong-psk-refused", "PASS our-initiator-plain-refused");
            assertThat(guest.exitCode()).as("guest exit code; tail:\n%s", guest.tail(40)).isZero();
            String log = Files.readString(work.resolve("daemon.log"));
            // (Refusals are logged rate-limited per peer address: the plain connect right after may not show.)
            assertThat(log).as("the daemon log names the refused handshake").contains("TLS 1.3 handshake failed");
            assertThat(log).as("no key material in the daemon log").doesNotContain(key.substring(16, key.length() - 1))
                .doesNotContain(otherKey.substring(16, otherKey.length() - 1));
            assertThat(daemon.waitForPorts(Duration.ofSeconds(5), tlsPort, plainPort))
                .as("the daemon still listens after the refusals").isTrue();
        }
    }
}
