package io.nvmeof4j.target.config;

import io.nvmeof4j.jni.cpu.CpuSet;
import io.nvmeof4j.protocol.spi.ConnectionLimits;
import io.nvmeof4j.protocol.spi.idle.IdleMode;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.concurrent.TimeUnit;

/**
 * The daemon's own settings: the top-level {@code "nvmeof4j"} object of the configuration (an extension nvmetcli
 * does not know; nvmetcli ignores it).
 *
 * @param reactors              {@code reactors}: data-path threads, each with its poll group and buffer pool
 * @param idleStrategy          {@code idle_strategy}: {@code "adaptive"} or {@code "busy"}
 * @param idleSpinNanos         {@code idle_spin_us}: how long an adaptive reactor spins before it blocks
 * @param bufferPoolBytes       {@code buffer_pool_mib}: most off-heap data-buffer memory per reactor (allocated
 *                              lazily, in 1 MiB slabs, as load needs it)
 * @param maxDataTransferSize   {@code max_data_transfer_kib}: the largest data transfer of one command (MDTS)
 * @param hugepages             {@code hugepages}: what goes on hugepages ({@link Hugepages}: by default populated RAM
 *                              namespaces' chunks; with {@code true} the buffer pools and every RAM namespace too,
 *                              with {@code false} nothing)
 * @param shutdownTimeout       {@code shutdown_timeout_ms}: how long a shutdown waits for commands in flight
 * @param http                  {@code http}: {@code "HOST:PORT"} of the metrics and management HTTP server
 *                              ({@value #HTTP_DEFAULT} by default), or null when {@code "off"}
 * @param httpExplicit          the address was given (configuration or {@code --http}): failing to bind it fails
 *                              the start. The default address, when taken, only gets a warning.
 * @param metrics               {@code metrics}: record the target's meters (default true); false turns the
 *                              data-path recording off, {@code /metrics} is then empty
 * @param httpSecurity          the API token file, the metrics-only listener, allowed Host names and connection
 *                              limits of the HTTP server ({@link HttpSecurity})
 * @param allowedPaths          {@code allowed_paths}: where file and block-device namespaces added through the
 *                              management API may lie: directories (the files below them) and block devices (that
 *                              device only), absolute. Empty (the default): no file namespace can be added live.
 *                              The configuration file's own namespaces are not confined (the operator wrote them)
 * @param ramBudgetBytes        {@code ram_budget_mib}: the most bytes all RAM namespaces together may hold, or
 *                              {@link #RAM_BUDGET_DERIVED} (the default) for what this JVM and machine can give
 *                              (see {@code io.nvmeof4j.target.limits.RamBudget})
 * @param queueBufferBudgetBytes {@code queue_buffer_budget_mib}: the most bytes the connected NVMe/TCP queues together
 *                              may hold in per-queue buffers (receive buffer, command slots, in-capsule buffers);
 *                              a Connect beyond it is refused with Controller Busy (docs/datapath.md)
 * @param connectionLimits      {@code max_pending_connections}, {@code max_pending_connections_per_host},
 *                              {@code connect_timeout_ms}: limits on each port's queues that have not completed
 *                              their Connect (see {@link ConnectionLimits} for the defaults and why)
 * @param reactorCpus           {@code reactor_cpus}: one reactor per CPU, each pinned to it, every other thread of
 *                              the process on the CPUs it was allowed less these (SPDK's core mask; docs/datapath.md,
 *                              "Pinning"), or null (the default): no affinity is set
 */
