package io.nvmeof4j.target.management;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.nvmeof4j.target.backend.QosLimits;
import io.nvmeof4j.protocol.ana.AnaState;
import io.nvmeof4j.target.model.AnaStates;
import io.nvmeof4j.target.config.ConfigException;
import io.nvmeof4j.target.config.NamespaceConfig;
import io.nvmeof4j.target.config.TargetConfig;
import io.nvmeof4j.target.control.ControlException;
import io.nvmeof4j.target.controller.Controller;
import io.nvmeof4j.target.daemon.TargetDaemon;
import io.nvmeof4j.target.model.Namespace;
import io.nvmeof4j.target.model.Port;
import io.nvmeof4j.target.model.Subsystem;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Objects;
import java.util.TreeSet;

/**
 * The management API's operations on a running {@link TargetDaemon}, as JSON in and out (Jackson trees): list
 * subsystems, namespaces, ports, hosts and controllers with their queues; add and remove a namespace; add and
 * remove an allowed host. Transport-independent: {@link io.nvmeof4j.target.http.HttpApiServer} maps URLs onto it.
 *
 * <h2>Consistency</h2>
 * Changes run one at a time (this object's lock, and the daemon's for namespaces). Every input is validated
 * before anything changes; a failure is a {@link ManagementException} with a 4xx status and a message naming the
 * field, and leaves the target as it was. The data path never takes these locks: namespaces are published through
 * the subsystem's copy-on-write array and allowed hosts through a concurrent set read at Connect.
 * <p>Namespace objects use the configuration file's shape ({@code {"nsid": 2, "device": {"backend": "ram",
 * "size": "64M"}}}, see {@link TargetConfig}), parsed by the same code with the same defaults and derived
 * identifiers; relative device paths resolve against the configuration file's directory. A request is held to more
 * than the file: unknown fields are errors, not notices; a file or block device must lie inside
 * {@code nvmeof4j.allowed_paths} ({@link io.nvmeof4j.target.limits.PathConfinement}, 403 otherwise); a RAM namespace
 * must fit the RAM budget ({@link io.nvmeof4j.target.limits.RamBudget}; 400 when larger than all of it, 409 when the
 * others leave too little). See docs/security.md ("Namespaces added live").
 */
public final class ManagementApi {
    public static final int OK = 200;
    public static final int CREATED = 201;
    public static final int BAD_REQUEST = 400;
    public static final int FORBIDDEN = 403;
    public static final int NOT_FOUND = 404;
    public static final int CONFLICT = 409;

    private final TargetDaemon daemon;
    private final ObjectMapper mapper;
    private final Path baseDirectory;
    private final ManagementJson json;
    private final HostKeyResources hostKeys;

    public ManagementApi(TargetDaemon daemon, ObjectMapper mapper) {
        this.daemon = Objects.requireNonNull(daemon, "daemon");
        this.mapper = Objects.requireNonNull(mapper, "mapper");
        this.baseDirectory = daemon.config().source().map(p -> p.toAbsolutePath().getParent())
            .orElse(Path.of("").toAbsolutePath());
        this.json = new ManagementJson(daemon, mapper);
        this.hostKeys = new HostKeyResources(daemon, json);
    }

    // ------------------------------------------------------------------------------------------------ reading

    public ArrayNode subsystems() {
        ArrayNode list = mapper.createArrayNode();
        for (Subsystem s : sortedSubsystems()) {
            list.add(json.subsystemJson(s));
        }
        return list;
    }

    public ObjectNode subsystem(String nqn) throws ManagementException {
        return json.subsystemJson(requireSubsystem(nqn));
    }

    public ArrayNode namespaces(String nqn) throws ManagementException {
        Subsystem s = requireSubsystem(nqn);
        ArrayNode list = mapper.createArrayNode();
        for (Namespace ns : s.namespaces()) {
            list.add(json.namespaceJson(ns));
        }
        return list;
    }

