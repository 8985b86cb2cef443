package io.nvmeof4j.target.config;

import com.fasterxml.jackson.databind.JsonNode;
import io.nvmeof4j.jni.cpu.CpuAffinity;
import io.nvmeof4j.jni.cpu.CpuSet;
import io.nvmeof4j.protocol.spi.ConnectionLimits;
import io.nvmeof4j.protocol.spi.PortOptions;
import io.nvmeof4j.protocol.spi.TransportType;
import io.nvmeof4j.protocol.spi.idle.IdleMode;

import java.nio.charset.StandardCharsets;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.TimeUnit;

import static io.nvmeof4j.target.config.ConfigValues.*;

/**
 * The {@code "nvmeof4j"} object, nvmeof4j's own settings (strict: an unknown setting is an error), and the checks
 * of those settings against the ports and subsystems.
 */
final class SettingsSection {
    private final Path baseDirectory;
    private final Path defaultTokenFile;
    private final ConfigNotices notices;

    SettingsSection(Path baseDirectory, Path defaultTokenFile, ConfigNotices notices) {
        this.baseDirectory = baseDirectory;
        this.defaultTokenFile = defaultTokenFile;
        this.notices = notices;
    }

    DaemonSettings daemonSettings(JsonNode node, String where) throws ConfigException {
        DaemonSettings d = DaemonSettings.defaults().withHttpSecurity(HttpSecurity.defaults(defaultTokenFile));
        if (node == null || node.isNull()) {
            return d;
        }
        requireObject(node, where);
        Set<String> known = Set.of(DaemonSettings.REACTORS, DaemonSettings.REACTOR_CPUS, DaemonSettings.IDLE_STRATEGY,
            DaemonSettings.IDLE_SPIN_US,
            DaemonSettings.BUFFER_POOL_MIB, DaemonSettings.MAX_DATA_TRANSFER_KIB, DaemonSettings.HUGEPAGES,
            DaemonSettings.FILE_WORKERS_OBSOLETE, DaemonSettings.SHUTDOWN_TIMEOUT_MS, DaemonSettings.HTTP,
            DaemonSettings.METRICS, HttpSecurity.API_TOKEN_FILE, HttpSecurity.METRICS_HTTP,
            HttpSecurity.HTTP_ALLOWED_HOSTS, HttpSecurity.HTTP_REQUEST_TIMEOUT_MS, HttpSecurity.HTTP_MAX_CONNECTIONS,
            HttpSecurity.HTTP_MAX_CONNECTIONS_PER_PEER, DaemonSettings.ALLOWED_PATHS, DaemonSettings.RAM_BUDGET_MIB,
            DaemonSettings.QUEUE_BUFFER_BUDGET_MIB,
            DaemonSettings.MAX_PENDING_CONNECTIONS, DaemonSettings.MAX_PENDING_CONNECTIONS_PER_HOST,
            DaemonSettings.CONNECT_TIMEOUT_MS, DaemonSettings.RPC_SOCKET, DaemonSettings.RPC_BDEVS);
        for (Iterator<String> names = node.fieldNames(); names.hasNext(); ) {
            String name = names.next();
            if (!known.contains(name)) {
                throw new ConfigException(at(where, name), "unknown setting (known: " + String.join(", ",
                    new java.util.TreeSet<>(known)) + ")");
            }
        }
        if (node.has(DaemonSettings.RPC_BDEVS)) {
            requireArray(node.get(DaemonSettings.RPC_BDEVS), at(where, DaemonSettings.RPC_BDEVS));
        }
        if (node.has(DaemonSettings.RPC_SOCKET)) {
            String rw = at(where, DaemonSettings.RPC_SOCKET);
            String socket = text(node.get(DaemonSettings.RPC_SOCKET), rw);
            requirePlainText(socket, rw);
            if (socket.isEmpty() || socket.getBytes(StandardCharsets.UTF_8).length > 107) {
                throw new ConfigException(rw, "must be a path of 1 to 107 bytes (sun_path)");
            }
        }
        int reactors = (int) optionalInteger(node, where, DaemonSettings.REACTORS, 1, DaemonSettings.MAX_REACTORS,
            d.reactors());
        CpuSet reactorCpus = reactorCpus(node, where);
        if (reactorCpus != null) {
            if (node.has(DaemonSettings.REACTORS) && reactors != reactorCpus.size()) {
                throw new ConfigException(at(where, DaemonSettings.REACTORS), reactors + " differs from the "
                    + reactorCpus.size() + " CPU(s) of " + at(where, DaemonSettings.REACTOR_CPUS) + " "
                    + quote(node.get(DaemonSettings.REACTOR_CPUS).asText()) + " (one reactor per CPU): drop "
                    + DaemonSettings.REACTORS + " or make them agree");
            }
            reactors = reactorCpus.size();
        }
        IdleMode idle = d.idleStrategy();
        JsonNode idleNode = node.get(DaemonSettings.IDLE_STRATEGY);
        if (idleNode != null) {
            String text = text(idleNode, at(where, DaemonSettings.IDLE_STRATEGY));
            try {
                idle = IdleMode.fromConfigName(text);
            } catch (IllegalArgumentException e) {
                throw new ConfigException(at(where, DaemonSettings.IDLE_STRATEGY), quote(text)
                    + " is not an idle strategy (expected \"adaptive\" or \"busy\")");
            }
        }
        long spinUs = optionalInteger(node, where, DaemonSettings.IDLE_SPIN_US, 0, 1_000_000,
            TimeUnit.NANOSECONDS.toMicros(d.idleSpinNanos()));
        long poolMib = optionalInteger(node, where, DaemonSettings.BUFFER_POOL_MIB, 1, 1 << 20,
            d.bufferPoolBytes() >> 20);
        String mdtsWhere = at(where, DaemonSettings.MAX_DATA_TRANSFER_KIB);
        long mdtsKib = optionalInteger(node, where, DaemonSettings.MAX_DATA_TRANSFER_KIB, 4, 16384,
            d.maxDataTransferSize() >> 10);
        if (Long.bitCount(mdtsKib) != 1) {
            throw new ConfigException(mdtsWhere, mdtsKib + " is not a power of two (4, 8, ... 16384)");
        }
        if (node.has(DaemonSettings.FILE_WORKERS_OBSOLETE)) {
            notices.notice(false, at(where, DaemonSettings.FILE_WORKERS_OBSOLETE) + ": ignored (file namespaces use io_uring "
                + "on the reactors, no worker threads)");
        }
        Hugepages hugepages = d.hugepages();
        if (node.has(DaemonSettings.HUGEPAGES)) {
            hugepages = Hugepages.of(bool(node.get(DaemonSettings.HUGEPAGES), at(where, DaemonSettings.HUGEPAGES)));
        }
        long shutdownMs = optionalInteger(node, where, DaemonSettings.SHUTDOWN_TIMEOUT_MS, 0, 600_000,
            d.shutdownTimeout().toMillis());
        String http = d.http();
        boolean httpExplicit = false;
        JsonNode httpNode = node.get(DaemonSettings.HTTP);
        if (httpNode != null) {
            String hw = at(where, DaemonSettings.HTTP);
            httpExplicit = true;
            if (httpNode.isNull() || (httpNode.isBoolean() && !httpNode.asBoolean())) {
                http = null;
            } else if (httpNode.isTextual()) {
                http = httpNode.asText().trim();
                if (DaemonSettings.HTTP_OFF.equalsIgnoreCase(http)) {
                    http = null;
                } else {
                    try {
                        DaemonSettings.parseHttpAddress(http);
                    } catch (IllegalArgumentException e) {
                        throw new ConfigException(hw, e.getMessage());
                    }
                }
            } else {
                throw new ConfigException(hw, httpNode + " is not \"HOST:PORT\" or \"off\"");
            }
        }
        boolean metrics = !node.has(DaemonSettings.METRICS)
            || bool(node.get(DaemonSettings.METRICS), at(where, DaemonSettings.METRICS));
        List<Path> allowedPaths = allowedPaths(node.get(DaemonSettings.ALLOWED_PATHS),
            at(where, DaemonSettings.ALLOWED_PATHS));
        long ramBudget = d.ramBudgetBytes();
        if (node.has(DaemonSettings.RAM_BUDGET_MIB) && !node.get(DaemonSettings.RAM_BUDGET_MIB).isNull()) {
            ramBudget = optionalInteger(node, where, DaemonSettings.RAM_BUDGET_MIB, 0, DaemonSettings.RAM_BUDGET_MIB_MAX,
                0) << 20;
        }
        long queueBufferBudget = optionalInteger(node, where, DaemonSettings.QUEUE_BUFFER_BUDGET_MIB, 1,
            DaemonSettings.QUEUE_BUFFER_BUDGET_MIB_MAX, d.queueBufferBudgetBytes() >> 20) << 20;
        return new DaemonSettings(reactors, idle, TimeUnit.MICROSECONDS.toNanos(spinUs), poolMib << 20,
            (int) mdtsKib << 10, hugepages, Duration.ofMillis(shutdownMs), http, httpExplicit, metrics,
            httpSecurity(node, where, d.httpSecurity()), allowedPaths, ramBudget, queueBufferBudget,
            connectionLimits(node, where, d.connectionLimits()), reactorCpus);
    }

