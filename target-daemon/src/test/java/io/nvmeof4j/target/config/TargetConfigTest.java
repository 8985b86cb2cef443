package io.nvmeof4j.target.config;

import io.nvmeof4j.tcp.tls.NvmeTlsKeys;

import io.nvmeof4j.protocol.spi.AddressFamily;
import io.nvmeof4j.protocol.spi.ConnectionLimits;
import io.nvmeof4j.protocol.spi.PortOptions;
import io.nvmeof4j.protocol.spi.TransportAddress;
import io.nvmeof4j.protocol.spi.TransportType;
import io.nvmeof4j.target.model.Port;
import io.nvmeof4j.protocol.spi.idle.IdleMode;
import io.nvmeof4j.protocol.auth.DhchapCredentials;
import io.nvmeof4j.protocol.auth.DhchapGroup;
import io.nvmeof4j.protocol.auth.DhchapHash;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.IOException;
import java.io.InputStream;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.time.Duration;
import java.util.HexFormat;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class TargetConfigTest {
    private static final String NQN_A = "nqn.2014-08.io.nvmeof4j:a";
    private static final String NQN_B = "nqn.2014-08.io.nvmeof4j:b";
    private static final String HOST = "nqn.2014-08.org.nvmexpress:uuid:11111111-2222-3333-4444-555555555555";

    @TempDir
    Path dir;

    /** A valid configuration: one TCP port exporting subsystem a with one RAM namespace; parts replaced per test. */
    private static String config(String ports, String subsystems) {
        return "{\"ports\": " + ports + ", \"subsystems\": " + subsystems + "}";
    }

    private static String tcpPort(int portid, String traddr, String trsvcid, String... nqns) {
        StringBuilder list = new StringBuilder();
        for (String n : nqns) {
            list.append(list.length() == 0 ? "" : ", ").append('"').append(n).append('"');
        }
        return "{\"portid\": " + portid + ", \"addr\": {\"trtype\": \"tcp\", \"traddr\": \"" + traddr
            + "\", \"trsvcid\": \"" + trsvcid + "\"}, \"subsystems\": [" + list + "]}";
    }

    private static String subsystem(String nqn, String namespaces) {
        return "{\"nqn\": \"" + nqn + "\", \"attr\": {\"allow_any_host\": \"1\"}, \"namespaces\": [" + namespaces + "]}";
    }

    private static String ramNamespace(int nsid) {
        return "{\"nsid\": " + nsid + ", \"device\": {\"backend\": \"ram\", \"size\": \"1M\"}}";
    }

    private static String withNamespaces(String... namespaces) {
        return config("[" + tcpPort(1, "127.0.0.1", "0", NQN_A) + "]",
            "[" + subsystem(NQN_A, String.join(", ", namespaces)) + "]");
    }

    private static String withDevice(String device) {
        return withNamespaces(ramNamespace(1), "{\"nsid\": 2, \"device\": " + device + "}");
    }

    private static String withPort(String port) {
        return config("[" + port + "]", "[" + subsystem(NQN_A, ramNamespace(1)) + "]");
    }

    private TargetConfig parse(String json) throws ConfigException {
        return TargetConfig.parse(json, dir);
    }

    private void assertRejected(String json, String path, String... fragments) {
        assertThatThrownBy(() -> parse(json))
            .isInstanceOfSatisfying(ConfigException.class, e -> {
                assertThat(e.path()).isEqualTo(path);
                assertThat(e.getMessage()).startsWith(path.isEmpty() ? "" : path + ": ");
                for (String f : fragments) {
                    assertThat(e.getMessage()).contains(f);
                }
            });
    }

    // ------------------------------------------------------------------------------------- valid configurations

    @Test
    void shouldDescribeTheEmbeddedDefault() throws ConfigException {
        TargetConfig config = TargetConfig.embeddedDefault();
        assertThat(config.ports()).hasSize(2);
        PortConfig io = config.ports().get(0);
        assertThat(io.portId()).isEqualTo(1);
        assertThat(io.address()).isEqualTo(TransportAddress.tcp("127.0.0.1", 4420));
        assertThat(io.subsystems()).containsExactly(TargetConfig.DEMO_NQN);
        assertThat(io.options().inlineDataSize()).isEqualTo(16384);
        PortConfig discovery = config.ports().get(1);
        assertThat(discovery.portId()).isEqualTo(2);
        assertThat(discovery.address()).isEqualTo(TransportAddress.tcp("127.0.0.1", 8009));
        assertThat(discovery.subsystems()).containsExactly(Port.DISCOVERY_NQN);

        assertThat(config.subsystems()).hasSize(1);
        SubsystemConfig demo = config.subsystems().get(0);
        assertThat(demo.nqn()).isEqualTo("nqn.2014-08.io.nvmeof4j:demo");
        assertThat(demo.allowAnyHost()).isTrue();
        assertThat(demo.model()).isEqualTo("nvmeof4j");
        assertThat(demo.serial()).matches("[0-9a-f]{16}");
        assertThat(demo.namespaces()).hasSize(1);
        NamespaceConfig ns = demo.namespaces().get(0);
        assertThat(ns.nsid()).isEqualTo(1);
        assertThat(ns.enabled()).isTrue();
        assertThat(ns.backend()).isEqualTo(BackendType.RAM);
        assertThat(ns.sizeBytes()).isEqualTo(1L << 30);
        assertThat(ns.blockSize()).isEqualTo(512);
        assertThat(config.notices()).isEmpty();

        TargetConfig again = TargetConfig.embeddedDefault();
        NamespaceConfig same = again.subsystems().get(0).namespaces().get(0);
        assertThat(same.uuid()).as("identifiers stable across restarts").isEqualTo(ns.uuid());
        assertThat(same.nguid()).isEqualTo(ns.nguid());
        assertThat(again.subsystems().get(0).serial()).isEqualTo(demo.serial());
    }

    @Test
    void shouldLoadAnNvmetcliSaveFileVerbatim() throws Exception {
        String saved;
        try (InputStream in = getClass().getResourceAsStream("/config/nvmetcli-save.json")) {
            saved = new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
        // The file is exactly what `nvmetcli save` writes; only its image directory moves into the test's.
        Files.write(dir.resolve("ssd1.img"), new byte[1 << 20]);
        Files.write(dir.resolve("scratch.img"), new byte[64 << 10]);
        Path file = dir.resolve("config.json");
        Files.writeString(file, saved.replace("/srv/nvmet/", dir.toAbsolutePath() + "/"));

        TargetConfig config = TargetConfig.load(file);

        assertThat(config.source()).contains(file.toAbsolutePath());
        assertThat(config.hosts()).containsExactly("nqn.2014-08.org.nvmexpress:uuid:0c2d0d3c-7a4e-4f7e-9e3c-8d0c4b6f2a11");
        assertThat(config.ports()).extracting(PortConfig::portId).containsExactly(1, 2, 3);
        assertThat(config.ports().get(1).transportType()).isEqualTo(TransportType.RDMA);
        assertThat(config.servablePorts()).extracting(PortConfig::portId).containsExactly(1, 2, 3);
        assertThat(config.ports().get(1).options().inlineDataSize()).as("RDMA default: one page, as nvmet-rdma")
            .isEqualTo(PortConfig.RDMA_INLINE_DATA_SIZE_DEFAULT);
        PortConfig p1 = config.ports().get(0);
        assertThat(p1.address()).isEqualTo(new TransportAddress(TransportType.TCP, AddressFamily.IPV4, "127.0.0.1", "4420"));
        assertThat(p1.options().inlineDataSize()).as("-1: the default").isEqualTo(PortOptions.INLINE_DATA_SIZE_DEFAULT);
        assertThat(p1.options().maxQueueSize()).isEqualTo(PortOptions.MAX_QUEUE_SIZE_DEFAULT);
        assertThat(p1.subsystems()).containsExactly("nqn.2014-08.org.example:storage.ssd1",
            "nqn.2014-08.org.example:storage.scratch");
        PortConfig p3 = config.ports().get(2);
        assertThat(p3.addressFamily()).isEqualTo(AddressFamily.IPV6);
        assertThat(p3.address().traddr()).isEqualTo("::1");
        assertThat(p3.address().port()).isEqualTo(4421);
        assertThat(p3.options().inlineDataSize()).isEqualTo(16384);

        SubsystemConfig ssd = config.subsystems().get(0);
        assertThat(ssd.allowAnyHost()).isFalse();
        assertThat(ssd.allowedHosts()).containsExactly(config.hosts().get(0));
        assertThat(ssd.serial()).isEqualTo("a3f1c2d4e5b60718");
        assertThat(ssd.model()).isEqualTo("Linux");
        assertThat(ssd.firmware()).isEqualTo("6.1.0-28");
        assertThat(ssd.version()).isEqualTo("1.3");
        assertThat(ssd.qidMax()).isEqualTo(128);
        NamespaceConfig ssd1 = ssd.namespaces().get(0);
        assertThat(ssd1.backend()).isEqualTo(BackendType.FILE);
        assertThat(ssd1.path()).isEqualTo(dir.toAbsolutePath().resolve("ssd1.img"));
        assertThat(ssd1.sizeBytes()).as("the file's size").isZero();
        assertThat(ssd1.blockSize()).as("no block_size: the device's").isZero();
        assertThat(ssd1.uuid()).isEqualTo(UUID.fromString("5d0a1f9e-3c2b-4a8d-9e7f-1b2c3d4e5f60"));
        assertThat(ssd1.nguid()).as("nvmet's all-zero NGUID means none: derived").isNotEqualTo(new byte[16]);

        SubsystemConfig scratch = config.subsystems().get(1);
        assertThat(scratch.allowAnyHost()).isTrue();
        assertThat(scratch.namespaces().get(0).nguidText()).isEqualTo("ef90689c-6c46-d44c-89c1-4067801309a8");
        NamespaceConfig disabled = scratch.namespaces().get(1);
        assertThat(disabled.enabled()).isFalse();
        assertThat(disabled.path()).isEqualTo(Path.of("/dev/nvme9n1"));

        assertThat(p1.anaGroups()).as("nvmetcli's ana_groups").isEqualTo(java.util.Map.of(1, 1));
        assertThat(ssd1.anaGroupId()).isEqualTo(1);
        assertThat(ssd1.shared()).isFalse();
        assertThat(config.notices()).extracting(TargetConfig.Notice::text).anySatisfy(t ->
            assertThat(t).startsWith("subsystems[0].attr.version: ignored"));
        assertThat(config.hostCredentials()).as("nvmetcli saves a host without a key as key \"\"").isEmpty();
        assertThat(config.notices()).extracting(TargetConfig.Notice::text).anySatisfy(t ->
            assertThat(t).contains("namespaces[1]: enable is 0"));
        assertThat(config.notices()).as("every key of an nvmetcli file is known").noneMatch(n ->
            n.text().contains("unknown key"));
    }

    @Test
    void shouldReadAnaGroupsSharedDevicesAndCntlidRanges() throws Exception {
        Files.write(dir.resolve("shared.img"), new byte[1 << 20]);
        String json = config("[{\"portid\": 1, \"addr\": {\"trtype\": \"tcp\", \"traddr\": \"127.0.0.1\", "
                + "\"trsvcid\": 0}, \"subsystems\": [\"" + NQN_A + "\"], \"ana_groups\": ["
                + "{\"grpid\": 1, \"ana\": {\"state\": \"non-optimized\"}}, {\"grpid\": 7, \"ana\": {\"state\": \"inaccessible\"}}]}]",
            "[{\"nqn\": \"" + NQN_A + "\", \"attr\": {\"allow_any_host\": true, \"cntlid_min\": 100, \"cntlid_max\": 199}, "
                + "\"namespaces\": [{\"nsid\": 1, \"ana_grpid\": 7, \"device\": {\"path\": \"shared.img\", \"shared\": true}}]}]");
        TargetConfig config = parse(json);
        assertThat(config.ports().get(0).anaGroups()).isEqualTo(java.util.Map.of(1, 2, 7, 3));
        SubsystemConfig s = config.subsystems().get(0);
        assertThat(s.cntlidMin()).isEqualTo(100);
        assertThat(s.cntlidMax()).isEqualTo(199);
        assertThat(s.namespaces().get(0).anaGroupId()).isEqualTo(7);
        assertThat(s.namespaces().get(0).shared()).isTrue();
        assertThat(config.notices()).noneMatch(n -> n.text().contains("cntlid") || n.text().contains("ana"));

        assertThatThrownBy(() -> parse(json.replace("non-optimized", "sideways")))
            .isInstanceOf(ConfigException.class).hasMessageContaining("ports[0].ana_groups[0].ana.state");
        assertThatThrownBy(() -> parse(json.replace("\"grpid\": 7", "\"grpid\": 129")))
            .isInstanceOf(ConfigException.class).hasMessageContaining("ports[0].ana_groups[1].grpid");
        assertThatThrownBy(() -> parse(json.replace("\"ana_grpid\": 7", "\"ana_grpid\": 0")))
            .isInstanceOf(ConfigException.class).hasMessageContaining("namespaces[0].ana_grpid");
    }

    @Test
    void shouldAcceptNumbersWhereNvmetcliWritesStrings() throws Exception {
        String json = config("[{\"portid\": \"7\", \"addr\": {\"trtype\": \"tcp\", \"traddr\": \"127.0.0.1\", "
                + "\"trsvcid\": 0}, \"param\": {\"inline_data_size\": 8192}, \"subsystems\": [\"" + NQN_A + "\"]}]",
            "[{\"nqn\": \"" + NQN_A + "\", \"attr\": {\"allow_any_host\": true, \"qid_max\": 4}, \"namespaces\": ["
                + "{\"nsid\": \"3\", \"enable\": \"1\", \"device\": {\"backend\": \"null\", \"size\": 1048576, "
                + "\"block_size\": \"4096\"}}]}]");
        TargetConfig config = parse(json);
        assertThat(config.ports().get(0).portId()).isEqualTo(7);
        assertThat(config.ports().get(0).options().inlineDataSize()).isEqualTo(8192);
        SubsystemConfig s = config.subsystems().get(0);
        assertThat(s.allowAnyHost()).isTrue();
        assertThat(s.qidMax()).isEqualTo(4);
        assertThat(config.maxIoQueues()).isEqualTo(4);
        NamespaceConfig ns = s.namespaces().get(0);
        assertThat(ns.nsid()).isEqualTo(3);
        assertThat(ns.backend()).isEqualTo(BackendType.NULL);
        assertThat(ns.sizeBytes()).isEqualTo(1 << 20);
        assertThat(ns.blockSize()).isEqualTo(4096);
    }

    @Test
    void shouldApplyDefaults() throws Exception {
        TargetConfig config = parse(withNamespaces(ramNamespace(1)));
        DaemonSettings d = config.daemon();
        assertThat(d.reactors()).isEqualTo(DaemonSettings.defaultReactors(Runtime.getRuntime().availableProcessors()));
        assertThat(d.idleStrategy()).isEqualTo(IdleMode.ADAPTIVE);
        assertThat(d.idleSpinNanos()).isEqualTo(TimeUnit.MICROSECONDS.toNanos(50));
        assertThat(d.bufferPoolBytes()).isEqualTo(64L << 20);
        assertThat(d.maxDataTransferSize()).isEqualTo(1 << 20);
        assertThat(d.hugepages()).isEqualTo(Hugepages.POPULATED_RAM);
        assertThat(ConfigWriter.settings(d).has(DaemonSettings.HUGEPAGES)).as("the default is written as no setting")
            .isFalse();
        assertThat(d.shutdownTimeout()).isEqualTo(Duration.ofSeconds(5));
        SubsystemConfig s = config.subsystems().get(0);
        assertThat(s.model()).isEqualTo("nvmeof4j");
        assertThat(s.firmware()).isNotEmpty().hasSizeLessThanOrEqualTo(8);
        assertThat(s.qidMax()).isEqualTo(128);
        assertThat(s.cntlidMin()).isEqualTo(1);
        assertThat(s.cntlidMax()).isEqualTo(0xFFEF);
        assertThat(s.namespaces().get(0).enabled()).as("enable defaults to 1").isTrue();
        assertThat(s.namespaces().get(0).blockSize()).isEqualTo(512);
    }

    @Test
    void shouldChooseReactorsFromTheCpuCount() {
        assertThat(DaemonSettings.defaultReactors(1)).isEqualTo(1);
        assertThat(DaemonSettings.defaultReactors(2)).isEqualTo(1);
        assertThat(DaemonSettings.defaultReactors(4)).isEqualTo(2);
        assertThat(DaemonSettings.defaultReactors(16)).isEqualTo(8);
    }

    @Test
    void shouldReadDaemonSettings() throws Exception {
        String json = withNamespaces(ramNamespace(1)).replaceFirst("\\{", "{\"nvmeof4j\": {\"reactors\": 3, "
            + "\"idle_strategy\": \"busy\", \"idle_spin_us\": 10, \"buffer_pool_mib\": 16, "
            + "\"max_data_transfer_kib\": 512, \"hugepages\": true, \"file_workers\": 4, "
            + "\"shutdown_timeout_ms\": 250}, ");
        DaemonSettings d = parse(json).daemon();
        assertThat(d).isEqualTo(new DaemonSettings(3, IdleMode.BUSY, 10_000, 16L << 20, 512 << 10, Hugepages.ALL,
            Duration.ofMillis(250)).withHttpSecurity(d.httpSecurity()));
        assertThat(parse(json).ports().get(0).options().maxDataTransferSize()).isEqualTo(512 << 10);
    }

    /**
     * {@code hugepages}: absent, populated RAM namespaces on hugepages; {@code true} pools and every RAM namespace;
     * {@code false} nothing. Every spelling that was valid before still parses, and the writer keeps explicit values.
     */
    @Test
    void shouldReadHugepagesAsDefaultAllOrNone() throws Exception {
        for (Object[] c : new Object[][] {{"true", Hugepages.ALL}, {"\"on\"", Hugepages.ALL}, {"1", Hugepages.ALL},
            {"false", Hugepages.NONE}, {"\"no\"", Hugepages.NONE}, {"0", Hugepages.NONE}}) {
            DaemonSettings d = parse(withNamespaces(ramNamespace(1)).replaceFirst("\\{",
                "{\"nvmeof4j\": {\"hugepages\": " + c[0] + "}, ")).daemon();
            assertThat(d.hugepages()).as(c[0].toString()).isEqualTo(c[1]);
            assertThat(ConfigWriter.settings(d).get(DaemonSettings.HUGEPAGES).asBoolean()).as(c[0].toString())
                .isEqualTo(c[1] == Hugepages.ALL);
        }
        for (String bad : new String[] {"\"maybe\"", "2", "null", "[true]", "{}"}) {
            assertRejected(withNamespaces(ramNamespace(1)).replaceFirst("\\{",
                "{\"nvmeof4j\": {\"hugepages\": " + bad + "}, "), "nvmeof4j.hugepages");
        }
        assertThat(Hugepages.POPULATED_RAM.ramChunks(true)).isTrue();
        assertThat(Hugepages.POPULATED_RAM.ramChunks(false)).as("thin (overcommitted) namespaces").isFalse();
        assertThat(Hugepages.POPULATED_RAM.pools()).isFalse();
        assertThat(Hugepages.ALL.ramChunks(false)).isTrue();
        assertThat(Hugepages.ALL.pools()).isTrue();
        assertThat(Hugepages.NONE.ramChunks(true)).isFalse();
        assertThat(Hugepages.NONE.pools()).isFalse();
    }

    @Test
    void shouldReadTheQueueBufferBudgetAndWarnWhenNoControllerOfAPortFits() throws Exception {
        TargetConfig defaults = parse(withNamespaces(ramNamespace(1)));
        assertThat(defaults.daemon().queueBufferBudgetBytes()).isEqualTo(512L << 20);
        assertThat(defaults.notices()).noneSatisfy(n -> assertThat(n.text()).contains("queue_buffer_budget_mib"));
        // The default port: an admin queue (about 330 KiB) and an I/O queue of 128 x 16 KiB (about 2.1 MiB).
        TargetConfig small = parse(withNamespaces(ramNamespace(1)).replaceFirst("\\{",
            "{\"nvmeof4j\": {\"queue_buffer_budget_mib\": 2}, "));
        assertThat(small.daemon().queueBufferBudgetBytes()).isEqualTo(2L << 20);
        assertThat(small.notices()).anySatisfy(n -> {
            assertThat(n.warning()).isTrue();
            assertThat(n.text()).startsWith("nvmeof4j.queue_buffer_budget_mib: 2 MiB cannot hold a controller of "
                + "ports[0] (portid 1)").contains("need 3 MiB").contains("Controller Busy");
        });
        assertThat(parse(withNamespaces(ramNamespace(1)).replaceFirst("\\{",
            "{\"nvmeof4j\": {\"queue_buffer_budget_mib\": 3}, ")).notices())
            .noneSatisfy(n -> assertThat(n.text()).contains("queue_buffer_budget_mib"));
        assertRejected(withNamespaces(ramNamespace(1)).replaceFirst("\\{",
            "{\"nvmeof4j\": {\"queue_buffer_budget_mib\": 0}, "), "nvmeof4j.queue_buffer_budget_mib");
        // Written back as read (the control plane persists the settings).
        assertThat(ConfigWriter.settings(small.daemon()).get("queue_buffer_budget_mib").asLong()).isEqualTo(2);
    }

    @Test
    void shouldReadReactorCpusAsOneReactorPerCpuAndWriteThemBack() throws Exception {
        TargetConfig list = parse(withNamespaces(ramNamespace(1)).replaceFirst("\\{",
            "{\"nvmeof4j\": {\"reactor_cpus\": \"1\"}, "));
        assertThat(list.daemon().reactorCpus()).isEqualTo(io.nvmeof4j.jni.cpu.CpuSet.of(1));
        assertThat(list.daemon().reactors()).isEqualTo(1);
        TargetConfig mask = parse(withNamespaces(ramNamespace(1)).replaceFirst("\\{",
            "{\"nvmeof4j\": {\"reactor_cpus\": \"0x3\", \"reactors\": 2}, "));
        assertThat(mask.daemon().reactorCpus().toString()).isEqualTo("0-1");
        assertThat(mask.daemon().reactors()).isEqualTo(2);
        assertThat(ConfigWriter.settings(mask.daemon()).get("reactor_cpus").asText()).isEqualTo("0-1");
        assertThat(parse(withNamespaces(ramNamespace(1))).daemon().reactorCpus()).as("absent: not pinned").isNull();
        assertThat(ConfigWriter.settings(list.withDaemonSettings(list.daemon()).daemon()).get("reactor_cpus").asText())
            .isEqualTo("1");
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
        "\"reactor_cpus\": \"1\", \"reactors\": 2|nvmeof4j.reactors: 2 differs from the 1 CPU(s) of "
            + "nvmeof4j.reactor_cpus \"1\" (one reactor per CPU): drop reactors or make them agree",
        "\"reactor_cpus\": \"\"|nvmeof4j.reactor_cpus: \"\" is empty: expected a CPU list such as \"0-3,8\" or a "
            + "core mask such as \"0x3\"",
        "\"reactor_cpus\": \"3-1\"|nvmeof4j.reactor_cpus: CPU list \"3-1\": CPU 3 is beyond this machine's",
        "\"reactor_cpus\": \"0-99999999\"|nvmeof4j.reactor_cpus: CPU list \"0-99999999\": CPU 99999999 is beyond "
            + "this machine's",
        "\"reactor_cpus\": \"0x\"|nvmeof4j.reactor_cpus: core mask \"0x\" has no hex digits (example: \"0x3\")",
        "\"reactor_cpus\": \"-1\"|nvmeof4j.reactor_cpus: CPU list \"-1\": \"-1\" is not a CPU number or range",
        "\"reactor_cpus\": 1|nvmeof4j.reactor_cpus: must be a string: a CPU list (\"0-3,8\") or a core mask "
            + "(\"0x3\"), not"})
    void shouldRefuseBadReactorCpusWithTheirMessage(String settings, String message) {
        String json = withNamespaces(ramNamespace(1)).replaceFirst("\\{", "{\"nvmeof4j\": {" + settings + "}, ");
        assertThatThrownBy(() -> parse(json)).isInstanceOf(ConfigException.class).hasMessageStartingWith(message);
    }

    @Test
    void shouldReadConnectionLimitsIntoEveryPort() throws Exception {
        String json = withNamespaces(ramNamespace(1)).replaceFirst("\\{", "{\"nvmeof4j\": {"
            + "\"max_pending_connections\": 100, \"max_pending_connections_per_host\": 20, "
            + "\"connect_timeout_ms\": 2500}, ");
        ConnectionLimits expected = new ConnectionLimits(100, 20, TimeUnit.MILLISECONDS.toNanos(2500));
        assertThat(parse(json).daemon().connectionLimits()).isEqualTo(expected);
        assertThat(parse(json).ports().get(0).options().connectionLimits()).isEqualTo(expected);
        // 20 is below qid_max + 1 (129): a Linux host setting up all its queues would be refused.
        assertThat(parse(json).notices()).anySatisfy(n -> {
            assertThat(n.warning()).isTrue();
            assertThat(n.text()).startsWith("nvmeof4j.max_pending_connections_per_host: 20 is below the 129 queues");
        });
        assertThat(parse(withNamespaces(ramNamespace(1))).notices())
            .noneSatisfy(n -> assertThat(n.text()).contains("max_pending_connections_per_host"));
    }

    @Test
    void shouldDefaultConnectionLimitsAndLowerThePerHostDefaultWithThePortLimit() throws Exception {
        assertThat(parse(withNamespaces(ramNamespace(1))).ports().get(0).options().connectionLimits())
            .isEqualTo(ConnectionLimits.defaults());
        String json = withNamespaces(ramNamespace(1)).replaceFirst("\\{",
            "{\"nvmeof4j\": {\"max_pending_connections\": 50}, ");
        ConnectionLimits limits = parse(json).daemon().connectionLimits();
        assertThat(limits.maxPending()).isEqualTo(50);
        assertThat(limits.maxPendingPerHost()).isEqualTo(50);
        assertThat(limits.connectTimeoutMillis()).isEqualTo(ConnectionLimits.CONNECT_TIMEOUT_MS_DEFAULT);
    }

    @Test
    void shouldDefaultTheServiceIdByWhatThePortServes() throws Exception {
        String json = config("[{\"portid\": 1, \"addr\": {\"trtype\": \"tcp\", \"traddr\": \"127.0.0.1\"}, "
                + "\"subsystems\": [\"" + NQN_A + "\"]}, {\"portid\": 2, \"addr\": {\"trtype\": \"tcp\", "
                + "\"traddr\": \"127.0.0.1\"}, \"subsystems\": [\"" + Port.DISCOVERY_NQN + "\"]}]",
            "[" + subsystem(NQN_A, ramNamespace(1)) + "]");
        TargetConfig config = parse(json);
        assertThat(config.ports().get(0).address().port()).isEqualTo(4420);
        assertThat(config.ports().get(1).address().port()).isEqualTo(8009);
    }

    @Test
    void shouldAllowSeveralPortsOnAnyFreePortOfOneAddress() throws Exception {
        String json = config("[" + tcpPort(1, "127.0.0.1", "0", NQN_A) + ", " + tcpPort(2, "127.0.0.1", "0") + "]",
            "[" + subsystem(NQN_A, ramNamespace(1)) + "]");
        assertThat(parse(json).ports()).hasSize(2);
    }

    @Test
    void shouldResolveRelativePathsAgainstTheConfigurationFile() throws Exception {
        Path sub = Files.createDirectories(dir.resolve("etc"));
        Files.write(sub.resolve("ns.img"), new byte[8192]);
        Path file = sub.resolve("target.json");
        Files.writeString(file, withDevice("{\"path\": \"ns.img\"}"));
        NamespaceConfig ns = TargetConfig.load(file).subsystems().get(0).namespaces().get(1);
        assertThat(ns.path()).isEqualTo(sub.toAbsolutePath().resolve("ns.img"));
        assertThat(ns.backend()).isEqualTo(BackendType.FILE);
    }

    @Test
    void shouldAcceptAMissingFileWithASizeToCreate() throws Exception {
        NamespaceConfig ns = parse(withDevice("{\"path\": \"new.img\", \"size\": \"64M\", \"block_size\": 512}"))
            .subsystems().get(0).namespaces().get(1);
        assertThat(ns.sizeBytes()).isEqualTo(64L << 20);
        assertThat(ns.blockSize()).isEqualTo(512);
        assertThat(dir.resolve("new.img")).as("loading creates nothing").doesNotExist();
    }

    @Test
    void shouldDeriveDistinctStableIdentifiers() throws Exception {
        String json = config("[" + tcpPort(1, "127.0.0.1", "0", NQN_A, NQN_B) + "]",
            "[" + subsystem(NQN_A, ramNamespace(1) + ", " + ramNamespace(2)) + ", " + subsystem(NQN_B, ramNamespace(1))
                + "]");
        TargetConfig a = parse(json);
        TargetConfig b = parse(json);
        NamespaceConfig a1 = a.subsystems().get(0).namespaces().get(0);
        NamespaceConfig a2 = a.subsystems().get(0).namespaces().get(1);
        NamespaceConfig b1 = a.subsystems().get(1).namespaces().get(0);
        assertThat(a1.uuid()).isNotEqualTo(a2.uuid()).isNotEqualTo(b1.uuid());
        assertThat(a1.nguid()).isNotEqualTo(a2.nguid()).isNotEqualTo(b1.nguid());
        assertThat(a1.uuid()).isEqualTo(b.subsystems().get(0).namespaces().get(0).uuid());
        assertThat(a.subsystems().get(0).serial()).isNotEqualTo(a.subsystems().get(1).serial());
    }

    @ParameterizedTest
    @ValueSource(strings = {"0123456789abcdef0123456789ABCDEF", "01234567-89ab-cdef-0123-456789abcdef",
        "01:23:45:67:89:ab:cd:ef:01:23:45:67:89:ab:cd:ef"})
    void shouldAcceptNguidsAsNvmetDoes(String nguid) throws Exception {
        NamespaceConfig ns = parse(withDevice("{\"backend\": \"ram\", \"size\": \"1M\", \"nguid\": \"" + nguid + "\"}"))
            .subsystems().get(0).namespaces().get(1);
        assertThat(HexFormat.of().formatHex(ns.nguid())).isEqualTo("0123456789abcdef0123456789abcdef");
    }

    @Test
    void shouldReportUnknownAndIgnoredKeys() throws Exception {
        String json = withDevice("{\"backend\": \"ram\", \"size\": \"1M\", \"colour\": \"blue\", \"p2pmem\": \"1\"}");
        TargetConfig config = parse(json);
        assertThat(config.notices()).contains(
            new TargetConfig.Notice(true, "subsystems[0].namespaces[1].device.colour: unknown key, ignored"),
            new TargetConfig.Notice(false, "subsystems[0].namespaces[1].device.p2pmem: ignored (peer-to-peer memory "
                + "is not supported)"));
    }

    @Test
    void shouldAcceptDisabledNamespacesWhoseFileIsMissing() throws Exception {
        String json = withNamespaces(ramNamespace(1), "{\"nsid\": 2, \"enable\": 0, \"device\": {\"path\": "
            + "\"/nonexistent/dir/ns.img\"}}");
        NamespaceConfig ns = parse(json).subsystems().get(0).namespaces().get(1);
        assertThat(ns.enabled()).isFalse();
    }

    @ParameterizedTest
    @CsvSource({"4096,4096", "64M,67108864", "1G,1073741824", "1GiB,1073741824", "512k,524288", "2T,2199023255552",
        "8 MiB,8388608", "16MB,16777216"})
    void shouldParseSizes(String text, long bytes) {
        assertThat(Sizes.parse(text)).isEqualTo(bytes);
    }

    @ParameterizedTest
    @ValueSource(strings = {"", "12Q", "-1", "1.5G", "G", "99999999999E", "1 G B", "4096iB"})
    void shouldRejectNonSizes(String text) {
        assertThat(Sizes.parse(text)).isEqualTo(-1);
    }

    // ------------------------------------------------------------------------------------- the document

    @Test
    void shouldRejectMalformedJson() {
        assertRejected("{\"ports\": [", "", "not valid JSON", "line 1");
        assertRejected("[]", "", "must be a JSON object");
        assertRejected("", "", "empty");
    }

    @Test
    void shouldRejectDuplicateKeys() {
        assertRejected("{\"ports\": [], \"ports\": []}", "", "not valid JSON", "ports");
    }

    @Test
    void shouldNameTheFileThatCannotBeRead() {
        Path missing = dir.resolve("missing.json");
        assertThatThrownBy(() -> TargetConfig.load(missing)).isInstanceOf(ConfigException.class)
            .hasMessageContaining(missing.toString());
    }

    // ------------------------------------------------------------------------------------- ports

    @Test
    void shouldAcceptNoPortsForAControlPlaneToAddLater() throws Exception {
        // SPDK's nvmf_tgt starts empty too; Main refuses an empty daemon without HTTP or rpc_socket (MainIT).
        assertThat(parse(config("[]", "[" + subsystem(NQN_A, ramNamespace(1)) + "]")).ports()).isEmpty();
        assertThat(parse("{\"subsystems\": []}").ports()).isEmpty();
    }

    @ParameterizedTest
    @ValueSource(strings = {"fc", "loop", "udp", ""})
    void shouldRejectUnknownTransportTypes(String trtype) {
        assertRejected(withPort("{\"portid\": 1, \"addr\": {\"trtype\": \"" + trtype + "\", \"traddr\": \"127.0.0.1\"}, "
            + "\"subsystems\": []}"), "ports[0].addr.trtype", "\"" + trtype + "\"", "tcp");
    }

    @Test
    void shouldParseRdmaPortsAsServable() throws Exception {
        String json = config("[{\"portid\": 1, \"addr\": {\"trtype\": \"rdma\", \"traddr\": \"10.0.0.1\", \"trsvcid\": "
            + "\"4420\"}, \"subsystems\": [\"" + NQN_A + "\"]}, " + tcpPort(2, "127.0.0.1", "0", NQN_A) + "]",
            "[" + subsystem(NQN_A, ramNamespace(1)) + "]");
        TargetConfig config = parse(json);
        assertThat(config.ports()).hasSize(2);
        assertThat(config.servablePorts()).extracting(PortConfig::portId).containsExactly(1, 2);
        assertThat(config.ports().get(0).address().type()).isEqualTo(TransportType.RDMA);
    }

    @Test
    void shouldAcceptOnlyRdmaPortsAndClampTheirInlineSize() throws Exception {
        TargetConfig config = parse(withPort("{\"portid\": 1, \"addr\": {\"trtype\": \"rdma\", \"traddr\": "
            + "\"10.0.0.1\", \"trsvcid\": \"4420\"}, \"param\": {\"inline_data_size\": 65536}, \"subsystems\": [\""
            + NQN_A + "\"]}"));
        assertThat(config.servablePorts()).hasSize(1);
        assertThat(config.ports().get(0).options().inlineDataSize()).isEqualTo(PortConfig.RDMA_INLINE_DATA_SIZE_MAX);
    }

    @ParameterizedTest
    @ValueSource(strings = {"\"65536\"", "\"-1\"", "\"http\"", "70000", "1.5", "\"\""})
    void shouldRejectBadServiceIds(String trsvcid) {
        assertRejected(withPort("{\"portid\": 1, \"addr\": {\"trtype\": \"tcp\", \"traddr\": \"127.0.0.1\", "
            + "\"trsvcid\": " + trsvcid + "}, \"subsystems\": []}"), "ports[0].addr.trsvcid");
    }

    @ParameterizedTest
    @ValueSource(strings = {"\"one\"", "65536", "-1", "null"})
    void shouldRejectBadPortIds(String portid) {
        assertRejected(withPort("{\"portid\": " + portid + ", \"addr\": {\"trtype\": \"tcp\", \"traddr\": "
            + "\"127.0.0.1\"}, \"subsystems\": []}"), "ports[0].portid");
    }

    @Test
    void shouldRejectDuplicatePortIds() {
        assertRejected(config("[" + tcpPort(1, "127.0.0.1", "0", NQN_A) + ", " + tcpPort(1, "127.0.0.1", "0") + "]",
            "[" + subsystem(NQN_A, ramNamespace(1)) + "]"), "ports[1].portid", "1 is already the portid of ports[0]");
    }

    @ParameterizedTest
    @CsvSource({"127.0.0.1,127.0.0.1", "0.0.0.0,127.0.0.1", "127.0.0.1,0.0.0.0", "::1,0:0:0:0:0:0:0:1"})
    void shouldRejectDuplicateListenAddresses(String first, String second) {
        assertRejected(config("[" + tcpPort(1, first, "4420", NQN_A) + ", " + tcpPort(2, second, "4420") + "]",
            "[" + subsystem(NQN_A, ramNamespace(1)) + "]"), "ports[1].addr", "ports[0]");
    }

    @ParameterizedTest
    @ValueSource(strings = {"localhost", "256.1.1.1", "[::1]", "1.2.3", "::g", ""})
    void shouldRejectAddressesThatAreNotIpLiterals(String traddr) {
        assertRejected(withPort(tcpPort(1, traddr, "0", NQN_A)), "ports[0].addr.traddr");
    }

    @Test
    void shouldRejectAnAddressFamilyThatDoesNotMatchTheAddress() {
        assertRejected(withPort("{\"portid\": 1, \"addr\": {\"trtype\": \"tcp\", \"adrfam\": \"ipv6\", \"traddr\": "
            + "\"127.0.0.1\"}, \"subsystems\": []}"), "ports[0].addr.adrfam", "does not match");
        assertRejected(withPort("{\"portid\": 1, \"addr\": {\"trtype\": \"tcp\", \"adrfam\": \"ib\", \"traddr\": "
            + "\"127.0.0.1\"}, \"subsystems\": []}"), "ports[0].addr.adrfam");
    }

    @Test
    void shouldRejectAPortNamingAnUnknownSubsystem() {
        assertRejected(withPort(tcpPort(1, "127.0.0.1", "0", NQN_A, NQN_B)), "ports[0].subsystems[1]", NQN_B);
    }

    @ParameterizedTest
    @ValueSource(strings = {"1048577", "-2", "\"lots\""})
    void shouldRejectInlineDataSizesOutOfRange(String value) {
        assertRejected(withPort("{\"portid\": 1, \"addr\": {\"trtype\": \"tcp\", \"traddr\": \"127.0.0.1\"}, "
            + "\"param\": {\"inline_data_size\": " + value + "}, \"subsystems\": []}"), "ports[0].param.inline_data_size");
    }

    @Test
    void shouldRejectQueueSizesOutOfRange() {
        assertRejected(withPort("{\"portid\": 1, \"addr\": {\"trtype\": \"tcp\", \"traddr\": \"127.0.0.1\"}, "
            + "\"param\": {\"max_queue_size\": \"1\"}, \"subsystems\": []}"), "ports[0].param.max_queue_size");
    }

    @Test
    void shouldTakeTlsPortsAndRefuseARequirementWithoutTls() throws ConfigException {
        assertRejected(withPort("{\"portid\": 1, \"addr\": {\"trtype\": \"tcp\", \"traddr\": \"127.0.0.1\", "
            + "\"treq\": \"required\"}, \"subsystems\": []}"), "ports[0].addr.treq", "tls1.3");
        assertRejected(withPort("{\"portid\": 1, \"addr\": {\"trtype\": \"tcp\", \"traddr\": \"127.0.0.1\", "
            + "\"treq\": \"sometimes\"}, \"subsystems\": []}"), "ports[0].addr.treq");
        assertRejected(withPort("{\"portid\": 1, \"addr\": {\"trtype\": \"tcp\", \"traddr\": \"127.0.0.1\", "
            + "\"tsas\": \"tls1.2\"}, \"subsystems\": []}"), "ports[0].addr.tsas");
        assertRejected(withPort("{\"portid\": 1, \"addr\": {\"trtype\": \"rdma\", \"traddr\": \"127.0.0.1\", "
            + "\"tsas\": \"tls1.3\"}, \"subsystems\": []}"), "ports[0].addr.tsas", "NVMe/TCP");

        PortOptions required = parse(withPort("{\"portid\": 1, \"addr\": {\"trtype\": \"tcp\", "
            + "\"traddr\": \"127.0.0.1\", \"tsas\": \"tls1.3\"}, \"subsystems\": []}")).ports().get(0).options();
        assertThat(required.tls()).isTrue();
        assertThat(required.tlsRequired()).as("tls1.3 alone means required, as nvmet").isTrue();
        assertThat(required.secureChannel()).isEqualTo(1);
        PortOptions optional = parse(withPort("{\"portid\": 1, \"addr\": {\"trtype\": \"tcp\", "
            + "\"traddr\": \"127.0.0.1\", \"tsas\": \"tls1.3\", \"treq\": \"not required\"}, "
            + "\"subsystems\": []}")).ports().get(0).options();
        assertThat(optional.tls()).isTrue();
        assertThat(optional.tlsRequired()).isFalse();
        assertThat(optional.secureChannel()).isEqualTo(2);
        assertThat(optional.tcpSecurityType()).isEqualTo(2);
    }

    @Test
    void shouldTakeHostTlsKeysWithoutEverQuotingThem() throws ConfigException {
        String key = "NVMeTLSkey-1:01:VRLbtnN9AQb2WXW3c9+wEf/DRLz0QuLdbYvEhwtdWwNf9LrZ:";
        TargetConfig config = parse("{\"hosts\": [{\"nqn\": \"" + HOST + "\", \"tls_key\": \"" + key
            + "\", \"tls_psk_derivation\": \"rfc8446\"}], \"ports\": [" + tcpPort(1, "127.0.0.1", "0") + "]}");
        assertThat(config.tlsKeys()).containsOnlyKeys(HOST);
        assertThat(config.tlsKeys().get(HOST).key().toInterchangeFormat()).isEqualTo(key);
        assertThat(config.tlsKeys().get(HOST).version0Derivation()).isEqualTo(NvmeTlsKeys.Derivation.RFC8446);

        String badCrc = key.replace("Nf9LrZ", "Nf9LrY");
        assertThatThrownBy(() -> parse("{\"hosts\": [{\"nqn\": \"" + HOST + "\", \"tls_key\": \"" + badCrc
            + "\"}], \"ports\": [" + tcpPort(1, "127.0.0.1", "0") + "]}"))
            .isInstanceOf(ConfigException.class).hasMessageContaining("hosts[0].tls_key").hasMessageContaining("CRC-32")
            .hasMessageNotContaining("VRLb");
        assertRejected("{\"hosts\": [{\"nqn\": \"" + HOST + "\", \"tls_key\": \"" + key
            + "\", \"tls_psk_derivation\": \"md5\"}], \"ports\": [" + tcpPort(1, "127.0.0.1", "0") + "]}",
            "hosts[0].tls_psk_derivation", "compat");
    }

    @Test
    void shouldRejectAPortWithoutAddress() {
        assertRejected(withPort("{\"portid\": 1, \"subsystems\": []}"), "ports[0].addr", "required");
        assertRejected(withPort("{\"portid\": 1, \"addr\": {\"trtype\": \"tcp\"}, \"subsystems\": []}"),
            "ports[0].addr.traddr", "required");
    }

    // ------------------------------------------------------------------------------------- subsystems, hosts

    @Test
    void shouldRejectDuplicateSubsystemNqns() {
        assertRejected(config("[" + tcpPort(1, "127.0.0.1", "0", NQN_A) + "]",
                "[" + subsystem(NQN_A, ramNamespace(1)) + ", " + subsystem(NQN_A, ramNamespace(1)) + "]"),
            "subsystems[1].nqn", "already the NQN of subsystems[0]");
    }

    @ParameterizedTest
    @ValueSource(strings = {"testnqn", "nqn.2014-13.io.x:a", "nqn.14-08.io.x", "nqn.2014-08.org.nvmexpress:uuid:zzz"})
    void shouldRejectInvalidSubsystemNqns(String nqn) {
        assertRejected(config("[" + tcpPort(1, "127.0.0.1", "0") + "]", "[" + subsystem(nqn, ramNamespace(1)) + "]"),
            "subsystems[0].nqn", nqn);
    }

    @Test
    void shouldRejectTheDiscoveryNqnAsASubsystem() {
        assertRejected(config("[" + tcpPort(1, "127.0.0.1", "0") + "]",
            "[" + subsystem(Port.DISCOVERY_NQN, ramNamespace(1)) + "]"), "subsystems[0].nqn", "discovery");
    }

    @Test
    void shouldRejectInvalidHostNqns() {
        String bad = "{\"nqn\": \"" + NQN_A + "\", \"allowed_hosts\": [\"" + HOST + "\", \"host-1\"], "
            + "\"namespaces\": [" + ramNamespace(1) + "]}";
        assertRejected(config("[" + tcpPort(1, "127.0.0.1", "0", NQN_A) + "]", "[" + bad + "]"),
            "subsystems[0].allowed_hosts[1]", "host-1");
        assertRejected("{\"hosts\": [{\"nqn\": \"host-1\"}], \"ports\": [" + tcpPort(1, "127.0.0.1", "0") + "]}",
            "hosts[0].nqn", "host-1");
    }

    private static final String SPEC_KEY = "DHHC-1:00:ia6zGodOr4SEG0Zzaw398rpY0wqipUWj4jWjUh4HWUz6aQ2n:";

    @Test
    void shouldReadHostDhchapSettingsInNvmetcliAndConfigfsShapes() throws Exception {
        TargetConfig nvmetcli = TargetConfig.parse("{\"hosts\": [{\"nqn\": \"" + HOST + "\", \"dhchap\": {\"key\": \""
            + SPEC_KEY + "\", \"ctrl_key\": \"" + SPEC_KEY.replace(":00:", ":01:") + "\", \"hash\": \"hmac(sha512)\", "
            + "\"dhgroup\": \"ffdhe4096\"}}], \"ports\": [" + tcpPort(1, "127.0.0.1", "0") + "]}");
        DhchapCredentials c = nvmetcli.hostCredentials().get(HOST);
        assertThat(c.hash()).isEqualTo(DhchapHash.SHA512);
        assertThat(c.group()).isEqualTo(DhchapGroup.FFDHE4096);
        assertThat(c.controllerKey().transformHash()).isEqualTo(1);
        assertThat(c.toString()).doesNotContain("ia6z");

        TargetConfig configfs = TargetConfig.parse("{\"hosts\": [{\"nqn\": \"" + HOST + "\", \"dhchap_key\": \""
            + SPEC_KEY + "\"}], \"ports\": [" + tcpPort(1, "127.0.0.1", "0") + "]}");
        DhchapCredentials d = configfs.hostCredentials().get(HOST);
        assertThat(d.hash()).as("nvmet default").isEqualTo(DhchapHash.SHA256);
        assertThat(d.group()).as("nvmet default").isEqualTo(DhchapGroup.NULL);
        assertThat(d.controllerKey()).isNull();
    }

    @Test
    void shouldKeepBothDhchapSecretsAndTlsKeyOfOneHost() throws Exception {
        String tlsKey = "NVMeTLSkey-1:01:VRLbtnN9AQb2WXW3c9+wEf/DRLz0QuLdbYvEhwtdWwNf9LrZ:";
        TargetConfig config = TargetConfig.parse("{\"hosts\": [{\"nqn\": \"" + HOST + "\", \"dhchap\": {\"key\": \""
            + SPEC_KEY + "\", \"dhgroup\": \"ffdhe2048\"}, \"tls_key\": \"" + tlsKey + "\"}], \"ports\": ["
            + tcpPort(1, "127.0.0.1", "0") + "]}");
        assertThat(config.hostCredentials().get(HOST).group()).isEqualTo(DhchapGroup.FFDHE2048);
        assertThat(config.tlsKeys().get(HOST).key().toInterchangeFormat()).isEqualTo(tlsKey);
        assertThat(config.tlsKeys().get(HOST).version0Derivation()).isEqualTo(NvmeTlsKeys.Derivation.LIBNVME_COMPAT);
        assertThat(config.notices()).as("neither is an ignored key").isEmpty();
        TargetConfig rebuilt = config.withDaemonSettings(config.daemon());
        assertThat(rebuilt.hostCredentials()).isEqualTo(config.hostCredentials());
        assertThat(rebuilt.tlsKeys()).isEqualTo(config.tlsKeys());
    }

    @Test
    void shouldRefuseBadDhchapSettingsWithoutQuotingTheKey() {
        String port = "], \"ports\": [" + tcpPort(1, "127.0.0.1", "0") + "]}";
        assertRejected("{\"hosts\": [{\"nqn\": \"" + HOST + "\", \"dhchap\": {\"key\": \"DHHC-1:00:abc\"}}" + port,
            "hosts[0].dhchap.key", "32, 48 or 64");
        assertRejected("{\"hosts\": [{\"nqn\": \"" + HOST + "\", \"dhchap_key\": \"" + SPEC_KEY.replace("ia6z", "ia7z")
            + "\"}" + port, "hosts[0].dhchap_key", "CRC-32");
        assertRejected("{\"hosts\": [{\"nqn\": \"" + HOST + "\", \"dhchap\": {\"key\": \"" + SPEC_KEY
            + "\", \"hash\": \"md5\"}}" + port, "hosts[0].dhchap.hash", "hmac(sha256)");
        assertRejected("{\"hosts\": [{\"nqn\": \"" + HOST + "\", \"dhchap\": {\"key\": \"" + SPEC_KEY
            + "\", \"dhgroup\": \"ffdhe1024\"}}" + port, "hosts[0].dhchap.dhgroup", "ffdhe2048");
        assertRejected("{\"hosts\": [{\"nqn\": \"" + HOST + "\", \"dhchap\": {\"ctrl_key\": \"" + SPEC_KEY
            + "\"}}" + port, "hosts[0].dhchap.ctrl_key", "needs a host key");
        assertRejected("{\"hosts\": [{\"nqn\": \"" + HOST + "\", \"dhchap\": {\"key\": \"" + SPEC_KEY
            + "\"}, \"dhchap_key\": \"" + SPEC_KEY + "\"}" + port, "hosts[0].dhchap_key", "keep one");
    }

    @Test
    void shouldRejectAnyHostTogetherWithAnAllowList() {
        String s = "{\"nqn\": \"" + NQN_A + "\", \"attr\": {\"allow_any_host\": \"1\"}, \"allowed_hosts\": [\""
            + HOST + "\"], \"namespaces\": []}";
        assertRejected(config("[" + tcpPort(1, "127.0.0.1", "0", NQN_A) + "]", "[" + s + "]"),
            "subsystems[0].attr.allow_any_host", "allowed_hosts");
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
        "\"serial\": \"123456789012345678901\"|subsystems[0].attr.serial",
        "\"serial\": \"\"|subsystems[0].attr.serial",
        "\"model\": \"caf\\u00e9\"|subsystems[0].attr.model",
        "\"firmware\": \"123456789\"|subsystems[0].attr.firmware",
        "\"version\": \"one\"|subsystems[0].attr.version",
        "\"allow_any_host\": \"maybe\"|subsystems[0].attr.allow_any_host",
        "\"cntlid_min\": \"0\"|subsystems[0].attr.cntlid_min",
        "\"cntlid_min\": \"100\", \"cntlid_max\": \"10\"|subsystems[0].attr.cntlid_min",
        "\"qid_max\": \"0\"|subsystems[0].attr.qid_max"})
    void shouldRejectBadSubsystemAttributes(String attr, String path) {
        String s = "{\"nqn\": \"" + NQN_A + "\", \"attr\": {" + attr + "}, \"namespaces\": []}";
        assertRejected(config("[" + tcpPort(1, "127.0.0.1", "0", NQN_A) + "]", "[" + s + "]"), path);
    }

    @Test
    void shouldRejectPassthruSubsystems() {
        String s = "{\"nqn\": \"" + NQN_A + "\", \"passthru\": [{\"device\": {\"path\": \"/dev/nvme0\"}}]}";
        assertRejected(config("[" + tcpPort(1, "127.0.0.1", "0", NQN_A) + "]", "[" + s + "]"),
            "subsystems[0].passthru");
    }

    // ------------------------------------------------------------------------------------- namespaces

    @Test
    void shouldRejectDuplicateNsids() {
        assertRejected(withNamespaces(ramNamespace(1), ramNamespace(1)), "subsystems[0].namespaces[1].nsid",
            "already the NSID of subsystems[0].namespaces[0]");
    }

    @ParameterizedTest
    @ValueSource(strings = {"0", "4294967295", "-1", "\"x\"", "1025", "4294967294", "18446744073709551615",
        "99999999999999999999999", "1.5", "\"0x401\""})
    void shouldRejectNsidsOutsideOneToNn(String nsid) {
        assertRejected(withNamespaces("{\"nsid\": " + nsid + ", \"device\": {\"backend\": \"ram\", \"size\": \"1M\"}}"),
            "subsystems[0].namespaces[0].nsid");
    }

    @Test
    void shouldAcceptNsidNn() throws Exception {
        NamespaceConfig ns = parse(withNamespaces("{\"nsid\": 1024, \"device\": {\"backend\": \"ram\", "
            + "\"size\": \"1M\"}}")).subsystems().get(0).namespaces().get(0);
        assertThat(ns.nsid()).isEqualTo(1024);
    }

    @ParameterizedTest
    @ValueSource(strings = {"\"16E\"", "\"8E\"", "9223372036854775807", "18446744073709551616", "\"-1M\"",
        "\"1M1\"", "1.5", "\"0\"", "\"513\"", "true", "\"1M\\u0000\""})
    void shouldRejectSizesThatAreNotPositiveBlockMultiplesOrOverflow(String size) {
        assertRejected(withDevice("{\"backend\": \"ram\", \"size\": " + size + "}"),
            "subsystems[0].namespaces[1].device.size");
    }

    @Test
    void shouldRejectControlCharactersInDevicePaths() {
        assertRejected(withDevice("{\"path\": \"ns\\u0000.img\", \"size\": \"1M\"}"),
            "subsystems[0].namespaces[1].device.path", "control character U+0000");
        assertRejected(withDevice("{\"path\": \"ns\\n.img\", \"size\": \"1M\"}"),
            "subsystems[0].namespaces[1].device.path", "control character U+000A");
    }

    @ParameterizedTest
    @ValueSource(strings = {"nqn.2014-08.io.nvmeof4j:a/../b", "nqn.2014-08.io.nvmeof4j:a\\u0000b",
        "nqn.2014-08.io.nvmeof4j:a\\u001bb", "nqn.2014-08.io.nvmeof4j:a\\\\b", "nqn.14-08.x:y",
        "nqx.2014-08.io.nvmeof4j:a"})
    void shouldRejectMalformedNqns(String nqn) {
        assertRejected(config("[" + tcpPort(1, "127.0.0.1", "0", NQN_A) + "]", "[" + subsystem(NQN_A,
            ramNamespace(1)).replace("\"allow_any_host\": \"1\"", "\"allow_any_host\": \"0\"")
            .replace("\"namespaces\"", "\"allowed_hosts\": [\"" + nqn + "\"], \"namespaces\"") + "]"),
            "subsystems[0].allowed_hosts[0]");
    }

    @Test
    void shouldRejectAnNqnLongerThan223Bytes() {
        String nqn = "nqn.2014-08.io.nvmeof4j:" + "x".repeat(200);
        assertThatThrownBy(() -> TargetConfig.checkNqn(nqn)).hasMessageContaining("223");
        assertThat(TargetConfig.checkNqn(nqn.substring(0, 223))).hasSize(223);
    }

    @Test
    void shouldReadAllowedPathsAndTheRamBudget() throws Exception {
        String json = withNamespaces(ramNamespace(1)).replaceFirst("\\{", "{\"nvmeof4j\": {\"allowed_paths\": "
            + "[\"/srv/images\", \"imgs/../live\", \"/dev/sdb\", \"/srv/images\"], \"ram_budget_mib\": 2048}, ");
        DaemonSettings d = parse(json).daemon();
        assertThat(d.allowedPaths()).containsExactly(Path.of("/srv/images"), dir.resolve("live"), Path.of("/dev/sdb"));
        assertThat(d.ramBudgetBytes()).isEqualTo(2048L << 20);
        assertThat(parse(withNamespaces(ramNamespace(1))).daemon().allowedPaths()).isEmpty();
        assertThat(parse(withNamespaces(ramNamespace(1))).daemon().ramBudgetBytes())
            .isEqualTo(DaemonSettings.RAM_BUDGET_DERIVED);
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
        "\"allowed_paths\": \"/srv\"            | nvmeof4j.allowed_paths       | must be a JSON array",
        "\"allowed_paths\": [\"/\"]             | nvmeof4j.allowed_paths[0]    | root directory",
        "\"allowed_paths\": [\"/srv/\\u0000x\"] | nvmeof4j.allowed_paths[0]    | control character",
        "\"allowed_paths\": [\"\"]              | nvmeof4j.allowed_paths[0]    | empty",
        "\"allowed_paths\": [7]                 | nvmeof4j.allowed_paths[0]    | must be a string",
        "\"ram_budget_mib\": -1                 | nvmeof4j.ram_budget_mib      | outside 0..8589934592",
        "\"ram_budget_mib\": 8589934593         | nvmeof4j.ram_budget_mib      | outside",
        "\"ram_budget_mib\": \"16E\"            | nvmeof4j.ram_budget_mib      | not an integer"})
    void shouldRejectBadLimitSettings(String setting, String path, String fragment) {
        assertRejected(withNamespaces(ramNamespace(1)).replaceFirst("\\{",
            java.util.regex.Matcher.quoteReplacement("{\"nvmeof4j\": {" + setting + "}, ")), path, fragment);
    }

    @Test
    void shouldRefuseUnknownFieldsOfALiveNamespaceButOnlyNoteThemInAFile() throws Exception {
        com.fasterxml.jackson.databind.ObjectMapper m = new com.fasterxml.jackson.databind.ObjectMapper();
        String ns = "{\"nsid\": 2, \"colour\": \"red\", \"device\": {\"backend\": \"ram\", \"size\": \"1M\"}}";
        assertThatThrownBy(() -> TargetConfig.parseNamespace(m.readTree(ns), "namespace", NQN_A, dir))
            .isInstanceOf(ConfigException.class)
            .hasMessageStartingWith("namespace.colour: unknown field (known: ana, ana_grpid, device, enable, nsid, qos)");
        String dev = "{\"nsid\": 2, \"device\": {\"backend\": \"ram\", \"size\": \"1M\", \"sise\": \"2M\"}}";
        assertThatThrownBy(() -> TargetConfig.parseNamespace(m.readTree(dev), "namespace", NQN_A, dir))
            .hasMessageStartingWith("namespace.device.sise: unknown field");
        String resv = "{\"nsid\": 2, \"resv\": 1, \"device\": {\"backend\": \"ram\", \"size\": \"1M\"}}";
        assertThatThrownBy(() -> TargetConfig.parseNamespace(m.readTree(resv), "namespace", NQN_A, dir))
            .hasMessageStartingWith("namespace.resv: not supported (reservations are always supported");
        // nvmetcli's "none" values of what we do not take from the file are no request at all.
        String none = "{\"nsid\": 2, \"resv\": 0, \"device\": {\"backend\": \"ram\", \"size\": \"1M\"}}";
        assertThat(TargetConfig.parseNamespace(m.readTree(none), "namespace", NQN_A, dir).nsid()).isEqualTo(2);
        TargetConfig file = parse(withNamespaces(ns.replace("\"nsid\": 2", "\"nsid\": 1")));
        assertThat(file.notices()).anySatisfy(n -> assertThat(n.text()).contains("colour: unknown key, ignored"));
    }

    @Test
    void shouldRefuseDotDotInALiveNamespacePathButResolveItInAFile() throws Exception {
        com.fasterxml.jackson.databind.ObjectMapper m = new com.fasterxml.jackson.databind.ObjectMapper();
        String ns = "{\"nsid\": 2, \"device\": {\"path\": \"images/../../etc/x.img\", \"size\": \"1M\"}}";
        assertThatThrownBy(() -> TargetConfig.parseNamespace(m.readTree(ns), "namespace", NQN_A, dir))
            .hasMessageStartingWith("namespace.device.path: \"images/../../etc/x.img\" contains a '..' component");
        Files.createDirectories(dir.resolve("sub"));
        TargetConfig file = parse(withNamespaces("{\"nsid\": 1, \"device\": {\"path\": \"sub/../ns.img\", "
            + "\"size\": \"1M\"}}"));
        assertThat(file.subsystems().get(0).namespaces().get(0).path()).isEqualTo(dir.resolve("ns.img"));
    }

    @Test
    void shouldNameTheFieldOfABadSize() {
        assertThatThrownBy(() -> parse(withDevice("{\"backend\": \"ram\", \"size\": \"12Q\"}")))
            .isInstanceOf(ConfigException.class)
            .hasMessageStartingWith("subsystems[0].namespaces[1].device.size: \"12Q\" is not a size");
    }

    @Test
    void shouldRequireASizeForMemoryDevices() {
        assertRejected(withDevice("{\"backend\": \"ram\"}"), "subsystems[0].namespaces[1].device.size", "required");
        assertRejected(withDevice("{\"backend\": \"null\"}"), "subsystems[0].namespaces[1].device.size", "required");
        assertRejected(withDevice("{\"backend\": \"ram\", \"size\": 0}"), "subsystems[0].namespaces[1].device.size");
    }

    @Test
    void shouldRejectSizesThatAreNotWholeBlocks() {
        assertRejected(withDevice("{\"backend\": \"ram\", \"size\": \"4097\"}"),
            "subsystems[0].namespaces[1].device.size", "multiple of the block size 512");
        assertRejected(withDevice("{\"backend\": \"ram\", \"size\": \"6144\", \"block_size\": 4096}"),
            "subsystems[0].namespaces[1].device.size", "4096");
    }

    @ParameterizedTest
    @ValueSource(strings = {"1024", "0", "8192", "\"4k\"", "513", "256", "131072", "-512", "4294971392"})
    void shouldRejectUnsupportedBlockSizes(String blockSize) {
        assertRejected(withDevice("{\"backend\": \"ram\", \"size\": \"1M\", \"block_size\": " + blockSize + "}"),
            "subsystems[0].namespaces[1].device.block_size");
    }

    @Test
    void shouldRejectUnknownBackendsAndMissingDevices() {
        assertRejected(withDevice("{\"backend\": \"tape\", \"size\": \"1M\"}"),
            "subsystems[0].namespaces[1].device.backend", "tape");
        assertRejected(withDevice("{}"), "subsystems[0].namespaces[1].device", "path");
        assertRejected(withDevice("{\"backend\": \"file\"}"), "subsystems[0].namespaces[1].device.path");
        assertRejected(withNamespaces("{\"nsid\": 1}"), "subsystems[0].namespaces[0].device", "required");
    }

    @Test
    void shouldRejectAMissingFileWithoutSize() {
        assertRejected(withDevice("{\"path\": \"absent.img\"}"), "subsystems[0].namespaces[1].device.path",
            "absent.img", "does not exist");
    }

    @Test
    void shouldRejectAFileInAMissingDirectory() {
        assertRejected(withDevice("{\"path\": \"nodir/ns.img\", \"size\": \"1M\"}"),
            "subsystems[0].namespaces[1].device.path", "nodir");
        assertThat(dir.resolve("nodir")).doesNotExist();
    }

    @Test
    void shouldRejectAFileSmallerThanOneBlockWithoutSize() throws IOException {
        Files.write(dir.resolve("tiny.img"), new byte[100]);
        assertRejected(withDevice("{\"path\": \"tiny.img\"}"), "subsystems[0].namespaces[1].device.path", "100 bytes");
    }

    @Test
    void shouldRejectADirectoryAsDevice() throws IOException {
        Files.createDirectory(dir.resolve("adir"));
        assertRejected(withDevice("{\"path\": \"adir\", \"size\": \"1M\"}"),
            "subsystems[0].namespaces[1].device.path", "directory");
    }

    @Test
    void shouldRejectOneFileForTwoNamespaces() throws IOException {
        try (RandomAccessFile f = new RandomAccessFile(dir.resolve("shared.img").toFile(), "rw")) {
            f.setLength(1 << 20);
        }
        String json = config("[" + tcpPort(1, "127.0.0.1", "0", NQN_A, NQN_B) + "]",
            "[" + subsystem(NQN_A, "{\"nsid\": 1, \"device\": {\"path\": \"shared.img\"}}") + ", "
                + subsystem(NQN_B, "{\"nsid\": 1, \"device\": {\"path\": \"./shared.img\"}}") + "]");
        assertRejected(json, "subsystems[1].namespaces[0].device.path", "subsystems[0].namespaces[0]");
    }

    @ParameterizedTest
    @ValueSource(strings = {"not-a-uuid", "5d0a1f9e3c2b4a8d9e7f1b2c3d4e5f60", "1-2-3-4-5",
        "5d0a1f9e-3c2b-4a8d-9e7f-1b2c3d4e5f6"})
    void shouldRejectMalformedUuids(String uuid) {
        assertRejected(withDevice("{\"backend\": \"ram\", \"size\": \"1M\", \"uuid\": \"" + uuid + "\"}"),
            "subsystems[0].namespaces[1].device.uuid", uuid);
    }

    @ParameterizedTest
    @ValueSource(strings = {"xyz", "0123456789abcdef0123456789abcde", "0123456789abcdef0123456789abcdef00",
        "01234567-89ab-cdef-0123-456789abcdeg"})
    void shouldRejectMalformedNguids(String nguid) {
        assertRejected(withDevice("{\"backend\": \"ram\", \"size\": \"1M\", \"nguid\": \"" + nguid + "\"}"),
            "subsystems[0].namespaces[1].device.nguid", nguid);
    }

    // ------------------------------------------------------------------------------------- nvmeof4j settings

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
        "\"reactors\": 0|nvmeof4j.reactors",
        "\"reactors\": 1000|nvmeof4j.reactors",
        "\"reactor\": 2|nvmeof4j.reactor",
        "\"idle_strategy\": \"sleepy\"|nvmeof4j.idle_strategy",
        "\"idle_spin_us\": -1|nvmeof4j.idle_spin_us",
        "\"max_data_transfer_kib\": 3|nvmeof4j.max_data_transfer_kib",
        "\"max_data_transfer_kib\": 1000|nvmeof4j.max_data_transfer_kib",
        "\"hugepages\": 2|nvmeof4j.hugepages",
        "\"shutdown_timeout_ms\": -5|nvmeof4j.shutdown_timeout_ms",
        "\"buffer_pool_mib\": 1, \"max_data_transfer_kib\": 2048|nvmeof4j.buffer_pool_mib",
        "\"max_pending_connections\": 0|nvmeof4j.max_pending_connections",
        "\"max_pending_connections\": 2000000|nvmeof4j.max_pending_connections",
        "\"max_pending_connections_per_host\": 0|nvmeof4j.max_pending_connections_per_host",
        "\"max_pending_connections\": 10, \"max_pending_connections_per_host\": 11|"
            + "nvmeof4j.max_pending_connections_per_host",
        "\"connect_timeout_ms\": 99|nvmeof4j.connect_timeout_ms",
        "\"connect_timeout_ms\": \"soon\"|nvmeof4j.connect_timeout_ms",
        "\"connect_timeout_ms\": 3600001|nvmeof4j.connect_timeout_ms"})
    void shouldRejectBadDaemonSettings(String settings, String path) {
        String json = withNamespaces(ramNamespace(1)).replaceFirst("\\{", "{\"nvmeof4j\": {" + settings + "}, ");
        assertRejected(json, path);
    }

    @Test
    void shouldCarryThePathInTheException() {
        ConfigException e = new ConfigException("ports[3].addr", "broken");
        assertThat(e.path()).isEqualTo("ports[3].addr");
        assertThat(e.getMessage()).isEqualTo("ports[3].addr: broken");
        assertThat(new ConfigException("", "whole file").getMessage()).isEqualTo("whole file");
    }

    @Test
    void shouldReadANamespacesQosLimitsAndRefuseBadOnes() throws Exception {
        String limited = "{\"nsid\": 2, \"device\": {\"backend\": \"ram\", \"size\": \"1M\"}, \"qos\": "
            + "{\"rw_ios_per_sec\": 20000, \"rw_mbytes_per_sec\": 100, \"r_mbytes_per_sec\": \"50\", "
            + "\"w_mbytes_per_sec\": 0}}";
        TargetConfig config = parse(withNamespaces(ramNamespace(1), limited));
        List<NamespaceConfig> nss = config.subsystems().get(0).namespaces();
        assertThat(nss.get(0).qos()).isEqualTo(io.nvmeof4j.target.backend.QosLimits.NONE);
        assertThat(nss.get(1).qos()).isEqualTo(new io.nvmeof4j.target.backend.QosLimits(20000, 100, 50, 0));
        // Rounded up to a multiple of 1000 as SPDK rounds it, with a notice.
        TargetConfig rounded = parse(withNamespaces("{\"nsid\": 1, \"device\": {\"backend\": \"ram\", "
            + "\"size\": \"1M\"}, \"qos\": {\"rw_ios_per_sec\": 1500}}"));
        assertThat(rounded.subsystems().get(0).namespaces().get(0).qos().rwIosPerSec()).isEqualTo(2000);
        assertThat(rounded.notices()).extracting(TargetConfig.Notice::text)
            .anySatisfy(t -> assertThat(t).contains("qos.rw_ios_per_sec").contains("rounded up to 2000"));
        String ns = "{\"nsid\": 1, \"device\": {\"backend\": \"ram\", \"size\": \"1M\"}, \"qos\": ";
        assertRejected(withNamespaces(ns + "{\"rw_ios_per_sec\": -1}}"),
            "subsystems[0].namespaces[0].qos.rw_ios_per_sec", "outside 0..");
        assertRejected(withNamespaces(ns + "{\"r_mbytes_per_sec\": 1.5}}"),
            "subsystems[0].namespaces[0].qos.r_mbytes_per_sec", "not an integer");
        assertRejected(withNamespaces(ns + "[1000]}"), "subsystems[0].namespaces[0].qos");
    }
}
