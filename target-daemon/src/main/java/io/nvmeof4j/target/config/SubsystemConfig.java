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
 * @param maxNamespaces {@code attr.max_namespaces} (an nvmeof4j extension, SPDK's {@code nvmf_create_subsystem
 *                     max_namespaces}): NSIDs above it are refused; 0: every NSID a subsystem supports (1..1024)
 */
public record SubsystemConfig(String nqn, boolean allowAnyHost, List<String> allowedHosts, String serial,
                              String model, String firmware, String version, int cntlidMin, int cntlidMax,
                              int qidMax, List<NamespaceConfig> namespaces, int maxNamespaces) {
    /** A subsystem without a namespace limit of its own. */
    public SubsystemConfig(String nqn, boolean allowAnyHost, List<String> allowedHosts, String serial, String model,
                           String firmware, String version, int cntlidMin, int cntlidMax, int qidMax,
                           List<NamespaceConfig> namespaces) {
        this(nqn, allowAnyHost, allowedHosts, serial, model, firmware, version, cntlidMin, cntlidMax, qidMax,
            namespaces, 0);
    }

    public SubsystemConfig {
        Objects.requireNonNull(nqn, "nqn");
        Objects.requireNonNull(serial, "serial");
        Objects.requireNonNull(model, "model");
        Objects.requireNonNull(firmware, "firmware");
        allowedHosts = List.copyOf(allowedHosts);
        namespaces = List.copyOf(namespaces);
    }
}
