package io.nvmeof4j.target.daemon;

import io.nvmeof4j.jni.cpu.CpuAffinity;
import io.nvmeof4j.jni.cpu.CpuSet;
import io.nvmeof4j.protocol.spi.TransportAddress;
import io.nvmeof4j.target.config.BuildVersion;
import io.nvmeof4j.target.model.Port;
import io.nvmeof4j.tcp.TcpTransportOptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static io.nvmeof4j.target.daemon.TargetDaemonIT.canBind;
import static io.nvmeof4j.target.daemon.TargetDaemonIT.config;
import static io.nvmeof4j.target.daemon.TargetDaemonIT.port;
import static io.nvmeof4j.target.daemon.TargetDaemonIT.ram;
import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/** Runs {@link Main} in this JVM: exit statuses come back from picocli, nothing calls System.exit. */
class MainIT {
    private static final String NQN = "nqn.2014-08.io.nvmeof4j:daemon-test";

    @TempDir
    Path dir;

    private final StringWriter out = new StringWriter();
    private final StringWriter err = new StringWriter();

    private int run(String... args) {
        return Main.run(new PrintWriter(out, true), new PrintWriter(err, true), args);
    }

    @Test
    void shouldExitWith2AndNameTheFieldForABadConfiguration() throws Exception {
        Path bad = dir.resolve("bad.json");
        Files.writeString(bad, config(port(1, 0, NQN), "{\"nsid\": 1, \"device\": {\"backend\": \"ram\", "
            + "\"size\": \"12Q\"}}"));
        assertThat(run("--config", bad.toString())).isEqualTo(2);
        assertThat(err.toString()).isEqualTo("nvmeof-target: error: subsystems[0].namespaces[0].device.size: \"12Q\" "
            + "is not a size (examples: \"1G\", \"64M\", \"4096\")" + System.lineSeparator());
        assertThat(out.toString()).isEmpty();
    }

    @Test
    void shouldExitWith2NamingTheCallForAnSpdkConfigurationItCannotReplay() throws Exception {
        Path base = dir.resolve("base.json");
        Files.writeString(base, config(port(1, 0, "nqn.2014-08.org.nvmexpress.discovery"), ""));
        Path spdk = dir.resolve("spdk.json");
        Files.writeString(spdk, "{\"subsystems\": [{\"subsystem\": \"nvmf\", \"config\": ["
            + "{\"method\": \"nvmf_set_config\", \"params\": {}},"
            + "{\"method\": \"nvmf_create_subsystem\", \"params\": {\"nqn\": \"nqn.2016-06.io.spdk:a\"}},"
            + "{\"method\": \"nvmf_subsystem_add_ns\", \"params\": {\"nqn\": \"nqn.2016-06.io.spdk:a\", "
            + "\"namespace\": {\"bdev_name\": \"Malloc9\"}}}]}]}");
        assertThat(run("--config", base.toString(), "--json", spdk.toString(), "-r",
            dir.resolve("rpc.sock").toString())).isEqualTo(2);
        assertThat(err.toString()).contains("--json " + spdk + ": subsystems[0].config[2]: nvmf_subsystem_add_ns failed: "
            + "-32602", "Malloc9 does not exist");
        // Nothing was started, and the base configuration is left as it was.
        assertThat(dir.resolve("rpc.sock")).doesNotExist();
        assertThat(Files.readString(base)).doesNotContain("spdk");
    }

