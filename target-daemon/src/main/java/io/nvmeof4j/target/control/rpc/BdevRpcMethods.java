package io.nvmeof4j.target.control.rpc;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.BooleanNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.nvmeof4j.target.backend.QosLimits;
import io.nvmeof4j.target.control.ControlException;
import io.nvmeof4j.target.control.ControlPlane;
import io.nvmeof4j.target.daemon.TargetDaemon;
import io.nvmeof4j.target.control.rpc.BdevRegistry.Bdev;

import java.util.Iterator;
import java.util.Map;
import java.util.Set;
import java.util.UUID;

import static io.nvmeof4j.target.control.rpc.RpcParams.control;
import static io.nvmeof4j.target.control.rpc.RpcParams.integer;
import static io.nvmeof4j.target.control.rpc.RpcParams.params;
import static io.nvmeof4j.target.control.rpc.RpcParams.text;

/** SPDK's {@code bdev_*} methods over the {@link BdevRegistry}: create, delete, resize, rescan, QoS, listing, I/O statistics. */
final class BdevRpcMethods {
    private final TargetDaemon daemon;
    private final ControlPlane control;
    private final BdevRegistry registry;
    private final ObjectMapper mapper = new ObjectMapper();

    BdevRpcMethods(TargetDaemon daemon, ControlPlane control, BdevRegistry registry) {
        this.daemon = daemon;
        this.control = control;
        this.registry = registry;
    }

    JsonNode createBdev(String who, JsonNode p, String kind) throws RpcError {
        boolean file = kind.equals("uring") || kind.equals("aio");
        ObjectNode o = file
            ? params(p, Set.of("name", "filename", "block_size", "uuid"), Set.of("readonly", "fallocate", "nowait"))
            : params(p, Set.of("name", "num_blocks", "block_size", "uuid", "physical_block_size", "optimal_io_boundary",
                "numa_id", "preferred_write_granularity", "preferred_write_alignment", "optimal_write_size",
                "preferred_unmap_granularity", "preferred_unmap_alignment"),
                Set.of("md_size", "md_interleave", "dif_type", "dif_is_head_of_md", "dif_pi_format"));
        String name;
        if (o.has("name")) {
            name = text(o, "name");
        } else if (kind.equals("malloc")) {
            do {
                name = "Malloc" + registry.nextMalloc++;
            } while (registry.bdevs.containsKey(name));
        } else {
            throw RpcError.invalidParams("name is required");
        }
        if (name.isEmpty() || name.length() > 255 || name.chars().anyMatch(c -> c < 0x20 || c == 0x7F)) {
            throw RpcError.invalidParams("name must be 1..255 printable characters");
        }
        if (registry.bdevs.containsKey(name)) {
            throw RpcError.errno(RpcError.EEXIST);
        }
        int blockSize = (int) (o.has("block_size") ? integer(o, "block_size", 0, 65536) : (file ? 0 : 512));
        if (blockSize != 0 && blockSize != 512 && blockSize != 4096) {
            throw RpcError.invalidParams("block_size " + blockSize + " is not 512 or 4096");
        }
        UUID uuid = UUID.randomUUID();
        if (o.has("uuid")) {
            try {
                uuid = UUID.fromString(text(o, "uuid"));
            } catch (IllegalArgumentException e) {
                throw RpcError.invalidParams("uuid " + o.get("uuid") + " is not a UUID");
            }
        }
        Bdev bdev;
        if (file) {
            String filename = text(o, "filename");
            if (filename.isEmpty() || filename.indexOf('\0') >= 0) {
                throw RpcError.invalidParams("filename is empty or holds a NUL");
            }
            bdev = new Bdev(name, kind.equals("aio") ? "AIO disk" : "URING bdev", "file", filename, 0, blockSize, uuid);
        } else {
            long numBlocks = integer(o, "num_blocks", 1, Long.MAX_VALUE);
            if (numBlocks > Long.MAX_VALUE / blockSize) {
                throw RpcError.invalidParams("num_blocks " + numBlocks + " x block_size " + blockSize
                    + " overflows 64 bits");
            }
            bdev = new Bdev(name, kind.equals("malloc") ? "Malloc disk" : "Null disk",
                kind.equals("malloc") ? "ram" : "null", null, numBlocks, blockSize, uuid);
        }
        registry.bdevs.put(name, bdev);
        try {
            registry.persistBdevs(who, "create bdev " + name);
        } catch (ControlException e) {
            registry.bdevs.remove(name);
            throw new RpcError(RpcError.INTERNAL_ERROR, "Internal error: " + e.getMessage());
        }
        return mapper.getNodeFactory().textNode(name);
    }

