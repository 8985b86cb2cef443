package io.nvmeof4j.initiator.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.nvmeof4j.initiator.ControllerInfo;
import io.nvmeof4j.initiator.NvmeofController;
import io.nvmeof4j.initiator.NvmeofHost;
import io.nvmeof4j.initiator.NvmeofNamespace;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.io.PrintWriter;
import java.util.HexFormat;

/** {@code nvmeof identify}: Identify Controller and each active namespace, in nvme id-ctrl's field names. */
@Command(name = "identify", sortOptions = false, mixinStandardHelpOptions = true,
    description = {"Print Identify Controller and the active namespaces of a subsystem.", ""})
final class IdentifyCommand extends CliCommand {
    @Option(names = "--json", description = "Print one JSON object.")
    boolean json;

    @Override
    int execute() throws Exception {
        String nqn = connection.requireNqn();
        try (NvmeofHost host = createHost(1);
             NvmeofController ctrl = host.connect(connection.address(ConnectionOptions.IO_PORT_DEFAULT), nqn,
                 connection.connectOptions(false, 1, 0, 0))) {
            ControllerInfo id = ctrl.identifyController();
            PrintWriter out = out();
            if (json) {
                ObjectMapper mapper = new ObjectMapper();
                ObjectNode root = mapper.createObjectNode();
                root.put("address", ctrl.address().toString());
                ObjectNode c = root.putObject("controller");
                c.put("vid", id.vendorId());
                c.put("sn", id.serialNumber());
                c.put("mn", id.modelNumber());
                c.put("fr", id.firmwareRevision());
                c.put("cntlid", id.controllerId());
                c.put("ver", id.versionString());
                c.put("cntrltype", id.controllerType());
                c.put("mdts_bytes", id.maxDataTransferBytes());
                c.put("maxcmd", id.maxOutstandingCommands());
                c.put("nn", id.numberOfNamespaces());
                c.put("oncs", id.optionalNvmCommands());
                c.put("vwc", id.volatileWriteCache());
                c.put("kas", id.keepAliveSupport100ms());
                c.put("sgls", id.sglSupport());
                c.put("oaes", id.optionalAsyncEvents());
                c.put("ioccsz", id.ioCommandCapsuleSize());
                c.put("subnqn", id.subsystemNqn());
                c.put("io_queues", ctrl.ioQueueCount());
                c.put("io_queue_size", ctrl.ioQueueSize());
                ArrayNode namespaces = root.putArray("namespaces");
                for (NvmeofNamespace ns : ctrl.namespaces()) {
                    ObjectNode n = namespaces.addObject();
                    n.put("nsid", ns.nsid());
                    n.put("nsze", ns.blockCount());
                    n.put("block_size", ns.blockSize());
                    n.put("size_bytes", ns.sizeBytes());
                    n.put("nguid", hex(ns.nguid()));
                    n.put("uuid", ns.uuid() == null ? null : ns.uuid().toString());
                    n.put("eui64", hex(ns.eui64()));
                }
                out.println(mapper.writerWithDefaultPrettyPrinter().writeValueAsString(root));
            } else {
                out.println("NVME Identify Controller: " + ctrl.peer());
                out.printf("vid       : %#06x%n", id.vendorId());
                out.println("sn        : " + id.serialNumber());
                out.println("mn        : " + id.modelNumber());
                out.println("fr        : " + id.firmwareRevision());
                out.printf("cntlid    : %#x%n", id.controllerId());
                out.println("ver       : " + id.versionString());
                out.println("cntrltype : " + id.controllerType());
                out.println("mdts      : " + (id.maxDataTransferBytes() == 0 ? "unlimited"
                    : id.maxDataTransferBytes() + " bytes"));
                out.println("maxcmd    : " + id.maxOutstandingCommands());
                out.println("nn        : " + id.numberOfNamespaces());
                out.printf("oncs      : %#x%n", id.optionalNvmCommands());
                out.println("vwc       : " + (id.volatileWriteCache() ? "present" : "not present"));
                out.println("kas       : " + id.keepAliveSupport100ms());
                out.printf("sgls      : %#x%n", id.sglSupport());
                out.printf("oaes      : %#x%n", id.optionalAsyncEvents());
                out.println("ioccsz    : " + id.ioCommandCapsuleSize() + " (in-capsule data up to "
                    + id.inCapsuleDataSize() + " bytes)");
                out.println("subnqn    : " + id.subsystemNqn());
                out.println("I/O queues: " + ctrl.ioQueueCount() + " x " + ctrl.ioQueueSize() + " entries");
                for (NvmeofNamespace ns : ctrl.namespaces()) {
                    out.println();
                    out.println("Namespace " + ns.nsid());
                    out.println("  nsid      : " + ns.nsid());
                    out.println("  nsze      : " + ns.blockCount() + " blocks (" + ns.sizeBytes() + " bytes, "
                        + human(ns.sizeBytes()) + ")");
                    out.println("  block size: " + ns.blockSize());
                    out.println("  nguid     : " + orNone(hex(ns.nguid())));
                    out.println("  uuid      : " + (ns.uuid() == null ? "none" : ns.uuid()));
                    out.println("  eui64     : " + orNone(hex(ns.eui64())));
                }
            }
            out.flush();
        }
        return NvmeofCli.EXIT_OK;
    }

    private static String hex(byte[] bytes) {
        return bytes == null ? null : HexFormat.of().formatHex(bytes);
    }

    private static String orNone(String s) {
        return s == null ? "none" : s;
    }

    static String human(long bytes) {
        String[] units = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
        double v = bytes;
        int u = 0;
        while (v >= 1024 && u < units.length - 1) {
            v /= 1024;
            u++;
        }
        return u == 0 ? bytes + " B" : String.format(java.util.Locale.ROOT, "%.2f %s", v, units[u]);
    }
}
