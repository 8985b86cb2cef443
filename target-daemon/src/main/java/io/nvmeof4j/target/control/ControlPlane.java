package io.nvmeof4j.target.control;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.nvmeof4j.protocol.auth.DhchapCredentials;
import io.nvmeof4j.protocol.spi.AddressFamily;
import io.nvmeof4j.protocol.spi.TransportType;
import io.nvmeof4j.target.backend.QosLimits;
import io.nvmeof4j.target.config.ConfigException;
import io.nvmeof4j.target.config.ConfigWriter;
import io.nvmeof4j.target.config.NamespaceConfig;
import io.nvmeof4j.target.config.PortConfig;
import io.nvmeof4j.target.config.ReferralConfig;
import io.nvmeof4j.target.config.SubsystemConfig;
import io.nvmeof4j.target.config.TargetConfig;
import io.nvmeof4j.target.daemon.TargetDaemon;
import io.nvmeof4j.target.model.Namespace;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.function.UnaryOperator;

/**
 * Every live change to a running target, for every front end (the HTTP management API, the SPDK JSON-RPC socket):
 * subsystems, listeners (ports and the subsystems they export), namespaces, allowed hosts, {@code allow_any_host},
 * host credentials, the ANA state of each group on each port.
 * One piece of code per operation; the front ends only translate parameters and errors.
 * This class keeps the configuration, the persist-or-undo step and the subsystems; each other family is its own
 * part over that step: {@link HostChanges} (allowed hosts, DH-HMAC-CHAP and TLS keys), {@link NamespaceChanges}
 * (namespaces, sizes, QoS) and {@link PortChanges} (listeners, referrals, ANA states).
 *
 * <h2>Persistence</h2>
 * The control plane holds the configuration the daemon serves ({@link #configuration()}) and, when the daemon was
 * started from a file, writes every accepted change to it atomically ({@link AtomicFile}: temporary file, fsync,
 * rename, fsync of the directory) before the change is answered. A change is made in three steps:
 * <ol>
 *   <li><b>validate</b>: the next configuration is written ({@link ConfigWriter}) and parsed again by the code that
 *       reads the file at start, so whatever is persisted is a file the daemon will start from, and every rule of
 *       the file (NQNs, sizes, duplicate NSIDs or device paths, {@code allow_any_host} with hosts, ...) applies;</li>
 *   <li>additions are <b>applied, then written</b>: if the file cannot be written the live change is undone
 *       (a namespace closed again, a listener closed, a subsystem deleted) and the change refused;</li>
 *   <li>removals are <b>written, then applied</b>: once the configuration no longer names a thing, taking it off the
 *       live target cannot fail (it is taken out of the model, its device closed).</li>
 * </ol>
 * Either way nothing is half-applied, and a SIGKILL at any moment leaves a file holding every acknowledged change
 * (and possibly the one in progress, which was not acknowledged). Without a configuration file (the embedded demo
 * configuration) changes are live only: the daemon says so at start and in every change's log line.
 *
 * <h2>Concurrency</h2>
 * Changes run one at a time (this object's lock, then the daemon's). The data path never takes either.
 */
public final class ControlPlane {
    private static final Logger LOG = LoggerFactory.getLogger(ControlPlane.class);
    /** The first PORTID given to a listener added live on an address no port serves yet. */
    public static final int FIRST_LIVE_PORTID = 1;
    /** The setting naming the JSON-RPC socket ({@code bin/nvmeof-target -r PATH} overrides it). */
    public static final String RPC_SOCKET = io.nvmeof4j.target.config.DaemonSettings.RPC_SOCKET;

    private final TargetDaemon daemon;
    private final Path file;
    private final Path baseDirectory;
    private TargetConfig current;
    /** The document last written (or read): keeps what the configuration model has no field for. */
    private JsonNode document;
    private final HostChanges hosts;
    private final NamespaceChanges namespaces;
    private final PortChanges ports;

    /**
     * @param daemon  the running target
     * @param config  what it serves (as loaded, before command-line overrides)
     * @param file    the configuration file to keep up to date, or null (changes are live only)
     */
    public ControlPlane(TargetDaemon daemon, TargetConfig config, Path file) throws IOException {
        this.daemon = Objects.requireNonNull(daemon, "daemon");
        this.file = file == null ? null : file.toAbsolutePath();
        this.baseDirectory = this.file != null ? this.file.getParent() : Path.of("").toAbsolutePath();
        this.current = config;
        this.hosts = new HostChanges(this, daemon);
        this.namespaces = new NamespaceChanges(this, daemon);
        this.ports = new PortChanges(this, daemon);
        // Read as TargetConfig reads it (comments allowed); they are not kept when the file is next written.
        this.document = this.file != null
            ? com.fasterxml.jackson.databind.json.JsonMapper.builder()
                .enable(com.fasterxml.jackson.core.json.JsonReadFeature.ALLOW_JAVA_COMMENTS).build()
                .readTree(Files.readString(this.file))
            : ConfigWriter.write(config, null);
        if (this.file != null) {
            removeStaleTemporaryFiles();
        }
        if (this.file == null) {
            LOG.warn("no configuration file (--config): live changes (HTTP API, RPC) are not persisted and are lost "
                + "at restart");
        }
    }

