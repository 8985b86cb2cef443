package io.nvmeof4j.initiator.cli;

import io.nvmeof4j.protocol.auth.DhchapSecret;
import io.nvmeof4j.target.config.TargetConfig;
import io.nvmeof4j.target.daemon.TargetDaemon;
import io.nvmeof4j.target.model.Port;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import java.security.SecureRandom;
import java.util.Random;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code --concat} (secure channel concatenation, as nvme-cli's): {@code write}, {@code read} and {@code perf}
 * against our target's TLS port that does not require TLS, and the usage errors.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class ConcatCliIT {
    private static final String NQN = "nqn.2014-08.io.nvmeof4j:cli-concat";
    private final String secret = DhchapSecret.generate(32, 1, new SecureRandom());
    private TargetDaemon daemon;
    private int port;

    @BeforeAll
    void start() throws Exception {
        daemon = TargetDaemon.start(TargetConfig.parse("""
            {"hosts": [{"nqn": "%s", "dhchap": {"key": "%s", "dhgroup": "ffdhe2048"}}],
             "ports": [{"portid": 1, "addr": {"trtype": "tcp", "adrfam": "ipv4", "traddr": "127.0.0.1",
                        "trsvcid": "0", "tsas": "tls1.3", "treq": "not required"}, "subsystems": ["%s"]}],
             "subsystems": [{"nqn": "%s", "attr": {"allow_any_host": "1"},
                             "namespaces": [{"nsid": 1, "device": {"backend": "ram", "size": "16M",
                                                                   "block_size": 4096}}]}]}
            """.formatted(CliTarget.HOST_A, secret, NQN, NQN)));
        for (Port p : daemon.model().ports()) {
            port = p.address().port();
        }
    }

    @AfterAll
    void stop() {
        daemon.close();
    }

    @Test
    void shouldWriteReadAndMeasureOverTlsUnderTheGeneratedPsk() {
        byte[] content = new byte[3 * 4096];
        new Random(7).nextBytes(content);
        Cli.Outcome w = Cli.runWithInput(content, Cli.args("write", port, "-n", NQN, "--start-block", "9",
            "-z", "12K", "--dhchap-secret", secret, "--concat"));
        assertThat(w.status()).as(w.toString()).isZero();
        Cli.Outcome r = Cli.run(Cli.args("read", port, "-n", NQN, "--start-block", "9", "-z", "12K",
            "--dhchap-secret", secret, "--concat"));
        assertThat(r.status()).as(r.toString()).isZero();
        assertThat(r.data()).isEqualTo(content);

        Cli.Outcome perf = Cli.run(Cli.args("perf", port, "-n", NQN, "--workload", "randread", "--io-size", "4K",
            "--queue-depth", "8", "--time", "1", "--dhchap-secret", secret, "--concat"));
        assertThat(perf.status()).as(perf.toString()).isZero();
        Matcher iops = Pattern.compile("IOPS        : ([0-9,]+)").matcher(perf.out());
        assertThat(iops.find()).as(perf.out()).isTrue();
        assertThat(Long.parseLong(iops.group(1).replace(",", ""))).isPositive();
        assertThat(w.err() + r.err() + perf.err() + perf.out()).doesNotContain(secret.substring(10, 30));
    }

    @Test
    void shouldRefuseConcatWithoutASecretOrWithTls() {
        Cli.Outcome noSecret = Cli.run(Cli.args("identify", port, "-n", NQN, "--concat"));
        assertThat(noSecret.status()).as(noSecret.toString()).isEqualTo(NvmeofCli.EXIT_USAGE);
        assertThat(noSecret.err()).contains("--concat needs a DH-HMAC-CHAP host secret");
        Cli.Outcome withTls = Cli.run(Cli.args("identify", port, "-n", NQN, "--concat", "--dhchap-secret", secret,
            "--tls", "--tls-key", "NVMeTLSkey-1:01:VRLbtnN9AQb2WXW3c9+wEf/DRLz0QuLdbYvEhwtdWwNf9LrZ:"));
        assertThat(withTls.status()).as(withTls.toString()).isEqualTo(NvmeofCli.EXIT_USAGE);
        assertThat(withTls.err()).contains("not together with --tls");
    }
}
