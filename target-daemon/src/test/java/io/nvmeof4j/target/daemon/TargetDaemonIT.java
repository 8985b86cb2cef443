package io.nvmeof4j.target.daemon;

import io.nvmeof4j.protocol.spi.TransportAddress;
import io.nvmeof4j.protocol.spi.TransportType;
import io.nvmeof4j.jni.bdev.BdevIoChannel;
import io.nvmeof4j.target.backend.BdevChannels;
import io.nvmeof4j.target.backend.BindingProbe;
import io.nvmeof4j.target.backend.BlockIo;
import io.nvmeof4j.target.backend.RamBlockDevice;
import io.nvmeof4j.target.backend.Smaps;
import io.nvmeof4j.target.backend.SyncIo;
import io.nvmeof4j.target.backend.UringBlockDevice;
import io.nvmeof4j.target.config.ConfigException;
import io.nvmeof4j.target.config.TargetConfig;
import io.nvmeof4j.target.model.Namespace;
import io.nvmeof4j.target.model.Port;
import io.nvmeof4j.target.model.Subsystem;
import io.nvmeof4j.target.reactor.OnReactor;
import io.nvmeof4j.target.reactor.Reactor;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assumptions.assumeThat;

class TargetDaemonIT {
    private static final String NQN = "nqn.2014-08.io.nvmeof4j:daemon-test";

    @TempDir
    Path dir;

    static String port(int portid, int port, String... nqns) {
        StringBuilder list = new StringBuilder();
        for (String n : nqns) {
            list.append(list.length() == 0 ? "" : ", ").append('"').append(n).append('"');
        }
        return "{\"portid\": " + portid + ", \"addr\": {\"trtype\": \"tcp\", \"adrfam\": \"ipv4\", \"traddr\": "
            + "\"127.0.0.1\", \"trsvcid\": \"" + port + "\"}, \"subsystems\": [" + list + "]}";
    }

    static String config(String ports, String namespaces) {
        return "{\"nvmeof4j\": {\"reactors\": 2, \"buffer_pool_mib\": 4, \"shutdown_timeout_ms\": 1000},"
            + " \"ports\": [" + ports + "], \"subsystems\": [{\"nqn\": \"" + NQN + "\", \"attr\": {\"allow_any_host\": "
            + "\"1\"}, \"namespaces\": [" + namespaces + "]}]}";
    }

    static String ram(int nsid) {
        return "{\"nsid\": " + nsid + ", \"device\": {\"backend\": \"ram\", \"size\": \"16M\"}}";
    }