    /** Temporary files of {@link AtomicFile} a killed daemon left next to the configuration (never renamed in). */
    private void removeStaleTemporaryFiles() {
        String prefix = "." + file.getFileName() + ".tmp-";
        try (var entries = Files.newDirectoryStream(baseDirectory, prefix + "*")) {
            for (Path stale : entries) {
                Files.deleteIfExists(stale);
                LOG.info("removed {}, left by a write the daemon did not finish", stale);
            }
        } catch (IOException e) {
            LOG.warn("cannot look for temporary files next to {}: {}", file, e.toString());
        }
    }

    /** {@code "nvmeof4j": {"rpc_socket": PATH}} of the configuration (relative: to its directory), if set. */
    public synchronized Optional<Path> rpcSocketSetting() {
        JsonNode settings = document.get("nvmeof4j");
        JsonNode socket = settings == null ? null : settings.get(RPC_SOCKET);
        if (socket == null || socket.isNull() || !socket.isTextual() || socket.asText().isEmpty()) {
            return Optional.empty();
        }
        return Optional.of(baseDirectory.resolve(socket.asText()));
    }

    /** The configuration file changes are written to, if any. */
    public Optional<Path> file() {
        return Optional.ofNullable(file);
    }

    /** The configuration as it stands after the last accepted change. */
    public synchronized TargetConfig configuration() {
        return current;
    }

    /** The document that is (or, without a file, would be) the configuration file now. */
    public synchronized JsonNode document() {
        return ConfigWriter.write(current, document);
    }

    /** The directory relative device paths are resolved against (the configuration file's). */
    public Path baseDirectory() {
        return baseDirectory;
    }

    // ------------------------------------------------------------------------------------------------ subsystems

    /**
     * Creates an empty subsystem.
     *
     * @param serial    null: derived from the NQN
     * @param model     null: {@value TargetConfig#MODEL_DEFAULT}
     */
    public synchronized SubsystemConfig createSubsystem(String who, String nqn, String serial, String model,
                                                        boolean allowAnyHost, int cntlidMin, int cntlidMax)
        throws ControlException {
        return createSubsystem(who, nqn, serial, model, allowAnyHost, cntlidMin, cntlidMax, 0);
    }

    /**
     * As {@link #createSubsystem(String, String, String, String, boolean, int, int)}, with SPDK's
     * {@code max_namespaces}: NSIDs above it are refused (0: no limit of its own, 1..1024).
     */
    public synchronized SubsystemConfig createSubsystem(String who, String nqn, String serial, String model,
                                                        boolean allowAnyHost, int cntlidMin, int cntlidMax,
                                                        int maxNamespaces) throws ControlException {
        if (current.subsystem(nqn).isPresent()) {
            throw new ControlException(ControlException.Kind.EXISTS, "subsystem " + nqn + " exists already");
        }
        ObjectNode s = new ObjectMapper().createObjectNode();
        s.put("nqn", nqn);
        ObjectNode attr = s.putObject("attr");
        attr.put("allow_any_host", allowAnyHost ? "1" : "0");
        if (serial != null) {
            attr.put("serial", serial);
        }
        if (model != null) {
            attr.put("model", model);
        }
        attr.put("cntlid_min", Integer.toString(cntlidMin));
        attr.put("cntlid_max", Integer.toString(cntlidMax));
        if (maxNamespaces != 0) {
            // A negative value (a malformed request) is written too, so the parser refuses it, naming the field.
            attr.put("max_namespaces", Integer.toString(maxNamespaces));
        }
        // The subsystem's own fields come from the parser (defaults, checks): append it to the document's list.
        ObjectNode doc = (ObjectNode) ConfigWriter.write(current, document);
        doc.withArray("subsystems").add(s);
        TargetConfig next = parse(doc);
        SubsystemConfig sc = next.subsystem(nqn).orElseThrow();
        try {
            daemon.addSubsystem(sc);
        } catch (IllegalStateException e) {
            throw new ControlException(ControlException.Kind.EXISTS, e.getMessage());
        }
        commitOrUndo(who, "create subsystem " + nqn, next, () -> daemon.removeSubsystem(nqn));
        return sc;
    }

