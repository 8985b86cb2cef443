package io.nvmeof4j.target.control;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.nvmeof4j.protocol.ana.AnaState;
import io.nvmeof4j.target.config.PortConfig;
import io.nvmeof4j.target.config.TargetConfig;
import io.nvmeof4j.target.control.rpc.SpdkJsonConfig;
import io.nvmeof4j.target.daemon.TargetDaemon;
import io.nvmeof4j.target.model.Port;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * SPDK's ANA methods over the JSON-RPC socket: {@code nvmf_subsystem_listener_set_ana_state}, the {@code ana_states}
 * of {@code nvmf_subsystem_get_listeners}, {@code ana_reporting} and {@code anagrpid}; persisted like every change,
 * refused with SPDK's codes.
 */
class SpdkRpcAnaIT extends RpcDaemonFixture {
    private static final ObjectMapper JSON = new ObjectMapper();

    private static String address(int port) {
        return "{\"trtype\": \"TCP\", \"adrfam\": \"IPv4\", \"traddr\": \"127.0.0.1\", \"trsvcid\": \"" + port + "\"}";
    }

    private static String setState(int port, String state, Integer group) {
        return "{\"nqn\": \"" + NQN + "\", \"listen_address\": " + address(port) + ", \"ana_state\": \"" + state
            + "\"" + (group == null ? "" : ", \"anagrpid\": " + group) + "}";
    }

    private Port port(int trsvcid) {
        return daemon.model().ports().stream().filter(p -> p.address().trsvcid().equals(Integer.toString(trsvcid)))
            .findFirst().orElseThrow();
    }

    /** {@code ana_states} of the listener at {@code port} as group → SPDK state name. */
    private static Map<Integer, String> listenerStates(RpcClient rpc, int port) throws IOException {
        Map<Integer, String> states = new java.util.TreeMap<>();
        for (JsonNode l : rpc.result("nvmf_subsystem_get_listeners", "{\"nqn\": \"" + NQN + "\"}")) {
            if (l.at("/address/trsvcid").asText().equals(Integer.toString(port))) {
                l.get("ana_states").forEach(s -> states.put(s.get("ana_group").asInt(), s.get("ana_state").asText()));
            }
        }
        return states;
    }

    @Test
    void shouldSetListenerAnaStatesLiveAndPersistThem() throws Exception {
        int a = freePort();
        int b = freePort();
        try (RpcClient rpc = start()) {
            rpc.result("bdev_malloc_create", "{\"name\": \"M0\", \"num_blocks\": 256, \"block_size\": 4096}");
            rpc.result("bdev_malloc_create", "{\"name\": \"M1\", \"num_blocks\": 256, \"block_size\": 4096}");
            assertThat(rpc.result("nvmf_create_subsystem", "{\"nqn\": \"" + NQN + "\", \"allow_any_host\": true, "
                + "\"ana_reporting\": true, \"min_cntlid\": 40, \"max_cntlid\": 99}").asBoolean()).isTrue();
            // The range applies live, not only after a restart (controller IDs come from the model's subsystem).
            assertThat(daemon.model().subsystem(NQN).cntlidMin()).isEqualTo(40);
            assertThat(daemon.model().subsystem(NQN).cntlidMax()).isEqualTo(99);
            rpc.result("nvmf_subsystem_add_listener", "{\"nqn\": \"" + NQN + "\", \"listen_address\": " + address(a)
                + "}");
            assertThat(rpc.result("nvmf_subsystem_add_ns", "{\"nqn\": \"" + NQN + "\", \"namespace\": "
                + "{\"bdev_name\": \"M0\"}}").asInt()).isEqualTo(1);
            assertThat(rpc.result("nvmf_subsystem_add_ns", "{\"nqn\": \"" + NQN + "\", \"namespace\": "
                + "{\"bdev_name\": \"M1\", \"anagrpid\": 2}}").asInt()).isEqualTo(2);
            assertThat(daemon.model().subsystem(NQN).namespace(2).anaGroupId()).isEqualTo(2);
            assertThat(rpc.result("nvmf_get_subsystems", "{\"nqn\": \"" + NQN + "\"}").at("/0/namespaces/1/anagrpid")
                .asInt()).isEqualTo(2);
            // As nvmet: a group not configured on a port is inaccessible there until its state is set.
            assertThat(listenerStates(rpc, a)).isEqualTo(Map.of(1, "optimized", 2, "inaccessible"));

            assertThat(rpc.result("nvmf_subsystem_listener_set_ana_state", setState(a, "optimized", 2)).asBoolean())
                .isTrue();
            assertThat(port(a).ana().state(2)).isEqualTo(AnaState.OPTIMIZED);
            // Without anagrpid: every group of the subsystem's namespaces on that listener.
            assertThat(rpc.result("nvmf_subsystem_listener_set_ana_state", setState(a, "Non_Optimized", null))
                .asBoolean()).isTrue();
            assertThat(listenerStates(rpc, a)).isEqualTo(Map.of(1, "non_optimized", 2, "non_optimized"));
            // A listener added with ana_state starts in it.
            rpc.result("nvmf_subsystem_add_listener", "{\"nqn\": \"" + NQN + "\", \"listen_address\": " + address(b)
                + ", \"ana_state\": \"inaccessible\"}");
            assertThat(listenerStates(rpc, b)).isEqualTo(Map.of(1, "inaccessible", 2, "inaccessible"));
            assertThat(port(b).ana().state(1)).isEqualTo(AnaState.INACCESSIBLE);

            // save_config carries the states (SPDK's listeners start optimized) and the groups.
            JsonNode saved = rpc.result("save_config", null);
            assertThat(saved.toString()).contains("\"ana_reporting\":true", "\"anagrpid\":2");
            long setCalls = 0;
            for (JsonNode c : saved.at("/subsystems/1/config")) {
                if (c.get("method").asText().equals("nvmf_subsystem_listener_set_ana_state")) {
                    setCalls++;
                }
            }
            assertThat(setCalls).isEqualTo(4);
            Files.writeString(dir.resolve("spdk.json"), saved.toString());
        }
        // Persisted: the file's ports carry the groups' states.
        TargetConfig file = TargetConfig.load(config());
        PortConfig pa = file.ports().stream().filter(p -> p.address().trsvcid().equals(Integer.toString(a)))
            .findFirst().orElseThrow();
        assertThat(pa.anaGroups()).isEqualTo(Map.of(1, AnaState.NON_OPTIMIZED, 2, AnaState.NON_OPTIMIZED));
        daemon.close();
        daemon = TargetDaemon.start(TargetConfig.load(config()));
        assertThat(port(a).ana().state(2)).isEqualTo(AnaState.NON_OPTIMIZED);
        assertThat(port(b).ana().state(2)).isEqualTo(AnaState.INACCESSIBLE);
        daemon.close();
        // And the SPDK-shaped save replays to the same states.
        daemon = TargetDaemon.start(TargetConfig.parse(SpdkJsonConfig.BASE_JSON.replace("8009",
            Integer.toString(freePort())), dir));
        SpdkJsonConfig.replay(daemon, dir.resolve("spdk.json"));
        assertThat(port(a).ana().state(1)).isEqualTo(AnaState.NON_OPTIMIZED);
        assertThat(port(b).ana().state(2)).isEqualTo(AnaState.INACCESSIBLE);
    }

