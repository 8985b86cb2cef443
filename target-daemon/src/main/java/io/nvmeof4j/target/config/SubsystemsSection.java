package io.nvmeof4j.target.config;

import com.fasterxml.jackson.databind.JsonNode;
import io.nvmeof4j.target.backend.QosLimits;
import io.nvmeof4j.target.model.Port;
import io.nvmeof4j.target.model.Subsystem;

import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.regex.Pattern;

import static io.nvmeof4j.target.config.ConfigValues.*;

/** The {@code "subsystems"} array: subsystems, their attributes, allowed hosts and namespaces. */
final class SubsystemsSection {
    private static final Pattern UUID_TEXT = Pattern.compile(
        "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}");
    private static final Pattern VERSION = Pattern.compile("\\d{1,5}\\.\\d{1,3}(\\.\\d{1,3})?");
    private static final Set<String> TREQ_VALUES = Set.of("not specified", "required", "not required");
    private static final int MAX_SERIAL = 20;
    private static final int MAX_MODEL = 40;
    private static final int MAX_FIRMWARE = 8;


    /** Keys nvmetcli writes that nvmeof4j accepts without using them, with the reason given in the notice. */
    private static final Map<String, String> IGNORED_SUBSYSTEM_ATTR = Map.of(
        "ieee_oui", "the IEEE OUI is not reported",
        "pi_enable", "protection information is not supported");
    private static final Map<String, String> IGNORED_NAMESPACE = Map.of(
        "resv", "reservations are always supported; their state lives in the daemon's reservation files");
    private static final Map<String, String> IGNORED_DEVICE = Map.of(
        "p2pmem", "peer-to-peer memory is not supported",
        "buffered_io", "file namespaces always go through the page cache");

    private final Path baseDirectory;
    private final ConfigNotices notices;

    SubsystemsSection(Path baseDirectory, ConfigNotices notices) {
        this.baseDirectory = baseDirectory;
        this.notices = notices;
    }

    List<SubsystemConfig> subsystems(JsonNode node, String where) throws ConfigException {
        List<SubsystemConfig> result = new ArrayList<>();
        if (node == null || node.isNull()) {
            return result;
        }
        requireArray(node, where);
        Map<String, String> seen = new HashMap<>();
        Map<Path, String> devicePaths = new HashMap<>();
        for (int i = 0; i < node.size(); i++) {
            String sw = where + "[" + i + "]";
            JsonNode s = node.get(i);
            requireObject(s, sw);
            String nqnWhere = at(sw, "nqn");
            String nqn = nqn(required(s, sw, "nqn"), nqnWhere);
            if (Port.DISCOVERY_NQN.equals(nqn)) {
                throw new ConfigException(nqnWhere, nqn + " is the discovery subsystem's NQN; the target serves it "
                    + "on every port by itself");
            }
            String earlier = seen.putIfAbsent(nqn, sw);
            if (earlier != null) {
                throw new ConfigException(nqnWhere, nqn + " is already the NQN of " + earlier);
            }
            JsonNode passthru = s.get("passthru");
            if (passthru != null && !(passthru.isArray() && passthru.isEmpty()) && !passthru.isNull()) {
                throw new ConfigException(at(sw, "passthru"), "passthru subsystems are not supported");
            }
            result.add(subsystem(s, sw, nqn, devicePaths));
            notices.reportKeys(s, sw, Set.of("nqn", "attr", "allowed_hosts", "namespaces", "passthru"), Map.of());
        }
        return result;
    }

