package io.nvmeof4j.target.config;

import com.fasterxml.jackson.databind.JsonNode;
import io.nvmeof4j.protocol.spi.AddressFamily;
import io.nvmeof4j.protocol.spi.PortOptions;
import io.nvmeof4j.protocol.spi.TransportAddress;
import io.nvmeof4j.protocol.spi.TransportType;
import io.nvmeof4j.target.model.Port;

import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;

import static io.nvmeof4j.target.config.ConfigValues.*;

/** The {@code "ports"} array: transport addresses, port parameters, exported subsystems, ANA groups, referrals. */
final class PortsSection {
    private static final Pattern IPV4 = Pattern.compile(
        "(25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)(\\.(25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)){3}");
    private static final Set<String> TREQ_VALUES = Set.of("not specified", "required", "not required");

    /** Keys nvmetcli writes that nvmeof4j accepts without using them, with the reason given in the notice. */
    private static final Map<String, String> IGNORED_PORT = Map.of();
    private static final Map<String, String> IGNORED_ADDR = Map.of();
    private static final Map<String, String> IGNORED_PARAM = Map.of(
        "pi_enable", "protection information is not supported");

    private final ConfigNotices notices;

    PortsSection(ConfigNotices notices) {
        this.notices = notices;
    }

    List<PortConfig> ports(JsonNode node, String where, List<SubsystemConfig> subsystems,
                           DaemonSettings settings) throws ConfigException {
        if (node == null || node.isNull()) {
            // No port yet: SPDK's nvmf_tgt starts so and is configured over its control plane. The daemon refuses
            // to start empty without one (Main: no HTTP API, no rpc_socket).
            return List.of();
        }
        requireArray(node, where);
        Set<String> nqns = new LinkedHashSet<>();
        for (SubsystemConfig s : subsystems) {
            nqns.add(s.nqn());
        }
        List<PortConfig> ports = new ArrayList<>();
        Map<Integer, String> portIds = new HashMap<>();
        for (int i = 0; i < node.size(); i++) {
            String pw = where + "[" + i + "]";
            JsonNode p = node.get(i);
            requireObject(p, pw);
            int portId = (int) integer(required(p, pw, "portid"), at(pw, "portid"), 0, 0xFFFF);
            String earlier = portIds.putIfAbsent(portId, pw);
            if (earlier != null) {
                throw new ConfigException(at(pw, "portid"), portId + " is already the portid of " + earlier);
            }
            PortConfig port = port(p, pw, portId, nqns, settings);
            for (PortConfig other : ports) {
                if (sameListenAddress(port, other)) {
                    throw new ConfigException(at(pw, "addr"), "listens on " + port.address() + ", as "
                        + other.where() + " does already");
                }
            }
            ports.add(port);
            notices.reportKeys(p, pw, Set.of("portid", "addr", "param", "subsystems", "ana_groups", "referrals"),
                IGNORED_PORT);
        }
        return ports;
    }

