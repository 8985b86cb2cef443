package io.nvmeof4j.target.config;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;

class ConfigWriterTest {
    @TempDir
    Path dir;

    @Test
    void shouldParseWhatItWritesToTheSameConfiguration() throws Exception {
        Files.writeString(dir.resolve("ns.img"), "x".repeat(8192));
        String json = """
            {"nvmeof4j": {"reactors": 1, "buffer_pool_mib": 4, "http": "off", "allowed_paths": ["."]},
             "hosts": [{"nqn": "nqn.2014-08.org.example:host1"}],
             "ports": [{"portid": 3, "addr": {"trtype": "tcp", "adrfam": "ipv4", "traddr": "127.0.0.1",
                        "trsvcid": "4420"}, "param": {"inline_data_size": "8192"}, "ana_groups": [{"grpid": 1}],
                        "subsystems": ["nqn.2014-08.org.example:a"]},
                       {"portid": 7, "addr": {"trtype": "tcp", "adrfam": "ipv6", "traddr": "::1", "trsvcid": "0"},
                        "subsystems": ["nqn.2014-08.org.nvmexpress.discovery"]}],
             "subsystems": [
               {"nqn": "nqn.2014-08.org.example:a", "attr": {"allow_any_host": "0", "serial": "S1", "model": "M",
                "cntlid_min": "5", "cntlid_max": "9", "qid_max": "4"},
                "allowed_hosts": ["nqn.2014-08.org.example:host1"],
                "namespaces": [{"nsid": 1, "device": {"backend": "ram", "size": "16M", "block_size": 4096}},
                               {"nsid": 9, "enable": 0, "ana_grpid": 0,
                                "device": {"path": "ns.img", "buffered_io": 1}},
                               {"nsid": 1024, "device": {"backend": "null", "size": "1T"}}]},
               {"nqn": "nqn.2014-08.org.example:b", "attr": {"allow_any_host": "1"}}]}
            """;
        TargetConfig first = TargetConfig.parse(json, dir);
        JsonNode written = ConfigWriter.write(first, new ObjectMapper().readTree(json));
        TargetConfig second = TargetConfig.parse(ConfigWriter.text(written), dir);

        assertThat(second.hosts()).isEqualTo(first.hosts());
        assertThat(second.ports()).isEqualTo(first.ports());
        assertThat(second.subsystems()).isEqualTo(first.subsystems());
        assertThat(second.daemon()).isEqualTo(first.daemon());
        // What the model has no field for is kept: the settings object, nvmetcli's keys.
        assertThat(written.get("nvmeof4j")).isEqualTo(new ObjectMapper().readTree(json).get("nvmeof4j"));
        assertThat(written.at("/ports/0/ana_groups/0/grpid").asInt()).isEqualTo(1);
        assertThat(written.at("/subsystems/0/namespaces/1/ana_grpid").isNumber()).isTrue();
        // Derived values are written out, so a changed default never changes a running target's identity.
        assertThat(written.at("/subsystems/1/attr/serial").asText()).isEqualTo(first.subsystems().get(1).serial());
        assertThat(written.at("/subsystems/0/namespaces/0/device/uuid").asText())
            .isEqualTo(first.subsystems().get(0).namespaces().get(0).uuid().toString());
        // And writing the second again gives the same text: the format is stable.
        assertThat(ConfigWriter.text(ConfigWriter.write(second, written))).isEqualTo(ConfigWriter.text(written));
    }
}
