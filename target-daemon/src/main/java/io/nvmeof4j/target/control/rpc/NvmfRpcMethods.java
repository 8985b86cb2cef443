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
import io.nvmeof4j.target.control.rpc.BdevRegistry.Bdev;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

import static io.nvmeof4j.target.control.rpc.RpcParams.adrfam;
import static io.nvmeof4j.target.control.rpc.RpcParams.bool;
import static io.nvmeof4j.target.control.rpc.RpcParams.control;
import static io.nvmeof4j.target.control.rpc.RpcParams.integer;
import static io.nvmeof4j.target.control.rpc.RpcParams.nqn;
import static io.nvmeof4j.target.control.rpc.RpcParams.params;
import static io.nvmeof4j.target.control.rpc.RpcParams.text;
import static io.nvmeof4j.target.control.rpc.RpcParams.trsvcid;
import static io.nvmeof4j.target.control.rpc.RpcParams.trtype;

/**
 * SPDK's {@code nvmf_*} methods: transports, subsystems, listeners and ANA states, referrals, namespaces (made
 * from the bdevs of the {@link BdevRegistry}), hosts, and the live controllers, queue pairs and statistics.
 */
final class NvmfRpcMethods {
    private static final int MAX_NAMESPACES_DEFAULT = 32;

    private final TargetDaemon daemon;
    private final ControlPlane control;
    private final BdevRegistry registry;
    private final ObjectMapper mapper = new ObjectMapper();

    NvmfRpcMethods(TargetDaemon daemon, ControlPlane control, BdevRegistry registry) {
        this.daemon = daemon;
        this.control = control;
        this.registry = registry;
    }

