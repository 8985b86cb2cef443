package io.nvmeof4j.target.config;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.util.HashMap;
import java.util.Map;

/**
 * Writes a {@link TargetConfig} back as the nvmetcli-shaped JSON document {@link TargetConfig#parse} reads, so that
 * {@code parse(write(c))} describes the same hosts, ports, subsystems and namespaces as {@code c}.
 * <p>The previous document ({@code original}) is merged in: every object the configuration model has no field for
 * keeps its keys (the whole {@code "nvmeof4j"} settings object, a host's {@code dhchap}, a port's
 * {@code referrals} or {@code ana_groups}, a namespace's {@code ana_grpid}, ...). Objects are matched by their
 * identity: hosts and subsystems by NQN, ports by {@code portid}, namespaces by NSID. The fields the model does
 * have are written from the model, as nvmetcli writes them (attributes as strings), so a file the Linux target's
 * {@code nvmetcli restore} also reads stays one. Values are written explicitly (derived serial numbers, UUIDs and
 * NGUIDs included), so a later change of a default does not change what an existing target serves; except the
 * firmware revision while it is the default, which is meant to follow the nvmeof4j version.
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
            ObjectNode addr = object(o, "addr");
            addr.put("trtype", p.address().type().configName());
            addr.put("adrfam", p.address().family().configName());
            addr.put("traddr", p.address().traddr());
            addr.put("trsvcid", p.address().trsvcid());
            addr.put("treq", p.treq());
            ObjectNode param = object(o, "param");
            param.put("inline_data_size", Integer.toString(p.options().inlineDataSize()));
            param.put("max_queue_size", Integer.toString(p.options().maxQueueSize()));
            ArrayNode subs = o.putArray("subsystems");
            p.subsystems().forEach(subs::add);
            list.add(o);
        }
        return list;
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

    /** One namespace object ({@code subsystems[].namespaces[]}), merged into {@code before} (may be null). */
    public static ObjectNode namespace(NamespaceConfig n, ObjectNode before) {
        ObjectNode o = before != null ? before.deepCopy() : NODES.objectNode();
        o.put("nsid", Integer.toUnsignedLong(n.nsid()));
        o.put("enable", n.enabled() ? 1 : 0);
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
        device.put("uuid", n.uuid().toString());
        device.put("nguid", n.nguidText());
        return o;
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