    JsonNode deleteBdev(String who, JsonNode p, String kind) throws RpcError {
        ObjectNode o = params(p, Set.of("name"));
        String name = text(o, "name");
        Bdev bdev = registry.bdevs.get(name);
        if (bdev == null || !BdevRegistry.kindOf(bdev).equals(kind)) {
            throw RpcError.errno(RpcError.ENODEV);
        }
        if (registry.claims.containsKey(name)) {
            throw new RpcError(RpcError.EBUSY, "Device or resource busy: bdev " + name + " is namespace "
                + registry.claims.get(name) + "; remove the namespace first");
        }
        registry.bdevs.remove(name);
        try {
            registry.persistBdevs(who, "delete bdev " + name);
        } catch (ControlException e) {
            registry.bdevs.put(name, bdev);
            throw new RpcError(RpcError.INTERNAL_ERROR, "Internal error: " + e.getMessage());
        }
        registry.unclaimedQos.remove(name);
        return BooleanNode.TRUE;
    }

    /**
     * SPDK's {@code bdev_null_resize}: {@code new_size} in MiB, growing only. Errors as SPDK's: -32603 for parameters
     * it cannot decode, -19 no such bdev, -22 not a null bdev or a smaller (or not block-aligned) size. A bdev a
     * namespace uses is resized live (the namespace attribute notice; persisted), an unused one in the registry.
     */
    JsonNode resizeNullBdev(String who, JsonNode p) throws RpcError {
        ObjectNode o;
        String name;
        long mib;
        try {
            o = params(p, Set.of("name", "new_size"));
            name = text(o, "name");
            mib = integer(o, "new_size", 0, Long.MAX_VALUE);
        } catch (RpcError e) {
            throw new RpcError(RpcError.INTERNAL_ERROR, "spdk_json_decode_object failed: " + e.getMessage());
        }
        Bdev bdev = registry.bdevs.get(name);
        if (bdev == null) {
            throw RpcError.errno(RpcError.ENODEV);
        }
        if (!BdevRegistry.kindOf(bdev).equals("null")) {
            throw new RpcError(RpcError.EINVAL, "Invalid argument: " + name + " is not a null bdev");
        }
        if (mib > Long.MAX_VALUE >> 20) {
            throw new RpcError(RpcError.EINVAL, "Invalid argument: new_size " + mib + " MiB overflows 64 bits");
        }
        long bytes = mib << 20;
        if (bytes % bdev.blockSize() != 0 || bytes < bdev.numBlocks() * bdev.blockSize()) {
            throw new RpcError(RpcError.EINVAL, "Invalid argument: the new size must not be smaller than the current "
                + "size (" + bdev.numBlocks() * bdev.blockSize() + " bytes)");
        }
        String claim = registry.claims.get(name);
        if (claim != null) {
            resizeClaimed(who, claim, bytes);
        }
        registry.bdevs.put(name, new Bdev(bdev.name(), bdev.productName(), bdev.backend(), bdev.path(),
            bytes / bdev.blockSize(), bdev.blockSize(), bdev.uuid()));
        if (claim == null) {
            try {
                registry.persistBdevs(who, "resize bdev " + name);
            } catch (ControlException e) {
                registry.bdevs.put(name, bdev);
                throw new RpcError(RpcError.INTERNAL_ERROR, "Internal error: " + e.getMessage());
            }
        } else {
            registry.persistClaims(who, "resize bdev " + name);
        }
        return BooleanNode.TRUE;
    }

    /**
     * SPDK's {@code bdev_aio_rescan}/{@code bdev_uring_rescan}: the bdev takes the size its file has now. Errors as
     * SPDK's: -32603 for parameters it cannot decode, -19 no such bdev (of that kind), -16 a file that shrank under a
     * namespace (SPDK's bdev layer refuses shrinking an open bdev).
     */
    JsonNode rescanBdev(String who, JsonNode p, String kind) throws RpcError {
        String name;
        try {
            name = text(params(p, Set.of("name")), "name");
        } catch (RpcError e) {
            throw new RpcError(RpcError.INTERNAL_ERROR, "spdk_json_decode_object failed: " + e.getMessage());
        }
        Bdev bdev = registry.bdevs.get(name);
        if (bdev == null || !BdevRegistry.kindOf(bdev).equals(kind)) {
            throw RpcError.errno(RpcError.ENODEV);
        }
        String claim = registry.claims.get(name);
        if (claim != null) {
            resizeClaimed(who, claim, 0);
        }
        // An unused file bdev has no size of its own: bdev_get_bdevs reads the file's.
        return BooleanNode.TRUE;
    }

