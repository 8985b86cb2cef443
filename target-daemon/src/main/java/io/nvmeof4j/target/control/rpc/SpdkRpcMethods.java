package io.nvmeof4j.target.control.rpc;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.BooleanNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.nvmeof4j.protocol.ana.AnaState;
import io.nvmeof4j.target.backend.QosLimits;
import io.nvmeof4j.target.config.BuildVersion;
import io.nvmeof4j.target.config.NamespaceConfig;
import io.nvmeof4j.target.config.SubsystemConfig;
import io.nvmeof4j.target.config.TargetConfig;
import io.nvmeof4j.target.control.ControlPlane;
import io.nvmeof4j.target.daemon.TargetDaemon;
import io.nvmeof4j.target.model.Port;
import io.nvmeof4j.target.control.rpc.BdevRegistry.Bdev;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;

import static io.nvmeof4j.target.control.rpc.RpcParams.params;
import static io.nvmeof4j.target.control.rpc.RpcParams.text;

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

    interface Method {
        JsonNode call(String who, JsonNode params) throws RpcError;
    }

    private final TargetDaemon daemon;
    private final ControlPlane control;
    private final ObjectMapper mapper = new ObjectMapper();
    private final Map<String, Method> methods = new LinkedHashMap<>();
    private final BdevRegistry registry;
    private final NvmfRpcMethods nvmf;
    private final BdevRpcMethods bdevMethods;

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
        this.registry = new BdevRegistry(control);
        this.nvmf = new NvmfRpcMethods(daemon, control, registry);
        this.bdevMethods = new BdevRpcMethods(daemon, control, registry);
        // One table of every method, in rpc_get_methods' order.
        methods.put("spdk_get_version", (w, p) -> version(p));
        methods.put("rpc_get_methods", (w, p) -> getMethods(p));
        methods.put("framework_wait_init", (w, p) -> noParams(p, BooleanNode.TRUE));
        methods.put("save_config", (w, p) -> saveConfig(p));
        // What rpc.py's save_config calls: the sections, then each section's calls.
        methods.put("framework_get_subsystems", (w, p) -> frameworkSubsystems(p));
        methods.put("framework_get_config", (w, p) -> frameworkConfig(p));
        // Ours: the nvmetcli-shaped configuration (--config's format) of what is served now.
        methods.put("nvmeof4j_get_config", (w, p) -> noParams(p, control.document()));
        methods.put("nvmf_get_transports", (w, p) -> nvmf.getTransports(p));
        methods.put("nvmf_create_transport", (w, p) -> nvmf.createTransport(p));
        methods.put("nvmf_get_subsystems", (w, p) -> nvmf.getSubsystems(p));
        methods.put("nvmf_create_subsystem", nvmf::createSubsystem);
        methods.put("nvmf_delete_subsystem", nvmf::deleteSubsystem);
        methods.put("nvmf_subsystem_add_listener", nvmf::addListener);
        methods.put("nvmf_subsystem_remove_listener", nvmf::removeListener);
        methods.put("nvmf_subsystem_get_listeners", (w, p) -> nvmf.getListeners(p));
        methods.put("nvmf_subsystem_listener_set_ana_state", nvmf::setAnaState);
        methods.put("nvmf_subsystem_add_ns", nvmf::addNamespace);
        methods.put("nvmf_subsystem_remove_ns", nvmf::removeNamespace);
        methods.put("nvmf_subsystem_add_host", nvmf::addHost);
        methods.put("nvmf_subsystem_remove_host", nvmf::removeHost);
        methods.put("nvmf_subsystem_allow_any_host", nvmf::allowAnyHost);
        methods.put("nvmf_subsystem_get_controllers", (w, p) -> nvmf.getControllers(p));
        methods.put("nvmf_subsystem_get_qpairs", (w, p) -> nvmf.getQpairs(p));
        methods.put("bdev_malloc_create", (w, p) -> bdevMethods.createBdev(w, p, "malloc"));
        methods.put("bdev_malloc_delete", (w, p) -> bdevMethods.deleteBdev(w, p, "malloc"));
        methods.put("bdev_null_create", (w, p) -> bdevMethods.createBdev(w, p, "null"));
        methods.put("bdev_null_delete", (w, p) -> bdevMethods.deleteBdev(w, p, "null"));
        methods.put("bdev_uring_create", (w, p) -> bdevMethods.createBdev(w, p, "uring"));
        methods.put("bdev_uring_delete", (w, p) -> bdevMethods.deleteBdev(w, p, "uring"));
        methods.put("bdev_aio_create", (w, p) -> bdevMethods.createBdev(w, p, "aio"));
        methods.put("bdev_aio_delete", (w, p) -> bdevMethods.deleteBdev(w, p, "aio"));
        methods.put("bdev_null_resize", bdevMethods::resizeNullBdev);
        methods.put("bdev_aio_rescan", (w, p) -> bdevMethods.rescanBdev(w, p, "aio"));
        methods.put("bdev_uring_rescan", (w, p) -> bdevMethods.rescanBdev(w, p, "uring"));
        methods.put("bdev_get_bdevs", (w, p) -> bdevMethods.getBdevs(p));
        methods.put("bdev_get_iostat", (w, p) -> bdevMethods.getIostat(p));
        methods.put("bdev_set_qos_limit", bdevMethods::setQosLimit);
        methods.put("nvmf_get_stats", (w, p) -> nvmf.getStats(p));
        methods.put("nvmf_discovery_add_referral", nvmf::addReferral);
        methods.put("nvmf_discovery_remove_referral", nvmf::removeReferral);
        methods.put("nvmf_discovery_get_referrals", (w, p) -> nvmf.getReferrals(p));
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
            rc.set("address", nvmf.referralAddress(r));
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
                    l.set("listen_address", nvmf.address(port));
                    // SPDK's listeners start optimized in every group: the groups that are not get their state.
                    for (int g : nvmf.anaGroups(port, s.nqn())) {
                        if (port.ana().state(g) != AnaState.OPTIMIZED) {
                            ObjectNode a = call(nvmfCalls, "nvmf_subsystem_listener_set_ana_state");
                            a.put("nqn", s.nqn());
                            a.set("listen_address", nvmf.address(port));
                            a.put("ana_state", nvmf.spdkAnaState(port.ana().state(g)));
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
                String name = registry.bdevOf(s.nqn(), n.nsid());
                if (name == null) {
                    name = BdevRegistry.derivedBdevName(s.nqn(), n.nsid());
                }
                saved.add(name);
                bdevCall(bdevCalls, name, n, registry.bdevs.containsKey(name) ? BdevRegistry.kindOf(registry.bdevs.get(name)) : null);
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
        for (Bdev b : registry.bdevs.values()) {
            if (!saved.contains(b.name())) {
                ObjectNode c = call(bdevCalls, "bdev_" + BdevRegistry.kindOf(b) + "_create");
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
                qosCall(bdevCalls, b.name(), registry.unclaimedQos.getOrDefault(b.name(), QosLimits.NONE));
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
        registry.assignedRateLimits(limits).fields().forEachRemaining(e -> {
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
}
