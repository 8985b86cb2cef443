package io.nvmeof4j.target.control.rpc;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.BooleanNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.nvmeof4j.protocol.ana.AnaState;
import io.nvmeof4j.protocol.spi.AddressFamily;
import io.nvmeof4j.protocol.spi.TransportType;
import io.nvmeof4j.target.backend.QosLimits;
import io.nvmeof4j.target.config.BuildVersion;
import io.nvmeof4j.target.config.ConfigException;
import io.nvmeof4j.target.config.NamespaceConfig;
import io.nvmeof4j.target.config.SubsystemConfig;
import io.nvmeof4j.target.config.TargetConfig;
import io.nvmeof4j.target.control.ControlException;
import io.nvmeof4j.target.control.ControlPlane;
import io.nvmeof4j.target.controller.Controller;
import io.nvmeof4j.target.controller.QueueInfo;
import io.nvmeof4j.target.daemon.TargetDaemon;
import io.nvmeof4j.target.model.Port;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.UUID;

/**
 * SPDK's JSON-RPC methods ({@code doc/jsonrpc.md}, {@code python/spdk/rpc/nvmf.py} and {@code bdev.py}) over the
 * {@link ControlPlane}: parameter names, defaults and result shapes as SPDK's, so {@code scripts/rpc.py} drives the
 * daemon unchanged. Unknown parameters are refused with -32602, as SPDK's strict decoders do.
 *
 * <h2>Bdevs</h2>
 * As in SPDK, a namespace is made from a named block device ("bdev") that exists first: {@code bdev_malloc_create}
 * (RAM), {@code bdev_null_create}, {@code bdev_uring_create} and {@code bdev_aio_create} (a file or block device,
 * both served by the daemon's io_uring backend) only register a name and a description; the device is opened when
 * {@code nvmf_subsystem_add_ns} uses it, with the checks of every live namespace ({@code allowed_paths}, the RAM
 * budget). A bdev serves at most one namespace; deleting a bdev a namespace uses is refused (-EBUSY). The registry
 * is live: a namespace is persisted in the configuration file, an unused bdev is not (it is gone after a restart).
 */
final class SpdkRpcMethods {
    /** The SPDK release whose RPC interface this follows, reported by {@code spdk_get_version}. */
    static final String SPDK_COMPATIBLE = "24.01";
    private static final int MAX_NAMESPACES_DEFAULT = 32;

    interface Method {
        JsonNode call(String who, JsonNode params) throws RpcError;
    }

    /** A registered bdev: the namespace device it becomes, and who uses it. */
    private record Bdev(String name, String productName, String backend, String path, long numBlocks, int blockSize,
                        UUID uuid) {
    }

    private final TargetDaemon daemon;
    private final ControlPlane control;
    private final ObjectMapper mapper = new ObjectMapper();
    private final Map<String, Method> methods = new LinkedHashMap<>();
    private final Map<String, Bdev> bdevs = new TreeMap<>();
    /** bdev name → "nqn nsid" of the namespace using it. */
    private final Map<String, String> claims = new TreeMap<>();
    /**
     * QoS limits of bdevs no namespace uses (a namespace's are in its configuration): applied when a namespace is
     * made from the bdev, and kept when the namespace is removed, as SPDK keeps them on the bdev.
     */
    private final Map<String, QosLimits> unclaimedQos = new TreeMap<>();
    private int nextMalloc;

    /** One instance (one bdev registry) per control plane: the socket and --json's replay share it. */
    private static final Map<ControlPlane, SpdkRpcMethods> INSTANCES = new java.util.WeakHashMap<>();

    static SpdkRpcMethods of(TargetDaemon daemon) {
        synchronized (INSTANCES) {
            return INSTANCES.computeIfAbsent(daemon.controlPlane(), c -> new SpdkRpcMethods(daemon, c));
        }
    }

    private SpdkRpcMethods(TargetDaemon daemon, ControlPlane control) {
        this.daemon = daemon;
        this.control = control;
        methods.put("spdk_get_version", (w, p) -> version(p));
        methods.put("rpc_get_methods", (w, p) -> getMethods(p));
        methods.put("framework_wait_init", (w, p) -> noParams(p, BooleanNode.TRUE));
        methods.put("save_config", (w, p) -> saveConfig(p));
        // What rpc.py's save_config calls: the sections, then each section's calls.
        methods.put("framework_get_subsystems", (w, p) -> frameworkSubsystems(p));
        methods.put("framework_get_config", (w, p) -> frameworkConfig(p));
        // Ours: the nvmetcli-shaped configuration (--config's format) of what is served now.
        methods.put("nvmeof4j_get_config", (w, p) -> noParams(p, control.document()));
        methods.put("nvmf_get_transports", (w, p) -> getTransports(p));
        methods.put("nvmf_create_transport", (w, p) -> createTransport(p));
        methods.put("nvmf_get_subsystems", (w, p) -> getSubsystems(p));
        methods.put("nvmf_create_subsystem", this::createSubsystem);
        methods.put("nvmf_delete_subsystem", this::deleteSubsystem);
        methods.put("nvmf_subsystem_add_listener", this::addListener);
        methods.put("nvmf_subsystem_remove_listener", this::removeListener);
        methods.put("nvmf_subsystem_get_listeners", (w, p) -> getListeners(p));
        methods.put("nvmf_subsystem_listener_set_ana_state", this::setAnaState);
        methods.put("nvmf_subsystem_add_ns", this::addNamespace);
        methods.put("nvmf_subsystem_remove_ns", this::removeNamespace);
        methods.put("nvmf_subsystem_add_host", this::addHost);
        methods.put("nvmf_subsystem_remove_host", this::removeHost);
        methods.put("nvmf_subsystem_allow_any_host", this::allowAnyHost);
        methods.put("nvmf_subsystem_get_controllers", (w, p) -> getControllers(p));
        methods.put("nvmf_subsystem_get_qpairs", (w, p) -> getQpairs(p));
        methods.put("bdev_malloc_create", (w, p) -> createBdev(w, p, "malloc"));
        methods.put("bdev_malloc_delete", (w, p) -> deleteBdev(w, p, "malloc"));
        methods.put("bdev_null_create", (w, p) -> createBdev(w, p, "null"));
        methods.put("bdev_null_delete", (w, p) -> deleteBdev(w, p, "null"));
        methods.put("bdev_uring_create", (w, p) -> createBdev(w, p, "uring"));
        methods.put("bdev_uring_delete", (w, p) -> deleteBdev(w, p, "uring"));
        methods.put("bdev_aio_create", (w, p) -> createBdev(w, p, "aio"));
        methods.put("bdev_aio_delete", (w, p) -> deleteBdev(w, p, "aio"));
        methods.put("bdev_null_resize", this::resizeNullBdev);
        methods.put("bdev_aio_rescan", (w, p) -> rescanBdev(w, p, "aio"));
        methods.put("bdev_uring_rescan", (w, p) -> rescanBdev(w, p, "uring"));
        methods.put("bdev_get_bdevs", (w, p) -> getBdevs(p));
        methods.put("bdev_get_iostat", (w, p) -> getIostat(p));
        methods.put("bdev_set_qos_limit", this::setQosLimit);
        methods.put("nvmf_get_stats", (w, p) -> getStats(p));
        methods.put("nvmf_discovery_add_referral", this::addReferral);
        methods.put("nvmf_discovery_remove_referral", this::removeReferral);
        methods.put("nvmf_discovery_get_referrals", (w, p) -> getReferrals(p));
        // Namespaces served already (the configuration file's, or added before this socket opened) get their bdev,
        // named as save_config names them, so they can be listed, removed and saved like the ones added here.
        for (SubsystemConfig s : control.configuration().subsystems()) {
            for (NamespaceConfig n : s.namespaces()) {
                if (n.enabled()) {
                    String name = derivedBdevName(s.nqn(), n.nsid());
                    bdevs.put(name, new Bdev(name, n.backend() == io.nvmeof4j.target.config.BackendType.RAM
                        ? "Malloc disk" : n.backend() == io.nvmeof4j.target.config.BackendType.NULL ? "Null disk"
                        : "URING bdev", n.backend().configName(), n.path() == null ? null : n.path().toString(),
                        n.blockSize() == 0 ? 0 : n.sizeBytes() / n.blockSize(), n.blockSize(), n.uuid()));
                    claims.put(name, s.nqn() + " " + Integer.toUnsignedString(n.nsid()));
                }
            }
        }
        restoreBdevs(control.rpcBdevs());
    }