    public ObjectNode namespace(String nqn, String nsidText) throws ManagementException {
        Subsystem s = requireSubsystem(nqn);
        int nsid = parseNsid(nsidText);
        Namespace ns = s.namespace(nsid);
        if (ns == null) {
            throw new ManagementException(NOT_FOUND, "subsystem " + nqn + " has no namespace " + nsidText);
        }
        return json.namespaceJson(ns);
    }

    /** Allowed hosts of one subsystem. */
    public ObjectNode hosts(String nqn) throws ManagementException {
        Subsystem s = requireSubsystem(nqn);
        ObjectNode o = mapper.createObjectNode();
        o.put("subsystem", s.nqn());
        o.put("allow_any_host", s.allowAnyHost());
        ArrayNode hosts = o.putArray("allowed_hosts");
        new TreeSet<>(s.allowedHosts()).forEach(hosts::add);
        return o;
    }

    /**
     * Every host the target knows: the configuration's {@code hosts}, every allowed host and every connected host,
     * with the subsystems each may use and its live controllers.
     */
    public ArrayNode allHosts() {
        return json.allHosts(sortedSubsystems());
    }

    public ArrayNode ports() {
        ArrayNode list = mapper.createArrayNode();
        for (Port p : daemon.model().ports()) {
            ObjectNode o = list.addObject();
            o.put("portid", p.portId());
            o.put("trtype", p.address().type().configName());
            o.put("adrfam", p.address().family().configName());
            o.put("traddr", p.address().traddr());
            o.put("trsvcid", p.address().trsvcid());
            o.put("inline_data_size", p.options().inlineDataSize());
            o.put("max_queue_size", p.options().maxQueueSize());
            o.put("max_data_transfer_size", p.options().maxDataTransferSize());
            ArrayNode subs = o.putArray("subsystems");
            p.subsystems().forEach(subs::add);
            o.set("ana_groups", anaGroupsJson(p));
        }
        return list;
    }

    /** The ANA groups of one port in nvmetcli's shape: {@code [{"grpid": 1, "ana": {"state": "optimized"}}]}. */
    public ArrayNode anaGroups(String portIdText) throws ManagementException {
        return anaGroupsJson(requirePort(portIdText));
    }

    /**
     * Changes one ANA group's state on one port ({@code {"state": "inaccessible"}}, nvmetcli's state names); every
     * controller connected through the port gets the ANA change event; persisted (the control plane). 400: bad body
     * or group id; 404: no port; 500: the configuration file cannot be written (nothing changed).
     */
    public synchronized ObjectNode setAnaState(String portIdText, String groupText, JsonNode body)
        throws ManagementException {
        Port port = requirePort(portIdText);
        int group;
        try {
            group = Integer.parseInt(groupText);
        } catch (NumberFormatException e) {
            group = -1;
        }
        if (group < 1 || group > AnaStates.GROUP_MAX) {
            throw new ManagementException(BAD_REQUEST, "ANA group '" + groupText + "' is not in 1.." + AnaStates.GROUP_MAX);
        }
        if (body == null || !body.isObject() || !body.has("state") || !body.get("state").isTextual()) {
            throw new ManagementException(BAD_REQUEST, "expected {\"state\": \"optimized\" | \"non-optimized\" | "
                + "\"inaccessible\" | \"persistent-loss\" | \"change\"}");
        }
        for (var names = body.fieldNames(); names.hasNext(); ) {
            String name = names.next();
            if (!"state".equals(name)) {
                throw new ManagementException(BAD_REQUEST, "ana." + name + ": unknown field (known: state)");
            }
        }
        int state = AnaState.parse(body.get("state").asText());
        if (state < 0) {
            throw new ManagementException(BAD_REQUEST, "ana.state: '" + body.get("state").asText()
                + "' is not an ANA state (optimized, non-optimized, inaccessible, persistent-loss, change)");
        }
        int old;
        try {
            old = daemon.controlPlane().setAnaStates("HTTP API", port.portId(), java.util.Map.of(group, state))
                .get(group);
        } catch (ControlException e) {
            throw refused(e);
        }
        ObjectNode o = mapper.createObjectNode();
        o.put("portid", port.portId());
        o.put("grpid", group);
        o.putObject("ana").put("state", AnaState.name(state));
        o.put("previous_state", AnaState.name(old));
        return o;
    }

