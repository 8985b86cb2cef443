package io.nvmeof4j.target.config;

import io.nvmeof4j.tcp.tls.HostPskStore;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.json.JsonReadFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.nvmeof4j.protocol.auth.DhchapCredentials;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.UUID;

/**
 * The target's configuration: a JSON document in the shape of an {@code nvmetcli save} file (so a Linux target's
 * {@code /etc/nvmet/config.json} moves over as is), plus our extensions. Immutable and fully validated: every
 * problem is a {@link ConfigException} naming the JSON path, found before anything is opened or bound.
 *
 * <h2>Shape</h2>
 * <pre>
 * {
 *   "hosts":      [ {"nqn": "nqn.2014-08.org.nvmexpress:uuid:…",
 *                    "dhchap": {"key": "DHHC-1:01:…:", "ctrl_key": "", "hash": "hmac(sha256)", "dhgroup": "ffdhe2048"}} ],
 *   "ports":      [ {"portid": 1,
 *                    "addr": {"trtype": "tcp", "adrfam": "ipv4", "traddr": "127.0.0.1", "trsvcid": "4420",
 *                             "treq": "not specified"},
 *                    "param": {"inline_data_size": "16384"},
 *                    "subsystems": ["nqn.2014-08.io.nvmeof4j:demo"]} ],
 *   "subsystems": [ {"nqn": "nqn.2014-08.io.nvmeof4j:demo",
 *                    "attr": {"allow_any_host": "1", "serial": "…", "model": "…"},
 *                    "allowed_hosts": [],
 *                    "namespaces": [ {"nsid": 1, "enable": 1,
 *                                     "device": {"path": "/srv/ns1.img", "uuid": "…", "nguid": "…",
 *                                                "backend": "file", "size": "1G", "block_size": 4096}} ]} ],
 *   "nvmeof4j":   {"reactors": 1, "idle_strategy": "adaptive", "buffer_pool_mib": 64,
 *                  "allowed_paths": ["/srv/nvmeof"], "ram_budget_mib": 16384}
 * }
 * </pre>
 * {@code device.backend}, {@code device.size}, {@code device.block_size} and the {@code "nvmeof4j"} object are
 * nvmeof4j extensions. Relative {@code device.path}s are resolved against the configuration file's directory
 * ({@link #load}) or the working directory ({@link #parse(String)}).
 *
 * <h2>Derived values</h2>
 * A namespace without {@code device.uuid} (or with the all-zero one) gets a name-based UUID (RFC 4122 version 3)
 * of its subsystem NQN and NSID; without {@code device.nguid} (or with nvmet's all-zero "none") an NGUID derived
 * the same way. nvmet generates a random UUID when a namespace is created and nvmetcli saves it; we have no state
 * to save, so the identifiers are derived, and stay the same across restarts as long as NQN and NSID do. The
 * serial number defaults likewise to 16 hex digits derived from the subsystem NQN (nvmet: 16 random hex digits).
 */
public final class TargetConfig {
    private static final Logger LOG = LoggerFactory.getLogger(TargetConfig.class);

    /** The subsystem of {@link #embeddedDefault()}. */
    public static final String DEMO_NQN = "nqn.2014-08.io.nvmeof4j:demo";
    /** {@code attr.model} default (nvmet: "Linux"). */
    public static final String MODEL_DEFAULT = "nvmeof4j";
    /** {@code attr.qid_max} default (nvmet: NVMET_NR_QUEUES). */
    public static final int QID_MAX_DEFAULT = 128;
    /** {@code device.block_size} default of file namespaces: 0, the device's (a block device's logical block size, 4096 for a regular file). */
    public static final int FILE_BLOCK_SIZE_DEFAULT = 0;
    /** {@code device.block_size} default of ram and null namespaces. */
    public static final int MEMORY_BLOCK_SIZE_DEFAULT = 512;