    /**
     * The registry as persisted ({@code "nvmeof4j": {"rpc_bdevs": [...]}}): unused bdevs come back, and a namespace
     * still served gets back the name its bdev had (instead of the derived one). Entries naming a namespace that is
     * gone, or that cannot be read, are skipped with a warning.
     */
    private void restoreBdevs(JsonNode persisted) {
        if (persisted == null) {
            return;
        }
        for (JsonNode e : persisted) {
            try {
                String name = e.get("name").asText();
                String kind = e.get("kind").asText();
                String claim = e.path("namespace").asText(null);
                Bdev bdev = new Bdev(name, switch (kind) {
                    case "malloc" -> "Malloc disk";
                    case "null" -> "Null disk";
                    case "aio" -> "AIO disk";
                    case "uring" -> "URING bdev";
                    default -> throw new IllegalArgumentException("kind " + kind);
                }, kind.equals("malloc") ? "ram" : kind.equals("null") ? "null" : "file",
                    e.hasNonNull("filename") ? e.get("filename").asText() : null, e.path("num_blocks").asLong(0),
                    e.path("block_size").asInt(0), UUID.fromString(e.get("uuid").asText()));
                if (claim != null) {
                    String derived = bdevOf(claim.substring(0, claim.lastIndexOf(' ')),
                        Integer.parseUnsignedInt(claim.substring(claim.lastIndexOf(' ') + 1)));
                    if (derived == null) {
                        org.slf4j.LoggerFactory.getLogger(SpdkRpcMethods.class).warn("bdev {}: namespace {} is not "
                            + "served any more; not restored", name, claim);
                        continue;
                    }
                    Bdev served = bdevs.remove(derived);
                    claims.remove(derived);
                    // The namespace is what is served: its size (a resize since) wins over the registry's.
                    bdev = new Bdev(name, bdev.productName(), bdev.backend(), bdev.path(),
                        served != null && served.numBlocks() > 0 ? served.numBlocks() : bdev.numBlocks(),
                        bdev.blockSize(), bdev.uuid());
                    claims.put(name, claim);
                }
                if (!bdevs.containsKey(name)) {
                    bdevs.put(name, bdev);
                    JsonNode q = e.get("qos");
                    if (claim == null && q != null) {
                        unclaimedQos.put(name, QosLimits.of(q.path(QosLimits.RW_IOS_PER_SEC).asLong(0),
                            q.path(QosLimits.RW_MBYTES_PER_SEC).asLong(0), q.path(QosLimits.R_MBYTES_PER_SEC).asLong(0),
                            q.path(QosLimits.W_MBYTES_PER_SEC).asLong(0)));
                    }
                }
            } catch (RuntimeException ex) {
                org.slf4j.LoggerFactory.getLogger(SpdkRpcMethods.class).warn("rpc_bdevs entry {} skipped: {}", e,
                    ex.toString());
            }
        }
    }

    /** Writes the registry to the configuration (see {@link ControlPlane#saveRpcBdevs}). */
    private void persistBdevs(String who, String what) throws ControlException {
        ArrayNode list = mapper.createArrayNode();
        for (Bdev b : bdevs.values()) {
            ObjectNode o = list.addObject();
            o.put("name", b.name());
            o.put("kind", kindOf(b));
            if (b.path() != null) {
                o.put("filename", b.path());
            } else {
                o.put("num_blocks", b.numBlocks());
            }
            o.put("block_size", b.blockSize());
            o.put("uuid", b.uuid().toString());
            if (claims.containsKey(b.name())) {
                o.put("namespace", claims.get(b.name()));
            } else if (unclaimedQos.containsKey(b.name())) {
                o.set("qos", assignedRateLimits(unclaimedQos.get(b.name()))); // a namespace's own are in its config
            }
        }
        control.saveRpcBdevs(who, what, list);
    }

    /** After a namespace change that succeeded: the bdev names are kept best effort (the namespace is persisted). */
    private void persistClaims(String who, String what) {
        try {
            persistBdevs(who, what);
        } catch (ControlException e) {
            org.slf4j.LoggerFactory.getLogger(SpdkRpcMethods.class).warn("{}: {} done, but the bdev names could not "
                + "be written ({}); after a restart its bdev has the derived name", who, what, e.getMessage());
        }
    }

    /** The bdev name of a namespace that was not made from a named bdev: the NQN's last part, "n", the NSID. */
    static String derivedBdevName(String nqn, int nsid) {
        return nqn.substring(nqn.lastIndexOf(':') + 1) + "n" + Integer.toUnsignedString(nsid);
    }

    /** The method, or null (the server answers -32601). */
    Method method(String name) {
        return methods.get(name);
    }

    /** True for the methods that change the target (audit-logged). */
    static boolean changes(String name) {
        return name.contains("create") || name.contains("delete") || name.contains("add") || name.contains("remove")
            || name.contains("allow") || name.contains("resize") || name.contains("rescan")
            || name.contains("_set_");
    }

    // ------------------------------------------------------------------------------------------------ framework

    private JsonNode version(JsonNode p) throws RpcError {
        params(p, Set.of());
        ObjectNode o = mapper.createObjectNode();
        o.put("version", "SPDK v" + SPDK_COMPATIBLE + " compatible (nvmeof4j " + BuildVersion.version() + ")");
        ObjectNode f = o.putObject("fields");
        f.put("major", 24);
        f.put("minor", 1);
        f.put("patch", 0);
        f.put("suffix", "-nvmeof4j");
        return o;
    }

    private JsonNode getMethods(JsonNode p) throws RpcError {
        params(p, Set.of("current", "include_aliases"));
        ArrayNode list = mapper.createArrayNode();
        methods.keySet().forEach(list::add);
        return list;
    }

    private static JsonNode noParams(JsonNode p, JsonNode result) throws RpcError {
        params(p, Set.of());
        return result;
    }

    private JsonNode getTransports(JsonNode p) throws RpcError {
        ObjectNode o = params(p, Set.of("trtype", "tgt_name"));
        ArrayNode list = mapper.createArrayNode();
        ObjectNode tcp = list.addObject();
        tcp.put("trtype", "TCP");
        tcp.put("max_queue_depth", io.nvmeof4j.protocol.spi.PortOptions.MAX_QUEUE_SIZE_DEFAULT);
        tcp.put("in_capsule_data_size", io.nvmeof4j.protocol.spi.PortOptions.INLINE_DATA_SIZE_DEFAULT);
        tcp.put("max_io_size", control.configuration().daemon().maxDataTransferSize());
        if (daemon.servesRdma()) {
            ObjectNode rdma = list.addObject();
            rdma.put("trtype", "RDMA");
            rdma.put("max_queue_depth", io.nvmeof4j.protocol.spi.PortOptions.MAX_QUEUE_SIZE_DEFAULT);
            rdma.put("in_capsule_data_size", io.nvmeof4j.target.config.PortConfig.RDMA_INLINE_DATA_SIZE_DEFAULT);
            rdma.put("max_io_size", control.configuration().daemon().maxDataTransferSize());
        }
        if (o.has("trtype")) {
            ArrayNode only = mapper.createArrayNode();
            for (JsonNode t : list) {
                if (t.get("trtype").asText().equalsIgnoreCase(o.get("trtype").asText())) {
                    only.add(t);
                }
            }
            return only;
        }
        return list;
    }

    /**
     * NVMe/TCP is always there: creating it again succeeds (scripts create it first thing). NVMe-oF/RDMA succeeds when
     * the machine has RDMA (the first RDMA listener gives the reactors their RDMA poll groups); otherwise -32602
     * naming why.
     */
    private JsonNode createTransport(JsonNode p) throws RpcError {
        ObjectNode o = p != null && p.isObject() ? (ObjectNode) p : null;
        if (o == null || !o.hasNonNull("trtype") || !o.get("trtype").isTextual()) {
            throw RpcError.invalidParams("trtype is required");
        }
        String trtype = o.get("trtype").asText();
        if ("rdma".equalsIgnoreCase(trtype)) {
            if (!daemon.servesRdma()) {
                throw new RpcError(RpcError.INVALID_PARAMS, "Transport type 'RDMA' not available: "
                    + daemon.rdmaUnavailableReason());
            }
            return BooleanNode.TRUE;
        }
        if (!"tcp".equalsIgnoreCase(trtype)) {
            throw new RpcError(RpcError.INVALID_PARAMS, "Transport type '" + trtype + "' not supported (TCP, RDMA)");
        }
        return BooleanNode.TRUE;
    }

