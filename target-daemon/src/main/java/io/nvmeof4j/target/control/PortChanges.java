package io.nvmeof4j.target.control;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.nvmeof4j.protocol.ana.AnaState;
import io.nvmeof4j.protocol.spi.AddressFamily;
import io.nvmeof4j.protocol.spi.TransportType;
import io.nvmeof4j.target.config.PortConfig;
import io.nvmeof4j.target.config.ReferralConfig;
import io.nvmeof4j.target.config.TargetConfig;
import io.nvmeof4j.target.model.Port;
import java.io.IOException;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import io.nvmeof4j.target.daemon.TargetDaemon;

/**
 * Listeners (ports and the subsystems they export), referrals and ANA states: the changes {@link ControlPlane}
 * makes for this family, each over its persist-or-undo step, run under its lock (see there for each operation's contract).
 */
final class PortChanges {
    private final ControlPlane plane;
    private final TargetDaemon daemon;

    PortChanges(ControlPlane plane, TargetDaemon daemon) {
        this.plane = plane;
        this.daemon = daemon;
    }

    PortConfig addListener(String who, String nqn, TransportType trtype, AddressFamily adrfam,
                           String traddr, String trsvcid) throws ControlException {
        plane.requireSubsystem(nqn);
        // Service id 0 asks for a new port on any free port number, never for a port configured with 0.
        PortConfig existing = "0".equals(trsvcid) ? null : findPort(trtype, traddr, trsvcid);
        if (existing != null) {
            if (existing.subsystems().contains(nqn)) {
                throw new ControlException(ControlException.Kind.EXISTS, "subsystem " + nqn + " already listens on "
                    + existing.address());
            }
            List<String> subs = new ArrayList<>(existing.subsystems());
            subs.add(nqn);
            TargetConfig next = plane.validate(replacePort(withSubsystems(existing, subs)));
            Set<String> before = new LinkedHashSet<>(daemon.model().port(existing.portId()).subsystems());
            daemon.exportOnPort(existing.portId(), new LinkedHashSet<>(subs));
            plane.commitOrUndo(who, "add listener " + existing.address() + " to " + nqn, next,
                () -> daemon.exportOnPort(existing.portId(), before));
            return next.ports().stream().filter(p -> p.portId() == existing.portId()).findFirst().orElseThrow();
        }
        int portId = ControlPlane.FIRST_LIVE_PORTID;
        for (PortConfig p : plane.configuration().ports()) {
            portId = Math.max(portId, p.portId() + 1);
        }
        ObjectNode doc = (ObjectNode) plane.document();
        ObjectNode port = doc.withArray("ports").addObject();
        port.put("portid", portId);
        ObjectNode addr = port.putObject("addr");
        addr.put("trtype", trtype.configName());
        addr.put("adrfam", adrfam.configName());
        addr.put("traddr", traddr);
        addr.put("trsvcid", trsvcid);
        addr.put("treq", "not specified");
        port.putArray("subsystems").add(nqn);
        TargetConfig parsed = plane.parse(doc);
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
            next = plane.validate(replacePort(parsed, persisted));
        } catch (ControlException e) {
            daemon.removePort(id);
            throw e;
        }
        plane.commitOrUndo(who, "add listener " + bound.address() + " to " + nqn, next, () -> daemon.removePort(id));
        return persisted;
    }

    void removeListener(String who, String nqn, TransportType trtype, String traddr,
                        String trsvcid) throws ControlException {
        plane.requireSubsystem(nqn);
        PortConfig port = findPort(trtype, traddr, trsvcid);
        if (port == null || !port.subsystems().contains(nqn)) {
            throw new ControlException(ControlException.Kind.NOT_FOUND, "subsystem " + nqn + " has no listener "
                + trtype.configName() + " " + traddr + ":" + trsvcid);
        }
        List<String> subs = new ArrayList<>(port.subsystems());
        subs.remove(nqn);
        // A port left exporting nothing is closed, unless it is the last (the configuration needs one).
        boolean close = subs.isEmpty() && plane.configuration().ports().size() > 1;
        TargetConfig next;
        if (close) {
            List<PortConfig> ports = new ArrayList<>(plane.configuration().ports());
            ports.removeIf(p -> p.portId() == port.portId());
            next = plane.validate(withPorts(ports));
        } else {
            next = plane.validate(replacePort(withSubsystems(port, subs)));
        }
        plane.commit(who, "remove listener " + port.address() + " from " + nqn, next);
        if (close) {
            daemon.removePort(port.portId());
        } else {
            daemon.exportOnPort(port.portId(), new LinkedHashSet<>(subs));
        }
    }

    ReferralConfig addReferral(String who, int portId, ReferralConfig referral)
        throws ControlException {
        List<PortConfig> targets = referralPorts(portId);
        List<PortConfig> ports = new ArrayList<>();
        ReferralConfig first = null;
        for (PortConfig p : plane.configuration().ports()) {
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
        TargetConfig next = plane.validate(withPorts(ports));
        TargetConfig before = plane.configuration();
        applyReferrals(next);
        plane.commitOrUndo(who, "add referral to " + referral.address() + " " + referral.subnqn() + " on "
            + (portId < 0 ? "every port" : "port " + portId), next, () -> applyReferrals(before));
        return first;
    }

    int removeReferral(String who, int portId, java.util.function.Predicate<ReferralConfig> match,
                       String what) throws ControlException {
        List<PortConfig> targets = referralPorts(portId);
        List<PortConfig> ports = new ArrayList<>();
        int removed = 0;
        for (PortConfig p : plane.configuration().ports()) {
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
        TargetConfig next = plane.validate(withPorts(ports));
        plane.commit(who, "remove referral " + what + " from " + (portId < 0 ? "every port" : "port " + portId), next);
        applyReferrals(next);
        return removed;
    }

    List<ReferralConfig> referralsOnEveryPort() {
        List<ReferralConfig> common = new ArrayList<>();
        List<PortConfig> ports = plane.configuration().ports();
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
            return plane.configuration().ports();
        }
        for (PortConfig p : plane.configuration().ports()) {
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

    java.util.Map<Integer, Integer> setAnaStates(String who, int portId,
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
        PortConfig port = plane.configuration().ports().stream().filter(p -> p.portId() == portId).findFirst()
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
        TargetConfig next = plane.validate(replacePort(new PortConfig(port.where(), port.portId(), port.address(),
            port.treq(), port.options(), port.subsystems(), groups, port.referrals())));
        plane.commit(who, what.toString(), next);
        states.forEach((group, state) -> daemon.setAnaState(portId, group, state));
        return previous;
    }

    PortConfig listener(String nqn, TransportType trtype, String traddr, String trsvcid)
        throws ControlException {
        plane.requireSubsystem(nqn);
        PortConfig port = findPort(trtype, traddr, trsvcid);
        if (port == null || !port.subsystems().contains(nqn)) {
            throw new ControlException(ControlException.Kind.NOT_FOUND, "subsystem " + nqn + " has no listener "
                + trtype.configName() + " " + traddr + ":" + trsvcid);
        }
        return port;
    }

    private PortConfig findPort(TransportType trtype, String traddr, String trsvcid) {
        for (PortConfig p : plane.configuration().ports()) {
            if (p.address().type() == trtype && p.address().traddr().equals(traddr)
                && p.address().trsvcid().equals(trsvcid)) {
                return p;
            }
        }
        // A port configured with service id 0 is matched by the port it was bound to.
        for (Port p : daemon.model().ports()) {
            if (p.address().type() == trtype && p.address().traddr().equals(traddr)
                && p.address().trsvcid().equals(trsvcid)) {
                for (PortConfig pc : plane.configuration().ports()) {
                    if (pc.portId() == p.portId()) {
                        return pc;
                    }
                }
            }
        }
        return null;
    }

    private TargetConfig replacePort(PortConfig port) {
        return replacePort(plane.configuration(), port);
    }

    private static TargetConfig replacePort(TargetConfig config, PortConfig port) {
        List<PortConfig> list = new ArrayList<>();
        for (PortConfig p : config.ports()) {
            list.add(p.portId() == port.portId() ? port : p);
        }
        return config.withModel(config.hosts(), list, config.subsystems());
    }

    /** The configuration as it stands with {@code ports} instead of its ports. */
    private TargetConfig withPorts(List<PortConfig> ports) {
        TargetConfig current = plane.configuration();
        return current.withModel(current.hosts(), ports, current.subsystems());
    }

    static PortConfig withSubsystems(PortConfig p, List<String> subsystems) {
        return new PortConfig(p.where(), p.portId(), p.address(), p.treq(), p.options(), subsystems, p.anaGroups(),
            p.referrals());
    }
}