    /**
     * {@code reactor_cpus}: a CPU list ({@code "0-3,8"}, as taskset -c takes it) or a core mask ({@code "0x3"}, as
     * SPDK's -m), CPUs of this machine; null when absent. Whether the process may run on them is checked at start
     * (the affinity a service manager gives the process then is what counts).
     */
    private static CpuSet reactorCpus(JsonNode node, String where) throws ConfigException {
        JsonNode cpus = node.get(DaemonSettings.REACTOR_CPUS);
        if (cpus == null || cpus.isNull()) {
            return null;
        }
        String cw = at(where, DaemonSettings.REACTOR_CPUS);
        if (!cpus.isTextual()) {
            throw new ConfigException(cw, "must be a string: a CPU list (\"0-3,8\") or a core mask (\"0x3\"), not "
                + describe(cpus));
        }
        CpuSet set;
        try {
            set = CpuSet.parse(cpus.asText(), CpuAffinity.possibleCpus());
        } catch (IllegalArgumentException e) {
            throw new ConfigException(cw, e.getMessage());
        }
        if (set.size() > DaemonSettings.MAX_REACTORS) {
            throw new ConfigException(cw, set.size() + " CPUs: at most " + DaemonSettings.MAX_REACTORS + " reactors");
        }
        return set;
    }