    /**
     * SPDK's configuration shape ({@code {"subsystems": [{"subsystem": "bdev", "config": [{"method": ..., "params":
     * ...}]}, {"subsystem": "nvmf", ...}]}}): the calls that rebuild what is served, which {@code nvmf_tgt --json},
     * {@code rpc.py load_config} and {@code bin/nvmeof-target --json} replay. Each namespace gets its bdev: the name
     * it was added with, else one derived from the subsystem and NSID.
     */
    private JsonNode saveConfig(JsonNode p) throws RpcError {
        params(p, Set.of("subsystems"));
        ObjectNode root = mapper.createObjectNode();
        ArrayNode subsystems = root.putArray("subsystems");
        ObjectNode bdevSection = subsystems.addObject();
        bdevSection.put("subsystem", "bdev");
        ArrayNode bdevCalls = bdevSection.putArray("config");
        ObjectNode nvmfSection = subsystems.addObject();
        nvmfSection.put("subsystem", "nvmf");
        ArrayNode nvmfCalls = nvmfSection.putArray("config");
        call(nvmfCalls, "nvmf_create_transport").put("trtype", "TCP");
        // SPDK's referrals are target-wide: those on every port. (A referral an nvmetcli-shaped file puts on some
        // ports only has no SPDK equivalent and is left out.)
        for (io.nvmeof4j.target.config.ReferralConfig r : control.referralsOnEveryPort()) {
            ObjectNode rc = call(nvmfCalls, "nvmf_discovery_add_referral");
            rc.set("address", referralAddress(r));
            rc.put("secure_channel", r.secureChannel());
            if (!r.isDiscovery()) {
                rc.put("subnqn", r.subnqn());
            }
        }
        Set<String> saved = new java.util.HashSet<>();
        TargetConfig config = control.configuration();
        for (SubsystemConfig s : config.subsystems()) {
            ObjectNode c = call(nvmfCalls, "nvmf_create_subsystem");
            c.put("nqn", s.nqn());
            c.put("serial_number", s.serial());
            c.put("model_number", s.model());
            c.put("allow_any_host", s.allowAnyHost());
            c.put("min_cntlid", s.cntlidMin());
            c.put("max_cntlid", s.cntlidMax());
            // No limit of its own is written as the limit it has (SPDK reads 0 differently across versions).
            c.put("max_namespaces", s.maxNamespaces() > 0 ? s.maxNamespaces()
                : io.nvmeof4j.target.model.Subsystem.MAX_NSID);
            c.put("ana_reporting", true);
            for (Port port : daemon.model().ports()) {
                if (port.exports(s.nqn())) {
                    ObjectNode l = call(nvmfCalls, "nvmf_subsystem_add_listener");
                    l.put("nqn", s.nqn());
                    l.set("listen_address", address(port));
                    // SPDK's listeners start optimized in every group: the groups that are not get their state.
                    for (int g : anaGroups(port, s.nqn())) {
                        if (port.ana().state(g) != AnaState.OPTIMIZED) {
                            ObjectNode a = call(nvmfCalls, "nvmf_subsystem_listener_set_ana_state");
                            a.put("nqn", s.nqn());
                            a.set("listen_address", address(port));
                            a.put("ana_state", spdkAnaState(port.ana().state(g)));
                            a.put("anagrpid", g);
                        }
                    }
                }
            }
            for (String h : s.allowedHosts()) {
                ObjectNode hc = call(nvmfCalls, "nvmf_subsystem_add_host");
                hc.put("nqn", s.nqn());
                hc.put("host", h);
            }
            for (NamespaceConfig n : s.namespaces()) {
                if (!n.enabled()) {
                    continue;
                }
                String name = bdevOf(s.nqn(), n.nsid());
                if (name == null) {
                    name = derivedBdevName(s.nqn(), n.nsid());
                }
                saved.add(name);
                bdevCall(bdevCalls, name, n, bdevs.containsKey(name) ? kindOf(bdevs.get(name)) : null);
                qosCall(bdevCalls, name, n.qos());
                ObjectNode nc = call(nvmfCalls, "nvmf_subsystem_add_ns");
                nc.put("nqn", s.nqn());
                ObjectNode ns = nc.putObject("namespace");
                ns.put("nsid", Integer.toUnsignedLong(n.nsid()));
                ns.put("bdev_name", name);
                ns.put("uuid", n.uuid().toString());
                ns.put("nguid", n.nguidText().replace("-", "").toUpperCase(java.util.Locale.ROOT));
                ns.put("anagrpid", n.anaGroupId());
            }
        }
        for (Bdev b : bdevs.values()) {
            if (!saved.contains(b.name())) {
                ObjectNode c = call(bdevCalls, "bdev_" + kindOf(b) + "_create");
                c.put("name", b.name());
                if (b.path() != null) {
                    c.put("filename", b.path());
                } else {
                    c.put("num_blocks", b.numBlocks());
                    c.put("uuid", b.uuid().toString());
                }
                if (b.blockSize() > 0) {
                    c.put("block_size", b.blockSize());
                }
                qosCall(bdevCalls, b.name(), unclaimedQos.getOrDefault(b.name(), QosLimits.NONE));
            }
        }
        return root;
    }

    /** SPDK's save_config writes a bdev's limits right after the bdev, only those set ({@code bdev_qos_config_json}). */
    private void qosCall(ArrayNode calls, String bdev, QosLimits limits) {
        if (limits.none()) {
            return;
        }
        ObjectNode c = call(calls, "bdev_set_qos_limit");
        c.put("name", bdev);
        assignedRateLimits(limits).fields().forEachRemaining(e -> {
            if (e.getValue().asLong() > 0) {
                c.set(e.getKey(), e.getValue());
            }
        });
    }

    private JsonNode frameworkSubsystems(JsonNode p) throws RpcError {
        params(p, Set.of());
        ArrayNode list = mapper.createArrayNode();
        list.addObject().put("subsystem", "bdev").putArray("depends_on");
        ObjectNode nvmf = list.addObject().put("subsystem", "nvmf");
        nvmf.putArray("depends_on").add("bdev");
        return list;
    }

    private JsonNode frameworkConfig(JsonNode p) throws RpcError {
        ObjectNode o = params(p, Set.of("name", "with_batches"));
        String name = text(o, "name");
        for (JsonNode section : saveConfig(null).get("subsystems")) {
            if (section.get("subsystem").asText().equals(name)) {
                return section.get("config");
            }
        }
        throw RpcError.invalidParams("no subsystem " + name + " (bdev, nvmf)");
    }

    /** The call creating the bdev of namespace {@code n}; {@code kind} (aio, uring, ...) as it was created, or null. */
    private void bdevCall(ArrayNode calls, String name, NamespaceConfig n, String kind) {
        ObjectNode c;
        switch (n.backend()) {
            case RAM -> {
                c = call(calls, "bdev_malloc_create");
                c.put("num_blocks", n.sizeBytes() / n.blockSize());
            }
            case NULL -> {
                c = call(calls, "bdev_null_create");
                c.put("num_blocks", n.sizeBytes() / n.blockSize());
            }
            default -> {
                c = call(calls, "aio".equals(kind) ? "bdev_aio_create" : "bdev_uring_create");
                c.put("filename", n.path().toString());
            }
        }
        c.put("name", name);
        if (n.blockSize() > 0) {
            c.put("block_size", n.blockSize());
        }
    }

    private ObjectNode call(ArrayNode calls, String method) {
        ObjectNode c = calls.addObject();
        c.put("method", method);
        return c.putObject("params");
    }

    // ------------------------------------------------------------------------------------------------ subsystems

    private JsonNode getSubsystems(JsonNode p) throws RpcError {
        ObjectNode o = params(p, Set.of("nqn", "tgt_name"));
        TargetConfig config = control.configuration();
        ArrayNode list = mapper.createArrayNode();
        String only = o.has("nqn") ? text(o, "nqn") : null;
        if (only == null || Port.DISCOVERY_NQN.equals(only)) {
            ObjectNode d = list.addObject();
            d.put("nqn", Port.DISCOVERY_NQN);
            d.put("subtype", "Discovery");
            listenAddresses(d.putArray("listen_addresses"), Port.DISCOVERY_NQN);
            d.putArray("hosts");
            d.put("allow_any_host", true);
        }
        boolean found = only == null || Port.DISCOVERY_NQN.equals(only);
        for (SubsystemConfig s : config.subsystems()) {
            if (only != null && !only.equals(s.nqn())) {
                continue;
            }
            found = true;
            ObjectNode so = list.addObject();
            so.put("nqn", s.nqn());
            so.put("subtype", "NVMe");
            listenAddresses(so.putArray("listen_addresses"), s.nqn());
            so.put("allow_any_host", s.allowAnyHost());
            ArrayNode hosts = so.putArray("hosts");
            s.allowedHosts().forEach(h -> hosts.addObject().put("nqn", h));
            so.put("serial_number", s.serial());
            so.put("model_number", s.model());
            so.put("max_namespaces", s.maxNamespaces() > 0 ? s.maxNamespaces()
                : io.nvmeof4j.target.model.Subsystem.MAX_NSID);
            so.put("min_cntlid", s.cntlidMin());
            so.put("max_cntlid", s.cntlidMax());
            ArrayNode nss = so.putArray("namespaces");
            for (NamespaceConfig n : s.namespaces()) {
                ObjectNode no = nss.addObject();
                no.put("nsid", Integer.toUnsignedLong(n.nsid()));
                String bdev = bdevOf(s.nqn(), n.nsid());
                if (bdev == null) {
                    bdev = derivedBdevName(s.nqn(), n.nsid());
                }
                no.put("bdev_name", bdev);
                no.put("name", bdev);
                no.put("nguid", n.nguidText().replace("-", "").toUpperCase(java.util.Locale.ROOT));
                no.put("uuid", n.uuid().toString());
                no.put("anagrpid", n.anaGroupId());
            }
        }
        if (!found) {
            throw new RpcError(RpcError.INVALID_PARAMS, "Invalid parameters: no subsystem " + only);
        }
        return list;
    }

    private void listenAddresses(ArrayNode into, String nqn) {
        for (Port port : daemon.model().ports()) {
            if (Port.DISCOVERY_NQN.equals(nqn) || port.exports(nqn)) {
                into.add(address(port));
            }
        }
    }

    private ObjectNode address(Port port) {
        ObjectNode a = mapper.createObjectNode();
        a.put("trtype", port.address().type() == TransportType.RDMA ? "RDMA" : "TCP");
        a.put("adrfam", port.address().family() == AddressFamily.IPV6 ? "IPv6" : "IPv4");
        a.put("traddr", port.address().traddr());
        a.put("trsvcid", port.address().trsvcid());
        return a;
    }