    /**
     * Deletes a subsystem with its namespaces; every port stops exporting it, and a port that exported only it is
     * closed (as {@link #removeListener} does), unless it is the target's last port.
     */
    public synchronized void deleteSubsystem(String who, String nqn) throws ControlException {
        requireSubsystem(nqn);
        List<PortConfig> ports = new ArrayList<>();
        List<Integer> closed = new ArrayList<>();
        for (PortConfig p : current.ports()) {
            List<String> subs = new ArrayList<>(p.subsystems());
            if (subs.remove(nqn) && subs.isEmpty()) {
                closed.add(p.portId());
            } else {
                ports.add(PortChanges.withSubsystems(p, subs));
            }
        }
        if (ports.isEmpty() && !closed.isEmpty()) {
            // The configuration needs a port: the last one stays, exporting nothing (it still answers discovery).
            int keep = closed.remove(closed.size() - 1);
            PortConfig last = current.ports().stream().filter(p -> p.portId() == keep).findFirst().orElseThrow();
            ports.add(PortChanges.withSubsystems(last, List.of()));
        }
        List<SubsystemConfig> subsystems = new ArrayList<>(current.subsystems());
        subsystems.removeIf(s -> s.nqn().equals(nqn));
        TargetConfig next = validate(current.withModel(current.hosts(), ports, subsystems));
        commit(who, "delete subsystem " + nqn, next);
        daemon.removeSubsystem(nqn);
        for (int portId : closed) {
            daemon.removePort(portId);
        }
    }

    /** Allows or stops allowing any host on a subsystem. */
    public synchronized void allowAnyHost(String who, String nqn, boolean allow) throws ControlException {
        SubsystemConfig s = requireSubsystem(nqn);
        TargetConfig next = validate(replace(s.nqn(), old -> new SubsystemConfig(old.nqn(), allow, old.allowedHosts(),
            old.serial(), old.model(), old.firmware(), old.version(), old.cntlidMin(), old.cntlidMax(), old.qidMax(),
            old.namespaces(), old.maxNamespaces())));
        boolean before = daemon.model().subsystem(nqn).allowAnyHost();
        daemon.model().subsystem(nqn).allowAnyHost(allow);
        discoveryChanged();
        commitOrUndo(who, (allow ? "allow" : "disallow") + " any host on " + nqn, next, () -> {
            daemon.model().subsystem(nqn).allowAnyHost(before);
            discoveryChanged();
        });
    }

    // ------------------------------------------------------------------------------------------------ hosts

    /** Adds a host to a subsystem's allowed hosts. */
    public synchronized void addHost(String who, String nqn, String host) throws ControlException {
        hosts.addHost(who, nqn, host);
    }

    /**
     * Removes a host from a subsystem's allowed hosts: its next Connect is refused; its controllers stay until they
     * disconnect, as with the Linux target and SPDK.
     */
    public synchronized void removeHost(String who, String nqn, String host) throws ControlException {
        hosts.removeHost(who, nqn, host);
    }

    /**
     * Sets ({@code dhchap}: the configuration's {@code hosts[].dhchap} object) or removes (null) a host's DH-HMAC-CHAP
     * credentials, persisted as {@code hosts[].dhchap}: a key rotated live survives a restart. Takes effect at the
     * host's next Connect or re-authentication. Returns the credentials now in force (null: none).
     */
    public synchronized DhchapCredentials setDhchap(String who, String host, JsonNode dhchap) throws ControlException {
        return hosts.setDhchap(who, host, dhchap);
    }

    /**
     * Sets, rotates ({@code key}: the interchange format {@code NVMeTLSkey-1:01|02:...:}) or removes (null) a host's
     * TLS PSK, persisted as {@code hosts[].tls_key} (and {@code tls_psk_derivation}, null: the default). TLS
     * handshakes from then on use the new key and refuse the old one; established connections go on. Returns the
     * key now in force (null: none).
     */
    public synchronized io.nvmeof4j.tcp.tls.HostPskStore.HostPsk setTlsKey(String who, String host, String key,
                                                                          String derivation) throws ControlException {
        return hosts.setTlsKey(who, host, key, derivation);
    }

    // ------------------------------------------------------------------------------------------------ namespaces

