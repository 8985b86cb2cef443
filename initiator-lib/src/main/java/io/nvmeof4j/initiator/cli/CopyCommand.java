package io.nvmeof4j.initiator.cli;

import io.nvmeof4j.initiator.ConnectOptions;
import io.nvmeof4j.initiator.NvmeofController;
import io.nvmeof4j.initiator.NvmeofHost;
import io.nvmeof4j.initiator.NvmeofNamespace;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * {@code nvmeof copy}: NVM Copy inside one namespace (Source Range Entries format 0). Option names follow nvme-cli's
 * {@code nvme copy} ({@code --sdlba}, {@code --slbs}, {@code --blocks}), long-only since {@code -s} and {@code -d}
 * are taken by the connection options, and with {@code --blocks} 1-based here (nvme-cli takes NLB, 0-based).
 */
@Command(name = "copy", sortOptions = false, mixinStandardHelpOptions = true,
    description = {"Have the controller copy source ranges, one after the other, to --sdlba; the data",
        "does not cross the network. --slbs and --blocks are comma-separated lists of the",
        "same length: first block and block count (1-based) of each range. Above the",
        "controller's limits (Identify Namespace MSRC, MSSRL, MCL) it answers 0x183 (exit 8).", ""})
final class CopyCommand extends CliCommand {
    @Mixin
    NamespaceIdOption namespaceId;

    @Option(names = "--sdlba", paramLabel = "LBA", required = true, description = "Destination LBA.")
    long destination;

    @Option(names = "--slbs", paramLabel = "LBA", split = ",", required = true,
        description = "First block of each source range.")
    List<Long> sources;

    @Option(names = "--blocks", paramLabel = "N", split = ",", required = true,
        description = "Blocks in each source range (1..65536).")
    List<Integer> blocks;

    @Option(names = {"-f", "--force-unit-access"}, description = "FUA: the copy is durable before completion.")
    boolean forceUnitAccess;

    @Override
    int execute() throws Exception {
        String nqn = connection.requireNqn();
        if (sources.size() != blocks.size()) {
            throw new CliUsageException("--slbs names " + sources.size() + " ranges and --blocks "
                + blocks.size() + ": give one block count per range");
        }
        if (sources.size() > 256) {
            throw new CliUsageException(sources.size() + " ranges: a Copy carries at most 256");
        }
        long[] slbas = new long[sources.size()];
        int[] counts = new int[blocks.size()];
        long total = 0;
        for (int i = 0; i < slbas.length; i++) {
            slbas[i] = sources.get(i);
            counts[i] = blocks.get(i);
            if (counts[i] < 1 || counts[i] > 65536) {
                throw new CliUsageException("--blocks: range " + i + " has " + counts[i] + " blocks, not 1..65536");
            }
            total += counts[i];
        }
        ConnectOptions options = connection.connectOptions(false, 1, 0, 0);
        try (NvmeofHost host = createHost(1);
             NvmeofController ctrl = host.connect(connection.address(ConnectionOptions.IO_PORT_DEFAULT), nqn,
                 options)) {
            NvmeofNamespace ns = BlockIoCommand.namespace(ctrl, namespaceId.value);
            ns.copy(destination, slbas, counts, forceUnitAccess).get(ioWait(options).toMillis(), TimeUnit.MILLISECONDS);
            err().println("copy: Success (" + total + " blocks in " + slbas.length + " ranges to LBA " + destination
                + " of namespace " + ns.nsid() + ")");
            err().flush();
        }
        return NvmeofCli.EXIT_OK;
    }
}