    private Port requirePort(String portIdText) throws ManagementException {
        for (Port p : daemon.model().ports()) {
            if (Integer.toString(p.portId()).equals(portIdText)) {
                return p;
            }
        }
        throw new ManagementException(NOT_FOUND, "no port " + portIdText);
    }

    private ArrayNode anaGroupsJson(Port p) {
        java.util.Set<Integer> groups = new java.util.TreeSet<>();
        for (int g = 1; g <= AnaStates.GROUP_MAX; g++) {
            if (p.ana().isConfigured(g)) {
                groups.add(g);
            }
        }
        for (String nqn : p.subsystems()) {
            Subsystem s = daemon.model().subsystem(nqn);
            if (s != null) {
                s.namespaces().forEach(ns -> groups.add(ns.anaGroupId()));
            }
        }
        ArrayNode list = mapper.createArrayNode();
        for (int g : groups) {
            ObjectNode o = list.addObject();
            o.put("grpid", g);
            o.putObject("ana").put("state", AnaState.name(p.ana().state(g)));
        }
        return list;
    }

    public ArrayNode controllers() {
        ArrayNode list = mapper.createArrayNode();
        for (Controller c : daemon.registry().controllers()) {
            list.add(json.controllerJson(c));
        }
        return list;
    }

    public ObjectNode controller(String cntlidText) throws ManagementException {
        int cntlid;
        try {
            cntlid = Integer.parseInt(cntlidText);
        } catch (NumberFormatException e) {
            throw new ManagementException(BAD_REQUEST, "controller id '" + cntlidText + "' is not a number");
        }
        Controller c = daemon.registry().controller(cntlid);
        if (c == null) {
            throw new ManagementException(NOT_FOUND, "no live controller " + cntlid);
        }
        return json.controllerJson(c);
    }

    // ------------------------------------------------------------------------------------------------ changes

    /**
     * Adds a namespace from a configuration-shaped object. 400: not an object, a field invalid or unknown (the
     * message names it), a RAM namespace larger than the whole RAM budget, a device that cannot be opened;
     * 403: a file or block device outside {@code nvmeof4j.allowed_paths} (or none listed); 404: no such subsystem;
     * 409: the NSID is taken, or the RAM namespaces already there leave too little of the budget.
     */
    public synchronized ObjectNode addNamespace(String nqn, JsonNode body) throws ManagementException {
        Subsystem s = requireSubsystem(nqn);
        if (body == null || !body.isObject()) {
            throw new ManagementException(BAD_REQUEST, "expected a namespace object such as "
                + "{\"nsid\": 2, \"device\": {\"backend\": \"ram\", \"size\": \"64M\"}}");
        }
        NamespaceConfig nc;
        try {
            nc = TargetConfig.parseNamespace(body, "namespace", s.nqn(), baseDirectory);
        } catch (ConfigException e) {
            throw new ManagementException(BAD_REQUEST, e.getMessage());
        }
        if (!nc.enabled()) {
            throw new ManagementException(BAD_REQUEST, "namespace.enable: is 0; a disabled namespace cannot be added");
        }
        if (s.namespace(nc.nsid()) != null) {
            throw new ManagementException(CONFLICT, "subsystem " + nqn + " already has namespace "
                + Integer.toUnsignedString(nc.nsid()));
        }
        try {
            return json.namespaceJson(daemon.controlPlane().addNamespace("HTTP API", s.nqn(), nc));
        } catch (ControlException e) {
            throw refused(e);
        }
    }

