package io.nvmeof4j.target.model;

import io.nvmeof4j.protocol.spi.TransportAddress;

import java.util.Objects;

/**
 * A discovery log entry pointing at another discovery service (SUBTYPE 1, NVMe-oF 1.1 5.3) or, with an NVM
 * subsystem's NQN, at a subsystem served elsewhere (SUBTYPE 2), listed in the discovery log read through one port.
 *
 * @param portId    the PORTID the entry reports
 * @param address   where the referred-to service listens
 * @param treq      TREQ bits 1:0 (secure channel: 0 not specified, 1 required, 2 not required)
 * @param subnqn    the discovery NQN, or an NVM subsystem's NQN
 */
public record Referral(int portId, TransportAddress address, int treq, String subnqn) {
    public Referral {
        Objects.requireNonNull(address, "address");
        Objects.requireNonNull(subnqn, "subnqn");
    }
}
