package io.nvmeof4j.target.control.rpc;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.nvmeof4j.protocol.spi.AddressFamily;
import io.nvmeof4j.protocol.spi.TransportType;
import io.nvmeof4j.target.config.TargetConfig;
import io.nvmeof4j.target.control.ControlException;

import java.util.Iterator;
import java.util.Set;

/** The params of a JSON-RPC call, decoded as SPDK's strict decoders do: unknown keys and wrong types are -32602. */
final class RpcParams {
    private RpcParams() {
    }

    /**
     * {@link #params(JsonNode, Set)}, also accepting the {@code offOnly} keys (features newer rpc.py versions send
     * switched off: {@code "passthrough": false}) as long as they are off (false, 0, null or ""); on, they are
     * -32602 naming the feature.
     */
    static ObjectNode params(JsonNode p, Set<String> known, Set<String> offOnly) throws RpcError {
        Set<String> all = new java.util.HashSet<>(known);
        all.addAll(offOnly);
        ObjectNode o = params(p, all);
        for (String name : offOnly) {
            JsonNode v = o.get(name);
            if (v != null && !v.isNull() && !(v.isBoolean() && !v.asBoolean()) && !(v.isNumber() && v.asLong() == 0)
                && !(v.isTextual() && v.asText().isEmpty())) {
                throw RpcError.invalidParams(name + " is not supported by nvmeof4j");
            }
        }
        return o;
    }

    /** The params object with only {@code known} keys (SPDK's decoders refuse unknown ones); null means none. */
    static ObjectNode params(JsonNode p, Set<String> known) throws RpcError {
        if (p == null || p.isNull()) {
            return new ObjectMapper().createObjectNode();
        }
        if (!p.isObject()) {
            throw RpcError.invalidParams("params must be an object");
        }
        for (Iterator<String> it = p.fieldNames(); it.hasNext(); ) {
            String name = it.next();
            if (!known.contains(name)) {
                throw RpcError.invalidParams("unknown parameter " + name);
            }
        }
        return (ObjectNode) p;
    }

    static String text(ObjectNode o, String name) throws RpcError {
        JsonNode v = o.get(name);
        if (v == null || !v.isTextual()) {
            throw RpcError.invalidParams(name + (v == null ? " is required" : " must be a string"));
        }
        return v.asText();
    }

    static String nqn(ObjectNode o, String name) throws RpcError {
        String nqn = text(o, name);
        try {
            return TargetConfig.checkNqn(nqn);
        } catch (IllegalArgumentException e) {
            throw RpcError.invalidParams(name + ": " + e.getMessage());
        }
    }

    static boolean bool(ObjectNode o, String name) throws RpcError {
        JsonNode v = o.get(name);
        if (v == null || !v.isBoolean()) {
            throw RpcError.invalidParams(name + (v == null ? " is required" : " must be true or false"));
        }
        return v.asBoolean();
    }

    /** An integer in min..max; a value beyond 64 bits or a fraction is refused, never wrapped or rounded. */
    static long integer(ObjectNode o, String name, long min, long max) throws RpcError {
        JsonNode v = o.get(name);
        if (v == null || !v.isIntegralNumber() || !v.canConvertToLong()) {
            throw RpcError.invalidParams(name + (v == null ? " is required" : " must be an integer in " + min + ".."
                + max));
        }
        long value = v.asLong();
        if (value < min || value > max) {
            throw RpcError.invalidParams(name + " " + value + " is outside " + min + ".." + max);
        }
        return value;
    }

    /** A refused change as SPDK's nvmf RPCs answer it: -32602 with the reason, -32603 for an I/O failure. */
    static RpcError control(ControlException e, String prefix) {
        if (e.kind() == ControlException.Kind.IO) {
            return new RpcError(RpcError.INTERNAL_ERROR, "Internal error: " + e.getMessage());
        }
        return new RpcError(RpcError.INVALID_PARAMS, prefix + ": " + e.getMessage());
    }

    // ---------------------------------------------------------------------------------------------- addresses

    static TransportType trtype(ObjectNode a) throws RpcError {
        String t = text(a, "trtype");
        if ("tcp".equalsIgnoreCase(t)) {
            return TransportType.TCP;
        }
        if ("rdma".equalsIgnoreCase(t)) {
            return TransportType.RDMA;
        }
        throw RpcError.invalidParams("trtype " + t + " is not TCP or RDMA");
    }

    static AddressFamily adrfam(ObjectNode a) throws RpcError {
        String f = a.has("adrfam") ? text(a, "adrfam") : "IPv4";
        if ("ipv4".equalsIgnoreCase(f)) {
            return AddressFamily.IPV4;
        }
        if ("ipv6".equalsIgnoreCase(f)) {
            return AddressFamily.IPV6;
        }
        throw RpcError.invalidParams("adrfam " + f + " is not IPv4 or IPv6");
    }

    static String trsvcid(ObjectNode a) throws RpcError {
        if (!a.has("trsvcid")) {
            throw RpcError.invalidParams("listen_address.trsvcid is required for TCP and RDMA");
        }
        String s = text(a, "trsvcid");
        try {
            int port = Integer.parseInt(s);
            if (port < 0 || port > 65535) {
                throw RpcError.invalidParams("trsvcid " + s + " is not a port number");
            }
            return Integer.toString(port);
        } catch (NumberFormatException e) {
            throw RpcError.invalidParams("trsvcid " + s + " is not a port number");
        }
    }
}
