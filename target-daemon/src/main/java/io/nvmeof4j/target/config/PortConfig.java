package io.nvmeof4j.target.config;

import io.nvmeof4j.protocol.spi.AddressFamily;
import io.nvmeof4j.protocol.spi.PortOptions;
import io.nvmeof4j.protocol.spi.TransportAddress;
import io.nvmeof4j.protocol.spi.TransportType;

import java.util.List;
import java.util.Objects;

/**
 * One {@code ports[i]} entry, validated.
 *
 * @param where      its JSON path ({@code ports[0]})
 * @param portId     {@code portid} (PORTID in discovery log entries)
 * @param address    {@code addr.trtype/adrfam/traddr/trsvcid}; trsvcid "0" asks for any free port
 * @param treq       {@code addr.treq}: "not specified" or "not required" ("required" is refused: no TLS)
 * @param options    {@code param.inline_data_size}, {@code param.max_queue_size}, and the daemon's MDTS
 * @param subsystems NQNs exported through the port; the discovery NQN may appear (every port answers discovery)
 */
public record PortConfig(String where, int portId, TransportAddress address, String treq, PortOptions options,
                         List<String> subsystems) {
    public PortConfig {
        Objects.requireNonNull(where, "where");
        Objects.requireNonNull(address, "address");
        Objects.requireNonNull(treq, "treq");
        Objects.requireNonNull(options, "options");
        subsystems = List.copyOf(subsystems);
    }

    public TransportType transportType() {
        return address.type();
    }

    public AddressFamily addressFamily() {
        return address.family();
    }

    /** True when this build can serve the port (NVMe/TCP); RDMA ports are parsed but not served. */
    public boolean isServable() {
        return address.type() == TransportType.TCP;
    }
}