    /**
     * Adds a namespace (parsed from a configuration-shaped object by the caller). A file or block device must lie
     * inside {@code allowed_paths}; RAM must fit the budget (both checked by the daemon before anything is opened).
     */
    public synchronized Namespace addNamespace(String who, String nqn, NamespaceConfig nc) throws ControlException {
        return namespaces.addNamespace(who, nqn, nc);
    }

    /** Removes a namespace; returns it. */
    public synchronized Namespace removeNamespace(String who, String nqn, int nsid) throws ControlException {
        return namespaces.removeNamespace(who, nqn, nsid);
    }

    /**
     * Resizes a namespace live: a null device to {@code sizeBytes} (SPDK's {@code bdev_null_resize}), a file or block
     * device to the size it has now ({@code sizeBytes} 0: SPDK's {@code bdev_aio_rescan}/{@code bdev_uring_rescan},
     * nvmet's {@code revalidate_size}) or to {@code sizeBytes} no larger than the file. Growing only: shrinking is
     * refused (SPDK refuses shrinking a null bdev, and shrinking any bdev a namespace holds open), as data a host
     * wrote beyond the new end would vanish under it. Applied, written, then announced: connected controllers get
     * the namespace attribute changed event and the NSID in their Changed Namespace List (log 04h), and Identify
     * Namespace reports the new NSZE/NCAP/NUSE. A RAM namespace cannot be resized (SPDK has no
     * {@code bdev_malloc_resize}). Returns the new size in bytes.
     */
    public synchronized long resizeNamespace(String who, String nqn, int nsid, long sizeBytes) throws ControlException {
        return namespaces.resizeNamespace(who, nqn, nsid, sizeBytes);
    }

    /**
     * Sets a namespace's QoS rate limits (all four; {@link QosLimits#NONE} removes them): written, then applied to the
     * running namespace, whose I/O follows at once. Returns the namespace's configuration as persisted.
     */
    public synchronized NamespaceConfig setQos(String who, String nqn, int nsid, QosLimits limits)
        throws ControlException {
        return namespaces.setQos(who, nqn, nsid, limits);
    }

    // ------------------------------------------------------------------------------------------------ listeners

    /**
     * Lets hosts reach a subsystem at an address: the port already serving the address exports it too, or a new
     * port is bound (the next free PORTID). A new port asked for service id 0 is persisted with the port it got.
     */
    public synchronized PortConfig addListener(String who, String nqn, TransportType trtype, AddressFamily adrfam,
                                               String traddr, String trsvcid) throws ControlException {
        return ports.addListener(who, nqn, trtype, adrfam, traddr, trsvcid);
    }

    /**
     * Stops a subsystem being reachable at an address: hosts connected to it through that port are disconnected;
     * a port left exporting nothing is closed.
     */
    public synchronized void removeListener(String who, String nqn, TransportType trtype, String traddr,
                                            String trsvcid) throws ControlException {
        ports.removeListener(who, nqn, trtype, traddr, trsvcid);
    }

    /**
     * Adds a referral: discovery logs read through port {@code portId} (-1: every port, as SPDK's target-wide
     * {@code nvmf_discovery_add_referral}) list {@code referral} from now on; connected discovery controllers get the
     * discovery log change event. A name already used on a port gets a suffix ({@code -2}, ...).
     *
     * @return the referral as added (to the first port)
     */
    public synchronized ReferralConfig addReferral(String who, int portId, ReferralConfig referral)
        throws ControlException {
        return ports.addReferral(who, portId, referral);
    }

    /**
     * Removes the referrals of port {@code portId} (-1: every port) that {@code match} selects: written, then taken
     * out of the discovery logs (discovery log change event).
     *
     * @return how many were removed (at least one)
     */
    public synchronized int removeReferral(String who, int portId, java.util.function.Predicate<ReferralConfig> match,
                                           String what) throws ControlException {
        return ports.removeReferral(who, portId, match, what);
    }

    /** The referrals every port has (what SPDK's target-wide calls added): each once, as the first port has it. */
    public synchronized List<ReferralConfig> referralsOnEveryPort() {
        return ports.referralsOnEveryPort();
    }

    /**
     * Sets the ANA state of groups on one port ({@code states}: state by group id), persisted as the port's
     * {@code ana_groups}: every controller connected through the port gets the ANA change event, and I/O on the
     * groups' namespaces through the port gets the state's status at once. As in nvmet, a state belongs to a (port,
     * group), whichever subsystems the port exports. Written, then applied (setting a state cannot fail once the port
     * is known), so a change the file refuses never reaches a host. Returns the previous state of each group.
     */
    public synchronized java.util.Map<Integer, Integer> setAnaStates(String who, int portId,
                                                                     java.util.Map<Integer, Integer> states)
        throws ControlException {
        return ports.setAnaStates(who, portId, states);
    }

