package io.nvmeof4j.it.tcp;

import com.fasterxml.jackson.databind.JsonNode;
import io.nvmeof4j.it.control.RpcConnection;
import io.nvmeof4j.protocol.ana.AnaState;
import io.nvmeof4j.protocol.command.NvmeStatus;
import io.nvmeof4j.target.config.TargetConfig;
import io.nvmeof4j.target.daemon.TargetDaemon;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.Map;
import java.util.Random;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A host on the wire (NVMe/TCP, 127.0.0.1) against what the SPDK JSON-RPC socket created live: it connects to a
 * subsystem, listener and namespace that no configuration named, writes and reads back; the statistics RPCs count
 * its I/O; removing the listener live disconnects its queues (the target closes both connections), and the
 * configuration file holds the subsystem without that listener.
 */
class ControlPlaneLiveIT {
    private static final String NQN = "nqn.2016-06.io.spdk:live";
    private static final HostIdentity HOST = HostIdentity.random();

    @TempDir
    Path dir;

    @Test
    void shouldServeWhatWasCreatedLiveAndDisconnectWhenItsListenerGoes() throws Exception {
        int port;
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            port = s.getLocalPort();
        }
        Path config = dir.resolve("target.json");
        Files.writeString(config, "{\"nvmeof4j\": {\"reactors\": 1, \"buffer_pool_mib\": 8, \"http\": \"off\"},"
            + " \"ports\": [{\"portid\": 1, \"addr\": {\"trtype\": \"tcp\", \"adrfam\": \"ipv4\", \"traddr\": "
            + "\"127.0.0.1\", \"trsvcid\": \"0\"}, \"subsystems\": [\"nqn.2014-08.org.nvmexpress.discovery\"]}],"
            + " \"subsystems\": []}");
        try (TargetDaemon daemon = TargetDaemon.start(TargetConfig.load(config))) {
            daemon.startRpc(dir.resolve("rpc.sock"));
            try (RpcConnection rpc = new RpcConnection(dir.resolve("rpc.sock"))) {
                result(rpc, "bdev_malloc_create", "{\"name\": \"Malloc0\", \"num_blocks\": 8192, \"block_size\": 512}");
                result(rpc, "nvmf_create_subsystem", "{\"nqn\": \"" + NQN + "\", \"allow_any_host\": true, "
                    + "\"ana_reporting\": true, \"min_cntlid\": 300, \"max_cntlid\": 310}");
                result(rpc, "nvmf_subsystem_add_listener", "{\"nqn\": \"" + NQN + "\", \"listen_address\": "
                    + "{\"trtype\": \"tcp\", \"adrfam\": \"ipv4\", \"traddr\": \"127.0.0.1\", \"trsvcid\": \"" + port
                    + "\"}}");
                assertThat(result(rpc, "nvmf_subsystem_add_ns", "{\"nqn\": \"" + NQN + "\", \"namespace\": "
                    + "{\"bdev_name\": \"Malloc0\"}}").asInt()).isEqualTo(1);

                InetSocketAddress address = new InetSocketAddress("127.0.0.1", port);
                RawNvmeTcpHost admin = Sessions.enabledAdmin(address, NQN, HOST, Sessions.KATO_MS);
                RawNvmeTcpHost io = null;
                try {
                    assertThat(admin.cntlid()).as("min_cntlid/max_cntlid of a subsystem created live").isBetween(300,
                        310);
                    Sessions.requestIoQueues(admin, 1);
                    io = Sessions.ioQueue(address, NQN, HOST, 1, admin.cntlid());
                    byte[] data = new byte[8 * 512];
                    new Random(7).nextBytes(data);
                    assertThat(io.write(1, 100, 8, data, false).isSuccess()).isTrue();
                    Completion read = io.read(1, 100, 8, 512);
                    assertThat(read.isSuccess()).isTrue();
                    assertThat(Arrays.equals(read.data(), data)).as("data read back").isTrue();


                    // A command is counted when its response has been sent, a moment after the host may have it:
                    // wait (bounded) for the read to be counted, then check every figure exactly.
                    JsonNode stat = result(rpc, "bdev_get_iostat", "{\"name\": \"Malloc0\"}").get("bdevs").get(0);
                    for (long end = System.nanoTime() + 5_000_000_000L;
                         stat.get("num_read_ops").asLong() < 1 && System.nanoTime() < end; ) {
                        Thread.sleep(10);
                        stat = result(rpc, "bdev_get_iostat", "{\"name\": \"Malloc0\"}").get("bdevs").get(0);
                    }
                    assertThat(stat.get("num_write_ops").asLong()).isEqualTo(1);
                    assertThat(stat.get("bytes_written").asLong()).isEqualTo(4096);
                    assertThat(stat.get("num_read_ops").asLong()).isEqualTo(1);
                    assertThat(stat.get("bytes_read").asLong()).isEqualTo(4096);
                    JsonNode stats = result(rpc, "nvmf_get_stats", null).get("poll_groups").get(0);
                    assertThat(stats.get("current_io_qpairs").asInt()).isEqualTo(1);
                    assertThat(result(rpc, "nvmf_subsystem_get_controllers", "{\"nqn\": \"" + NQN + "\"}").get(0)
                        .get("hostnqn").asText()).isEqualTo(HOST.hostnqn());
                    assertThat(result(rpc, "nvmf_subsystem_get_qpairs", "{\"nqn\": \"" + NQN + "\"}").size())
                        .isEqualTo(2);

                    // ANA over the socket: inaccessible on this listener, I/O is answered so at once; back again.
                    String listener = "{\"nqn\": \"" + NQN + "\", \"listen_address\": {\"trtype\": \"tcp\", "
                        + "\"adrfam\": \"ipv4\", \"traddr\": \"127.0.0.1\", \"trsvcid\": \"" + port + "\"}";
                    result(rpc, "nvmf_subsystem_listener_set_ana_state", listener + ", \"ana_state\": \"inaccessible\", "
                        + "\"anagrpid\": 1}");
                    assertThat(io.read(1, 100, 8, 512).status()).isEqualTo(NvmeStatus.ANA_INACCESSIBLE);
                    assertThat(TargetConfig.load(config).ports().stream().anyMatch(p -> p.anaGroups().equals(
                        Map.of(1, AnaState.INACCESSIBLE)))).as("persisted").isTrue();
                    result(rpc, "nvmf_subsystem_listener_set_ana_state", listener + ", \"ana_state\": \"optimized\"}");
                    assertThat(io.read(1, 100, 8, 512).isSuccess()).isTrue();

                    result(rpc, "nvmf_subsystem_remove_listener", "{\"nqn\": \"" + NQN + "\", \"listen_address\": "
                        + "{\"trtype\": \"tcp\", \"adrfam\": \"ipv4\", \"traddr\": \"127.0.0.1\", \"trsvcid\": \""
                        + port + "\"}}");
                    assertThat(io.awaitPeerClose(Duration.ofSeconds(10)).closed()).as("I/O queue closed").isTrue();
                    assertThat(admin.awaitPeerClose(Duration.ofSeconds(10)).closed()).as("admin queue closed").isTrue();
                    assertThat(result(rpc, "nvmf_subsystem_get_controllers", "{\"nqn\": \"" + NQN + "\"}").size())
                        .isZero();
                } finally {
                    if (io != null) {
                        io.close();
                    }
                    admin.close();
                }
            }
        }
        TargetConfig saved = TargetConfig.load(config);
        assertThat(saved.subsystem(NQN).orElseThrow().namespaces()).hasSize(1);
        assertThat(saved.ports()).noneMatch(p -> p.subsystems().contains(NQN));
    }

    private static JsonNode result(RpcConnection rpc, String method, String params) throws Exception {
        JsonNode r = rpc.call(method, params);
        assertThat(r).as(method).isNotNull();
        assertThat(r.has("result")).as("%s %s: %s", method, params, r).isTrue();
        return r.get("result");
    }
}