    private HttpSecurity httpSecurity(JsonNode node, String where, HttpSecurity d) throws ConfigException {
        Path tokenFile = d.apiTokenFile();
        JsonNode tokenNode = node.get(HttpSecurity.API_TOKEN_FILE);
        if (tokenNode != null) {
            String tw = at(where, HttpSecurity.API_TOKEN_FILE);
            String text = tokenNode.isTextual() ? tokenNode.asText() : "";
            if (text.isBlank() || text.indexOf('\0') >= 0) {
                throw new ConfigException(tw, "expected the path of the API token file");
            }
            try {
                tokenFile = baseDirectory.resolve(text).normalize();
            } catch (InvalidPathException e) {
                throw new ConfigException(tw, quote(text) + " is not a path: " + e.getReason());
            }
        }
        String metricsHttp = null;
        JsonNode metricsNode = node.get(HttpSecurity.METRICS_HTTP);
        if (metricsNode != null && !metricsNode.isNull()) {
            String mw = at(where, HttpSecurity.METRICS_HTTP);
            metricsHttp = text(metricsNode, mw).trim();
            if (DaemonSettings.HTTP_OFF.equalsIgnoreCase(metricsHttp)) {
                metricsHttp = null;
            } else {
                try {
                    DaemonSettings.parseHttpAddress(metricsHttp);
                } catch (IllegalArgumentException e) {
                    throw new ConfigException(mw, e.getMessage());
                }
            }
        }
        List<String> allowedHosts = new ArrayList<>();
        JsonNode hostsNode = node.get(HttpSecurity.HTTP_ALLOWED_HOSTS);
        if (hostsNode != null && !hostsNode.isNull()) {
            String hw = at(where, HttpSecurity.HTTP_ALLOWED_HOSTS);
            requireArray(hostsNode, hw);
            for (int i = 0; i < hostsNode.size(); i++) {
                String name = text(hostsNode.get(i), hw + "[" + i + "]").trim().toLowerCase(Locale.ROOT);
                // A host name or an IP literal as it appears in a Host header, without the port.
                if (!name.matches("[a-z0-9]([a-z0-9.-]{0,252})|\\[[0-9a-f:.]+\\]")) {
                    throw new ConfigException(hw + "[" + i + "]", quote(name) + " is not a host name (letters, "
                        + "digits, '-' and '.'; an IPv6 address in brackets; no port)");
                }
                allowedHosts.add(name);
            }
        }
        long timeoutMs = optionalInteger(node, where, HttpSecurity.HTTP_REQUEST_TIMEOUT_MS, 100, 600_000,
            d.requestTimeout().toMillis());
        int maxConnections = (int) optionalInteger(node, where, HttpSecurity.HTTP_MAX_CONNECTIONS, 1, 65_536,
            d.maxConnections());
        int maxPerPeer = (int) optionalInteger(node, where, HttpSecurity.HTTP_MAX_CONNECTIONS_PER_PEER, 1, 65_536,
            d.maxConnectionsPerPeer());
        return new HttpSecurity(tokenFile, metricsHttp, allowedHosts, Duration.ofMillis(timeoutMs), maxConnections,
            maxPerPeer);
    }

