package io.nvmeof4j.it.container;

import com.github.dockerjava.api.DockerClient;
import com.github.dockerjava.api.command.InspectContainerResponse;
import com.github.dockerjava.api.model.Container;
import org.testcontainers.DockerClientFactory;
import org.testcontainers.containers.BindMode;
import org.testcontainers.containers.GenericContainer;
import org.testcontainers.containers.output.OutputFrame;
import org.testcontainers.containers.wait.strategy.Wait;
import org.testcontainers.utility.DockerImageName;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * The target daemon's container image ({@code deploy/Dockerfile}, built by {@code deploy/build-image.sh}) run by
 * Testcontainers with host networking: the daemon's configuration, written here, chooses free ports on 127.0.0.1
 * (NVMe/TCP I/O, discovery, and the HTTP server in the {@code nvmeof4j} section), and its file namespace lives in a host directory bind-mounted at
 * {@code /srv/nvme}, so the test can read the file after the container stopped.
 * <p>Ryuk is disabled (its image comes from Docker Hub, which this machine cannot reach): every container carries
 * {@link #LABEL} and is removed by {@link #close()}; leftovers of an interrupted run are removed by
 * {@link #buildImage()} before the first start.
 */
final class TargetContainer implements AutoCloseable {
    /** The image tag {@code deploy/build-image.sh} builds. */
    static final String IMAGE = System.getProperty("nvmeof4j.it.image", "nvmeof4j/target:dev");
    /** Label on every container these tests start: what the clean-up looks for. */
    static final String LABEL = "io.nvmeof4j.it";
    static final String NQN = "nqn.2014-08.io.nvmeof4j:container-it";
    /** Where the host directory is mounted in the container; the file namespace is {@code ns1.img} in it. */
    static final String DATA_DIR = "/srv/nvme";
    static final String CONFIG_PATH = "/etc/nvmeof4j/target.json";
    static final int FILE_NSID = 1;
    static final int RAM_NSID = 2;
    /** The file namespace: large enough that a stream of writes cannot finish while the daemon stops (sparse). */
    static final long FILE_NAMESPACE_BYTES = 1L << 30;
    static final long RAM_NAMESPACE_BYTES = 64L << 20;
    static final int BLOCK_SIZE = 4096;
    /** How long the image build may take (the first run also builds the Debian base image: ~1 minute here). */
    static final Duration BUILD_TIMEOUT = Duration.ofMinutes(20);
    static final Duration START_TIMEOUT = Duration.ofSeconds(90);
    /** How long the daemon may take to stop after SIGTERM (its shutdown_timeout_ms is 5 s). */
    static final Duration STOP_TIMEOUT = Duration.ofSeconds(30);

    private static boolean imageBuilt;

    private final GenericContainer<?> container;
    private final StringBuffer log = new StringBuffer();
    private final Path hostDir;
    private final int ioPort;
    private final int discoveryPort;
    private final int httpPort;

    private TargetContainer(Path hostDir, int ioPort, int discoveryPort, int httpPort, GenericContainer<?> container) {
        this.hostDir = hostDir;
        this.ioPort = ioPort;
        this.discoveryPort = discoveryPort;
        this.httpPort = httpPort;
        this.container = container;
    }

    /**
     * Builds {@link #IMAGE} from {@code deploy/Dockerfile} with {@code deploy/build-image.sh --skip-daemon-build}
     * (the Maven build running this test packaged target-daemon already), once per JVM, after removing containers
     * an interrupted earlier run left behind.
     */
    static synchronized void buildImage() throws IOException, InterruptedException {
        if (imageBuilt) {
            return;
        }
        removeLeftovers();
        Path repo = repoRoot();
        Path log = repo.resolve("integration-tests/target/container-it/build-image.log");
        Files.createDirectories(log.getParent());
        Process p = new ProcessBuilder(repo.resolve("deploy/build-image.sh").toString(), "--skip-daemon-build",
            "--tag", IMAGE)
            .directory(repo.toFile())
            .redirectErrorStream(true)
            .redirectOutput(log.toFile())
            .redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")))
            .start();
        if (!p.waitFor(BUILD_TIMEOUT.toSeconds(), TimeUnit.SECONDS)) {
            p.descendants().forEach(ProcessHandle::destroyForcibly); // docker build under the script, too
            p.destroyForcibly();
            throw new IllegalStateException("deploy/build-image.sh did not finish within " + BUILD_TIMEOUT + "; see " + log);
        }
        if (p.exitValue() != 0) {
            throw new IllegalStateException("deploy/build-image.sh failed with exit code " + p.exitValue() + ":\n"
                + tail(Files.readString(log), 30));
        }
        imageBuilt = true;
    }

    /** Removes (forcibly) every container carrying {@link #LABEL}: Ryuk's job, done by hand. */
    static void removeLeftovers() {
        DockerClient docker = DockerClientFactory.instance().client();
        List<Container> leftovers = docker.listContainersCmd().withShowAll(true)
            .withLabelFilter(Map.of(LABEL, "true")).exec();
        for (Container c : leftovers) {
            docker.removeContainerCmd(c.getId()).withForce(true).withRemoveVolumes(true).exec();
        }
    }

    /**
     * Writes the configuration into {@code hostDir} (created, and made writable for the image's unprivileged
     * user) and starts the container: a file namespace {@code ns1.img} (NSID 1, created by the daemon) and a RAM
     * namespace (NSID 2), NVMe/TCP and discovery on free ports of 127.0.0.1, the HTTP server on a third.
     */
    static TargetContainer start(Path hostDir) throws IOException {
        Files.createDirectories(hostDir);
        // The daemon runs as uid 10001 in the container: it must create and write ns1.img here.
        Files.setPosixFilePermissions(hostDir, PosixFilePermissions.fromString("rwxrwxrwx"));
        int[] ports = freePorts(3);
        Path config = hostDir.resolve("target.json");
        if (!Files.exists(config)) {
            Files.writeString(config, config(ports[0], ports[1], ports[2]), StandardCharsets.UTF_8);
        } else {
            // A restart reuses the configuration, hence the ports, of the first start (they were free then and
            // the container that held them has stopped).
            String json = Files.readString(config);
            ports[0] = portOf(json, "\"portid\": 1");
            ports[1] = portOf(json, "\"portid\": 2");
            ports[2] = Integer.parseInt(json.replaceAll("(?s).*\"http\": \"127\\.0\\.0\\.1:(\\d+)\".*", "$1"));
        }
        Files.setPosixFilePermissions(config, PosixFilePermissions.fromString("rw-r--r--"));
        return start(hostDir, config, ports[0], ports[1], ports[2]);
    }

    private static TargetContainer start(Path hostDir, Path config, int ioPort, int discoveryPort, int httpPort) {
        GenericContainer<?> c = new GenericContainer<>(DockerImageName.parse(IMAGE))
            .withNetworkMode("host")
            .withLabel(LABEL, "true")
            .withFileSystemBind(config.toString(), CONFIG_PATH, BindMode.READ_ONLY)
            .withFileSystemBind(hostDir.toString(), DATA_DIR, BindMode.READ_WRITE)
            // The image's default command; said here so the test shows what runs.
            .withCommand("--config", CONFIG_PATH)
            .withStartupAttempts(1)
            // Printed on stdout once every listener is up (Main.printUsage).
            .waitingFor(Wait.forLogMessage(".*nvmeof-target .* running; listening on.*", 1)
                .withStartupTimeout(START_TIMEOUT));
        TargetContainer tc = new TargetContainer(hostDir, ioPort, discoveryPort, httpPort, c);
        Consumer<OutputFrame> collect = frame -> tc.log.append(frame.getUtf8String());
        c.withLogConsumer(collect);
        try {
            c.start();
        } catch (RuntimeException e) {
            String logs = tc.log.toString();
            c.stop();
            throw new IllegalStateException("the target container did not start: " + e.getMessage()
                + "\ncontainer output:\n" + tail(logs, 40), e);
        }
        return tc;
    }

    private static String config(int ioPort, int discoveryPort, int httpPort) {
        return """
            {
              "hosts": [],
              "ports": [
                { "portid": 1,
                  "addr": { "trtype": "tcp", "adrfam": "ipv4", "traddr": "127.0.0.1", "trsvcid": "%d" },
                  "subsystems": [ "%s" ] },
                { "portid": 2,
                  "addr": { "trtype": "tcp", "adrfam": "ipv4", "traddr": "127.0.0.1", "trsvcid": "%d" },
                  "subsystems": [ "nqn.2014-08.org.nvmexpress.discovery" ] }
              ],
              "subsystems": [
                { "nqn": "%s",
                  "attr": { "allow_any_host": "1" },
                  "namespaces": [
                    { "nsid": %d, "device": { "path": "%s/ns1.img", "size": "%d", "block_size": %d } },
                    { "nsid": %d, "device": { "backend": "ram", "size": "%d", "block_size": %d } }
                  ] }
              ],
              "nvmeof4j": { "http": "127.0.0.1:%d" }
            }
            """.formatted(ioPort, NQN, discoveryPort, NQN, FILE_NSID, DATA_DIR, FILE_NAMESPACE_BYTES, BLOCK_SIZE,
            RAM_NSID, RAM_NAMESPACE_BYTES, BLOCK_SIZE, httpPort);
    }

    private static int portOf(String json, String portIdField) {
        int at = json.indexOf(portIdField);
        int svc = json.indexOf("\"trsvcid\": \"", at) + "\"trsvcid\": \"".length();
        return Integer.parseInt(json.substring(svc, json.indexOf('"', svc)));
    }

    /** Distinct free TCP ports on 127.0.0.1 (held together while chosen, so they differ). */
    static int[] freePorts(int n) throws IOException {
        List<ServerSocket> sockets = new ArrayList<>();
        try {
            int[] ports = new int[n];
            for (int i = 0; i < n; i++) {
                ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
                sockets.add(s);
                ports[i] = s.getLocalPort();
            }
            return ports;
        } finally {
            for (ServerSocket s : sockets) {
                s.close();
            }
        }
    }

    int ioPort() {
        return ioPort;
    }

    int discoveryPort() {
        return discoveryPort;
    }

    int httpPort() {
        return httpPort;
    }

    /** Where the image puts the API token (NVMEOF4J_API_TOKEN_FILE in the Dockerfile): the daemon's state directory. */
    static final String API_TOKEN_FILE = "/var/lib/nvmeof4j/api-token";

    /** The API token the daemon made at its first start, read inside the container as the daemon's user. */
    String apiToken() throws Exception {
        org.testcontainers.containers.Container.ExecResult r = container.execInContainer("sh", "-c",
            "stat -c %a " + API_TOKEN_FILE + " && cat " + API_TOKEN_FILE);
        if (r.getExitCode() != 0) {
            throw new IllegalStateException("cannot read " + API_TOKEN_FILE + " in the container: " + r.getStderr());
        }
        String[] lines = r.getStdout().split("\n");
        if (!lines[0].strip().equals("600")) {
            throw new IllegalStateException(API_TOKEN_FILE + " has mode " + lines[0] + ", not 600");
        }
        return lines[1].strip();
    }

    /** The file namespace on the host. */
    Path fileNamespace() {
        return hostDir.resolve("ns1.img");
    }

    /** Everything the container printed so far (stdout and stderr). */
    String log() {
        return log.toString();
    }

    /** Sends SIGTERM to the daemon (PID 1 of the container), as {@code docker stop} and Kubernetes do. */
    void sigterm() {
        container.getDockerClient().killContainerCmd(container.getContainerId()).withSignal("SIGTERM").exec();
    }

    /** Waits (bounded) until the container has exited; returns its exit code. */
    int awaitExit(Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            InspectContainerResponse.ContainerState state =
                container.getDockerClient().inspectContainerCmd(container.getContainerId()).exec().getState();
            if (!Boolean.TRUE.equals(state.getRunning())) {
                return state.getExitCodeLong().intValue();
            }
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("the container still runs " + timeout + " after SIGTERM; output:\n"
                    + tail(log(), 40));
            }
            Thread.sleep(100);
        }
    }

    /** Stops (if still running) and removes the container. */
    @Override
    public void close() {
        container.stop();
    }

    static String tail(String text, int lines) {
        String[] all = text.split("\n");
        return String.join("\n", java.util.Arrays.copyOfRange(all, Math.max(0, all.length - lines), all.length));
    }

    /** The repository root: the nearest folder, walking up from the working directory, holding deploy/Dockerfile. */
    static Path repoRoot() {
        Path p = Path.of("").toAbsolutePath();
        for (Path d = p; d != null; d = d.getParent()) {
            if (Files.exists(d.resolve("deploy/Dockerfile")) && Files.exists(d.resolve("deploy/build-image.sh"))) {
                return d;
            }
        }
        throw new IllegalStateException("no folder containing deploy/Dockerfile above " + p);
    }
}
