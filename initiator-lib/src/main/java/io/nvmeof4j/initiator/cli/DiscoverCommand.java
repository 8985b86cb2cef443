package io.nvmeof4j.initiator.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.nvmeof4j.initiator.DiscoveryEntry;
import io.nvmeof4j.initiator.NvmeofHost;
import io.nvmeof4j.protocol.spi.TransportAddress;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.io.PrintWriter;
import java.util.List;

/** {@code nvmeof discover}: the discovery log, printed as {@code nvme discover} prints it. */
@Command(name = "discover", sortOptions = false, mixinStandardHelpOptions = true,
    description = {"Print the discovery log of a discovery controller (port 8009 without -s).", ""})
final class DiscoverCommand extends CliCommand {
    @Option(names = "--json", description = "Print the entries as one JSON object.")
    boolean json;

    @Override
    int execute() throws Exception {
        TransportAddress address = connection.address(ConnectionOptions.DISCOVERY_PORT_DEFAULT);
        List<DiscoveryEntry> entries;
        try (NvmeofHost host = createHost(1)) {
            entries = host.discover(address, connection.connectOptions(true, 1, 0, 0));
        }
        PrintWriter out = out();
        if (json) {
            ObjectMapper mapper = new ObjectMapper();
            ObjectNode root = mapper.createObjectNode();
            ArrayNode records = root.putArray("records");
            for (DiscoveryEntry e : entries) {
                ObjectNode r = records.addObject();
                r.put("trtype", NvmeNames.trtype(e.transportType()));
                r.put("adrfam", NvmeNames.adrfam(e.addressFamily()));
                r.put("subtype", NvmeNames.subtype(e.subsystemType()));
                r.put("treq", NvmeNames.treq(e.transportRequirements()));
                r.put("sectype", e.tls() ? "tls13" : "none");
                r.put("portid", e.portId());
                r.put("trsvcid", e.transportServiceId());
                r.put("subnqn", e.subsystemNqn());
                r.put("traddr", e.transportAddress());
                r.put("cntlid", e.controllerId());
                r.put("asqsz", e.adminMaxSqSize());
            }
            out.println(mapper.writerWithDefaultPrettyPrinter().writeValueAsString(root));
        } else {
            out.println("Discovery Log Number of Records " + entries.size());
            for (int i = 0; i < entries.size(); i++) {
                DiscoveryEntry e = entries.get(i);
                out.println("=====Discovery Log Entry " + i + "======");
                out.println("trtype:  " + NvmeNames.trtype(e.transportType()));
                out.println("adrfam:  " + NvmeNames.adrfam(e.addressFamily()));
                out.println("subtype: " + NvmeNames.subtype(e.subsystemType()));
                out.println("treq:    " + NvmeNames.treq(e.transportRequirements()));
                out.println("sectype: " + (e.tls() ? "tls13" : "none"));
                out.println("portid:  " + e.portId());
                out.println("trsvcid: " + e.transportServiceId());
                out.println("subnqn:  " + e.subsystemNqn());
                out.println("traddr:  " + e.transportAddress());
            }
        }
        out.flush();
        return NvmeofCli.EXIT_OK;
    }
}
