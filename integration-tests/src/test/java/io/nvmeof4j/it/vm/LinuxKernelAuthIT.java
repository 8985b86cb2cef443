package io.nvmeof4j.it.vm;

import io.nvmeof4j.protocol.auth.DhchapSecret;
import io.nvmeof4j.target.config.TargetConfig;
import io.nvmeof4j.target.daemon.TargetDaemon;
import io.nvmeof4j.target.model.Port;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

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
 * DH-HMAC-CHAP against Linux 6.12 (Debian's bookworm-backports kernel, which has CONFIG_NVME_HOST_AUTH and
 * CONFIG_NVME_TARGET_AUTH; Debian 12's 6.1 has neither), in ONE guest boot ({@code run-guest.sh --kernel 6.12}):
 * <ul>
 *   <li>the Linux host ({@code nvme connect --dhchap-secret [--dhchap-ctrl-secret]}, nvme-cli 2.3) against our daemon,
 *       started in this JVM on 127.0.0.1 (the guest's 10.0.2.2): SHA-256/384/512 with ffdhe2048 and ffdhe8192, uni-
 *       and bidirectional, each with fio write+verify; a wrong secret and a wrong controller secret refused, then the
 *       right one accepted again;</li>
 *   <li>our initiator ({@link AuthProbe}) against nvmet in the guest with per-host dhchap_key / dhchap_ctrl_key /
 *       dhchap_hash / dhchap_dhgroup: connect with 2 I/O queues and verified I/O, a wrong key refused.</li>
 * </ul>
 * Checks run in {@code integration-tests/vm/guest/auth-linux612.sh}; this class asserts on its PASS/FAIL lines.
 * {@code NVMEOF4J_SKIP_VM_TESTS=1} skips it.
 */
class LinuxKernelAuthIT {
    private static final String SUBNQN = "nqn.2014-08.io.nvmeof4j:auth-vm-it";
    private static final Duration GUEST_TIMEOUT = Duration.ofSeconds(Long.getLong("nvmeof4j.it.guestSeconds", 600));
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

    @Test
    void shouldAuthenticateBothWaysAgainstLinux612() throws Exception {
        Path work = VmHarness.workDir("vm-auth-it-");
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

        try (TargetDaemon daemon = TargetDaemon.start(TargetConfig.parse(json))) {
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
            assertThat(guest.exitCode()).as("guest script exit code; tail:\n%s", guest.tail(40)).isZero();
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
        cmd.add(vm.resolve("guest/auth-linux612.sh").toString());
        return VmHarness.run(cmd, Map.of(), GUEST_TIMEOUT.plusSeconds(90), "[guest] ", work.resolve("guest.log"));
    }
}
