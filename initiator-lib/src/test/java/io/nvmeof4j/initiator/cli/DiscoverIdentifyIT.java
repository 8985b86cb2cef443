package io.nvmeof4j.initiator.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/** {@code nvmeof discover} and {@code nvmeof identify} against our target in this JVM. */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class DiscoverIdentifyIT {
    private CliTarget target;

    @BeforeAll
    void start(@TempDir Path dir) throws Exception {
        target = new CliTarget(dir);
    }

    @AfterAll
    void stop() {
        target.close();
    }

    @Test
    void shouldListTheSubsystemsAsNvmeCliDoes() {
        Cli.Outcome r = Cli.run(Cli.args("discover", target.discoveryPort));
        assertThat(r.status()).as(r.toString()).isZero();
        assertThat(r.out()).startsWith("Discovery Log Number of Records ")
            .contains("=====Discovery Log Entry 0======")
            .contains("trtype:  tcp\n")
            .contains("adrfam:  ipv4\n")
            .contains("subtype: nvme subsystem\n")
            .contains("subnqn:  " + CliTarget.NQN_A + "\n")
            .contains("trsvcid: " + target.ioPort + "\n")
            .contains("traddr:  127.0.0.1\n")
            .contains("portid:  1\n")
            .contains("treq:    ");
        assertThat(r.err()).isEmpty();
    }

    @Test
    void shouldPrintTheDiscoveryLogAsJson() throws Exception {
        Cli.Outcome r = Cli.run(Cli.args("discover", target.discoveryPort, "--json"));
        assertThat(r.status()).as(r.toString()).isZero();
        JsonNode records = new ObjectMapper().readTree(r.out()).get("records");
        List<String> nqns = new ArrayList<>();
        for (JsonNode e : records) {
            nqns.add(e.get("subnqn").asText());
            if (e.get("subnqn").asText().equals(CliTarget.NQN_A)) {
                assertThat(e.get("trtype").asText()).isEqualTo("tcp");
                assertThat(e.get("trsvcid").asText()).isEqualTo(Integer.toString(target.ioPort));
                assertThat(e.get("subtype").asText()).isEqualTo("nvme subsystem");
            }
        }
        assertThat(nqns).contains(CliTarget.NQN_A);
    }

    @Test
    void shouldIdentifyTheControllerAndItsNamespaces() {
        Cli.Outcome r = Cli.run(Cli.args("identify", target.ioPort, "-n", CliTarget.NQN_A));
        assertThat(r.status()).as(r.toString()).isZero();
        assertThat(r.out())
            .contains("sn        : " + CliTarget.SERIAL_A + "\n")
            .contains("mn        : " + CliTarget.MODEL_A + "\n")
            .contains("subnqn    : " + CliTarget.NQN_A + "\n")
            .contains("Namespace 1\n")
            .contains("  nsze      : 131072 blocks (67108864 bytes, 64.00 MiB)\n")
            .contains("  block size: 512\n")
            .contains("Namespace 2\n")
            .contains("  nsze      : 4096 blocks (16777216 bytes, 16.00 MiB)\n")
            .contains("  block size: 4096\n");
    }

    @Test
    void shouldIdentifyAsJson() throws Exception {
        Cli.Outcome r = Cli.run(Cli.args("identify", target.ioPort, "-n", CliTarget.NQN_A, "--json"));
        assertThat(r.status()).as(r.toString()).isZero();
        JsonNode root = new ObjectMapper().readTree(r.out());
        assertThat(root.get("controller").get("sn").asText()).isEqualTo(CliTarget.SERIAL_A);
        assertThat(root.get("controller").get("mn").asText()).isEqualTo(CliTarget.MODEL_A);
        JsonNode namespaces = root.get("namespaces");
        assertThat(namespaces).hasSize(2);
        assertThat(namespaces.get(0).get("nsid").asInt()).isEqualTo(1);
        assertThat(namespaces.get(0).get("size_bytes").asLong()).isEqualTo(64L << 20);
        assertThat(namespaces.get(1).get("block_size").asInt()).isEqualTo(4096);
    }

    @Test
    void shouldShowEachSubcommandsHelpWithoutConnecting() {
        for (String sub : new String[] {"discover", "identify", "read", "write", "perf"}) {
            Cli.Outcome r = Cli.run(sub, "--help");
            assertThat(r.status()).as(sub).isZero();
            assertThat(r.out()).as(sub).startsWith("Usage: nvmeof " + sub).contains("-a, --traddr=TRADDR")
                .contains("-n, --nqn=SUBNQN").contains("-s, --trsvcid=TRSVCID");
        }
        assertThat(Cli.run("read", "--help").out()).contains("--start-block=LBA").contains("-z, --data-size=BYTES")
            .contains("-d, --data=FILE").contains("--namespace-id=NSID");
        assertThat(Cli.run("write", "--help").out()).contains("-f, --force-unit-access");
    }
}
