package io.nvmeof4j.protocol.auth;

import java.util.Objects;

/**
 * What a controller demands of one host (nvmet's per-host {@code dhchap_key}, {@code dhchap_ctrl_key},
 * {@code dhchap_hash}, {@code dhchap_dhgroup}).
 *
 * @param hostKey       the secret the host proves it holds
 * @param controllerKey the secret the controller proves it holds when the host asks (bidirectional); null: the
 *                      controller refuses a host that asks
 * @param hash          the preferred hash (used when the host offers it; otherwise the host's first known one)
 * @param group         the DH group; the host must offer it
 */
public record DhchapCredentials(DhchapSecret hostKey, DhchapSecret controllerKey, DhchapHash hash,
                                DhchapGroup group) {
    /** nvmet's default. */
    public static final DhchapHash HASH_DEFAULT = DhchapHash.SHA256;
    /** nvmet's default: a host configured without dhchap_dhgroup behaves as on a Linux target. */
    public static final DhchapGroup GROUP_DEFAULT = DhchapGroup.NULL;

    public DhchapCredentials {
        Objects.requireNonNull(hostKey, "hostKey");
        Objects.requireNonNull(hash, "hash");
        Objects.requireNonNull(group, "group");
    }

    @Override
    public String toString() {
        return "DhchapCredentials[hash=" + hash.linuxName() + ", group=" + group.linuxName() + ", bidirectional="
            + (controllerKey != null) + ", keys hidden]";
    }
}