    @Test
    void shouldRefuseBadAnaChangesWithSpdkCodesAndChangeNothing() throws Exception {
        int a = freePort();
        try (RpcClient rpc = start()) {
            rpc.result("nvmf_create_subsystem", "{\"nqn\": \"" + NQN + "\", \"ana_reporting\": false}");
            rpc.result("nvmf_subsystem_add_listener", "{\"nqn\": \"" + NQN + "\", \"listen_address\": " + address(a)
                + "}");
            String before = Files.readString(config());

            // SPDK takes optimized, non_optimized and inaccessible only: -32602 Invalid parameters.
            assertThat(rpc.error("nvmf_subsystem_listener_set_ana_state", setState(a, "persistent_loss", null)))
                .isEqualTo(-32602);
            assertThat(rpc.error("nvmf_subsystem_listener_set_ana_state", setState(a, "sideways", 1)))
                .isEqualTo(-32602);
            assertThat(rpc.error("nvmf_subsystem_listener_set_ana_state", "{\"nqn\": \"" + NQN
                + "\", \"listen_address\": " + address(a) + "}")).isEqualTo(-32602);
            assertThat(rpc.error("nvmf_subsystem_listener_set_ana_state", "{\"nqn\": \"" + NQN
                + "\", \"listen_address\": " + address(a) + ", \"ana_state\": \"optimized\", \"colour\": 1}"))
                .isEqualTo(-32602);
            assertThat(rpc.error("nvmf_subsystem_listener_set_ana_state", setState(a, "optimized", -1)))
                .isEqualTo(-32602);
            JsonNode noSubsystem = rpc.call("nvmf_subsystem_listener_set_ana_state",
                setState(a, "optimized", 1).replace(NQN, "nqn.2016-06.io.spdk:none"));
            assertThat(noSubsystem.at("/error/code").asInt()).isEqualTo(-32602);
            assertThat(noSubsystem.at("/error/message").asText())
                .isEqualTo("Unable to find subsystem with NQN nqn.2016-06.io.spdk:none");
            // No such listener, a group above the maximum: SPDK's "error setting ANA state: -22" (-32603).
            int other = freePort();
            JsonNode noListener = rpc.call("nvmf_subsystem_listener_set_ana_state", setState(other, "optimized", 1));
            assertThat(noListener.at("/error/code").asInt()).isEqualTo(-32603);
            assertThat(noListener.at("/error/message").asText()).startsWith("error setting ANA state: -22")
                .contains("127.0.0.1:" + other);
            assertThat(rpc.error("nvmf_subsystem_listener_set_ana_state", setState(a, "inaccessible", 129)))
                .isEqualTo(-32603);
            assertThat(rpc.error("nvmf_subsystem_add_listener", "{\"nqn\": \"" + NQN + "\", \"listen_address\": "
                + address(other) + ", \"ana_state\": \"bogus\"}")).isEqualTo(-32602);

            assertThat(Files.readString(config())).isEqualTo(before);
            assertThat(port(a).ana().state(1)).isEqualTo(AnaState.OPTIMIZED);
            assertThat(port(a).ana().changeCount()).isZero();
            assertThat(daemon.model().ports()).hasSize(2);

            // The file cannot be written: -32603, and the state is not changed.
            Path away = dir.resolve("conf.away");
            Files.move(dir.resolve("conf"), away);
            try {
                assertThat(rpc.error("nvmf_subsystem_listener_set_ana_state", setState(a, "inaccessible", 1)))
                    .isEqualTo(-32603);
            } finally {
                Files.move(away, dir.resolve("conf"));
            }
            assertThat(port(a).ana().state(1)).isEqualTo(AnaState.OPTIMIZED);
            assertThat(Files.readString(config())).isEqualTo(before);
            assertThat(JSON.readTree(Files.readString(config())).toString()).doesNotContain("ana_groups");
        }
    }
}