    /**
     * Sets a namespace's QoS rate limits, SPDK's {@code bdev_set_qos_limit} parameters: each one given is set (0
     * removes it), the others stay; an IOPS limit is rounded up to a multiple of 1000 as SPDK does. Persisted, and
     * applied to running I/O at once. 400: not an object, an unknown field, a value not an integer in 0..2^63-1, or
     * no limit given; 404: no such subsystem or namespace.
     */
    public synchronized ObjectNode setQos(String nqn, String nsidText, JsonNode body) throws ManagementException {
        Subsystem s = requireSubsystem(nqn);
        int nsid = parseNsid(nsidText);
        if (s.namespace(nsid) == null) {
            throw new ManagementException(NOT_FOUND, "subsystem " + nqn + " has no namespace " + nsidText);
        }
        List<String> names = List.of(QosLimits.RW_IOS_PER_SEC, QosLimits.RW_MBYTES_PER_SEC, QosLimits.R_MBYTES_PER_SEC,
            QosLimits.W_MBYTES_PER_SEC);
        if (body == null || !body.isObject() || body.isEmpty()) {
            throw new ManagementException(BAD_REQUEST, "expected at least one of " + names + ", such as "
                + "{\"rw_ios_per_sec\": 20000} (0 removes a limit)");
        }
        long[] values = new long[names.size()];
        QosLimits before = s.namespace(nsid).qos().limits();
        long[] current = {before.rwIosPerSec(), before.rwMbytesPerSec(), before.rMbytesPerSec(),
            before.wMbytesPerSec()};
        for (java.util.Iterator<String> it = body.fieldNames(); it.hasNext(); ) {
            String field = it.next();
            if (!names.contains(field)) {
                throw new ManagementException(BAD_REQUEST, "qos." + field + ": unknown field (known: "
                    + String.join(", ", names) + ")");
            }
        }
        for (int i = 0; i < names.size(); i++) {
            JsonNode v = body.get(names.get(i));
            if (v == null) {
                values[i] = current[i];
            } else if (!v.isIntegralNumber() || !v.canConvertToLong() || v.asLong() < 0) {
                throw new ManagementException(BAD_REQUEST, "qos." + names.get(i) + ": " + v + " is not an integer in 0.."
                    + Long.MAX_VALUE);
            } else {
                values[i] = v.asLong();
            }
        }
        try {
            daemon.controlPlane().setQos("HTTP API", s.nqn(), nsid, QosLimits.of(values[0], values[1], values[2],
                values[3]));
        } catch (ControlException e) {
            throw refused(e);
        }
        return json.namespaceJson(s.namespace(nsid));
    }

    /** Removes a namespace. 400: NSID not a number; 404: no such subsystem or namespace. */
    public synchronized ObjectNode removeNamespace(String nqn, String nsidText) throws ManagementException {
        Subsystem s = requireSubsystem(nqn);
        int nsid = parseNsid(nsidText);
        if (s.namespace(nsid) == null) {
            throw new ManagementException(NOT_FOUND, "subsystem " + nqn + " has no namespace " + nsidText);
        }
        try {
            return json.namespaceJson(daemon.controlPlane().removeNamespace("HTTP API", s.nqn(), nsid));
        } catch (ControlException e) {
            throw refused(e);
        }
    }

    /**
     * Resizes a namespace: {@code {"size": "64M"}} (a null device, or a file no smaller than that) or {@code {}} (a file
     * or block device: take the size it has now). Growing only. Returns the namespace. 400: malformed, shrinking, a
     * RAM namespace, a file smaller than asked; 404: no such subsystem or namespace; 409: the file shrank under it.
     */
    public synchronized ObjectNode resizeNamespace(String nqn, String nsidText, JsonNode body)
        throws ManagementException {
        Subsystem s = requireSubsystem(nqn);
        int nsid = parseNsid(nsidText);
        if (s.namespace(nsid) == null) {
            throw new ManagementException(NOT_FOUND, "subsystem " + nqn + " has no namespace " + nsidText);
        }
        long size = 0;
        if (body != null && body.has("size")) {
            try {
                size = io.nvmeof4j.target.config.Sizes.parse(body.get("size").asText());
            } catch (IllegalArgumentException e) {
                throw new ManagementException(BAD_REQUEST, "size: " + e.getMessage());
            }
            if (size <= 0) {
                throw new ManagementException(BAD_REQUEST, "size must be positive");
            }
        } else if (body != null && !body.isObject() && !body.isNull()) {
            throw new ManagementException(BAD_REQUEST, "expected {\"size\": \"64M\"} or {} (rescan the file)");
        }
        try {
            daemon.controlPlane().resizeNamespace("HTTP API", s.nqn(), nsid, size);
        } catch (ControlException e) {
            throw refused(e);
        }
        return json.namespaceJson(s.namespace(nsid));
    }

