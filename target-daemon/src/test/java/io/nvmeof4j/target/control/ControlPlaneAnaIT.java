package io.nvmeof4j.target.control;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.nvmeof4j.protocol.ana.AnaState;
import io.nvmeof4j.protocol.spi.AddressFamily;
import io.nvmeof4j.protocol.spi.TransportType;
import io.nvmeof4j.target.config.TargetConfig;
import io.nvmeof4j.target.daemon.TargetDaemon;
import io.nvmeof4j.target.management.ManagementApi;
import io.nvmeof4j.target.management.ManagementException;
import io.nvmeof4j.target.model.AnaStates;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * ANA states changed live (management API, control plane) are written to the port's {@code ana_groups} before they
 * are answered, survive a restart, and are refused with nothing changed when the file cannot be written.
 */
class ControlPlaneAnaIT {
    private static final String NQN = "nqn.2014-08.org.example:ha";
    private static final ObjectMapper JSON = new ObjectMapper();

    @TempDir
    Path dir;

    private Path config() throws Exception {
        Path file = dir.resolve("conf").resolve("target.json");
        Files.createDirectories(file.getParent());
        Files.writeString(file, """
            {"nvmeof4j": {"reactors": 1, "buffer_pool_mib": 4, "http": "off", "shutdown_timeout_ms": 1000,
                          "ram_budget_mib": 64},
             "ports": [{"portid": 1, "addr": {"trtype": "tcp", "adrfam": "ipv4", "traddr": "127.0.0.1",
                        "trsvcid": "0"}, "ana_groups": [{"grpid": 2, "ana": {"state": "non-optimized"}}],
                        "subsystems": ["%s"]}],
             "subsystems": [{"nqn": "%s", "attr": {"allow_any_host": "1", "cntlid_min": "100",
                             "cntlid_max": "199"},
                             "namespaces": [{"nsid": 1, "device": {"backend": "ram", "size": "1M"}},
                                            {"nsid": 2, "ana_grpid": 2,
                                             "device": {"backend": "ram", "size": "1M"}}]}]}
            """.formatted(NQN, NQN));
        return file;
    }

    @Test
    void shouldPersistAnaStatesSetThroughTheManagementApi() throws Exception {
        Path file = config();
        try (TargetDaemon daemon = TargetDaemon.start(TargetConfig.load(file))) {
            ManagementApi api = new ManagementApi(daemon, JSON);
            JsonNode answer = api.setAnaState("1", "2", JSON.readTree("{\"state\": \"inaccessible\"}"));
            assertThat(answer.get("previous_state").asText()).isEqualTo("non-optimized");
            assertThat(daemon.model().port(1).ana().state(2)).isEqualTo(AnaState.INACCESSIBLE);
            assertThat(daemon.model().port(1).ana().changeCount(2)).isEqualTo(1);

            JsonNode written = JSON.readTree(file.toFile());
            assertThat(written.at("/ports/0/ana_groups").toString())
                .isEqualTo("[{\"grpid\":2,\"ana\":{\"state\":\"inaccessible\"}}]");
            assertThat(written.at("/subsystems/0/namespaces/1/ana_grpid").asInt()).isEqualTo(2);
            assertThat(written.at("/subsystems/0/attr/cntlid_min").asText()).isEqualTo("100");
            assertThat(TargetConfig.load(file).ports().get(0).anaGroups()).isEqualTo(Map.of(2, AnaState.INACCESSIBLE));

            // Bad input: the API's 400/404, nothing written.
            String before = Files.readString(file);
            assertThatThrownBy(() -> api.setAnaState("1", "129", JSON.readTree("{\"state\": \"optimized\"}")))
                .isInstanceOfSatisfying(ManagementException.class, e -> assertThat(e.httpStatus()).isEqualTo(400));
            assertThatThrownBy(() -> api.setAnaState("7", "1", JSON.readTree("{\"state\": \"optimized\"}")))
                .isInstanceOfSatisfying(ManagementException.class, e -> assertThat(e.httpStatus()).isEqualTo(404));
            assertThatThrownBy(() -> api.setAnaState("1", "1", JSON.readTree("{\"state\": \"sideways\"}")))
                .isInstanceOfSatisfying(ManagementException.class, e -> assertThat(e.httpStatus()).isEqualTo(400));
            assertThat(Files.readString(file)).isEqualTo(before);

            // A listener change on the port replaces the port object: the states must stay as they are.
            daemon.controlPlane().createSubsystem("test", "nqn.2014-08.org.example:other", null, null, true, 1,
                0xFFEF);
            daemon.controlPlane().addListener("test", "nqn.2014-08.org.example:other", TransportType.TCP,
                AddressFamily.IPV4, "127.0.0.1", daemon.model().port(1).address().trsvcid());
            assertThat(daemon.model().port(1).exports("nqn.2014-08.org.example:other")).isTrue();
            assertThat(daemon.model().port(1).ana().state(2)).isEqualTo(AnaState.INACCESSIBLE);
        }
        // Restarted from the file: the port serves the state set live.
        try (TargetDaemon daemon = TargetDaemon.start(TargetConfig.load(file))) {
            assertThat(daemon.model().port(1).ana().state(2)).isEqualTo(AnaState.INACCESSIBLE);
            assertThat(daemon.model().port(1).ana().state(AnaStates.DEFAULT_GROUP)).isEqualTo(AnaState.OPTIMIZED);
        }
    }

    @Test
    void shouldRefuseAnAnaChangeTheFileCannotTakeAndKeepServingTheOldState() throws Exception {
        Path file = config();
        try (TargetDaemon daemon = TargetDaemon.start(TargetConfig.load(file))) {
            String before = Files.readString(file);
            Path away = dir.resolve("conf.away");
            Files.move(dir.resolve("conf"), away);
            try {
                assertThatThrownBy(() -> daemon.controlPlane().setAnaStates("test", 1,
                    Map.of(1, AnaState.INACCESSIBLE)))
                    .isInstanceOfSatisfying(ControlException.class,
                        e -> assertThat(e.kind()).isEqualTo(ControlException.Kind.IO));
            } finally {
                Files.move(away, dir.resolve("conf"));
            }
            assertThat(Files.readString(file)).isEqualTo(before);
            // Never applied: no state change, no change count, so no host got an ANA change event.
            assertThat(daemon.model().port(1).ana().state(1)).isEqualTo(AnaState.OPTIMIZED);
            assertThat(daemon.model().port(1).ana().changeCount()).isZero();
            assertThat(daemon.controlPlane().configuration().ports().get(0).anaGroups())
                .isEqualTo(Map.of(2, AnaState.NON_OPTIMIZED));
        }
    }
}