    private JsonNode createSubsystem(String who, JsonNode p) throws RpcError {
        ObjectNode o = params(p, Set.of("nqn", "serial_number", "model_number", "allow_any_host", "max_namespaces",
            "min_cntlid", "max_cntlid", "tgt_name", "admin_label", "ana_reporting"),
            Set.of("passthrough", "enable_nssr", "dmrsl", "wzsl"));
        String nqn = nqn(o, "nqn");
        String serial = o.has("serial_number") ? text(o, "serial_number") : "00000000000000000000";
        String model = o.has("model_number") ? text(o, "model_number") : "SPDK bdev Controller";
        boolean any = o.has("allow_any_host") && bool(o, "allow_any_host");
        if (o.has("ana_reporting")) {
            // Checked, not kept: every subsystem reports ANA (CMIC, ANACAP, log page 0Ch), as nvmet's do; with
            // false a host sees group 1 optimized on every port unless states are set (docs/control-plane.md).
            bool(o, "ana_reporting");
        }
        // SPDK's default (and rpc.py's -m): 32; 0 asks for no limit (here: every NSID a subsystem supports).
        long maxNs = o.has("max_namespaces") ? integer(o, "max_namespaces", 0, 0xFFFFFFFFL) : MAX_NAMESPACES_DEFAULT;
        if (maxNs > io.nvmeof4j.target.model.Subsystem.MAX_NSID) {
            throw RpcError.invalidParams("max_namespaces " + maxNs + " is above the "
                + io.nvmeof4j.target.model.Subsystem.MAX_NSID + " namespaces a subsystem supports");
        }
        int min = (int) (o.has("min_cntlid") ? integer(o, "min_cntlid", 1, 0xFFEF) : 1);
        int max = (int) (o.has("max_cntlid") ? integer(o, "max_cntlid", 1, 0xFFEF) : 0xFFEF);
        try {
            control.createSubsystem(who, nqn, serial, model, any, min, max, (int) maxNs);
        } catch (ControlException e) {
            // SPDK: "Unable to create subsystem NQN" (-32603) for a taken NQN, -32602 for a bad parameter.
            throw new RpcError(e.kind() == ControlException.Kind.EXISTS || e.kind() == ControlException.Kind.IO
                ? RpcError.INTERNAL_ERROR : RpcError.INVALID_PARAMS, "Unable to create subsystem " + nqn + ": " + e.getMessage());
        }
        return BooleanNode.TRUE;
    }

    private JsonNode deleteSubsystem(String who, JsonNode p) throws RpcError {
        ObjectNode o = params(p, Set.of("nqn", "tgt_name"));
        String nqn = text(o, "nqn");
        List<String> released = new ArrayList<>();
        control.configuration().subsystem(nqn).ifPresent(s -> s.namespaces().forEach(n -> {
            String b = bdevOf(nqn, n.nsid());
            if (b != null) {
                released.add(b);
            }
        }));
        try {
            control.deleteSubsystem(who, nqn);
        } catch (ControlException e) {
            throw control(e, "Invalid parameters");
        }
        released.forEach(claims::remove);
        if (!released.isEmpty()) {
            persistClaims(who, "bdevs " + released + " released");
        }
        return BooleanNode.TRUE;
    }

    // ------------------------------------------------------------------------------------------------ listeners

    private JsonNode addListener(String who, JsonNode p) throws RpcError {
        ObjectNode o = params(p, Set.of("nqn", "listen_address", "tgt_name", "ana_state", "sock_impl", "numa_id"),
            Set.of("secure_channel"));
        String nqn = text(o, "nqn");
        ObjectNode a = address(o);
        int state = o.has("ana_state") ? anaState(o) : AnaState.OPTIMIZED;
        io.nvmeof4j.target.config.PortConfig port;
        try {
            port = control.addListener(who, nqn, trtype(a), adrfam(a), text(a, "traddr"), trsvcid(a));
        } catch (ControlException e) {
            throw control(e, "Invalid parameters");
        }
        if (o.has("ana_state")) {
            // SPDK's listener starts in this state in every group: here, the subsystem's groups on the port.
            Map<Integer, Integer> states = new TreeMap<>();
            anaGroups(daemon.model().port(port.portId()), nqn).forEach(g -> states.put(g, state));
            try {
                control.setAnaStates(who, port.portId(), states);
            } catch (ControlException e) {
                try {
                    control.removeListener(who, nqn, port.address().type(), port.address().traddr(),
                        port.address().trsvcid());
                } catch (ControlException undo) {
                    e.addSuppressed(undo);
                }
                throw control(e, "Invalid parameters");
            }
        }
        return BooleanNode.TRUE;
    }

    /**
     * SPDK's {@code nvmf_subsystem_listener_set_ana_state}: one group ({@code anagrpid}) or, without it, every group
     * the subsystem's namespaces are in (group 1 when it has none), through the port of the listener. A state
     * belongs to the port and group, as in nvmet: a second subsystem on the same port in the same group sees it too
     * (docs/control-plane.md). Errors as SPDK's: a bad parameter or state -32602, no such listener or an ANA group
     * out of range -32603 "error setting ANA state: -22".
     */
    private JsonNode setAnaState(String who, JsonNode p) throws RpcError {
        ObjectNode o = params(p, Set.of("nqn", "listen_address", "ana_state", "anagrpid", "tgt_name"));
        String nqn = text(o, "nqn");
        ObjectNode a = address(o);
        TransportType trtype = trtype(a);
        adrfam(a);
        String traddr = text(a, "traddr");
        String trsvcid = trsvcid(a);
        int state = anaState(o);
        long group = o.has("anagrpid") ? integer(o, "anagrpid", 0, 0xFFFFFFFFL) : 0;
        if (control.configuration().subsystem(nqn).isEmpty()) {
            throw new RpcError(RpcError.INVALID_PARAMS, "Unable to find subsystem with NQN " + nqn);
        }
        try {
            io.nvmeof4j.target.config.PortConfig port = control.listener(nqn, trtype, traddr, trsvcid);
            if (group > io.nvmeof4j.target.config.PortConfig.ANA_GROUP_MAX) {
                throw new ControlException(ControlException.Kind.INVALID, "ANA group " + group + " is not in 1.."
                    + io.nvmeof4j.target.config.PortConfig.ANA_GROUP_MAX);
            }
            Map<Integer, Integer> states = new TreeMap<>();
            if (group != 0) {
                states.put((int) group, state);
            } else {
                anaGroups(daemon.model().port(port.portId()), nqn).forEach(g -> states.put(g, state));
            }
            control.setAnaStates(who, port.portId(), states);
        } catch (ControlException e) {
            throw new RpcError(RpcError.INTERNAL_ERROR, e.kind() == ControlException.Kind.IO
                ? "Internal error: " + e.getMessage() : "error setting ANA state: -22 (" + e.getMessage() + ")");
        }
        return BooleanNode.TRUE;
    }

    /** SPDK's {@code ana_state} names (case-insensitive): optimized, non_optimized, inaccessible. */
    private static int anaState(ObjectNode o) throws RpcError {
        String name = text(o, "ana_state");
        return switch (name.toLowerCase(java.util.Locale.ROOT)) {
            case "optimized" -> AnaState.OPTIMIZED;
            case "non_optimized" -> AnaState.NON_OPTIMIZED;
            case "inaccessible" -> AnaState.INACCESSIBLE;
            default -> throw RpcError.invalidParams("ana_state " + name
                + " is not optimized, non_optimized or inaccessible");
        };
    }

    /** SPDK's name of a state ({@code non_optimized}, {@code persistent_loss}: '_' where nvmetcli has '-'). */
    private static String spdkAnaState(int state) {
        return AnaState.name(state).replace('-', '_');
    }

    /** The ANA groups a subsystem's namespaces are in (group 1 when it has none), ascending. */
    private java.util.SortedSet<Integer> anaGroups(Port port, String nqn) {
        java.util.SortedSet<Integer> groups = new java.util.TreeSet<>();
        control.configuration().subsystem(nqn).ifPresent(s -> s.namespaces().forEach(n -> groups.add(n.anaGroupId())));
        if (groups.isEmpty()) {
            groups.add(io.nvmeof4j.target.model.AnaStates.DEFAULT_GROUP);
        }
        return groups;
    }

    private JsonNode removeListener(String who, JsonNode p) throws RpcError {
        ObjectNode o = params(p, Set.of("nqn", "listen_address", "tgt_name"));
        String nqn = text(o, "nqn");
        ObjectNode a = address(o);
        try {
            control.removeListener(who, nqn, trtype(a), text(a, "traddr"), trsvcid(a));
        } catch (ControlException e) {
            throw control(e, "Invalid parameters");
        }
        return BooleanNode.TRUE;
    }

    private JsonNode getListeners(JsonNode p) throws RpcError {
        ObjectNode o = params(p, Set.of("nqn", "tgt_name"));
        String nqn = text(o, "nqn");
        if (control.configuration().subsystem(nqn).isEmpty()) {
            throw new RpcError(RpcError.INVALID_PARAMS, "Invalid parameters: no subsystem " + nqn);
        }
        ArrayNode list = mapper.createArrayNode();
        for (Port port : daemon.model().ports()) {
            if (port.exports(nqn)) {
                ObjectNode l = list.addObject();
                l.set("address", address(port));
                // SPDK (ana_reporting) lists every group of the listener; here: the groups configured on the port
                // and those of the subsystem's namespaces.
                java.util.SortedSet<Integer> groups = anaGroups(port, nqn);
                for (int g = 1; g <= io.nvmeof4j.target.model.AnaStates.GROUP_MAX; g++) {
                    if (port.ana().isConfigured(g)) {
                        groups.add(g);
                    }
                }
                ArrayNode states = l.putArray("ana_states");
                for (int g : groups) {
                    states.addObject().put("ana_group", g).put("ana_state", spdkAnaState(port.ana().state(g)));
                }
            }
        }
        return list;
    }

