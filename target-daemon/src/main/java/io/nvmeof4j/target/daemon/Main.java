package io.nvmeof4j.target.daemon;

import io.nvmeof4j.protocol.spi.AddressFamily;
import io.nvmeof4j.protocol.spi.TransportAddress;
import io.nvmeof4j.target.config.BuildVersion;
import io.nvmeof4j.target.config.ConfigException;
import io.nvmeof4j.target.config.TargetConfig;
import io.nvmeof4j.target.model.Port;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * {@code nvmeof-target}: runs the target until SIGTERM or SIGINT.
 * <p>stdout gets what a person needs to use the target (listen addresses and the nvme-cli commands to reach
 * it); stderr gets the log (Logback, {@code logback.xml}). Exit status: 0 after an orderly stop (or a passing
 * {@code --check}), 1 when the target could not start (a device cannot be opened, a port is in use), 2 for a bad
 * configuration or command line, with nothing started.
 */
@Command(name = "nvmeof-target", mixinStandardHelpOptions = true, versionProvider = Main.Version.class,
    sortOptions = false,
    description = {
        "NVMe-over-Fabrics target: exports block namespaces over NVMe/TCP.",
        "Without --config: subsystem " + TargetConfig.DEMO_NQN + " (any host) with a",
        "1 GiB RAM namespace on 127.0.0.1:4420, discovery on 127.0.0.1:8009.",
        "The configuration is JSON in the shape of an nvmetcli save file",
        "(/etc/nvmet/config.json), plus nvmeof4j extensions.",
        ""},
    exitCodeListHeading = "%nExit status:%n",
    exitCodeList = {
        "0:stopped by SIGTERM or SIGINT, or --check passed",
        "1:could not start (a device could not be opened, a port is in use)",
        "2:invalid configuration or command line; nothing was started"})
public final class Main implements Callable<Integer> {
    private static final Logger LOG = LoggerFactory.getLogger(Main.class);

    public static final int EXIT_OK = 0;
    public static final int EXIT_START_FAILED = 1;
    public static final int EXIT_BAD_CONFIG = 2;

    @Option(names = {"-c", "--config"}, paramLabel = "FILE",
        description = "Configuration file (nvmetcli save-file JSON plus nvmeof4j extensions).")
    private Path configFile;

    @Option(names = "--http", paramLabel = "HOST:PORT|off",
        description = {"Address of the HTTP server (GET /metrics, the management API under /api/v1/),",
            "or 'off'. Overrides \"http\" in the configuration's \"nvmeof4j\" section.",
            "Default: " + io.nvmeof4j.target.config.DaemonSettings.HTTP_DEFAULT + "."})
    private String http;

    @Option(names = "--metrics-http", paramLabel = "HOST:PORT|off",
        description = {"Address of a second, read-only listener serving only GET /metrics (Prometheus,",
            "probes). Overrides \"metrics_http\" in the \"nvmeof4j\" section. Default: none."})
    private String metricsHttp;

    @Option(names = "--api-token-file", paramLabel = "FILE",
        description = {"File holding the management API's bearer token; created (mode 0600, random) when",
            "absent. Overrides \"api_token_file\". Default: api-token next to the configuration",
            "file; without --config, $XDG_STATE_HOME/nvmeof4j/api-token (~/.local/state/...)."})
    private Path apiTokenFile;

    @Option(names = {"-r", "--rpc-socket"}, paramLabel = "PATH",
        description = {"Serve SPDK's JSON-RPC (scripts/rpc.py -s PATH) on this Unix socket, mode 0600.",
            "Overrides \"rpc_socket\" in the \"nvmeof4j\" section. Default: no socket."})
    private Path rpcSocket;

    @Option(names = "--json", paramLabel = "FILE",
        description = {"Start from an SPDK JSON configuration (what save_config writes; as nvmf_tgt --json):",
            "its methods are called in order. With --config, that file gives the settings and ports to",
            "start from, and is not changed; live changes are then not persisted (save_config saves them)."})
    private Path spdkJson;

    @Option(names = "--check", description = "Validate the configuration (and the files it names), then exit.")
    private boolean check;

    @Spec
    private CommandSpec spec;

    private final boolean installSignalHandlers;
    private final CountDownLatch stopRequested = new CountDownLatch(1);
    private volatile TargetDaemon daemon;

    /** @param installSignalHandlers true in the real process: SIGTERM/SIGINT then stop the target with status 0 */
    Main(boolean installSignalHandlers) {
        this.installSignalHandlers = installSignalHandlers;
    }

