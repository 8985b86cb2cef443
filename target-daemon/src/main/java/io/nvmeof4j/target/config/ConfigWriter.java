package io.nvmeof4j.target.config;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;

import io.nvmeof4j.protocol.discovery.DiscoveryLogEntry;
import io.nvmeof4j.protocol.spi.ConnectionLimits;
import io.nvmeof4j.protocol.spi.TransportAddress;
import io.nvmeof4j.target.backend.QosLimits;
import io.nvmeof4j.tcp.tls.ConfiguredPsk;
import io.nvmeof4j.tcp.tls.HostPskStore;
import io.nvmeof4j.tcp.tls.NvmeTlsKeys;

import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * Writes a {@link TargetConfig} back as the nvmetcli-shaped JSON document {@link TargetConfig#parse} reads, so that
 * {@code parse(write(c))} describes the same hosts, ports, subsystems and namespaces as {@code c}.
 * <p>The previous document ({@code original}) is merged in: every object the configuration model has no field for
 * keeps its keys (the whole {@code "nvmeof4j"} settings object, a host's {@code dhchap}, a port's
 * {@code referrals}, ...). Objects are matched by their
 * identity: hosts and subsystems by NQN, ports by {@code portid}, namespaces by NSID. The fields the model does
 * have are written from the model, as nvmetcli writes them (attributes as strings), so a file the Linux target's
 * {@code nvmetcli restore} also reads stays one. Values are written explicitly (derived serial numbers, UUIDs and
 * NGUIDs included), so a later change of a default does not change what an existing target serves; except the
 * firmware revision while it is the default, which is meant to follow the nvmeof4j version.
 * <p>Without a previous document (a daemon started without a file, {@code ctl save}), the model's fields main
 * keeps outside the nvmetcli objects are written from the model too: the {@code "nvmeof4j"} settings, a port's
 * {@code addr.tsas}, a host's {@code tls_key} and {@code tls_psk_derivation}. Otherwise a TLS port would be written
 * back as a plain one ("required" without "tls1.3" is then refused) and a host's PSK would be lost.
 */
public final class ConfigWriter {
    private static final ObjectMapper MAPPER = JsonMapper.builder().enable(SerializationFeature.INDENT_OUTPUT).build();
    private static final JsonNodeFactory NODES = JsonNodeFactory.instance;

    private ConfigWriter() {
    }

    /** The document for {@code config}, keeping what {@code original} (may be null) holds beyond the model. */
    public static ObjectNode write(TargetConfig config, JsonNode original) {
        ObjectNode root = original != null && original.isObject() ? ((ObjectNode) original).deepCopy()
            : NODES.objectNode();
        if (!(root.get("nvmeof4j") instanceof ObjectNode)) {
            // The document the configuration came from holds the settings as written (relative paths, the socket);
            // only a configuration without one gets them from the model.
            root.set("nvmeof4j", settings(config.daemon()));
        }
        root.set("hosts", hosts(config, root.get("hosts")));
        root.set("ports", ports(config, root.get("ports")));
        root.set("subsystems", subsystems(config, root.get("subsystems")));
        return root;
    }

    /** The document as the text written to the file (two-space indentation, a final newline). */
    public static String text(JsonNode document) {
        try {
            return MAPPER.writeValueAsString(document) + "\n";
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("a JSON tree that cannot be written: " + e.getMessage(), e);
        }
    }

    private static ArrayNode hosts(TargetConfig config, JsonNode before) {
        Map<String, ObjectNode> old = byKey(before, "nqn");
        ArrayNode list = NODES.arrayNode();
        for (String nqn : config.hosts()) {
            ObjectNode h = old.getOrDefault(nqn, NODES.objectNode());
            h.put("nqn", nqn);
            HostPskStore.HostPsk psk = config.tlsKeys().get(nqn);
            if (psk == null) {
                h.remove("tls_key");
                h.remove("tls_psk_derivation");
            } else if (!h.hasNonNull("tls_key") || !ConfiguredPsk.parse(h.get("tls_key").asText()).sameKey(psk.key())) {
                // Kept as written when it is the same key (the operator's text); the model's key otherwise.
                h.put("tls_key", psk.key().toInterchangeFormat());
                h.put("tls_psk_derivation",
                    psk.version0Derivation() == NvmeTlsKeys.Derivation.RFC8446 ? "rfc8446" : "compat");
            }
            list.add(h);
        }
        return list;
    }

    private static ArrayNode ports(TargetConfig config, JsonNode before) {
        Map<String, ObjectNode> old = byKey(before, "portid");
        ArrayNode list = NODES.arrayNode();
        for (PortConfig p : config.ports()) {
            ObjectNode o = old.getOrDefault(Integer.toString(p.portId()), NODES.objectNode());
            o.put("portid", p.portId());
            ObjectNode addr = address(o, p.address(), p.treq());
            if (p.options().tcpSecurityType() == DiscoveryLogEntry.TCP_SECTYPE_TLS13) {
                addr.put("tsas", "tls1.3");
            } else if ("tls1.3".equalsIgnoreCase(addr.path("tsas").asText())) {
                addr.remove("tsas");
            }
            ObjectNode param = object(o, "param");
            param.put("inline_data_size", Integer.toString(p.options().inlineDataSize()));
            param.put("max_queue_size", Integer.toString(p.options().maxQueueSize()));
            ArrayNode subs = o.putArray("subsystems");
            p.subsystems().forEach(subs::add);
            anaGroups(o, p);
            o.set("referrals", referrals(p, o.get("referrals")));
            list.add(o);
        }
        return list;
    }

    /** The {@code addr} object of a port or a referral in {@code o}, as nvmetcli writes it; other members kept. */
    private static ObjectNode address(ObjectNode o, TransportAddress a, String treq) {
        ObjectNode addr = object(o, "addr");
        addr.put("trtype", a.type().configName());
        addr.put("adrfam", a.family().configName());
        addr.put("traddr", a.traddr());
        addr.put("trsvcid", a.trsvcid());
        addr.put("treq", treq);
        return addr;
    }

    /** A port's referrals in nvmetcli's shape, merged by name into what the document held. */
    private static ArrayNode referrals(PortConfig p, JsonNode before) {
        Map<String, ObjectNode> old = byKey(before, "name");
        ArrayNode list = NODES.arrayNode();
        for (ReferralConfig r : p.referrals()) {
            ObjectNode o = old.getOrDefault(r.name(), NODES.objectNode());
            o.put("name", r.name());
            o.put("portid", r.portId());
            o.put("enable", r.enabled() ? 1 : 0);
            address(o, r.address(), r.treq());
            if (r.isDiscovery()) {
                o.remove("subnqn");
            } else {
                o.put("subnqn", r.subnqn());
            }
            list.add(o);
        }
        return list;
    }

    /**
     * A port's {@code ana_groups} as nvmetcli writes them ({@code [{"grpid": 1, "ana": {"state": "optimized"}}]}),
     * from the model: a state changed live is what the port serves after a restart. A port without configured groups
     * gets none (group 1 optimized, the others inaccessible, is what the parser gives it then).
     */
    private static void anaGroups(ObjectNode port, PortConfig p) {
        if (p.anaGroups().isEmpty()) {
            port.remove("ana_groups");
            return;
        }
        ArrayNode groups = port.putArray("ana_groups");
        new java.util.TreeMap<>(p.anaGroups()).forEach((grpid, state) -> {
            ObjectNode g = groups.addObject();
            g.put("grpid", grpid);
            g.putObject("ana").put("state", io.nvmeof4j.protocol.ana.AnaState.name(state));
        });
    }

    private static ArrayNode subsystems(TargetConfig config, JsonNode before) {
        Map<String, ObjectNode> old = byKey(before, "nqn");
        ArrayNode list = NODES.arrayNode();
        for (SubsystemConfig s : config.subsystems()) {
            ObjectNode o = old.getOrDefault(s.nqn(), NODES.objectNode());
            o.put("nqn", s.nqn());
            ObjectNode attr = object(o, "attr");
            attr.put("allow_any_host", s.allowAnyHost() ? "1" : "0");
            attr.put("serial", s.serial());
            attr.put("model", s.model());
            if (s.firmware().equals(TargetConfig.firmwareDefault())) {
                // The default follows the nvmeof4j version: written out, an upgrade would keep reporting the old one.
                attr.remove("firmware");
            } else {
                attr.put("firmware", s.firmware());
            }
            if (s.version() != null) {
                attr.put("version", s.version());
            } else {
                attr.remove("version");
            }
            attr.put("cntlid_min", Integer.toString(s.cntlidMin()));
            attr.put("cntlid_max", Integer.toString(s.cntlidMax()));
            attr.put("qid_max", Integer.toString(s.qidMax()));
            if (s.maxNamespaces() > 0) {
                attr.put("max_namespaces", Integer.toString(s.maxNamespaces()));
            } else {
                attr.remove("max_namespaces");
            }
            ArrayNode hosts = o.putArray("allowed_hosts");
            s.allowedHosts().forEach(hosts::add);
            Map<String, ObjectNode> oldNs = byKey(o.get("namespaces"), "nsid");
            ArrayNode nss = NODES.arrayNode();
            for (NamespaceConfig n : s.namespaces()) {
                nss.add(namespace(n, oldNs.get(Integer.toUnsignedString(n.nsid()))));
            }
            o.set("namespaces", nss);
            list.add(o);
        }
        return list;
    }

    /**
     * The {@code "nvmeof4j"} object for {@code d}: every setting {@link SettingsSection} reads, so that parsing it gives
     * {@code d} again (the derived RAM budget is left out: it stays derived). Settings at their default are written
     * too: the daemon runs with them, and a later default must not change it; {@code hugepages} at its default (no
     * setting: populated RAM namespaces on hugepages) has no value of its own and is left out.
     */
    static ObjectNode settings(DaemonSettings d) {
        ObjectNode o = NODES.objectNode();
        o.put(DaemonSettings.REACTORS, d.reactors());
        if (d.reactorCpus() != null) {
            o.put(DaemonSettings.REACTOR_CPUS, d.reactorCpus().toString());
        }
        o.put(DaemonSettings.IDLE_STRATEGY, d.idleStrategy().configName());
        o.put(DaemonSettings.IDLE_SPIN_US, TimeUnit.NANOSECONDS.toMicros(d.idleSpinNanos()));
        o.put(DaemonSettings.BUFFER_POOL_MIB, d.bufferPoolBytes() >> 20);
        o.put(DaemonSettings.MAX_DATA_TRANSFER_KIB, d.maxDataTransferSize() >> 10);
        if (d.hugepages().configValue() != null) { // absent: the default, populated RAM namespaces on hugepages
            o.put(DaemonSettings.HUGEPAGES, d.hugepages().configValue());
        }
        o.put(DaemonSettings.SHUTDOWN_TIMEOUT_MS, d.shutdownTimeout().toMillis());
        if (d.httpExplicit() || d.http() == null) {
            o.put(DaemonSettings.HTTP, d.http() == null ? DaemonSettings.HTTP_OFF : d.http());
        }
        o.put(DaemonSettings.METRICS, d.metrics());
        HttpSecurity h = d.httpSecurity();
        o.put(HttpSecurity.API_TOKEN_FILE, h.apiTokenFile().toAbsolutePath().toString());
        if (h.metricsHttp() != null) {
            o.put(HttpSecurity.METRICS_HTTP, h.metricsHttp());
        }
        ArrayNode allowedHosts = o.putArray(HttpSecurity.HTTP_ALLOWED_HOSTS);
        h.allowedHosts().forEach(allowedHosts::add);
        o.put(HttpSecurity.HTTP_REQUEST_TIMEOUT_MS, h.requestTimeout().toMillis());
        o.put(HttpSecurity.HTTP_MAX_CONNECTIONS, h.maxConnections());
        o.put(HttpSecurity.HTTP_MAX_CONNECTIONS_PER_PEER, h.maxConnectionsPerPeer());
        ArrayNode paths = o.putArray(DaemonSettings.ALLOWED_PATHS);
        d.allowedPaths().forEach(p -> paths.add(p.toString()));
        if (d.ramBudgetBytes() != DaemonSettings.RAM_BUDGET_DERIVED) {
            o.put(DaemonSettings.RAM_BUDGET_MIB, d.ramBudgetBytes() >> 20);
        }
        o.put(DaemonSettings.QUEUE_BUFFER_BUDGET_MIB, d.queueBufferBudgetBytes() >> 20);
        ConnectionLimits limits = d.connectionLimits();
        o.put(DaemonSettings.MAX_PENDING_CONNECTIONS, limits.maxPending());
        o.put(DaemonSettings.MAX_PENDING_CONNECTIONS_PER_HOST, limits.maxPendingPerHost());
        o.put(DaemonSettings.CONNECT_TIMEOUT_MS, limits.connectTimeoutMillis());
        return o;
    }

    /** One namespace object ({@code subsystems[].namespaces[]}), merged into {@code before} (may be null). */
    public static ObjectNode namespace(NamespaceConfig n, ObjectNode before) {
        ObjectNode o = before != null ? before.deepCopy() : NODES.objectNode();
        o.put("nsid", Integer.toUnsignedLong(n.nsid()));
        o.put("enable", n.enabled() ? 1 : 0);
        // nvmetcli writes the group of every namespace; newer versions again as "ana": {"grpid": N}.
        o.put("ana_grpid", n.anaGroupId());
        if (o.get("ana") instanceof ObjectNode ana && ana.has("grpid")) {
            ana.put("grpid", n.anaGroupId());
        }
        ObjectNode device = object(o, "device");
        device.put("backend", n.backend().configName());
        if (n.path() != null) {
            device.put("path", n.path().toString());
        } else {
            device.remove("path");
        }
        if (n.sizeBytes() > 0) {
            device.put("size", Long.toString(n.sizeBytes()));
        } else {
            device.remove("size");
        }
        if (n.blockSize() > 0) {
            device.put("block_size", n.blockSize());
        } else {
            device.remove("block_size");
        }
        if (n.bufferedIo()) {
            device.put("buffered_io", 1);
        } else {
            device.remove("buffered_io");
        }
        if (n.shared()) {
            device.put("shared", 1);
        } else {
            device.remove("shared");
        }
        device.put("uuid", n.uuid().toString());
        device.put("nguid", n.nguidText());
        if (n.qos().none()) {
            o.remove("qos");
        } else {
            ObjectNode qos = o.putObject("qos"); // only the limits set, as SPDK's save_config writes them
            putPositive(qos, QosLimits.RW_IOS_PER_SEC, n.qos().rwIosPerSec());
            putPositive(qos, QosLimits.RW_MBYTES_PER_SEC, n.qos().rwMbytesPerSec());
            putPositive(qos, QosLimits.R_MBYTES_PER_SEC, n.qos().rMbytesPerSec());
            putPositive(qos, QosLimits.W_MBYTES_PER_SEC, n.qos().wMbytesPerSec());
        }
        return o;
    }

    private static void putPositive(ObjectNode o, String name, long value) {
        if (value > 0) {
            o.put(name, value);
        }
    }

    private static ObjectNode object(ObjectNode parent, String name) {
        JsonNode child = parent.get(name);
        if (child instanceof ObjectNode o) {
            return o;
        }
        return parent.putObject(name);
    }

    /** The objects of an array by the text of one key; copies, so the caller's tree is never changed. */
    private static Map<String, ObjectNode> byKey(JsonNode array, String key) {
        Map<String, ObjectNode> map = new HashMap<>();
        if (array != null && array.isArray()) {
            for (JsonNode e : array) {
                if (e instanceof ObjectNode o && o.hasNonNull(key)) {
                    map.putIfAbsent(o.get(key).asText(), o.deepCopy());
                }
            }
        }
        return map;
    }
}
