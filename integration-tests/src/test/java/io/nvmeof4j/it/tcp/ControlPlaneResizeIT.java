package io.nvmeof4j.it.tcp;

import com.fasterxml.jackson.databind.JsonNode;
import io.nvmeof4j.initiator.NvmeofController;
import io.nvmeof4j.initiator.NvmeofHost;
import io.nvmeof4j.initiator.NvmeofNamespace;
import io.nvmeof4j.it.control.RpcConnection;
import io.nvmeof4j.protocol.spi.TransportAddress;
import io.nvmeof4j.target.config.NamespaceConfig;
import io.nvmeof4j.target.config.TargetConfig;
import io.nvmeof4j.target.daemon.TargetDaemon;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Random;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Namespaces resized live over the SPDK JSON-RPC socket, seen by our initiator on the wire (NVMe/TCP, 127.0.0.1):
 * {@code bdev_null_resize} grows a null namespace and {@code bdev_aio_rescan} picks up a grown file; each time the
 * connected controller gets the namespace attribute changed event, its Changed Namespace List names the NSID, and
 * Identify Namespace reports the new size; the grown file carries I/O beyond its old end. Shrinking is refused with
 * SPDK's codes (-22 for a null bdev, -16 for a file that shrank under its namespace) and changes nothing. A restarted
 * daemon serves the new sizes from the file.
 */
class ControlPlaneResizeIT {
    private static final String NQN = "nqn.2016-06.io.spdk:resize";

    @TempDir
    Path dir;