    private ObjectNode address(ObjectNode o) throws RpcError {
        JsonNode a = o.get("listen_address");
        if (a == null || !a.isObject()) {
            throw RpcError.invalidParams("listen_address is required");
        }
        params(a, Set.of("trtype", "adrfam", "traddr", "trsvcid", "priority"));
        return (ObjectNode) a;
    }

    private static TransportType trtype(ObjectNode a) throws RpcError {
        String t = text(a, "trtype");
        if ("tcp".equalsIgnoreCase(t)) {
            return TransportType.TCP;
        }
        if ("rdma".equalsIgnoreCase(t)) {
            return TransportType.RDMA;
        }
        throw RpcError.invalidParams("trtype " + t + " is not TCP or RDMA");
    }

    private static AddressFamily adrfam(ObjectNode a) throws RpcError {
        String f = a.has("adrfam") ? text(a, "adrfam") : "IPv4";
        if ("ipv4".equalsIgnoreCase(f)) {
            return AddressFamily.IPV4;
        }
        if ("ipv6".equalsIgnoreCase(f)) {
            return AddressFamily.IPV6;
        }
        throw RpcError.invalidParams("adrfam " + f + " is not IPv4 or IPv6");
    }

    private static String trsvcid(ObjectNode a) throws RpcError {
        if (!a.has("trsvcid")) {
            throw RpcError.invalidParams("listen_address.trsvcid is required for TCP and RDMA");
        }
        String s = text(a, "trsvcid");
        try {
            int port = Integer.parseInt(s);
            if (port < 0 || port > 65535) {
                throw RpcError.invalidParams("trsvcid " + s + " is not a port number");
            }
            return Integer.toString(port);
        } catch (NumberFormatException e) {
            throw RpcError.invalidParams("trsvcid " + s + " is not a port number");
        }
    }

    // ------------------------------------------------------------------------------------------------ referrals

    /**
     * SPDK's target-wide referral: put on every port (the configuration keeps referrals per port, as nvmet does).
     * Errors as SPDK's: -32602 for parameters it cannot decode, -32603 "Service ID is required." without trsvcid,
     * -32603 "Internal error" for a referral that exists already.
     */
    private JsonNode addReferral(String who, JsonNode p) throws RpcError {
        ObjectNode o = params(p, Set.of("address", "tgt_name", "secure_channel", "subnqn"));
        ObjectNode a = referralAddress(o);
        boolean secure = o.has("secure_channel") && bool(o, "secure_channel");
        String subnqn = o.has("subnqn") ? nqn(o, "subnqn") : Port.DISCOVERY_NQN;
        TransportType trtype = trtype(a);
        String traddr = text(a, "traddr");
        if (!a.has("trsvcid")) {
            throw new RpcError(RpcError.INTERNAL_ERROR, "Service ID is required.");
        }
        String trsvcid = trsvcid(a);
        io.nvmeof4j.target.config.ReferralConfig referral = new io.nvmeof4j.target.config.ReferralConfig(
            trtype.configName() + "-" + traddr.replace(':', '.') + "-" + trsvcid, 0, true,
            new io.nvmeof4j.protocol.spi.TransportAddress(trtype, adrfam(a), traddr, trsvcid),
            secure ? "required" : "not specified", subnqn);
        try {
            control.addReferral(who, -1, referral);
        } catch (ControlException e) {
            if (e.kind() == ControlException.Kind.INVALID) {
                throw RpcError.invalidParams(e.getMessage());
            }
            throw new RpcError(RpcError.INTERNAL_ERROR, (e.kind() == ControlException.Kind.IO ? "Internal error: "
                : "Internal error (") + e.getMessage() + (e.kind() == ControlException.Kind.IO ? "" : ")"));
        }
        return BooleanNode.TRUE;
    }

    /** Removes the referral from every port that has it; -32603 "Unable to remove a referral." when none does. */
    private JsonNode removeReferral(String who, JsonNode p) throws RpcError {
        ObjectNode o = params(p, Set.of("address", "tgt_name", "subnqn"));
        ObjectNode a = referralAddress(o);
        TransportType trtype = trtype(a);
        String traddr = text(a, "traddr");
        String trsvcid = a.has("trsvcid") ? trsvcid(a) : null;
        String subnqn = o.has("subnqn") ? text(o, "subnqn") : Port.DISCOVERY_NQN;
        try {
            control.removeReferral(who, -1, r -> r.address().type() == trtype && r.address().traddr().equals(traddr)
                && (trsvcid == null || r.address().trsvcid().equals(trsvcid)) && r.subnqn().equals(subnqn),
                trtype.configName() + " " + traddr + ":" + trsvcid + " " + subnqn);
        } catch (ControlException e) {
            throw new RpcError(RpcError.INTERNAL_ERROR, e.kind() == ControlException.Kind.IO
                ? "Internal error: " + e.getMessage() : "Unable to remove a referral. (" + e.getMessage() + ")");
        }
        return BooleanNode.TRUE;
    }

    /** SPDK's shape: {@code [{"address": {...}, "secure_channel", "subnqn"}]}, each referral once. */
    private JsonNode getReferrals(JsonNode p) throws RpcError {
        params(p, Set.of("tgt_name"));
        ArrayNode list = mapper.createArrayNode();
        List<io.nvmeof4j.target.config.ReferralConfig> seen = new ArrayList<>();
        for (io.nvmeof4j.target.config.PortConfig port : control.configuration().ports()) {
            for (io.nvmeof4j.target.config.ReferralConfig r : port.referrals()) {
                if (seen.stream().anyMatch(r::sameTarget)) {
                    continue;
                }
                seen.add(r);
                ObjectNode ro = list.addObject();
                ro.set("address", referralAddress(r));
                ro.put("secure_channel", r.secureChannel());
                ro.put("subnqn", r.subnqn());
            }
        }
        return list;
    }

    private ObjectNode referralAddress(io.nvmeof4j.target.config.ReferralConfig r) {
        ObjectNode a = mapper.createObjectNode();
        a.put("trtype", r.address().type() == TransportType.RDMA ? "RDMA" : "TCP");
        a.put("adrfam", r.address().family() == AddressFamily.IPV6 ? "IPv6" : "IPv4");
        a.put("traddr", r.address().traddr());
        a.put("trsvcid", r.address().trsvcid());
        return a;
    }

    private static ObjectNode referralAddress(ObjectNode o) throws RpcError {
        JsonNode a = o.get("address");
        if (a == null || !a.isObject()) {
            throw RpcError.invalidParams("address is required");
        }
        params(a, Set.of("trtype", "adrfam", "traddr", "trsvcid", "priority"));
        return (ObjectNode) a;
    }

    // ------------------------------------------------------------------------------------------------ namespaces

    private JsonNode addNamespace(String who, JsonNode p) throws RpcError {
        ObjectNode o = params(p, Set.of("nqn", "namespace", "tgt_name"), Set.of("no_auto_visible"));
        String nqn = text(o, "nqn");
        JsonNode n = o.get("namespace");
        if (n == null || !n.isObject()) {
            throw RpcError.invalidParams("namespace is required");
        }
        ObjectNode ns = params(n, Set.of("bdev_name", "nsid", "uuid", "nguid", "anagrpid"),
            Set.of("eui64", "ptpl_file", "no_auto_visible", "hide_metadata"));
        String bdevName = text(ns, "bdev_name");
        Bdev bdev = bdevs.get(bdevName);
        if (bdev == null) {
            throw RpcError.invalidParams("bdev " + bdevName + " does not exist");
        }
        if (claims.containsKey(bdevName)) {
            throw RpcError.invalidParams("bdev " + bdevName + " is already used by namespace "
                + claims.get(bdevName));
        }
        SubsystemConfig s = control.configuration().subsystem(nqn).orElseThrow(() ->
            new RpcError(RpcError.INVALID_PARAMS, "Unable to find subsystem with NQN " + nqn));
        long nsid = ns.has("nsid") ? integer(ns, "nsid", 0, 0xFFFFFFFFL) : 0;
        long limit = s.maxNamespaces() > 0 ? s.maxNamespaces() : io.nvmeof4j.target.model.Subsystem.MAX_NSID;
        if (nsid == 0) {
            // SPDK: the lowest free NSID, within max_namespaces.
            nsid = 1;
            Set<Integer> taken = new java.util.HashSet<>();
            s.namespaces().forEach(x -> taken.add(x.nsid()));
            while (taken.contains((int) nsid)) {
                nsid++;
            }
            if (nsid > limit) {
                throw RpcError.invalidParams("no free namespace slot available (max_namespaces " + limit + ")");
            }
        } else if (nsid > limit) {
            throw RpcError.invalidParams("cannot add namespace with nsid " + nsid + " > max_namespaces " + limit);
        }
        ObjectNode nsJson = mapper.createObjectNode();
        nsJson.put("nsid", nsid);
        // 0 or absent: the default group (1, as nvmet; SPDK's default is the NSID).
        long anagrpid = ns.has("anagrpid") ? integer(ns, "anagrpid", 0, io.nvmeof4j.target.config.PortConfig.ANA_GROUP_MAX) : 0;
        if (anagrpid != 0) {
            nsJson.put("ana_grpid", anagrpid);
        }
        ObjectNode device = nsJson.putObject("device");
        device.put("backend", bdev.backend());
        if (bdev.path() != null) {
            device.put("path", bdev.path());
        }
        if (bdev.numBlocks() > 0) {
            device.put("size", Long.toString(bdev.numBlocks() * bdev.blockSize()));
        }
        if (bdev.blockSize() > 0) {
            device.put("block_size", bdev.blockSize());
        }
        device.put("uuid", ns.has("uuid") ? text(ns, "uuid") : bdev.uuid().toString());
        if (ns.has("nguid")) {
            device.put("nguid", text(ns, "nguid"));
        }
        QosLimits qos = unclaimedQos.getOrDefault(bdevName, QosLimits.NONE);
        if (!qos.none()) {
            nsJson.set("qos", assignedRateLimits(qos));
        }
        NamespaceConfig nc;
        try {
            nc = TargetConfig.parseNamespace(nsJson, "namespace", nqn, control.baseDirectory());
        } catch (ConfigException e) {
            throw RpcError.invalidParams(e.getMessage());
        }
        try {
            control.addNamespace(who, nqn, nc);
        } catch (ControlException e) {
            throw control(e, "Invalid parameters");
        }
        claims.put(bdevName, nqn + " " + nsid);
        persistClaims(who, "bdev " + bdevName + " is namespace " + nsid + " of " + nqn);
        unclaimedQos.remove(bdevName);
        return mapper.getNodeFactory().numberNode(nsid);
    }