    /** What {@link #embeddedDefault()} parses: what the daemon serves when started without a configuration. */
    public static final String EMBEDDED_DEFAULT_JSON = """
        {
          "hosts": [],
          "ports": [
            {
              "addr": {"adrfam": "ipv4", "traddr": "127.0.0.1", "treq": "not specified", "trsvcid": "4420", "trtype": "tcp"},
              "param": {"inline_data_size": "16384"},
              "portid": 1,
              "referrals": [],
              "subsystems": ["nqn.2014-08.io.nvmeof4j:demo"]
            },
            {
              "addr": {"adrfam": "ipv4", "traddr": "127.0.0.1", "treq": "not specified", "trsvcid": "8009", "trtype": "tcp"},
              "portid": 2,
              "referrals": [],
              "subsystems": ["nqn.2014-08.org.nvmexpress.discovery"]
            }
          ],
          "subsystems": [
            {
              "allowed_hosts": [],
              "attr": {"allow_any_host": "1", "model": "nvmeof4j"},
              "namespaces": [
                {"device": {"backend": "ram", "size": "1G", "block_size": 512}, "enable": 1, "nsid": 1}
              ],
              "nqn": "nqn.2014-08.io.nvmeof4j:demo"
            }
          ]
        }
        """;

    private static final ObjectMapper MAPPER = JsonMapper.builder()
        .enable(JsonParser.Feature.STRICT_DUPLICATE_DETECTION)
        .enable(JsonReadFeature.ALLOW_JAVA_COMMENTS)
        .build();

    /** Something the configuration contains that is accepted but not used, or looks wrong without being fatal. */
    public record Notice(boolean warning, String text) {
    }

    private final Path source;
    private final List<String> hosts;
    private final Map<String, DhchapCredentials> hostCredentials;
    private final List<PortConfig> ports;
    private final List<SubsystemConfig> subsystems;
    private final DaemonSettings daemon;
    private final List<Notice> notices;
    private final Map<String, HostPskStore.HostPsk> tlsKeys;

    TargetConfig(Path source, List<String> hosts, Map<String, DhchapCredentials> hostCredentials,
                 List<PortConfig> ports, List<SubsystemConfig> subsystems, DaemonSettings daemon,
                 List<Notice> notices, Map<String, HostPskStore.HostPsk> tlsKeys) {
        this.source = source;
        this.tlsKeys = Map.copyOf(tlsKeys);
        this.hosts = List.copyOf(hosts);
        this.hostCredentials = Map.copyOf(hostCredentials);
        this.ports = List.copyOf(ports);
        this.subsystems = List.copyOf(subsystems);
        this.daemon = Objects.requireNonNull(daemon, "daemon");
        this.notices = List.copyOf(notices);
    }

    /**
     * Reads and validates a configuration file; relative device paths are taken relative to its directory.
     * Logs the notices (ignored keys at info, suspicious ones at warn).
     *
     * @throws ConfigException when the file cannot be read, is not JSON, or any field is invalid
     */
    public static TargetConfig load(Path file) throws ConfigException {
        String json;
        try {
            json = Files.readString(file, StandardCharsets.UTF_8);
        } catch (NoSuchFileException e) {
            throw new ConfigException("", "configuration file " + file + " does not exist", e);
        } catch (IOException e) {
            throw new ConfigException("", "cannot read configuration file " + file + ": " + e, e);
        }
        Path absolute = file.toAbsolutePath();
        Path dir = absolute.getParent() != null ? absolute.getParent() : Path.of("").toAbsolutePath();
        return parse(json, absolute, dir, dir.resolve(HttpSecurity.API_TOKEN_FILE_NAME));
    }

    /**
     * Parses and validates a configuration; relative device paths are taken relative to the working directory,
     * the API token file defaults to {@link HttpSecurity#stateDirectoryTokenFile()} (there is no configuration
     * file to put it next to).
     */
    public static TargetConfig parse(String json) throws ConfigException {
        return parse(json, null, Path.of("").toAbsolutePath(), HttpSecurity.stateDirectoryTokenFile());
    }

    /**
     * Parses and validates a configuration; relative device paths are taken relative to {@code baseDirectory}, and
     * the API token file defaults to {@value HttpSecurity#API_TOKEN_FILE_NAME} in it, as for a file there.
     */
    public static TargetConfig parse(String json, Path baseDirectory) throws ConfigException {
        return parse(json, null, baseDirectory, baseDirectory.resolve(HttpSecurity.API_TOKEN_FILE_NAME));
    }

