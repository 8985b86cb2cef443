package io.nvmeof4j.target.control;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.nvmeof4j.protocol.ana.AnaState;
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
import io.nvmeof4j.target.limits.NamespaceRefusedException;
import io.nvmeof4j.target.model.Namespace;
import io.nvmeof4j.target.model.Port;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.function.UnaryOperator;

/**
 * Every live change to a running target, for every front end (the HTTP management API, the SPDK JSON-RPC socket):
 * subsystems, listeners (ports and the subsystems they export), namespaces, allowed hosts, {@code allow_any_host},
 * host credentials, the ANA state of each group on each port.
 * One piece of code per operation; the front ends only translate parameters and errors.
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
                ports.add(withSubsystems(p, subs));
            }
        }
        if (ports.isEmpty() && !closed.isEmpty()) {
            // The configuration needs a port: the last one stays, exporting nothing (it still answers discovery).
            int keep = closed.remove(closed.size() - 1);
            PortConfig last = current.ports().stream().filter(p -> p.portId() == keep).findFirst().orElseThrow();
            ports.add(withSubsystems(last, List.of()));
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
        SubsystemConfig s = requireSubsystem(nqn);
        if (s.allowedHosts().contains(host)) {
            throw new ControlException(ControlException.Kind.EXISTS, "host " + host + " is already allowed on " + nqn);
        }
        List<String> hosts = new ArrayList<>(s.allowedHosts());
        hosts.add(host);
        List<String> known = new ArrayList<>(current.hosts());
        if (!known.contains(host)) {
            known.add(host);
        }
        TargetConfig replaced = replace(nqn, old -> withHosts(old, hosts));
        TargetConfig next = validate(replaced.withModel(known, replaced.ports(), replaced.subsystems()));
        daemon.model().subsystem(nqn).addAllowedHost(host);
        discoveryChanged();
        commitOrUndo(who, "allow host " + host + " on " + nqn, next, () -> {
            daemon.model().subsystem(nqn).removeAllowedHost(host);
            discoveryChanged();
        });
    }

    /**
     * Removes a host from a subsystem's allowed hosts: its next Connect is refused; its controllers stay until they
     * disconnect, as with the Linux target and SPDK.
     */
    public synchronized void removeHost(String who, String nqn, String host) throws ControlException {
        SubsystemConfig s = requireSubsystem(nqn);
        if (!s.allowedHosts().contains(host)) {
            throw new ControlException(ControlException.Kind.NOT_FOUND, "host " + host
                + " is not on the allowed list of " + nqn);
        }
        List<String> hosts = new ArrayList<>(s.allowedHosts());
        hosts.remove(host);
        TargetConfig next = validate(replace(nqn, old -> withHosts(old, hosts)));
        commit(who, "disallow host " + host + " on " + nqn, next);
        daemon.model().subsystem(nqn).removeAllowedHost(host);
        discoveryChanged();
    }

    /**
     * Sets ({@code dhchap}: the configuration's {@code hosts[].dhchap} object) or removes (null) a host's DH-HMAC-CHAP
     * credentials, persisted as {@code hosts[].dhchap}: a key rotated live survives a restart. Takes effect at the
     * host's next Connect or re-authentication. Returns the credentials now in force (null: none).
     */
    public synchronized DhchapCredentials setDhchap(String who, String host, JsonNode dhchap) throws ControlException {
        ObjectNode doc = (ObjectNode) ConfigWriter.write(current, document);
        ObjectNode entry = hostEntry(doc, host);
        // One place for the settings: the configfs-named keys would otherwise clash with (or outlive) the object.
        for (String f : List.of("key", "ctrl_key", "hash", "dhgroup")) {
            entry.remove("dhchap_" + f);
        }
        if (dhchap == null) {
            entry.remove("dhchap");
        } else {
            entry.set("dhchap", dhchap.deepCopy());
        }
        TargetConfig next = parse(doc);
        DhchapCredentials before = daemon.registry().hostKeys().get(host);
        DhchapCredentials after = next.hostCredentials().get(host);
        daemon.setHostCredentials(host, after);
        commitOrUndo(who, (after == null ? "remove" : "set") + " DH-HMAC-CHAP credentials of host " + host, next, doc,
            () -> daemon.setHostCredentials(host, before));
        return after;
    }

    /**
     * Sets, rotates ({@code key}: the interchange format {@code NVMeTLSkey-1:01|02:...:}) or removes (null) a host's
     * TLS PSK, persisted as {@code hosts[].tls_key} (and {@code tls_psk_derivation}, null: the default). TLS
     * handshakes from then on use the new key and refuse the old one; established connections go on. Returns the
     * key now in force (null: none).
     */
    public synchronized io.nvmeof4j.tcp.tls.HostPskStore.HostPsk setTlsKey(String who, String host, String key,
                                                                          String derivation) throws ControlException {
        ObjectNode doc = (ObjectNode) ConfigWriter.write(current, document);
        ObjectNode entry = hostEntry(doc, host);
        entry.remove(List.of("tls_key", "tls_psk_derivation"));
        if (key != null) {
            entry.put("tls_key", key);
            if (derivation != null) {
                entry.put("tls_psk_derivation", derivation);
            }
        }
        TargetConfig next = parse(doc);
        io.nvmeof4j.tcp.tls.HostPskStore.HostPsk before = daemon.tlsKey(host);
        io.nvmeof4j.tcp.tls.HostPskStore.HostPsk after = next.tlsKeys().get(host);
        daemon.setTlsKey(host, after);
        commitOrUndo(who, (after == null ? "remove" : "set") + " the TLS PSK of host " + host, next, doc,
            () -> daemon.setTlsKey(host, before));
        return after;
    }

    /** The {@code hosts[]} object of {@code host} in {@code doc} (the last if listed twice), added if there is none. */
    private static ObjectNode hostEntry(ObjectNode doc, String host) {
        ArrayNode hosts = doc.withArray("hosts");
        ObjectNode entry = null;
        for (JsonNode h : hosts) {
            if (h instanceof ObjectNode o && host.equals(o.path("nqn").asText())) {
                entry = o;
            }
        }
        return entry != null ? entry : hosts.addObject().put("nqn", host);
    }

    // ------------------------------------------------------------------------------------------------ namespaces

    /**
     * Adds a namespace (parsed from a configuration-shaped object by the caller). A file or block device must lie
     * inside {@code allowed_paths}; RAM must fit the budget (both checked by the daemon before anything is opened).
     */
    public synchronized Namespace addNamespace(String who, String nqn, NamespaceConfig nc) throws ControlException {
        SubsystemConfig s = requireSubsystem(nqn);
        if (s.maxNamespaces() > 0 && Integer.compareUnsigned(nc.nsid(), s.maxNamespaces()) > 0) {
            // SPDK: "Cannot add namespace with nsid N > max_nsid M".
            throw new ControlException(ControlException.Kind.INVALID, "cannot add namespace with nsid "
                + Integer.toUnsignedString(nc.nsid()) + " > max_namespaces " + s.maxNamespaces() + " of " + nqn);
        }
        for (NamespaceConfig n : s.namespaces()) {
            if (n.nsid() == nc.nsid()) {
                throw new ControlException(ControlException.Kind.EXISTS, "subsystem " + nqn + " already has namespace "
                    + Integer.toUnsignedString(nc.nsid()));
            }
        }
        // Not validated against the file's rules before the daemon has checked allowed_paths: validating looks at
        // the file, and a refusal must say nothing about what lies outside the allowed directories. The daemon
        // checks confinement and the RAM budget first, then opens; the whole configuration is validated after.
        Namespace added;
        try {
            added = daemon.addNamespace(nqn, nc);
        } catch (NamespaceRefusedException e) {
            throw new ControlException(switch (e.reason()) {
                case PATH_NOT_ALLOWED -> ControlException.Kind.FORBIDDEN;
                case LARGER_THAN_BUDGET -> ControlException.Kind.INVALID;
                case BUDGET_EXHAUSTED -> ControlException.Kind.NO_SPACE;
            }, e.getMessage());
        } catch (ConfigException e) {
            throw new ControlException(ControlException.Kind.INVALID, e.getMessage());
        } catch (IllegalStateException e) {
            throw new ControlException(ControlException.Kind.EXISTS, e.getMessage());
        } catch (IllegalArgumentException e) {
            throw new ControlException(ControlException.Kind.NOT_FOUND, e.getMessage());
        } catch (IOException e) {
            throw new ControlException(ControlException.Kind.IO, e.getMessage(), e);
        }
        // Persist the file the daemon opened (every symlink resolved), as checked against allowed_paths.
        NamespaceConfig persisted = nc;
        if (nc.path() != null) {
            try {
                persisted = nc.withPath(nc.path().toRealPath());
            } catch (IOException e) {
                persisted = nc;
            }
        }
        List<NamespaceConfig> finalList = new ArrayList<>(s.namespaces());
        finalList.add(persisted);
        TargetConfig next;
        try {
            next = validate(replace(nqn, old -> withNamespaces(old, finalList)));
        } catch (ControlException e) {
            daemon.removeNamespace(nqn, nc.nsid());
            throw e;
        }
        commitOrUndo(who, "add namespace " + Integer.toUnsignedString(nc.nsid()) + " to " + nqn, next,
            () -> daemon.removeNamespace(nqn, nc.nsid()));
        return added;
    }

    /** Removes a namespace; returns it. */
    public synchronized Namespace removeNamespace(String who, String nqn, int nsid) throws ControlException {
        SubsystemConfig s = requireSubsystem(nqn);
        List<NamespaceConfig> namespaces = new ArrayList<>(s.namespaces());
        if (!namespaces.removeIf(n -> n.nsid() == nsid)) {
            throw new ControlException(ControlException.Kind.NOT_FOUND, "subsystem " + nqn + " has no namespace "
                + Integer.toUnsignedString(nsid));
        }
        TargetConfig next = validate(replace(nqn, old -> withNamespaces(old, namespaces)));
        commit(who, "remove namespace " + Integer.toUnsignedString(nsid) + " from " + nqn, next);
        return daemon.removeNamespace(nqn, nsid);
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
        SubsystemConfig s = requireSubsystem(nqn);
        NamespaceConfig nc = s.namespaces().stream().filter(n -> n.nsid() == nsid && n.enabled()).findFirst()
            .orElseThrow(() -> new ControlException(ControlException.Kind.NOT_FOUND, "subsystem " + nqn
                + " has no namespace " + Integer.toUnsignedString(nsid)));
        Namespace live = daemon.model().subsystem(nqn).namespace(nsid);
        if (live == null) {
            throw new ControlException(ControlException.Kind.NOT_FOUND, "subsystem " + nqn + " has no namespace "
                + Integer.toUnsignedString(nsid));
        }
        long before = live.blockCount() * live.blockSize();
        switch (nc.backend()) {
            case RAM -> throw new ControlException(ControlException.Kind.INVALID, "namespace "
                + Integer.toUnsignedString(nsid) + " of " + nqn + " is RAM, which cannot be resized");
            case NULL -> {
                if (sizeBytes <= 0) {
                    throw new ControlException(ControlException.Kind.INVALID, "a null namespace needs its new size");
                }
            }
            default -> {
            }
        }
        if (sizeBytes > 0 && sizeBytes < before) {
            throw new ControlException(ControlException.Kind.INVALID, "namespace " + Integer.toUnsignedString(nsid)
                + " of " + nqn + " has " + before + " bytes; shrinking to " + sizeBytes + " is refused (only growing)");
        }
        if (sizeBytes > 0 && sizeBytes % live.blockSize() != 0) {
            throw new ControlException(ControlException.Kind.INVALID, "size " + sizeBytes
                + " is not a multiple of the block size " + live.blockSize());
        }
        long after;
        try {
            after = daemon.resizeNamespace(nqn, nsid, sizeBytes);
        } catch (UnsupportedOperationException | IllegalArgumentException e) {
            throw new ControlException(ControlException.Kind.INVALID, e.getMessage());
        } catch (io.nvmeof4j.jni.NativeIoException e) {
            throw new ControlException(e.errno() == 16 ? ControlException.Kind.BUSY : ControlException.Kind.INVALID,
                "namespace " + Integer.toUnsignedString(nsid) + " of " + nqn + ": " + (e.errno() == 16
                    ? "the file or device is smaller than the namespace now; shrinking is refused"
                    : e.getMessage()), e);
        } catch (IOException e) {
            throw new ControlException(ControlException.Kind.IO, e.getMessage(), e);
        }
        // A file namespace sized by its file stays so; one with a configured size keeps the new size.
        NamespaceConfig resized = nc.withSize(nc.backend() == io.nvmeof4j.target.config.BackendType.FILE
            && nc.sizeBytes() == 0 ? 0 : after);
        List<NamespaceConfig> list = new ArrayList<>();
        for (NamespaceConfig n : s.namespaces()) {
            list.add(n.nsid() == nsid ? resized : n);
        }
        Runnable undo = () -> {
            try {
                daemon.resizeNamespace(nqn, nsid, before);
            } catch (IOException e) {
                throw new IllegalStateException("cannot restore the size " + before + ": " + e.getMessage(), e);
            }
        };
        TargetConfig next;
        try {
            next = validate(replace(nqn, old -> withNamespaces(old, list)));
        } catch (ControlException e) {
            undo.run();
            throw e;
        }
        commitOrUndo(who, "resize namespace " + Integer.toUnsignedString(nsid) + " of " + nqn + " to " + after
            + " bytes", next, undo);
        if (after != before) {
            daemon.registry().notifyNamespaceChanged(nqn, nsid);
        }
        return after;
    }

    /**
     * Sets a namespace's QoS rate limits (all four; {@link QosLimits#NONE} removes them): written, then applied to the
     * running namespace, whose I/O follows at once. Returns the namespace's configuration as persisted.
     */
    public synchronized NamespaceConfig setQos(String who, String nqn, int nsid, QosLimits limits)
        throws ControlException {
        SubsystemConfig s = requireSubsystem(nqn);
        List<NamespaceConfig> namespaces = new ArrayList<>();
        NamespaceConfig changed = null;
        for (NamespaceConfig n : s.namespaces()) {
            if (n.nsid() == nsid) {
                changed = n.withQos(limits);
                namespaces.add(changed);
            } else {
                namespaces.add(n);
            }
        }
        if (changed == null) {
            throw new ControlException(ControlException.Kind.NOT_FOUND, "subsystem " + nqn + " has no namespace "
                + Integer.toUnsignedString(nsid));
        }
        TargetConfig next = validate(replace(nqn, old -> withNamespaces(old, namespaces)));
        commit(who, "set QoS of namespace " + Integer.toUnsignedString(nsid) + " of " + nqn + ": " + limits, next);
        if (changed.enabled()) {
            daemon.setQos(nqn, nsid, limits); // cannot fail: the namespace is live and changes are serialised
        }
        return changed;
    }

    // ------------------------------------------------------------------------------------------------ listeners

    /**
     * Lets hosts reach a subsystem at an address: the port already serving the address exports it too, or a new
     * port is bound (the next free PORTID). A new port asked for service id 0 is persisted with the port it got.
     */
    public synchronized PortConfig addListener(String who, String nqn, TransportType trtype, AddressFamily adrfam,
                                               String traddr, String trsvcid) throws ControlException {
        requireSubsystem(nqn);
        // Service id 0 asks for a new port on any free port number, never for a port configured with 0.
        PortConfig existing = "0".equals(trsvcid) ? null : findPort(trtype, traddr, trsvcid);
        if (existing != null) {
            if (existing.subsystems().contains(nqn)) {
                throw new ControlException(ControlException.Kind.EXISTS, "subsystem " + nqn + " already listens on "
                    + existing.address());
            }
            List<String> subs = new ArrayList<>(existing.subsystems());
            subs.add(nqn);
            TargetConfig next = validate(replacePort(withSubsystems(existing, subs)));
            Set<String> before = new LinkedHashSet<>(daemon.model().port(existing.portId()).subsystems());
            daemon.exportOnPort(existing.portId(), new LinkedHashSet<>(subs));
            commitOrUndo(who, "add listener " + existing.address() + " to " + nqn, next,
                () -> daemon.exportOnPort(existing.portId(), before));
            return next.ports().stream().filter(p -> p.portId() == existing.portId()).findFirst().orElseThrow();
        }
        int portId = FIRST_LIVE_PORTID;
        for (PortConfig p : current.ports()) {
            portId = Math.max(portId, p.portId() + 1);
        }
        ObjectNode doc = (ObjectNode) ConfigWriter.write(current, document);
        ObjectNode port = doc.withArray("ports").addObject();
        port.put("portid", portId);
        ObjectNode addr = port.putObject("addr");
        addr.put("trtype", trtype.configName());
        addr.put("adrfam", adrfam.configName());
        addr.put("traddr", traddr);
        addr.put("trsvcid", trsvcid);
        addr.put("treq", "not specified");
        port.putArray("subsystems").add(nqn);
        TargetConfig parsed = parse(doc);
        int id = portId;
        // A target-wide referral (SPDK's nvmf_discovery_add_referral puts it on every port) is on the new port too.
        PortConfig pc = parsed.ports().stream().filter(p -> p.portId() == id).findFirst().orElseThrow()
            .withReferrals(referralsOnEveryPort());
        Port bound;
        try {
            bound = daemon.addPort(pc);
        } catch (IOException e) {
            throw new ControlException(ControlException.Kind.IO, "cannot listen on " + pc.address() + ": "
                + e.getMessage(), e);
        }
        PortConfig persisted = new PortConfig(pc.where(), pc.portId(), pc.address().withPort(bound.address().port()),
            pc.treq(), pc.options(), pc.subsystems(), pc.anaGroups(), pc.referrals());
        TargetConfig next;
        try {
            next = validate(replacePort(parsed, persisted));
        } catch (ControlException e) {
            daemon.removePort(id);
            throw e;
        }
        commitOrUndo(who, "add listener " + bound.address() + " to " + nqn, next, () -> daemon.removePort(id));
        return persisted;
    }

    /**
     * Stops a subsystem being reachable at an address: hosts connected to it through that port are disconnected;
     * a port left exporting nothing is closed.
     */
    public synchronized void removeListener(String who, String nqn, TransportType trtype, String traddr,
                                            String trsvcid) throws ControlException {
        requireSubsystem(nqn);
        PortConfig port = findPort(trtype, traddr, trsvcid);
        if (port == null || !port.subsystems().contains(nqn)) {
            throw new ControlException(ControlException.Kind.NOT_FOUND, "subsystem " + nqn + " has no listener "
                + trtype.configName() + " " + traddr + ":" + trsvcid);
        }
        List<String> subs = new ArrayList<>(port.subsystems());
        subs.remove(nqn);
        // A port left exporting nothing is closed, unless it is the last (the configuration needs one).
        boolean close = subs.isEmpty() && current.ports().size() > 1;
        TargetConfig next;
        if (close) {
            List<PortConfig> ports = new ArrayList<>(current.ports());
            ports.removeIf(p -> p.portId() == port.portId());
            next = validate(current.withModel(current.hosts(), ports, current.subsystems()));
        } else {
            next = validate(replacePort(withSubsystems(port, subs)));
        }
        commit(who, "remove listener " + port.address() + " from " + nqn, next);
        if (close) {
            daemon.removePort(port.portId());
        } else {
            daemon.exportOnPort(port.portId(), new LinkedHashSet<>(subs));
        }
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

    // ------------------------------------------------------------------------------------------------ referrals

    /**
     * Adds a referral: discovery logs read through port {@code portId} (-1: every port, as SPDK's target-wide
     * {@code nvmf_discovery_add_referral}) list {@code referral} from now on; connected discovery controllers get the
     * discovery log change event. A name already used on a port gets a suffix ({@code -2}, ...).
     *
     * @return the referral as added (to the first port)
     */
    public synchronized ReferralConfig addReferral(String who, int portId, ReferralConfig referral)
        throws ControlException {
        List<PortConfig> targets = referralPorts(portId);
        List<PortConfig> ports = new ArrayList<>();
        ReferralConfig first = null;
        for (PortConfig p : current.ports()) {
            if (!targets.contains(p)) {
                ports.add(p);
                continue;
            }
            for (ReferralConfig r : p.referrals()) {
                if (r.sameTarget(referral)) {
                    throw new ControlException(ControlException.Kind.EXISTS, "port " + p.portId() + " already refers "
                        + "to " + referral.address() + " " + referral.subnqn() + " (referral " + r.name() + ")");
                }
            }
            String name = referral.name();
            for (int n = 2; hasReferralNamed(p, name); n++) {
                name = referral.name() + "-" + n;
            }
            ReferralConfig added = new ReferralConfig(name, referral.portId(), referral.enabled(), referral.address(),
                referral.treq(), referral.subnqn());
            first = first == null ? added : first;
            List<ReferralConfig> list = new ArrayList<>(p.referrals());
            list.add(added);
            ports.add(p.withReferrals(list));
        }
        TargetConfig next = validate(current.withModel(current.hosts(), ports, current.subsystems()));
        TargetConfig before = current;
        applyReferrals(next);
        commitOrUndo(who, "add referral to " + referral.address() + " " + referral.subnqn() + " on "
            + (portId < 0 ? "every port" : "port " + portId), next, () -> applyReferrals(before));
        return first;
    }

    /**
     * Removes the referrals of port {@code portId} (-1: every port) that {@code match} selects: written, then taken
     * out of the discovery logs (discovery log change event).
     *
     * @return how many were removed (at least one)
     */
    public synchronized int removeReferral(String who, int portId, java.util.function.Predicate<ReferralConfig> match,
                                           String what) throws ControlException {
        List<PortConfig> targets = referralPorts(portId);
        List<PortConfig> ports = new ArrayList<>();
        int removed = 0;
        for (PortConfig p : current.ports()) {
            if (!targets.contains(p)) {
                ports.add(p);
                continue;
            }
            List<ReferralConfig> list = new ArrayList<>(p.referrals());
            int before = list.size();
            list.removeIf(match);
            removed += before - list.size();
            ports.add(p.withReferrals(list));
        }
        if (removed == 0) {
            throw new ControlException(ControlException.Kind.NOT_FOUND, "no referral " + what + " on "
                + (portId < 0 ? "any port" : "port " + portId));
        }
        TargetConfig next = validate(current.withModel(current.hosts(), ports, current.subsystems()));
        commit(who, "remove referral " + what + " from " + (portId < 0 ? "every port" : "port " + portId), next);
        applyReferrals(next);
        return removed;
    }

    /** The referrals every port has (what SPDK's target-wide calls added): each once, as the first port has it. */
    public synchronized List<ReferralConfig> referralsOnEveryPort() {
        List<ReferralConfig> common = new ArrayList<>();
        List<PortConfig> ports = current.ports();
        if (ports.isEmpty()) {
            return common;
        }
        for (ReferralConfig r : ports.get(0).referrals()) {
            if (ports.stream().allMatch(p -> p.referrals().stream().anyMatch(r::sameTarget))) {
                common.add(r);
            }
        }
        return common;
    }

    private List<PortConfig> referralPorts(int portId) throws ControlException {
        if (portId < 0) {
            return current.ports();
        }
        for (PortConfig p : current.ports()) {
            if (p.portId() == portId) {
                return List.of(p);
            }
        }
        throw new ControlException(ControlException.Kind.NOT_FOUND, "no port " + portId);
    }

    private static boolean hasReferralNamed(PortConfig p, String name) {
        return p.referrals().stream().anyMatch(r -> r.name().equals(name));
    }

    /** Serves each port's referrals as {@code config} has them (ports not served, e.g. RDMA without RDMA: skipped). */
    private void applyReferrals(TargetConfig config) {
        for (PortConfig p : config.ports()) {
            if (daemon.model().port(p.portId()) != null) {
                daemon.setReferrals(p.portId(), p.referrals());
            }
        }
    }

    // ------------------------------------------------------------------------------------------------ ANA

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
        if (states.isEmpty()) {
            throw new ControlException(ControlException.Kind.INVALID, "no ANA group given");
        }
        for (var e : states.entrySet()) {
            if (e.getKey() < 1 || e.getKey() > PortConfig.ANA_GROUP_MAX) {
                throw new ControlException(ControlException.Kind.INVALID, "ANA group " + e.getKey() + " is not in 1.."
                    + PortConfig.ANA_GROUP_MAX);
            }
            if (!AnaState.isValid(e.getValue())) {
                throw new ControlException(ControlException.Kind.INVALID, "not an ANA state: " + e.getValue());
            }
        }
        PortConfig port = current.ports().stream().filter(p -> p.portId() == portId).findFirst()
            .orElseThrow(() -> new ControlException(ControlException.Kind.NOT_FOUND, "no port " + portId));
        Port live = daemon.model().port(portId);
        if (live == null) {
            throw new ControlException(ControlException.Kind.NOT_FOUND, "port " + portId + " is not served");
        }
        java.util.Map<Integer, Integer> previous = new java.util.TreeMap<>();
        java.util.Map<Integer, Integer> groups = new java.util.TreeMap<>(port.anaGroups());
        StringBuilder what = new StringBuilder("port ").append(portId).append(" ANA");
        for (var e : new java.util.TreeMap<>(states).entrySet()) {
            previous.put(e.getKey(), live.ana().state(e.getKey()));
            groups.put(e.getKey(), e.getValue());
            what.append(" group ").append(e.getKey()).append(' ').append(AnaState.name(previous.get(e.getKey())))
                .append(" -> ").append(AnaState.name(e.getValue()));
        }
        TargetConfig next = validate(replacePort(new PortConfig(port.where(), port.portId(), port.address(),
            port.treq(), port.options(), port.subsystems(), groups, port.referrals())));
        commit(who, what.toString(), next);
        states.forEach((group, state) -> daemon.setAnaState(portId, group, state));
        return previous;
    }

    /** The port through which {@code nqn} listens at an address (SPDK names a listener by its address). */
    public synchronized PortConfig listener(String nqn, TransportType trtype, String traddr, String trsvcid)
        throws ControlException {
        requireSubsystem(nqn);
        PortConfig port = findPort(trtype, traddr, trsvcid);
        if (port == null || !port.subsystems().contains(nqn)) {
            throw new ControlException(ControlException.Kind.NOT_FOUND, "subsystem " + nqn + " has no listener "
                + trtype.configName() + " " + traddr + ":" + trsvcid);
        }
        return port;
    }

    // ------------------------------------------------------------------------------------------------ helpers

    private PortConfig findPort(TransportType trtype, String traddr, String trsvcid) {
        for (PortConfig p : current.ports()) {
            if (p.address().type() == trtype && p.address().traddr().equals(traddr)
                && p.address().trsvcid().equals(trsvcid)) {
                return p;
            }
        }
        // A port configured with service id 0 is matched by the port it was bound to.
        for (Port p : daemon.model().ports()) {
            if (p.address().type() == trtype && p.address().traddr().equals(traddr)
                && p.address().trsvcid().equals(trsvcid)) {
                for (PortConfig pc : current.ports()) {
                    if (pc.portId() == p.portId()) {
                        return pc;
                    }
                }
            }
        }
        return null;
    }

    private SubsystemConfig requireSubsystem(String nqn) throws ControlException {
        return current.subsystem(nqn).orElseThrow(() -> new ControlException(ControlException.Kind.NOT_FOUND,
            "no subsystem " + nqn));
    }

    private TargetConfig replace(String nqn, UnaryOperator<SubsystemConfig> change) {
        List<SubsystemConfig> list = new ArrayList<>();
        for (SubsystemConfig s : current.subsystems()) {
            list.add(s.nqn().equals(nqn) ? change.apply(s) : s);
        }
        return current.withModel(current.hosts(), current.ports(), list);
    }

    private TargetConfig replacePort(PortConfig port) {
        return replacePort(current, port);
    }

    private static TargetConfig replacePort(TargetConfig config, PortConfig port) {
        List<PortConfig> list = new ArrayList<>();
        for (PortConfig p : config.ports()) {
            list.add(p.portId() == port.portId() ? port : p);
        }
        return config.withModel(config.hosts(), list, config.subsystems());
    }

    private static PortConfig withSubsystems(PortConfig p, List<String> subsystems) {
        return new PortConfig(p.where(), p.portId(), p.address(), p.treq(), p.options(), subsystems, p.anaGroups(),
            p.referrals());
    }

    private static SubsystemConfig withHosts(SubsystemConfig s, List<String> hosts) {
        return new SubsystemConfig(s.nqn(), s.allowAnyHost(), hosts, s.serial(), s.model(), s.firmware(), s.version(),
            s.cntlidMin(), s.cntlidMax(), s.qidMax(), s.namespaces(), s.maxNamespaces());
    }

    private static SubsystemConfig withNamespaces(SubsystemConfig s, List<NamespaceConfig> namespaces) {
        return new SubsystemConfig(s.nqn(), s.allowAnyHost(), s.allowedHosts(), s.serial(), s.model(), s.firmware(),
            s.version(), s.cntlidMin(), s.cntlidMax(), s.qidMax(), namespaces, s.maxNamespaces());
    }

    /** Writes and parses {@code next} again: what would be persisted is what the daemon starts from. */
    private TargetConfig validate(TargetConfig next) throws ControlException {
        return parse(ConfigWriter.write(next, document));
    }

    private TargetConfig parse(JsonNode doc) throws ControlException {
        try {
            return TargetConfig.parseQuietly(ConfigWriter.text(doc), baseDirectory);
        } catch (ConfigException e) {
            throw new ControlException(ControlException.Kind.INVALID, e.getMessage(), e);
        }
    }

    /** Persists {@code next} (a removal, not yet applied); refused, with nothing changed, when it cannot be. */
    private void commit(String who, String what, TargetConfig next) throws ControlException {
        commit(who, what, next, document);
    }

    /** As {@link #commit(String, String, TargetConfig)}, keeping what {@code base} holds beyond the model. */
    private void commit(String who, String what, TargetConfig next, JsonNode base) throws ControlException {
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
    private void commitOrUndo(String who, String what, TargetConfig next, Runnable undo) throws ControlException {
        commitOrUndo(who, what, next, document, undo);
    }

    private void commitOrUndo(String who, String what, TargetConfig next, JsonNode base, Runnable undo)
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

    private void discoveryChanged() {
        daemon.model().discoveryChanged();
        daemon.registry().notifyDiscoveryChanged();
    }
}
