package io.nvmeof4j.target.config;

import io.nvmeof4j.protocol.discovery.DiscoveryLogEntry;
import io.nvmeof4j.protocol.spi.TransportAddress;
import io.nvmeof4j.target.model.Port;

import java.util.Objects;

/**
 * One {@code ports[i].referrals[j]} entry (nvmetcli's shape: {@code {"name", "portid", "enable", "addr": {"trtype",
 * "adrfam", "traddr", "trsvcid", "treq"}}}), validated: another discovery service the port's discovery log points
 * hosts at (an entry of SUBTYPE 1). nvmet keeps referrals per port, and so does the configuration; SPDK's
 * {@code nvmf_discovery_add_referral} is target-wide and is put on every port.
 *
 * @param name     the configfs directory name nvmetcli saves (unique within the port)
 * @param portId   {@code portid}: the PORTID the entry reports (the referred-to port's, 0 when unknown)
 * @param enabled  {@code enable}: a disabled referral is kept in the file and not served
 * @param address  {@code addr.trtype/adrfam/traddr/trsvcid}
 * @param treq     {@code addr.treq}: "not specified", "required" (secure channel) or "not required"
 * @param subnqn   {@code subnqn} (an nvmeof4j extension, SPDK's parameter): the discovery NQN, or an NVM
 *                 subsystem's NQN for a referral to that subsystem (then an entry of SUBTYPE 2)
 */
public record ReferralConfig(String name, int portId, boolean enabled, TransportAddress address, String treq,
                             String subnqn) {
    public ReferralConfig {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(address, "address");
        Objects.requireNonNull(treq, "treq");
        Objects.requireNonNull(subnqn, "subnqn");
    }

    /** True when it points at the same service: transport, address, service id and NQN. */
    public boolean sameTarget(ReferralConfig other) {
        return address.type() == other.address.type() && address.traddr().equals(other.address.traddr())
            && address.trsvcid().equals(other.address.trsvcid()) && subnqn.equals(other.subnqn);
    }

    /** TREQ bits 1:0 of its discovery log entry (secure channel: 0 not specified, 1 required, 2 not required). */
    public int treqBits() {
        return switch (treq) {
            case "required" -> DiscoveryLogEntry.TREQ_SECURE_CHANNEL_REQUIRED;
            case "not required" -> DiscoveryLogEntry.TREQ_SECURE_CHANNEL_NOT_REQUIRED;
            default -> DiscoveryLogEntry.TREQ_SECURE_CHANNEL_NOT_SPECIFIED;
        };
    }

    /** SPDK's {@code secure_channel}: the referred-to service requires one. */
    public boolean secureChannel() {
        return treqBits() == DiscoveryLogEntry.TREQ_SECURE_CHANNEL_REQUIRED;
    }

    public boolean isDiscovery() {
        return Port.DISCOVERY_NQN.equals(subnqn);
    }
}
