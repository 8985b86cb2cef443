package io.nvmeof4j.target.control;

import com.fasterxml.jackson.databind.JsonNode;
import io.nvmeof4j.target.control.rpc.RpcServer;
import io.nvmeof4j.target.backend.QosLimits;
import io.nvmeof4j.target.config.SubsystemConfig;
import io.nvmeof4j.target.config.TargetConfig;
import io.nvmeof4j.target.daemon.TargetDaemon;
import io.nvmeof4j.target.model.Port;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The SPDK JSON-RPC socket of a running daemon, driven by a client sending the bytes rpc.py sends: every change is
 * live (ports accept connections), persisted (the file parses to it; a restarted daemon serves it), refused changes
 * leave the file and the target as they were, and malformed requests get SPDK's codes.
 */
class SpdkRpcIT extends RpcDaemonFixture {
    private static final String HOST = "nqn.2014-08.org.nvmexpress:uuid:00000000-0000-0000-0000-000000000001";

    private static boolean accepts(int port) {
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress("127.0.0.1", port), 2_000);
            return true;
        } catch (IOException e) {
            return false;
        }
    }

    private static String listener(int port) {
        return "{\"nqn\": \"" + NQN + "\", \"listen_address\": {\"trtype\": \"tcp\", \"adrfam\": \"ipv4\", "
            + "\"traddr\": \"127.0.0.1\", \"trsvcid\": \"" + port + "\"}}";
    }

    @Test
    void shouldServeTheSocketToItsOwnerOnly() throws Exception {
        try (RpcClient rpc = start()) {
            assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(daemon.rpcSocket())))
                .isEqualTo("rw-------");
            assertThat(Files.getOwner(daemon.rpcSocket()).getName()).isEqualTo(System.getProperty("user.name"));
            assertThat(rpc.result("spdk_get_version", null).at("/fields/major").asInt()).isEqualTo(24);
            assertThat(rpc.result("framework_wait_init", null).asBoolean()).isTrue();
            assertThat(rpc.result("rpc_get_methods", null).toString()).contains("\"nvmf_subsystem_add_ns\"",
                "\"bdev_malloc_create\"", "\"save_config\"");
        }
        daemon.close();
        assertThat(daemon.rpcSocket()).doesNotExist();
    }

    @Test
    void shouldStartWithNoPortAsNvmfTgtDoesAndServeWhatRpcAdds() throws Exception {
        Path file = dir.resolve("conf").resolve("target.json");
        Files.createDirectories(file.getParent());
        Files.writeString(file, """
            {"nvmeof4j": {"reactors": 1, "buffer_pool_mib": 4, "http": "off", "shutdown_timeout_ms": 1000,
                          "ram_budget_mib": 64, "rpc_socket": "../rpc.sock"}}
            """);
        int port = freePort();
        try (RpcClient rpc = start()) {
            assertThat(daemon.listenAddresses()).isEmpty();
            // What benchmarks/run-spdk-comparison.sh sends SPDK's nvmf_tgt through scripts/rpc.py.
            assertThat(rpc.result("nvmf_create_transport", "{\"trtype\": \"TCP\"}").asBoolean()).isTrue();
            assertThat(rpc.result("bdev_malloc_create", "{\"name\": \"Malloc0\", \"num_blocks\": 1024, "
                + "\"block_size\": 4096}").asText()).isEqualTo("Malloc0");
            assertThat(rpc.result("nvmf_create_subsystem", "{\"nqn\": \"" + NQN + "\", \"allow_any_host\": true, "
                + "\"serial_number\": \"SPDK00000000000001\"}").asBoolean()).isTrue();
            assertThat(rpc.result("nvmf_subsystem_add_ns", "{\"nqn\": \"" + NQN + "\", \"namespace\": "
                + "{\"bdev_name\": \"Malloc0\"}}").asInt()).isEqualTo(1);
            assertThat(accepts(port)).isFalse();
            assertThat(rpc.result("nvmf_subsystem_add_listener", "{\"nqn\": \"" + NQN + "\", \"listen_address\": "
                + "{\"trtype\": \"tcp\", \"adrfam\": \"ipv4\", \"traddr\": \"127.0.0.1\", \"trsvcid\": \""
                + port + "\"}}").asBoolean()).isTrue();
            assertThat(accepts(port)).isTrue();
            assertThat(daemon.model().subsystem(NQN).namespace(1).blockCount()).isEqualTo(1024);
        }
        daemon.close();
        // The file now has the port: a restart serves it without any call.
        daemon = TargetDaemon.start(TargetConfig.load(file));
        assertThat(accepts(port)).isTrue();
    }

    @Test
    void shouldCreateServeAndPersistASubsystemLive() throws Exception {
        int port = freePort();
        try (RpcClient rpc = start()) {
            assertThat(rpc.result("nvmf_create_transport", "{\"trtype\": \"TCP\"}").asBoolean()).isTrue();
            assertThat(rpc.result("bdev_malloc_create", "{\"num_blocks\": 16384, \"block_size\": 512}").asText())
                .isEqualTo("Malloc0");
            assertThat(rpc.result("bdev_null_create", "{\"name\": \"Null0\", \"num_blocks\": 1024, "
                + "\"block_size\": 4096}").asText()).isEqualTo("Null0");
            assertThat(rpc.result("nvmf_create_subsystem", "{\"nqn\": \"" + NQN + "\", \"serial_number\": "
                + "\"SPDK00000000000001\", \"model_number\": \"SPDK_Controller1\", \"min_cntlid\": 10, "
                + "\"max_cntlid\": 20}").asBoolean()).isTrue();
            assertThat(rpc.result("nvmf_subsystem_add_listener", listener(port)).asBoolean()).isTrue();
            assertThat(accepts(port)).isTrue();
            assertThat(rpc.result("nvmf_subsystem_add_ns", "{\"nqn\": \"" + NQN + "\", \"namespace\": "
                + "{\"bdev_name\": \"Malloc0\"}}").asInt()).isEqualTo(1);
            assertThat(rpc.result("nvmf_subsystem_add_ns", "{\"nqn\": \"" + NQN + "\", \"namespace\": "
                + "{\"bdev_name\": \"Null0\", \"nsid\": 7}}").asInt()).isEqualTo(7);
            assertThat(rpc.result("nvmf_subsystem_add_host", "{\"nqn\": \"" + NQN + "\", \"host\": \"" + HOST
                + "\"}").asBoolean()).isTrue();

            JsonNode subsystems = rpc.result("nvmf_get_subsystems", null);
            assertThat(subsystems.size()).isEqualTo(2);
            JsonNode s = subsystems.get(1);
            assertThat(s.get("nqn").asText()).isEqualTo(NQN);
            assertThat(s.get("subtype").asText()).isEqualTo("NVMe");
            assertThat(s.get("serial_number").asText()).isEqualTo("SPDK00000000000001");
            assertThat(s.at("/listen_addresses/0/trsvcid").asText()).isEqualTo(Integer.toString(port));
            assertThat(s.at("/listen_addresses/0/trtype").asText()).isEqualTo("TCP");
            assertThat(s.at("/hosts/0/nqn").asText()).isEqualTo(HOST);
            assertThat(s.at("/namespaces/0/bdev_name").asText()).isEqualTo("Malloc0");
            assertThat(s.at("/namespaces/1/nsid").asInt()).isEqualTo(7);
            assertThat(rpc.result("bdev_get_bdevs", "{\"name\": \"Malloc0\"}").at("/0/claimed").asBoolean()).isTrue();
            assertThat(rpc.result("nvmf_subsystem_get_listeners", "{\"nqn\": \"" + NQN + "\"}").size()).isEqualTo(1);
            assertThat(daemon.model().subsystem(NQN).namespace(1).blockCount()).isEqualTo(16384);
        }
        // Persisted: the file parses to it, and a new daemon from the file serves it.
        TargetConfig saved = TargetConfig.load(config());
        SubsystemConfig sc = saved.subsystem(NQN).orElseThrow();
        assertThat(sc.serial()).isEqualTo("SPDK00000000000001");
        assertThat(sc.cntlidMin()).isEqualTo(10);
        assertThat(sc.allowedHosts()).containsExactly(HOST);
        assertThat(sc.namespaces()).extracting(n -> n.nsid()).containsExactly(1, 7);
        assertThat(saved.ports()).anySatisfy(p -> assertThat(p.address().trsvcid()).isEqualTo(Integer.toString(port)));
        daemon.close();
        assertThat(accepts(port)).isFalse();
        daemon = TargetDaemon.start(TargetConfig.load(config()));
        assertThat(daemon.model().subsystem(NQN).namespace(7).blockSize()).isEqualTo(4096);
        assertThat(daemon.model().subsystem(NQN).isHostAllowed(HOST)).isTrue();
        assertThat(accepts(port)).isTrue();
        // After the restart the namespaces have their bdevs again, under the names they were created with
        // ("nvmeof4j": {"rpc_bdevs": [...]} in the file).
        daemon.startRpc(daemon.controlPlane().rpcSocketSetting().orElseThrow());
        try (RpcClient rpc = new RpcClient(daemon.rpcSocket())) {
            assertThat(rpc.result("nvmf_get_subsystems", "{\"nqn\": \"" + NQN + "\"}").at("/0/namespaces/0/bdev_name")
                .asText()).isEqualTo("Malloc0");
            assertThat(rpc.error("bdev_malloc_delete", "{\"name\": \"Malloc0\"}")).isEqualTo(-16);
            rpc.result("nvmf_subsystem_remove_ns", "{\"nqn\": \"" + NQN + "\", \"nsid\": 1}");
            assertThat(rpc.result("bdev_malloc_delete", "{\"name\": \"Malloc0\"}").asBoolean()).isTrue();
            assertThat(rpc.result("bdev_get_bdevs", null).get(0).get("name").asText()).isEqualTo("Null0");
            assertThat(rpc.result("bdev_get_bdevs", null).get(0).get("claimed").asBoolean()).isTrue();
        }
    }

    @Test
    void shouldStartFromWhatSaveConfigWrites() throws Exception {
        int port = freePort();
        JsonNode saved;
        try (RpcClient rpc = start()) {
            rpc.result("bdev_malloc_create", "{\"name\": \"M\", \"num_blocks\": 4096, \"block_size\": 4096}");
            rpc.result("bdev_null_create", "{\"name\": \"Spare\", \"num_blocks\": 8, \"block_size\": 512}");
            rpc.result("nvmf_create_subsystem", "{\"nqn\": \"" + NQN + "\", \"serial_number\": \"SN7\"}");
            rpc.result("nvmf_subsystem_add_listener", listener(port));
            rpc.result("nvmf_subsystem_add_host", "{\"nqn\": \"" + NQN + "\", \"host\": \"" + HOST + "\"}");
            rpc.result("nvmf_subsystem_add_ns", "{\"nqn\": \"" + NQN + "\", \"namespace\": {\"bdev_name\": \"M\", "
                + "\"nsid\": 3}}");
            rpc.result("nvmf_discovery_add_referral", "{\"address\": {\"trtype\": \"tcp\", \"adrfam\": \"ipv4\", "
                + "\"traddr\": \"127.0.0.6\", \"trsvcid\": \"8009\"}}");
            saved = rpc.result("save_config", null);
        }
        assertThat(saved.at("/subsystems/0/subsystem").asText()).isEqualTo("bdev");
        assertThat(saved.at("/subsystems/1/config/0/method").asText()).isEqualTo("nvmf_create_transport");
        daemon.close();
        Path spdk = dir.resolve("spdk.json");
        Files.writeString(spdk, saved.toString());
        daemon = TargetDaemon.start(TargetConfig.parse(io.nvmeof4j.target.control.rpc.SpdkJsonConfig.BASE_JSON
            .replace("8009", Integer.toString(freePort())), dir));
        assertThat(io.nvmeof4j.target.control.rpc.SpdkJsonConfig.replay(daemon, spdk)).isEqualTo(8);
        assertThat(daemon.model().subsystem(NQN).serialNumber()).isEqualTo("SN7");
        assertThat(daemon.model().subsystem(NQN).namespace(3).blockCount()).isEqualTo(4096);
        assertThat(daemon.model().subsystem(NQN).namespace(3).uuid()).isEqualTo(
            java.util.UUID.fromString(saved.at("/subsystems/1/config/5/params/namespace/uuid").asText()));
        assertThat(daemon.model().subsystem(NQN).isHostAllowed(HOST)).isTrue();
        assertThat(accepts(port)).isTrue();
        // The referral is on every port, the listener's added after it too.
        assertThat(daemon.model().ports()).hasSize(2).allSatisfy(p -> assertThat(daemon.model().referrals(p.portId()))
            .singleElement().satisfies(r -> assertThat(r.address().traddr()).isEqualTo("127.0.0.6")));
        // A file that asks for what we do not serve fails the start's replay, naming the call.
        Files.writeString(spdk, "{\"subsystems\": [{\"subsystem\": \"bdev\", \"config\": [{\"method\": "
            + "\"bdev_set_options\", \"params\": {}}, {\"method\": \"bdev_lvol_create\", \"params\": {}}]}]}");
        org.assertj.core.api.Assertions.assertThatThrownBy(
                () -> io.nvmeof4j.target.control.rpc.SpdkJsonConfig.replay(daemon, spdk))
            .hasMessageContaining("subsystems[0].config[1]").hasMessageContaining("bdev_lvol_create");
    }

    @Test
    void shouldBeDrivenByTheCommandLineClient() throws Exception {
        int port = freePort();
        start().close();
        String socket = daemon.rpcSocket().toString();
        java.io.StringWriter out = new java.io.StringWriter();
        java.io.PrintWriter w = new java.io.PrintWriter(out, true);
        assertThat(Ctl.run(w, w, "-s", socket, "bdev_malloc_create", "num_blocks=2048", "block_size=512"))
            .isZero();
        assertThat(Ctl.run(w, w, "-s", socket, "nvmf_create_subsystem", "nqn=" + NQN, "allow_any_host=true"))
            .isZero();
        assertThat(Ctl.run(w, w, "-s", socket, "nvmf_subsystem_add_listener", "nqn=" + NQN,
            "listen_address.trtype=tcp", "listen_address.traddr=127.0.0.1", "listen_address.trsvcid=" + port))
            .isZero();
        assertThat(Ctl.run(w, w, "-s", socket, "nvmf_subsystem_add_ns", "nqn=" + NQN, "namespace.bdev_name=Malloc0"))
            .isZero();
        assertThat(Ctl.run(w, w, "-s", socket, "bdev_malloc_delete", "name=Malloc0")).isEqualTo(1);
        assertThat(Ctl.run(w, w, "-s", socket, "nvmf_discovery_add_referral", "address.trtype=tcp",
            "address.adrfam=ipv4", "address.traddr=127.0.0.5", "address.trsvcid=8009")).isZero();
        out.getBuffer().setLength(0);
        assertThat(Ctl.run(w, w, "-s", socket, "ls")).isZero();
        assertThat(out.toString()).contains("o- " + NQN + " [NVMe, allow_any_host", "o- TCP 127.0.0.1:" + port,
            "o- 1 [Malloc0", "o- Malloc0 [Malloc disk, 2048 x 512 B, claimed]", "o- referrals [1]",
            "o- TCP 127.0.0.5:8009 [nqn.2014-08.org.nvmexpress.discovery]");
        Path saved = dir.resolve("saved.json");
        assertThat(Ctl.run(w, w, "-s", socket, "save", saved.toString())).isZero();
        JsonNode nvmf = RpcClient.MAPPER.readTree(saved.toFile()).at("/subsystems/1/config");
        assertThat(nvmf.at("/1/method").asText()).isEqualTo("nvmf_discovery_add_referral");
        assertThat(nvmf.at("/1/params/address/traddr").asText()).isEqualTo("127.0.0.5");
        assertThat(nvmf.at("/2/params/nqn").asText()).isEqualTo(NQN);
        Path nvmetcli = dir.resolve("nvmetcli.json");
        assertThat(Ctl.run(w, w, "-s", socket, "save", "--nvmetcli", nvmetcli.toString())).isZero();
        assertThat(TargetConfig.load(nvmetcli).subsystem(NQN).orElseThrow().namespaces()).hasSize(1);
        assertThat(Ctl.run(w, w, "-s", dir.resolve("nothing.sock").toString(), "ls")).isEqualTo(2);
        assertThat(accepts(port)).isTrue();
    }

    @Test
    void shouldRemoveWhatItCreatedAndCloseTheListener() throws Exception {
        int port = freePort();
        try (RpcClient rpc = start()) {
            rpc.result("bdev_malloc_create", "{\"name\": \"M\", \"num_blocks\": 2048, \"block_size\": 512}");
            rpc.result("nvmf_create_subsystem", "{\"nqn\": \"" + NQN + "\", \"allow_any_host\": true}");
            rpc.result("nvmf_subsystem_add_listener", listener(port));
            rpc.result("nvmf_subsystem_add_ns", "{\"nqn\": \"" + NQN + "\", \"namespace\": {\"bdev_name\": \"M\"}}");
            assertThat(rpc.error("bdev_malloc_delete", "{\"name\": \"M\"}")).isEqualTo(-16);

            assertThat(rpc.result("nvmf_subsystem_remove_listener", listener(port)).asBoolean()).isTrue();
            assertThat(accepts(port)).isFalse();
            assertThat(daemon.model().ports()).noneMatch(p -> p.exports(NQN));
            assertThat(rpc.error("nvmf_subsystem_remove_listener", listener(port))).isEqualTo(-32602);

            assertThat(rpc.result("nvmf_subsystem_remove_ns", "{\"nqn\": \"" + NQN + "\", \"nsid\": 1}").asBoolean())
                .isTrue();
            assertThat(daemon.model().subsystem(NQN).namespaces()).isEmpty();
            assertThat(rpc.result("bdev_malloc_delete", "{\"name\": \"M\"}").asBoolean()).isTrue();
            assertThat(rpc.result("nvmf_subsystem_allow_any_host", "{\"nqn\": \"" + NQN
                + "\", \"allow_any_host\": false}").asBoolean()).isTrue();
            assertThat(daemon.model().subsystem(NQN).allowAnyHost()).isFalse();
            int second = freePort();
            rpc.result("nvmf_subsystem_add_listener", listener(second));
            assertThat(accepts(second)).isTrue();
            assertThat(rpc.result("nvmf_delete_subsystem", "{\"nqn\": \"" + NQN + "\"}").asBoolean()).isTrue();
            assertThat(daemon.model().subsystem(NQN)).isNull();
            // The port only it used is closed with it.
            assertThat(accepts(second)).isFalse();
            assertThat(rpc.error("nvmf_delete_subsystem", "{\"nqn\": \"" + NQN + "\"}")).isEqualTo(-32602);
        }
        TargetConfig saved = TargetConfig.load(config());
        assertThat(saved.subsystems()).isEmpty();
        assertThat(saved.ports()).extracting(p -> p.portId()).containsExactly(1);
    }

    @Test
    void shouldRefuseBadChangesWithSpdkCodesAndLeaveNothingBehind() throws Exception {
        try (RpcClient rpc = start()) {
            rpc.result("nvmf_create_subsystem", "{\"nqn\": \"" + NQN + "\"}");
            rpc.result("bdev_malloc_create", "{\"name\": \"M\", \"num_blocks\": 2048, \"block_size\": 512}");
            String before = Files.readString(config());

            assertThat(rpc.error("nvmf_create_subsystem", "{\"nqn\": \"" + NQN + "\"}")).isEqualTo(-32603);
            assertThat(rpc.error("nvmf_create_subsystem", "{\"nqn\": \"not-an-nqn\"}")).isEqualTo(-32602);
            assertThat(rpc.error("nvmf_create_subsystem", "{\"nqn\": \"nqn.2016-06.io.spdk:x\", \"sn\": 1}"))
                .isEqualTo(-32602);
            assertThat(rpc.error("bdev_malloc_create", "{\"name\": \"M\", \"num_blocks\": 8, \"block_size\": 512}"))
                .isEqualTo(-17);
            // Sizes beyond 64 bits: a block count that overflows, and one that is not a 64-bit number at all.
            assertThat(rpc.error("bdev_malloc_create", "{\"name\": \"B\", \"num_blocks\": 4611686018427387904, "
                + "\"block_size\": 4096}")).isEqualTo(-32602);
            assertThat(rpc.error("bdev_malloc_create", "{\"name\": \"B\", \"num_blocks\": 18446744073709551617, "
                + "\"block_size\": 512}")).isEqualTo(-32602);
            assertThat(rpc.error("bdev_malloc_create", "{\"name\": \"B\", \"num_blocks\": 8, \"block_size\": 513}"))
                .isEqualTo(-32602);
            assertThat(rpc.error("bdev_get_bdevs", "{\"name\": \"nope\"}")).isEqualTo(-19);
            assertThat(rpc.error("bdev_malloc_delete", "{\"name\": \"nope\"}")).isEqualTo(-19);
            assertThat(rpc.error("nvmf_subsystem_add_ns", "{\"nqn\": \"" + NQN + "\", \"namespace\": "
                + "{\"bdev_name\": \"nope\"}}")).isEqualTo(-32602);
            assertThat(rpc.error("nvmf_subsystem_add_ns", "{\"nqn\": \"nqn.2016-06.io.spdk:none\", \"namespace\": "
                + "{\"bdev_name\": \"M\"}}")).isEqualTo(-32602);
            assertThat(rpc.error("nvmf_subsystem_add_ns", "{\"nqn\": \"" + NQN + "\", \"namespace\": "
                + "{\"bdev_name\": \"M\", \"nsid\": 1025}}")).isEqualTo(-32602);
            // A bdev larger than the RAM budget: refused when it would become a namespace, nothing allocated.
            rpc.result("bdev_malloc_create", "{\"name\": \"Huge\", \"num_blocks\": 1048576, \"block_size\": 4096}");
            assertThat(rpc.error("nvmf_subsystem_add_ns", "{\"nqn\": \"" + NQN + "\", \"namespace\": "
                + "{\"bdev_name\": \"Huge\"}}")).isEqualTo(-32602);
            // A file bdev outside allowed_paths (none are set): refused before the file is looked at.
            rpc.result("bdev_aio_create", "{\"name\": \"Aio\", \"filename\": \"/etc/passwd\"}");
            assertThat(rpc.error("nvmf_subsystem_add_ns", "{\"nqn\": \"" + NQN + "\", \"namespace\": "
                + "{\"bdev_name\": \"Aio\"}}")).isEqualTo(-32602);
            assertThat(rpc.error("nvmf_subsystem_add_listener", "{\"nqn\": \"" + NQN + "\", \"listen_address\": "
                + "{\"trtype\": \"tcp\", \"traddr\": \"127.0.0.1\", \"trsvcid\": \"70000\"}}")).isEqualTo(-32602);
            assertThat(rpc.error("nvmf_subsystem_remove_host", "{\"nqn\": \"" + NQN + "\", \"host\": \"" + HOST
                + "\"}")).isEqualTo(-32602);

            rpc.result("nvmf_subsystem_add_ns", "{\"nqn\": \"" + NQN + "\", \"namespace\": {\"bdev_name\": \"M\"}}");
            String withNamespace = Files.readString(config());
            assertThat(withNamespace).isNotEqualTo(before);
            rpc.result("bdev_malloc_create", "{\"name\": \"M2\", \"num_blocks\": 8, \"block_size\": 512}");
            withNamespace = Files.readString(config()); // the new bdev is persisted too
            assertThat(rpc.error("nvmf_subsystem_add_ns", "{\"nqn\": \"" + NQN + "\", \"namespace\": "
                + "{\"bdev_name\": \"M\"}}")).isEqualTo(-32602);
            assertThat(rpc.error("nvmf_subsystem_add_ns", "{\"nqn\": \"" + NQN + "\", \"namespace\": "
                + "{\"bdev_name\": \"M2\", \"nsid\": 1}}")).isEqualTo(-32602);
            assertThat(Files.readString(config())).isEqualTo(withNamespace);
            assertThat(daemon.model().subsystem(NQN).namespaces()).hasSize(1);
            assertThat(daemon.ramBudget().reservedBytes()).isEqualTo(2048L * 512);
        }
    }

    @Test
    void shouldKeepTheQosLimitsOfAnUnusedBdevAcrossARestartAndHandThemToItsNamespace() throws Exception {
        try (RpcClient rpc = start()) {
            rpc.result("nvmf_create_subsystem", "{\"nqn\": \"" + NQN + "\"}");
            rpc.result("bdev_null_create", "{\"name\": \"Q\", \"num_blocks\": 2048, \"block_size\": 512}");
            assertThat(rpc.result("bdev_set_qos_limit", "{\"name\": \"Q\", \"rw_ios_per_sec\": 3000}").asBoolean())
                .isTrue();
        }
        daemon.close();
        daemon = null;
        try (RpcClient rpc = start()) {
            assertThat(rpc.result("bdev_get_bdevs", "{\"name\": \"Q\"}").at("/0/assigned_rate_limits/rw_ios_per_sec")
                .asLong()).as("kept across the restart").isEqualTo(3000);
            rpc.result("nvmf_subsystem_add_ns", "{\"nqn\": \"" + NQN + "\", \"namespace\": {\"bdev_name\": \"Q\"}}");
            assertThat(daemon.model().subsystem(NQN).namespace(1).qos().limits().rwIosPerSec())
                .as("the namespace made from it is limited").isEqualTo(3000);
        }
    }

    @Test
    void shouldSetQosLimitsLivePersistThemAndRefuseBadOnesAsSpdkDoes() throws Exception {
        JsonNode saved;
        try (RpcClient rpc = start()) {
            rpc.result("nvmf_create_subsystem", "{\"nqn\": \"" + NQN + "\"}");
            rpc.result("bdev_malloc_create", "{\"name\": \"M\", \"num_blocks\": 2048, \"block_size\": 512}");
            rpc.result("nvmf_subsystem_add_ns", "{\"nqn\": \"" + NQN + "\", \"namespace\": {\"bdev_name\": \"M\"}}");
            assertThat(rpc.result("bdev_get_bdevs", "{\"name\": \"M\"}").at("/0/assigned_rate_limits").toString())
                .isEqualTo("{\"rw_ios_per_sec\":0,\"rw_mbytes_per_sec\":0,\"r_mbytes_per_sec\":0,"
                    + "\"w_mbytes_per_sec\":0}");

            // An IOPS limit not a multiple of 1000 is rounded up, as SPDK does.
            assertThat(rpc.result("bdev_set_qos_limit", "{\"name\": \"M\", \"rw_ios_per_sec\": 1500, "
                + "\"r_mbytes_per_sec\": 10}").asBoolean()).isTrue();
            QosLimits set = new QosLimits(2000, 0, 10, 0);
            assertThat(rpc.result("bdev_get_bdevs", "{\"name\": \"M\"}").at("/0/assigned_rate_limits").toString())
                .isEqualTo("{\"rw_ios_per_sec\":2000,\"rw_mbytes_per_sec\":0,\"r_mbytes_per_sec\":10,"
                    + "\"w_mbytes_per_sec\":0}");
            assertThat(daemon.model().subsystem(NQN).namespace(1).qos().limits()).isEqualTo(set);
            assertThat(TargetConfig.load(config()).subsystem(NQN).orElseThrow().namespaces().get(0).qos())
                .isEqualTo(set);
            // Limits not given stay as they are; 0 removes one.
            rpc.result("bdev_set_qos_limit", "{\"name\": \"M\", \"w_mbytes_per_sec\": 5, \"rw_ios_per_sec\": 0, "
                + "\"rw_mbytes_per_sec\": null}");
            set = new QosLimits(0, 0, 10, 5);
            assertThat(daemon.model().subsystem(NQN).namespace(1).qos().limits()).isEqualTo(set);
            java.io.StringWriter out = new java.io.StringWriter();
            java.io.PrintWriter w = new java.io.PrintWriter(out, true);
            assertThat(Ctl.run(w, w, "-s", daemon.rpcSocket().toString(), "ls")).isZero();
            assertThat(out.toString()).contains("o- M [Malloc disk, 2048 x 512 B, claimed, qos r_mbytes_per_sec=10 "
                + "w_mbytes_per_sec=5]");

            String before = Files.readString(config());
            assertThat(rpc.error("bdev_set_qos_limit", "{\"name\": \"nope\", \"rw_ios_per_sec\": 1000}"))
                .isEqualTo(-19);
            assertThat(rpc.error("bdev_set_qos_limit", "{\"name\": \"M\"}")).isEqualTo(-22);
            assertThat(rpc.error("bdev_set_qos_limit", "{\"name\": \"M\", \"rw_ios_per_sec\": -1000}"))
                .isEqualTo(-32603);
            assertThat(rpc.error("bdev_set_qos_limit", "{\"name\": \"M\", \"rw_ios_per_sec\": \"1000\"}"))
                .isEqualTo(-32603);
            assertThat(rpc.error("bdev_set_qos_limit", "{\"name\": \"M\", \"rw_ios_per_sec\": 1000.5}"))
                .isEqualTo(-32603);
            assertThat(rpc.error("bdev_set_qos_limit", "{\"name\": \"M\", \"rw_ios_per_sec\": "
                + "18446744073709551617}")).isEqualTo(-32603);
            assertThat(rpc.error("bdev_set_qos_limit", "{\"name\": \"M\", \"rw_ios_per_sec\": 1000, "
                + "\"burst\": 1}")).isEqualTo(-32603);
            assertThat(rpc.error("bdev_set_qos_limit", "{\"rw_ios_per_sec\": 1000}")).isEqualTo(-32603);
            assertThat(rpc.error("bdev_set_qos_limit", "[\"M\"]")).isEqualTo(-32603);
            assertThat(Files.readString(config())).isEqualTo(before);
            assertThat(daemon.model().subsystem(NQN).namespace(1).qos().limits()).isEqualTo(set);

            // A bdev no namespace uses keeps its limits until a namespace is made from it (SPDK: on the bdev).
            rpc.result("bdev_malloc_create", "{\"name\": \"U\", \"num_blocks\": 64, \"block_size\": 512}");
            rpc.result("bdev_set_qos_limit", "{\"name\": \"U\", \"rw_ios_per_sec\": 3000}");
            assertThat(rpc.result("bdev_get_bdevs", "{\"name\": \"U\"}").at("/0/assigned_rate_limits/rw_ios_per_sec")
                .asLong()).isEqualTo(3000);
            rpc.result("nvmf_subsystem_add_ns", "{\"nqn\": \"" + NQN + "\", \"namespace\": {\"bdev_name\": \"U\", "
                + "\"nsid\": 2}}");
            assertThat(daemon.model().subsystem(NQN).namespace(2).qos().limits())
                .isEqualTo(new QosLimits(3000, 0, 0, 0));

            saved = rpc.result("save_config", null);
            JsonNode bdevCalls = saved.at("/subsystems/0/config");
            JsonNode qosCall = null;
            for (int i = 0; i < bdevCalls.size(); i++) {
                if (bdevCalls.get(i).get("method").asText().equals("bdev_set_qos_limit")
                    && bdevCalls.at("/" + i + "/params/name").asText().equals("M")) {
                    qosCall = bdevCalls.get(i);
                    // Right after the call creating its bdev, only the limits set, as SPDK writes it.
                    assertThat(bdevCalls.at("/" + (i - 1) + "/params/name").asText()).isEqualTo("M");
                }
            }
            assertThat(qosCall).isNotNull();
            assertThat(qosCall.get("params").toString())
                .isEqualTo("{\"name\":\"M\",\"r_mbytes_per_sec\":10,\"w_mbytes_per_sec\":5}");

            // Removing every limit leaves no qos object in the file.
            rpc.result("bdev_set_qos_limit", "{\"name\": \"M\", \"r_mbytes_per_sec\": 0, \"w_mbytes_per_sec\": 0}");
            assertThat(daemon.model().subsystem(NQN).namespace(1).qos().enabled()).isFalse();
            assertThat(RpcClient.MAPPER.readTree(config().toFile()).at("/subsystems/0/namespaces/0").has("qos"))
                .isFalse();
        }
        daemon.close();
        // The file's limits are served after a restart, and --json replays save_config's calls to the same limits.
        daemon = TargetDaemon.start(TargetConfig.load(config()));
        assertThat(daemon.model().subsystem(NQN).namespace(2).qos().limits()).isEqualTo(new QosLimits(3000, 0, 0, 0));
        assertThat(daemon.model().subsystem(NQN).namespace(1).qos().enabled()).isFalse();
        daemon.close();
        Path spdk = dir.resolve("spdk.json");
        Files.writeString(spdk, saved.toString());
        daemon = TargetDaemon.start(TargetConfig.parse(io.nvmeof4j.target.control.rpc.SpdkJsonConfig.BASE_JSON
            .replace("8009", Integer.toString(freePort())), dir));
        io.nvmeof4j.target.control.rpc.SpdkJsonConfig.replay(daemon, spdk);
        assertThat(daemon.model().subsystem(NQN).namespace(1).qos().limits()).isEqualTo(new QosLimits(0, 0, 10, 5));
        assertThat(daemon.model().subsystem(NQN).namespace(2).qos().limits()).isEqualTo(new QosLimits(3000, 0, 0, 0));
    }

    @Test
    void shouldRefuseAChangeTheFileCannotTakeAndLeaveTheTargetAsItWas() throws Exception {
        int port = freePort();
        try (RpcClient rpc = start()) {
            rpc.result("nvmf_create_subsystem", "{\"nqn\": \"" + NQN + "\", \"allow_any_host\": true}");
            rpc.result("bdev_malloc_create", "{\"name\": \"M\", \"num_blocks\": 2048, \"block_size\": 512}");
            String before = Files.readString(config());
            // The configuration's directory goes away (a permission would not stop root): no file can be written.
            Path away = dir.resolve("conf.away");
            Files.move(dir.resolve("conf"), away);
            try {
                assertThat(rpc.error("nvmf_create_subsystem", "{\"nqn\": \"nqn.2016-06.io.spdk:other\"}"))
                    .isEqualTo(-32603);
                assertThat(rpc.error("nvmf_subsystem_add_ns", "{\"nqn\": \"" + NQN + "\", \"namespace\": "
                    + "{\"bdev_name\": \"M\"}}")).isEqualTo(-32603);
                assertThat(rpc.error("nvmf_subsystem_add_listener", listener(port))).isEqualTo(-32603);
                assertThat(rpc.error("nvmf_delete_subsystem", "{\"nqn\": \"" + NQN + "\"}")).isEqualTo(-32603);
            } finally {
                Files.move(away, dir.resolve("conf"));
            }
            assertThat(Files.readString(config())).isEqualTo(before);
            assertThat(daemon.model().subsystem("nqn.2016-06.io.spdk:other")).isNull();
            assertThat(daemon.model().subsystem(NQN)).isNotNull();
            assertThat(daemon.model().subsystem(NQN).namespaces()).isEmpty();
            assertThat(daemon.ramBudget().reservedBytes()).isZero();
            assertThat(accepts(port)).isFalse();
            assertThat(daemon.model().ports()).extracting(Port::portId).containsExactly(1);
            // The bdev is free again: the refused namespace did not keep it.
            assertThat(rpc.result("nvmf_subsystem_add_ns", "{\"nqn\": \"" + NQN + "\", \"namespace\": "
                + "{\"bdev_name\": \"M\"}}").asInt()).isEqualTo(1);
        }
    }

    @Test
    void shouldTakeWhatCurrentRpcPySendsAndRefuseFeaturesItTurnsOn() throws Exception {
        try (RpcClient rpc = start()) {
            // Byte for byte what SPDK's scripts/rpc.py (master) sends for "nvmf_create_subsystem NQN -a".
            rpc.send("{\"jsonrpc\": \"2.0\", \"method\": \"nvmf_create_subsystem\", \"id\": 1, \"params\": "
                + "{\"nqn\": \"" + NQN + "\", \"allow_any_host\": true, \"ana_reporting\": false, "
                + "\"passthrough\": false, \"enable_nssr\": false}}");
            assertThat(rpc.read().get("result").asBoolean()).isTrue();
            assertThat(rpc.error("nvmf_create_subsystem", "{\"nqn\": \"nqn.2016-06.io.spdk:pt\", "
                + "\"passthrough\": true}")).isEqualTo(-32602);
            assertThat(daemon.model().subsystem("nqn.2016-06.io.spdk:pt")).isNull();
            rpc.result("bdev_aio_create", "{\"name\": \"A\", \"filename\": \"/srv/a.img\", \"block_size\": 4096, "
                + "\"readonly\": false, \"fallocate\": false, \"nowait\": false}");
            assertThat(rpc.error("bdev_aio_create", "{\"name\": \"B\", \"filename\": \"/srv/b.img\", "
                + "\"readonly\": true}")).isEqualTo(-32602);
            assertThat(rpc.result("bdev_get_bdevs", null).size()).isEqualTo(1);
            // rpc.py's save_config: the sections, then each one's calls.
            assertThat(rpc.result("framework_get_subsystems", null).toString())
                .isEqualTo("[{\"subsystem\":\"bdev\",\"depends_on\":[]},{\"subsystem\":\"nvmf\",\"depends_on\":[\"bdev\"]}]");
            assertThat(rpc.result("framework_get_config", "{\"name\": \"nvmf\"}").get(1).get("method").asText())
                .isEqualTo("nvmf_create_subsystem");
            assertThat(rpc.result("framework_get_config", "{\"name\": \"bdev\"}").get(0).get("params").get("name")
                .asText()).isEqualTo("A");
        }
    }

    @Test
    void shouldRefuseOversizedRequestsAndExtraConnectionsAndKeepServing() throws Exception {
        try (RpcClient rpc = start()) {
            // An unterminated request past the 1 MiB limit: answered Invalid Request, then the connection is closed.
            StringBuilder huge = new StringBuilder("{\"jsonrpc\": \"2.0\", \"method\": \"spdk_get_version\", \"params\": \"");
            huge.append("a".repeat(RpcServer.MAX_REQUEST_BYTES + 1024));
            try {
                rpc.send(huge.toString());
            } catch (IOException closedMidWrite) {
                // the server may close while the rest is still being written
            }
            // The answer can be lost to a reset when the server closes while we still write; either way the
            // connection ends, with Invalid Request as its last word when that arrives.
            JsonNode refused = rpc.read();
            assertThat(refused == null || refused.at("/error/code").asInt() == -32600)
                .as("oversized request answered %s", refused).isTrue();
            assertThat(refused == null ? null : rpc.read()).as("connection closed after the oversized request")
                .isNull();
        }
        try (RpcClient after = new RpcClient(daemon.rpcSocket())) {
            assertThat(after.result("spdk_get_version", null).has("version")).as("served after the oversized one")
                .isTrue();
        }
        java.util.List<RpcClient> clients = new java.util.ArrayList<>();
        try {
            for (int i = 0; i < RpcServer.MAX_CONNECTIONS; i++) {
                RpcClient c = new RpcClient(daemon.rpcSocket());
                clients.add(c);
                assertThat(c.result("spdk_get_version", null).has("version")).isTrue();
            }
            try (RpcClient extra = new RpcClient(daemon.rpcSocket())) {
                assertThat(extra.read()).as("a connection over the limit is closed at once").isNull();
            }
            clients.remove(0).close();
            Thread.sleep(200);
            try (RpcClient again = new RpcClient(daemon.rpcSocket())) {
                assertThat(again.result("spdk_get_version", null).has("version")).as("served again").isTrue();
            }
        } finally {
            for (RpcClient c : clients) {
                c.close();
            }
        }
    }

    @Test
    void shouldAnswerMalformedRequestsAsSpdkDoes() throws Exception {
        try (RpcClient rpc = start()) {
            rpc.send("{\"jsonrpc\": \"2.0\", \"method\": \"no_such_method\", \"id\": 1}");
            assertThat(rpc.read().at("/error/code").asInt()).isEqualTo(-32601);
            rpc.send("42");
            rpc.send(" ");
            assertThat(rpc.read().at("/error/code").asInt()).isEqualTo(-32600);
            rpc.send("[]");
            assertThat(rpc.read().at("/error/code").asInt()).isEqualTo(-32600);
            rpc.send("{\"jsonrpc\": \"2.0\", \"method\": \"spdk_get_version\", \"id\": {\"a\": 1}}");
            JsonNode badId = rpc.read();
            assertThat(badId.at("/error/code").asInt()).isEqualTo(-32600);
            assertThat(badId.get("id").isNull()).isTrue();
            rpc.send("{\"jsonrpc\": \"1.0\", \"method\": \"spdk_get_version\", \"id\": 2}");
            assertThat(rpc.read().at("/error/code").asInt()).isEqualTo(-32600);
            rpc.send("{\"jsonrpc\": \"2.0\", \"method\": 5, \"id\": 3}");
            assertThat(rpc.read().at("/error/code").asInt()).isEqualTo(-32600);
            rpc.send("{\"jsonrpc\": \"2.0\", \"method\": \"spdk_get_version\", \"params\": \"x\", \"id\": 4}");
            assertThat(rpc.read().at("/error/code").asInt()).isEqualTo(-32600);
            rpc.send("{\"jsonrpc\": \"2.0\", \"method\": \"bdev_get_bdevs\", \"params\": [1], \"id\": 5}");
            assertThat(rpc.read().at("/error/code").asInt()).isEqualTo(-32602);
            // A batch: one answer array, in order, each element answered on its own.
            rpc.send("[{\"jsonrpc\": \"2.0\", \"method\": \"framework_wait_init\", \"id\": \"a\"}, 7, "
                + "{\"jsonrpc\": \"2.0\", \"method\": \"nope\", \"id\": \"c\"}]");
            JsonNode batch = rpc.read();
            assertThat(batch.isArray()).isTrue();
            assertThat(batch.get(0).get("result").asBoolean()).isTrue();
            assertThat(batch.get(0).get("id").asText()).isEqualTo("a");
            assertThat(batch.get(1).at("/error/code").asInt()).isEqualTo(-32600);
            assertThat(batch.get(2).at("/error/code").asInt()).isEqualTo(-32601);
            // Two requests in one write, and one request split over writes, as a stream carries them.
            rpc.send("{\"jsonrpc\": \"2.0\", \"method\": \"framework_wait_init\", \"id\": 10}"
                + "{\"jsonrpc\": \"2.0\", \"method\": \"framework_wait_init\", \"id\": 11}{\"jsonrpc\": \"2.0\", ");
            assertThat(rpc.read().get("id").asInt()).isEqualTo(10);
            assertThat(rpc.read().get("id").asInt()).isEqualTo(11);
            rpc.send("\"method\": \"framework_wait_init\", \"id\": 12}");
            assertThat(rpc.read().get("id").asInt()).isEqualTo(12);
            // Not JSON: parse error, and the stream is closed (there is no point to resynchronise at).
            rpc.send("{\"jsonrpc\": \"2.0\", \"method\": }");
            assertThat(rpc.read().at("/error/code").asInt()).isEqualTo(-32700);
            assertThat(rpc.read()).isNull();
        }
        try (RpcClient rpc = new RpcClient(daemon.rpcSocket())) {
            // Huge params: refused once the request passes the limit, the connection closed, nothing changed.
            try {
                rpc.send("{\"jsonrpc\": \"2.0\", \"method\": \"bdev_malloc_create\", \"id\": 1, \"params\": "
                    + "{\"name\": \"" + "x".repeat(io.nvmeof4j.target.control.rpc.RpcServer.MAX_REQUEST_BYTES) + "\"}}");
            } catch (IOException closedWhileSending) {
                // the server stops reading at the limit; its answer is still there to read
            }
            assertThat(rpc.read().at("/error/code").asInt()).isEqualTo(-32600);
            assertThat(rpc.read()).isNull();
        }
        try (RpcClient rpc = new RpcClient(daemon.rpcSocket())) {
            assertThat(rpc.result("bdev_get_bdevs", null).size()).isZero();
        }
    }

    @Test
    void shouldCutOffAHalfSentRequestAndKeepServingOthers() throws Exception {
        try (RpcClient rpc = start();
             java.nio.channels.SocketChannel half = java.nio.channels.SocketChannel.open(
                 java.net.StandardProtocolFamily.UNIX)) {
            half.connect(java.net.UnixDomainSocketAddress.of(daemon.rpcSocket()));
            long begin = System.nanoTime();
            half.write(java.nio.ByteBuffer.wrap("{\"jsonrpc\": \"2.0\", \"method\": \"spdk_get_ver"
                .getBytes(java.nio.charset.StandardCharsets.UTF_8)));
            // While the half request waits, others are served.
            assertThat(rpc.result("spdk_get_version", null).has("version")).isTrue();
            // Then the server gives up on it (10 s after its first byte) and closes the connection; bounded wait.
            java.util.concurrent.CompletableFuture<Long> closed = java.util.concurrent.CompletableFuture.supplyAsync(
                () -> {
                    java.nio.ByteBuffer b = java.nio.ByteBuffer.allocate(4096);
                    try {
                        while (half.read(b) >= 0) {
                            b.clear();
                        }
                    } catch (IOException e) {
                        // a reset is a close too
                    }
                    return System.nanoTime();
                });
            long closedAt = closed.get(RpcServer.REQUEST_TIMEOUT_MS + 10_000,
                java.util.concurrent.TimeUnit.MILLISECONDS);
            assertThat(java.util.concurrent.TimeUnit.NANOSECONDS.toMillis(closedAt - begin))
                .as("cut off after the request timeout, not before")
                .isGreaterThanOrEqualTo(RpcServer.REQUEST_TIMEOUT_MS - 500);
            assertThat(rpc.result("spdk_get_version", null).has("version")).as("still served").isTrue();
        }
        try (RpcClient after = new RpcClient(daemon.rpcSocket())) {
            assertThat(after.result("framework_wait_init", null).asBoolean()).as("a new connection served").isTrue();
        }
    }

    @Test
    void shouldHonourMaxNamespacesAndKeepIt() throws Exception {
        try (RpcClient rpc = start()) {
            rpc.result("nvmf_create_subsystem", "{\"nqn\": \"" + NQN + "\", \"max_namespaces\": 2}");
            rpc.result("nvmf_create_subsystem", "{\"nqn\": \"nqn.2016-06.io.spdk:dflt\"}");
            for (String b : new String[] {"A", "B", "C"}) {
                rpc.result("bdev_null_create", "{\"name\": \"" + b + "\", \"num_blocks\": 64, \"block_size\": 512}");
            }
            assertThat(rpc.error("nvmf_subsystem_add_ns", "{\"nqn\": \"" + NQN + "\", \"namespace\": "
                + "{\"bdev_name\": \"A\", \"nsid\": 3}}")).as("nsid above max_namespaces").isEqualTo(-32602);
            assertThat(rpc.result("nvmf_subsystem_add_ns", "{\"nqn\": \"" + NQN + "\", \"namespace\": "
                + "{\"bdev_name\": \"A\"}}").asInt()).isEqualTo(1);
            assertThat(rpc.result("nvmf_subsystem_add_ns", "{\"nqn\": \"" + NQN + "\", \"namespace\": "
                + "{\"bdev_name\": \"B\"}}").asInt()).isEqualTo(2);
            String before = Files.readString(config());
            assertThat(rpc.error("nvmf_subsystem_add_ns", "{\"nqn\": \"" + NQN + "\", \"namespace\": "
                + "{\"bdev_name\": \"C\"}}")).as("no free slot").isEqualTo(-32602);
            assertThat(Files.readString(config())).isEqualTo(before);
            assertThat(daemon.model().subsystem(NQN).namespaces()).hasSize(2);
            assertThat(rpc.result("bdev_get_bdevs", "{\"name\": \"C\"}").at("/0/claimed").asBoolean()).isFalse();
            assertThat(rpc.result("nvmf_get_subsystems", "{\"nqn\": \"" + NQN + "\"}").at("/0/max_namespaces")
                .asInt()).isEqualTo(2);
            assertThat(rpc.result("nvmf_get_subsystems", "{\"nqn\": \"nqn.2016-06.io.spdk:dflt\"}")
                .at("/0/max_namespaces").asInt()).as("SPDK's default").isEqualTo(32);
            assertThat(rpc.error("nvmf_subsystem_add_ns", "{\"nqn\": \"nqn.2016-06.io.spdk:dflt\", \"namespace\": "
                + "{\"bdev_name\": \"C\", \"nsid\": 33}}")).isEqualTo(-32602);
        }
        daemon.close();
        TargetConfig saved = TargetConfig.load(config());
        assertThat(saved.subsystem(NQN).orElseThrow().maxNamespaces()).isEqualTo(2);
        daemon = null;
        try (RpcClient rpc = start()) {
            // Kept across the restart, with the unused bdev C.
            assertThat(rpc.error("nvmf_subsystem_add_ns", "{\"nqn\": \"" + NQN + "\", \"namespace\": "
                + "{\"bdev_name\": \"C\"}}")).isEqualTo(-32602);
            assertThat(rpc.result("bdev_get_bdevs", null).findValuesAsText("name")).containsExactly("A", "B", "C");
            assertThat(rpc.result("save_config", null).toString()).contains("\"max_namespaces\":2",
                "\"bdev_null_create\"", "\"name\":\"C\"");
        }
    }

    @Test
    void shouldRefuseBadReferralsAndResizesWithSpdkCodesAndLeaveNothingBehind() throws Exception {
        String referral = "{\"address\": {\"trtype\": \"tcp\", \"adrfam\": \"ipv4\", \"traddr\": \"127.0.0.2\", "
            + "\"trsvcid\": \"8009\"}}";
        try (RpcClient rpc = start()) {
            String before = Files.readString(config());
            assertThat(rpc.error("nvmf_discovery_add_referral", "{\"address\": {\"trtype\": \"tcp\", "
                + "\"traddr\": \"127.0.0.2\"}}")).as("no service id").isEqualTo(-32603);
            assertThat(rpc.error("nvmf_discovery_add_referral", "{\"address\": {\"trtype\": \"fc\", "
                + "\"traddr\": \"127.0.0.2\", \"trsvcid\": \"8009\"}}")).isEqualTo(-32602);
            assertThat(rpc.error("nvmf_discovery_add_referral", "{\"address\": {\"trtype\": \"tcp\", "
                + "\"traddr\": \"a.host.name\", \"trsvcid\": \"8009\"}}")).isEqualTo(-32602);
            assertThat(rpc.error("nvmf_discovery_add_referral", "{\"address\": {\"trtype\": \"tcp\", "
                + "\"traddr\": \"127.0.0.2\", \"trsvcid\": \"8009\"}, \"what\": 1}")).isEqualTo(-32602);
            assertThat(rpc.error("nvmf_discovery_remove_referral", referral)).isEqualTo(-32603);
            assertThat(Files.readString(config())).isEqualTo(before);
            assertThat(daemon.model().referrals(1)).isEmpty();
            // With a subsystem NQN: an entry of SUBTYPE 2 elsewhere, listed with its NQN and secure channel.
            assertThat(rpc.result("nvmf_discovery_add_referral", "{\"address\": {\"trtype\": \"tcp\", "
                + "\"adrfam\": \"ipv4\", \"traddr\": \"127.0.0.3\", \"trsvcid\": \"4420\"}, \"secure_channel\": true, "
                + "\"subnqn\": \"nqn.2016-06.io.spdk:far\"}").asBoolean()).isTrue();
            JsonNode listed = rpc.result("nvmf_discovery_get_referrals", null);
            assertThat(listed.at("/0/subnqn").asText()).isEqualTo("nqn.2016-06.io.spdk:far");
            assertThat(listed.at("/0/secure_channel").asBoolean()).isTrue();
            assertThat(daemon.model().referrals(1)).singleElement().satisfies(r -> {
                assertThat(r.treq()).isEqualTo(1);
                assertThat(r.address().trsvcid()).isEqualTo("4420");
            });
            assertThat(rpc.result("save_config", null).toString()).contains("\"nvmf_discovery_add_referral\"",
                "\"subnqn\":\"nqn.2016-06.io.spdk:far\"");
            rpc.result("nvmf_discovery_remove_referral", "{\"address\": {\"trtype\": \"tcp\", \"traddr\": "
                + "\"127.0.0.3\", \"trsvcid\": \"4420\"}, \"subnqn\": \"nqn.2016-06.io.spdk:far\"}");
            assertThat(daemon.model().referrals(1)).isEmpty();

            rpc.result("nvmf_create_subsystem", "{\"nqn\": \"" + NQN + "\", \"allow_any_host\": true}");
            rpc.result("bdev_null_create", "{\"name\": \"N\", \"num_blocks\": 2048, \"block_size\": 512}");
            rpc.result("bdev_malloc_create", "{\"name\": \"M\", \"num_blocks\": 2048, \"block_size\": 512}");
            rpc.result("nvmf_subsystem_add_ns", "{\"nqn\": \"" + NQN + "\", \"namespace\": {\"bdev_name\": \"N\"}}");
            assertThat(rpc.error("bdev_null_resize", "{\"name\": \"M\", \"new_size\": 4}")).isEqualTo(-22);
            assertThat(rpc.error("bdev_null_resize", "{\"name\": \"N\", \"new_size\": 18014398509481984}"))
                .as("beyond 64 bits in bytes").isEqualTo(-22);
            assertThat(rpc.error("bdev_null_resize", "{\"name\": \"N\", \"new_size\": -1}")).isEqualTo(-32603);
            assertThat(rpc.error("bdev_uring_rescan", "{\"name\": \"nope\"}")).isEqualTo(-19);
            // The file cannot be written: the resize and a referral are refused and undone.
            String withNamespace = Files.readString(config());
            Path away = dir.resolve("conf.away");
            Files.move(dir.resolve("conf"), away);
            try {
                assertThat(rpc.error("bdev_null_resize", "{\"name\": \"N\", \"new_size\": 4}")).isEqualTo(-32603);
                assertThat(rpc.error("nvmf_discovery_add_referral", referral)).isEqualTo(-32603);
                assertThat(rpc.error("bdev_null_create", "{\"name\": \"X\", \"num_blocks\": 8, \"block_size\": 512}"))
                    .isEqualTo(-32603);
            } finally {
                Files.move(away, dir.resolve("conf"));
            }
            assertThat(Files.readString(config())).isEqualTo(withNamespace);
            assertThat(daemon.model().subsystem(NQN).namespace(1).blockCount()).isEqualTo(2048);
            assertThat(daemon.model().referrals(1)).isEmpty();
            assertThat(rpc.error("bdev_get_bdevs", "{\"name\": \"X\"}")).isEqualTo(-19);
            assertThat(rpc.result("bdev_get_bdevs", "{\"name\": \"N\"}").at("/0/num_blocks").asLong()).isEqualTo(2048);
            // Then it can: 1 MiB -> 4 MiB.
            assertThat(rpc.result("bdev_null_resize", "{\"name\": \"N\", \"new_size\": 4}").asBoolean()).isTrue();
            assertThat(daemon.model().subsystem(NQN).namespace(1).blockCount()).isEqualTo(8192);
        }
        assertThat(TargetConfig.load(config()).subsystem(NQN).orElseThrow().namespaces().get(0).sizeBytes())
            .isEqualTo(4L << 20);
    }

    /**
     * RDMA listeners go through the same control-plane path as TCP ones, live on any machine with RDMA (the first
     * gives the reactors their RDMA poll groups: checked in the guest by kernel-host-vs-our-rdma-target.sh). The build
     * machine has no RDMA device, so the path checked here is the refusal: named, and nothing changed.
     */
    @Test
    void shouldRefuseAnRdmaListenerWhenRdmaIsNotServedAndChangeNothing() throws Exception {
        try (RpcClient rpc = start()) {
            rpc.result("nvmf_create_subsystem", "{\"nqn\": \"" + NQN + "\", \"allow_any_host\": true}");
            String before = Files.readString(config());
            JsonNode refused = rpc.call("nvmf_create_transport", "{\"trtype\": \"RDMA\"}");
            assertThat(refused.at("/error/code").asInt()).isEqualTo(-32602);
            assertThat(refused.at("/error/message").asText()).contains("RDMA");
            assertThat(rpc.result("nvmf_get_transports", null).findValuesAsText("trtype")).containsExactly("TCP");
            JsonNode listener = rpc.call("nvmf_subsystem_add_listener", "{\"nqn\": \"" + NQN + "\", "
                + "\"listen_address\": {\"trtype\": \"rdma\", \"adrfam\": \"ipv4\", \"traddr\": \"127.0.0.1\", "
                + "\"trsvcid\": \"4420\"}}");
            assertThat(listener.at("/error/code").asInt()).isEqualTo(-32603);
            assertThat(listener.at("/error/message").asText()).contains("NVMe-oF/RDMA is unavailable on this machine");
            assertThat(Files.readString(config())).isEqualTo(before);
            assertThat(daemon.model().ports()).extracting(Port::portId).containsExactly(1);
            assertThat(daemon.controlPlane().configuration().ports()).hasSize(1);
        }
    }
}
