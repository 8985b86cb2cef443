package io.nvmeof4j.tcp.tls;

import io.nvmeof4j.tcp.tls.NvmeTlsKeys.Derivation;

import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The controller's configured PSKs, one per host NQN, as a {@link PskResolver}. Keys may be added, replaced or
 * removed while the target runs; a handshake uses the key present when it starts.
 * <p>Which derivation the host used: a version-1 identity carries a digest of the retained PSK, so both are tried
 * and the one that reproduces the offered identity wins. A version-0 identity carries nothing of the key, so the
 * host's {@link HostPsk#version0Derivation()} decides.
 */
public final class HostPskStore implements PskResolver {
    /**
     * @param key                 the host's configured PSK
     * @param version0Derivation  for version-0 identities: {@link Derivation#LIBNVME_COMPAT} for Linux hosts whose
     *                            nvme-cli/libnvme predates 1.16 (most today), {@link Derivation#RFC8446} otherwise
     */
    public record HostPsk(ConfiguredPsk key, Derivation version0Derivation) {
        public HostPsk {
            Objects.requireNonNull(key, "key");
            Objects.requireNonNull(version0Derivation, "version0Derivation");
        }
    }

    private final Map<String, HostPsk> keys = new ConcurrentHashMap<>();

    public HostPskStore(Map<String, HostPsk> initial) {
        keys.putAll(initial);
    }

    public void put(String hostNqn, HostPsk psk) {
        keys.put(hostNqn, psk);
    }

    public void remove(String hostNqn) {
        keys.remove(hostNqn);
    }

    /** The host's key now in force, or null. */
    public HostPsk get(String hostNqn) {
        return keys.get(hostNqn);
    }

    /** The hosts that have a key now (a snapshot). */
    public java.util.Set<String> hosts() {
        return java.util.Set.copyOf(keys.keySet());
    }

    @Override
    public DerivedPsk resolve(PskIdentity identity) {
        HostPsk host = keys.get(identity.hostNqn());
        if (host == null || host.key().cipherHash() != identity.hash()) {
            return null;
        }
        if (identity.version() == 0) {
            return NvmeTlsKeys.derive(host.key(), identity.hostNqn(), identity.subsystemNqn(), 0,
                host.version0Derivation());
        }
        String offered = identity.toString();
        DerivedPsk derived = null;
        for (Derivation derivation : Derivation.values()) {
            derived = NvmeTlsKeys.derive(host.key(), identity.hostNqn(), identity.subsystemNqn(), 1, derivation);
            if (derived.identity().toString().equals(offered)) {
                return derived;
            }
            derived.clear();
        }
        return derived; // matches neither: the handshake refuses it, naming the identity
    }
}
