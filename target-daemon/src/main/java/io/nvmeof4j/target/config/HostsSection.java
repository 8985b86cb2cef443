package io.nvmeof4j.target.config;

import io.nvmeof4j.tcp.tls.ConfiguredPsk;
import io.nvmeof4j.tcp.tls.HostPskStore;
import io.nvmeof4j.tcp.tls.NvmeTlsKeys;
import com.fasterxml.jackson.databind.JsonNode;
import io.nvmeof4j.protocol.auth.DhchapCredentials;
import io.nvmeof4j.protocol.auth.DhchapGroup;
import io.nvmeof4j.protocol.auth.DhchapHash;
import io.nvmeof4j.protocol.auth.DhchapSecret;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static io.nvmeof4j.target.config.ConfigValues.*;

/** The {@code "hosts"} array: host NQNs and each host's DH-HMAC-CHAP and TLS keys. */
final class HostsSection {
    /** nvmetcli saves a host's configfs attributes dhchap_key & co. as {"dhchap": {"key": ..}}; both are read. */
    private static final List<String> DHCHAP_FIELDS = List.of("key", "ctrl_key", "hash", "dhgroup");

    private final ConfigNotices notices;
    private final Map<String, DhchapCredentials> hostCredentials = new LinkedHashMap<>();
    private final Map<String, HostPskStore.HostPsk> tlsKeys = new HashMap<>();

    HostsSection(ConfigNotices notices) {
        this.notices = notices;
    }

    /** The DH-HMAC-CHAP settings of the hosts read so far, by host NQN. */
    Map<String, DhchapCredentials> credentials() {
        return hostCredentials;
    }

    /** The TLS PSKs of the hosts read so far, by host NQN. */
    Map<String, HostPskStore.HostPsk> tlsKeys() {
        return tlsKeys;
    }

    List<String> hosts(JsonNode node, String where) throws ConfigException {
        List<String> hosts = new ArrayList<>();
        if (node == null || node.isNull()) {
            return hosts;
        }
        requireArray(node, where);
        for (int i = 0; i < node.size(); i++) {
            String hw = where + "[" + i + "]";
            JsonNode host = node.get(i);
            requireObject(host, hw);
            String nqn = nqn(required(host, hw, "nqn"), at(hw, "nqn"));
            DhchapCredentials credentials = dhchap(host, hw);
            if (credentials != null) {
                hostCredentials.put(nqn, credentials);
            }
            JsonNode tlsKey = host.get("tls_key");
            if (tlsKey != null && !tlsKey.isNull() && !(tlsKey.isTextual() && tlsKey.asText().isEmpty())) {
                ConfiguredPsk key;
                try {
                    key = ConfiguredPsk.parse(text(tlsKey, at(hw, "tls_key")));
                } catch (IllegalArgumentException e) {
                    throw new ConfigException(at(hw, "tls_key"), e.getMessage()); // never the key itself
                }
                // Version-0 identities do not say how the host derived its TLS PSK; hosts with nvme-cli < 2.16
                // (libnvme < 1.16) use the older layout, hence the default.
                NvmeTlsKeys.Derivation derivation = NvmeTlsKeys.Derivation.LIBNVME_COMPAT;
                if (host.has("tls_psk_derivation")) {
                    String dw = at(hw, "tls_psk_derivation");
                    try {
                        derivation = NvmeTlsKeys.Derivation.fromConfigName(text(host.get("tls_psk_derivation"), dw));
                    } catch (IllegalArgumentException e) {
                        throw new ConfigException(dw, e.getMessage());
                    }
                }
                tlsKeys.put(nqn, new HostPskStore.HostPsk(key, derivation));
            }
            notices.reportKeys(host, hw, Set.of("nqn", "dhchap", "dhchap_key", "dhchap_ctrl_key", "dhchap_hash",
                "dhchap_dhgroup", "tls_key", "tls_psk_derivation"), Map.of());
            if (!hosts.contains(nqn)) {
                hosts.add(nqn);
            }
        }
        return hosts;
    }

    /**
     * A host's DH-HMAC-CHAP settings, from nvmetcli's {@code "dhchap": {"key", "ctrl_key", "hash", "dhgroup"}} or
     * from the configfs names {@code dhchap_key}, {@code dhchap_ctrl_key}, {@code dhchap_hash}, {@code dhchap_dhgroup}.
     * No key (absent or empty, as nvmetcli saves a host without one): null, the host connects without
     * authentication. Defaults as nvmet's: hmac(sha256), DH group null. Errors never quote a key.
     */
    static DhchapCredentials dhchap(JsonNode host, String hw) throws ConfigException {
        JsonNode group = host.get("dhchap");
        Map<String, String> values = new HashMap<>();
        Map<String, String> where = new HashMap<>();
        if (group != null && !group.isNull()) {
            requireObject(group, at(hw, "dhchap"));
            for (Iterator<String> it = group.fieldNames(); it.hasNext(); ) {
                String f = it.next();
                if (!DHCHAP_FIELDS.contains(f)) {
                    throw new ConfigException(at(at(hw, "dhchap"), f), "unknown DH-HMAC-CHAP setting; expected one of "
                        + DHCHAP_FIELDS);
                }
                values.put(f, text(group.get(f), at(at(hw, "dhchap"), f)));
                where.put(f, at(at(hw, "dhchap"), f));
            }
        }
        for (String f : DHCHAP_FIELDS) {
            JsonNode flat = host.get("dhchap_" + f);
            if (flat != null && !flat.isNull()) {
                if (values.containsKey(f)) {
                    throw new ConfigException(at(hw, "dhchap_" + f), "is also given as dhchap." + f + "; keep one");
                }
                values.put(f, text(flat, at(hw, "dhchap_" + f)));
                where.put(f, at(hw, "dhchap_" + f));
            }
        }
        String key = values.getOrDefault("key", "").trim();
        String ctrlKey = values.getOrDefault("ctrl_key", "").trim();
        if (key.isEmpty()) {
            if (!ctrlKey.isEmpty()) {
                throw new ConfigException(where.get("ctrl_key"),
                    "a controller key needs a host key (bidirectional authentication starts with the host's)");
            }
            return null;
        }
        try {
            DhchapSecret hostKey = secret(key, where.get("key"));
            DhchapSecret controllerKey = ctrlKey.isEmpty() ? null : secret(ctrlKey, where.get("ctrl_key"));
            DhchapHash hash = values.containsKey("hash") && !values.get("hash").isBlank()
                ? DhchapHash.parse(values.get("hash")) : DhchapCredentials.HASH_DEFAULT;
            DhchapGroup dhgroup = values.containsKey("dhgroup") && !values.get("dhgroup").isBlank()
                ? DhchapGroup.parse(values.get("dhgroup")) : DhchapCredentials.GROUP_DEFAULT;
            return new DhchapCredentials(hostKey, controllerKey, hash, dhgroup);
        } catch (IllegalArgumentException e) {
            String field = e.getMessage().contains("hash '") ? "hash" : "dhgroup";
            throw new ConfigException(where.getOrDefault(field, hw), e.getMessage());
        }
    }

    private static DhchapSecret secret(String text, String where) throws ConfigException {
        try {
            return DhchapSecret.parse(text);
        } catch (IllegalArgumentException e) {
            throw new ConfigException(where, e.getMessage());
        }
    }
}