    public static void main(String[] args) {
        int status = commandLine(new Main(true)).execute(args);
        Logging.stop();
        System.exit(status);
    }

    /** Runs the command in this JVM, without signal handlers; returns the exit status (tests, embedding). */
    public static int run(PrintWriter out, PrintWriter err, String... args) {
        return commandLine(new Main(false)).setOut(out).setErr(err).execute(args);
    }

    /** Usage errors exit with picocli's 2 (as a bad configuration); an unexpected exception with 1. */
    static CommandLine commandLine(Main main) {
        return new CommandLine(main);
    }

    /** Asks a running {@link #call()} to stop the target and return. Any thread. */
    void requestStop() {
        stopRequested.countDown();
    }

    /** The running daemon, once started (null before and when the start failed). */
    TargetDaemon daemon() {
        return daemon;
    }

    @Override
    public Integer call() {
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        TargetConfig config;
        try {
            if (spdkJson != null) {
                // The SPDK file is what persists (save_config): the base is parsed without a source file, so the
                // control plane does not rewrite --config with what the SPDK file adds at every start.
                config = configFile == null
                    ? TargetConfig.parse(io.nvmeof4j.target.control.rpc.SpdkJsonConfig.BASE_JSON)
                    : TargetConfig.parse(readConfig(configFile), configFile.toAbsolutePath().getParent());
            } else {
                config = configFile == null ? TargetConfig.embeddedDefault() : TargetConfig.load(configFile);
            }
        } catch (ConfigException e) {
            return fail(err, e.getMessage(), EXIT_BAD_CONFIG);
        }
        if (http != null) {
            try {
                config = config.withDaemonSettings(config.daemon().withHttp(http));
            } catch (IllegalArgumentException e) {
                return fail(err, "--http " + e.getMessage(), EXIT_BAD_CONFIG);
            }
        }
        if (metricsHttp != null || apiTokenFile != null) {
            try {
                io.nvmeof4j.target.config.HttpSecurity security = config.daemon().httpSecurity();
                if (metricsHttp != null) {
                    security = security.withMetricsHttp(metricsHttp);
                }
                if (apiTokenFile != null) {
                    security = security.withApiTokenFile(apiTokenFile);
                }
                config = config.withDaemonSettings(config.daemon().withHttpSecurity(security));
            } catch (IllegalArgumentException e) {
                return fail(err, "--metrics-http " + e.getMessage(), EXIT_BAD_CONFIG);
            }
        }
        if (check) {
            out.println("configuration OK: " + config.subsystems().size() + " subsystem(s), "
                + config.servablePorts().size() + " port(s)");
            out.flush();
            return EXIT_OK;
        }
        if (installSignalHandlers) {
            // Before the start, so a signal arriving while we start still ends in an orderly stop.
            String why = SignalHandlers.install(this::requestStop);
            if (why != null) {
                LOG.warn("cannot handle SIGTERM/SIGINT ({}); the shutdown hook will stop the target, but the exit "
                    + "status will be 128 + the signal number", why);
            }
        }
        TargetDaemon started;
        try {
            started = TargetDaemon.start(config);
        } catch (ConfigException e) {
            return fail(err, e.getMessage(), EXIT_BAD_CONFIG);
        } catch (IOException | RuntimeException e) {
            LOG.debug("start failed", e);
            return fail(err, e.getMessage(), EXIT_START_FAILED);
        }
        if (spdkJson != null) {
            try {
                io.nvmeof4j.target.control.rpc.SpdkJsonConfig.replay(started, spdkJson);
            } catch (IOException | RuntimeException e) {
                started.close();
                return fail(err, "--json " + spdkJson + ": " + e.getMessage(), EXIT_BAD_CONFIG);
            }
        }
        Path socket = rpcSocket != null ? rpcSocket : started.controlPlane().rpcSocketSetting().orElse(null);
        if (socket != null) {
            try {
                started.startRpc(socket);
            } catch (IOException | RuntimeException e) {
                started.close();
                return fail(err, e.getMessage(), EXIT_START_FAILED);
            }
        }
        if (started.model().ports().isEmpty() && started.httpAddress() == null && started.rpcSocket() == null) {
            started.close();
            return fail(err, "no port is configured and no control plane could add one (HTTP is off, no rpc_socket):"
                + " nothing to serve", EXIT_BAD_CONFIG);
        }
        daemon = started;
        Thread hook = new Thread(() -> {
            // The JVM is going down without our signal handler (another signal, System.exit elsewhere): stop
            // in order here. close() waits for a close the main thread may be running already.
            requestStop();
            started.close();
            Logging.stop();
        }, "nvmeof-target-shutdown");
        Runtime.getRuntime().addShutdownHook(hook);

        printUsage(out, started);
        awaitStopRequest();
        LOG.info("stop requested");
        started.close();
        try {
            Runtime.getRuntime().removeShutdownHook(hook);
        } catch (IllegalStateException alreadyShuttingDown) {
            // the hook is running or has run: it closed the daemon too
        }
        return EXIT_OK;
    }

