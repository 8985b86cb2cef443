package io.nvmeof4j.target.management;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.nvmeof4j.protocol.Nqn;
import io.nvmeof4j.protocol.ana.AnaState;
import io.nvmeof4j.protocol.reservation.ReservationType;
import io.nvmeof4j.target.model.AnaStates;
import io.nvmeof4j.target.reservation.Reservations;
import io.nvmeof4j.target.config.ConfigException;
import io.nvmeof4j.target.config.NamespaceConfig;
import io.nvmeof4j.target.config.TargetConfig;
import io.nvmeof4j.target.controller.Controller;
import io.nvmeof4j.target.controller.QueueInfo;
import io.nvmeof4j.target.daemon.TargetDaemon;
import io.nvmeof4j.target.model.Namespace;
import io.nvmeof4j.target.model.Port;
import io.nvmeof4j.target.model.Subsystem;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;
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
 * identifiers; relative device paths resolve against the configuration file's directory.
 */
public final class ManagementApi {
    private static final Logger LOG = LoggerFactory.getLogger(ManagementApi.class);
    public static final int OK = 200;
    public static final int CREATED = 201;
    public static final int BAD_REQUEST = 400;
    public static final int NOT_FOUND = 404;
    public static final int CONFLICT = 409;

    private final TargetDaemon daemon;
    private final ObjectMapper mapper;
    private final Path baseDirectory;

    public ManagementApi(TargetDaemon daemon, ObjectMapper mapper) {
        this.daemon = Objects.requireNonNull(daemon, "daemon");
        this.mapper = Objects.requireNonNull(mapper, "mapper");
        this.baseDirectory = daemon.config().source().map(p -> p.toAbsolutePath().getParent())
            .orElse(Path.of("").toAbsolutePath());
    }

    // ------------------------------------------------------------------------------------------------ reading

    public ArrayNode subsystems() {
        ArrayNode list = mapper.createArrayNode();
        for (Subsystem s : sortedSubsystems()) {
            list.add(subsystemJson(s));
        }
        return list;
    }

    public ObjectNode subsystem(String nqn) throws ManagementException {
        return subsystemJson(requireSubsystem(nqn));
    }