    /**
     * Sets or rotates the DH-HMAC-CHAP credentials of a host, {@code {"key", "ctrl_key", "hash", "dhgroup"}} as in
     * the configuration's {@code hosts[].dhchap}; an empty key removes them. Persisted in the configuration file
     * (control plane). Takes effect at the host's next Connect
     * and re-authentication; authenticated queues stay up. The answer never carries a key. 400: bad NQN or settings.
     */
    public synchronized ObjectNode setDhchap(String host, JsonNode body) throws ManagementException {
        return hostKeys.setDhchap(host, body);
    }

    /** Removes a host's DH-HMAC-CHAP credentials (it then connects without authentication). 404: it had none. */
    public synchronized ObjectNode removeDhchap(String host) throws ManagementException {
        return hostKeys.removeDhchap(host);
    }

    /** {@code nqn} checked as an NQN; 400 with {@code message} and the reason when it is not one. */
    static String checkNqn(String nqn, String message) throws ManagementException {
        try {
            return TargetConfig.checkNqn(nqn);
        } catch (IllegalArgumentException e) {
            throw new ManagementException(BAD_REQUEST, message + e.getMessage());
        }
    }

    /**
     * Sets or rotates a host's TLS PSK, {@code {"key": "NVMeTLSkey-1:01:...:", "psk_derivation": "compat"|"rfc8446"}}
     * as the configuration's {@code hosts[].tls_key} and {@code tls_psk_derivation}. Persisted (control plane);
     * new TLS connections use it at once and the old key is refused, established ones go on. The answer never
     * carries a key. 400: bad NQN, key or derivation.
     */
    public synchronized ObjectNode setTlsKey(String host, JsonNode body) throws ManagementException {
        return hostKeys.setTlsKey(host, body);
    }

    /** Removes a host's TLS PSK: its TLS handshakes are refused from now on. 404: it had none. */
    public synchronized ObjectNode removeTlsKey(String host) throws ManagementException {
        return hostKeys.removeTlsKey(host);
    }

    /** Allows a host ({@code {"nqn": "..."}}). 400: no or malformed NQN; 404: no subsystem; 409: already allowed. */
    public synchronized ObjectNode addHost(String nqn, JsonNode body) throws ManagementException {
        Subsystem s = requireSubsystem(nqn);
        if (body == null || !body.isObject() || !body.has("nqn") || !body.get("nqn").isTextual()) {
            throw new ManagementException(BAD_REQUEST, "expected {\"nqn\": \"nqn.2014-08.org.nvmexpress:uuid:...\"}");
        }
        for (var names = body.fieldNames(); names.hasNext(); ) {
            String name = names.next();
            if (!"nqn".equals(name)) {
                throw new ManagementException(BAD_REQUEST, "host." + name + ": unknown field (known: nqn)");
            }
        }
        String host = body.get("nqn").asText();
        host = checkNqn(host, "host.nqn: not a valid NQN: ");
        if (Port.DISCOVERY_NQN.equals(host)) {
            throw new ManagementException(BAD_REQUEST, "host.nqn: the discovery NQN is not a host NQN");
        }
        try {
            daemon.controlPlane().addHost("HTTP API", s.nqn(), host);
        } catch (ControlException e) {
            throw refused(e);
        }
        return hosts(nqn);
    }

    /**
     * Disallows a host: its next Connect is refused (Connect Invalid Host); controllers it already has stay until they
     * disconnect, as with the Linux target. 404: no subsystem, or the host is not on the list.
     */
    public synchronized ObjectNode removeHost(String nqn, String host) throws ManagementException {
        Subsystem s = requireSubsystem(nqn);
        try {
            daemon.controlPlane().removeHost("HTTP API", s.nqn(), host);
        } catch (ControlException e) {
            throw refused(e);
        }
        return hosts(nqn);
    }

