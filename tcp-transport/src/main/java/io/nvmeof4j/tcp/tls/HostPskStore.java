package io.nvmeof4j.tcp.tls;

import io.nvmeof4j.tcp.tls.NvmeTlsKeys.Derivation;

import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The controller's configured PSKs, one per host NQN, and the PSKs DH-HMAC-CHAP generated (secure channel
 * concatenation), as a {@link PskResolver}. Keys may be added, replaced or removed while the target runs; a
 * handshake uses the key present when it starts.
 * <p>Which derivation the host used: a version-1 identity carries a digest of the retained PSK, so both are tried
 * and the one that reproduces the offered identity wins. A version-0 identity carries nothing of the key, so the
 * host's {@link HostPsk#version0Derivation()} decides.
 * <p><b>Generated PSKs</b> ({@code NVMe1G..} identities) live beside the configured ones, by identity, per host and
 * subsystem, as nvmet keeps them per controller: {@link #addGenerated} stores one after the transaction on the
 * plain admin queue; the host then drops that connection and comes back with TLS under it, and the admin Connect
 * there {@link #bindGenerated binds} it to the new controller, which may then add its I/O queues under it. It goes
 * when that controller goes ({@link #releaseGenerated}), when a REPLACETLSPSK on its admin queue
 * {@link #replaceGenerated replaces} it, or, never bound, after its unused timeout; one unbound PSK per host and
 * subsystem at most (a newer one replaces it), so a host cannot pile them up. Reads are lock-free; the few changes
 * (control path: a transaction's end, a Connect, a controller's end) synchronise on the store.
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
    private final Map<String, Generated> generated = new ConcurrentHashMap<>();

    /** A generated PSK; {@link #psk} is never handed out itself (a handshake clears what it gets). */
    private static final class Generated {
        final DerivedPsk psk;
        /** The controller it belongs to, null until a TLS admin Connect binds it; written under the store's lock. */
        volatile Object owner;
        /** Unbound, it is refused after this ({@link System#nanoTime()}). */
        final long unusedDeadlineNanos;

        Generated(DerivedPsk psk, Object owner, long unusedDeadlineNanos) {
            this.psk = psk;
            this.owner = owner;
            this.unusedDeadlineNanos = unusedDeadlineNanos;
        }

        boolean expired(long now) {
            return owner == null && now - unusedDeadlineNanos > 0;
        }
    }

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

    /**
     * Stores a PSK that DH-HMAC-CHAP generated (NEWTLSPSK), unbound: a TLS handshake under it must come within
     * {@code unusedTimeoutNanos}. Replaces an unbound one of the same host and subsystem.
     *
     * @return its identity ({@code NVMe1G..}), which the TLS connection will offer
     */
    public synchronized String addGenerated(DerivedPsk psk, long unusedTimeoutNanos) {
        requireGenerated(psk);
        long now = System.nanoTime();
        PskIdentity id = psk.identity();
        generated.values().removeIf(g -> {
            boolean stale = g.expired(now) || g.owner == null && g.psk.identity().hostNqn().equals(id.hostNqn())
                && g.psk.identity().subsystemNqn().equals(id.subsystemNqn());
            if (stale) {
                g.psk.clear();
            }
            return stale;
        });
        String name = id.toString();
        generated.put(name, new Generated(psk, null, now + unusedTimeoutNanos));
        return name;
    }

    /**
     * Binds the generated PSK {@code identity} to {@code owner} (the controller a TLS admin Connect under it creates).
     *
     * @return false when there is no such PSK (expired, released, replaced) or another owner holds it
     */
    public synchronized boolean bindGenerated(String identity, Object owner) {
        Generated g = generated.get(identity);
        if (g == null || g.expired(System.nanoTime()) || g.owner != null && g.owner != owner) {
            return false;
        }
        g.owner = owner;
        return true;
    }

    /** The controller the generated PSK {@code identity} is bound to, or null (unbound, or no such PSK). */
    public Object generatedOwner(String identity) {
        Generated g = generated.get(identity);
        return g == null ? null : g.owner;
    }

    /**
     * REPLACETLSPSK: {@code replacement} takes the place of the generated PSK {@code identity}, bound to the same
     * controller; the old identity is refused from now on (connections already under it go on).
     *
     * @return false when {@code identity} is no generated PSK of this store any more
     */
    public synchronized boolean replaceGenerated(String identity, DerivedPsk replacement) {
        requireGenerated(replacement);
        Generated old = generated.remove(identity);
        if (old == null) {
            return false;
        }
        old.psk.clear();
        generated.put(replacement.identity().toString(), new Generated(replacement, old.owner,
            old.unusedDeadlineNanos));
        return true;
    }

    /** Drops every generated PSK bound to {@code owner} (its controller went away). */
    public synchronized void releaseGenerated(Object owner) {
        generated.values().removeIf(g -> {
            if (g.owner != owner) {
                return false;
            }
            g.psk.clear();
            return true;
        });
    }

    /**
     * The generated PSKs held now, by identity (not secret), each with the owner it is bound to or null while it
     * waits for its TLS admin Connect (a snapshot).
     */
    public Map<String, Object> generatedOwners() {
        Map<String, Object> out = new java.util.HashMap<>();
        generated.forEach((identity, g) -> out.put(identity, g.owner));
        return java.util.Collections.unmodifiableMap(out);
    }

    private static void requireGenerated(DerivedPsk psk) {
        if (!psk.identity().generated()) {
            throw new IllegalArgumentException("not a generated PSK: " + psk.identity());
        }
    }

    @Override
    public DerivedPsk resolve(PskIdentity identity) {
        if (identity.generated()) {
            Generated g = generated.get(identity.toString());
            return g == null || g.expired(System.nanoTime()) ? null : g.psk.copy();
        }
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