    @Test
    void shouldGrowNamespacesLiveAnnounceAndPersistThem() throws Exception {
        Path data = Files.createDirectories(dir.resolve("data"));
        Path image = data.resolve("ns2.img");
        try (RandomAccessFile f = new RandomAccessFile(image.toFile(), "rw")) {
            f.setLength(8L << 20);
        }
        Path config = dir.resolve("target.json");
        Files.writeString(config, "{\"nvmeof4j\": {\"reactors\": 1, \"buffer_pool_mib\": 8, \"http\": \"off\","
            + " \"allowed_paths\": [\"" + data + "\"]},"
            + " \"ports\": [{\"portid\": 1, \"addr\": {\"trtype\": \"tcp\", \"adrfam\": \"ipv4\", \"traddr\": "
            + "\"127.0.0.1\", \"trsvcid\": \"0\"}, \"subsystems\": [\"" + NQN + "\"]}],"
            + " \"subsystems\": [{\"nqn\": \"" + NQN + "\", \"attr\": {\"allow_any_host\": \"1\"}}]}");
        try (TargetDaemon daemon = TargetDaemon.start(TargetConfig.load(config))) {
            daemon.startRpc(dir.resolve("rpc.sock"));
            int port = daemon.listenAddresses().get(0).port();
            try (RpcConnection rpc = new RpcConnection(dir.resolve("rpc.sock"));
                 NvmeofHost host = NvmeofHost.create(io.nvmeof4j.initiator.HostIdentity.generate(), 1)) {
                result(rpc, "bdev_null_create", "{\"name\": \"Null0\", \"num_blocks\": 2048, \"block_size\": 4096}");
                result(rpc, "bdev_aio_create", "{\"name\": \"Aio0\", \"filename\": \"" + image + "\"}");
                assertThat(result(rpc, "nvmf_subsystem_add_ns", "{\"nqn\": \"" + NQN + "\", \"namespace\": "
                    + "{\"bdev_name\": \"Null0\"}}").asInt()).isEqualTo(1);
                assertThat(result(rpc, "nvmf_subsystem_add_ns", "{\"nqn\": \"" + NQN + "\", \"namespace\": "
                    + "{\"bdev_name\": \"Aio0\"}}").asInt()).isEqualTo(2);
                try (NvmeofController ctrl = host.connect(TransportAddress.tcp("127.0.0.1", port), NQN)) {
                    LinkedBlockingQueue<List<Integer>> events = new LinkedBlockingQueue<>();
                    ctrl.addNamespaceListener((c, changed, namespaces) -> events.add(changed));
                    assertThat(ctrl.namespace(1).sizeBytes()).isEqualTo(8L << 20);
                    assertThat(ctrl.namespace(2).sizeBytes()).isEqualTo(8L << 20);

                    // Null: 8 MiB -> 32 MiB.
                    assertThat(result(rpc, "bdev_null_resize", "{\"name\": \"Null0\", \"new_size\": 32}").asBoolean())
                        .isTrue();
                    assertThat(events.poll(10, TimeUnit.SECONDS)).as("namespace attribute notice").containsExactly(1);
                    assertThat(ctrl.namespace(1).sizeBytes()).isEqualTo(32L << 20);
                    assertThat(ctrl.namespace(1).blockCount()).isEqualTo(8192);
                    // Shrinking: -22, nothing changes.
                    assertThat(rpc.call("bdev_null_resize", "{\"name\": \"Null0\", \"new_size\": 16}")
                        .at("/error/code").asInt()).isEqualTo(-22);
                    assertThat(rpc.call("bdev_null_resize", "{\"name\": \"Aio0\", \"new_size\": 64}")
                        .at("/error/code").asInt()).as("not a null bdev").isEqualTo(-22);
                    assertThat(rpc.call("bdev_null_resize", "{\"name\": \"nope\", \"new_size\": 64}")
                        .at("/error/code").asInt()).isEqualTo(-19);
                    assertThat(rpc.call("bdev_null_resize", "{\"name\": \"Null0\"}").at("/error/code").asInt())
                        .isEqualTo(-32603);

                    // File: grown to 12 MiB outside, then rescanned.
                    try (RandomAccessFile f = new RandomAccessFile(image.toFile(), "rw")) {
                        f.setLength(12L << 20);
                    }
                    assertThat(result(rpc, "bdev_aio_rescan", "{\"name\": \"Aio0\"}").asBoolean()).isTrue();
                    assertThat(events.poll(10, TimeUnit.SECONDS)).as("namespace attribute notice").containsExactly(2);
                    NvmeofNamespace ns2 = ctrl.namespace(2);
                    assertThat(ns2.sizeBytes()).isEqualTo(12L << 20);
                    // Beyond the old end: written and read back.
                    long lba = (10L << 20) / ns2.blockSize();
                    ByteBuffer out = ByteBuffer.allocateDirect(ns2.blockSize());
                    byte[] pattern = new byte[ns2.blockSize()];
                    new Random(3).nextBytes(pattern);
                    out.put(pattern).flip();
                    ns2.write(lba, out).get(10, TimeUnit.SECONDS);
                    ByteBuffer back = ns2.read(lba, 1).get(10, TimeUnit.SECONDS);
                    byte[] read = new byte[ns2.blockSize()];
                    back.get(read);
                    assertThat(read).isEqualTo(pattern);
                    // The file shrinks under the namespace: refused (-16), the namespace keeps its size.
                    try (RandomAccessFile f = new RandomAccessFile(image.toFile(), "rw")) {
                        f.setLength(4L << 20);
                    }
                    assertThat(rpc.call("bdev_aio_rescan", "{\"name\": \"Aio0\"}").at("/error/code").asInt())
                        .isEqualTo(-16);
                    assertThat(rpc.call("bdev_uring_rescan", "{\"name\": \"Aio0\"}").at("/error/code").asInt())
                        .as("an aio bdev is not a uring one").isEqualTo(-19);
                    assertThat(daemon.model().subsystem(NQN).namespace(2).blockCount() * 4096).isEqualTo(12L << 20);
                    try (RandomAccessFile f = new RandomAccessFile(image.toFile(), "rw")) {
                        f.setLength(12L << 20);
                    }
                    assertThat(events.poll(300, TimeUnit.MILLISECONDS)).as("no event for refused changes").isNull();
                    JsonNode bdev = result(rpc, "bdev_get_bdevs", "{\"name\": \"Null0\"}").get(0);
                    assertThat(bdev.get("num_blocks").asLong()).isEqualTo(8192);
                }
            }
        }
        NamespaceConfig nullNs = TargetConfig.load(config).subsystem(NQN).orElseThrow().namespaces().get(0);
        assertThat(nullNs.sizeBytes()).isEqualTo(32L << 20);
        try (TargetDaemon daemon = TargetDaemon.start(TargetConfig.load(config))) {
            assertThat(daemon.model().subsystem(NQN).namespace(1).blockCount()).isEqualTo(8192);
            assertThat(daemon.model().subsystem(NQN).namespace(2).blockCount() * 4096).isEqualTo(12L << 20);
        }
    }

    private static JsonNode result(RpcConnection rpc, String method, String params) throws Exception {
        JsonNode r = rpc.call(method, params);
        assertThat(r).as(method).isNotNull();
        assertThat(r.has("result")).as("%s %s: %s", method, params, r).isTrue();
        return r.get("result");
    }
}