    /**
     * {@code allowed_paths}: absolute paths (relative ones are taken relative to the configuration's directory) of
     * directories and block devices. Kept as written, normalised; they are resolved (symlinks followed) each time a
     * namespace is checked against them, so a directory created after the start counts.
     */
    private List<Path> allowedPaths(JsonNode node, String where) throws ConfigException {
        List<Path> paths = new ArrayList<>();
        if (node == null || node.isNull()) {
            return paths;
        }
        requireArray(node, where);
        for (int i = 0; i < node.size(); i++) {
            String pw = where + "[" + i + "]";
            JsonNode entry = node.get(i);
            if (!entry.isTextual()) {
                throw new ConfigException(pw, "must be a string (a directory or a block device), not " + describe(entry));
            }
            String text = entry.asText();
            requirePlainText(text, pw);
            if (text.isEmpty()) {
                throw new ConfigException(pw, "is empty");
            }
            Path p;
            try {
                p = baseDirectory.resolve(text).normalize();
            } catch (InvalidPathException e) {
                throw new ConfigException(pw, quote(text) + " is not a valid path: " + e.getReason());
            }
            if (p.getParent() == null) {
                // "/" would allow every file the daemon can open: the very thing allowed_paths exists to prevent.
                throw new ConfigException(pw, quote(text) + " is the root directory; list the directories that hold "
                    + "namespace files");
            }
            if (!paths.contains(p)) {
                paths.add(p);
            }
        }
        return paths;
    }