    private SubsystemConfig subsystem(JsonNode s, String sw, String nqn, Map<Path, String> devicePaths)
        throws ConfigException {
        JsonNode attr = s.get("attr");
        String aw = at(sw, "attr");
        if (attr == null || attr.isNull()) {
            attr = com.fasterxml.jackson.databind.node.JsonNodeFactory.instance.objectNode();
        }
        requireObject(attr, aw);
        boolean allowAny = attr.has("allow_any_host") && bool(attr.get("allow_any_host"), at(aw, "allow_any_host"));
        String serial = ascii(attr, aw, "serial", MAX_SERIAL, TargetConfig.derivedSerial(nqn));
        String model = ascii(attr, aw, "model", MAX_MODEL, TargetConfig.MODEL_DEFAULT);
        String firmware = ascii(attr, aw, "firmware", MAX_FIRMWARE, TargetConfig.firmwareDefault());
        String version = null;
        if (attr.has("version")) {
            version = text(attr.get("version"), at(aw, "version"));
            if (!VERSION.matcher(version).matches()) {
                throw new ConfigException(at(aw, "version"), quote(version)
                    + " is not an NVMe version (major.minor or major.minor.tertiary, e.g. \"1.3\")");
            }
            notices.notice(false, at(aw, "version") + ": ignored (the controller reports the NVMe version it implements)");
        }
        int cntlidMin = (int) optionalInteger(attr, aw, "cntlid_min", 1, 0xFFEF, 1);
        int cntlidMax = (int) optionalInteger(attr, aw, "cntlid_max", 1, 0xFFEF, 0xFFEF);
        if (cntlidMin > cntlidMax) {
            throw new ConfigException(at(aw, "cntlid_min"), cntlidMin + " is greater than cntlid_max " + cntlidMax);
        }
        int qidMax = (int) optionalInteger(attr, aw, "qid_max", 1, 0xFFFF, TargetConfig.QID_MAX_DEFAULT);
        // Ours (SPDK's nvmf_create_subsystem max_namespaces): NSIDs above it are refused; 0 = no limit of its own.
        int maxNamespaces = (int) optionalInteger(attr, aw, "max_namespaces", 0, Subsystem.MAX_NSID, 0);
        notices.reportKeys(attr, aw, Set.of("allow_any_host", "serial", "model", "firmware", "version", "cntlid_min",
            "cntlid_max", "qid_max", "max_namespaces"), IGNORED_SUBSYSTEM_ATTR);

        List<String> allowed = new ArrayList<>();
        JsonNode hostsNode = s.get("allowed_hosts");
        String hw = at(sw, "allowed_hosts");
        if (hostsNode != null && !hostsNode.isNull()) {
            requireArray(hostsNode, hw);
            for (int j = 0; j < hostsNode.size(); j++) {
                String host = nqn(hostsNode.get(j), hw + "[" + j + "]");
                if (!allowed.contains(host)) {
                    allowed.add(host);
                }
            }
        }
        if (allowAny && !allowed.isEmpty()) {
            // nvmet refuses this combination too ("Can't set allow_any_host when explicit hosts are set").
            throw new ConfigException(at(aw, "allow_any_host"), "is 1 but allowed_hosts lists " + allowed.size()
                + " host(s); choose one: any host, or only the listed ones");
        }

        List<NamespaceConfig> namespaces = new ArrayList<>();
        JsonNode nsNode = s.get("namespaces");
        String nw = at(sw, "namespaces");
        if (nsNode != null && !nsNode.isNull()) {
            requireArray(nsNode, nw);
            Map<Long, String> nsids = new HashMap<>();
            for (int j = 0; j < nsNode.size(); j++) {
                NamespaceConfig ns = namespace(nsNode.get(j), nw + "[" + j + "]", nqn);
                String earlier = nsids.putIfAbsent(Integer.toUnsignedLong(ns.nsid()), ns.where());
                if (earlier != null) {
                    throw new ConfigException(at(ns.where(), "nsid"), Integer.toUnsignedString(ns.nsid())
                        + " is already the NSID of " + earlier);
                }
                if (ns.enabled() && ns.path() != null) {
                    String other = devicePaths.putIfAbsent(ns.path(), ns.where());
                    if (other != null) {
                        throw new ConfigException(at(at(ns.where(), "device"), "path"), ns.path()
                            + " is already the device of " + other);
                    }
                }
                namespaces.add(ns);
            }
        }
        for (NamespaceConfig ns : namespaces) {
            if (maxNamespaces > 0 && Integer.compareUnsigned(ns.nsid(), maxNamespaces) > 0) {
                throw new ConfigException(at(ns.where(), "nsid"), Integer.toUnsignedString(ns.nsid())
                    + " is above attr.max_namespaces " + maxNamespaces);
            }
        }
        return new SubsystemConfig(nqn, allowAny, allowed, serial, model, firmware, version, cntlidMin, cntlidMax,
            qidMax, namespaces, maxNamespaces);
    }

    /** One namespace object on its own (management API): the same checks as in a configuration file. */
    NamespaceConfig standaloneNamespace(JsonNode n, String where, String subsystemNqn) throws ConfigException {
        return namespace(n, where, subsystemNqn);
    }

