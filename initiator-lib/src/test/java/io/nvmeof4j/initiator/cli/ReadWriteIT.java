package io.nvmeof4j.initiator.cli;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Random;

import static org.assertj.core.api.Assertions.assertThat;

/** {@code nvmeof write} then {@code nvmeof read}: the bytes come back identical, through files and stdin/stdout. */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class ReadWriteIT {
    private CliTarget target;
    private Path dir;

    @BeforeAll
    void start(@TempDir Path dir) throws Exception {
        this.dir = dir;
        target = new CliTarget(dir);
    }

    @AfterAll
    void stop() {
        target.close();
    }

    private static byte[] random(int n, long seed) {
        byte[] b = new byte[n];
        new Random(seed).nextBytes(b);
        return b;
    }

    @Test
    void shouldReadBackAFileByteIdentical() throws Exception {
        // 3 MiB + 1000 bytes: several 1 MiB commands and a zero-padded partial last block.
        byte[] content = random((3 << 20) + 1000, 1);
        Path in = dir.resolve("in.bin");
        Path out = dir.resolve("out.bin");
        Files.write(in, content);
        Cli.Outcome w = Cli.run(Cli.args("write", target.ioPort, "-n", CliTarget.NQN_A, "--namespace-id", "1",
            "--start-block", "100", "--data", in.toString()));
        assertThat(w.status()).as(w.toString()).isZero();
        assertThat(w.err()).startsWith("write: Success");
        Cli.Outcome r = Cli.run(Cli.args("read", target.ioPort, "-n", CliTarget.NQN_A, "--namespace-id", "1",
            "--start-block", "100", "--data-size", Integer.toString(content.length), "--data", out.toString()));
        assertThat(r.status()).as(r.toString()).isZero();
        assertThat(Files.readAllBytes(out)).isEqualTo(content);
        // The padding of the last block is zeros: read the whole block.
        int blocks = (content.length + 511) / 512;
        Cli.Outcome whole = Cli.run(Cli.args("read", target.ioPort, "-n", CliTarget.NQN_A, "--start-block", "100",
            "-z", Integer.toString(blocks * 512)));
        assertThat(whole.status()).as(whole.toString()).isZero();
        assertThat(Arrays.copyOf(whole.data(), content.length)).isEqualTo(content);
        assertThat(Arrays.copyOfRange(whole.data(), content.length, blocks * 512)).containsOnly(0);
    }

    @Test
    void shouldWriteFromStdinAndReadToStdoutWithFua() {
        byte[] content = random(5 * 4096, 2);
        Cli.Outcome w = Cli.runWithInput(content, Cli.args("write", target.ioPort, "-n", CliTarget.NQN_A,
            "--namespace-id", "2", "--start-block", "7", "-z", "20K", "--force-unit-access"));
        assertThat(w.status()).as(w.toString()).isZero();
        Cli.Outcome r = Cli.run(Cli.args("read", target.ioPort, "-n", CliTarget.NQN_A, "--namespace-id", "2",
            "--start-block", "7", "--data-size", "20KiB"));
        assertThat(r.status()).as(r.toString()).isZero();
        assertThat(r.data()).isEqualTo(content);
        assertThat(r.out()).isEmpty();
    }

    @Test
    void shouldWriteStdinUpToItsEndWithoutADataSize() {
        byte[] content = random(10_000, 3);
        Cli.Outcome w = Cli.runWithInput(content, Cli.args("write", target.ioPort, "-n", CliTarget.NQN_A,
            "--start-block", "5000"));
        assertThat(w.status()).as(w.toString()).isZero();
        assertThat(w.err()).contains("10000 bytes, 20 blocks");
        Cli.Outcome r = Cli.run(Cli.args("read", target.ioPort, "-n", CliTarget.NQN_A, "--start-block", "5000",
            "-z", "10000"));
        assertThat(r.data()).isEqualTo(content);
    }

    @Test
    void shouldRefuseToGoBeyondTheNamespace() {
        Cli.Outcome r = Cli.run(Cli.args("read", target.ioPort, "-n", CliTarget.NQN_A, "--namespace-id", "2",
            "--start-block", "4095", "-z", "8K"));
        assertThat(r.status()).isEqualTo(NvmeofCli.EXIT_USAGE);
        assertThat(r.err()).startsWith("nvmeof: error: ").contains("beyond the end of namespace 2 (4096 blocks)");
        assertThat(r.data()).isEmpty();
    }

    @Test
    void shouldNameAnInactiveNamespace() {
        Cli.Outcome r = Cli.run(Cli.args("read", target.ioPort, "-n", CliTarget.NQN_A, "--namespace-id", "9",
            "-z", "512"));
        assertThat(r.status()).isEqualTo(NvmeofCli.EXIT_USAGE);
        assertThat(r.err()).contains("namespace 9 is not active").contains("(active: 1, 2)");
    }

    @Test
    void shouldRequireADataSizeToRead() {
        Cli.Outcome r = Cli.run(Cli.args("read", target.ioPort, "-n", CliTarget.NQN_A));
        assertThat(r.status()).isEqualTo(NvmeofCli.EXIT_USAGE);
        assertThat(r.err()).contains("--data-size");
    }

    @Test
    void shouldRoundTripWithDigestsAndSeveralQueues() {
        byte[] content = random(64 * 1024, 4);
        Cli.Outcome w = Cli.runWithInput(content, Cli.args("write", target.ioPort, "-n", CliTarget.NQN_A,
            "--hdr-digest", "--data-digest", "-i", "2", "-Q", "32", "-k", "10", "--start-block", "20000"));
        assertThat(w.status()).as(w.toString()).isZero();
        Cli.Outcome r = Cli.run(Cli.args("read", target.ioPort, "-n", CliTarget.NQN_A, "--hdr-digest",
            "--data-digest", "--start-block", "20000", "-z", "64K"));
        assertThat(r.status()).as(r.toString()).isZero();
        assertThat(r.data()).isEqualTo(content);
    }
}
