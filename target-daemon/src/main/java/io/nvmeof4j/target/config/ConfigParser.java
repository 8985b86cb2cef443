package io.nvmeof4j.target.config;

import io.nvmeof4j.tcp.tls.ConfiguredPsk;
import io.nvmeof4j.tcp.tls.HostPskStore;
import io.nvmeof4j.tcp.tls.NvmeTlsKeys;

import com.fasterxml.jackson.databind.JsonNode;
import io.nvmeof4j.protocol.Nqn;
import io.nvmeof4j.protocol.auth.DhchapCredentials;
import io.nvmeof4j.protocol.auth.DhchapGroup;
import io.nvmeof4j.protocol.auth.DhchapHash;
import io.nvmeof4j.protocol.auth.DhchapSecret;
import io.nvmeof4j.protocol.spi.AddressFamily;
import io.nvmeof4j.protocol.spi.ConnectionLimits;
import io.nvmeof4j.protocol.spi.PortOptions;
import io.nvmeof4j.protocol.spi.TransportAddress;
import io.nvmeof4j.protocol.spi.TransportType;
import io.nvmeof4j.target.backend.QosLimits;
import io.nvmeof4j.target.model.Port;
import io.nvmeof4j.target.model.Subsystem;
import io.nvmeof4j.target.reactor.IdleMode;

import java.net.InetAddress;
import java.net.UnknownHostException;
import java.nio.charset.StandardCharsets;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;

/**
 * Turns the JSON tree of a configuration into a validated {@link TargetConfig}, or throws a
 * {@link ConfigException} naming the JSON path of the first problem. Nothing is opened here; the only contact
 * with the machine is looking at the files file namespaces name ({@link TargetConfig#checkEnvironment()}).
 * <p>Values are accepted the way nvmetcli writes them (every attribute a string: {@code "allow_any_host": "1"},
 * {@code "inline_data_size": "16384"}) and the way people write them (numbers and booleans).
 * Keys nvmetcli writes that nvmeof4j does not use are accepted and reported as notices (logged at info); keys
 * nobody knows are reported too (logged at warn), except in the {@code "nvmeof4j"} object, which is ours and
 * strict.
 */
final class ConfigParser {
    private static final Pattern IPV4 = Pattern.compile(
        "(25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)(\\.(25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)){3}");
    private static final Pattern UUID_TEXT = Pattern.compile(
        "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}");
    private static final Pattern VERSION = Pattern.compile("\\d{1,5}\\.\\d{1,3}(\\.\\d{1,3})?");
    private static final Set<String> TREQ_VALUES = Set.of("not specified", "required", "not required");
    private static final int MAX_SERIAL = 20;
    private static final int MAX_MODEL = 40;
    private static final int MAX_FIRMWARE = 8;

    /** Keys nvmetcli writes that nvmeof4j accepts without using them, with the reason given in the notice. */
    private static final Map<String, String> IGNORED_PORT = Map.of();
    private static final Map<String, String> IGNORED_ADDR = Map.of();
    private static final Map<String, String> IGNORED_PARAM = Map.of(
        "pi_enable", "protection information is not supported");
    private static final Map<String, String> IGNORED_SUBSYSTEM_ATTR = Map.of(
        "ieee_oui", "the IEEE OUI is not reported",
        "pi_enable", "protection information is not supported");
    private static final Map<String, String> IGNORED_NAMESPACE = Map.of(
        "resv", "reservations are always supported; their state lives in the daemon's reservation files");
    private static final Map<String, String> IGNORED_DEVICE = Map.of(
        "p2pmem", "peer-to-peer memory is not supported",
        "buffered_io", "file namespaces always go through the page cache");
    /** nvmetcli saves a host's configfs attributes dhchap_key & co. as {"dhchap": {"key": ..}}; both are read. */
    private static final List<String> DHCHAP_FIELDS = List.of("key", "ctrl_key", "hash", "dhgroup");

    private final Path baseDirectory;
    private final Path defaultTokenFile;
    /**
     * A request rather than the operator's file (management API): unknown or unsupported keys are errors, not
     * notices, and a device path may not climb out with {@code ..}.
     */
    private final boolean strict;
    private final List<TargetConfig.Notice> notices = new ArrayList<>();
    private final Map<String, DhchapCredentials> hostCredentials = new LinkedHashMap<>();
    private final Map<String, HostPskStore.HostPsk> tlsKeys = new HashMap<>();

    ConfigParser(Path baseDirectory) {
        this(baseDirectory, HttpSecurity.stateDirectoryTokenFile(), false);
    }

    ConfigParser(Path baseDirectory, boolean strict) {
        this(baseDirectory, HttpSecurity.stateDirectoryTokenFile(), strict);
    }

    /** @param defaultTokenFile the API token file when {@code api_token_file} is not given */
    ConfigParser(Path baseDirectory, Path defaultTokenFile) {
        this(baseDirectory, defaultTokenFile, false);
    }

    private ConfigParser(Path baseDirectory, Path defaultTokenFile, boolean strict) {
        this.baseDirectory = baseDirectory.toAbsolutePath().normalize();
        this.defaultTokenFile = defaultTokenFile.toAbsolutePath().normalize();
        this.strict = strict;
    }

    TargetConfig parse(JsonNode root, Path source) throws ConfigException {
        requireObject(root, "");
        DaemonSettings settings = daemonSettings(root.get("nvmeof4j"), "nvmeof4j");
        List<String> hosts = hosts(root.get("hosts"), "hosts");
        List<SubsystemConfig> subsystems = subsystems(root.get("subsystems"), "subsystems");
        List<PortConfig> ports = ports(root.get("ports"), "ports", subsystems, settings);
        reportKeys(root, "", Set.of("nvmeof4j", "hosts", "subsystems", "ports"), Map.of());
        checkBufferPool(settings);
        checkQueueBufferBudget(settings, ports);
        checkConnectionLimits(settings, subsystems);
        reportUnreachable(subsystems, ports, hosts);
        TargetConfig config = new TargetConfig(source, hosts, hostCredentials, ports, subsystems, settings, notices, tlsKeys);
        config.checkEnvironment();
        return config;
    }

    // ---------------------------------------------------------------------------------------------- nvmeof4j

