package io.nvmeof4j.target.control;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.nvmeof4j.protocol.auth.DhchapCredentials;
import io.nvmeof4j.target.config.SubsystemConfig;
import io.nvmeof4j.target.config.TargetConfig;
import java.util.ArrayList;
import java.util.List;
import io.nvmeof4j.target.daemon.TargetDaemon;

/**
 * The allowed hosts of each subsystem and each host's keys (DH-HMAC-CHAP credentials, TLS PSK): the changes
 * {@link ControlPlane} makes for this family, each over its persist-or-undo step, run under its lock (see there for each operation's contract).
 */
final class HostChanges {
    private final ControlPlane plane;
    private final TargetDaemon daemon;

    HostChanges(ControlPlane plane, TargetDaemon daemon) {
        this.plane = plane;
        this.daemon = daemon;
    }

    void addHost(String who, String nqn, String host) throws ControlException {
        SubsystemConfig s = plane.requireSubsystem(nqn);
        if (s.allowedHosts().contains(host)) {
            throw new ControlException(ControlException.Kind.EXISTS, "host " + host + " is already allowed on " + nqn);
        }
        List<String> hosts = new ArrayList<>(s.allowedHosts());
        hosts.add(host);
        List<String> known = new ArrayList<>(plane.configuration().hosts());
        if (!known.contains(host)) {
            known.add(host);
        }
        TargetConfig replaced = plane.replace(nqn, old -> withHosts(old, hosts));
        TargetConfig next = plane.validate(replaced.withModel(known, replaced.ports(), replaced.subsystems()));
        daemon.model().subsystem(nqn).addAllowedHost(host);
        plane.discoveryChanged();
        plane.commitOrUndo(who, "allow host " + host + " on " + nqn, next, () -> {
            daemon.model().subsystem(nqn).removeAllowedHost(host);
            plane.discoveryChanged();
        });
    }

    void removeHost(String who, String nqn, String host) throws ControlException {
        SubsystemConfig s = plane.requireSubsystem(nqn);
        if (!s.allowedHosts().contains(host)) {
            throw new ControlException(ControlException.Kind.NOT_FOUND, "host " + host
                + " is not on the allowed list of " + nqn);
        }
        List<String> hosts = new ArrayList<>(s.allowedHosts());
        hosts.remove(host);
        TargetConfig next = plane.validate(plane.replace(nqn, old -> withHosts(old, hosts)));
        plane.commit(who, "disallow host " + host + " on " + nqn, next);
        daemon.model().subsystem(nqn).removeAllowedHost(host);
        plane.discoveryChanged();
    }

    DhchapCredentials setDhchap(String who, String host, JsonNode dhchap) throws ControlException {
        ObjectNode doc = (ObjectNode) plane.document();
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
        TargetConfig next = plane.parse(doc);
        DhchapCredentials before = daemon.registry().hostKeys().get(host);
        DhchapCredentials after = next.hostCredentials().get(host);
        daemon.setHostCredentials(host, after);
        plane.commitOrUndo(who, (after == null ? "remove" : "set") + " DH-HMAC-CHAP credentials of host " + host,
            next, doc,
            () -> daemon.setHostCredentials(host, before));
        return after;
    }

    io.nvmeof4j.tcp.tls.HostPskStore.HostPsk setTlsKey(String who, String host, String key,
                                                      String derivation) throws ControlException {
        ObjectNode doc = (ObjectNode) plane.document();
        ObjectNode entry = hostEntry(doc, host);
        entry.remove(List.of("tls_key", "tls_psk_derivation"));
        if (key != null) {
            entry.put("tls_key", key);
            if (derivation != null) {
                entry.put("tls_psk_derivation", derivation);
            }
        }
        TargetConfig next = plane.parse(doc);
        io.nvmeof4j.tcp.tls.HostPskStore.HostPsk before = daemon.tlsKey(host);
        io.nvmeof4j.tcp.tls.HostPskStore.HostPsk after = next.tlsKeys().get(host);
        daemon.setTlsKey(host, after);
        plane.commitOrUndo(who, (after == null ? "remove" : "set") + " the TLS PSK of host " + host, next, doc,
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

    private static SubsystemConfig withHosts(SubsystemConfig s, List<String> hosts) {
        return new SubsystemConfig(s.nqn(), s.allowAnyHost(), hosts, s.serial(), s.model(), s.firmware(), s.version(),
            s.cntlidMin(), s.cntlidMax(), s.qidMax(), s.namespaces(), s.maxNamespaces());
    }
}
