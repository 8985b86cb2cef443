package io.nvmeof4j.target.auth;

import io.nvmeof4j.protocol.auth.DhchapCredentials;

import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The DH-HMAC-CHAP credentials the target demands, per host NQN, live: the configuration fills it at start and
 * {@link #set} replaces a host's entry while the daemon runs (key rotation). A queue reads its host's entry at each
 * Negotiate, so a new key applies to the next connection and the next re-authentication; queues authenticated
 * with the old key stay up, as on a Linux target after writing dhchap_key.
 * <p>Lock-free reads ({@link ConcurrentHashMap}); any thread.
 */
public final class HostKeys {
    private final ConcurrentHashMap<String, DhchapCredentials> byHost = new ConcurrentHashMap<>();

    /** The credentials of {@code hostNqn}, or null when the host connects without authentication. */
    public DhchapCredentials get(String hostNqn) {
        return byHost.get(hostNqn);
    }

    /** Sets (null: removes) the credentials of {@code hostNqn}. */
    public void set(String hostNqn, DhchapCredentials credentials) {
        if (credentials == null) {
            byHost.remove(hostNqn);
        } else {
            byHost.put(hostNqn, credentials);
        }
    }

    /** Replaces every entry (configuration load). */
    public void replaceAll(Map<String, DhchapCredentials> all) {
        byHost.keySet().retainAll(all.keySet());
        byHost.putAll(all);
    }

    /** Host NQNs that must authenticate, sorted. */
    public Set<String> hosts() {
        return new TreeSet<>(byHost.keySet());
    }
}
