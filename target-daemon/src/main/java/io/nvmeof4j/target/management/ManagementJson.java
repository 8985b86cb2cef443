package io.nvmeof4j.target.management;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.nvmeof4j.protocol.auth.DhchapCredentials;
import io.nvmeof4j.target.backend.QosLimits;
import io.nvmeof4j.protocol.reservation.ReservationType;
import io.nvmeof4j.target.reservation.Reservations;
import io.nvmeof4j.target.controller.Controller;
import io.nvmeof4j.target.controller.QueueInfo;
import io.nvmeof4j.target.daemon.TargetDaemon;
import io.nvmeof4j.target.model.Namespace;
import io.nvmeof4j.target.model.Subsystem;

import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;

/** The management API's JSON views of subsystems, namespaces, controllers and host keys (never a key itself). */
final class ManagementJson {
    private final TargetDaemon daemon;
    private final ObjectMapper mapper;

    ManagementJson(TargetDaemon daemon, ObjectMapper mapper) {
        this.daemon = daemon;
        this.mapper = mapper;
    }

    ObjectNode subsystemJson(Subsystem s) {
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

    ObjectNode namespaceJson(Namespace ns) {
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
        QosLimits qos = ns.qos().limits();
        ObjectNode q = o.putObject("qos");
        q.put(QosLimits.RW_IOS_PER_SEC, qos.rwIosPerSec());
        q.put(QosLimits.RW_MBYTES_PER_SEC, qos.rwMbytesPerSec());
        q.put(QosLimits.R_MBYTES_PER_SEC, qos.rMbytesPerSec());
        q.put(QosLimits.W_MBYTES_PER_SEC, qos.wMbytesPerSec());
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

    ObjectNode controllerJson(Controller c) {
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

    ObjectNode dhchapEntry(String host) {
        DhchapCredentials c = daemon.registry().hostKeys().get(host);
        return hostWith(host, "dhchap", c == null ? null : dhchapJson(c));
    }

    /** {@code {"nqn": host, field: value}}, the field left out when {@code value} is null (the host has none). */
    ObjectNode hostWith(String host, String field, JsonNode value) {
        ObjectNode o = mapper.createObjectNode();
        o.put("nqn", host);
        if (value != null) {
            o.set(field, value);
        }
        return o;
    }

    ObjectNode dhchapJson(DhchapCredentials c) {
        ObjectNode d = mapper.createObjectNode();
        if (c != null) {
            d.put("hash", c.hash().linuxName());
            d.put("dhgroup", c.group().linuxName());
            d.put("bidirectional", c.controllerKey() != null);
        }
        return d;
    }

    ObjectNode tlsEntry(String host) {
        io.nvmeof4j.tcp.tls.HostPskStore.HostPsk psk = daemon.tlsKey(host);
        return hostWith(host, "tls", psk == null ? null : tlsJson(psk));
    }

    ObjectNode tlsJson(io.nvmeof4j.tcp.tls.HostPskStore.HostPsk psk) {
        ObjectNode t = mapper.createObjectNode();
        t.put("hash", psk.key().cipherHash() == io.nvmeof4j.tcp.tls.PskHash.SHA384 ? "sha384" : "sha256");
        t.put("psk_derivation", psk.version0Derivation() == io.nvmeof4j.tcp.tls.NvmeTlsKeys.Derivation.RFC8446
            ? "rfc8446" : "compat");
        return t;
    }

    /** See {@link ManagementApi#allHosts}: {@code subsystems} sorted by NQN. */
    ArrayNode allHosts(List<Subsystem> subsystems) {
        Map<String, ObjectNode> byNqn = new TreeMap<>();
        for (String h : daemon.config().hosts()) {
            hostEntry(byNqn, h);
        }
        for (Subsystem s : subsystems) {
            for (String h : new TreeSet<>(s.allowedHosts())) {
                ((ArrayNode) hostEntry(byNqn, h).get("allowed_on")).add(s.nqn());
            }
        }
        for (Controller c : daemon.registry().controllers()) {
            ((ArrayNode) hostEntry(byNqn, c.hostNqn()).get("controllers")).add(c.cntlid());
        }
        for (String h : daemon.authenticatingHosts()) {
            hostEntry(byNqn, h).set("dhchap", dhchapJson(daemon.registry().hostKeys().get(h)));
        }
        for (String h : daemon.tlsHosts()) {
            io.nvmeof4j.tcp.tls.HostPskStore.HostPsk psk = daemon.tlsKey(h);
            if (psk != null) {
                hostEntry(byNqn, h).set("tls", tlsJson(psk));
            }
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
}
