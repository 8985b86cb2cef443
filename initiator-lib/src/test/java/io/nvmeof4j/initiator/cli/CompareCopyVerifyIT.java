package io.nvmeof4j.initiator.cli;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;

import static org.assertj.core.api.Assertions.assertThat;

/** {@code nvmeof compare-and-write}, {@code copy} and {@code verify} against our target: bytes and exit statuses. */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class CompareCopyVerifyIT {
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

    private static byte[] filled(int n, int value) {
        byte[] b = new byte[n];
        Arrays.fill(b, (byte) value);
        return b;
    }

    private byte[] read(int nsid, long lba, int bytes) {
        Cli.Outcome r = Cli.run(Cli.args("read", target.ioPort, "-n", CliTarget.NQN_A, "--namespace-id",
            Integer.toString(nsid), "--start-block", Long.toString(lba), "-z", Integer.toString(bytes)));
        assertThat(r.status()).as(r.toString()).isZero();
        return r.data();
    }

    private void write(int nsid, long lba, byte[] content) {
        Cli.Outcome w = Cli.runWithInput(content, Cli.args("write", target.ioPort, "-n", CliTarget.NQN_A,
            "--namespace-id", Integer.toString(nsid), "--start-block", Long.toString(lba),
            "-z", Integer.toString(content.length)));
        assertThat(w.status()).as(w.toString()).isZero();
    }

    @Test
    void shouldReplaceOnMatchAndExitEightOnMiscompare() throws Exception {
        byte[] old = filled(2 * 4096, 0x11);
        byte[] fresh = filled(2 * 4096, 0x22);
        write(2, 30, old);
        Path cmp = Files.write(dir.resolve("cmp.bin"), old);
        Path data = Files.write(dir.resolve("data.bin"), fresh);

        Cli.Outcome ok = Cli.run(Cli.args("compare-and-write", target.ioPort, "-n", CliTarget.NQN_A,
            "--namespace-id", "2", "--start-block", "30", "--compare-data", cmp.toString(), "--data", data.toString()));
        assertThat(ok.status()).as(ok.toString()).isZero();
        assertThat(ok.err()).startsWith("compare-and-write: Success");
        assertThat(read(2, 30, 2 * 4096)).isEqualTo(fresh);

        // Expecting the old content again: a miscompare, nothing written.
        Path other = Files.write(dir.resolve("other.bin"), filled(2 * 4096, 0x33));
        Cli.Outcome miss = Cli.run(Cli.args("compare-and-write", target.ioPort, "-n", CliTarget.NQN_A,
            "--namespace-id", "2", "--start-block", "30", "-c", cmp.toString(), "-d", other.toString()));
        assertThat(miss.status()).as(miss.toString()).isEqualTo(NvmeofCli.EXIT_IO_ERROR);
        assertThat(miss.err()).contains("0x285 COMPARE_FAILURE").contains("nothing was written");
        assertThat(read(2, 30, 2 * 4096)).isEqualTo(fresh);

        Path odd = Files.write(dir.resolve("odd.bin"), filled(100, 1));
        Cli.Outcome usage = Cli.run(Cli.args("compare-and-write", target.ioPort, "-n", CliTarget.NQN_A,
            "--namespace-id", "2", "-c", odd.toString(), "-d", odd.toString()));
        assertThat(usage.status()).as(usage.toString()).isEqualTo(NvmeofCli.EXIT_USAGE);
    }

    @Test
    void shouldCopyRangesAndRefuseAboveTheLimits() {
        byte[] a = filled(512, 0x41);
        byte[] b = filled(3 * 512, 0x42);
        write(1, 100, a);
        write(1, 200, b);
        Cli.Outcome ok = Cli.run(Cli.args("copy", target.ioPort, "-n", CliTarget.NQN_A, "--namespace-id", "1",
            "--sdlba", "300", "--slbs", "200,100", "--blocks", "3,1", "-f"));
        assertThat(ok.status()).as(ok.toString()).isZero();
        assertThat(ok.err()).startsWith("copy: Success (4 blocks in 2 ranges to LBA 300");
        byte[] back = read(1, 300, 4 * 512);
        assertThat(Arrays.copyOfRange(back, 0, 3 * 512)).isEqualTo(b);
        assertThat(Arrays.copyOfRange(back, 3 * 512, 4 * 512)).isEqualTo(a);

        // MCL on 512-byte blocks is 128.
        Cli.Outcome big = Cli.run(Cli.args("copy", target.ioPort, "-n", CliTarget.NQN_A, "--namespace-id", "1",
            "--sdlba", "1000", "--slbs", "0", "--blocks", "129"));
        assertThat(big.status()).as(big.toString()).isEqualTo(NvmeofCli.EXIT_IO_ERROR);
        assertThat(big.err()).contains("0x183");
        Cli.Outcome mismatch = Cli.run(Cli.args("copy", target.ioPort, "-n", CliTarget.NQN_A,
            "--sdlba", "1000", "--slbs", "0,1", "--blocks", "1"));
        assertThat(mismatch.status()).as(mismatch.toString()).isEqualTo(NvmeofCli.EXIT_USAGE);
    }

    @Test
    void shouldVerifyInRangeAndExitTwoBeyondTheNamespace() {
        Cli.Outcome ok = Cli.run(Cli.args("verify", target.ioPort, "-n", CliTarget.NQN_A, "--namespace-id", "2",
            "--start-block", "10", "--block-count", "100"));
        assertThat(ok.status()).as(ok.toString()).isZero();
        assertThat(ok.err()).startsWith("verify: Success (100 blocks from LBA 10");
        Cli.Outcome beyond = Cli.run(Cli.args("verify", target.ioPort, "-n", CliTarget.NQN_A, "--namespace-id", "2",
            "--start-block", Long.toString((16L << 20) / 4096 - 1), "--block-count", "2"));
        assertThat(beyond.status()).as(beyond.toString()).isEqualTo(NvmeofCli.EXIT_USAGE);
    }
}
