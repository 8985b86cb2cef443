package io.nvmeof4j.it.vm;

import io.nvmeof4j.protocol.auth.DhchapSecret;
import io.nvmeof4j.target.config.TargetConfig;
import io.nvmeof4j.target.daemon.TargetDaemon;
import io.nvmeof4j.target.model.Port;
import io.nvmeof4j.tcp.tls.ConfiguredPsk;
import org.junit.jupiter.api.BeforeAll;
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
 * The Linux 6.12 layer (Debian's bookworm-backports kernel, which has CONFIG_NVME_HOST_AUTH, CONFIG_NVME_TARGET_AUTH
 * and NVMe/TCP TLS; Debian 12's 6.1 has none of them) in ONE guest boot ({@code run-guest.sh --kernel 6.12}, guest
 * script {@code guest/linux612.sh}), so CI boots 6.12 once. Part 1, DH-HMAC-CHAP ({@code guest/auth-linux612.sh}):
 * <ul>
 *   <li>the Linux host ({@code nvme connect --dhchap-secret [--dhchap-ctrl-secret]}, nvme-cli 2.3) against our daemon,
 *       started in this JVM on 127.0.0.1 (the guest's 10.0.2.2): SHA-256/384/512 with ffdhe2048 and ffdhe8192, uni-
 *       and bidirectional, each with fio write+verify; a wrong secret and a wrong controller secret refused, then the
 *       right one accepted again;</li>
 *   <li>our initiator ({@link AuthProbe}) against nvmet in the guest with per-host dhchap_key / dhchap_ctrl_key /
 *       dhchap_hash / dhchap_dhgroup: connect with 2 I/O queues and verified I/O, a wrong key refused.</li>
 * </ul>
 * Part 2, NVMe/TCP TLS 1.3 ({@code guest/tls.sh}, with the trixie root's nvme-cli 2.13, tlshd and keyctl): the kernel
 * host against a second daemon ({@code bin/nvmeof-target}, whose log is checked) on TLS-required and plain ports, PSK
 * identity versions 0 and 1, fio verify, a wrong PSK and a plain connect refused; our initiator ({@code bin/nvmeof})
 * against the kernel target's TLS port (verified I/O, wrong PSK and plain refused).
 * This class asserts on the PASS/FAIL lines of both. {@code TRIXIE_ROOT} comes from the 6.12 env file (prepare.sh's
 * trixie block). {@code NVMEOF4J_SKIP_VM_TESTS=1} skips it.
 */
class LinuxKernel612IT {
    private static final String SUBNQN = "nqn.2014-08.io.nvmeof4j:auth-vm-it";
    private static final String TLS_SUBNQN = "nqn.2026-11.io.nvmeof4j:tls-guest";
    private static final Duration DAEMON_START_TIMEOUT = Duration.ofSeconds(600);
    // Both parts: authentication about 50 s on a quiet machine (up to 250 s loaded), TLS a few minutes.
    private static final Duration GUEST_TIMEOUT = Duration.ofSeconds(Long.getLong("nvmeof4j.it.guestSeconds", 1500));
    private static final SecureRandom RANDOM = new SecureRandom();

    private static Path repo;

    /** A Linux-host case: its own host NQN, the daemon's hash and DH group for it, and whether it is bidirectional. */
    private record HostCase(String name, String hash, String dhgroup, boolean bidirectional, String hostId,
                            String secret, String ctrlSecret) {
        static HostCase of(String name, String hash, String dhgroup, boolean bidirectional, int keyBytes, int hh) {
            return new HostCase(name, hash, dhgroup, bidirectional, UUID.randomUUID().toString(),
                DhchapSecret.generate(keyBytes, hh, RANDOM), DhchapSecret.generate(48, 2, RANDOM));
        }

        String hostNqn() {
            return "nqn.2014-08.org.nvmexpress:uuid:" + hostId;
        }

        String guestArg() {
            return name + "|" + hostNqn() + "|" + hostId + "|" + secret + "|" + (bidirectional ? ctrlSecret : "-") + "|"
                + hash + "|" + dhgroup;
        }
    }

    @BeforeAll
    static void prepareGuest() throws Exception {
        repo = VmHarness.prepareGuest();
    }

    /** The TLS part: the host our second daemon holds {@code key} for, and one it holds another key for. */
    private record TlsCase(String hostId, String key, String wrongHostNqn, String otherKey, int tlsPort, int plainPort) {
        static TlsCase create() throws Exception {
            byte[] raw = new byte[32];
            RANDOM.nextBytes(raw);
            String key = ConfiguredPsk.of(1, raw).toInterchangeFormat();
            RANDOM.nextBytes(raw);
            String otherKey = ConfiguredPsk.of(1, raw).toInterchangeFormat();
            int tlsPort = VmHarness.freePort();
            int plainPort = VmHarness.freePort();
            while (plainPort == tlsPort) {
                plainPort = VmHarness.freePort();
            }
            return new TlsCase(UUID.randomUUID().toString(), key,
                "nqn.2014-08.org.nvmexpress:uuid:" + UUID.randomUUID(), otherKey, tlsPort, plainPort);
        }

        String hostNqn() {
            return "nqn.2014-08.org.nvmexpress:uuid:" + hostId;
        }

        String config() {
            return """
                {
                  "hosts": [{"nqn": "%1$s", "tls_key": "%2$s"}, {"nqn": "%3$s", "tls_key": "%4$s"}],
                  "ports": [
                    {"portid": 1, "addr": {"trtype": "tcp", "adrfam": "ipv4", "traddr": "127.0.0.1", "trsvcid": "%5$d",
                                           "treq": "required", "tsas": "tls1.3"}, "subsystems": ["%7$s"]},
                    {"portid": 2, "addr": {"trtype": "tcp", "adrfam": "ipv4", "traddr": "127.0.0.1", "trsvcid": "%6$d"},
                     "subsystems": ["%7$s"]}
                  ],
                  "subsystems": [{"nqn": "%7$s", "attr": {"allow_any_host": "1"},
                    "namespaces": [{"nsid": 1, "enable": 1, "device": {"backend": "ram", "size": "64M",
                                                                       "block_size": 4096}}]}]
                }
                """.formatted(hostNqn(), key, wrongHostNqn, otherKey, tlsPort, plainPort, TLS_SUBNQN);
        }
    }

    @Test
    void shouldAuthenticateAndSecureChannelsBothWaysAgainstLinux612() throws Exception {
        Path env612 = Path.of(System.getenv().getOrDefault("NVMEOF4J_VM_CACHE",
            System.getProperty("user.home") + "/.cache/nvmeof4j-vm"), "linux-6.12.env");
        assertThat(env612).as("the 6.12 env file (prepare.sh's second-kernel block)").exists();
        String trixie = Files.readAllLines(env612).stream().filter(l -> l.startsWith("TRIXIE_ROOT="))
            .map(l -> l.substring("TRIXIE_ROOT=".length())).findFirst().orElse("");
        assertThat(trixie).as("TRIXIE_ROOT in %s (prepare.sh's trixie block)", env612).isNotEmpty();

        Path work = VmHarness.workDir("vm-612-it-");
        List<HostCase> cases = List.of(
            HostCase.of("sha256-ffdhe2048-uni", "hmac(sha256)", "ffdhe2048", false, 32, 1),
            HostCase.of("sha256-ffdhe8192-bi", "hmac(sha256)", "ffdhe8192", true, 32, 0),
            HostCase.of("sha384-ffdhe2048-bi", "hmac(sha384)", "ffdhe2048", true, 48, 2),
            HostCase.of("sha512-ffdhe8192-uni", "hmac(sha512)", "ffdhe8192", false, 64, 3));
        StringBuilder hosts = new StringBuilder();
        for (HostCase c : cases) {
            hosts.append(hosts.length() == 0 ? "" : ",\n").append("""
                {"nqn": "%s", "dhchap": {"key": "%s", "ctrl_key": "%s", "hash": "%s", "dhgroup": "%s"}}"""
                .formatted(c.hostNqn(), c.secret(), c.ctrlSecret(), c.hash(), c.dhgroup()));
        }
        String json = """
            {"hosts": [%s],
             "ports": [{"portid": 1, "addr": {"trtype": "tcp", "adrfam": "ipv4", "traddr": "127.0.0.1",
                        "trsvcid": "0"}, "subsystems": ["%s"]}],
             "subsystems": [{"nqn": "%s", "attr": {"allow_any_host": "1"},
                             "namespaces": [{"nsid": 1, "device": {"backend": "ram", "size": "32M"}}]}]}
            """.formatted(hosts, SUBNQN, SUBNQN);

        // Our initiator's cases against nvmet: nvmet's names for hash and group.
        String ktHost = UUID.randomUUID().toString();
        String ktHost2 = UUID.randomUUID().toString();
        String ktCases = "kt-sha256-ffdhe2048-uni|nqn.2014-08.org.nvmexpress:uuid:" + ktHost + "|" + ktHost + "|"
            + DhchapSecret.generate(32, 1, RANDOM) + "|-|hmac(sha256)|ffdhe2048"
            + " kt-sha512-ffdhe8192-bi|nqn.2014-08.org.nvmexpress:uuid:" + ktHost2 + "|" + ktHost2 + "|"
            + DhchapSecret.generate(64, 3, RANDOM) + "|" + DhchapSecret.generate(48, 2, RANDOM)
            + "|hmac(sha512)|ffdhe8192";

        TlsCase tls = TlsCase.create();
        Path tlsConfig = work.resolve("nvmeof-target-tls.json");
        Files.writeString(tlsConfig, tls.config());
        Path tlsLog = work.resolve("daemon-tls.log");

        try (TargetDaemon daemon = TargetDaemon.start(TargetConfig.parse(json));
             VmHarness.Daemon tlsDaemon = VmHarness.Daemon.start(repo, repo.resolve("bin/nvmeof-target"), tlsConfig,
                 tlsLog)) {
            assertThat(tlsDaemon.waitForPorts(DAEMON_START_TIMEOUT, tls.tlsPort(), tls.plainPort()))
                .as("TLS daemon listening; log:\n%s", tlsDaemon.logTail(40)).isTrue();
            int port = 0;
            for (Port p : daemon.model().ports()) {
                port = p.address().port();
            }
            Map<String, String> env = new LinkedHashMap<>();
            env.put("TARGET_ADDR", "10.0.2.2");
            env.put("TARGET_PORT", Integer.toString(port));
            env.put("SUBNQN", SUBNQN);
            env.put("CASES", String.join(" ", cases.stream().map(HostCase::guestArg).toList()));
            env.put("WRONG_SECRET", DhchapSecret.generate(32, 1, RANDOM));
            env.put("PROBE_CP", VmHarness.testClasspath());
            env.put("JAVA_BIN", Path.of(System.getProperty("java.home"), "bin", "java").toString());
            env.put("KT_CASES", ktCases);
            // tls.sh's (guest/linux612.sh hands TLS_SUBNQN to it as SUBNQN)
            env.put("TRIXIE_ROOT", trixie);
            env.put("TLS_SUBNQN", TLS_SUBNQN);
            env.put("TLS_PORT", Integer.toString(tls.tlsPort()));
            env.put("PLAIN_PORT", Integer.toString(tls.plainPort()));
            env.put("HOSTNQN", tls.hostNqn());
            env.put("HOSTID", tls.hostId());
            env.put("WRONG_HOSTNQN", tls.wrongHostNqn());
            env.put("TLS_KEY", tls.key());

            long t0 = System.nanoTime();
            VmHarness.Result guest = runGuest(env, work);
            System.out.printf("[guest] finished in %d s%n", (System.nanoTime() - t0) / 1_000_000_000L);

            List<String> expected = new ArrayList<>(List.of("PASS kernel-6.12", "PASS target-reachable",
                "PASS refused-wrong-secret", "PASS refused-wrong-ctrl-secret", "PASS host-after-refusals",
                "PASS fio-verify-after-refusals", "PASS kernel-target-auth-setup", "PASS auth-probe"));
            for (HostCase c : cases) {
                expected.add("PASS host-" + c.name());
                expected.add("PASS fio-verify-" + c.name());
                expected.add("PASS disconnect-" + c.name());
                expected.add("PASS negotiated-" + c.name());
                if (c.bidirectional()) {
                    expected.add("PASS controller-authenticated-" + c.name());
                }
            }
            List<String> failures = guest.lines().stream().filter(l -> l.startsWith("FAIL ")).toList();
            assertThat(guest.timedOut()).as("run-guest.sh hung past its own timeout").isFalse();
            assertThat(failures).as("FAIL lines from the guest; tail:\n%s", guest.tail(60)).isEmpty();
            assertThat(guest.lines()).as("guest output (exit %d), tail:\n%s", guest.exitCode(), guest.tail(60))
                .containsAll(expected);
            assertThat(guest.lines()).as("our initiator against nvmet").anyMatch(
                l -> l.startsWith("PASS initiator-io-kt-sha256-ffdhe2048-uni")).anyMatch(
                l -> l.startsWith("PASS initiator-io-kt-sha512-ffdhe8192-bi")).anyMatch(
                l -> l.startsWith("PASS initiator-wrong-key refused"));
            assertThat(guest.lines()).as("TLS part (exit %d), tail:\n%s", guest.exitCode(), guest.tail(40))
                .contains("PASS tlshd-running", "PASS kernel-tls-connect-v0", "PASS kernel-tls-fio-verify-v0",
                    "PASS kernel-tls-connect-v1", "PASS kernel-tls-fio-verify-v1", "PASS kernel-plain-connect",
                    "PASS kernel-wrong-psk-refused", "PASS kernel-plain-on-tls-port-refused",
                    "PASS nvmet-tls-port-setup", "PASS our-initiator-tls-verified-io",
                    "PASS our-initiator-wrong-psk-refused", "PASS our-initiator-plain-refused");
            assertThat(guest.lines()).as("both parts ran").contains("SUMMARY-612: auth exit 0, tls exit 0");
            assertThat(guest.exitCode()).as("guest script exit code; tail:\n%s", guest.tail(40)).isZero();
            String log = Files.readString(tlsLog);
            // (Refusals are logged rate-limited per peer address: the plain connect right after may not show.)
            assertThat(log).as("the TLS daemon's log names the refused handshake").contains("TLS 1.3 handshake failed");
            assertThat(log).as("no key material in the daemon log")
                .doesNotContain(tls.key().substring(16, tls.key().length() - 1))
                .doesNotContain(tls.otherKey().substring(16, tls.otherKey().length() - 1));
            assertThat(tlsDaemon.waitForPorts(Duration.ofSeconds(5), tls.tlsPort(), tls.plainPort()))
                .as("the TLS daemon still listens after the refusals").isTrue();
        }
    }

    private static VmHarness.Result runGuest(Map<String, String> env, Path work) throws Exception {
        Path vm = repo.resolve("integration-tests/vm");
        List<String> cmd = new ArrayList<>(List.of(vm.resolve("run-guest.sh").toString(), "--kernel", "6.12",
            "--timeout", Long.toString(GUEST_TIMEOUT.toSeconds()), "--results", work.resolve("results").toString()));
        env.forEach((k, v) -> {
            cmd.add("--env");
            cmd.add(k + "=" + v);
        });
        cmd.add(vm.resolve("guest/linux612.sh").toString());
        return VmHarness.runGuest("LinuxKernel612IT", cmd, GUEST_TIMEOUT.plusSeconds(90), work.resolve("guest.log"));
    }
}
