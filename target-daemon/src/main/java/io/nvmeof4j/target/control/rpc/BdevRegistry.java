package io.nvmeof4j.target.control.rpc;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.nvmeof4j.target.backend.QosLimits;
import io.nvmeof4j.target.config.NamespaceConfig;
import io.nvmeof4j.target.config.SubsystemConfig;
import io.nvmeof4j.target.control.ControlException;
import io.nvmeof4j.target.control.ControlPlane;

import java.util.Map;
import java.util.TreeMap;
import java.util.UUID;

/**
 * The bdevs the JSON-RPC methods know (SPDK's named block devices): each one's description, the namespace that
 * uses it, and the QoS limits of unused ones; persisted in the configuration as {@code "nvmeof4j": {"rpc_bdevs"}}.
 */
final class BdevRegistry {
    /** A registered bdev: the namespace device it becomes, and who uses it. */
    record Bdev(String name, String productName, String backend, String path, long numBlocks, int blockSize,
               UUID uuid) {
    }

    private final ControlPlane control;
    private final ObjectMapper mapper = new ObjectMapper();
    final Map<String, Bdev> bdevs = new TreeMap<>();
    /** bdev name → "nqn nsid" of the namespace using it. */
    final Map<String, String> claims = new TreeMap<>();
    /**
     * QoS limits of bdevs no namespace uses (a namespace's are in its configuration): applied when a namespace is
     * made from the bdev, and kept when the namespace is removed, as SPDK keeps them on the bdev.
     */
    final Map<String, QosLimits> unclaimedQos = new TreeMap<>();
    int nextMalloc;

    BdevRegistry(ControlPlane control) {
        this.control = control;
        // Namespaces served already (the configuration file's, or added before this socket opened) get their bdev,
        // named as save_config names them, so they can be listed, removed and saved like the ones added here.
        for (SubsystemConfig s : control.configuration().subsystems()) {
            for (NamespaceConfig n : s.namespaces()) {
                if (n.enabled()) {
                    String name = derivedBdevName(s.nqn(), n.nsid());
                    bdevs.put(name, new Bdev(name, n.backend() == io.nvmeof4j.target.config.BackendType.RAM
                        ? "Malloc disk" : n.backend() == io.nvmeof4j.target.config.BackendType.NULL ? "Null disk"
                        : "URING bdev", n.backend().configName(), n.path() == null ? null : n.path().toString(),
                        n.blockSize() == 0 ? 0 : n.sizeBytes() / n.blockSize(), n.blockSize(), n.uuid()));
                    claims.put(name, s.nqn() + " " + Integer.toUnsignedString(n.nsid()));
                }
            }
        }
        restoreBdevs(control.rpcBdevs());
    }

    /**
     * The registry as persisted ({@code "nvmeof4j": {"rpc_bdevs": [...]}}): unused bdevs come back, and a namespace
     * still served gets back the name its bdev had (instead of the derived one). Entries naming a namespace that is
     * gone, or that cannot be read, are skipped with a warning.
     */
    private void restoreBdevs(JsonNode persisted) {
        if (persisted == null) {
            return;
        }
        for (JsonNode e : persisted) {
            try {
                String name = e.get("name").asText();
                String kind = e.get("kind").asText();
                String claim = e.path("namespace").asText(null);
                Bdev bdev = new Bdev(name, switch (kind) {
                    case "malloc" -> "Malloc disk";
                    case "null" -> "Null disk";
                    case "aio" -> "AIO disk";
                    case "uring" -> "URING bdev";
                    default -> throw new IllegalArgumentException("kind " + kind);
                }, kind.equals("malloc") ? "ram" : kind.equals("null") ? "null" : "file",
                    e.hasNonNull("filename") ? e.get("filename").asText() : null, e.path("num_blocks").asLong(0),
                    e.path("block_size").asInt(0), UUID.fromString(e.get("uuid").asText()));
                if (claim != null) {
                    String derived = bdevOf(claim.substring(0, claim.lastIndexOf(' ')),
                        Integer.parseUnsignedInt(claim.substring(claim.lastIndexOf(' ') + 1)));
                    if (derived == null) {
                        org.slf4j.LoggerFactory.getLogger(BdevRegistry.class).warn("bdev {}: namespace {} is not "
                            + "served any more; not restored", name, claim);
                        continue;
                    }
                    Bdev served = bdevs.remove(derived);
                    claims.remove(derived);
                    // The namespace is what is served: its size (a resize since) wins over the registry's.
                    bdev = new Bdev(name, bdev.productName(), bdev.backend(), bdev.path(),
                        served != null && served.numBlocks() > 0 ? served.numBlocks() : bdev.numBlocks(),
                        bdev.blockSize(), bdev.uuid());
                    claims.put(name, claim);
                }
                if (!bdevs.containsKey(name)) {
                    bdevs.put(name, bdev);
                    JsonNode q = e.get("qos");
                    if (claim == null && q != null) {
                        unclaimedQos.put(name, QosLimits.of(q.path(QosLimits.RW_IOS_PER_SEC).asLong(0),
                            q.path(QosLimits.RW_MBYTES_PER_SEC).asLong(0), q.path(QosLimits.R_MBYTES_PER_SEC).asLong(0),
                            q.path(QosLimits.W_MBYTES_PER_SEC).asLong(0)));
                    }
                }
            } catch (RuntimeException ex) {
                org.slf4j.LoggerFactory.getLogger(BdevRegistry.class).warn("rpc_bdevs entry {} skipped: {}", e,
                    ex.toString());
            }
        }
    }