    /**
     * Creates an empty subsystem from a configuration-shaped object ({@code {"nqn": "...", "attr": {"allow_any_host":
     * "1", "serial": ..., "model": ..., "cntlid_min": ..., "cntlid_max": ...}}}). 400: malformed; 409: NQN taken.
     */
    public synchronized ObjectNode createSubsystem(JsonNode body) throws ManagementException {
        if (body == null || !body.isObject() || !body.path("nqn").isTextual()) {
            throw new ManagementException(BAD_REQUEST, "expected {\"nqn\": \"nqn....\", \"attr\": {...}}");
        }
        for (var names = body.fieldNames(); names.hasNext(); ) {
            String name = names.next();
            if (!name.equals("nqn") && !name.equals("attr")) {
                throw new ManagementException(BAD_REQUEST, "subsystem." + name + ": unknown field (known: nqn, attr; "
                    + "add hosts, namespaces and listeners afterwards)");
            }
        }
        String nqn = checkNqn(body.get("nqn").asText(), "subsystem.nqn: not a valid NQN: ");
        JsonNode attr = body.path("attr");
        if (!attr.isMissingNode() && !attr.isObject()) {
            throw new ManagementException(BAD_REQUEST, "subsystem.attr: expected an object");
        }
        for (var names = attr.fieldNames(); names.hasNext(); ) {
            String name = names.next();
            if (!java.util.Set.of("allow_any_host", "serial", "model", "cntlid_min", "cntlid_max", "max_namespaces")
                .contains(name)) {
                throw new ManagementException(BAD_REQUEST, "subsystem.attr." + name + ": unknown field (known: "
                    + "allow_any_host, serial, model, cntlid_min, cntlid_max, max_namespaces)");
            }
        }
        String any = attr.path("allow_any_host").asText("0");
        try {
            daemon.controlPlane().createSubsystem("HTTP API", nqn, attr.has("serial") ? attr.get("serial").asText() : null,
                attr.has("model") ? attr.get("model").asText() : null, any.equals("1") || any.equals("true"),
                attr.has("cntlid_min") ? attr.get("cntlid_min").asInt(-1) : 1,
                attr.has("cntlid_max") ? attr.get("cntlid_max").asInt(-1) : 0xFFEF,
                attr.has("max_namespaces") ? attr.get("max_namespaces").asInt(-1) : 0);
        } catch (ControlException e) {
            throw refused(e);
        }
        return subsystem(nqn);
    }

    /** Deletes a subsystem, its namespaces, and the ports only it used. 404: no such subsystem. */
    public synchronized ObjectNode deleteSubsystem(String nqn) throws ManagementException {
        ObjectNode before = subsystem(nqn);
        try {
            daemon.controlPlane().deleteSubsystem("HTTP API", nqn);
        } catch (ControlException e) {
            throw refused(e);
        }
        return before;
    }

    /**
     * Lets hosts reach a subsystem at {@code {"trtype": "tcp", "adrfam": "ipv4", "traddr": "...", "trsvcid":
     * "4420"}} (a port's {@code addr}); returns the port. 400: malformed, or the address cannot be bound.
     */
    public synchronized ObjectNode addListener(String nqn, JsonNode body) throws ManagementException {
        requireSubsystem(nqn);
        if (body == null || !body.isObject() || !body.path("traddr").isTextual()) {
            throw new ManagementException(BAD_REQUEST, "expected {\"trtype\": \"tcp\", \"adrfam\": \"ipv4\", "
                + "\"traddr\": \"...\", \"trsvcid\": \"4420\"}");
        }
        io.nvmeof4j.protocol.spi.TransportType trtype;
        io.nvmeof4j.protocol.spi.AddressFamily adrfam;
        try {
            trtype = io.nvmeof4j.protocol.spi.TransportType.fromConfigName(body.path("trtype").asText("tcp"));
            adrfam = io.nvmeof4j.protocol.spi.AddressFamily.fromConfigName(body.path("adrfam").asText("ipv4"));
        } catch (IllegalArgumentException e) {
            throw new ManagementException(BAD_REQUEST, "listener: " + e.getMessage());
        }
        io.nvmeof4j.target.config.PortConfig port;
        try {
            port = daemon.controlPlane().addListener("HTTP API", nqn, trtype, adrfam, body.get("traddr").asText(),
                body.path("trsvcid").asText("4420"));
        } catch (ControlException e) {
            throw refused(e);
        }
        Port bound = daemon.model().port(port.portId());
        ObjectNode o = mapper.createObjectNode();
        o.put("portid", bound.portId());
        o.put("trtype", bound.address().type().configName());
        o.put("traddr", bound.address().traddr());
        o.put("trsvcid", bound.address().trsvcid());
        return o;
    }

