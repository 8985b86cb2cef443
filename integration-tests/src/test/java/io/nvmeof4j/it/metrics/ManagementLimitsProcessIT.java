package io.nvmeof4j.it.metrics;

import io.nvmeof4j.initiator.ConnectOptions;
import io.nvmeof4j.initiator.HostIdentity;
import io.nvmeof4j.initiator.NvmeofController;
import io.nvmeof4j.initiator.NvmeofException;
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
import static org.assertj.core.api.Assertions.catchThrowable;

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

    /**
     * The queue buffer budget (issue 12 item 5): 2 MiB holds one controller whose I/O queue has 64 entries of 16 KiB
     * in-capsule buffers (about 1.4 MiB with its admin queue) and a second one's admin queue, not its I/O queue. That
     * Connect is refused with Controller Busy (no DNR), counted and logged with the peer, the host NQN, the step and
     * the budget; once the first controller is gone its memory is back and the next host connects and does I/O.
     */
    @Test
    void shouldRefuseConnectsBeyondTheQueueBufferBudgetWithControllerBusyAndServeOnceMemoryIsBack() throws Exception {
        int port = freePort();
        int httpPort = freePort();
        Path config = writeConfig(port, httpPort, "16M", ", \"queue_buffer_budget_mib\": 2");
        HostIdentity identity = HostIdentity.generate();
        ConnectOptions options = ConnectOptions.defaults().withIoQueues(1).withQueueDepth(64);
        try (DaemonProcess daemon = DaemonProcess.start(List.of(DaemonProcess.launcher().toString(), "--config",
                config.toString()), dir.resolve("daemon.log"), httpPort);
             NvmeofHost host = NvmeofHost.create(identity, 1)) {
            Http http = new Http(new InetSocketAddress("127.0.0.1", httpPort), Http.readToken(dir.resolve("api-token")));
            Map<String, String> budgetRefusals = Map.of("transport", "tcp", "reason", "queue_buffer_budget");
            double oneController;
            try (NvmeofController first = host.connect(address(port), NQN, options)) {
                PrometheusText m = new PrometheusText(http.get("/metrics").body());
                assertThat(m.value("nvmeof_target_queue_buffers_budget_bytes", Map.of())).isEqualTo(2 * MIB);
                oneController = m.value("nvmeof_target_queue_buffers_reserved_bytes", Map.of());
                assertThat(oneController).as("one controller's queues").isBetween(1.3 * MIB, 1.5 * MIB);
                assertThat(m.value("nvmeof_target_connections_refused_total", budgetRefusals)).isZero();

                Throwable refused = catchThrowable(() -> host.connect(address(port), NQN, options).close());
                NvmeofException connectFailure = cause(refused, NvmeofException.class);
                assertThat(connectFailure).as("the second host's connect: %s", refused).isNotNull();
                assertThat(connectFailure.status()).as(connectFailure.getMessage())
                    .isEqualTo(NvmeStatus.FABRICS_CONTROLLER_BUSY);
                m = new PrometheusText(http.get("/metrics").body());
                assertThat(m.value("nvmeof_target_connections_refused_total", budgetRefusals)).isPositive();
                assertThat(daemon.isAlive()).isTrue();
                ByteBuffer data = pattern(4096, 7);
                first.namespace(1).write(8, data.duplicate()).get(10, TimeUnit.SECONDS);
                assertThat(first.namespace(1).read(8, 4096 / first.namespace(1).blockSize())
                    .get(10, TimeUnit.SECONDS)).isEqualTo(data);
            }
            awaitReserved(http, 0);
            try (NvmeofController next = host.connect(address(port), NQN, options)) {
                ByteBuffer data = pattern(4096, 8);
                next.namespace(1).write(16, data.duplicate()).get(10, TimeUnit.SECONDS);
                assertThat(next.namespace(1).read(16, 4096 / next.namespace(1).blockSize())
                    .get(10, TimeUnit.SECONDS)).isEqualTo(data);
                awaitReserved(http, oneController);
            }
            awaitReserved(http, 0);
        }
        String log = Files.readString(dir.resolve("daemon.log"));
        log.lines().filter(l -> l.contains("rejected with")).forEach(l -> System.out.println("queue buffer budget: " + l));
        assertThat(log).as("the refusal's log line").containsPattern("Connect from 127\\.0\\.0\\.1:\\d+ rejected with "
            + ".*CONTROLLER_BUSY.*NVMe/TCP Connect, setting up the I/O queue 1 of \\d+ entries.*"
            + "queue buffer budget of 2 MiB \\(nvmeof4j\\.queue_buffer_budget_mib\\).*host "
            + java.util.regex.Pattern.quote(identity.hostNqn().value()));
    }

    /**
     * An OutOfMemoryError from the allocation itself (the JVM's direct-memory limit reached before the budget) refuses
     * that Connect with Controller Busy instead of ending the reactor's poll group: the daemon, run as operators run
     * it (with -XX:+ExitOnOutOfMemoryError), keeps serving the controllers it has.
     */
    @Test
    void shouldRefuseTheConnectWhoseBuffersFindNoDirectMemoryAndKeepServing() throws Exception {
        int port = freePort();
        int httpPort = freePort();
        // The RAM budget set: derived, it would be 0 (48 MiB of direct memory less the 4 GiB queue budget).
        Path config = writeConfig(port, httpPort, "16M", ", \"queue_buffer_budget_mib\": 4096, \"ram_budget_mib\": 16");
        ConnectOptions options = ConnectOptions.defaults().withIoQueues(2).withQueueDepth(128);
        List<NvmeofController> controllers = new java.util.ArrayList<>();
        try (DaemonProcess daemon = DaemonProcess.start(List.of(DaemonProcess.launcher().toString(), "--config",
                config.toString()), Map.of("NVMEOF4J_JAVA_OPTS", "-XX:MaxDirectMemorySize=48m"),
                dir.resolve("daemon.log"), httpPort);
             NvmeofHost host = NvmeofHost.create(HostIdentity.generate(), 1)) {
            NvmeofException refused = null;
            try {
                // Bounded: each controller takes some 4.5 MiB of the 48; the allocation fails well before 40.
                for (int i = 0; i < 40 && refused == null; i++) {
                    try {
                        controllers.add(host.connect(address(port), NQN, options));
                    } catch (IOException e) {
                        refused = cause(e, NvmeofException.class);
                        assertThat(refused).as("connect %d failed: %s", i, e).isNotNull();
                    }
                }
                assertThat(refused).as("a Connect refused for direct memory").isNotNull();
                assertThat(refused.status()).as(refused.getMessage()).isEqualTo(NvmeStatus.FABRICS_CONTROLLER_BUSY);
                assertThat(controllers).as("controllers served before memory ran out").isNotEmpty();
                System.out.printf("direct memory: %d controllers (2 I/O queues of 128 each) connected within "
                    + "-XX:MaxDirectMemorySize=48m before a Connect was refused: %s%n", controllers.size(),
                    refused.getMessage());
                assertThat(daemon.isAlive()).as("the daemon after the OutOfMemoryError").isTrue();
                NvmeofController first = controllers.get(0);
                ByteBuffer data = pattern(4096, 9);
                first.namespace(1).write(24, data.duplicate()).get(10, TimeUnit.SECONDS);
                assertThat(first.namespace(1).read(24, 4096 / first.namespace(1).blockSize())
                    .get(10, TimeUnit.SECONDS)).isEqualTo(data);
                Http http = new Http(new InetSocketAddress("127.0.0.1", httpPort),
                    Http.readToken(dir.resolve("api-token")));
                PrometheusText m = new PrometheusText(http.get("/metrics").body());
                assertThat(m.value("nvmeof_target_connections_refused_total",
                    Map.of("transport", "tcp", "reason", "direct_memory"))).isPositive();
                assertThat(m.value("nvmeof_target_connections_refused_total",
                    Map.of("transport", "tcp", "reason", "queue_buffer_budget"))).isZero();
            } finally {
                for (NvmeofController c : controllers) {
                    c.close();
                }
            }
        }
        String log = Files.readString(dir.resolve("daemon.log"));
        log.lines().filter(l -> l.contains("rejected with")).forEach(l -> System.out.println("direct memory: " + l));
        assertThat(log).contains("NVMe/TCP Connect, allocating the buffers of the");
    }

    /** Polls /metrics (bounded, 10 s) until the queue buffers hold {@code bytes}. */
    private void awaitReserved(Http http, double bytes) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        double reserved;
        do {
            reserved = new PrometheusText(http.get("/metrics").body())
                .value("nvmeof_target_queue_buffers_reserved_bytes", Map.of());
            if (reserved == bytes) {
                return;
            }
            Thread.sleep(20);
        } while (System.nanoTime() < deadline);
        assertThat(reserved).as("queue buffers reserved after 10 s").isEqualTo(bytes);
    }

    private static <T extends Throwable> T cause(Throwable t, Class<T> type) {
        for (Throwable c = t; c != null; c = c.getCause()) {
            if (type.isInstance(c)) {
                return type.cast(c);
            }
        }
        return null;
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