public record DaemonSettings(int reactors, IdleMode idleStrategy, long idleSpinNanos, long bufferPoolBytes,
                             int maxDataTransferSize, Hugepages hugepages, Duration shutdownTimeout, String http,
                             boolean httpExplicit, boolean metrics, HttpSecurity httpSecurity,
                             List<Path> allowedPaths, long ramBudgetBytes, long queueBufferBudgetBytes,
                             ConnectionLimits connectionLimits, CpuSet reactorCpus) {
    public static final String REACTORS = "reactors";
    public static final String REACTOR_CPUS = "reactor_cpus";
    public static final String IDLE_STRATEGY = "idle_strategy";
    public static final String IDLE_SPIN_US = "idle_spin_us";
    public static final String BUFFER_POOL_MIB = "buffer_pool_mib";
    public static final String MAX_DATA_TRANSFER_KIB = "max_data_transfer_kib";
    public static final String HUGEPAGES = "hugepages";
    /**
     * A setting of earlier versions (worker threads per file namespace), accepted and ignored: file namespaces now
     * run on the reactors through io_uring.
     */
    public static final String FILE_WORKERS_OBSOLETE = "file_workers";
    public static final String SHUTDOWN_TIMEOUT_MS = "shutdown_timeout_ms";
    public static final String HTTP = "http";
    public static final String METRICS = "metrics";
    public static final String ALLOWED_PATHS = "allowed_paths";
    public static final String RAM_BUDGET_MIB = "ram_budget_mib";
    public static final String QUEUE_BUFFER_BUDGET_MIB = "queue_buffer_budget_mib";
    /**
     * {@code rpc_socket}: the Unix socket SPDK's JSON-RPC is served on (none when absent). Read by the control plane
     * from the configuration document, so no field here.
     */
    public static final String RPC_SOCKET = "rpc_socket";
    /**
     * {@code rpc_bdevs}: the JSON-RPC socket's bdev registry ({@code [{"name", "kind", "num_blocks", "block_size",
     * "uuid", "filename", "namespace"}]}), written by the daemon so that bdevs (used or not) and their names survive a
     * restart, as SPDK's save_config keeps them. Read by the RPC methods from the document, so no field here.
     */
    public static final String RPC_BDEVS = "rpc_bdevs";
    /** {@link #ramBudgetBytes()} when {@code ram_budget_mib} is not set: derived from the JVM and the machine. */
    public static final long RAM_BUDGET_DERIVED = -1;
    /** The largest {@code ram_budget_mib}: 2^33 MiB (8 PiB), far above any machine, far below a long's overflow. */
    public static final long RAM_BUDGET_MIB_MAX = 1L << 33;
    /**
     * Room for one Linux host that opens the default qid_max (128) I/O queues at the default queue size (128) and
     * inline_data_size (16 KiB), 2.1 MiB per queue, 269 MiB in all, with room for most of a second; or about 29 hosts
     * of 8 CPUs (8 I/O queues and an admin queue, 17 MiB each).
     */
    public static final long QUEUE_BUFFER_BUDGET_MIB_DEFAULT = 512;
    /** The largest {@code queue_buffer_budget_mib}: 16 TiB, far above any machine. */
    public static final long QUEUE_BUFFER_BUDGET_MIB_MAX = 1L << 24;
    public static final String MAX_PENDING_CONNECTIONS = "max_pending_connections";
    public static final String MAX_PENDING_CONNECTIONS_PER_HOST = "max_pending_connections_per_host";
    public static final String CONNECT_TIMEOUT_MS = "connect_timeout_ms";
    /** Where the HTTP server (GET /metrics, the management API) listens unless told otherwise: loopback only. */
    public static final String HTTP_DEFAULT = "127.0.0.1:9480";
    /** {@code "http": "off"} (or {@code false}) turns the HTTP server off. */
    public static final String HTTP_OFF = "off";

    public static final int MAX_REACTORS = 256;
    public static final IdleMode IDLE_STRATEGY_DEFAULT = IdleMode.ADAPTIVE;
    public static final long IDLE_SPIN_US_DEFAULT = 50;
    public static final int BUFFER_POOL_MIB_DEFAULT = 64;
    public static final int MAX_DATA_TRANSFER_KIB_DEFAULT = 1024;
    public static final long SHUTDOWN_TIMEOUT_MS_DEFAULT = 5_000;

    public DaemonSettings {
        if (reactors < 1 || reactors > MAX_REACTORS) {
            throw new IllegalArgumentException("reactors " + reactors + " outside 1.." + MAX_REACTORS);
        }
        Objects.requireNonNull(idleStrategy, "idleStrategy");
        Objects.requireNonNull(hugepages, "hugepages");
        Objects.requireNonNull(shutdownTimeout, "shutdownTimeout");
        Objects.requireNonNull(httpSecurity, "httpSecurity");
        Objects.requireNonNull(connectionLimits, "connectionLimits");
        if (http != null) {
            parseHttpAddress(http);
        }
        allowedPaths = List.copyOf(allowedPaths);
        for (Path p : allowedPaths) {
            if (!p.isAbsolute()) {
                throw new IllegalArgumentException("allowed path " + p + " is not absolute");
            }
        }
        if (ramBudgetBytes < 0 && ramBudgetBytes != RAM_BUDGET_DERIVED) {
            throw new IllegalArgumentException("ram budget " + ramBudgetBytes + " is negative");
        }
        if (queueBufferBudgetBytes < 0) {
            throw new IllegalArgumentException("queue buffer budget " + queueBufferBudgetBytes + " is negative");
        }
        if (reactorCpus != null && reactorCpus.size() != reactors) {
            throw new IllegalArgumentException(reactors + " reactors on " + reactorCpus.size() + " reactor CPUs ("
                + reactorCpus + "): one reactor per CPU");
        }
    }

    /** The settings of an older configuration shape: HTTP on the default address, metrics on. */
    public DaemonSettings(int reactors, IdleMode idleStrategy, long idleSpinNanos, long bufferPoolBytes,
                          int maxDataTransferSize, Hugepages hugepages, Duration shutdownTimeout) {
        this(reactors, idleStrategy, idleSpinNanos, bufferPoolBytes, maxDataTransferSize, hugepages, shutdownTimeout,
            HTTP_DEFAULT, false, true, HttpSecurity.defaults(HttpSecurity.stateDirectoryTokenFile()), List.of(),
            RAM_BUDGET_DERIVED, QUEUE_BUFFER_BUDGET_MIB_DEFAULT << 20, ConnectionLimits.defaults(), null);
    }

    /** These settings with the HTTP server at {@code address} ("HOST:PORT", or "off"), given explicitly. */
    public DaemonSettings withHttp(String address) {
        String a = address == null || HTTP_OFF.equals(address.trim().toLowerCase(Locale.ROOT)) ? null : address.trim();
        return new DaemonSettings(reactors, idleStrategy, idleSpinNanos, bufferPoolBytes, maxDataTransferSize,
            hugepages, shutdownTimeout, a, true, metrics, httpSecurity, allowedPaths, ramBudgetBytes,
            queueBufferBudgetBytes, connectionLimits, reactorCpus);
    }

    public DaemonSettings withMetrics(boolean on) {
        return new DaemonSettings(reactors, idleStrategy, idleSpinNanos, bufferPoolBytes, maxDataTransferSize,
            hugepages, shutdownTimeout, http, httpExplicit, on, httpSecurity, allowedPaths, ramBudgetBytes,
            queueBufferBudgetBytes, connectionLimits, reactorCpus);
    }

    /** These settings with other HTTP security settings (command-line overrides: --api-token-file, --metrics-http). */
    public DaemonSettings withHttpSecurity(HttpSecurity security) {
        return new DaemonSettings(reactors, idleStrategy, idleSpinNanos, bufferPoolBytes, maxDataTransferSize,
            hugepages, shutdownTimeout, http, httpExplicit, metrics, security, allowedPaths, ramBudgetBytes,
            queueBufferBudgetBytes, connectionLimits, reactorCpus);
    }

    /** These settings with other {@code allowed_paths} and {@code ram_budget_mib} (bytes, or the derived default). */
    public DaemonSettings withNamespaceLimits(List<Path> paths, long ramBudget) {
        return new DaemonSettings(reactors, idleStrategy, idleSpinNanos, bufferPoolBytes, maxDataTransferSize,
            hugepages, shutdownTimeout, http, httpExplicit, metrics, httpSecurity, paths, ramBudget,
            queueBufferBudgetBytes, connectionLimits, reactorCpus);
    }

    public DaemonSettings withConnectionLimits(ConnectionLimits limits) {
        return new DaemonSettings(reactors, idleStrategy, idleSpinNanos, bufferPoolBytes, maxDataTransferSize,
            hugepages, shutdownTimeout, http, httpExplicit, metrics, httpSecurity, allowedPaths, ramBudgetBytes,
            queueBufferBudgetBytes, limits, reactorCpus);
    }

    /** These settings with another {@code queue_buffer_budget_mib} (bytes). */
    public DaemonSettings withQueueBufferBudget(long bytes) {
        return new DaemonSettings(reactors, idleStrategy, idleSpinNanos, bufferPoolBytes, maxDataTransferSize,
            hugepages, shutdownTimeout, http, httpExplicit, metrics, httpSecurity, allowedPaths, ramBudgetBytes,
            bytes, connectionLimits, reactorCpus);
    }

    /**
     * {@code "127.0.0.1:9480"}, {@code "[::1]:9480"}, {@code "0.0.0.0:9480"}, {@code "localhost:9480"}: an IP literal
     * (never a name to resolve, apart from localhost) and a port 0..65535 (0: any free port).
     *
     * @throws IllegalArgumentException saying what is wrong
     */
    public static InetSocketAddress parseHttpAddress(String text) {
        String t = text.trim();
        int colon = t.lastIndexOf(':');
        if (colon <= 0 || colon == t.length() - 1) {
            throw new IllegalArgumentException("'" + text + "' is not HOST:PORT (example: " + HTTP_DEFAULT + ")");
        }
        String host = t.substring(0, colon);
        String portText = t.substring(colon + 1);
        int port;
        try {
            port = Integer.parseInt(portText);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("'" + text + "': port '" + portText + "' is not a number");
        }
        if (port < 0 || port > 65535) {
            throw new IllegalArgumentException("'" + text + "': port " + port + " outside 0..65535");
        }
        if (host.startsWith("[") && host.endsWith("]")) {
            host = host.substring(1, host.length() - 1);
        } else if (host.contains(":")) {
            throw new IllegalArgumentException("'" + text + "': write an IPv6 address in brackets ([::1]:9480)");
        }
        if ("localhost".equalsIgnoreCase(host)) {
            host = "127.0.0.1";
        }
        boolean literal = host.matches("\\d{1,3}(\\.\\d{1,3}){3}") || (host.contains(":") && host.matches("[0-9a-fA-F:.%]+"));
        if (!literal) {
            throw new IllegalArgumentException("'" + text + "': '" + host + "' is not an IP address");
        }
        try {
            return new InetSocketAddress(InetAddress.getByName(host), port);
        } catch (UnknownHostException e) {
            throw new IllegalArgumentException("'" + text + "': '" + host + "' is not an IP address");
        }
    }

    /**
     * Reactors when the configuration names none: 1 on a machine with up to 2 CPUs, else half the CPUs.
     * <p>Why: a reactor that has work spins (and an adaptive one spins 50 µs after each command), so each reactor
     * can take a CPU when busy. The rest of the daemon needs CPU too: the kernel's TCP stack (softirq work runs
     * on whichever CPU the packets land), file-namespace worker threads doing the system calls, acceptor and
     * keep-alive threads and the JIT/GC. On 2 CPUs, two reactors would leave nothing for those and for an
     * initiator on the same machine; half the CPUs leaves the other half to them. More reactors than connections
     * gain nothing: a queue is served by one reactor.
     */
    public static int defaultReactors(int cpus) {
        return cpus <= 2 ? 1 : Math.min(MAX_REACTORS, cpus / 2);
    }

    public static DaemonSettings defaults() {
        int cpus = Runtime.getRuntime().availableProcessors();
        return new DaemonSettings(defaultReactors(cpus), IDLE_STRATEGY_DEFAULT,
            TimeUnit.MICROSECONDS.toNanos(IDLE_SPIN_US_DEFAULT), (long) BUFFER_POOL_MIB_DEFAULT << 20,
            MAX_DATA_TRANSFER_KIB_DEFAULT << 10, Hugepages.POPULATED_RAM,
            Duration.ofMillis(SHUTDOWN_TIMEOUT_MS_DEFAULT), HTTP_DEFAULT, false, true,
            HttpSecurity.defaults(HttpSecurity.stateDirectoryTokenFile()), List.of(),
            RAM_BUDGET_DERIVED, QUEUE_BUFFER_BUDGET_MIB_DEFAULT << 20, ConnectionLimits.defaults(), null);
    }
}