    private PortConfig port(JsonNode p, String pw, int portId, Set<String> nqns, DaemonSettings settings)
        throws ConfigException {
        String aw = at(pw, "addr");
        JsonNode addr = required(p, pw, "addr");
        requireObject(addr, aw);
        TransportType trtype = transportType(addr, aw);
        String traddr = text(required(addr, aw, "traddr"), at(aw, "traddr"));
        AddressFamily family = addressFamily(addr, aw, traddr);
        String svcWhere = at(aw, "trsvcid");
        int trsvcid;
        if (addr.has("trsvcid")) {
            trsvcid = (int) integer(addr.get("trsvcid"), svcWhere, 0, 65535);
        } else {
            trsvcid = -1; // chosen below, once we know whether the port serves discovery only
        }
        String treq = treq(addr, aw);
        // addr.tsas as nvmet's configfs names it: "none" or "tls1.3" (NVMe/TCP only).
        boolean tls = false;
        if (addr.has("tsas")) {
            String tsas = text(addr.get("tsas"), at(aw, "tsas")).toLowerCase(Locale.ROOT);
            if (tsas.equals("tls1.3")) {
                if (trtype != TransportType.TCP) {
                    throw new ConfigException(at(aw, "tsas"), "\"tls1.3\" is for NVMe/TCP ports only");
                }
                tls = true;
            } else if (!tsas.isEmpty() && !tsas.equals("none") && !tsas.equals("reserved")
                && !tsas.equals("connected")) {
                throw new ConfigException(at(aw, "tsas"), quote(tsas) + " is not supported (\"none\" or \"tls1.3\")");
            }
        }
        if (treq.equals("required") && !tls) {
            throw new ConfigException(at(aw, "treq"), "\"required\" demands a secure channel: set addr.tsas to "
                + "\"tls1.3\"");
        }
        if (tls && treq.equals("not specified")) {
            treq = "required"; // TLS offered but not demanded would be "not required": say so to get it
        }
        notices.reportKeys(addr, aw, Set.of("trtype", "adrfam", "traddr", "trsvcid", "treq", "tsas"), IGNORED_ADDR);

        String prw = at(pw, "param");
        int inline = trtype == TransportType.RDMA ? PortConfig.RDMA_INLINE_DATA_SIZE_DEFAULT
            : PortOptions.INLINE_DATA_SIZE_DEFAULT;
        int queueSize = PortOptions.MAX_QUEUE_SIZE_DEFAULT;
        JsonNode param = p.get("param");
        if (param != null && !param.isNull()) {
            requireObject(param, prw);
            if (param.has("inline_data_size")) {
                String iw = at(prw, "inline_data_size");
                long v = integer(param.get("inline_data_size"), iw, Integer.MIN_VALUE, Integer.MAX_VALUE);
                if (v >= 0) {
                    // nvmet writes -1 for "the transport's default".
                    if (v > 1 << 20) {
                        throw new ConfigException(iw, v + " is outside 0..1048576 (-1: the default, "
                            + PortOptions.INLINE_DATA_SIZE_DEFAULT + ")");
                    }
                    inline = (int) v;
                } else if (v != -1) {
                    throw new ConfigException(iw, v + " is outside 0..1048576 (-1: the default, "
                        + PortOptions.INLINE_DATA_SIZE_DEFAULT + ")");
                }
            }
            if (param.has("max_queue_size")) {
                String qw = at(prw, "max_queue_size");
                long v = integer(param.get("max_queue_size"), qw, Integer.MIN_VALUE, Integer.MAX_VALUE);
                if (v != -1) {
                    if (v < 2 || v > 65536) {
                        throw new ConfigException(qw, v + " is outside 2..65536 (-1: the default, "
                            + PortOptions.MAX_QUEUE_SIZE_DEFAULT + ")");
                    }
                    queueSize = (int) v;
                }
            }
            notices.reportKeys(param, prw, Set.of("inline_data_size", "max_queue_size"), IGNORED_PARAM);
            if (trtype == TransportType.RDMA && inline > PortConfig.RDMA_INLINE_DATA_SIZE_MAX) {
                // nvmet-rdma clamps the same way (NVMET_RDMA_MAX_INLINE_DATA_SIZE) and says so.
                notices.notice(true, at(prw, "inline_data_size") + ": " + inline + " is above NVMe-oF/RDMA's "
                    + PortConfig.RDMA_INLINE_DATA_SIZE_MAX + "; using " + PortConfig.RDMA_INLINE_DATA_SIZE_MAX);
                inline = PortConfig.RDMA_INLINE_DATA_SIZE_MAX;
            }
        }

        List<String> exported = new ArrayList<>();
        JsonNode subsNode = p.get("subsystems");
        String sw = at(pw, "subsystems");
        if (subsNode != null && !subsNode.isNull()) {
            requireArray(subsNode, sw);
            for (int j = 0; j < subsNode.size(); j++) {
                String jw = sw + "[" + j + "]";
                String nqn = text(subsNode.get(j), jw);
                if (!nqn.equals(Port.DISCOVERY_NQN) && !nqns.contains(nqn)) {
                    throw new ConfigException(jw, "no subsystem " + quote(nqn) + " is configured");
                }
                if (!exported.contains(nqn)) {
                    exported.add(nqn);
                }
            }
        }
        if (trsvcid < 0) {
            boolean discoveryOnly = exported.stream().allMatch(Port.DISCOVERY_NQN::equals);
            // The Linux host's defaults: 8009 for TCP discovery, 4420 otherwise.
            trsvcid = discoveryOnly && trtype == TransportType.TCP ? 8009 : 4420;
        }
        TransportAddress address = new TransportAddress(trtype, family, traddr, Integer.toString(trsvcid));
        PortOptions options = new PortOptions(inline, queueSize, settings.maxDataTransferSize(),
            settings.connectionLimits());
        if (tls) {
            options = options.withTls(treq.equals("required"));
        }
        return new PortConfig(pw, portId, address, treq, options, exported, anaGroups(p.get("ana_groups"),
            at(pw, "ana_groups")), referrals(p.get("referrals"), at(pw, "referrals")));
    }

