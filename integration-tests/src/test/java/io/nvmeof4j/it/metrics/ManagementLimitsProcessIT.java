package io.nvmeof4j.it.metrics;

import io.nvmeof4j.initiator.ConnectOptions;
import io.nvmeof4j.initiator.HostIdentity;
import io.nvmeof4j.initiator.NvmeofController;
import io.nvmeof4j.initiator.NvmeofHost;
import io.nvmeof4j.initiator.NvmeofIoException;
import io.nvmeof4j.initiator.NvmeofNamespace;
import io.nvmeof4j.it.tcp.DaemonProcess;
import io.nvmeof4j.protocol.command.NvmeStatus;
import io.nvmeof4j.protocol.spi.AddressFamily;
import io.nvmeof4j.protocol.spi.TransportAddress;
import io.nvmeof4j.protocol.spi.TransportType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The memory limits against the daemon as operators run it: {@code bin/nvmeof-target}, whose JVM has a 256 MiB heap
 * and {@code -XX:+ExitOnOutOfMemoryError}. There, one request for a 64 TiB RAM namespace used to end the process
 * (its chunk table alone took the heap). Now such requests are refused and the process keeps serving; and when RAM
 * namespaces are overcommitted on purpose ({@code ram_budget_mib} above what the JVM may use), writes past the
 * memory fail with Capacity Exceeded and are counted, while the process and the data already written stay.
 */
class ManagementLimitsProcessIT {
    private static final String NQN = "nqn.2014-08.io.nvmeof4j:limits-process";
    private static final String NS = "/api/v1/subsystems/" + NQN + "/namespaces";
    private static final int MIB = 1 << 20;

    @TempDir
    Path dir;

    @Test
    void shouldRefuseHugeRamNamespacesAndKeepTheProcessServing() throws Exception {
        int port = freePort();
        int httpPort = freePort();
        Path config = writeConfig(port, httpPort, "16M", "");
        try (DaemonProcess daemon = DaemonProcess.start(List.of(DaemonProcess.launcher().toString(), "--config",
                config.toString()), dir.resolve("daemon.log"), httpPort);
             NvmeofHost host = NvmeofHost.create(HostIdentity.generate(), 1);
             NvmeofController ctrl = host.connect(address(port), NQN, ConnectOptions.defaults().withIoQueues(1))) {
            Http http = new Http(new InetSocketAddress("127.0.0.1", httpPort), Http.readToken(dir.resolve("api-token")));
            ByteBuffer data = pattern(4096, 1);
            ctrl.namespace(1).write(8, data.duplicate()).get(10, TimeUnit.SECONDS);
            for (int i = 0; i < 3; i++) {
                for (String size : new String[] {"64T", "1T", "8E"}) {
                    Http.Response r = http.post(NS, "{\"nsid\": 2, \"device\": {\"backend\": \"ram\", \"size\": \""
                        + size + "\"}}");
                    assertThat(r.status()).as("%s: %s", size, r.body()).isEqualTo(400);
                }
            }
            assertThat(daemon.isAlive()).as("the daemon process after the refused requests").isTrue();
            assertThat(ctrl.namespace(1).read(8, 4096 / ctrl.namespace(1).blockSize()).get(10, TimeUnit.SECONDS))
                .isEqualTo(data);
            PrometheusText m = new PrometheusText(http.get("/metrics").body());
            assertThat(m.value("nvmeof_target_ram_reserved_bytes", Map.of())).isEqualTo(16 * MIB);
            assertThat(m.value("nvmeof_target_ram_budget_bytes", Map.of())).isGreaterThan(16 * MIB);
            // The budget is the machine's memory less the pools (the launcher sets MaxDirectMemorySize to it).
            assertThat(m.value("nvmeof_target_ram_budget_bytes", Map.of()))
                .isLessThan(((com.sun.management.OperatingSystemMXBean) java.lang.management.ManagementFactory
                    .getOperatingSystemMXBean()).getTotalMemorySize());
        }
    }

