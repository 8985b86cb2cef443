package io.nvmeof4j.target.daemon;

import io.nvmeof4j.target.config.PortConfig;
import io.nvmeof4j.target.config.ReferralConfig;
import io.nvmeof4j.target.config.SubsystemConfig;
import io.nvmeof4j.target.controller.Controller;
import io.nvmeof4j.target.model.AnaStates;
import io.nvmeof4j.target.model.Namespace;
import io.nvmeof4j.target.model.Port;
import io.nvmeof4j.target.model.Referral;
import io.nvmeof4j.target.model.Subsystem;
import io.nvmeof4j.target.model.TargetModel;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * The live changes of a {@link TargetDaemon}'s subsystems and ports: subsystems created and deleted, ports bound
 * and closed, what a port exports, its referrals and ANA states, each announced to the connected hosts (discovery
 * log change, ANA change). Namespaces change through {@link DaemonNamespaces}.
 */
final class DaemonPorts {
    /** Logged as the daemon: these are the daemon's live changes. */
    private static final Logger LOG = LoggerFactory.getLogger(TargetDaemon.class);

    private final TargetDaemon daemon;
    private final TargetModel model;
    private final DaemonTransports transports;
    private final DaemonNamespaces namespaces;

    DaemonPorts(TargetDaemon daemon, TargetModel model, DaemonTransports transports, DaemonNamespaces namespaces) {
        this.daemon = daemon;
        this.model = model;
        this.transports = transports;
        this.namespaces = namespaces;
    }

    /** See {@link TargetDaemon#setAnaState}; the daemon running. */
    int setAnaState(int portId, int group, int state) {
        Port port = null;
        for (Port p : model.ports()) {
            if (p.portId() == portId) {
                port = p;
            }
        }
        if (port == null) {
            throw new IllegalArgumentException("no port " + portId);
        }
        int old = port.ana().state(group, state);
        LOG.info("port {}: ANA group {} {} -> {}", portId, group, io.nvmeof4j.protocol.ana.AnaState.name(old),
            io.nvmeof4j.protocol.ana.AnaState.name(state));
        for (io.nvmeof4j.target.controller.Controller c : daemon.registry().controllers()) {
            if (!c.isDiscovery() && c.port().portId() == portId) {
                c.notifyAnaChanged();
            }
        }
        return old;
    }

    /** See {@link TargetDaemon#addSubsystem}; the daemon running, under its lock. */
    Subsystem addSubsystem(SubsystemConfig sc) {
        if (model.subsystem(sc.nqn()) != null) {
            throw new IllegalStateException("subsystem " + sc.nqn() + " exists already");
        }
        Subsystem subsystem = new Subsystem(sc.nqn(), sc.serial(), sc.model(), sc.firmware(), sc.allowAnyHost());
        // Live as at start: a second daemon serving the subsystem relies on the range from the first Connect on.
        subsystem.cntlidRange(sc.cntlidMin(), sc.cntlidMax());
        for (String host : sc.allowedHosts()) {
            subsystem.addAllowedHost(host);
        }
        model.addSubsystem(subsystem);
        if (daemon.metrics() != null) {
            daemon.metrics().bindSubsystem(subsystem.nqn());
        }
        LOG.info("{} created (serial {}, model {}, allow_any_host {})", sc.nqn(), sc.serial(), sc.model(),
            sc.allowAnyHost());
        return subsystem;
    }

    /** See {@link TargetDaemon#removeSubsystem}; the daemon running, under its lock. */
    Subsystem removeSubsystem(String nqn) {
        Subsystem subsystem = model.subsystem(nqn);
        if (subsystem == null) {
            return null;
        }
        for (Port p : model.ports()) {
            if (p.exports(nqn)) {
                Set<String> rest = new LinkedHashSet<>(p.subsystems());
                rest.remove(nqn);
                model.replacePort(p, new Port(p.portId(), p.address(), p.options(), rest, p.ana()));
            }
        }
        model.removeSubsystem(nqn);
        daemon.registry().notifyDiscoveryChanged();
        for (Controller c : daemon.registry().controllers(nqn)) {
            c.disconnect("subsystem " + nqn + " deleted");
        }
        for (Namespace ns : subsystem.namespaces()) {
            namespaces.releaseNamespace(subsystem, ns);
        }
        LOG.info("{} deleted", nqn);
        return subsystem;
    }

    /** See {@link TargetDaemon#addPort}; the daemon running, under its lock. */
    Port addPort(PortConfig pc) throws IOException {
        if (model.port(pc.portId()) != null) {
            throw new IllegalStateException("portid " + pc.portId() + " is in use");
        }
        Port port = new Port(pc.portId(), pc.address(), pc.options(), new LinkedHashSet<>(pc.subsystems()),
            new AnaStates(pc.anaGroups()));
        model.addPort(port);
        model.referrals(pc.portId(), referrals(pc.referrals()));
        try {
            daemon.listen(pc, port);
        } catch (IOException | RuntimeException e) {
            model.removePort(pc.portId());
            throw e;
        }
        daemon.registry().notifyDiscoveryChanged();
        LOG.info("port {} added: {} exporting {}", pc.portId(), model.port(pc.portId()).address(), pc.subsystems());
        return model.port(pc.portId());
    }

    /** See {@link TargetDaemon#exportOnPort}; the daemon running, under its lock. */
    void exportOnPort(int portId, Set<String> subsystems) {
        Port port = model.port(portId);
        if (port == null) {
            throw new IllegalArgumentException("no port " + portId);
        }
        // The same ANA states: controllers of this port keep reading them, and a change must not reset them.
        model.replacePort(port, new Port(portId, port.address(), port.options(), subsystems, port.ana()));
        daemon.registry().notifyDiscoveryChanged();
        for (Controller c : daemon.registry().controllers()) {
            if (!c.isDiscovery() && c.port().portId() == portId && !subsystems.contains(c.subsystemNqn())) {
                c.disconnect("listener " + port.address() + " removed from " + c.subsystemNqn());
            }
        }
    }

    /** See {@link TargetDaemon#removePort}; the daemon running, under its lock. */
    Port removePort(int portId) {
        Port port = model.removePort(portId);
        if (port == null) {
            return null;
        }
        transports.closeListener(portId);
        for (Controller c : daemon.registry().controllers()) {
            if (c.port().portId() == portId) {
                c.disconnect("listener " + port.address() + " removed");
            }
        }
        daemon.registry().notifyDiscoveryChanged();
        LOG.info("port {} removed ({})", portId, port.address());
        return port;
    }

    /** See {@link TargetDaemon#setReferrals}; the daemon running, under its lock. */
    void setReferrals(int portId, List<ReferralConfig> list) {
        if (model.port(portId) == null) {
            throw new IllegalArgumentException("no port " + portId);
        }
        model.referrals(portId, referrals(list));
        daemon.registry().notifyDiscoveryChanged();
    }

    /** The enabled referrals of a port, as the discovery log lists them. */
    static List<Referral> referrals(List<ReferralConfig> list) {
        List<Referral> served = new ArrayList<>();
        for (ReferralConfig r : list) {
            if (r.enabled()) {
                served.add(new Referral(r.portId(), r.address(), r.treqBits(), r.subnqn()));
            }
        }
        return served;
    }
}