    /** A port nobody listens on right now. */
    static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        }
    }

    static boolean canBind(int port) {
        try (ServerSocket s = new ServerSocket()) {
            s.bind(new InetSocketAddress("127.0.0.1", port));
            return true;
        } catch (IOException e) {
            return false;
        }
    }

    static boolean acceptsConnections(TransportAddress address) {
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress(address.traddr(), address.port()), 5_000);
            return true;
        } catch (IOException e) {
            return false;
        }
    }

    private static List<String> liveReactorThreads() {
        List<String> names = new ArrayList<>();
        for (Thread t : Thread.getAllStackTraces().keySet()) {
            if (t.isAlive() && t.getName().startsWith("nvmeof-reactor-")) {
                names.add(t.getName());
            }
        }
        return names;
    }

    @Test
    void shouldBindAnyFreePortAndFreeItAgainOnClose() throws Exception {
        Files.write(dir.resolve("existing.img"), new byte[1 << 20]);
        TargetConfig config = TargetConfig.parse(config(port(1, 0, NQN) + ", " + port(2, 0, Port.DISCOVERY_NQN),
            ram(1) + ", {\"nsid\": 2, \"device\": {\"path\": \"existing.img\"}}"
                + ", {\"nsid\": 3, \"device\": {\"path\": \"new.img\", \"size\": \"2M\", \"block_size\": 512}}"
                + ", {\"nsid\": 4, \"enable\": 0, \"device\": {\"backend\": \"null\", \"size\": \"1M\"}}"), dir);
        List<TransportAddress> addresses;
        try (TargetDaemon daemon = TargetDaemon.start(config)) {
            addresses = daemon.listenAddresses();
            assertThat(addresses).hasSize(2);
            assertThat(addresses).allSatisfy(a -> {
                assertThat(a.type()).isEqualTo(TransportType.TCP);
                assertThat(a.traddr()).isEqualTo("127.0.0.1");
                assertThat(a.port()).isPositive();
            });
            assertThat(daemon.model().ports()).extracting(Port::address).containsExactlyElementsOf(addresses);
            assertThat(daemon.model().ports()).extracting(Port::portId).containsExactly(1, 2);
            for (TransportAddress a : addresses) {
                assertThat(acceptsConnections(a)).as("connect to %s", a).isTrue();
                assertThat(canBind(a.port())).as("%s is taken while the daemon runs", a).isFalse();
            }

            Subsystem s = daemon.model().subsystem(NQN);
            assertThat(s.allowAnyHost()).isTrue();
            assertThat(s.namespaces()).extracting(Namespace::nsid).containsExactly(1, 2, 3);
            assertThat(s.namespace(1).blockCount()).isEqualTo((16L << 20) / 512);
            assertThat(s.namespace(2).blockSize()).isEqualTo(4096);
            assertThat(s.namespace(2).blockCount()).isEqualTo((1L << 20) / 4096);
            assertThat(s.namespace(3).blockCount()).isEqualTo((2L << 20) / 512);
            assertThat(dir.resolve("new.img")).exists().hasSize(2L << 20);
            assertThat(s.namespace(4)).as("disabled").isNull();
            assertThat(liveReactorThreads()).contains("nvmeof-reactor-0", "nvmeof-reactor-1");
        }
        for (TransportAddress a : addresses) {
            assertThat(canBind(a.port())).as("%s free after close", a).isTrue();
        }
        assertThat(dir.resolve("new.img")).as("a started daemon keeps the files it created").exists();
        assertThat(liveReactorThreads()).isEmpty();
    }

    @Test
    void shouldFailOnAConfigErrorInALaterNamespaceBeforeBindingOrCreatingAnything() throws Exception {
        int port = freePort();
        String json = config(port(1, port, NQN), ram(1)
            + ", {\"nsid\": 2, \"device\": {\"path\": \"created.img\", \"size\": \"1M\"}}"
            + ", {\"nsid\": 3, \"device\": {\"path\": \"no-such-dir/ns3.img\"}}");
        assertThatThrownBy(() -> TargetConfig.parse(json, dir))
            .isInstanceOf(ConfigException.class)
            .hasMessageStartingWith("subsystems[0].namespaces[2].device.path: ");
        assertThat(dir.resolve("created.img")).doesNotExist();
        assertThat(canBind(port)).isTrue();
    }

    @Test
    void shouldRefuseToStartWithRamNamespacesBeyondTheBudgetBeforeAllocatingAnything() throws Exception {
        int port = freePort();
        String huge = config(port(1, port, NQN), "{\"nsid\": 1, \"device\": {\"backend\": \"ram\", "
            + "\"size\": \"64T\"}}");
        assertThatThrownBy(() -> TargetDaemon.start(TargetConfig.parse(huge, dir)))
            .isInstanceOfSatisfying(ConfigException.class, e -> assertThat(e.path())
                .isEqualTo("subsystems[0].namespaces[0].device.size"))
            .hasMessageContaining(NQN + " namespace 1: 64 TiB of RAM is more than the daemon may use for RAM "
                + "namespaces (RAM budget of");
        // Three 16 MiB namespaces in a 40 MiB budget: the third is named.
        String sum = config(port(1, port, NQN), ram(1) + ", " + ram(2) + ", " + ram(3))
            .replace("\"reactors\": 2,", "\"reactors\": 2, \"ram_budget_mib\": 40,");
        assertThatThrownBy(() -> TargetDaemon.start(TargetConfig.parse(sum, dir)))
            .isInstanceOfSatisfying(ConfigException.class, e -> assertThat(e.path())
                .isEqualTo("subsystems[0].namespaces[2].device.size"))
            .hasMessageContaining("namespace 3: 16 MiB of RAM does not fit: RAM namespaces hold 32 MiB of the RAM "
                + "budget of 40 MiB (nvmeof4j.ram_budget_mib), 8 MiB are left");
        assertThat(canBind(port)).as("nothing bound").isTrue();
        assertThat(liveReactorThreads()).isEmpty();
        try (TargetDaemon daemon = TargetDaemon.start(TargetConfig.parse(sum.replace("\"ram_budget_mib\": 40",
            "\"ram_budget_mib\": 48"), dir))) {
            assertThat(daemon.ramBudget().reservedBytes()).isEqualTo(48L << 20);
            assertThat(daemon.model().subsystem(NQN).namespaces()).hasSize(3);
        }
    }

    /**
     * RAM namespaces are populated in the background from the start, configured and live ones alike, with nobody
     * writing; with {@code ram_budget_mib} above what the JVM may use (overcommitted on purpose) they stay thin. The
     * populator's thread ends with the daemon.
     */
    @Test
    void shouldPopulateRamNamespacesUnlessTheBudgetIsOvercommitted() throws Exception {
        String json = config(port(1, freePort(), NQN), ram(1));
        try (TargetDaemon daemon = TargetDaemon.start(TargetConfig.parse(json, dir))) {
            assertThat(daemon.ramBudget().overcommitted()).isFalse();
            RamBlockDevice configured = (RamBlockDevice) daemon.model().subsystem(NQN).namespace(1).device();
            Namespace live = daemon.addNamespace(NQN, TargetConfig.parseNamespace(new com.fasterxml.jackson.databind
                .ObjectMapper().readTree(ram(2)), "namespace", NQN, dir));
            RamBlockDevice added = (RamBlockDevice) live.device();
            for (int i = 0; i < 1000 && configured.committedBytes() + added.committedBytes() < 32L << 20; i++) {
                Thread.sleep(10);
            }
            assertThat(configured.committedBytes()).as("configured namespace populated").isEqualTo(16L << 20);
            assertThat(added.committedBytes()).as("live namespace populated").isEqualTo(16L << 20);
            assertThat(configured.allocationFailures()).isZero();
        }
        assertThat(liveThreads("nvmeof-ram-populate")).as("populator stopped with the daemon").isEmpty();

        String overcommitted = json.replace("\"reactors\": 2,", "\"reactors\": 2, \"ram_budget_mib\": "
            + (((com.sun.management.OperatingSystemMXBean) java.lang.management.ManagementFactory
                .getOperatingSystemMXBean()).getTotalMemorySize() >> 20) * 4 + ",");
        try (TargetDaemon daemon = TargetDaemon.start(TargetConfig.parse(overcommitted, dir))) {
            assertThat(daemon.ramBudget().overcommitted()).isTrue();
            RamBlockDevice thin = (RamBlockDevice) daemon.model().subsystem(NQN).namespace(1).device();
            Thread.sleep(300);
            assertThat(thin.committedBytes()).as("overcommitted: not populated").isZero();
        }
    }

    private static List<String> liveThreads(String name) {
        List<String> names = new ArrayList<>();
        for (Thread t : Thread.getAllStackTraces().keySet()) {
            if (t.isAlive() && t.getName().equals(name)) {
                names.add(t.getName());
            }
        }
        return names;
    }

    /**
     * RAM namespace chunks on transparent hugepages (where the kernel's mode is "madvise", as Debian's default): by
     * default when the namespace is populated, which faults every chunk in off the reactor; not when the budget is
     * overcommitted (a thin namespace's first write would fault a whole 2 MiB in on the reactor: milliseconds on a VM
     * whose host takes back free memory) nor with {@code "hugepages": false}; always with {@code true}.
     */
    @Test
    void shouldPutPopulatedRamNamespacesOnTransparentHugepagesByDefault() throws Exception {
        assumeThat(Smaps.transparentHugepagesByAdvice()).as("transparent hugepages by advice (Debian's default)")
            .isTrue();
        String overcommit = "\"ram_budget_mib\": " + (((com.sun.management.OperatingSystemMXBean)
            java.lang.management.ManagementFactory.getOperatingSystemMXBean()).getTotalMemorySize() >> 20) * 4 + ",";
        for (String[] c : new String[][] {{"\"hugepages\": false,", "no"}, {overcommit, "no"}, {"", "yes"},
            {"\"hugepages\": true, " + overcommit, "yes"}, {"\"hugepages\": true,", "yes"}}) {
            String json = config(port(1, freePort(), NQN), ram(1))
                .replace("\"reactors\": 2,", "\"reactors\": 2, " + c[0]);
            boolean huge = c[1].equals("yes");
            // Before the start: population faults chunks in from the start on.
            long before = Smaps.anonHugeKibOnceChunksUnmapped();
            try (TargetDaemon daemon = TargetDaemon.start(TargetConfig.parse(json, dir))) {
                Namespace ns = daemon.model().subsystem(NQN).namespaces().iterator().next();
                for (int chunk = 0; chunk < 8; chunk++) { // 4 KiB every 2 MiB of the 16 MiB: 8 chunks
                    assertThat(SyncIo.run(ns.device(), BlockIo.Op.WRITE, chunk * (2L << 20), 4096,
                        SyncIo.pattern(4096, chunk), false)).isZero();
                }
                long grown = Smaps.anonHugeKib() - before;
                if (huge) {
                    assertThat(grown).as("AnonHugePages grown, KiB, " + c[0]).isGreaterThanOrEqualTo(6 * 2048);
                } else {
                    assertThat(grown).as("AnonHugePages grown, KiB, " + c[0]).isLessThan(2048);
                }
                ByteBuffer back = ByteBuffer.allocateDirect(4096);
                assertThat(SyncIo.run(ns.device(), BlockIo.Op.READ, 7 * (2L << 20), 4096, back, false)).isZero();
                assertThat(back).isEqualTo(SyncIo.pattern(4096, 7));
            }
        }
    }

    /**
     * Issue 12: a file namespace added live gets its channel on every reactor's ring when it is added, as an I/O
     * queue's Connect opens its subsystem's, so no I/O opens one; removing it closes them.
     */
    @Test
    void shouldOpenALiveFileNamespacesChannelOnEveryReactorWhenItIsAdded() throws Exception {
        Path files = Files.createDirectory(dir.resolve("files"));
        String json = config(port(1, freePort(), NQN), ram(1)).replace("\"shutdown_timeout_ms\": 1000",
            "\"shutdown_timeout_ms\": 1000, \"allowed_paths\": [\"" + files + "\"]");
        try (TargetDaemon daemon = TargetDaemon.start(TargetConfig.parse(json, dir))) {
            Namespace added = daemon.addNamespace(NQN, TargetConfig.parseNamespace(new com.fasterxml.jackson.databind
                .ObjectMapper().readTree("{\"nsid\": 2, \"device\": {\"backend\": \"file\", \"path\": \""
                    + files.resolve("ns2.img") + "\", \"size\": \"4M\"}}"), "namespace", NQN, dir));
            assertThat(added.device()).isInstanceOf(UringBlockDevice.class);
            UringBlockDevice device = (UringBlockDevice) added.device();
            List<Reactor> reactors = daemon.reactors();
            assertThat(reactors).hasSize(2);
            List<BdevIoChannel> opened = new ArrayList<>();
            for (Reactor reactor : reactors) {
                // Behind the add's task on the reactor's queue: it sees what that task did.
                BdevIoChannel channel = OnReactor.call(reactor,
                    () -> BindingProbe.channel(reactor.pollGroup(BdevChannels.class), device));
                assertThat(channel).as("channel on %s", reactor.name()).isNotNull();
                opened.add(channel);
            }
            assertThat(daemon.removeNamespace(NQN, 2)).isSameAs(added);
            assertThat(opened).as("closed by the removal").allMatch(BdevIoChannel::isClosed);
        }
    }


    @Test
    void shouldRecheckTheFilesAtStart() throws Exception {
        int port = freePort();
        Path sub = Files.createDirectory(dir.resolve("sub"));
        TargetConfig config = TargetConfig.parse(config(port(1, port, NQN), ram(1)
            + ", {\"nsid\": 2, \"device\": {\"path\": \"created.img\", \"size\": \"1M\"}}"
            + ", {\"nsid\": 3, \"device\": {\"path\": \"sub/ns3.img\", \"size\": \"1M\"}}"), dir);
        Files.delete(sub); // gone between loading and starting

        assertThatThrownBy(() -> TargetDaemon.start(config))
            .isInstanceOf(ConfigException.class)
            .hasMessageStartingWith("subsystems[0].namespaces[2].device.path: ")
            .hasMessageContaining("sub");
        assertThat(dir.resolve("created.img")).doesNotExist();
        assertThat(canBind(port)).isTrue();
        assertThat(liveReactorThreads()).isEmpty();
    }

    @Test
    void shouldUndoEverythingWhenAPortCannotBeBound() throws Exception {
        int first = freePort();
        try (ServerSocket taken = new ServerSocket()) {
            taken.bind(new InetSocketAddress("127.0.0.1", 0));
            int busy = taken.getLocalPort();
            TargetConfig config = TargetConfig.parse(config(port(1, first, NQN) + ", " + port(2, busy),
                "{\"nsid\": 1, \"device\": {\"path\": \"fresh.img\", \"size\": \"1M\"}}"), dir);

            assertThatThrownBy(() -> TargetDaemon.start(config))
                .isInstanceOf(IOException.class)
                .isNotInstanceOf(ConfigException.class)
                .hasMessageContaining("ports[1] (portid 2)")
                .hasMessageContaining("127.0.0.1:" + busy);
        }
        assertThat(canBind(first)).as("the port bound before the failure is free again").isTrue();
        assertThat(dir.resolve("fresh.img")).as("the file the failed start created is gone").doesNotExist();
        assertThat(liveReactorThreads()).isEmpty();
    }

    @Test
    void shouldNameTheNamespaceWhoseDeviceCannotBeOpened() throws Exception {
        int port = freePort();
        Path image = dir.resolve("locked.img");
        try (RandomAccessFile f = new RandomAccessFile(image.toFile(), "rw")) {
            f.setLength(1 << 20);
            f.getChannel().lock(); // held by this JVM: the device's own tryLock fails
            TargetConfig config = TargetConfig.parse(config(port(1, port, NQN),
                ram(1) + ", {\"nsid\": 2, \"device\": {\"path\": \"locked.img\"}}"), dir);
            assertThatThrownBy(() -> TargetDaemon.start(config))
                .isInstanceOf(IOException.class)
                .hasMessageStartingWith("subsystems[0].namespaces[1]")
                .hasMessageContaining("locked.img");
        }
        assertThat(canBind(port)).isTrue();
        assertThat(image).as("an existing file is never removed").exists();
    }

    @Test
    void shouldServeTcpPortsWhenRdmaIsUnavailable() throws Exception {
        // The build machine has no RDMA device (the guest tests have one): the RDMA port is skipped, naming why.
        assertThat(io.nvmeof4j.jni.rdma.Rdma.unavailabilityCause()).isNotNull();
        String json = config("{\"portid\": 9, \"addr\": {\"trtype\": \"rdma\", \"adrfam\": \"ipv4\", \"traddr\": "
            + "\"10.0.0.1\", \"trsvcid\": \"4420\"}, \"subsystems\": [\"" + NQN + "\"]}, " + port(1, 0, NQN), ram(1));
        try (TargetDaemon daemon = TargetDaemon.start(TargetConfig.parse(json, dir))) {
            assertThat(daemon.listenAddresses()).hasSize(1);
            assertThat(daemon.model().ports()).extracting(Port::portId).containsExactly(1);
        }
    }

    @Test
    void shouldCloseOnceWhenClosedConcurrently() throws Exception {
        TargetDaemon daemon = TargetDaemon.start(TargetConfig.parse(config(port(1, 0, NQN), ram(1)), dir));
        TransportAddress address = daemon.listenAddresses().get(0);
        CountDownLatch go = new CountDownLatch(1);
        AtomicReference<Throwable> failure = new AtomicReference<>();
        List<Thread> closers = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            Thread t = new Thread(() -> {
                try {
                    go.await(10, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                daemon.close();
                // Whoever returns from close() finds the daemon closed: concurrent callers wait for the first.
                // (Connecting, not binding: the closers' own test binds would collide with each other.)
                if (acceptsConnections(address)) {
                    failure.compareAndSet(null, new AssertionError("close() returned before the listener closed"));
                }
            });
            closers.add(t);
            t.start();
        }
        go.countDown();
        for (Thread t : closers) {
            t.join(30_000);
            assertThat(t.isAlive()).isFalse();
        }
        assertThat(failure.get()).isNull();
        assertThat(daemon.isClosed()).isTrue();
        daemon.close();
        assertThat(canBind(address.port())).isTrue();
    }
}