    private JsonNode removeNamespace(String who, JsonNode p) throws RpcError {
        ObjectNode o = params(p, Set.of("nqn", "nsid", "tgt_name"));
        String nqn = text(o, "nqn");
        int nsid = (int) integer(o, "nsid", 1, 0xFFFFFFFEL);
        String bdev = bdevOf(nqn, nsid);
        QosLimits qos = namespaceQos(nqn, nsid);
        try {
            control.removeNamespace(who, nqn, nsid);
        } catch (ControlException e) {
            throw control(e, "Invalid parameters");
        }
        if (bdev != null) {
            claims.remove(bdev);
            if (!qos.none()) {
                unclaimedQos.put(bdev, qos);
            }
            persistClaims(who, "bdev " + bdev + " released");
        }
        return BooleanNode.TRUE;
    }

    private String bdevOf(String nqn, int nsid) {
        String key = nqn + " " + Integer.toUnsignedString(nsid);
        for (Map.Entry<String, String> e : claims.entrySet()) {
            if (e.getValue().equals(key)) {
                return e.getKey();
            }
        }
        return null;
    }

    // ------------------------------------------------------------------------------------------------ hosts

    private JsonNode addHost(String who, JsonNode p) throws RpcError {
        ObjectNode o = params(p, Set.of("nqn", "host", "tgt_name"), Set.of("psk", "dhchap_key", "dhchap_ctrlr_key"));
        String nqn = text(o, "nqn");
        String host = nqn(o, "host");
        try {
            control.addHost(who, nqn, host);
        } catch (ControlException e) {
            throw control(e, "Invalid parameters");
        }
        return BooleanNode.TRUE;
    }

    private JsonNode removeHost(String who, JsonNode p) throws RpcError {
        ObjectNode o = params(p, Set.of("nqn", "host", "tgt_name", "timeout_ms"));
        try {
            control.removeHost(who, text(o, "nqn"), text(o, "host"));
        } catch (ControlException e) {
            throw control(e, "Invalid parameters");
        }
        return BooleanNode.TRUE;
    }

    private JsonNode allowAnyHost(String who, JsonNode p) throws RpcError {
        ObjectNode o = params(p, Set.of("nqn", "allow_any_host", "tgt_name"));
        try {
            control.allowAnyHost(who, text(o, "nqn"), bool(o, "allow_any_host"));
        } catch (ControlException e) {
            throw control(e, "Invalid parameters");
        }
        return BooleanNode.TRUE;
    }

    // ------------------------------------------------------------------------------------------------ live state

    private JsonNode getControllers(JsonNode p) throws RpcError {
        ObjectNode o = params(p, Set.of("nqn", "tgt_name"));
        String nqn = requireLiveSubsystem(o);
        ArrayNode list = mapper.createArrayNode();
        for (Controller c : daemon.registry().controllers(nqn)) {
            ObjectNode co = list.addObject();
            co.put("cntlid", c.cntlid());
            co.put("hostnqn", c.hostNqn());
            co.put("hostid", c.hostId().toString());
            co.put("num_io_qpairs", c.ioQueueCount());
        }
        return list;
    }

    private JsonNode getQpairs(JsonNode p) throws RpcError {
        ObjectNode o = params(p, Set.of("nqn", "tgt_name"));
        String nqn = requireLiveSubsystem(o);
        ArrayNode list = mapper.createArrayNode();
        for (Controller c : daemon.registry().controllers(nqn)) {
            for (QueueInfo q : c.queues()) {
                ObjectNode qo = list.addObject();
                qo.put("cntlid", c.cntlid());
                qo.put("qid", q.qid());
                qo.put("state", "active");
                qo.put("thread", "nvmeof-reactor");
                qo.put("hostnqn", c.hostNqn());
                ObjectNode la = qo.putObject("listen_address");
                la.setAll(address(c.port()));
                qo.put("peer", q.peer());
            }
        }
        return list;
    }

    private String requireLiveSubsystem(ObjectNode o) throws RpcError {
        String nqn = text(o, "nqn");
        if (daemon.model().subsystem(nqn) == null) {
            throw new RpcError(RpcError.INVALID_PARAMS, "Invalid parameters: no subsystem " + nqn);
        }
        return nqn;
    }

    // ------------------------------------------------------------------------------------------------ bdevs

    private JsonNode createBdev(String who, JsonNode p, String kind) throws RpcError {
        boolean file = kind.equals("uring") || kind.equals("aio");
        ObjectNode o = file
            ? params(p, Set.of("name", "filename", "block_size", "uuid"), Set.of("readonly", "fallocate", "nowait"))
            : params(p, Set.of("name", "num_blocks", "block_size", "uuid", "physical_block_size", "optimal_io_boundary",
                "numa_id", "preferred_write_granularity", "preferred_write_alignment", "optimal_write_size",
                "preferred_unmap_granularity", "preferred_unmap_alignment"),
                Set.of("md_size", "md_interleave", "dif_type", "dif_is_head_of_md", "dif_pi_format"));
        String name;
        if (o.has("name")) {
            name = text(o, "name");
        } else if (kind.equals("malloc")) {
            do {
                name = "Malloc" + nextMalloc++;
            } while (bdevs.containsKey(name));
        } else {
            throw RpcError.invalidParams("name is required");
        }
        if (name.isEmpty() || name.length() > 255 || name.chars().anyMatch(c -> c < 0x20 || c == 0x7F)) {
            throw RpcError.invalidParams("name must be 1..255 printable characters");
        }
        if (bdevs.containsKey(name)) {
            throw RpcError.errno(RpcError.EEXIST);
        }
        int blockSize = (int) (o.has("block_size") ? integer(o, "block_size", 0, 65536) : (file ? 0 : 512));
        if (blockSize != 0 && blockSize != 512 && blockSize != 4096) {
            throw RpcError.invalidParams("block_size " + blockSize + " is not 512 or 4096");
        }
        UUID uuid = UUID.randomUUID();
        if (o.has("uuid")) {
            try {
                uuid = UUID.fromString(text(o, "uuid"));
            } catch (IllegalArgumentException e) {
                throw RpcError.invalidParams("uuid " + o.get("uuid") + " is not a UUID");
            }
        }
        Bdev bdev;
        if (file) {
            String filename = text(o, "filename");
            if (filename.isEmpty() || filename.indexOf('\0') >= 0) {
                throw RpcError.invalidParams("filename is empty or holds a NUL");
            }
            bdev = new Bdev(name, kind.equals("aio") ? "AIO disk" : "URING bdev", "file", filename, 0, blockSize, uuid);
        } else {
            long numBlocks = integer(o, "num_blocks", 1, Long.MAX_VALUE);
            if (numBlocks > Long.MAX_VALUE / blockSize) {
                throw RpcError.invalidParams("num_blocks " + numBlocks + " x block_size " + blockSize
                    + " overflows 64 bits");
            }
            bdev = new Bdev(name, kind.equals("malloc") ? "Malloc disk" : "Null disk",
                kind.equals("malloc") ? "ram" : "null", null, numBlocks, blockSize, uuid);
        }
        bdevs.put(name, bdev);
        try {
            persistBdevs(who, "create bdev " + name);
        } catch (ControlException e) {
            bdevs.remove(name);
            throw new RpcError(RpcError.INTERNAL_ERROR, "Internal error: " + e.getMessage());
        }
        return mapper.getNodeFactory().textNode(name);
    }

    private JsonNode deleteBdev(String who, JsonNode p, String kind) throws RpcError {
        ObjectNode o = params(p, Set.of("name"));
        String name = text(o, "name");
        Bdev bdev = bdevs.get(name);
        if (bdev == null || !kindOf(bdev).equals(kind)) {
            throw RpcError.errno(RpcError.ENODEV);
        }
        if (claims.containsKey(name)) {
            throw new RpcError(RpcError.EBUSY, "Device or resource busy: bdev " + name + " is namespace "
                + claims.get(name) + "; remove the namespace first");
        }
        bdevs.remove(name);
        try {
            persistBdevs(who, "delete bdev " + name);
        } catch (ControlException e) {
            bdevs.put(name, bdev);
            throw new RpcError(RpcError.INTERNAL_ERROR, "Internal error: " + e.getMessage());
        }
        unclaimedQos.remove(name);
        return BooleanNode.TRUE;
    }