    private NamespaceConfig namespace(JsonNode n, String where, String subsystemNqn) throws ConfigException {
        requireObject(n, where);
        long nsid = integer(required(n, where, "nsid"), at(where, "nsid"), 1, Subsystem.MAX_NSID);
        boolean enabled = !n.has("enable") || bool(n.get("enable"), at(where, "enable"));
        notices.reportKeys(n, where, Set.of("nsid", "enable", "device", "qos", "ana_grpid", "ana"), IGNORED_NAMESPACE);
        QosLimits qos = n.has("qos") ? qos(n.get("qos"), at(where, "qos")) : QosLimits.NONE;
        // nvmetcli writes the group as "ana_grpid" and (newer versions) again as "ana": {"grpid": N}; group 1 is the
        // one every port has (nvmet's NVMET_DEFAULT_ANA_GRPID).
        int anaGroupId = 1;
        JsonNode ana = n.get("ana");
        if (ana != null && !ana.isNull()) {
            requireObject(ana, at(where, "ana"));
            anaGroupId = (int) optionalInteger(ana, at(where, "ana"), "grpid", 1, PortConfig.ANA_GROUP_MAX, 1);
            notices.reportKeys(ana, at(where, "ana"), Set.of("grpid"), Map.of());
        }
        if (n.has("ana_grpid")) {
            int grpid = (int) optionalInteger(n, where, "ana_grpid", 1, PortConfig.ANA_GROUP_MAX, 1);
            if (ana != null && !ana.isNull() && ana.has("grpid") && grpid != anaGroupId) {
                throw new ConfigException(at(where, "ana_grpid"), grpid + " differs from ana.grpid " + anaGroupId);
            }
            anaGroupId = grpid;
        }

        String dw = at(where, "device");
        JsonNode device = required(n, where, "device");
        requireObject(device, dw);
        notices.reportKeys(device, dw, Set.of("path", "uuid", "nguid", "backend", "size", "block_size", "buffered_io",
            "shared"), IGNORED_DEVICE);
        boolean shared = device.has("shared") && bool(device.get("shared"), at(dw, "shared"));

        Path path = null;
        if (device.has("path")) {
            String pathText = text(device.get("path"), at(dw, "path"));
            if (pathText.isEmpty()) {
                throw new ConfigException(at(dw, "path"), "is empty");
            }
            requirePlainText(pathText, at(dw, "path"));
            if (notices.strict()) {
                for (String part : pathText.split("/")) {
                    if (part.equals("..")) {
                        throw new ConfigException(at(dw, "path"), quote(pathText) + " contains a '..' component; give "
                            + "the path without it");
                    }
                }
            }
            try {
                path = baseDirectory.resolve(pathText).normalize();
            } catch (InvalidPathException e) {
                throw new ConfigException(at(dw, "path"), quote(pathText) + " is not a valid path: " + e.getReason());
            }
        }
        BackendType backend;
        if (device.has("backend")) {
            String b = text(device.get("backend"), at(dw, "backend"));
            backend = BackendType.fromConfigName(b);
            if (backend == null) {
                throw new ConfigException(at(dw, "backend"), quote(b)
                    + " is not a backend (expected \"file\", \"ram\" or \"null\")");
            }
        } else if (path != null) {
            backend = BackendType.FILE;
        } else {
            throw new ConfigException(dw, "needs a path (a file or block device) or a backend (\"ram\", \"null\")");
        }
        if (backend == BackendType.FILE && path == null) {
            throw new ConfigException(at(dw, "path"), "is required for a file namespace");
        }
        if (backend != BackendType.FILE && path != null) {
            notices.notice(false, at(dw, "path") + ": ignored (a " + backend.configName() + " namespace has no file)");
            path = null;
        }

        // A file or block device without block_size gets the device's: the logical block size of a block device,
        // 4096 for a regular file (nvmet: min(i_blkbits, 12)). 0 here means "ask the device when it is opened".
        int blockSize = backend == BackendType.FILE ? TargetConfig.FILE_BLOCK_SIZE_DEFAULT
            : TargetConfig.MEMORY_BLOCK_SIZE_DEFAULT;
        boolean bufferedIo = false;
        if (device.has("buffered_io")) {
            bufferedIo = bool(device.get("buffered_io"), at(dw, "buffered_io"));
            if (backend != BackendType.FILE) {
                notices.notice(false, at(dw, "buffered_io") + ": ignored (a " + backend.configName() + " namespace has no file)");
            }
        }
        if (device.has("block_size")) {
            String bw = at(dw, "block_size");
            JsonNode bs = device.get("block_size");
            long value = integerOrNegative(bs);
            if (value != 512 && value != 4096) {
                throw new ConfigException(bw, bs + " is not a supported block size (512 or 4096)");
            }
            blockSize = (int) value;
        }

        long size = 0;
        String zw = at(dw, "size");
        if (device.has("size")) {
            JsonNode sizeNode = device.get("size");
            size = sizeNode.isIntegralNumber() && sizeNode.canConvertToLong() ? sizeNode.asLong()
                : sizeNode.isTextual() ? Sizes.parse(sizeNode.asText()) : -1;
            if (size < 0) {
                throw new ConfigException(zw, sizeNode + " is not a size (examples: \"1G\", \"64M\", \"4096\")");
            }
            if (size == 0) {
                throw new ConfigException(zw, "must be positive");
            }
            if (size % Math.max(blockSize, 512) != 0) {
                throw new ConfigException(zw, sizeNode + " (" + size + " bytes) is not a multiple of the block size "
                    + blockSize);
            }
        } else if (backend != BackendType.FILE) {
            throw new ConfigException(zw, "is required for a " + backend.configName() + " namespace");
        }

        UUID uuid = null;
        if (device.has("uuid")) {
            String u = text(device.get("uuid"), at(dw, "uuid"));
            if (!UUID_TEXT.matcher(u).matches()) {
                throw new ConfigException(at(dw, "uuid"), quote(u) + " is not a UUID (8-4-4-4-12 hex digits)");
            }
            uuid = UUID.fromString(u);
            if (uuid.getMostSignificantBits() == 0 && uuid.getLeastSignificantBits() == 0) {
                uuid = null;
            }
        }
        if (uuid == null) {
            uuid = TargetConfig.derivedUuid(subsystemNqn, (int) nsid);
        }
        byte[] nguid = null;
        if (device.has("nguid")) {
            String g = text(device.get("nguid"), at(dw, "nguid"));
            nguid = parseNguid(g);
            if (nguid == null) {
                throw new ConfigException(at(dw, "nguid"), quote(g)
                    + " is not an NGUID (32 hex digits, optionally separated by '-' or ':')");
            }
            boolean zero = true;
            for (byte b : nguid) {
                zero &= b == 0;
            }
            if (zero) {
                // nvmet writes zeros when no NGUID was set; a zero NGUID means "none" to hosts.
                nguid = null;
            }
        }
        if (nguid == null) {
            nguid = TargetConfig.derivedNguid(subsystemNqn, (int) nsid);
        }
        if (!enabled) {
            notices.notice(false, where + ": enable is 0; namespace " + nsid + " is not exported");
        }
        if (shared && backend != BackendType.FILE) {
            notices.notice(false, at(dw, "shared") + ": ignored (a " + backend.configName() + " namespace has no file)");
            shared = false;
        }
        return new NamespaceConfig(where, (int) nsid, enabled, backend, path, size, blockSize, bufferedIo, uuid,
            nguid, anaGroupId, shared, qos);
    }