    @Test
    void shouldExitWith2NamingABadJvmOptionWithNothingListening() throws Exception {
        int nvme = TargetDaemonIT.freePort();
        int http = TargetDaemonIT.freePort();
        Path file = dir.resolve("jvm-option.json");
        Files.writeString(file, config(port(1, nvme, NQN), ram(1)));
        String before = System.getProperty(TcpTransportOptions.SOCKET_BUFFER_SIZE_PROP_NAME);
        System.setProperty(TcpTransportOptions.SOCKET_BUFFER_SIZE_PROP_NAME, "-1");
        try {
            assertThat(run("--config", file.toString(), "--http", "127.0.0.1:" + http)).isEqualTo(2);
            assertThat(err.toString()).isEqualTo("nvmeof-target: error: -Dnvmeof4j.tcp.socket.buffer.size=-1: must be "
                + "0 or more (up to 2147483647)" + System.lineSeparator());
            assertThat(out.toString()).isEmpty();
            assertThat(canBind(nvme)).as("no NVMe/TCP listener").isTrue();
            assertThat(canBind(http)).as("no HTTP listener").isTrue();
            assertThat(dir.resolve("api-token")).as("the start never began: it would have made the API token")
                .doesNotExist();
            err.getBuffer().setLength(0);
            assertThat(run("--check", "--config", file.toString())).as("--check checks JVM options too").isEqualTo(2);
            assertThat(err.toString()).contains("-Dnvmeof4j.tcp.socket.buffer.size=-1");
            err.getBuffer().setLength(0);
            // Without --config (the README's first command, the embedded default): the operator's option is named,
            // not reported as an invalid embedded configuration with a stack trace.
            assertThat(run("--check")).as("the embedded default with a bad JVM option").isEqualTo(2);
            assertThat(err.toString()).isEqualTo("nvmeof-target: error: -Dnvmeof4j.tcp.socket.buffer.size=-1: must be "
                + "0 or more (up to 2147483647)" + System.lineSeparator());
        } finally {
            if (before == null) {
                System.clearProperty(TcpTransportOptions.SOCKET_BUFFER_SIZE_PROP_NAME);
            } else {
                System.setProperty(TcpTransportOptions.SOCKET_BUFFER_SIZE_PROP_NAME, before);
            }
        }
    }

    @Test
    void shouldRefuseToStartEmptyWithoutAControlPlane() throws Exception {
        Path empty = dir.resolve("empty.json");
        Files.writeString(empty, "{\"subsystems\": [], \"nvmeof4j\": {\"http\": \"off\"}}");
        assertThat(run("--config", empty.toString())).isEqualTo(2);
        assertThat(err.toString()).contains("no port is configured and no control plane could add one",
            "nothing to serve");
        assertThat(out.toString()).isEmpty();
    }

    @Test
    void shouldExitWith2NamingBothWhenReactorsAndReactorCpusDisagree() throws Exception {
        Path bad = dir.resolve("pinned.json");
        Files.writeString(bad, config(port(1, 0, NQN), ram(1)).replace("\"reactors\": 2,",
            "\"reactors\": 2, \"reactor_cpus\": \"1\","));
        assertThat(run("--config", bad.toString())).isEqualTo(2);
        assertThat(err.toString()).isEqualTo("nvmeof-target: error: nvmeof4j.reactors: 2 differs from the 1 CPU(s) "
            + "of nvmeof4j.reactor_cpus \"1\" (one reactor per CPU): drop reactors or make them agree"
            + System.lineSeparator());
        assertThat(out.toString()).isEmpty();
    }

    @Test
    void shouldExitWith2ForAReactorCpuThisProcessMayNotRunOn() throws Exception {
        assumeTrue(CpuAffinity.isAvailable(), "no affinity library");
        // The process's CPUs are its main thread's (tid = pid): confined to CPU 0 for this test, as taskset -c 0.
        int main = (int) ProcessHandle.current().pid();
        CpuSet original = CpuAffinity.get(main);
        assumeTrue(original.containsAll(CpuSet.of(0, 1)), "this JVM may run on CPUs 0 and 1");
        Path file = dir.resolve("outside.json");
        Files.writeString(file, config(port(1, 0, NQN), ram(1)).replace("\"reactors\": 2,",
            "\"reactor_cpus\": \"1\","));
        CpuAffinity.set(main, CpuSet.of(0));
        try {
            assertThat(run("--check", "--config", file.toString())).as("--check says so too").isEqualTo(2);
            err.getBuffer().setLength(0);
            assertThat(run("--config", file.toString())).isEqualTo(2);
        } finally {
            CpuAffinity.set(main, original);
        }
        assertThat(err.toString()).isEqualTo("nvmeof-target: error: nvmeof4j.reactor_cpus: reactor CPU(s) 1 not "
            + "among the CPUs this process may run on (0)" + System.lineSeparator());
        assertThat(out.toString()).isEmpty();
        assertThat(CpuAffinity.get(0)).as("no affinity was changed").isEqualTo(original);
    }