    private void awaitStopRequest() {
        try {
            while (!stopRequested.await(1, TimeUnit.MINUTES)) {
                // serving; each wait is bounded so a thread dump shows where we are and why
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static String readConfig(Path file) throws ConfigException {
        try {
            return java.nio.file.Files.readString(file);
        } catch (IOException e) {
            throw new ConfigException("", "cannot read configuration file " + file + ": " + e, e);
        }
    }

    private static int fail(PrintWriter err, String message, int status) {
        err.println("nvmeof-target: error: " + message);
        err.flush();
        return status;
    }

    /** Listen addresses, then one discover line per port and one connect line per subsystem and port. */
    static void printUsage(PrintWriter out, TargetDaemon daemon) {
        List<Port> ports = daemon.model().ports();
        out.println("nvmeof-target " + BuildVersion.version() + " running; listening on:");
        if (ports.isEmpty()) {
            out.println("  no port yet: add one through the management API or SPDK JSON-RPC "
                + "(nvmf_subsystem_add_listener)");
        }
        for (Port p : ports) {
            List<String> subsystems = p.subsystems().stream().filter(n -> !Port.DISCOVERY_NQN.equals(n)).toList();
            out.println("  " + p.address() + " (portid " + p.portId() + "): "
                + (subsystems.isEmpty() ? "discovery" : "discovery, " + String.join(", ", subsystems)));
        }
        out.println("From a Linux host (nvme-cli):");
        for (Port p : ports) {
            TransportAddress a = p.address();
            String target = "-t " + a.type().configName() + " -a " + hostAddress(a) + " -s " + a.trsvcid();
            out.println("nvme discover " + target);
            for (String nqn : p.subsystems()) {
                if (!Port.DISCOVERY_NQN.equals(nqn)) {
                    out.println("nvme connect " + target + " -n " + nqn);
                }
            }
        }
        java.net.InetSocketAddress httpAddress = daemon.httpAddress();
        if (httpAddress != null) {
            String host = httpAddress.getAddress().getHostAddress();
            String base = "http://" + (host.contains(":") ? "[" + host + "]" : host) + ":" + httpAddress.getPort();
            out.println("HTTP: metrics " + base + "/metrics, management API " + base + "/api/v1/subsystems");
            java.net.InetSocketAddress metricsOnly = daemon.metricsHttpAddress();
            if (metricsOnly != null) {
                String m = metricsOnly.getAddress().getHostAddress();
                out.println("HTTP: metrics only " + "http://" + (m.contains(":") ? "[" + m + "]" : m) + ":"
                    + metricsOnly.getPort() + "/metrics");
            }
            out.println("API token: " + daemon.apiTokenFile() + " (curl -H \"Authorization: Bearer $(cat "
                + daemon.apiTokenFile() + ")\" " + base + "/api/v1/subsystems)");
        } else {
            out.println("HTTP: off");
        }
        out.println("Stop with Ctrl-C or SIGTERM.");
        out.flush();
    }

    /** A wildcard listen address is reachable through loopback on this machine; print that instead. */
    private static String hostAddress(TransportAddress a) {
        switch (a.traddr()) {
            case "0.0.0.0":
                return "127.0.0.1";
            case "::":
            case "0:0:0:0:0:0:0:0":
                return a.family() == AddressFamily.IPV6 ? "::1" : a.traddr();
            default:
                return a.traddr();
        }
    }

    /** {@code --version}. */
    static final class Version implements CommandLine.IVersionProvider {
        @Override
        public String[] getVersion() {
            return new String[] {"nvmeof-target " + BuildVersion.version(),
                "Java " + System.getProperty("java.version") + " (" + System.getProperty("java.vm.name") + ")"};
        }
    }

    /** Flushes and stops Logback so the last lines of a shutdown reach stderr before the JVM exits. */
    static final class Logging {
        private Logging() {
        }

        static void stop() {
            org.slf4j.ILoggerFactory factory = LoggerFactory.getILoggerFactory();
            if (factory instanceof ch.qos.logback.classic.LoggerContext) {
                ((ch.qos.logback.classic.LoggerContext) factory).stop();
            }
        }
    }
}