    /**
     * A namespace's {@code qos} object: SPDK's {@code bdev_set_qos_limit} parameters, each 0 (no limit, the default)
     * or more. An IOPS limit that is not a multiple of 1000 is rounded up, as SPDK rounds it (with a notice).
     */
    private QosLimits qos(JsonNode q, String where) throws ConfigException {
        requireObject(q, where);
        notices.reportKeys(q, where, Set.of(QosLimits.RW_IOS_PER_SEC, QosLimits.RW_MBYTES_PER_SEC, QosLimits.R_MBYTES_PER_SEC,
            QosLimits.W_MBYTES_PER_SEC), Map.of());
        long iops = optionalInteger(q, where, QosLimits.RW_IOS_PER_SEC, 0, QosLimits.MAX_IOS_PER_SEC, 0);
        QosLimits limits = QosLimits.of(iops,
            optionalInteger(q, where, QosLimits.RW_MBYTES_PER_SEC, 0, QosLimits.MAX_MBYTES_PER_SEC, 0),
            optionalInteger(q, where, QosLimits.R_MBYTES_PER_SEC, 0, QosLimits.MAX_MBYTES_PER_SEC, 0),
            optionalInteger(q, where, QosLimits.W_MBYTES_PER_SEC, 0, QosLimits.MAX_MBYTES_PER_SEC, 0));
        if (limits.rwIosPerSec() != iops) {
            notices.notice(false, at(where, QosLimits.RW_IOS_PER_SEC) + ": " + iops + " is not a multiple of "
                + QosLimits.MIN_IOS_PER_SEC + "; rounded up to " + limits.rwIosPerSec() + " (as SPDK does)");
        }
        return limits;
    }

    /** nvmet's NGUID syntax: 16 hex byte pairs, each optionally followed by '-' or ':'. */
    static byte[] parseNguid(String text) {
        byte[] out = new byte[16];
        int p = 0;
        for (int i = 0; i < 16; i++) {
            if (p + 2 > text.length()) {
                return null;
            }
            int hi = Character.digit(text.charAt(p), 16);
            int lo = Character.digit(text.charAt(p + 1), 16);
            if (hi < 0 || lo < 0) {
                return null;
            }
            out[i] = (byte) (hi << 4 | lo);
            p += 2;
            if (i < 15 && p < text.length() && (text.charAt(p) == '-' || text.charAt(p) == ':')) {
                p++;
            }
        }
        return p == text.length() ? out : null;
    }
}