    /** The port through which {@code nqn} listens at an address (SPDK names a listener by its address). */
    public synchronized PortConfig listener(String nqn, TransportType trtype, String traddr, String trsvcid)
        throws ControlException {
        return ports.listener(nqn, trtype, traddr, trsvcid);
    }

    // ------------------------------------------------------------------------------------------------ bdevs

    /** The JSON-RPC socket's bdev registry as last written ({@code "nvmeof4j": {"rpc_bdevs": [...]}}), or null. */
    public synchronized JsonNode rpcBdevs() {
        JsonNode settings = document.get("nvmeof4j");
        JsonNode bdevs = settings == null ? null : settings.get(io.nvmeof4j.target.config.DaemonSettings.RPC_BDEVS);
        return bdevs == null || !bdevs.isArray() ? null : bdevs.deepCopy();
    }

    /**
     * Persists the JSON-RPC socket's bdev registry ({@code "nvmeof4j": {"rpc_bdevs": [...]}}), so bdevs no namespace
     * uses, and the names of those one does, survive a restart; refused, with nothing written, when the file cannot
     * be.
     */
    public synchronized void saveRpcBdevs(String who, String what, ArrayNode bdevs) throws ControlException {
        ObjectNode doc = (ObjectNode) ConfigWriter.write(current, document);
        ((ObjectNode) doc.get("nvmeof4j")).set(io.nvmeof4j.target.config.DaemonSettings.RPC_BDEVS, bdevs.deepCopy());
        commit(who, what, current, doc);
    }


    // ------------------------------------------------------------------------------------------------ persist or undo

    SubsystemConfig requireSubsystem(String nqn) throws ControlException {
        return current.subsystem(nqn).orElseThrow(() -> new ControlException(ControlException.Kind.NOT_FOUND,
            "no subsystem " + nqn));
    }

    TargetConfig replace(String nqn, UnaryOperator<SubsystemConfig> change) {
        List<SubsystemConfig> list = new ArrayList<>();
        for (SubsystemConfig s : current.subsystems()) {
            list.add(s.nqn().equals(nqn) ? change.apply(s) : s);
        }
        return current.withModel(current.hosts(), current.ports(), list);
    }

    /** Writes and parses {@code next} again: what would be persisted is what the daemon starts from. */
    TargetConfig validate(TargetConfig next) throws ControlException {
        return parse(ConfigWriter.write(next, document));
    }

    TargetConfig parse(JsonNode doc) throws ControlException {
        try {
            return TargetConfig.parseQuietly(ConfigWriter.text(doc), baseDirectory);
        } catch (ConfigException e) {
            throw new ControlException(ControlException.Kind.INVALID, e.getMessage(), e);
        }
    }

    /** Persists {@code next} (a removal, not yet applied); refused, with nothing changed, when it cannot be. */
    void commit(String who, String what, TargetConfig next) throws ControlException {
        commit(who, what, next, document);
    }

    /** As {@link #commit(String, String, TargetConfig)}, keeping what {@code base} holds beyond the model. */
    void commit(String who, String what, TargetConfig next, JsonNode base) throws ControlException {
        JsonNode doc = ConfigWriter.write(next, base);
        if (file != null) {
            try {
                AtomicFile.write(file, ConfigWriter.text(doc));
            } catch (IOException e) {
                LOG.warn("{}: {} refused: cannot write {}: {}", who, what, file, e.toString());
                throw new ControlException(ControlException.Kind.IO, "cannot write the configuration file " + file
                    + ": " + e.getMessage() + "; nothing was changed", e);
            }
        }
        current = next;
        document = doc;
        LOG.info("{}: {}{}", who, what, file == null ? " (not persisted: no configuration file)" : "; " + file
            + " updated");
    }

    /** Persists {@code next} (an addition already applied); undoes it when the file cannot be written. */
    void commitOrUndo(String who, String what, TargetConfig next, Runnable undo) throws ControlException {
        commitOrUndo(who, what, next, document, undo);
    }

    void commitOrUndo(String who, String what, TargetConfig next, JsonNode base, Runnable undo)
        throws ControlException {
        try {
            commit(who, what, next, base);
        } catch (ControlException e) {
            try {
                undo.run();
            } catch (RuntimeException u) {
                LOG.error("{}: undoing {} failed: {}", who, what, u.toString());
                e.addSuppressed(u);
            }
            throw e;
        }
    }

    void discoveryChanged() {
        daemon.model().discoveryChanged();
        daemon.registry().notifyDiscoveryChanged();
    }
}
