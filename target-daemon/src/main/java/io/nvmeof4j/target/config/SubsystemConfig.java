package io.nvmeof4j.target.config;

import java.util.List;
import java.util.Objects;

/**
 * One {@code subsystems[i]} entry, validated.
 *
 * @param nqn          the subsystem NQN
 * @param allowAnyHost {@code attr.allow_any_host}
 * @param allowedHosts {@code allowed_hosts}: host NQNs that may connect when {@code allowAnyHost} is false
 * @param serial       {@code attr.serial} (1..20 printable ASCII)
 * @param model        {@code attr.model} (1..40 printable ASCII)
 * @param firmware     {@code attr.firmware} (1..8 printable ASCII)
 * @param version      {@code attr.version} as written ({@code "1.3"}), or null; accepted, not applied
 * @param cntlidMin    {@code attr.cntlid_min}: lowest CNTLID of this subsystem's controllers (two daemons serving one
 *                     subsystem need disjoint ranges)
 * @param cntlidMax    {@code attr.cntlid_max}: highest CNTLID
 * @param qidMax       {@code attr.qid_max}: most I/O queues per controller
 * @param namespaces   in configuration order
 */
public record SubsystemConfig(String nqn, boolean allowAnyHost, List<String> allowedHosts, String serial,
                              String model, String firmware, String version, int cntlidMin, int cntlidMax,
                              int qidMax, List<NamespaceConfig> namespaces) {
    public SubsystemConfig {
        Objects.requireNonNull(nqn, "nqn");
        Objects.requireNonNull(serial, "serial");
        Objects.requireNonNull(model, "model");
        Objects.requireNonNull(firmware, "firmware");
        allowedHosts = List.copyOf(allowedHosts);
        namespaces = List.copyOf(namespaces);
    }
}