    private DaemonSettings daemonSettings(JsonNode node, String where) throws ConfigException {
        DaemonSettings d = DaemonSettings.defaults().withHttpSecurity(HttpSecurity.defaults(defaultTokenFile));
        if (node == null || node.isNull()) {
            return d;
        }
        requireObject(node, where);
        Set<String> known = Set.of(DaemonSettings.REACTORS, DaemonSettings.IDLE_STRATEGY, DaemonSettings.IDLE_SPIN_US,
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
            notice(false, at(where, DaemonSettings.FILE_WORKERS_OBSOLETE) + ": ignored (file namespaces use io_uring "
                + "on the reactors, no worker threads)");
        }
        boolean hugepages = d.hugepages();
        if (node.has(DaemonSettings.HUGEPAGES)) {
            hugepages = bool(node.get(DaemonSettings.HUGEPAGES), at(where, DaemonSettings.HUGEPAGES));
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
            connectionLimits(node, where, d.connectionLimits()));
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

    /** No NUL byte or other control character: such text is an attack or a mistake, never a name. */
    private static void requirePlainText(String text, String where) throws ConfigException {
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            if (c < 0x20 || c == 0x7F) {
                throw new ConfigException(where, "contains the control character U+" + String.format("%04X", (int) c)
                    + " at index " + i);
            }
        }
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
    private void checkConnectionLimits(DaemonSettings settings, List<SubsystemConfig> subsystems) {
        int perHost = settings.connectionLimits().maxPendingPerHost();
        for (SubsystemConfig s : subsystems) {
            if (s.qidMax() + 1 > perHost) {
                notice(true, at("nvmeof4j", DaemonSettings.MAX_PENDING_CONNECTIONS_PER_HOST) + ": " + perHost
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
    private void checkQueueBufferBudget(DaemonSettings settings, List<PortConfig> ports) {
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
                notice(true, at("nvmeof4j", DaemonSettings.QUEUE_BUFFER_BUDGET_MIB) + ": "
                    + (settings.queueBufferBudgetBytes() >> 20) + " MiB cannot hold a controller of " + p.where()
                    + " (portid " + p.portId() + "): its admin queue and one I/O queue of " + p.options().maxQueueSize()
                    + " entries with " + p.options().inlineDataSize() + " bytes of in-capsule data each need "
                    + ((admin + ioQueue + (1 << 20) - 1) >> 20) + " MiB; such Connects are refused with Controller Busy");
            }
        }
    }

    private void checkBufferPool(DaemonSettings settings) throws ConfigException {
        long largest = TargetConfig.largestBuffer(settings);
        if (settings.bufferPoolBytes() < largest) {
            throw new ConfigException(at("nvmeof4j", DaemonSettings.BUFFER_POOL_MIB), (settings.bufferPoolBytes() >> 20)
                + " MiB cannot hold one buffer of " + Sizes.format(largest)
                + " (the largest data transfer, max_data_transfer_kib)");
        }
    }

    // ---------------------------------------------------------------------------------------------- hosts

    private List<String> hosts(JsonNode node, String where) throws ConfigException {
        List<String> hosts = new ArrayList<>();
        if (node == null || node.isNull()) {
            return hosts;
        }
        requireArray(node, where);
        for (int i = 0; i < node.size(); i++) {
            String hw = where + "[" + i + "]";
            JsonNode host = node.get(i);
            requireObject(host, hw);
            String nqn = nqn(required(host, hw, "nqn"), at(hw, "nqn"));
            DhchapCredentials credentials = dhchap(host, hw);
            if (credentials != null) {
                hostCredentials.put(nqn, credentials);
            }
            JsonNode tlsKey = host.get("tls_key");
            if (tlsKey != null && !tlsKey.isNull() && !(tlsKey.isTextual() && tlsKey.asText().isEmpty())) {
                ConfiguredPsk key;
                try {
                    key = ConfiguredPsk.parse(text(tlsKey, at(hw, "tls_key")));
                } catch (IllegalArgumentException e) {
                    throw new ConfigException(at(hw, "tls_key"), e.getMessage()); // never the key itself
                }
                // Version-0 identities do not say how the host derived its TLS PSK; hosts with nvme-cli < 2.16
                // (libnvme < 1.16) use the older layout, hence the default.
                NvmeTlsKeys.Derivation derivation = NvmeTlsKeys.Derivation.LIBNVME_COMPAT;
                if (host.has("tls_psk_derivation")) {
                    String dw = at(hw, "tls_psk_derivation");
                    try {
                        derivation = NvmeTlsKeys.Derivation.fromConfigName(text(host.get("tls_psk_derivation"), dw));
                    } catch (IllegalArgumentException e) {
                        throw new ConfigException(dw, e.getMessage());
                    }
                }
                tlsKeys.put(nqn, new HostPskStore.HostPsk(key, derivation));
            }
            reportKeys(host, hw, Set.of("nqn", "dhchap", "dhchap_key", "dhchap_ctrl_key", "dhchap_hash",
                "dhchap_dhgroup", "tls_key", "tls_psk_derivation"), Map.of());
            if (!hosts.contains(nqn)) {
                hosts.add(nqn);
            }
        }
        return hosts;
    }

    /**
     * A host's DH-HMAC-CHAP settings, from nvmetcli's {@code "dhchap": {"key", "ctrl_key", "hash", "dhgroup"}} or
     * from the configfs names {@code dhchap_key}, {@code dhchap_ctrl_key}, {@code dhchap_hash}, {@code dhchap_dhgroup}.
     * No key (absent or empty, as nvmetcli saves a host without one): null, the host connects without
     * authentication. Defaults as nvmet's: hmac(sha256), DH group null. Errors never quote a key.
     */
    static DhchapCredentials dhchap(JsonNode host, String hw) throws ConfigException {
        JsonNode group = host.get("dhchap");
        Map<String, String> values = new HashMap<>();
        Map<String, String> where = new HashMap<>();
        if (group != null && !group.isNull()) {
            requireObject(group, at(hw, "dhchap"));
            for (Iterator<String> it = group.fieldNames(); it.hasNext(); ) {
                String f = it.next();
                if (!DHCHAP_FIELDS.contains(f)) {
                    throw new ConfigException(at(at(hw, "dhchap"), f), "unknown DH-HMAC-CHAP setting; expected one of "
                        + DHCHAP_FIELDS);
                }
                values.put(f, text(group.get(f), at(at(hw, "dhchap"), f)));
                where.put(f, at(at(hw, "dhchap"), f));
            }
        }
        for (String f : DHCHAP_FIELDS) {
            JsonNode flat = host.get("dhchap_" + f);
            if (flat != null && !flat.isNull()) {
                if (values.containsKey(f)) {
                    throw new ConfigException(at(hw, "dhchap_" + f), "is also given as dhchap." + f + "; keep one");
                }
                values.put(f, text(flat, at(hw, "dhchap_" + f)));
                where.put(f, at(hw, "dhchap_" + f));
            }
        }
        String key = values.getOrDefault("key", "").trim();
        String ctrlKey = values.getOrDefault("ctrl_key", "").trim();
        if (key.isEmpty()) {
            if (!ctrlKey.isEmpty()) {
                throw new ConfigException(where.get("ctrl_key"),
                    "a controller key needs a host key (bidirectional authentication starts with the host's)");
            }
            return null;
        }
        try {
            DhchapSecret hostKey = secret(key, where.get("key"));
            DhchapSecret controllerKey = ctrlKey.isEmpty() ? null : secret(ctrlKey, where.get("ctrl_key"));
            DhchapHash hash = values.containsKey("hash") && !values.get("hash").isBlank()
                ? DhchapHash.parse(values.get("hash")) : DhchapCredentials.HASH_DEFAULT;
            DhchapGroup dhgroup = values.containsKey("dhgroup") && !values.get("dhgroup").isBlank()
                ? DhchapGroup.parse(values.get("dhgroup")) : DhchapCredentials.GROUP_DEFAULT;
            return new DhchapCredentials(hostKey, controllerKey, hash, dhgroup);
        } catch (IllegalArgumentException e) {
            String field = e.getMessage().contains("hash '") ? "hash" : "dhgroup";
            throw new ConfigException(where.getOrDefault(field, hw), e.getMessage());
        }
    }

    private static DhchapSecret secret(String text, String where) throws ConfigException {
        try {
            return DhchapSecret.parse(text);
        } catch (IllegalArgumentException e) {
            throw new ConfigException(where, e.getMessage());
        }
    }

    // ---------------------------------------------------------------------------------------------- subsystems

    private List<SubsystemConfig> subsystems(JsonNode node, String where) throws ConfigException {
        List<SubsystemConfig> result = new ArrayList<>();
        if (node == null || node.isNull()) {
            return result;
        }
        requireArray(node, where);
        Map<String, String> seen = new HashMap<>();
        Map<Path, String> devicePaths = new HashMap<>();
        for (int i = 0; i < node.size(); i++) {
            String sw = where + "[" + i + "]";
            JsonNode s = node.get(i);
            requireObject(s, sw);
            String nqnWhere = at(sw, "nqn");
            String nqn = nqn(required(s, sw, "nqn"), nqnWhere);
            if (Port.DISCOVERY_NQN.equals(nqn)) {
                throw new ConfigException(nqnWhere, nqn + " is the discovery subsystem's NQN; the target serves it "
                    + "on every port by itself");
            }
            String earlier = seen.putIfAbsent(nqn, sw);
            if (earlier != null) {
                throw new ConfigException(nqnWhere, nqn + " is already the NQN of " + earlier);
            }
            JsonNode passthru = s.get("passthru");
            if (passthru != null && !(passthru.isArray() && passthru.isEmpty()) && !passthru.isNull()) {
                throw new ConfigException(at(sw, "passthru"), "passthru subsystems are not supported");
            }
            result.add(subsystem(s, sw, nqn, devicePaths));
            reportKeys(s, sw, Set.of("nqn", "attr", "allowed_hosts", "namespaces", "passthru"), Map.of());
        }
        return result;
    }

    private SubsystemConfig subsystem(JsonNode s, String sw, String nqn, Map<Path, String> devicePaths)
        throws ConfigException {
        JsonNode attr = s.get("attr");
        String aw = at(sw, "attr");
        if (attr == null || attr.isNull()) {
            attr = com.fasterxml.jackson.databind.node.JsonNodeFactory.instance.objectNode();
        }
        requireObject(attr, aw);
        boolean allowAny = attr.has("allow_any_host") && bool(attr.get("allow_any_host"), at(aw, "allow_any_host"));
        String serial = ascii(attr, aw, "serial", MAX_SERIAL, TargetConfig.derivedSerial(nqn));
        String model = ascii(attr, aw, "model", MAX_MODEL, TargetConfig.MODEL_DEFAULT);
        String firmware = ascii(attr, aw, "firmware", MAX_FIRMWARE, TargetConfig.firmwareDefault());
        String version = null;
        if (attr.has("version")) {
            version = text(attr.get("version"), at(aw, "version"));
            if (!VERSION.matcher(version).matches()) {
                throw new ConfigException(at(aw, "version"), quote(version)
                    + " is not an NVMe version (major.minor or major.minor.tertiary, e.g. \"1.3\")");
            }
            notice(false, at(aw, "version") + ": ignored (the controller reports the NVMe version it implements)");
        }
        int cntlidMin = (int) optionalInteger(attr, aw, "cntlid_min", 1, 0xFFEF, 1);
        int cntlidMax = (int) optionalInteger(attr, aw, "cntlid_max", 1, 0xFFEF, 0xFFEF);
        if (cntlidMin > cntlidMax) {
            throw new ConfigException(at(aw, "cntlid_min"), cntlidMin + " is greater than cntlid_max " + cntlidMax);
        }
        int qidMax = (int) optionalInteger(attr, aw, "qid_max", 1, 0xFFFF, TargetConfig.QID_MAX_DEFAULT);
        // Ours (SPDK's nvmf_create_subsystem max_namespaces): NSIDs above it are refused; 0 = no limit of its own.
        int maxNamespaces = (int) optionalInteger(attr, aw, "max_namespaces", 0, Subsystem.MAX_NSID, 0);
        reportKeys(attr, aw, Set.of("allow_any_host", "serial", "model", "firmware", "version", "cntlid_min",
            "cntlid_max", "qid_max", "max_namespaces"), IGNORED_SUBSYSTEM_ATTR);

        List<String> allowed = new ArrayList<>();
        JsonNode hostsNode = s.get("allowed_hosts");
        String hw = at(sw, "allowed_hosts");
        if (hostsNode != null && !hostsNode.isNull()) {
            requireArray(hostsNode, hw);
            for (int j = 0; j < hostsNode.size(); j++) {
                String host = nqn(hostsNode.get(j), hw + "[" + j + "]");
                if (!allowed.contains(host)) {
                    allowed.add(host);
                }
            }
        }
        if (allowAny && !allowed.isEmpty()) {
            // nvmet refuses this combination too ("Can't set allow_any_host when explicit hosts are set").
            throw new ConfigException(at(aw, "allow_any_host"), "is 1 but allowed_hosts lists " + allowed.size()
                + " host(s); choose one: any host, or only the listed ones");
        }

        List<NamespaceConfig> namespaces = new ArrayList<>();
        JsonNode nsNode = s.get("namespaces");
        String nw = at(sw, "namespaces");
        if (nsNode != null && !nsNode.isNull()) {
            requireArray(nsNode, nw);
            Map<Long, String> nsids = new HashMap<>();
            for (int j = 0; j < nsNode.size(); j++) {
                NamespaceConfig ns = namespace(nsNode.get(j), nw + "[" + j + "]", nqn);
                String earlier = nsids.putIfAbsent(Integer.toUnsignedLong(ns.nsid()), ns.where());
                if (earlier != null) {
                    throw new ConfigException(at(ns.where(), "nsid"), Integer.toUnsignedString(ns.nsid())
                        + " is already the NSID of " + earlier);
                }
                if (ns.enabled() && ns.path() != null) {
                    String other = devicePaths.putIfAbsent(ns.path(), ns.where());
                    if (other != null) {
                        throw new ConfigException(at(at(ns.where(), "device"), "path"), ns.path()
                            + " is already the device of " + other);
                    }
                }
                namespaces.add(ns);
            }
        }
        for (NamespaceConfig ns : namespaces) {
            if (maxNamespaces > 0 && Integer.compareUnsigned(ns.nsid(), maxNamespaces) > 0) {
                throw new ConfigException(at(ns.where(), "nsid"), Integer.toUnsignedString(ns.nsid())
                    + " is above attr.max_namespaces " + maxNamespaces);
            }
        }
        return new SubsystemConfig(nqn, allowAny, allowed, serial, model, firmware, version, cntlidMin, cntlidMax,
            qidMax, namespaces, maxNamespaces);
    }

    /** One namespace object on its own (management API): the same checks as in a configuration file. */
    NamespaceConfig standaloneNamespace(JsonNode n, String where, String subsystemNqn) throws ConfigException {
        return namespace(n, where, subsystemNqn);
    }

    private NamespaceConfig namespace(JsonNode n, String where, String subsystemNqn) throws ConfigException {
        requireObject(n, where);
        long nsid = integer(required(n, where, "nsid"), at(where, "nsid"), 1, Subsystem.MAX_NSID);
        boolean enabled = !n.has("enable") || bool(n.get("enable"), at(where, "enable"));
        reportKeys(n, where, Set.of("nsid", "enable", "device", "qos", "ana_grpid", "ana"), IGNORED_NAMESPACE);
        QosLimits qos = n.has("qos") ? qos(n.get("qos"), at(where, "qos")) : QosLimits.NONE;
        // nvmetcli writes the group as "ana_grpid" and (newer versions) again as "ana": {"grpid": N}; group 1 is the
        // one every port has (nvmet's NVMET_DEFAULT_ANA_GRPID).
        int anaGroupId = 1;
        JsonNode ana = n.get("ana");
        if (ana != null && !ana.isNull()) {
            requireObject(ana, at(where, "ana"));
            anaGroupId = (int) optionalInteger(ana, at(where, "ana"), "grpid", 1, PortConfig.ANA_GROUP_MAX, 1);
            reportKeys(ana, at(where, "ana"), Set.of("grpid"), Map.of());
        }
        if (n.has("ana_grpid")) {
            int grpid = (int) optionalInteger(n, where, "ana_grpid", 1, PortConfig.ANA_GROUP_MAX, 1);
            if (ana != null && !ana.isNull() && ana.has("grpid") && grpid != anaGroupId) {
                throw new ConfigException(at(where, "ana_grpid"), grpid + " differs from ana.grpid " + anaGroupId);
            }
            anaGroupId = grpid;
        }

        String dw = at(where, "device");
        JsonNode device = required(n, where, "device");
        requireObject(device, dw);
        reportKeys(device, dw, Set.of("path", "uuid", "nguid", "backend", "size", "block_size", "buffered_io",
            "shared"), IGNORED_DEVICE);
        boolean shared = device.has("shared") && bool(device.get("shared"), at(dw, "shared"));

        Path path = null;
        if (device.has("path")) {
            String pathText = text(device.get("path"), at(dw, "path"));
            if (pathText.isEmpty()) {
                throw new ConfigException(at(dw, "path"), "is empty");
            }
            requirePlainText(pathText, at(dw, "path"));
            if (strict) {
                for (String part : pathText.split("/")) {
                    if (part.equals("..")) {
                        throw new ConfigException(at(dw, "path"), quote(pathText) + " contains a '..' component; give "
                            + "the path without it");
                    }
                }
            }
            try {
                path = baseDirectory.resolve(pathText).normalize();
            } catch (InvalidPathException e) {
                throw new ConfigException(at(dw, "path"), quote(pathText) + " is not a valid path: " + e.getReason());
            }
        }
        BackendType backend;
        if (device.has("backend")) {
            String b = text(device.get("backend"), at(dw, "backend"));
            backend = BackendType.fromConfigName(b);
            if (backend == null) {
                throw new ConfigException(at(dw, "backend"), quote(b)
                    + " is not a backend (expected \"file\", \"ram\" or \"null\")");
            }
        } else if (path != null) {
            backend = BackendType.FILE;
        } else {
            throw new ConfigException(dw, "needs a path (a file or block device) or a backend (\"ram\", \"null\")");
        }
        if (backend == BackendType.FILE && path == null) {
            throw new ConfigException(at(dw, "path"), "is required for a file namespace");
        }
        if (backend != BackendType.FILE && path != null) {
            notice(false, at(dw, "path") + ": ignored (a " + backend.configName() + " namespace has no file)");
            path = null;
        }

        // A file or block device without block_size gets the device's: the logical block size of a block device,
        // 4096 for a regular file (nvmet: min(i_blkbits, 12)). 0 here means "ask the device when it is opened".
        int blockSize = backend == BackendType.FILE ? TargetConfig.FILE_BLOCK_SIZE_DEFAULT
            : TargetConfig.MEMORY_BLOCK_SIZE_DEFAULT;
        boolean bufferedIo = false;
        if (device.has("buffered_io")) {
            bufferedIo = bool(device.get("buffered_io"), at(dw, "buffered_io"));
            if (backend != BackendType.FILE) {
                notice(false, at(dw, "buffered_io") + ": ignored (a " + backend.configName() + " namespace has no file)");
            }
        }
        if (device.has("block_size")) {
            String bw = at(dw, "block_size");
            JsonNode bs = device.get("block_size");
            long value = integerOrNegative(bs);
            if (value != 512 && value != 4096) {
                throw new ConfigException(bw, bs + " is not a supported block size (512 or 4096)");
            }
            blockSize = (int) value;
        }

        long size = 0;
        String zw = at(dw, "size");
        if (device.has("size")) {
            JsonNode sizeNode = device.get("size");
            size = sizeNode.isIntegralNumber() && sizeNode.canConvertToLong() ? sizeNode.asLong()
                : sizeNode.isTextual() ? Sizes.parse(sizeNode.asText()) : -1;
            if (size < 0) {
                throw new ConfigException(zw, sizeNode + " is not a size (examples: \"1G\", \"64M\", \"4096\")");
            }
            if (size == 0) {
                throw new ConfigException(zw, "must be positive");
            }
            if (size % Math.max(blockSize, 512) != 0) {
                throw new ConfigException(zw, sizeNode + " (" + size + " bytes) is not a multiple of the block size "
                    + blockSize);
            }
        } else if (backend != BackendType.FILE) {
            throw new ConfigException(zw, "is required for a " + backend.configName() + " namespace");
        }

        UUID uuid = null;
        if (device.has("uuid")) {
            String u = text(device.get("uuid"), at(dw, "uuid"));
            if (!UUID_TEXT.matcher(u).matches()) {
                throw new ConfigException(at(dw, "uuid"), quote(u) + " is not a UUID (8-4-4-4-12 hex digits)");
            }
            uuid = UUID.fromString(u);
            if (uuid.getMostSignificantBits() == 0 && uuid.getLeastSignificantBits() == 0) {
                uuid = null;
            }
        }
        if (uuid == null) {
            uuid = TargetConfig.derivedUuid(subsystemNqn, (int) nsid);
        }
        byte[] nguid = null;
        if (device.has("nguid")) {
            String g = text(device.get("nguid"), at(dw, "nguid"));
            nguid = parseNguid(g);
            if (nguid == null) {
                throw new ConfigException(at(dw, "nguid"), quote(g)
                    + " is not an NGUID (32 hex digits, optionally separated by '-' or ':')");
            }
            boolean zero = true;
            for (byte b : nguid) {
                zero &= b == 0;
            }
            if (zero) {
                // nvmet writes zeros when no NGUID was set; a zero NGUID means "none" to hosts.
                nguid = null;
            }
        }
        if (nguid == null) {
            nguid = TargetConfig.derivedNguid(subsystemNqn, (int) nsid);
        }
        if (!enabled) {
            notice(false, where + ": enable is 0; namespace " + nsid + " is not exported");
        }
        if (shared && backend != BackendType.FILE) {
            notice(false, at(dw, "shared") + ": ignored (a " + backend.configName() + " namespace has no file)");
            shared = false;
        }
        return new NamespaceConfig(where, (int) nsid, enabled, backend, path, size, blockSize, bufferedIo, uuid,
            nguid, anaGroupId, shared, qos);
    }

    /**
     * A namespace's {@code qos} object: SPDK's {@code bdev_set_qos_limit} parameters, each 0 (no limit, the default)
     * or more. An IOPS limit that is not a multiple of 1000 is rounded up, as SPDK rounds it (with a notice).
     */
    private QosLimits qos(JsonNode q, String where) throws ConfigException {
        requireObject(q, where);
        reportKeys(q, where, Set.of(QosLimits.RW_IOS_PER_SEC, QosLimits.RW_MBYTES_PER_SEC, QosLimits.R_MBYTES_PER_SEC,
            QosLimits.W_MBYTES_PER_SEC), Map.of());
        long iops = optionalInteger(q, where, QosLimits.RW_IOS_PER_SEC, 0, QosLimits.MAX_IOS_PER_SEC, 0);
        QosLimits limits = QosLimits.of(iops,
            optionalInteger(q, where, QosLimits.RW_MBYTES_PER_SEC, 0, QosLimits.MAX_MBYTES_PER_SEC, 0),
            optionalInteger(q, where, QosLimits.R_MBYTES_PER_SEC, 0, QosLimits.MAX_MBYTES_PER_SEC, 0),
            optionalInteger(q, where, QosLimits.W_MBYTES_PER_SEC, 0, QosLimits.MAX_MBYTES_PER_SEC, 0));
        if (limits.rwIosPerSec() != iops) {
            notice(false, at(where, QosLimits.RW_IOS_PER_SEC) + ": " + iops + " is not a multiple of "
                + QosLimits.MIN_IOS_PER_SEC + "; rounded up to " + limits.rwIosPerSec() + " (as SPDK does)");
        }
        return limits;
    }

    /** nvmet's NGUID syntax: 16 hex byte pairs, each optionally followed by '-' or ':'. */
    static byte[] parseNguid(String text) {
        byte[] out = new byte[16];
        int p = 0;
        for (int i = 0; i < 16; i++) {
            if (p + 2 > text.length()) {
                return null;
            }
            int hi = Character.digit(text.charAt(p), 16);
            int lo = Character.digit(text.charAt(p + 1), 16);
            if (hi < 0 || lo < 0) {
                return null;
            }
            out[i] = (byte) (hi << 4 | lo);
            p += 2;
            if (i < 15 && p < text.length() && (text.charAt(p) == '-' || text.charAt(p) == ':')) {
                p++;
            }
        }
        return p == text.length() ? out : null;
    }

    // ---------------------------------------------------------------------------------------------- ports

    private List<PortConfig> ports(JsonNode node, String where, List<SubsystemConfig> subsystems,
                                   DaemonSettings settings) throws ConfigException {
        if (node == null || node.isNull()) {
            // No port yet: SPDK's nvmf_tgt starts so and is configured over its control plane. The daemon refuses
            // to start empty without one (Main: no HTTP API, no rpc_socket).
            return List.of();
        }
        requireArray(node, where);
        Set<String> nqns = new LinkedHashSet<>();
        for (SubsystemConfig s : subsystems) {
            nqns.add(s.nqn());
        }
        List<PortConfig> ports = new ArrayList<>();
        Map<Integer, String> portIds = new HashMap<>();
        for (int i = 0; i < node.size(); i++) {
            String pw = where + "[" + i + "]";
            JsonNode p = node.get(i);
            requireObject(p, pw);
            int portId = (int) integer(required(p, pw, "portid"), at(pw, "portid"), 0, 0xFFFF);
            String earlier = portIds.putIfAbsent(portId, pw);
            if (earlier != null) {
                throw new ConfigException(at(pw, "portid"), portId + " is already the portid of " + earlier);
            }
            PortConfig port = port(p, pw, portId, nqns, settings);
            for (PortConfig other : ports) {
                if (sameListenAddress(port, other)) {
                    throw new ConfigException(at(pw, "addr"), "listens on " + port.address() + ", as "
                        + other.where() + " does already");
                }
            }
            ports.add(port);
            reportKeys(p, pw, Set.of("portid", "addr", "param", "subsystems", "ana_groups", "referrals"),
                IGNORED_PORT);
        }
        return ports;
    }

    private PortConfig port(JsonNode p, String pw, int portId, Set<String> nqns, DaemonSettings settings)
        throws ConfigException {
        String aw = at(pw, "addr");
        JsonNode addr = required(p, pw, "addr");
        requireObject(addr, aw);
        TransportType trtype = transportType(addr, aw);
        String traddr = text(required(addr, aw, "traddr"), at(aw, "traddr"));
        AddressFamily family = addressFamily(addr, aw, traddr);
        String svcWhere = at(aw, "trsvcid");
        int trsvcid;
        if (addr.has("trsvcid")) {
            trsvcid = (int) integer(addr.get("trsvcid"), svcWhere, 0, 65535);
        } else {
            trsvcid = -1; // chosen below, once we know whether the port serves discovery only
        }
        String treq = treq(addr, aw);
        // addr.tsas as nvmet's configfs names it: "none" or "tls1.3" (NVMe/TCP only).
        boolean tls = false;
        if (addr.has("tsas")) {
            String tsas = text(addr.get("tsas"), at(aw, "tsas")).toLowerCase(Locale.ROOT);
            if (tsas.equals("tls1.3")) {
                if (trtype != TransportType.TCP) {
                    throw new ConfigException(at(aw, "tsas"), "\"tls1.3\" is for NVMe/TCP ports only");
                }
                tls = true;
            } else if (!tsas.isEmpty() && !tsas.equals("none") && !tsas.equals("reserved")
                && !tsas.equals("connected")) {
                throw new ConfigException(at(aw, "tsas"), quote(tsas) + " is not supported (\"none\" or \"tls1.3\")");
            }
        }
        if (treq.equals("required") && !tls) {
            throw new ConfigException(at(aw, "treq"), "\"required\" demands a secure channel: set addr.tsas to "
                + "\"tls1.3\"");
        }
        if (tls && treq.equals("not specified")) {
            treq = "required"; // TLS offered but not demanded would be "not required": say so to get it
        }
        reportKeys(addr, aw, Set.of("trtype", "adrfam", "traddr", "trsvcid", "treq", "tsas"), IGNORED_ADDR);

        String prw = at(pw, "param");
        int inline = trtype == TransportType.RDMA ? PortConfig.RDMA_INLINE_DATA_SIZE_DEFAULT
            : PortOptions.INLINE_DATA_SIZE_DEFAULT;
        int queueSize = PortOptions.MAX_QUEUE_SIZE_DEFAULT;
        JsonNode param = p.get("param");
        if (param != null && !param.isNull()) {
            requireObject(param, prw);
            if (param.has("inline_data_size")) {
                String iw = at(prw, "inline_data_size");
                long v = integer(param.get("inline_data_size"), iw, Integer.MIN_VALUE, Integer.MAX_VALUE);
                if (v >= 0) {
                    // nvmet writes -1 for "the transport's default".
                    if (v > 1 << 20) {
                        throw new ConfigException(iw, v + " is outside 0..1048576 (-1: the default, "
                            + PortOptions.INLINE_DATA_SIZE_DEFAULT + ")");
                    }
                    inline = (int) v;
                } else if (v != -1) {
                    throw new ConfigException(iw, v + " is outside 0..1048576 (-1: the default, "
                        + PortOptions.INLINE_DATA_SIZE_DEFAULT + ")");
                }
            }
            if (param.has("max_queue_size")) {
                String qw = at(prw, "max_queue_size");
                long v = integer(param.get("max_queue_size"), qw, Integer.MIN_VALUE, Integer.MAX_VALUE);
                if (v != -1) {
                    if (v < 2 || v > 65536) {
                        throw new ConfigException(qw, v + " is outside 2..65536 (-1: the default, "
                            + PortOptions.MAX_QUEUE_SIZE_DEFAULT + ")");
                    }
                    queueSize = (int) v;
                }
            }
            reportKeys(param, prw, Set.of("inline_data_size", "max_queue_size"), IGNORED_PARAM);
            if (trtype == TransportType.RDMA && inline > PortConfig.RDMA_INLINE_DATA_SIZE_MAX) {
                // nvmet-rdma clamps the same way (NVMET_RDMA_MAX_INLINE_DATA_SIZE) and says so.
                notice(true, at(prw, "inline_data_size") + ": " + inline + " is above NVMe-oF/RDMA's "
                    + PortConfig.RDMA_INLINE_DATA_SIZE_MAX + "; using " + PortConfig.RDMA_INLINE_DATA_SIZE_MAX);
                inline = PortConfig.RDMA_INLINE_DATA_SIZE_MAX;
            }
        }

        List<String> exported = new ArrayList<>();
        JsonNode subsNode = p.get("subsystems");
        String sw = at(pw, "subsystems");
        if (subsNode != null && !subsNode.isNull()) {
            requireArray(subsNode, sw);
            for (int j = 0; j < subsNode.size(); j++) {
                String jw = sw + "[" + j + "]";
                String nqn = text(subsNode.get(j), jw);
                if (!nqn.equals(Port.DISCOVERY_NQN) && !nqns.contains(nqn)) {
                    throw new ConfigException(jw, "no subsystem " + quote(nqn) + " is configured");
                }
                if (!exported.contains(nqn)) {
                    exported.add(nqn);
                }
            }
        }
        if (trsvcid < 0) {
            boolean discoveryOnly = exported.stream().allMatch(Port.DISCOVERY_NQN::equals);
            // The Linux host's defaults: 8009 for TCP discovery, 4420 otherwise.
            trsvcid = discoveryOnly && trtype == TransportType.TCP ? 8009 : 4420;
        }
        TransportAddress address = new TransportAddress(trtype, family, traddr, Integer.toString(trsvcid));
        PortOptions options = new PortOptions(inline, queueSize, settings.maxDataTransferSize(),
            settings.connectionLimits());
        if (tls) {
            options = options.withTls(treq.equals("required"));
        }
        return new PortConfig(pw, portId, address, treq, options, exported, anaGroups(p.get("ana_groups"),
            at(pw, "ana_groups")), referrals(p.get("referrals"), at(pw, "referrals")));
    }

    /**
     * nvmetcli's {@code "ana_groups": [{"grpid": N, "ana": {"state": "optimized"}}]}: the state of each group on this
     * port. Groups not listed are inaccessible on the port, except group 1 which is optimized, as nvmet sets them.
     */
    private Map<Integer, Integer> anaGroups(JsonNode node, String where) throws ConfigException {
        Map<Integer, Integer> groups = new java.util.TreeMap<>();
        if (node == null || node.isNull()) {
            return groups;
        }
        requireArray(node, where);
        for (int i = 0; i < node.size(); i++) {
            String gw = where + "[" + i + "]";
            JsonNode g = node.get(i);
            requireObject(g, gw);
            int grpid = (int) integer(required(g, gw, "grpid"), at(gw, "grpid"), 1, PortConfig.ANA_GROUP_MAX);
            int state = io.nvmeof4j.protocol.ana.AnaState.OPTIMIZED;
            JsonNode ana = g.get("ana");
            if (ana != null && !ana.isNull()) {
                requireObject(ana, at(gw, "ana"));
                if (ana.has("state")) {
                    String text = text(ana.get("state"), at(at(gw, "ana"), "state"));
                    state = io.nvmeof4j.protocol.ana.AnaState.parse(text);
                    if (state < 0) {
                        throw new ConfigException(at(at(gw, "ana"), "state"), quote(text) + " is not an ANA state "
                            + "(optimized, non-optimized, inaccessible, persistent-loss, change)");
                    }
                }
                reportKeys(ana, at(gw, "ana"), Set.of("state"), Map.of());
            }
            if (groups.putIfAbsent(grpid, state) != null) {
                throw new ConfigException(at(gw, "grpid"), grpid + " is listed twice");
            }
            reportKeys(g, gw, Set.of("grpid", "ana"), Map.of());
        }
        return groups;
    }

    /**
     * A port's {@code referrals} as nvmetcli saves them: {@code {"name", "portid", "enable", "addr": {"trtype",
     * "adrfam", "traddr", "trsvcid", "treq"}}}, plus {@code subnqn} (ours, SPDK's parameter; default the discovery
     * NQN). Names and targets are unique within a port.
     */
    private List<ReferralConfig> referrals(JsonNode node, String where) throws ConfigException {
        List<ReferralConfig> list = new ArrayList<>();
        if (node == null || node.isNull()) {
            return list;
        }
        requireArray(node, where);
        for (int i = 0; i < node.size(); i++) {
            String rw = where + "[" + i + "]";
            JsonNode r = node.get(i);
            requireObject(r, rw);
            String name = text(required(r, rw, "name"), at(rw, "name"));
            if (name.isEmpty() || name.length() > 255 || name.indexOf('/') >= 0
                || name.chars().anyMatch(c -> c < 0x20 || c == 0x7F)) {
                throw new ConfigException(at(rw, "name"), quote(name) + " is not a referral name (1..255 printable "
                    + "characters, no '/')");
            }
            int portId = r.has("portid") ? (int) integer(r.get("portid"), at(rw, "portid"), 0, 0xFFFF) : 0;
            boolean enabled = !r.has("enable") || bool(r.get("enable"), at(rw, "enable"));
            String aw = at(rw, "addr");
            JsonNode addr = required(r, rw, "addr");
            requireObject(addr, aw);
            TransportType trtype = transportType(addr, aw);
            String traddr = text(required(addr, aw, "traddr"), at(aw, "traddr"));
            AddressFamily family = addressFamily(addr, aw, traddr);
            // A referral names a service elsewhere: its service id is required (SPDK: "Service ID is required").
            int trsvcid = (int) integer(required(addr, aw, "trsvcid"), at(aw, "trsvcid"), 1, 65535);
            String treq = treq(addr, aw);
            reportKeys(addr, aw, Set.of("trtype", "adrfam", "traddr", "trsvcid", "treq", "tsas", "portid"),
                IGNORED_ADDR);
            String subnqn = r.has("subnqn") ? nqn(r.get("subnqn"), at(rw, "subnqn")) : Port.DISCOVERY_NQN;
            reportKeys(r, rw, Set.of("name", "portid", "enable", "addr", "subnqn"), Map.of());
            ReferralConfig referral = new ReferralConfig(name, portId, enabled,
                new TransportAddress(trtype, family, traddr, Integer.toString(trsvcid)), treq, subnqn);
            for (ReferralConfig other : list) {
                if (other.name().equals(name)) {
                    throw new ConfigException(at(rw, "name"), quote(name) + " is already the name of another "
                        + "referral of this port");
                }
                if (other.sameTarget(referral)) {
                    throw new ConfigException(aw, "refers to " + referral.address() + " " + subnqn
                        + ", as referral " + quote(other.name()) + " does already");
                }
            }
            list.add(referral);
        }
        return list;
    }

    /** {@code addr.trtype} of a port or a referral: "tcp" or "rdma". */
    private static TransportType transportType(JsonNode addr, String aw) throws ConfigException {
        String trtypeText = text(required(addr, aw, "trtype"), at(aw, "trtype"));
        TransportType trtype;
        try {
            trtype = TransportType.fromConfigName(trtypeText);
        } catch (IllegalArgumentException e) {
            trtype = null;
        }
        if (trtype != TransportType.TCP && trtype != TransportType.RDMA) {
            throw new ConfigException(at(aw, "trtype"), quote(trtypeText)
                + " is not a supported transport type (expected \"tcp\" or \"rdma\")");
        }
        return trtype;
    }

    /** {@code addr.treq} of a port or a referral, lower case; "not specified" when absent. */
    private static String treq(JsonNode addr, String aw) throws ConfigException {
        if (!addr.has("treq")) {
            return "not specified";
        }
        String treq = text(addr.get("treq"), at(aw, "treq")).toLowerCase(Locale.ROOT);
        if (!TREQ_VALUES.contains(treq)) {
            throw new ConfigException(at(aw, "treq"), quote(treq)
                + " is not a treq value (\"not specified\", \"required\", \"not required\")");
        }
        return treq;
    }

    private static AddressFamily addressFamily(JsonNode addr, String aw, String traddr) throws ConfigException {
        String tw = at(aw, "traddr");
        AddressFamily actual;
        if (IPV4.matcher(traddr).matches()) {
            actual = AddressFamily.IPV4;
        } else if (traddr.indexOf(':') >= 0 && (traddr.charAt(0) == ':' || Character.digit(traddr.charAt(0), 16) >= 0)) {
            try {
                // Starting with a hex digit or ':' and holding a ':', the JDK parses it as an IPv6 literal and
                // never asks DNS.
                InetAddress.getByName(traddr);
            } catch (UnknownHostException e) {
                throw new ConfigException(tw, quote(traddr) + " is not an IPv6 address");
            }
            actual = AddressFamily.IPV6;
        } else {
            throw new ConfigException(tw, quote(traddr) + " is not an IP address (host names are not resolved: give "
                + "an address such as \"127.0.0.1\", \"0.0.0.0\" or \"::1\")");
        }
        if (addr.has("adrfam")) {
            String text = text(addr.get("adrfam"), at(aw, "adrfam"));
            AddressFamily configured;
            try {
                configured = AddressFamily.fromConfigName(text);
            } catch (IllegalArgumentException e) {
                configured = null;
            }
            if (configured != AddressFamily.IPV4 && configured != AddressFamily.IPV6) {
                throw new ConfigException(at(aw, "adrfam"), quote(text) + " is not supported (expected \"ipv4\" or "
                    + "\"ipv6\")");
            }
            if (configured != actual) {
                throw new ConfigException(at(aw, "adrfam"), quote(text) + " does not match traddr " + quote(traddr));
            }
        }
        return actual;
    }

    /** Two ports that would bind the same socket (a fixed port on the same or a wildcard address). */
    private static boolean sameListenAddress(PortConfig a, PortConfig b) {
        if (a.transportType() != b.transportType() || a.address().port() == 0
            || a.address().port() != b.address().port()) {
            return false;
        }
        try {
            InetAddress x = InetAddress.getByName(a.address().traddr());
            InetAddress y = InetAddress.getByName(b.address().traddr());
            return x.equals(y) || x.isAnyLocalAddress() || y.isAnyLocalAddress();
        } catch (UnknownHostException e) {
            return a.address().traddr().equals(b.address().traddr());
        }
    }

    private void reportUnreachable(List<SubsystemConfig> subsystems, List<PortConfig> ports, List<String> hosts) {
        for (int i = 0; i < subsystems.size(); i++) {
            SubsystemConfig s = subsystems.get(i);
            boolean exported = ports.stream().anyMatch(p -> p.isServable() && p.subsystems().contains(s.nqn()));
            if (!exported) {
                notice(true, "subsystems[" + i + "]: " + s.nqn() + " is not exported by any port");
            }
            if (!s.allowAnyHost() && s.allowedHosts().isEmpty()) {
                notice(true, "subsystems[" + i + "]: " + s.nqn() + " allows no host (attr.allow_any_host is 0 "
                    + "and allowed_hosts is empty)");
            }
            for (String h : s.allowedHosts()) {
                if (!hosts.contains(h)) {
                    notice(false, "subsystems[" + i + "].allowed_hosts: " + h + " is not listed in hosts[] "
                        + "(nvmet would need it there; nvmeof4j does not)");
                }
            }
        }
    }

    // ---------------------------------------------------------------------------------------------- values

    private void reportKeys(JsonNode object, String where, Set<String> used, Map<String, String> ignored)
        throws ConfigException {
        for (Iterator<Map.Entry<String, JsonNode>> it = object.fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            String key = e.getKey();
            if (used.contains(key)) {
                continue;
            }
            String reason = ignored.get(key);
            if (strict) {
                if (reason != null && isEmpty(e.getValue())) {
                    continue; // nvmetcli's "none" value of a feature we lack: nothing asked that we ignore
                }
                // A request naming a field we would not use would be answered as if it had been honoured.
                throw new ConfigException(at(where, printable(key)), reason != null
                    ? "not supported (" + reason + ")"
                    : "unknown field (known: " + String.join(", ", new java.util.TreeSet<>(used)) + ")");
            }
            if (reason != null) {
                if (!isEmpty(e.getValue())) {
                    notice(false, at(where, key) + ": ignored (" + reason + ")");
                }
            } else {
                notice(true, at(where, key) + ": unknown key, ignored");
            }
        }
    }

    /** Text as it may appear in a message: control characters escaped, at most 240 characters. */
    private static String printable(String text) {
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < text.length() && i < 240; i++) {
            char c = text.charAt(i);
            sb.append(c < 0x20 || c == 0x7F ? String.format("\\u%04x", (int) c) : String.valueOf(c));
        }
        return text.length() > 240 ? sb + "..." : sb.toString();
    }

    private static boolean isEmpty(JsonNode node) {
        return node.isNull() || (node.isContainerNode() && node.isEmpty())
            || (node.isTextual() && (node.asText().isEmpty() || node.asText().equals("0")))
            || (node.isNumber() && node.asLong() == 0);
    }

    private void notice(boolean warning, String text) {
        notices.add(new TargetConfig.Notice(warning, text));
    }

    static String at(String where, String key) {
        return where.isEmpty() ? key : where + "." + key;
    }

    private static String quote(String text) {
        return "\"" + text + "\"";
    }

    private static JsonNode required(JsonNode object, String where, String key) throws ConfigException {
        JsonNode v = object.get(key);
        if (v == null || v.isNull()) {
            throw new ConfigException(at(where, key), "is required");
        }
        return v;
    }

    private static void requireObject(JsonNode node, String where) throws ConfigException {
        if (node == null || !node.isObject()) {
            throw new ConfigException(where, "must be a JSON object, not " + describe(node));
        }
    }

    private static void requireArray(JsonNode node, String where) throws ConfigException {
        if (!node.isArray()) {
            throw new ConfigException(where, "must be a JSON array, not " + describe(node));
        }
    }

    private static String describe(JsonNode node) {
        if (node == null || node.isMissingNode()) {
            return "nothing";
        }
        String type = node.getNodeType().name().toLowerCase(Locale.ROOT);
        return node.isContainerNode() ? type : type + " " + node;
    }

    /** A scalar as text (nvmetcli writes every attribute as a string; people write numbers too). */
    private static String text(JsonNode node, String where) throws ConfigException {
        if (node.isTextual()) {
            return node.asText();
        }
        if (node.isNumber() || node.isBoolean()) {
            return node.asText();
        }
        throw new ConfigException(where, "must be a string, not " + describe(node));
    }

    private static String nqn(JsonNode node, String where) throws ConfigException {
        String text = text(node, where);
        try {
            return checkNqn(text);
        } catch (IllegalArgumentException e) {
            throw new ConfigException(where, e.getMessage());
        }
    }

    /**
     * An NQN as {@link Nqn#of} takes it, and without control characters, '/' or '\\': nvmet's NQNs are configfs
     * directory names, which cannot hold '/', and the management API carries NQNs in URL paths and log lines.
     *
     * @throws IllegalArgumentException saying what is wrong
     */
    static String checkNqn(String text) {
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            if (c < 0x20 || c == 0x7F || c == '/' || c == '\\') {
                throw new IllegalArgumentException("NQN " + printable(text) + " contains "
                    + (c < 0x20 || c == 0x7F ? "the control character U+" + String.format("%04X", (int) c)
                    : "'" + c + "'") + " at index " + i);
            }
        }
        return Nqn.of(text).value();
    }

    private static String ascii(JsonNode attr, String aw, String key, int max, String fallback)
        throws ConfigException {
        if (!attr.has(key)) {
            return fallback;
        }
        String w = at(aw, key);
        String v = text(attr.get(key), w);
        if (v.isEmpty() || v.length() > max) {
            throw new ConfigException(w, quote(v) + " must be 1 to " + max + " characters");
        }
        for (int i = 0; i < v.length(); i++) {
            char c = v.charAt(i);
            if (c < 0x20 || c > 0x7E) {
                throw new ConfigException(w, quote(v) + " must be printable ASCII (NVMe Base 1.5)");
            }
        }
        return v;
    }

    /** 0/1, true/false and the strings nvmet's kstrtobool takes ("0", "1", "y", "n", "on", "off", ...). */
    private static boolean bool(JsonNode node, String where) throws ConfigException {
        if (node.isBoolean()) {
            return node.asBoolean();
        }
        if (node.isIntegralNumber() && (node.asLong() == 0 || node.asLong() == 1)) {
            return node.asLong() == 1;
        }
        if (node.isTextual()) {
            switch (node.asText().trim().toLowerCase(Locale.ROOT)) {
                case "1": case "y": case "yes": case "on": case "true":
                    return true;
                case "0": case "n": case "no": case "off": case "false":
                    return false;
                default:
                    break;
            }
        }
        throw new ConfigException(where, node + " is not a boolean (expected 0 or 1)");
    }

    private static long optionalInteger(JsonNode object, String where, String key, long min, long max,
                                        long fallback) throws ConfigException {
        JsonNode v = object.get(key);
        return v == null || v.isNull() ? fallback : integer(v, at(where, key), min, max);
    }

    /** An integer given as a JSON number or a decimal (or 0x-hex) string, within [min, max]. */
    private static long integer(JsonNode node, String where, long min, long max) throws ConfigException {
        Long value = integerValue(node);
        if (value == null) {
            throw new ConfigException(where, node + " is not an integer");
        }
        if (value < min || value > max) {
            throw new ConfigException(where, value + " is outside " + min + ".." + max);
        }
        return value;
    }

    private static long integerOrNegative(JsonNode node) {
        Long v = integerValue(node);
        return v == null ? -1 : v;
    }

    private static Long integerValue(JsonNode node) {
        if (node.isIntegralNumber()) {
            return node.canConvertToLong() ? node.asLong() : null;
        }
        if (!node.isTextual()) {
            return null;
        }
        String t = node.asText().strip(); // not trim(): that drops control characters too
        try {
            if (t.startsWith("0x") || t.startsWith("0X")) {
                return Long.parseLong(t.substring(2), 16);
            }
            return Long.parseLong(t);
        } catch (NumberFormatException e) {
            return null;
        }
    }

    /** 16 bytes of MD5 over {@code name}: stable identifiers derived from names. */
    static byte[] md5(String name) {
        try {
            return MessageDigest.getInstance("MD5").digest(name.getBytes(StandardCharsets.UTF_8));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("MD5 is a required JDK algorithm", e);
        }
    }

    static String hex(byte[] bytes) {
        return HexFormat.of().formatHex(bytes);
    }
}
