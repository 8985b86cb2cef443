package io.nvmeof4j.initiator.cli;

import io.nvmeof4j.protocol.auth.DhchapCredentials;
import io.nvmeof4j.protocol.auth.DhchapGroup;
import io.nvmeof4j.protocol.auth.DhchapHash;
import io.nvmeof4j.protocol.auth.DhchapSecret;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;

import java.io.InputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The failures a user can act on (issue 3 item 3): one line on stderr naming the peer, the step and the NVMe
 * status (or that there was none), a distinct exit status, and a stack trace only with {@code --verbose}.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class CliErrorsIT {
    private CliTarget target;

    @BeforeAll
    void start(@TempDir Path dir) throws Exception {
        target = new CliTarget(dir);
    }

    @AfterAll
    void stop() {
        target.close();
    }

    private static void assertOneLine(Cli.Outcome r, int status) {
        assertThat(r.status()).as(r.toString()).isEqualTo(status);
        assertThat(r.err()).startsWith("nvmeof: error: ").endsWith("\n");
        assertThat(r.err().strip().lines().count()).as(r.err()).isEqualTo(1);
        assertThat(r.err()).doesNotContain("\tat ");
        assertThat(r.out()).isEmpty();
    }

    @Test
    void shouldNameAnUnknownSubsystem() {
        String nqn = "nqn.2014-08.io.nvmeof4j:no-such-subsystem";
        Cli.Outcome r = Cli.run(Cli.args("identify", target.ioPort, "-n", nqn));
        assertOneLine(r, NvmeofCli.EXIT_UNKNOWN_NQN);
        assertThat(r.err()).contains("tcp://127.0.0.1:" + target.ioPort + " (" + nqn + ")")
            .contains("Connect (admin queue)").contains("0x182 CONNECT_INVALID_PARAMETERS").contains("SUBNQN")
            .contains("nvmeof discover");
    }

    @Test
    void shouldNameAHostThatIsNotAllowed() {
        Cli.Outcome r = Cli.run(Cli.args("identify", target.ioPort, "-n", CliTarget.NQN_B));
        assertOneLine(r, NvmeofCli.EXIT_HOST_NOT_ALLOWED);
        assertThat(r.err()).contains("tcp://127.0.0.1:" + target.ioPort).contains("Connect (admin queue)")
            .contains("0x184 CONNECT_INVALID_HOST").contains(CliTarget.HOST_A).contains("-q/--hostnqn");
    }

    @Test
    void shouldConnectTheAllowedHost() {
        Cli.Outcome r = Cli.run("identify", "-a", "127.0.0.1", "-s", Integer.toString(target.ioPort),
            "-n", CliTarget.NQN_B, "-q", CliTarget.HOST_B, "-I", CliTarget.HOST_B_ID);
        assertThat(r.status()).as(r.toString()).isZero();
        assertThat(r.out()).contains("Namespace 1");
    }

    @Test
    void shouldNameARefusedConnection() throws Exception {
        int port;
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            port = s.getLocalPort();
        }
        Cli.Outcome r = Cli.run(Cli.args("identify", port, "-n", CliTarget.NQN_A));
        assertOneLine(r, NvmeofCli.EXIT_REFUSED);
        assertThat(r.err()).startsWith("nvmeof: error: tcp://127.0.0.1:" + port + " (" + CliTarget.NQN_A
            + "): TCP connect: ").contains("refused").contains("(no NVMe status)");
    }

    @Test
    void shouldNameAWrongAddress() {
        Cli.Outcome r = Cli.run("discover", "-a", "no-such-host.invalid", "-q", CliTarget.HOST_A);
        assertOneLine(r, NvmeofCli.EXIT_ADDRESS);
        assertThat(r.err()).contains("tcp://no-such-host.invalid:8009").contains("resolve address")
            .contains("(no NVMe status)").contains("-a/--traddr");
    }

    @Test
    void shouldTimeOutAgainstAControllerThatNeverAnswers() throws Exception {
        // Accepts, answers ICReq, then stays silent: the admin Connect never completes.
        try (ServerSocket server = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            Thread peer = new Thread(() -> {
                try (Socket s = server.accept()) {
                    InputStream in = s.getInputStream();
                    in.readNBytes(128);
                    ByteBuffer icresp = ByteBuffer.allocate(128).order(ByteOrder.LITTLE_ENDIAN);
                    icresp.put(0, (byte) 0x01).put(2, (byte) 128).putInt(4, 128).putInt(12, 0x40000);
                    s.getOutputStream().write(icresp.array());
                    while (in.read() >= 0) {
                        // swallow the Connect capsule and say nothing
                    }
                } catch (Exception ignored) {
                    // the host hung up
                }
            });
            peer.setDaemon(true);
            peer.start();
            long start = System.nanoTime();
            Cli.Outcome r = Cli.run(Cli.args("identify", server.getLocalPort(), "-n", CliTarget.NQN_A,
                "--connect-timeout", "500"));
            assertOneLine(r, NvmeofCli.EXIT_TIMEOUT);
            assertThat(r.err()).contains("tcp://127.0.0.1:" + server.getLocalPort())
                .contains("Connect (admin queue)").contains("no completion within 500 ms")
                .contains("(no NVMe status)");
            assertThat(System.nanoTime() - start).isLessThan(TimeUnit.SECONDS.toNanos(5));
            peer.join(5_000);
        }
    }

    @Test
    void shouldSayWhyRdmaIsNotAvailable() {
        // This machine has no RDMA device (the guest tests have one); the message gives Rdma.unavailabilityCause().
        Cli.Outcome r = Cli.run("discover", "-t", "rdma", "-a", "127.0.0.1", "-q", CliTarget.HOST_A);
        assertOneLine(r, NvmeofCli.EXIT_USAGE);
        assertThat(r.err()).contains("transport 'rdma' is not available here")
            .contains(io.nvmeof4j.jni.rdma.Rdma.unavailabilityCause().getMessage());
    }

    @Test
    void shouldAskForTheSubsystemNqn() {
        Cli.Outcome r = Cli.run(Cli.args("perf", target.ioPort));
        assertOneLine(r, NvmeofCli.EXIT_USAGE);
        assertThat(r.err()).contains("-n/--nqn");
    }

    @Test
    void shouldAuthenticateWithDhchapSecretsAndNameARefusal() {
        String host = "nqn.2014-08.org.nvmexpress:uuid:cccccccc-bbbb-cccc-dddd-eeeeeeeeeeee";
        String secret = DhchapSecret.generate(32, 1, new SecureRandom());
        String ctrlSecret = DhchapSecret.generate(32, 0, new SecureRandom());
        target.daemon.setHostCredentials(host, new DhchapCredentials(DhchapSecret.parse(secret),
            DhchapSecret.parse(ctrlSecret), DhchapHash.SHA384, DhchapGroup.FFDHE2048));
        String port = Integer.toString(target.ioPort);
        Cli.Outcome ok = Cli.run("identify", "-a", "127.0.0.1", "-s", port, "-n", CliTarget.NQN_A, "-q", host,
            "--dhchap-secret", secret, "--dhchap-ctrl-secret", ctrlSecret);
        assertThat(ok.status()).as(ok.toString()).isZero();
        assertThat(ok.out()).contains("Namespace 1");

        String wrong = DhchapSecret.generate(32, 1, new SecureRandom());
        Cli.Outcome refused = Cli.run("identify", "-a", "127.0.0.1", "-s", port, "-n", CliTarget.NQN_A, "-q", host,
            "-S", wrong);
        assertOneLine(refused, NvmeofCli.EXIT_FAILURE);
        assertThat(refused.err()).contains("DH-HMAC-CHAP (queue 0)").contains("authentication failed")
            .doesNotContain(wrong.substring(10, 30)).doesNotContain(secret.substring(10, 30));

        Cli.Outcome none = Cli.run("identify", "-a", "127.0.0.1", "-s", port, "-n", CliTarget.NQN_A, "-q", host);
        assertOneLine(none, NvmeofCli.EXIT_FAILURE);
        assertThat(none.err()).contains("--dhchap-secret");

        String typo = secret.substring(0, 12) + (secret.charAt(12) == 'A' ? 'B' : 'A') + secret.substring(13);
        Cli.Outcome malformed = Cli.run("identify", "-a", "127.0.0.1", "-s", port, "-n", CliTarget.NQN_A, "-q", host,
            "--dhchap-secret", typo);
        assertOneLine(malformed, NvmeofCli.EXIT_USAGE);
        assertThat(malformed.err()).contains("CRC-32").doesNotContain(typo.substring(10, 30));
    }

    @Test
    void shouldReportABadOptionInOneLine() {
        Cli.Outcome r = Cli.run(Cli.args("perf", target.ioPort, "-n", CliTarget.NQN_A, "--io-size", "4X"));
        assertOneLine(r, NvmeofCli.EXIT_USAGE);
        assertThat(r.err()).contains("'4X' is not a size").contains("nvmeof perf --help");
    }

    @Test
    void shouldPrintTheStackTraceWhenVerbose() throws Exception {
        int port;
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            port = s.getLocalPort();
        }
        Cli.Outcome r = Cli.run(Cli.args("identify", port, "-n", CliTarget.NQN_A, "--verbose"));
        assertThat(r.status()).isEqualTo(NvmeofCli.EXIT_REFUSED);
        assertThat(r.err()).startsWith("nvmeof: error: ").contains("\tat ").contains("NvmeofException");
    }

    @Test
    void shouldListTheExitStatusesInTheHelp() {
        Cli.Outcome r = Cli.run("--help");
        assertThat(r.status()).isZero();
        assertThat(r.out()).contains("Exit status:").contains("4   connection refused")
            .contains("6   host not allowed").contains("7   timeout");
    }
}