    /** Writes the registry to the configuration (see {@link ControlPlane#saveRpcBdevs}). */
    void persistBdevs(String who, String what) throws ControlException {
        ArrayNode list = mapper.createArrayNode();
        for (Bdev b : bdevs.values()) {
            ObjectNode o = list.addObject();
            o.put("name", b.name());
            o.put("kind", kindOf(b));
            if (b.path() != null) {
                o.put("filename", b.path());
            } else {
                o.put("num_blocks", b.numBlocks());
            }
            o.put("block_size", b.blockSize());
            o.put("uuid", b.uuid().toString());
            if (claims.containsKey(b.name())) {
                o.put("namespace", claims.get(b.name()));
            } else if (unclaimedQos.containsKey(b.name())) {
                o.set("qos", assignedRateLimits(unclaimedQos.get(b.name()))); // a namespace's own are in its config
            }
        }
        control.saveRpcBdevs(who, what, list);
    }

    /** After a namespace change that succeeded: the bdev names are kept best effort (the namespace is persisted). */
    void persistClaims(String who, String what) {
        try {
            persistBdevs(who, what);
        } catch (ControlException e) {
            org.slf4j.LoggerFactory.getLogger(BdevRegistry.class).warn("{}: {} done, but the bdev names could not "
                + "be written ({}); after a restart its bdev has the derived name", who, what, e.getMessage());
        }
    }

    /** The bdev name of a namespace that was not made from a named bdev: the NQN's last part, "n", the NSID. */
    static String derivedBdevName(String nqn, int nsid) {
        return nqn.substring(nqn.lastIndexOf(':') + 1) + "n" + Integer.toUnsignedString(nsid);
    }

    String bdevOf(String nqn, int nsid) {
        String key = nqn + " " + Integer.toUnsignedString(nsid);
        for (Map.Entry<String, String> e : claims.entrySet()) {
            if (e.getValue().equals(key)) {
                return e.getKey();
            }
        }
        return null;
    }

    /** The QoS limits a namespace's configuration holds (none when it has no such namespace). */
    QosLimits namespaceQos(String nqn, int nsid) {
        return control.configuration().subsystem(nqn).flatMap(s -> s.namespaces().stream()
            .filter(n -> n.nsid() == nsid).findFirst()).map(NamespaceConfig::qos).orElse(QosLimits.NONE);
    }

    /** SPDK's {@code assigned_rate_limits}: all four, in its order, 0 for a limit not set. */
    ObjectNode assignedRateLimits(QosLimits limits) {
        ObjectNode o = mapper.createObjectNode();
        o.put(QosLimits.RW_IOS_PER_SEC, limits.rwIosPerSec());
        o.put(QosLimits.RW_MBYTES_PER_SEC, limits.rwMbytesPerSec());
        o.put(QosLimits.R_MBYTES_PER_SEC, limits.rMbytesPerSec());
        o.put(QosLimits.W_MBYTES_PER_SEC, limits.wMbytesPerSec());
        return o;
    }

    static String kindOf(Bdev b) {
        return switch (b.productName()) {
            case "Malloc disk" -> "malloc";
            case "Null disk" -> "null";
            case "AIO disk" -> "aio";
            default -> "uring";
        };
    }
}
