package io.nvmeof4j.target.config;

import io.nvmeof4j.protocol.spi.AddressFamily;
import io.nvmeof4j.protocol.spi.PortOptions;
import io.nvmeof4j.protocol.spi.TransportAddress;
import io.nvmeof4j.protocol.spi.TransportType;

import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * One {@code ports[i]} entry, validated.
 *
 * @param where      its JSON path ({@code ports[0]})
 * @param portId     {@code portid} (PORTID in discovery log entries)
 * @param address    {@code addr.trtype/adrfam/traddr/trsvcid}; trsvcid "0" asks for any free port
 * @param treq       {@code addr.treq}: "not specified", "required" or "not required" ("required" needs
 *                   {@code addr.tsas} "tls1.3"; "tls1.3" alone means "required")
 * @param options    {@code param.inline_data_size}, {@code param.max_queue_size}, and the daemon's MDTS
 * @param subsystems NQNs exported through the port; the discovery NQN may appear (every port answers discovery)
 * @param anaGroups  {@code ana_groups}: ANA state (AnaState value) by group id; a group not listed is inaccessible on
 *                   this port except group 1, optimized (nvmet's defaults)
 * @param referrals  {@code referrals}: other discovery services the port's discovery log points hosts at
 */
public record PortConfig(String where, int portId, TransportAddress address, String treq, PortOptions options,
                         List<String> subsystems, Map<Integer, Integer> anaGroups, List<ReferralConfig> referrals) {
    public PortConfig {
        Objects.requireNonNull(where, "where");
        Objects.requireNonNull(address, "address");
        Objects.requireNonNull(treq, "treq");
        Objects.requireNonNull(options, "options");
        subsystems = List.copyOf(subsystems);
        anaGroups = Map.copyOf(anaGroups);
        referrals = List.copyOf(referrals);
    }

    /** A port without ANA groups of its own (nvmet's defaults) or referrals. */
    public PortConfig(String where, int portId, TransportAddress address, String treq, PortOptions options,
                      List<String> subsystems) {
        this(where, portId, address, treq, options, subsystems, Map.of(), List.of());
    }

    /** A port without referrals. */
    public PortConfig(String where, int portId, TransportAddress address, String treq, PortOptions options,
                      List<String> subsystems, Map<Integer, Integer> anaGroups) {
        this(where, portId, address, treq, options, subsystems, anaGroups, List.of());
    }

    /** A port without ANA groups of its own. */
    public PortConfig(String where, int portId, TransportAddress address, String treq, PortOptions options,
                      List<String> subsystems, List<ReferralConfig> referrals) {
        this(where, portId, address, treq, options, subsystems, Map.of(), referrals);
    }

    /** This port with {@code list} as its referrals. */
    public PortConfig withReferrals(List<ReferralConfig> list) {
        return new PortConfig(where, portId, address, treq, options, subsystems, anaGroups, list);
    }

    /** ANAGRPMAX: group ids 1..128, nvmet's NVMET_MAX_ANAGRPS. */
    public static final int ANA_GROUP_MAX = 128;

    public TransportType transportType() {
        return address.type();
    }

    public AddressFamily addressFamily() {
        return address.family();
    }

    /**
     * True when this build has a transport for the port (NVMe/TCP, NVMe-oF/RDMA). Whether RDMA can run on this
     * machine is decided when the daemon starts ({@code Rdma.unavailabilityCause()}), not by the configuration.
     */
    public boolean isServable() {
        return address.type() == TransportType.TCP || address.type() == TransportType.RDMA;
    }

    /** NVMe-oF/RDMA's in-capsule data defaults, as nvmet-rdma has them: one page, at most 16 KiB. */
    public static final int RDMA_INLINE_DATA_SIZE_DEFAULT = 4096;
    public static final int RDMA_INLINE_DATA_SIZE_MAX = 16384;
}