    /** Stops exporting a subsystem on port {@code portid}; its hosts there are disconnected. 404: not exported there. */
    public synchronized ObjectNode removeListener(String nqn, String portIdText) throws ManagementException {
        requireSubsystem(nqn);
        Port port;
        try {
            port = daemon.model().port(Integer.parseInt(portIdText));
        } catch (NumberFormatException e) {
            throw new ManagementException(BAD_REQUEST, "portid '" + portIdText + "' is not a number");
        }
        if (port == null || !port.exports(nqn)) {
            throw new ManagementException(NOT_FOUND, "subsystem " + nqn + " is not exported on port " + portIdText);
        }
        io.nvmeof4j.target.config.PortConfig pc = daemon.controlPlane().configuration().ports().stream()
            .filter(c -> c.portId() == port.portId()).findFirst().orElse(null);
        if (pc == null) {
            throw new ManagementException(NOT_FOUND, "no port " + portIdText);
        }
        try {
            daemon.controlPlane().removeListener("HTTP API", nqn, pc.address().type(), pc.address().traddr(),
                pc.address().trsvcid());
        } catch (ControlException e) {
            throw refused(e);
        }
        return subsystem(nqn);
    }

    /** The referrals of port {@code portid}, in the configuration's shape. 404: no such port. */
    public ArrayNode referrals(String portIdText) throws ManagementException {
        io.nvmeof4j.target.config.PortConfig pc = requirePortConfig(portIdText);
        JsonNode doc = daemon.controlPlane().document();
        for (JsonNode port : doc.path("ports")) {
            if (port.path("portid").asInt(-1) == pc.portId() && port.get("referrals") instanceof ArrayNode a) {
                return a;
            }
        }
        return mapper.createArrayNode();
    }

    /**
     * Adds a referral to port {@code portid} ({@code ports[].referrals[]}'s shape: {@code {"name", "addr": {"trtype",
     * "adrfam", "traddr", "trsvcid", "treq"}, "portid", "subnqn"}}); hosts reading the port's discovery log see it.
     * 400: malformed; 404: no such port; 409: the port refers to that service already.
     */
    public synchronized ObjectNode addReferral(String portIdText, JsonNode body) throws ManagementException {
        io.nvmeof4j.target.config.PortConfig pc = requirePortConfig(portIdText);
        JsonNode addr = body == null ? null : body.get("addr");
        if (body == null || !body.isObject() || addr == null || !addr.isObject() || !addr.path("traddr").isTextual()
            || !addr.has("trsvcid")) {
            throw new ManagementException(BAD_REQUEST, "expected {\"name\": \"...\", \"addr\": {\"trtype\": \"tcp\", "
                + "\"adrfam\": \"ipv4\", \"traddr\": \"...\", \"trsvcid\": \"8009\"}}");
        }
        io.nvmeof4j.target.config.ReferralConfig r;
        try {
            io.nvmeof4j.protocol.spi.TransportType trtype =
                io.nvmeof4j.protocol.spi.TransportType.fromConfigName(addr.path("trtype").asText("tcp"));
            io.nvmeof4j.protocol.spi.AddressFamily adrfam =
                io.nvmeof4j.protocol.spi.AddressFamily.fromConfigName(addr.path("adrfam").asText("ipv4"));
            int trsvcid = Integer.parseInt(addr.get("trsvcid").asText());
            if (trsvcid < 1 || trsvcid > 65535) {
                throw new IllegalArgumentException("trsvcid " + trsvcid + " is not a port number");
            }
            String traddr = addr.get("traddr").asText();
            String name = body.path("name").asText(trtype.configName() + "-" + traddr.replace(':', '.') + "-" + trsvcid);
            String subnqn = body.has("subnqn") ? TargetConfig.checkNqn(body.get("subnqn").asText())
                : Port.DISCOVERY_NQN;
            r = new io.nvmeof4j.target.config.ReferralConfig(name, body.path("portid").asInt(0),
                body.path("enable").asInt(1) != 0,
                new io.nvmeof4j.protocol.spi.TransportAddress(trtype, adrfam, traddr, Integer.toString(trsvcid)),
                addr.path("treq").asText("not specified"), subnqn);
        } catch (IllegalArgumentException e) {
            throw new ManagementException(BAD_REQUEST, "referral: " + e.getMessage());
        }
        try {
            io.nvmeof4j.target.config.ReferralConfig added = daemon.controlPlane().addReferral("HTTP API", pc.portId(), r);
            for (JsonNode j : referrals(portIdText)) {
                if (j.path("name").asText().equals(added.name())) {
                    return (ObjectNode) j;
                }
            }
            throw new ManagementException(500, "referral " + added.name() + " added but not found");
        } catch (ControlException e) {
            throw refused(e);
        }
    }