    @Test
    void shouldExitWith2ForAMissingConfigurationFile() {
        Path missing = dir.resolve("missing.json");
        assertThat(run("-c", missing.toString())).isEqualTo(2);
        assertThat(err.toString()).startsWith("nvmeof-target: error: ").contains(missing.toString());
    }

    @Test
    void shouldExitWith2ForAnUnknownOption() {
        assertThat(run("--bogus")).isEqualTo(2);
        assertThat(err.toString()).contains("--bogus");
    }

    @Test
    void shouldPrintHelpAndVersion() {
        assertThat(run("--help")).isZero();
        assertThat(out.toString()).contains("nvmeof-target", "--config", "--check", "--version", "Exit status");
        out.getBuffer().setLength(0);
        assertThat(run("--version")).isZero();
        assertThat(out.toString()).startsWith("nvmeof-target " + BuildVersion.version());
        assertThat(BuildVersion.version()).as("filtered from the POM").isNotEqualTo("unknown");
    }

    @Test
    void shouldCheckAConfigurationWithoutStartingAnything() throws Exception {
        Path good = dir.resolve("good.json");
        Files.writeString(good, config(port(1, 0, NQN), ram(1)));
        assertThat(run("--check", "--config", good.toString())).isZero();
        assertThat(out.toString()).startsWith("configuration OK: 1 subsystem(s), 1 port(s)");
    }

    @Test
    void shouldExitWith1NamingTheAddressWhenThePortIsInUse() throws Exception {
        try (ServerSocket taken = new ServerSocket()) {
            taken.bind(new InetSocketAddress("127.0.0.1", 0));
            int busy = taken.getLocalPort();
            Path file = dir.resolve("busy.json");
            Files.writeString(file, config(port(1, busy, NQN), ram(1)));
            assertThat(run("--config", file.toString())).isEqualTo(1);
            assertThat(err.toString()).startsWith("nvmeof-target: error: ").contains("127.0.0.1:" + busy)
                .contains("in use");
        }
    }

    @Test
    void shouldPrintHowToConnectThenStopWithStatus0() throws Exception {
        Path file = dir.resolve("run.json");
        Files.writeString(file, config(port(1, 0, NQN) + ", " + port(2, 0, Port.DISCOVERY_NQN), ram(1)));
        Main main = new Main(false);
        AtomicInteger status = new AtomicInteger(-1);
        Thread runner = new Thread(() -> status.set(Main.commandLine(main)
            .setOut(new PrintWriter(out, true)).setErr(new PrintWriter(err, true))
            .execute("--config", file.toString())), "main-under-test");
        runner.start();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (!out.toString().contains("Stop with") && System.nanoTime() - deadline < 0 && runner.isAlive()) {
            Thread.sleep(10);
        }
        assertThat(out.toString()).as("stderr: %s", err).contains("Stop with");
        List<TransportAddress> addresses = main.daemon().listenAddresses();
        int io = addresses.get(0).port();
        int discovery = addresses.get(1).port();
        List<String> lines = out.toString().lines().toList();
        assertThat(lines).contains(
            "nvme discover -t tcp -a 127.0.0.1 -s " + io,
            "nvme connect -t tcp -a 127.0.0.1 -s " + io + " -n " + NQN,
            "nvme discover -t tcp -a 127.0.0.1 -s " + discovery);
        assertThat(lines).filteredOn(l -> l.startsWith("nvme connect")).hasSize(1);
        assertThat(lines).anySatisfy(l -> assertThat(l).contains("tcp://127.0.0.1:" + io, "portid 1"));
        assertThat(canBind(io)).isFalse();

        main.requestStop();
        runner.join(30_000);
        assertThat(runner.isAlive()).isFalse();
        assertThat(status.get()).isZero();
        assertThat(canBind(io)).isTrue();
        assertThat(canBind(discovery)).isTrue();
        assertThat(main.daemon().isClosed()).isTrue();
    }