    /**
     * {@link #parse(String, Path)} without logging the notices: the control plane parses every changed configuration
     * again to validate it, and the notices were logged when the file was loaded.
     */
    public static TargetConfig parseQuietly(String json, Path baseDirectory) throws ConfigException {
        return parse(json, null, baseDirectory, baseDirectory.resolve(HttpSecurity.API_TOKEN_FILE_NAME), false);
    }

    private static TargetConfig parse(String json, Path source, Path baseDirectory, Path defaultTokenFile)
        throws ConfigException {
        return parse(json, source, baseDirectory, defaultTokenFile, true);
    }

    private static TargetConfig parse(String json, Path source, Path baseDirectory, Path defaultTokenFile,
                                      boolean logNotices) throws ConfigException {
        JsonNode root;
        try {
            root = MAPPER.readTree(json);
        } catch (JsonProcessingException e) {
            throw new ConfigException("", "not valid JSON: " + e.getOriginalMessage() + location(e), e);
        }
        if (root == null || root.isMissingNode()) {
            throw new ConfigException("", "the configuration is empty");
        }
        TargetConfig config = new ConfigParser(baseDirectory, defaultTokenFile).parse(root, source);
        for (Notice n : logNotices ? config.notices : List.<Notice>of()) {
            if (n.warning()) {
                LOG.warn("config: {}", n.text());
            } else {
                LOG.info("config: {}", n.text());
            }
        }
        return config;
    }

    /**
     * Parses one namespace object as it appears in {@code subsystems[].namespaces[]} (management API: adding a
     * namespace live), with the same checks, defaults and derived identifiers as a configuration file, and stricter
     * ones for a request: an unknown or unsupported key is an error naming it (a configuration file only gets a
     * notice, since nvmetcli files carry keys we ignore), and a device path may not contain a {@code ..} component.
     * Nothing on the machine is looked at: the daemon checks the path against {@code allowed_paths} first, then
     * {@link #checkNamespaceFile}. Relative paths are taken relative to {@code baseDirectory}.
     *
     * @param where the JSON path to name in messages
     */
    public static NamespaceConfig parseNamespace(JsonNode namespace, String where, String subsystemNqn,
                                                 Path baseDirectory) throws ConfigException {
        return new ConfigParser(baseDirectory, true).standaloneNamespace(namespace, where, subsystemNqn);
    }

    /**
     * An NQN as the configuration takes it: {@link io.nvmeof4j.protocol.Nqn#of}'s rules (at most 223 bytes,
     * {@code nqn.yyyy-mm.domain[:name]}), and no control character, '/' or '\\'.
     *
     * @throws IllegalArgumentException saying what is wrong
     */
    public static String checkNqn(String nqn) {
        return ConfigValues.checkNqn(nqn);
    }

    /**
     * Parses one host's DH-HMAC-CHAP settings, {@code {"key", "ctrl_key", "hash", "dhgroup"}} as in
     * {@code hosts[].dhchap} (management API); errors name {@code dhchap.<field>}. Returns null when the key is
     * empty (no authentication).
     */
    public static DhchapCredentials parseDhchap(JsonNode dhchap) throws ConfigException {
        ObjectNode host = MAPPER.createObjectNode();
        host.set("dhchap", dhchap);
        return HostsSection.dhchap(host, "");
    }

    /** This configuration with other daemon settings (command-line overrides such as {@code --http}). */
    public TargetConfig withDaemonSettings(DaemonSettings settings) {
        return new TargetConfig(source, hosts, hostCredentials, ports, subsystems, settings, notices, tlsKeys);
    }

    /**
     * This configuration with other hosts, ports and subsystems (a live change). Not validated: the control plane
     * writes it ({@link ConfigWriter}) and parses the text again before anything is applied.
     */
    public TargetConfig withModel(List<String> hosts, List<PortConfig> ports, List<SubsystemConfig> subsystems) {
        return new TargetConfig(source, hosts, hostCredentials, ports, subsystems, daemon, List.of(), tlsKeys);
    }