    /** Removes referral {@code name} from port {@code portid}. 404: no such port or referral. */
    public synchronized ArrayNode removeReferral(String portIdText, String name) throws ManagementException {
        io.nvmeof4j.target.config.PortConfig pc = requirePortConfig(portIdText);
        try {
            daemon.controlPlane().removeReferral("HTTP API", pc.portId(), r -> r.name().equals(name), name);
        } catch (ControlException e) {
            throw refused(e);
        }
        return referrals(portIdText);
    }

    private io.nvmeof4j.target.config.PortConfig requirePortConfig(String portIdText) throws ManagementException {
        int portId;
        try {
            portId = Integer.parseInt(portIdText);
        } catch (NumberFormatException e) {
            throw new ManagementException(BAD_REQUEST, "portid '" + portIdText + "' is not a number");
        }
        return daemon.controlPlane().configuration().ports().stream().filter(c -> c.portId() == portId).findFirst()
            .orElseThrow(() -> new ManagementException(NOT_FOUND, "no port " + portIdText));
    }

    /** A change the control plane refused, as an HTTP status. */
    static ManagementException refused(ControlException e) {
        return new ManagementException(switch (e.kind()) {
            case INVALID -> BAD_REQUEST;
            case NOT_FOUND -> NOT_FOUND;
            case EXISTS, BUSY, NO_SPACE -> CONFLICT;
            case FORBIDDEN -> FORBIDDEN;
            case IO -> e.getCause() instanceof io.nvmeof4j.target.config.ConfigException ? BAD_REQUEST
                : e.getMessage().startsWith("cannot write the configuration file") ? 500 : BAD_REQUEST;
        }, e.getMessage());
    }

    // ------------------------------------------------------------------------------------------------ JSON

    private List<Subsystem> sortedSubsystems() {
        List<Subsystem> list = new ArrayList<>(daemon.model().subsystems());
        list.sort((a, b) -> a.nqn().compareTo(b.nqn()));
        return Collections.unmodifiableList(list);
    }

    private Subsystem requireSubsystem(String nqn) throws ManagementException {
        Subsystem s = daemon.model().subsystem(nqn);
        if (s == null) {
            throw new ManagementException(NOT_FOUND, "no subsystem " + nqn);
        }
        return s;
    }

    private static int parseNsid(String text) throws ManagementException {
        long v;
        try {
            v = Long.parseLong(text);
        } catch (NumberFormatException e) {
            throw new ManagementException(BAD_REQUEST, "namespace id '" + text + "' is not a number");
        }
        if (v < 1 || v > Subsystem.MAX_NSID) {
            throw new ManagementException(BAD_REQUEST, "namespace id " + text + " outside 1.." + Subsystem.MAX_NSID
                + " (NN, the namespaces a subsystem supports)");
        }
        return (int) v;
    }

}