    @Test
    void shouldAnswerCapacityExceededWhenOvercommittedRamRunsOutAndKeepServing() throws Exception {
        int port = freePort();
        int httpPort = freePort();
        // 512 MiB of RAM namespace allowed by the budget, but only 96 MiB of direct memory for the JVM.
        Path config = writeConfig(port, httpPort, "512M", ", \"ram_budget_mib\": 1024");
        try (DaemonProcess daemon = DaemonProcess.start(List.of(DaemonProcess.launcher().toString(), "--config",
                config.toString()), Map.of("NVMEOF4J_JAVA_OPTS", "-XX:MaxDirectMemorySize=96m"),
                dir.resolve("daemon.log"), httpPort);
             NvmeofHost host = NvmeofHost.create(HostIdentity.generate(), 1);
             NvmeofController ctrl = host.connect(address(port), NQN, ConnectOptions.defaults().withIoQueues(1))) {
            NvmeofNamespace ns = ctrl.namespace(1);
            long blocksPerMib = MIB / ns.blockSize();
            int written = 0;
            int refused = 0;
            // Bounded: 160 MiB of writes, each 1 MiB to a fresh chunk.
            for (int i = 0; i < 160; i++) {
                try {
                    ns.write(i * blocksPerMib, pattern(MIB, i)).get(10, TimeUnit.SECONDS);
                    assertThat(refused).as("a write succeeded after one was refused for memory").isZero();
                    written++;
                } catch (ExecutionException e) {
                    assertThat(e.getCause()).isInstanceOf(NvmeofIoException.class);
                    int status = ((NvmeofIoException) e.getCause()).status();
                    assertThat(NvmeStatus.code(status)).as("status %s", NvmeStatus.describe(status))
                        .isEqualTo(NvmeStatus.CAPACITY_EXCEEDED);
                    assertThat(NvmeStatus.isDnr(status)).isTrue();
                    refused++;
                }
            }
            assertThat(written).as("writes that found memory").isBetween(8, 96);
            assertThat(refused).isEqualTo(160 - written);
            assertThat(daemon.isAlive()).isTrue();
            for (int i = 0; i < written; i += 7) {
                assertThat(ns.read(i * blocksPerMib, (int) blocksPerMib).get(10, TimeUnit.SECONDS))
                    .as("MiB %d read back", i).isEqualTo(pattern(MIB, i));
            }
            Http http = new Http(new InetSocketAddress("127.0.0.1", httpPort), Http.readToken(dir.resolve("api-token")));
            PrometheusText m = new PrometheusText(http.get("/metrics").body());
            assertThat(m.value("nvmeof_target_ram_allocation_failures_total", Map.of("subsystem", NQN, "nsid", "1")))
                .isEqualTo(refused);
        }
    }

    private Path writeConfig(int port, int httpPort, String size, String settings) throws IOException {
        String text = """
            {
              "ports": [{"portid": 1, "addr": {"trtype": "tcp", "adrfam": "ipv4", "traddr": "127.0.0.1",
                         "trsvcid": "%d"}, "subsystems": ["%s"]}],
              "subsystems": [{"nqn": "%s", "attr": {"allow_any_host": "1"},
                              "namespaces": [{"nsid": 1, "device": {"backend": "ram", "size": "%s"}}]}],
              "nvmeof4j": {"reactors": 1, "buffer_pool_mib": 16, "http": "127.0.0.1:%d" %s}
            }
            """.formatted(port, NQN, NQN, size, httpPort, settings);
        Path config = dir.resolve("target-" + port + ".json");
        Files.writeString(config, text, StandardCharsets.UTF_8);
        return config;
    }

    private static TransportAddress address(int port) {
        return new TransportAddress(TransportType.TCP, AddressFamily.IPV4, "127.0.0.1", Integer.toString(port));
    }

    private static ByteBuffer pattern(int length, int seed) {
        ByteBuffer b = ByteBuffer.allocateDirect(length);
        for (int i = 0; i < length; i++) {
            b.put((byte) (i * 13 + seed * 101 + (i >> 12)));
        }
        return b.flip();
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }
}
