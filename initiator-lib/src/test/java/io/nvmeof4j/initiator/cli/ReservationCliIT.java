package io.nvmeof4j.initiator.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code resv-register}, {@code resv-acquire}, {@code resv-report}, {@code resv-release} from two host NQNs against
 * our target in this JVM: the holder writes, the other registrant's write fails with Reservation Conflict (exit 8),
 * the report shows both registrants and the holder, and after the release the other host writes again.
 */
class ReservationCliIT {
    private static final String HOST_B = "nqn.2014-08.org.nvmexpress:uuid:bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb";

    @TempDir
    Path dir;

    @Test
    void shouldRegisterAcquireReportAndReleaseWithNvmeCliOptionNames() throws Exception {
        try (CliTarget target = new CliTarget(dir)) {
            byte[] block = new byte[512];
            Arrays.fill(block, (byte) 0x5A);
            assertOk(run(target, CliTarget.HOST_A, "resv-register", "--nrkey", "0x1111", "--rrega", "0"),
                "NVME Reservation Register success");
            assertOk(run(target, HOST_B, "resv-register", "--nrkey", "0x2222"), "NVME Reservation Register success");
            assertOk(run(target, CliTarget.HOST_A, "resv-acquire", "--crkey", "0x1111", "--rtype", "1",
                "--racqa", "0"), "NVME Reservation Acquire success");

            Cli.Outcome report = run(target, HOST_B, "resv-report", "--eds", "--output-format", "json");
            assertThat(report.status()).as(report.toString()).isZero();
            JsonNode r = new ObjectMapper().readTree(report.out());
            assertThat(r.get("rtype").asInt()).as("Write Exclusive").isEqualTo(1);
            assertThat(r.get("regctl").asInt()).isEqualTo(2);
            List<String> holders = new ArrayList<>();
            List<String> keys = new ArrayList<>();
            for (JsonNode c : r.get("regctls")) {
                keys.add(c.get("rkey").asText());
                if (c.get("rcsts").asInt() == 1) {
                    holders.add(c.get("hostid").asText());
                }
            }
            assertThat(keys).containsExactlyInAnyOrder(Long.toString(0x1111), Long.toString(0x2222));
            assertThat(holders).containsExactly("aaaaaaaabbbbccccddddeeeeeeeeeeee");

            Cli.Outcome denied = Cli.runWithInput(block, args(target, HOST_B, "write", "--namespace-id", "1",
                "--start-block", "0", "--data-size", "512"));
            assertThat(denied.status()).as(denied.toString()).isEqualTo(NvmeofCli.EXIT_IO_ERROR);
            assertThat(denied.err()).contains("RESERVATION_CONFLICT");
            Cli.Outcome holder = Cli.runWithInput(block, args(target, CliTarget.HOST_A, "write", "--namespace-id",
                "1", "--start-block", "0", "--data-size", "512"));
            assertThat(holder.status()).as(holder.toString()).isZero();

            Cli.Outcome regular = run(target, CliTarget.HOST_A, "resv-report");
            assertThat(regular.status()).as(regular.toString()).isEqualTo(NvmeofCli.EXIT_IO_ERROR);
            assertThat(regular.err()).contains("HOST_IDENTIFIER_INCONSISTENT_FORMAT").contains("--eds");
            Cli.Outcome text = run(target, CliTarget.HOST_A, "resv-report", "--eds");
            assertThat(text.status()).as(text.toString()).isZero();
            assertThat(text.out()).contains("rtype     : 1").contains("regctl    : 2").contains("rkey    : 1111");

            assertOk(run(target, CliTarget.HOST_A, "resv-release", "--crkey", "0x1111", "--rtype", "1",
                "--rrela", "0"), "NVME Reservation Release success");
            Cli.Outcome after = Cli.runWithInput(block, args(target, HOST_B, "write", "--namespace-id", "1",
                "--start-block", "0", "--data-size", "512"));
            assertThat(after.status()).as("released: %s", after).isZero();

            Cli.Outcome wrongKey = run(target, HOST_B, "resv-register", "--rrega", "1", "--crkey", "0x9999");
            assertThat(wrongKey.status()).as(wrongKey.toString()).isEqualTo(NvmeofCli.EXIT_IO_ERROR);
            assertThat(wrongKey.err()).contains("RESERVATION_CONFLICT");
            assertOk(run(target, HOST_B, "resv-register", "--rrega", "1", "--crkey", "0x2222"),
                "NVME Reservation Register success");
            JsonNode one = new ObjectMapper().readTree(run(target, HOST_B, "resv-report", "--eds",
                "--output-format", "json").out());
            assertThat(one.get("regctl").asInt()).as("host B unregistered").isEqualTo(1);

            Cli.Outcome bad = run(target, HOST_B, "resv-acquire", "--crkey", "1", "--rtype", "7");
            assertThat(bad.status()).isEqualTo(NvmeofCli.EXIT_USAGE);
            assertThat(bad.err()).contains("--rtype 7 outside 0..6");
        }
    }

    private static void assertOk(Cli.Outcome r, String line) {
        assertThat(r.status()).as(r.toString()).isZero();
        assertThat(r.out()).contains(line);
    }

    private static Cli.Outcome run(CliTarget target, String host, String... rest) {
        return Cli.run(args(target, host, rest));
    }

    private static String[] args(CliTarget target, String host, String... rest) {
        List<String> a = new ArrayList<>(List.of(rest[0], "-t", "tcp", "-a", "127.0.0.1", "-s",
            Integer.toString(target.ioPort), "-q", host, "-n", CliTarget.NQN_A));
        a.addAll(Arrays.asList(rest).subList(1, rest.length));
        return a.toArray(new String[0]);
    }
}