    /**
     * nvmetcli's {@code "ana_groups": [{"grpid": N, "ana": {"state": "optimized"}}]}: the state of each group on this
     * port. Groups not listed are inaccessible on the port, except group 1 which is optimized, as nvmet sets them.
     */
    private Map<Integer, Integer> anaGroups(JsonNode node, String where) throws ConfigException {
        Map<Integer, Integer> groups = new java.util.TreeMap<>();
        if (node == null || node.isNull()) {
            return groups;
        }
        requireArray(node, where);
        for (int i = 0; i < node.size(); i++) {
            String gw = where + "[" + i + "]";
            JsonNode g = node.get(i);
            requireObject(g, gw);
            int grpid = (int) integer(required(g, gw, "grpid"), at(gw, "grpid"), 1, PortConfig.ANA_GROUP_MAX);
            int state = io.nvmeof4j.protocol.ana.AnaState.OPTIMIZED;
            JsonNode ana = g.get("ana");
            if (ana != null && !ana.isNull()) {
                requireObject(ana, at(gw, "ana"));
                if (ana.has("state")) {
                    String text = text(ana.get("state"), at(at(gw, "ana"), "state"));
                    state = io.nvmeof4j.protocol.ana.AnaState.parse(text);
                    if (state < 0) {
                        throw new ConfigException(at(at(gw, "ana"), "state"), quote(text) + " is not an ANA state "
                            + "(optimized, non-optimized, inaccessible, persistent-loss, change)");
                    }
                }
                notices.reportKeys(ana, at(gw, "ana"), Set.of("state"), Map.of());
            }
            if (groups.putIfAbsent(grpid, state) != null) {
                throw new ConfigException(at(gw, "grpid"), grpid + " is listed twice");
            }
            notices.reportKeys(g, gw, Set.of("grpid", "ana"), Map.of());
        }
        return groups;
    }

    /**
     * A port's {@code referrals} as nvmetcli saves them: {@code {"name", "portid", "enable", "addr": {"trtype",
     * "adrfam", "traddr", "trsvcid", "treq"}}}, plus {@code subnqn} (ours, SPDK's parameter; default the discovery
     * NQN). Names and targets are unique within a port.
     */
    private List<ReferralConfig> referrals(JsonNode node, String where) throws ConfigException {
        List<ReferralConfig> list = new ArrayList<>();
        if (node == null || node.isNull()) {
            return list;
        }
        requireArray(node, where);
        for (int i = 0; i < node.size(); i++) {
            String rw = where + "[" + i + "]";
            JsonNode r = node.get(i);
            requireObject(r, rw);
            String name = text(required(r, rw, "name"), at(rw, "name"));
            if (name.isEmpty() || name.length() > 255 || name.indexOf('/') >= 0
                || name.chars().anyMatch(c -> c < 0x20 || c == 0x7F)) {
                throw new ConfigException(at(rw, "name"), quote(name) + " is not a referral name (1..255 printable "
                    + "characters, no '/')");
            }
            int portId = r.has("portid") ? (int) integer(r.get("portid"), at(rw, "portid"), 0, 0xFFFF) : 0;
            boolean enabled = !r.has("enable") || bool(r.get("enable"), at(rw, "enable"));
            String aw = at(rw, "addr");
            JsonNode addr = required(r, rw, "addr");
            requireObject(addr, aw);
            TransportType trtype = transportType(addr, aw);
            String traddr = text(required(addr, aw, "traddr"), at(aw, "traddr"));
            AddressFamily family = addressFamily(addr, aw, traddr);
            // A referral names a service elsewhere: its service id is required (SPDK: "Service ID is required").
            int trsvcid = (int) integer(required(addr, aw, "trsvcid"), at(aw, "trsvcid"), 1, 65535);
            String treq = treq(addr, aw);
            notices.reportKeys(addr, aw, Set.of("trtype", "adrfam", "traddr", "trsvcid", "treq", "tsas", "portid"),
                IGNORED_ADDR);
            String subnqn = r.has("subnqn") ? nqn(r.get("subnqn"), at(rw, "subnqn")) : Port.DISCOVERY_NQN;
            notices.reportKeys(r, rw, Set.of("name", "portid", "enable", "addr", "subnqn"), Map.of());
            ReferralConfig referral = new ReferralConfig(name, portId, enabled,
                new TransportAddress(trtype, family, traddr, Integer.toString(trsvcid)), treq, subnqn);
            for (ReferralConfig other : list) {
                if (other.name().equals(name)) {
                    throw new ConfigException(at(rw, "name"), quote(name) + " is already the name of another "
                        + "referral of this port");
                }
                if (other.sameTarget(referral)) {
                    throw new ConfigException(aw, "refers to " + referral.address() + " " + subnqn
                        + ", as referral " + quote(other.name()) + " does already");
                }
            }
            list.add(referral);
        }
        return list;
    }