    public ArrayNode namespaces(String nqn) throws ManagementException {
        Subsystem s = requireSubsystem(nqn);
        ArrayNode list = mapper.createArrayNode();
        for (Namespace ns : s.namespaces()) {
            list.add(namespaceJson(ns));
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
        return namespaceJson(ns);
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
        Map<String, ObjectNode> byNqn = new TreeMap<>();
        for (String h : daemon.config().hosts()) {
            hostEntry(byNqn, h);
        }
        for (Subsystem s : sortedSubsystems()) {
            for (String h : new TreeSet<>(s.allowedHosts())) {
                ((ArrayNode) hostEntry(byNqn, h).get("allowed_on")).add(s.nqn());
            }
        }
        for (Controller c : daemon.registry().controllers()) {
            ((ArrayNode) hostEntry(byNqn, c.hostNqn()).get("controllers")).add(c.cntlid());
        }
        ArrayNode list = mapper.createArrayNode();
        byNqn.values().forEach(list::add);
        return list;
    }

    private ObjectNode hostEntry(Map<String, ObjectNode> byNqn, String nqn) {
        return byNqn.computeIfAbsent(nqn, n -> {
            ObjectNode o = mapper.createObjectNode();
            o.put("nqn", n);
            o.putArray("allowed_on");
            o.putArray("controllers");
            return o;
        });
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
     * controller connected through the port gets the ANA change event. 400: bad body or group id; 404: no port.
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
        int old = daemon.setAnaState(port.portId(), group, state);
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
            list.add(controllerJson(c));
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
        return controllerJson(c);
    }

    // ------------------------------------------------------------------------------------------------ changes

    /**
     * Adds a namespace from a configuration-shaped object. 400: not an object, a field invalid (the message names
     * it), a device that cannot be opened; 404: no such subsystem; 409: the NSID is taken.
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
        Namespace added;
        try {
            added = daemon.addNamespace(s.nqn(), nc);
        } catch (IllegalStateException e) {
            throw new ManagementException(CONFLICT, e.getMessage());
        } catch (IllegalArgumentException e) {
            throw new ManagementException(NOT_FOUND, e.getMessage());
        } catch (IOException e) {
            throw new ManagementException(BAD_REQUEST, e.getMessage());
        }
        return namespaceJson(added);
    }

    /** Removes a namespace. 400: NSID not a number; 404: no such subsystem or namespace. */
    public synchronized ObjectNode removeNamespace(String nqn, String nsidText) throws ManagementException {
        Subsystem s = requireSubsystem(nqn);
        int nsid = parseNsid(nsidText);
        Namespace removed;
        try {
            removed = daemon.removeNamespace(s.nqn(), nsid);
        } catch (IllegalStateException e) {
            throw new ManagementException(CONFLICT, e.getMessage());
        }
        if (removed == null) {
            throw new ManagementException(NOT_FOUND, "subsystem " + nqn + " has no namespace " + nsidText);
        }
        return namespaceJson(removed);
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
        if (!Nqn.isValid(host)) {
            throw new ManagementException(BAD_REQUEST, "host.nqn: '" + host + "' is not a valid NQN");
        }
        if (Port.DISCOVERY_NQN.equals(host)) {
            throw new ManagementException(BAD_REQUEST, "host.nqn: the discovery NQN is not a host NQN");
        }
        if (!s.addAllowedHost(host)) {
            throw new ManagementException(CONFLICT, "host " + host + " is already allowed on " + nqn);
        }
        discoveryChanged();
        LOG.info("{}: host {} allowed", nqn, host);
        return hosts(nqn);
    }

    /**
     * Disallows a host: its next Connect is refused (Connect Invalid Host); controllers it already has stay until they
     * disconnect, as with the Linux target. 404: no subsystem, or the host is not on the list.
     */
    public synchronized ObjectNode removeHost(String nqn, String host) throws ManagementException {
        Subsystem s = requireSubsystem(nqn);
        if (!s.removeAllowedHost(host)) {
            throw new ManagementException(NOT_FOUND, "host " + host + " is not on the allowed list of " + nqn);
        }
        discoveryChanged();
        LOG.info("{}: host {} no longer allowed{}", nqn, host,
            s.allowAnyHost() ? " (allow_any_host is on: it may still connect)" : "");
        return hosts(nqn);
    }

    private void discoveryChanged() {
        daemon.model().discoveryChanged();
        daemon.registry().notifyDiscoveryChanged();
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
        if (v < 1 || v > 0xFFFFFFFEL) {
            throw new ManagementException(BAD_REQUEST, "namespace id " + text + " outside 1..4294967294");
        }
        return (int) v;
    }

    private ObjectNode subsystemJson(Subsystem s) {
        ObjectNode o = mapper.createObjectNode();
        o.put("nqn", s.nqn());
        o.put("serial", s.serialNumber());
        o.put("model", s.modelNumber());
        o.put("firmware", s.firmwareRevision());
        o.put("allow_any_host", s.allowAnyHost());
        ArrayNode hosts = o.putArray("allowed_hosts");
        new TreeSet<>(s.allowedHosts()).forEach(hosts::add);
        ArrayNode nss = o.putArray("namespaces");
        for (Namespace ns : s.namespaces()) {
            nss.add(namespaceJson(ns));
        }
        o.put("controllers", daemon.registry().controllers(s.nqn()).size());
        return o;
    }

    private ObjectNode namespaceJson(Namespace ns) {
        ObjectNode o = mapper.createObjectNode();
        o.put("nsid", Integer.toUnsignedLong(ns.nsid()));
        o.put("device", ns.device().description());
        o.put("block_size", ns.blockSize());
        o.put("blocks", ns.blockCount());
        o.put("size_bytes", ns.blockCount() * ns.blockSize());
        o.put("uuid", ns.uuid().toString());
        StringBuilder nguid = new StringBuilder(32);
        for (byte b : ns.nguid()) {
            nguid.append(Character.forDigit((b >> 4) & 0xF, 16)).append(Character.forDigit(b & 0xF, 16));
        }
        o.put("nguid", nguid.toString());
        o.put("ana_grpid", ns.anaGroupId());
        Reservations.Report r = ns.reservations().report();
        ObjectNode resv = o.putObject("reservation");
        resv.put("generation", Integer.toUnsignedLong(r.generation()));
        resv.put("type", ReservationType.name(r.type()));
        resv.put("ptpl", r.ptpl());
        ArrayNode regs = resv.putArray("registrants");
        for (Reservations.Registrant reg : r.registrants()) {
            // Keys are the hosts' secrets for fencing each other: never shown, only who holds one.
            regs.addObject().put("host_id", reg.host().toString()).put("holds_reservation", r.holds(reg));
        }
        return o;
    }

    private ObjectNode controllerJson(Controller c) {
        ObjectNode o = mapper.createObjectNode();
        o.put("cntlid", c.cntlid());
        o.put("subsystem", c.subsystemNqn());
        o.put("discovery", c.isDiscovery());
        o.put("host_nqn", c.hostNqn());
        o.put("host_id", c.hostId().toString());
        o.put("peer", c.peer());
        o.put("transport", c.transportType().configName());
        o.put("portid", c.port().portId());
        o.put("ready", c.isReady());
        o.put("keep_alive_timeout_ms", c.keepAliveTimeoutMillis());
        o.put("created", c.createdAt().toString());
        ArrayNode queues = o.putArray("queues");
        for (QueueInfo q : c.queues()) {
            ObjectNode qo = queues.addObject();
            qo.put("qid", q.qid());
            qo.put("peer", q.peer());
            qo.put("commands_outstanding", q.commandsOutstanding());
        }
        return o;
    }
}