    @Test
    void shouldServeHttpWhereTheCommandLineSaysAndPrintTheAddress() throws Exception {
        Path file = dir.resolve("http.json");
        Files.writeString(file, config(port(1, 0, NQN), ram(1)));
        Main main = new Main(false);
        AtomicInteger status = new AtomicInteger(-1);
        Thread runner = new Thread(() -> status.set(Main.commandLine(main)
            .setOut(new PrintWriter(out, true)).setErr(new PrintWriter(err, true))
            .execute("--config", file.toString(), "--http", "127.0.0.1:0")), "main-under-test");
        runner.start();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (!out.toString().contains("Stop with") && System.nanoTime() - deadline < 0 && runner.isAlive()) {
            Thread.sleep(10);
        }
        int httpPort = main.daemon().httpAddress().getPort();
        String base = "http://127.0.0.1:" + httpPort;
        assertThat(out.toString().lines().toList())
            .contains("HTTP: metrics " + base + "/metrics, management API " + base + "/api/v1/subsystems");
        // The token is made next to the configuration, owner-only, and its place is printed for the operator.
        Path token = dir.resolve("api-token");
        assertThat(out.toString()).contains("API token: " + token + " (curl -H \"Authorization: Bearer $(cat "
            + token + ")\"");
        assertThat(java.nio.file.attribute.PosixFilePermissions.toString(Files.getPosixFilePermissions(token)))
            .isEqualTo("rw-------");
        java.net.http.HttpResponse<String> metrics = java.net.http.HttpClient.newHttpClient().send(
            java.net.http.HttpRequest.newBuilder(java.net.URI.create(base + "/metrics"))
                .timeout(java.time.Duration.ofSeconds(10)).build(),
            java.net.http.HttpResponse.BodyHandlers.ofString());
        assertThat(metrics.statusCode()).isEqualTo(200);
        assertThat(metrics.body()).contains("nvmeof_target_io_seconds_count{nsid=\"1\",op=\"read\"");
        main.requestStop();
        runner.join(30_000);
        assertThat(status.get()).isZero();
        assertThat(canBind(httpPort)).isTrue();
    }

    @Test
    void shouldRefuseABadHttpAddressAndFailOnABusyOne() throws Exception {
        Path file = dir.resolve("bad-http.json");
        Files.writeString(file, config(port(1, 0, NQN), ram(1)));
        assertThat(run("--config", file.toString(), "--http", "nowhere")).isEqualTo(2);
        assertThat(err.toString()).contains("--http").contains("HOST:PORT");
        try (ServerSocket taken = new ServerSocket()) {
            taken.bind(new InetSocketAddress("127.0.0.1", 0));
            int busy = taken.getLocalPort();
            assertThat(run("--config", file.toString(), "--http", "127.0.0.1:" + busy)).isEqualTo(1);
            assertThat(err.toString()).contains("cannot serve HTTP on 127.0.0.1:" + busy);
        }
        assertThat(run("--config", file.toString(), "--http", "off", "--check")).isZero();
    }

    @Test
    void shouldRefuseABadMetricsAddressAndAnUnsafeTokenFileWithNothingStarted() throws Exception {
        Path file = dir.resolve("token.json");
        Files.writeString(file, config(port(1, 0, NQN), ram(1)));
        assertThat(run("--config", file.toString(), "--metrics-http", "nowhere")).isEqualTo(2);
        assertThat(err.toString()).contains("--metrics-http").contains("HOST:PORT");
        Path token = dir.resolve("shared-token");
        Files.writeString(token, "0123456789abcdef0123456789abcdef\n");
        Files.setPosixFilePermissions(token, java.nio.file.attribute.PosixFilePermissions.fromString("rw-rw-rw-"));
        assertThat(run("--config", file.toString(), "--http", "127.0.0.1:0", "--api-token-file", token.toString()))
            .as("a token file every user can read or write fails the start as a bad configuration").isEqualTo(2);
        assertThat(err.toString()).contains("nvmeof4j.api_token_file").contains(token.toString())
            .contains("chmod 600");
        assertThat(Files.readString(token)).isEqualTo("0123456789abcdef0123456789abcdef\n");
    }
}
