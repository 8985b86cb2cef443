package io.nvmeof4j.target.model;

import io.nvmeof4j.protocol.spi.PortOptions;
import io.nvmeof4j.protocol.spi.TransportAddress;

import java.util.Collections;
import java.util.LinkedHashSet;
import java.util.Objects;
import java.util.Set;

/**
 * A port (nvmetcli {@code ports[]}): a transport address, its options and the subsystems exported through it.
 * Every port answers discovery; a port that lists only the discovery NQN serves nothing else.
 *
 * @param portId      PORTID in discovery log entries
 * @param address     where it listens (after start: the bound address, with the real port)
 * @param options     inline data size, queue size, MDTS
 * @param subsystems  NQNs exported through this port
 * @param ana         the ANA state of each group through this port (live: changed by the management API)
 */
public record Port(int portId, TransportAddress address, PortOptions options, Set<String> subsystems, AnaStates ana) {
    /** The well-known NQN of the discovery subsystem. */
    public static final String DISCOVERY_NQN = "nqn.2014-08.org.nvmexpress.discovery";

    public Port {
        Objects.requireNonNull(address, "address");
        Objects.requireNonNull(options, "options");
        Objects.requireNonNull(ana, "ana");
        subsystems = Collections.unmodifiableSet(new LinkedHashSet<>(subsystems));
    }

    /** A port with nvmet's default ANA states (group 1 optimized, the others inaccessible). */
    public Port(int portId, TransportAddress address, PortOptions options, Set<String> subsystems) {
        this(portId, address, options, subsystems, new AnaStates());
    }

    public boolean exports(String subsystemNqn) {
        return subsystems.contains(subsystemNqn);
    }

    /** The same port bound at {@code bound} (port 0 resolved). */
    public Port boundTo(TransportAddress bound) {
        return new Port(portId, bound, options, subsystems, ana);
    }
}