    /** {@code addr.trtype} of a port or a referral: "tcp" or "rdma". */
    private static TransportType transportType(JsonNode addr, String aw) throws ConfigException {
        String trtypeText = text(required(addr, aw, "trtype"), at(aw, "trtype"));
        TransportType trtype;
        try {
            trtype = TransportType.fromConfigName(trtypeText);
        } catch (IllegalArgumentException e) {
            trtype = null;
        }
        if (trtype != TransportType.TCP && trtype != TransportType.RDMA) {
            throw new ConfigException(at(aw, "trtype"), quote(trtypeText)
                + " is not a supported transport type (expected \"tcp\" or \"rdma\")");
        }
        return trtype;
    }

    /** {@code addr.treq} of a port or a referral, lower case; "not specified" when absent. */
    private static String treq(JsonNode addr, String aw) throws ConfigException {
        if (!addr.has("treq")) {
            return "not specified";
        }
        String treq = text(addr.get("treq"), at(aw, "treq")).toLowerCase(Locale.ROOT);
        if (!TREQ_VALUES.contains(treq)) {
            throw new ConfigException(at(aw, "treq"), quote(treq)
                + " is not a treq value (\"not specified\", \"required\", \"not required\")");
        }
        return treq;
    }

    private static AddressFamily addressFamily(JsonNode addr, String aw, String traddr) throws ConfigException {
        String tw = at(aw, "traddr");
        AddressFamily actual;
        if (IPV4.matcher(traddr).matches()) {
            actual = AddressFamily.IPV4;
        } else if (traddr.indexOf(':') >= 0 && (traddr.charAt(0) == ':' || Character.digit(traddr.charAt(0), 16) >= 0)) {
            try {
                // Starting with a hex digit or ':' and holding a ':', the JDK parses it as an IPv6 literal and
                // never asks DNS.
                InetAddress.getByName(traddr);
            } catch (UnknownHostException e) {
                throw new ConfigException(tw, quote(traddr) + " is not an IPv6 address");
            }
            actual = AddressFamily.IPV6;
        } else {
            throw new ConfigException(tw, quote(traddr) + " is not an IP address (host names are not resolved: give "
                + "an address such as \"127.0.0.1\", \"0.0.0.0\" or \"::1\")");
        }
        if (addr.has("adrfam")) {
            String text = text(addr.get("adrfam"), at(aw, "adrfam"));
            AddressFamily configured;
            try {
                configured = AddressFamily.fromConfigName(text);
            } catch (IllegalArgumentException e) {
                configured = null;
            }
            if (configured != AddressFamily.IPV4 && configured != AddressFamily.IPV6) {
                throw new ConfigException(at(aw, "adrfam"), quote(text) + " is not supported (expected \"ipv4\" or "
                    + "\"ipv6\")");
            }
            if (configured != actual) {
                throw new ConfigException(at(aw, "adrfam"), quote(text) + " does not match traddr " + quote(traddr));
            }
        }
        return actual;
    }

    /** Two ports that would bind the same socket (a fixed port on the same or a wildcard address). */
    private static boolean sameListenAddress(PortConfig a, PortConfig b) {
        if (a.transportType() != b.transportType() || a.address().port() == 0
            || a.address().port() != b.address().port()) {
            return false;
        }
        try {
            InetAddress x = InetAddress.getByName(a.address().traddr());
            InetAddress y = InetAddress.getByName(b.address().traddr());
            return x.equals(y) || x.isAnyLocalAddress() || y.isAnyLocalAddress();
        } catch (UnknownHostException e) {
            return a.address().traddr().equals(b.address().traddr());
        }
    }
}