    private static ConnectionLimits connectionLimits(JsonNode node, String where, ConnectionLimits d)
        throws ConfigException {
        int maxPending = (int) optionalInteger(node, where, DaemonSettings.MAX_PENDING_CONNECTIONS, 1,
            ConnectionLimits.MAX_PENDING_LIMIT, d.maxPending());
        // The per-host default follows a lowered port limit; an explicit value above it is an error.
        int perHost = (int) optionalInteger(node, where, DaemonSettings.MAX_PENDING_CONNECTIONS_PER_HOST, 1,
            maxPending, Math.min(d.maxPendingPerHost(), maxPending));
        long timeoutMs = optionalInteger(node, where, DaemonSettings.CONNECT_TIMEOUT_MS,
            ConnectionLimits.CONNECT_TIMEOUT_MS_MIN, ConnectionLimits.CONNECT_TIMEOUT_MS_MAX, d.connectTimeoutMillis());
        return new ConnectionLimits(maxPending, perHost, TimeUnit.MILLISECONDS.toNanos(timeoutMs));
    }

    /**
     * The Linux host opens every I/O queue's connection (ICReq done) before it sends their Connects, so one host can
     * have qid_max + 1 queues pending at once: a per-host limit at or below that refuses real hosts.
     */
    void checkConnectionLimits(DaemonSettings settings, List<SubsystemConfig> subsystems) {
        int perHost = settings.connectionLimits().maxPendingPerHost();
        for (SubsystemConfig s : subsystems) {
            if (s.qidMax() + 1 > perHost) {
                notices.notice(true, at("nvmeof4j", DaemonSettings.MAX_PENDING_CONNECTIONS_PER_HOST) + ": " + perHost
                    + " is below the " + (s.qidMax() + 1) + " queues a host of " + s.nqn() + " (attr.qid_max "
                    + s.qidMax() + ") may set up before it sends their Connects; such a host would be refused");
                return;
            }
        }
    }

    /**
     * A controller of a TCP port needs its admin queue and at least one I/O queue of the size a host asks (the Linux
     * host asks for max_queue_size when the port allows less than its 128); a budget below that refuses every such
     * Connect with Controller Busy, which the host takes as "try later", forever.
     */
    void checkQueueBufferBudget(DaemonSettings settings, List<PortConfig> ports) {
        io.nvmeof4j.tcp.TcpTransportOptions tcp = io.nvmeof4j.tcp.TcpTransportOptions.defaults();
        // The Linux host's admin queue: 32 entries (NVME_AQ_DEPTH), 8 KiB of in-capsule data.
        long admin = io.nvmeof4j.tcp.TcpControllerTransport.queueBufferBytes(tcp, 32,
            PortOptions.ADMIN_IN_CAPSULE_DATA_SIZE);
        for (PortConfig p : ports) {
            if (!p.isServable() || p.transportType() != TransportType.TCP) {
                continue;
            }
            long ioQueue = io.nvmeof4j.tcp.TcpControllerTransport.queueBufferBytes(tcp, p.options().maxQueueSize(),
                p.options().inlineDataSize());
            if (admin + ioQueue > settings.queueBufferBudgetBytes()) {
                notices.notice(true, at("nvmeof4j", DaemonSettings.QUEUE_BUFFER_BUDGET_MIB) + ": "
                    + (settings.queueBufferBudgetBytes() >> 20) + " MiB cannot hold a controller of " + p.where()
                    + " (portid " + p.portId() + "): its admin queue and one I/O queue of " + p.options().maxQueueSize()
                    + " entries with " + p.options().inlineDataSize() + " bytes of in-capsule data each need "
                    + ((admin + ioQueue + (1 << 20) - 1) >> 20) + " MiB; such Connects are refused with Controller Busy");
            }
        }
    }

    void checkBufferPool(DaemonSettings settings) throws ConfigException {
        long largest = TargetConfig.largestBuffer(settings);
        if (settings.bufferPoolBytes() < largest) {
            throw new ConfigException(at("nvmeof4j", DaemonSettings.BUFFER_POOL_MIB), (settings.bufferPoolBytes() >> 20)
                + " MiB cannot hold one buffer of " + Sizes.format(largest)
                + " (the largest data transfer, max_data_transfer_kib)");
        }
    }
}