    /**
     * SPDK's {@code bdev_null_resize}: {@code new_size} in MiB, growing only. Errors as SPDK's: -32603 for parameters
     * it cannot decode, -19 no such bdev, -22 not a null bdev or a smaller (or not block-aligned) size. A bdev a
     * namespace uses is resized live (the namespace attribute notice; persisted), an unused one in the registry.
     */
    private JsonNode resizeNullBdev(String who, JsonNode p) throws RpcError {
        ObjectNode o;
        String name;
        long mib;
        try {
            o = params(p, Set.of("name", "new_size"));
            name = text(o, "name");
            mib = integer(o, "new_size", 0, Long.MAX_VALUE);
        } catch (RpcError e) {
            throw new RpcError(RpcError.INTERNAL_ERROR, "spdk_json_decode_object failed: " + e.getMessage());
        }
        Bdev bdev = bdevs.get(name);
        if (bdev == null) {
            throw RpcError.errno(RpcError.ENODEV);
        }
        if (!kindOf(bdev).equals("null")) {
            throw new RpcError(RpcError.EINVAL, "Invalid argument: " + name + " is not a null bdev");
        }
        if (mib > Long.MAX_VALUE >> 20) {
            throw new RpcError(RpcError.EINVAL, "Invalid argument: new_size " + mib + " MiB overflows 64 bits");
        }
        long bytes = mib << 20;
        if (bytes % bdev.blockSize() != 0 || bytes < bdev.numBlocks() * bdev.blockSize()) {
            throw new RpcError(RpcError.EINVAL, "Invalid argument: the new size must not be smaller than the current "
                + "size (" + bdev.numBlocks() * bdev.blockSize() + " bytes)");
        }
        String claim = claims.get(name);
        if (claim != null) {
            resizeClaimed(who, claim, bytes);
        }
        bdevs.put(name, new Bdev(bdev.name(), bdev.productName(), bdev.backend(), bdev.path(),
            bytes / bdev.blockSize(), bdev.blockSize(), bdev.uuid()));
        if (claim == null) {
            try {
                persistBdevs(who, "resize bdev " + name);
            } catch (ControlException e) {
                bdevs.put(name, bdev);
                throw new RpcError(RpcError.INTERNAL_ERROR, "Internal error: " + e.getMessage());
            }
        } else {
            persistClaims(who, "resize bdev " + name);
        }
        return BooleanNode.TRUE;
    }

    /**
     * SPDK's {@code bdev_aio_rescan}/{@code bdev_uring_rescan}: the bdev takes the size its file has now. Errors as
     * SPDK's: -32603 for parameters it cannot decode, -19 no such bdev (of that kind), -16 a file that shrank under a
     * namespace (SPDK's bdev layer refuses shrinking an open bdev).
     */
    private JsonNode rescanBdev(String who, JsonNode p, String kind) throws RpcError {
        String name;
        try {
            name = text(params(p, Set.of("name")), "name");
        } catch (RpcError e) {
            throw new RpcError(RpcError.INTERNAL_ERROR, "spdk_json_decode_object failed: " + e.getMessage());
        }
        Bdev bdev = bdevs.get(name);
        if (bdev == null || !kindOf(bdev).equals(kind)) {
            throw RpcError.errno(RpcError.ENODEV);
        }
        String claim = claims.get(name);
        if (claim != null) {
            resizeClaimed(who, claim, 0);
        }
        // An unused file bdev has no size of its own: bdev_get_bdevs reads the file's.
        return BooleanNode.TRUE;
    }

    private void resizeClaimed(String who, String claim, long bytes) throws RpcError {
        int space = claim.lastIndexOf(' ');
        try {
            control.resizeNamespace(who, claim.substring(0, space), Integer.parseUnsignedInt(claim.substring(space + 1)),
                bytes);
        } catch (ControlException e) {
            throw switch (e.kind()) {
                case BUSY -> new RpcError(RpcError.EBUSY, "Device or resource busy: " + e.getMessage());
                case IO -> new RpcError(RpcError.INTERNAL_ERROR, "Internal error: " + e.getMessage());
                default -> new RpcError(RpcError.EINVAL, "Invalid argument: " + e.getMessage());
            };
        }
    }

    /**
     * SPDK's {@code bdev_set_qos_limit}: each limit given is set (0 removes it), the others stay as they are. Errors
     * as SPDK's: params that do not decode -32603 "spdk_json_decode_object failed" (SPDK's bdev RPCs answer so), an
     * unknown bdev -19, no limit given -22 "No rate limits specified"; nothing is changed by a refused call. An IOPS
     * limit not a multiple of 1000 is rounded up and a bandwidth beyond 64 bits of bytes lowered, as SPDK does.
     * On a bdev a namespace uses, the change is persisted and applies to running I/O at once.
     */
    private JsonNode setQosLimit(String who, JsonNode p) throws RpcError {
        RpcError undecodable = new RpcError(RpcError.INTERNAL_ERROR, "spdk_json_decode_object failed");
        if (p == null || !p.isObject()) {
            throw undecodable;
        }
        ObjectNode o = (ObjectNode) p;
        Set<String> limitNames = Set.of(QosLimits.RW_IOS_PER_SEC, QosLimits.RW_MBYTES_PER_SEC,
            QosLimits.R_MBYTES_PER_SEC, QosLimits.W_MBYTES_PER_SEC);
        for (Iterator<String> it = o.fieldNames(); it.hasNext(); ) {
            String key = it.next();
            if (!key.equals("name") && !limitNames.contains(key)) {
                throw undecodable;
            }
        }
        JsonNode nameNode = o.get("name");
        if (nameNode == null || !nameNode.isTextual()) {
            throw undecodable;
        }
        Map<String, Long> given = new java.util.HashMap<>();
        for (String key : limitNames) {
            JsonNode v = o.get(key);
            if (v == null || v.isNull()) {
                continue; // null: not given (a client may send the options it was not given as null)
            }
            // uint64, as SPDK decodes it; beyond 63 bits is beyond every cap QosLimits.of applies anyway.
            if (!v.isIntegralNumber() || v.bigIntegerValue().signum() < 0 || v.bigIntegerValue().bitLength() > 64) {
                throw undecodable;
            }
            given.put(key, v.canConvertToLong() ? v.asLong() : Long.MAX_VALUE);
        }
        String name = nameNode.asText();
        if (!bdevs.containsKey(name)) {
            throw RpcError.errno(RpcError.ENODEV);
        }
        if (given.isEmpty()) {
            throw new RpcError(RpcError.EINVAL, "No rate limits specified");
        }
        String claim = claims.get(name);
        int space = claim == null ? -1 : claim.lastIndexOf(' ');
        String nqn = claim == null ? null : claim.substring(0, space);
        int nsid = claim == null ? 0 : Integer.parseUnsignedInt(claim.substring(space + 1));
        QosLimits before = claim == null ? unclaimedQos.getOrDefault(name, QosLimits.NONE) : namespaceQos(nqn, nsid);
        QosLimits next = QosLimits.of(
            given.getOrDefault(QosLimits.RW_IOS_PER_SEC, before.rwIosPerSec()),
            given.getOrDefault(QosLimits.RW_MBYTES_PER_SEC, before.rwMbytesPerSec()),
            given.getOrDefault(QosLimits.R_MBYTES_PER_SEC, before.rMbytesPerSec()),
            given.getOrDefault(QosLimits.W_MBYTES_PER_SEC, before.wMbytesPerSec()));
        if (claim == null) {
            if (next.none()) {
                unclaimedQos.remove(name);
            } else {
                unclaimedQos.put(name, next);
            }
            try {
                persistBdevs(who, "set QoS of bdev " + name + ": " + next);
            } catch (ControlException e) {
                if (before.none()) {
                    unclaimedQos.remove(name);
                } else {
                    unclaimedQos.put(name, before);
                }
                throw new RpcError(RpcError.INTERNAL_ERROR, "Internal error: " + e.getMessage());
            }
            return BooleanNode.TRUE;
        }
        try {
            control.setQos(who, nqn, nsid, next);
        } catch (ControlException e) {
            throw control(e, "Failed to configure rate limit");
        }
        return BooleanNode.TRUE;
    }

    /** The QoS limits a namespace's configuration holds (none when it has no such namespace). */
    private QosLimits namespaceQos(String nqn, int nsid) {
        return control.configuration().subsystem(nqn).flatMap(s -> s.namespaces().stream()
            .filter(n -> n.nsid() == nsid).findFirst()).map(NamespaceConfig::qos).orElse(QosLimits.NONE);
    }

    /** SPDK's {@code assigned_rate_limits}: all four, in its order, 0 for a limit not set. */
    private ObjectNode assignedRateLimits(QosLimits limits) {
        ObjectNode o = mapper.createObjectNode();
        o.put(QosLimits.RW_IOS_PER_SEC, limits.rwIosPerSec());
        o.put(QosLimits.RW_MBYTES_PER_SEC, limits.rwMbytesPerSec());
        o.put(QosLimits.R_MBYTES_PER_SEC, limits.rMbytesPerSec());
        o.put(QosLimits.W_MBYTES_PER_SEC, limits.wMbytesPerSec());
        return o;
    }