    private void resizeClaimed(String who, String claim, long bytes) throws RpcError {
        int space = claim.lastIndexOf(' ');
        try {
            control.resizeNamespace(who, claim.substring(0, space), Integer.parseUnsignedInt(claim.substring(space + 1)),
                bytes);
        } catch (ControlException e) {
            throw switch (e.kind()) {
                case BUSY -> new RpcError(RpcError.EBUSY, "Device or resource busy: " + e.getMessage());
                case IO -> new RpcError(RpcError.INTERNAL_ERROR, "Internal error: " + e.getMessage());
                default -> new RpcError(RpcError.EINVAL, "Invalid argument: " + e.getMessage());
            };
        }
    }

    /**
     * SPDK's {@code bdev_set_qos_limit}: each limit given is set (0 removes it), the others stay as they are. Errors
     * as SPDK's: params that do not decode -32603 "spdk_json_decode_object failed" (SPDK's bdev RPCs answer so), an
     * unknown bdev -19, no limit given -22 "No rate limits specified"; nothing is changed by a refused call. An IOPS
     * limit not a multiple of 1000 is rounded up and a bandwidth beyond 64 bits of bytes lowered, as SPDK does.
     * On a bdev a namespace uses, the change is persisted and applies to running I/O at once.
     */
    JsonNode setQosLimit(String who, JsonNode p) throws RpcError {
        RpcError undecodable = new RpcError(RpcError.INTERNAL_ERROR, "spdk_json_decode_object failed");
        if (p == null || !p.isObject()) {
            throw undecodable;
        }
        ObjectNode o = (ObjectNode) p;
        Set<String> limitNames = Set.of(QosLimits.RW_IOS_PER_SEC, QosLimits.RW_MBYTES_PER_SEC,
            QosLimits.R_MBYTES_PER_SEC, QosLimits.W_MBYTES_PER_SEC);
        for (Iterator<String> it = o.fieldNames(); it.hasNext(); ) {
            String key = it.next();
            if (!key.equals("name") && !limitNames.contains(key)) {
                throw undecodable;
            }
        }
        JsonNode nameNode = o.get("name");
        if (nameNode == null || !nameNode.isTextual()) {
            throw undecodable;
        }
        Map<String, Long> given = new java.util.HashMap<>();
        for (String key : limitNames) {
            JsonNode v = o.get(key);
            if (v == null || v.isNull()) {
                continue; // null: not given (a client may send the options it was not given as null)
            }
            // uint64, as SPDK decodes it; beyond 63 bits is beyond every cap QosLimits.of applies anyway.
            if (!v.isIntegralNumber() || v.bigIntegerValue().signum() < 0 || v.bigIntegerValue().bitLength() > 64) {
                throw undecodable;
            }
            given.put(key, v.canConvertToLong() ? v.asLong() : Long.MAX_VALUE);
        }
        String name = nameNode.asText();
        if (!registry.bdevs.containsKey(name)) {
            throw RpcError.errno(RpcError.ENODEV);
        }
        if (given.isEmpty()) {
            throw new RpcError(RpcError.EINVAL, "No rate limits specified");
        }
        String claim = registry.claims.get(name);
        int space = claim == null ? -1 : claim.lastIndexOf(' ');
        String nqn = claim == null ? null : claim.substring(0, space);
        int nsid = claim == null ? 0 : Integer.parseUnsignedInt(claim.substring(space + 1));
        QosLimits before = claim == null ? registry.unclaimedQos.getOrDefault(name, QosLimits.NONE) : registry.namespaceQos(nqn, nsid);
        QosLimits next = QosLimits.of(
            given.getOrDefault(QosLimits.RW_IOS_PER_SEC, before.rwIosPerSec()),
            given.getOrDefault(QosLimits.RW_MBYTES_PER_SEC, before.rwMbytesPerSec()),
            given.getOrDefault(QosLimits.R_MBYTES_PER_SEC, before.rMbytesPerSec()),
            given.getOrDefault(QosLimits.W_MBYTES_PER_SEC, before.wMbytesPerSec()));
        if (claim == null) {
            if (next.none()) {
                registry.unclaimedQos.remove(name);
            } else {
                registry.unclaimedQos.put(name, next);
            }
            try {
                registry.persistBdevs(who, "set QoS of bdev " + name + ": " + next);
            } catch (ControlException e) {
                if (before.none()) {
                    registry.unclaimedQos.remove(name);
                } else {
                    registry.unclaimedQos.put(name, before);
                }
                throw new RpcError(RpcError.INTERNAL_ERROR, "Internal error: " + e.getMessage());
            }
            return BooleanNode.TRUE;
        }
        try {
            control.setQos(who, nqn, nsid, next);
        } catch (ControlException e) {
            throw control(e, "Failed to configure rate limit");
        }
        return BooleanNode.TRUE;
    }

