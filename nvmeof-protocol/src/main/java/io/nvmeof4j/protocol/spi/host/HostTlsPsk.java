package io.nvmeof4j.protocol.spi.host;

import java.util.Objects;

/**
 * TLS 1.3 with a pre-shared key for one NVMe/TCP host queue (NVMe/TCP 1.0c 3.6): the transport derives the PSK
 * identity and the TLS PSK from these, as libnvme does.
 *
 * @param configuredPsk   the host's configured PSK in the interchange format {@code NVMeTLSkey-1:hh:...:}
 * @param hostNqn         the host NQN the identity names (the one Connect will carry)
 * @param subsystemNqn    the subsystem NQN the identity names
 * @param identityVersion 1 (with the PSK digest, TP 8018; the default) or 0 (the older identity without it)
 * @param libnvmeCompat   derive as libnvme before 1.16 did (nvme-cli before 2.16): for a Linux target whose keyring
 *                        holds keys such an nvme-cli inserted; otherwise RFC 8446's HKDF-Expand-Label
 */
public record HostTlsPsk(String configuredPsk, String hostNqn, String subsystemNqn, int identityVersion,
                         boolean libnvmeCompat) {
    public HostTlsPsk {
        Objects.requireNonNull(configuredPsk, "configuredPsk");
        Objects.requireNonNull(hostNqn, "hostNqn");
        Objects.requireNonNull(subsystemNqn, "subsystemNqn");
        if (identityVersion != 0 && identityVersion != 1) {
            throw new IllegalArgumentException("PSK identity version " + identityVersion + " is not 0 or 1");
        }
    }

    /** Never the key. */
    @Override
    public String toString() {
        return "HostTlsPsk[" + hostNqn + " -> " + subsystemNqn + ", identity v" + identityVersion
            + (libnvmeCompat ? ", libnvme compat" : "") + "]";
    }
}