    private static String kindOf(Bdev b) {
        return switch (b.productName()) {
            case "Malloc disk" -> "malloc";
            case "Null disk" -> "null";
            case "AIO disk" -> "aio";
            default -> "uring";
        };
    }

    private JsonNode getBdevs(JsonNode p) throws RpcError {
        ObjectNode o = params(p, Set.of("name", "timeout"));
        ArrayNode list = mapper.createArrayNode();
        if (o.has("name")) {
            Bdev b = bdevs.get(text(o, "name"));
            if (b == null) {
                throw RpcError.errno(RpcError.ENODEV);
            }
            list.add(bdevJson(b));
            return list;
        }
        for (Bdev b : bdevs.values()) {
            list.add(bdevJson(b));
        }
        return list;
    }

    /**
     * SPDK's I/O statistics of bdevs, from the namespace meters (ticks are nanoseconds: {@code tick_rate} 1e9). A bdev
     * no namespace uses, or a daemon with metrics off, reports zeros.
     */
    private JsonNode getIostat(JsonNode p) throws RpcError {
        ObjectNode o = params(p, Set.of("name"), Set.of("per_channel"));
        ObjectNode result = mapper.createObjectNode();
        result.put("tick_rate", 1_000_000_000L);
        result.put("ticks", System.nanoTime());
        ArrayNode list = result.putArray("bdevs");
        if (o.has("name") && !bdevs.containsKey(text(o, "name"))) {
            throw RpcError.errno(RpcError.ENODEV);
        }
        for (Bdev b : bdevs.values()) {
            if (o.has("name") && !b.name().equals(o.get("name").asText())) {
                continue;
            }
            io.nvmeof4j.target.metrics.NamespaceMeters m = meters(b.name());
            ObjectNode s = list.addObject();
            s.put("name", b.name());
            s.put("bytes_read", m == null ? 0 : m.bytes(true));
            s.put("num_read_ops", m == null ? 0 : m.completed(io.nvmeof4j.target.metrics.TargetMeterNames.OP_READ));
            s.put("bytes_written", m == null ? 0 : m.bytes(false));
            s.put("num_write_ops", m == null ? 0 : m.completed(io.nvmeof4j.target.metrics.TargetMeterNames.OP_WRITE));
            s.put("num_unmap_ops", m == null ? 0
                : m.completed(io.nvmeof4j.target.metrics.TargetMeterNames.OP_DEALLOCATE));
            s.put("read_latency_ticks", m == null ? 0
                : m.latencyNanos(io.nvmeof4j.target.metrics.TargetMeterNames.OP_READ));
            s.put("write_latency_ticks", m == null ? 0
                : m.latencyNanos(io.nvmeof4j.target.metrics.TargetMeterNames.OP_WRITE));
        }
        return result;
    }

    private io.nvmeof4j.target.metrics.NamespaceMeters meters(String bdev) {
        String claim = claims.get(bdev);
        if (claim == null) {
            return null;
        }
        int space = claim.lastIndexOf(' ');
        io.nvmeof4j.target.model.Subsystem s = daemon.model().subsystem(claim.substring(0, space));
        io.nvmeof4j.target.model.Namespace ns = s == null ? null
            : s.namespace(Integer.parseUnsignedInt(claim.substring(space + 1)));
        return ns == null ? null : ns.meters();
    }

    /** SPDK's target statistics, as one poll group (the daemon's reactors share the queues they own). */
    private JsonNode getStats(JsonNode p) throws RpcError {
        params(p, Set.of("tgt_name"));
        ObjectNode result = mapper.createObjectNode();
        result.put("tick_rate", 1_000_000_000L);
        ArrayNode groups = result.putArray("poll_groups");
        ObjectNode g = groups.addObject();
        g.put("name", "nvmeof-reactors");
        int admin = 0;
        int ioQueues = 0;
        for (Controller c : daemon.registry().controllers()) {
            admin++;
            ioQueues += c.ioQueueCount();
        }
        g.put("current_admin_qpairs", admin);
        g.put("current_io_qpairs", ioQueues);
        long completed = 0;
        for (io.nvmeof4j.target.model.Subsystem s : daemon.model().subsystems()) {
            for (io.nvmeof4j.target.model.Namespace ns : s.namespaces()) {
                io.nvmeof4j.target.metrics.NamespaceMeters m = ns.meters();
                for (int op = 0; m != null && op < io.nvmeof4j.target.metrics.TargetMeterNames.IO_OPS; op++) {
                    completed += m.completed(op);
                }
            }
        }
        g.put("completed_nvme_io", completed);
        g.putArray("transports").addObject().put("trtype", "TCP");
        return result;
    }

    private ObjectNode bdevJson(Bdev b) {
        ObjectNode o = mapper.createObjectNode();
        o.put("name", b.name());
        o.putArray("aliases");
        o.put("product_name", b.productName());
        o.put("block_size", b.blockSize() == 0 ? 4096 : b.blockSize());
        long blocks = b.numBlocks();
        if (b.path() != null) {
            try {
                blocks = java.nio.file.Files.size(java.nio.file.Path.of(b.path())) / (b.blockSize() == 0 ? 4096
                    : b.blockSize());
            } catch (java.io.IOException | java.nio.file.InvalidPathException e) {
                blocks = 0;
            }
        }
        o.put("num_blocks", blocks);
        o.put("uuid", b.uuid().toString());
        String claim = claims.get(b.name());
        o.set("assigned_rate_limits", assignedRateLimits(claim == null
            ? unclaimedQos.getOrDefault(b.name(), QosLimits.NONE)
            : namespaceQos(claim.substring(0, claim.lastIndexOf(' ')),
                Integer.parseUnsignedInt(claim.substring(claim.lastIndexOf(' ') + 1)))));
        o.put("claimed", claims.containsKey(b.name()));
        if (claims.containsKey(b.name())) {
            o.put("claim_type", "exclusive_write");
        }
        ObjectNode specific = o.putObject("driver_specific");
        if (b.path() != null) {
            specific.putObject(kindOf(b)).put("filename", b.path());
        }
        return o;
    }

    // ------------------------------------------------------------------------------------------------ decoding

    /**
     * {@link #params(JsonNode, Set)}, also accepting the {@code offOnly} keys (features newer rpc.py versions send
     * switched off: {@code "passthrough": false}) as long as they are off (false, 0, null or ""); on, they are
     * -32602 naming the feature.
     */
    static ObjectNode params(JsonNode p, Set<String> known, Set<String> offOnly) throws RpcError {
        Set<String> all = new java.util.HashSet<>(known);
        all.addAll(offOnly);
        ObjectNode o = params(p, all);
        for (String name : offOnly) {
            JsonNode v = o.get(name);
            if (v != null && !v.isNull() && !(v.isBoolean() && !v.asBoolean()) && !(v.isNumber() && v.asLong() == 0)
                && !(v.isTextual() && v.asText().isEmpty())) {
                throw RpcError.invalidParams(name + " is not supported by nvmeof4j");
            }
        }
        return o;
    }

    /** The params object with only {@code known} keys (SPDK's decoders refuse unknown ones); null means none. */
    static ObjectNode params(JsonNode p, Set<String> known) throws RpcError {
        if (p == null || p.isNull()) {
            return new ObjectMapper().createObjectNode();
        }
        if (!p.isObject()) {
            throw RpcError.invalidParams("params must be an object");
        }
        for (Iterator<String> it = p.fieldNames(); it.hasNext(); ) {
            String name = it.next();
            if (!known.contains(name)) {
                throw RpcError.invalidParams("unknown parameter " + name);
            }
        }
        return (ObjectNode) p;
    }

    private static String text(ObjectNode o, String name) throws RpcError {
        JsonNode v = o.get(name);
        if (v == null || !v.isTextual()) {
            throw RpcError.invalidParams(name + (v == null ? " is required" : " must be a string"));
        }
        return v.asText();
    }

    private static String nqn(ObjectNode o, String name) throws RpcError {
        String nqn = text(o, name);
        try {
            return TargetConfig.checkNqn(nqn);
        } catch (IllegalArgumentException e) {
            throw RpcError.invalidParams(name + ": " + e.getMessage());
        }
    }

    private static boolean bool(ObjectNode o, String name) throws RpcError {
        JsonNode v = o.get(name);
        if (v == null || !v.isBoolean()) {
            throw RpcError.invalidParams(name + (v == null ? " is required" : " must be true or false"));
        }
        return v.asBoolean();
    }

    /** An integer in min..max; a value beyond 64 bits or a fraction is refused, never wrapped or rounded. */
    private static long integer(ObjectNode o, String name, long min, long max) throws RpcError {
        JsonNode v = o.get(name);
        if (v == null || !v.isIntegralNumber() || !v.canConvertToLong()) {
            throw RpcError.invalidParams(name + (v == null ? " is required" : " must be an integer in " + min + ".."
                + max));
        }
        long value = v.asLong();
        if (value < min || value > max) {
            throw RpcError.invalidParams(name + " " + value + " is outside " + min + ".." + max);
        }
        return value;
    }

    /** A refused change as SPDK's nvmf RPCs answer it: -32602 with the reason, -32603 for an I/O failure. */
    private static RpcError control(ControlException e, String prefix) {
        if (e.kind() == ControlException.Kind.IO) {
            return new RpcError(RpcError.INTERNAL_ERROR, "Internal error: " + e.getMessage());
        }
        return new RpcError(RpcError.INVALID_PARAMS, prefix + ": " + e.getMessage());
    }
}