    JsonNode getBdevs(JsonNode p) throws RpcError {
        ObjectNode o = params(p, Set.of("name", "timeout"));
        ArrayNode list = mapper.createArrayNode();
        if (o.has("name")) {
            Bdev b = registry.bdevs.get(text(o, "name"));
            if (b == null) {
                throw RpcError.errno(RpcError.ENODEV);
            }
            list.add(bdevJson(b));
            return list;
        }
        for (Bdev b : registry.bdevs.values()) {
            list.add(bdevJson(b));
        }
        return list;
    }

    /**
     * SPDK's I/O statistics of registry.bdevs, from the namespace meters (ticks are nanoseconds: {@code tick_rate} 1e9). A bdev
     * no namespace uses, or a daemon with metrics off, reports zeros.
     */
    JsonNode getIostat(JsonNode p) throws RpcError {
        ObjectNode o = params(p, Set.of("name"), Set.of("per_channel"));
        ObjectNode result = mapper.createObjectNode();
        result.put("tick_rate", 1_000_000_000L);
        result.put("ticks", System.nanoTime());
        ArrayNode list = result.putArray("bdevs");
        if (o.has("name") && !registry.bdevs.containsKey(text(o, "name"))) {
            throw RpcError.errno(RpcError.ENODEV);
        }
        for (Bdev b : registry.bdevs.values()) {
            if (o.has("name") && !b.name().equals(o.get("name").asText())) {
                continue;
            }
            io.nvmeof4j.target.metrics.NamespaceMeters m = meters(b.name());
            ObjectNode s = list.addObject();
            s.put("name", b.name());
            s.put("bytes_read", m == null ? 0 : m.bytes(true));
            s.put("num_read_ops", m == null ? 0 : m.completed(io.nvmeof4j.target.metrics.TargetMeterNames.OP_READ));
            s.put("bytes_written", m == null ? 0 : m.bytes(false));
            s.put("num_write_ops", m == null ? 0 : m.completed(io.nvmeof4j.target.metrics.TargetMeterNames.OP_WRITE));
            s.put("num_unmap_ops", m == null ? 0
                : m.completed(io.nvmeof4j.target.metrics.TargetMeterNames.OP_DEALLOCATE));
            s.put("read_latency_ticks", m == null ? 0
                : m.latencyNanos(io.nvmeof4j.target.metrics.TargetMeterNames.OP_READ));
            s.put("write_latency_ticks", m == null ? 0
                : m.latencyNanos(io.nvmeof4j.target.metrics.TargetMeterNames.OP_WRITE));
        }
        return result;
    }

    private io.nvmeof4j.target.metrics.NamespaceMeters meters(String bdev) {
        String claim = registry.claims.get(bdev);
        if (claim == null) {
            return null;
        }
        int space = claim.lastIndexOf(' ');
        io.nvmeof4j.target.model.Subsystem s = daemon.model().subsystem(claim.substring(0, space));
        io.nvmeof4j.target.model.Namespace ns = s == null ? null
            : s.namespace(Integer.parseUnsignedInt(claim.substring(space + 1)));
        return ns == null ? null : ns.meters();
    }

    private ObjectNode bdevJson(Bdev b) {
        ObjectNode o = mapper.createObjectNode();
        o.put("name", b.name());
        o.putArray("aliases");
        o.put("product_name", b.productName());
        o.put("block_size", b.blockSize() == 0 ? 4096 : b.blockSize());
        long blocks = b.numBlocks();
        if (b.path() != null) {
            try {
                blocks = java.nio.file.Files.size(java.nio.file.Path.of(b.path())) / (b.blockSize() == 0 ? 4096
                    : b.blockSize());
            } catch (java.io.IOException | java.nio.file.InvalidPathException e) {
                blocks = 0;
            }
        }
        o.put("num_blocks", blocks);
        o.put("uuid", b.uuid().toString());
        String claim = registry.claims.get(b.name());
        o.set("assigned_rate_limits", registry.assignedRateLimits(claim == null
            ? registry.unclaimedQos.getOrDefault(b.name(), QosLimits.NONE)
            : registry.namespaceQos(claim.substring(0, claim.lastIndexOf(' ')),
                Integer.parseUnsignedInt(claim.substring(claim.lastIndexOf(' ') + 1)))));
        o.put("claimed", registry.claims.containsKey(b.name()));
        if (registry.claims.containsKey(b.name())) {
            o.put("claim_type", "exclusive_write");
        }
        ObjectNode specific = o.putObject("driver_specific");
        if (b.path() != null) {
            specific.putObject(BdevRegistry.kindOf(b)).put("filename", b.path());
        }
        return o;
    }
}