    private static String location(JsonProcessingException e) {
        return e.getLocation() == null ? ""
            : " (line " + e.getLocation().getLineNr() + ", column " + e.getLocation().getColumnNr() + ")";
    }

    /**
     * What the daemon serves without a configuration: subsystem {@value #DEMO_NQN} (any host) with a 1 GiB RAM
     * namespace (NSID 1, 512-byte blocks), NVMe/TCP on 127.0.0.1:4420 (portid 1) and discovery on
     * 127.0.0.1:8009 (portid 2). See {@link #EMBEDDED_DEFAULT_JSON}.
     *
     * @throws ConfigException a JVM option ({@code -Dnvmeof4j.*}) is malformed or out of range: the operator's error,
     *                         named as such, not the embedded configuration's
     */
    public static TargetConfig embeddedDefault() throws ConfigException {
        DaemonJvmOptions.check();
        try {
            return parse(EMBEDDED_DEFAULT_JSON);
        } catch (ConfigException e) {
            throw new IllegalStateException("the embedded default configuration is invalid: " + e.getMessage(), e);
        }
    }

    /** The file this configuration was loaded from, if any. */
    public Optional<Path> source() {
        return Optional.ofNullable(source);
    }

    /** {@code hosts[].tls_key} (and {@code tls_psk_derivation}): each host's configured TLS PSK, by host NQN. */
    public Map<String, HostPskStore.HostPsk> tlsKeys() {
        return tlsKeys;
    }

    /** {@code hosts[].nqn}: accepted (nvmetcli needs them for allowed_hosts); nvmeof4j does not need them. */
    public List<String> hosts() {
        return hosts;
    }

    /**
     * {@code hosts[].dhchap}: the DH-HMAC-CHAP credentials of each host that must authenticate (hosts without a
     * key are absent). See docs/authentication.md.
     */
    public Map<String, DhchapCredentials> hostCredentials() {
        return hostCredentials;
    }

    /** Every port, in configuration order, including those this build cannot serve (RDMA). */
    public List<PortConfig> ports() {
        return ports;
    }

    /** The ports this build serves (NVMe/TCP), in configuration order. Never empty. */
    public List<PortConfig> servablePorts() {
        List<PortConfig> list = new ArrayList<>();
        for (PortConfig p : ports) {
            if (p.isServable()) {
                list.add(p);
            }
        }
        return list;
    }

    public List<SubsystemConfig> subsystems() {
        return subsystems;
    }

    public Optional<SubsystemConfig> subsystem(String nqn) {
        return subsystems.stream().filter(s -> s.nqn().equals(nqn)).findFirst();
    }

    /** The {@code "nvmeof4j"} settings (defaults where absent). */
    public DaemonSettings daemon() {
        return daemon;
    }

    /** Notices found while parsing (ignored keys, unreachable subsystems), already logged. */
    public List<Notice> notices() {
        return notices;
    }

    /** The largest most I/O queues any subsystem allows ({@code attr.qid_max}). */
    public int maxIoQueues() {
        return subsystems.stream().mapToInt(SubsystemConfig::qidMax).max().orElse(QID_MAX_DEFAULT);
    }

    /**
     * Checks what the configuration needs from the machine, again: every enabled file namespace's file exists
     * (or can be created: a size is given and the directory exists) and is usable. The daemon calls this right
     * before it opens anything, since files may have changed since the configuration was loaded.
     */
    public void checkEnvironment() throws ConfigException {
        checkReactorCpus();
        for (SubsystemConfig s : subsystems) {
            for (NamespaceConfig ns : s.namespaces()) {
                if (ns.enabled() && ns.backend() == BackendType.FILE) {
                    checkNamespaceFile(ns);
                }
            }
        }
    }

