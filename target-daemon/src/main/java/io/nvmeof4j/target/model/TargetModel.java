package io.nvmeof4j.target.model;

import java.util.Collection;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Everything the target exports: subsystems by NQN and the ports they are reachable through. Read by the
 * command layer (Connect, discovery) and changed by configuration and the management API.
 * {@link #discoveryGeneration()} counts changes a discovery log reader must notice (GENCTR).
 */
public final class TargetModel {
    private final Map<String, Subsystem> subsystems = new ConcurrentHashMap<>();
    private final List<Port> ports = new CopyOnWriteArrayList<>();
    private final AtomicLong discoveryGeneration = new AtomicLong(1);
    /** Each port's referrals (nvmet keeps them per port), by PORTID; absent: none. */
    private final Map<Integer, List<Referral>> referrals = new ConcurrentHashMap<>();

    public Subsystem subsystem(String nqn) {
        return subsystems.get(nqn);
    }

    public Collection<Subsystem> subsystems() {
        return Collections.unmodifiableCollection(subsystems.values());
    }

    public void addSubsystem(Subsystem subsystem) {
        if (Port.DISCOVERY_NQN.equals(subsystem.nqn())) {
            throw new IllegalArgumentException("subsystem NQN " + Port.DISCOVERY_NQN + " is reserved for discovery");
        }
        if (subsystems.putIfAbsent(subsystem.nqn(), subsystem) != null) {
            throw new IllegalArgumentException("subsystem " + subsystem.nqn() + " defined twice");
        }
        discoveryChanged();
    }

    /** Removes a subsystem (control plane); its ports must stop exporting it first. Returns it, or null. */
    public Subsystem removeSubsystem(String nqn) {
        Subsystem removed = subsystems.remove(nqn);
        if (removed != null) {
            discoveryChanged();
        }
        return removed;
    }

    /** Removes a port (its listener closed); returns it, or null. */
    public Port removePort(int portId) {
        for (Port p : ports) {
            if (p.portId() == portId && ports.remove(p)) {
                referrals.remove(portId);
                discoveryChanged();
                return p;
            }
        }
        return null;
    }

    /** The port with this PORTID, or null. */
    public Port port(int portId) {
        for (Port p : ports) {
            if (p.portId() == portId) {
                return p;
            }
        }
        return null;
    }

    public List<Port> ports() {
        return Collections.unmodifiableList(ports);
    }

    public void addPort(Port port) {
        ports.add(port);
        discoveryChanged();
    }

    /** Replaces a port by its bound form (same portId), once its listener knows the real address. */
    public void replacePort(Port old, Port bound) {
        int i = ports.indexOf(old);
        if (i < 0) {
            throw new IllegalArgumentException("no port " + old.portId());
        }
        ports.set(i, bound);
        discoveryChanged();
    }

    /** The referrals a discovery log read through port {@code portId} lists (empty: none). */
    public List<Referral> referrals(int portId) {
        return referrals.getOrDefault(portId, List.of());
    }

    /** Sets the referrals of a port (configuration, control plane); the discovery log changes. */
    public void referrals(int portId, List<Referral> list) {
        if (list.isEmpty()) {
            referrals.remove(portId);
        } else {
            referrals.put(portId, List.copyOf(list));
        }
        discoveryChanged();
    }

    public long discoveryGeneration() {
        return discoveryGeneration.get();
    }

    /** Call after any change a discovery log shows (ports, subsystems, allowed hosts). */
    public void discoveryChanged() {
        discoveryGeneration.incrementAndGet();
    }
}
