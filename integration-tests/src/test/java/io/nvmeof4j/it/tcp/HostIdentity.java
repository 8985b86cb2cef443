package io.nvmeof4j.it.tcp;

import java.util.UUID;

/** A host's NQN and host identifier, which the Linux host pairs 1:1 (wire reference 7). */
public record HostIdentity(String hostnqn, UUID hostid) {
    public static final String UUID_NQN_PREFIX = "nqn.2014-08.org.nvmexpress:uuid:";

    /** The UUID-form host NQN the Linux host generates, with the same UUID as host id. */
    public static HostIdentity ofUuid(UUID uuid) {
        return new HostIdentity(UUID_NQN_PREFIX + uuid, uuid);
    }

    public static HostIdentity random() {
        return ofUuid(UUID.randomUUID());
    }
}