    /**
     * {@code reactor_cpus} the process may not run on (taskset, systemd's CPUAffinity, a cpuset) is refused here too,
     * so {@code --check} says so. Where affinity cannot be read (no affinity library) the start refuses instead.
     */
    private void checkReactorCpus() throws ConfigException {
        io.nvmeof4j.jni.cpu.CpuSet cpus = daemon().reactorCpus();
        if (cpus == null || !io.nvmeof4j.jni.cpu.CpuAffinity.isAvailable()) {
            return;
        }
        try {
            io.nvmeof4j.jni.cpu.ReactorPinning.requireAllowed(cpus, io.nvmeof4j.jni.cpu.ReactorPinning.processCpus());
        } catch (IllegalArgumentException e) {
            throw new ConfigException("nvmeof4j." + DaemonSettings.REACTOR_CPUS, e.getMessage());
        } catch (io.nvmeof4j.jni.NativeIoException e) {
            // the start reads them again and fails with this errno
        }
    }

    /**
     * Checks a file namespace's file as {@link #checkEnvironment()} does: it exists and is usable, or can be
     * created (a size is given and the directory exists and is writable).
     */
    public static void checkNamespaceFile(NamespaceConfig ns) throws ConfigException {
        String where = ns.where() + ".device.path";
        Path path = ns.path();
        if (Files.isDirectory(path)) {
            throw new ConfigException(where, path + " is a directory");
        }
        if (Files.exists(path)) {
            if (!Files.isReadable(path) || !Files.isWritable(path)) {
                throw new ConfigException(where, path + " is not readable and writable by this process");
            }
            if (ns.sizeBytes() == 0 && Files.isRegularFile(path)) {
                long length;
                try {
                    length = Files.size(path);
                } catch (IOException e) {
                    throw new ConfigException(where, "cannot read the size of " + path + ": " + e, e);
                }
                int blockSize = ns.blockSize() == 0 ? 4096 : ns.blockSize();
                if (length < blockSize) {
                    throw new ConfigException(where, path + " has " + length + " bytes, less than one "
                        + blockSize + "-byte block; give device.size to extend it");
                }
            }
            return;
        }
        if (ns.sizeBytes() == 0) {
            throw new ConfigException(where, path + " does not exist, and without device.size it cannot be created");
        }
        Path dir = path.getParent();
        if (dir == null || !Files.isDirectory(dir)) {
            throw new ConfigException(where, "cannot create " + path + ": directory " + dir + " does not exist");
        }
        if (!Files.isWritable(dir)) {
            throw new ConfigException(where, "cannot create " + path + ": directory " + dir + " is not writable");
        }
    }

    /**
     * The largest buffer a reactor's pool must hand out: MDTS. In-capsule data never comes from the pool (NVMe/TCP
     * slots and RDMA receives have their own buffers, docs/datapath.md), so the ports do not change it.
     */
    public static int largestBuffer(DaemonSettings settings) {
        int largest = settings.maxDataTransferSize();
        return largest <= 4096 ? 4096 : Integer.highestOneBit(largest - 1) << 1;
    }

    /** The largest buffer this configuration's pools must hand out. */
    public int largestBuffer() {
        return largestBuffer(daemon);
    }

    static UUID derivedUuid(String subsystemNqn, int nsid) {
        return UUID.nameUUIDFromBytes(("nvmeof4j:uuid:" + subsystemNqn + ":" + Integer.toUnsignedString(nsid))
            .getBytes(StandardCharsets.UTF_8));
    }

    static byte[] derivedNguid(String subsystemNqn, int nsid) {
        return ConfigValues.md5("nvmeof4j:nguid:" + subsystemNqn + ":" + Integer.toUnsignedString(nsid));
    }

    static String derivedSerial(String subsystemNqn) {
        return ConfigValues.hex(ConfigValues.md5("nvmeof4j:serial:" + subsystemNqn)).substring(0, 16);
    }

    /** {@code attr.firmware} default: the nvmeof4j version, cut to the 8 bytes of Identify FR (as nvmet cuts the kernel release). */
    static String firmwareDefault() {
        String v = BuildVersion.version();
        return v.length() > 8 ? v.substring(0, 8) : v;
    }

    @Override
    public String toString() {
        return "TargetConfig[" + (source != null ? source + ", " : "") + subsystems.size() + " subsystem(s), "
            + ports.size() + " port(s)]";
    }
}