    JsonNode getTransports(JsonNode p) throws RpcError {
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
    JsonNode createTransport(JsonNode p) throws RpcError {
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

    JsonNode getSubsystems(JsonNode p) throws RpcError {
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
                String bdev = registry.bdevOf(s.nqn(), n.nsid());
                if (bdev == null) {
                    bdev = BdevRegistry.derivedBdevName(s.nqn(), n.nsid());
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

    ObjectNode address(Port port) {
        ObjectNode a = mapper.createObjectNode();
        a.put("trtype", port.address().type() == TransportType.RDMA ? "RDMA" : "TCP");
        a.put("adrfam", port.address().family() == AddressFamily.IPV6 ? "IPv6" : "IPv4");
        a.put("traddr", port.address().traddr());
        a.put("trsvcid", port.address().trsvcid());
        return a;
    }

    JsonNode createSubsystem(String who, JsonNode p) throws RpcError {
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

    JsonNode deleteSubsystem(String who, JsonNode p) throws RpcError {
        ObjectNode o = params(p, Set.of("nqn", "tgt_name"));
        String nqn = text(o, "nqn");
        List<String> released = new ArrayList<>();
        control.configuration().subsystem(nqn).ifPresent(s -> s.namespaces().forEach(n -> {
            String b = registry.bdevOf(nqn, n.nsid());
            if (b != null) {
                released.add(b);
            }
        }));
        try {
            control.deleteSubsystem(who, nqn);
        } catch (ControlException e) {
            throw control(e, "Invalid parameters");
        }
        released.forEach(registry.claims::remove);
        if (!released.isEmpty()) {
            registry.persistClaims(who, "bdevs " + released + " released");
        }
        return BooleanNode.TRUE;
    }

    JsonNode addListener(String who, JsonNode p) throws RpcError {
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
    JsonNode setAnaState(String who, JsonNode p) throws RpcError {
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
    static String spdkAnaState(int state) {
        return AnaState.name(state).replace('-', '_');
    }

    /** The ANA groups a subsystem's namespaces are in (group 1 when it has none), ascending. */
    java.util.SortedSet<Integer> anaGroups(Port port, String nqn) {
        java.util.SortedSet<Integer> groups = new java.util.TreeSet<>();
        control.configuration().subsystem(nqn).ifPresent(s -> s.namespaces().forEach(n -> groups.add(n.anaGroupId())));
        if (groups.isEmpty()) {
            groups.add(io.nvmeof4j.target.model.AnaStates.DEFAULT_GROUP);
        }
        return groups;
    }

    JsonNode removeListener(String who, JsonNode p) throws RpcError {
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

    JsonNode getListeners(JsonNode p) throws RpcError {
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

    /**
     * SPDK's target-wide referral: put on every port (the configuration keeps referrals per port, as nvmet does).
     * Errors as SPDK's: -32602 for parameters it cannot decode, -32603 "Service ID is required." without trsvcid,
     * -32603 "Internal error" for a referral that exists already.
     */
    JsonNode addReferral(String who, JsonNode p) throws RpcError {
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
    JsonNode removeReferral(String who, JsonNode p) throws RpcError {
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
    JsonNode getReferrals(JsonNode p) throws RpcError {
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

    ObjectNode referralAddress(io.nvmeof4j.target.config.ReferralConfig r) {
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

    JsonNode addNamespace(String who, JsonNode p) throws RpcError {
        ObjectNode o = params(p, Set.of("nqn", "namespace", "tgt_name"), Set.of("no_auto_visible"));
        String nqn = text(o, "nqn");
        JsonNode n = o.get("namespace");
        if (n == null || !n.isObject()) {
            throw RpcError.invalidParams("namespace is required");
        }
        ObjectNode ns = params(n, Set.of("bdev_name", "nsid", "uuid", "nguid", "anagrpid"),
            Set.of("eui64", "ptpl_file", "no_auto_visible", "hide_metadata"));
        String bdevName = text(ns, "bdev_name");
        Bdev bdev = registry.bdevs.get(bdevName);
        if (bdev == null) {
            throw RpcError.invalidParams("bdev " + bdevName + " does not exist");
        }
        if (registry.claims.containsKey(bdevName)) {
            throw RpcError.invalidParams("bdev " + bdevName + " is already used by namespace "
                + registry.claims.get(bdevName));
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
        QosLimits qos = registry.unclaimedQos.getOrDefault(bdevName, QosLimits.NONE);
        if (!qos.none()) {
            nsJson.set("qos", registry.assignedRateLimits(qos));
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
        registry.claims.put(bdevName, nqn + " " + nsid);
        registry.persistClaims(who, "bdev " + bdevName + " is namespace " + nsid + " of " + nqn);
        registry.unclaimedQos.remove(bdevName);
        return mapper.getNodeFactory().numberNode(nsid);
    }

    JsonNode removeNamespace(String who, JsonNode p) throws RpcError {
        ObjectNode o = params(p, Set.of("nqn", "nsid", "tgt_name"));
        String nqn = text(o, "nqn");
        int nsid = (int) integer(o, "nsid", 1, 0xFFFFFFFEL);
        String bdev = registry.bdevOf(nqn, nsid);
        QosLimits qos = registry.namespaceQos(nqn, nsid);
        try {
            control.removeNamespace(who, nqn, nsid);
        } catch (ControlException e) {
            throw control(e, "Invalid parameters");
        }
        if (bdev != null) {
            registry.claims.remove(bdev);
            if (!qos.none()) {
                registry.unclaimedQos.put(bdev, qos);
            }
            registry.persistClaims(who, "bdev " + bdev + " released");
        }
        return BooleanNode.TRUE;
    }

    JsonNode addHost(String who, JsonNode p) throws RpcError {
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

    JsonNode removeHost(String who, JsonNode p) throws RpcError {
        ObjectNode o = params(p, Set.of("nqn", "host", "tgt_name", "timeout_ms"));
        try {
            control.removeHost(who, text(o, "nqn"), text(o, "host"));
        } catch (ControlException e) {
            throw control(e, "Invalid parameters");
        }
        return BooleanNode.TRUE;
    }

    JsonNode allowAnyHost(String who, JsonNode p) throws RpcError {
        ObjectNode o = params(p, Set.of("nqn", "allow_any_host", "tgt_name"));
        try {
            control.allowAnyHost(who, text(o, "nqn"), bool(o, "allow_any_host"));
        } catch (ControlException e) {
            throw control(e, "Invalid parameters");
        }
        return BooleanNode.TRUE;
    }

    JsonNode getControllers(JsonNode p) throws RpcError {
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

    JsonNode getQpairs(JsonNode p) throws RpcError {
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

    /** SPDK's target statistics, as one poll group (the daemon's reactors share the queues they own). */
    JsonNode getStats(JsonNode p) throws RpcError {
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
}
