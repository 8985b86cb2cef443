package io.nvmeof4j.initiator.cli;

import io.nvmeof4j.initiator.NvmeofController;
import io.nvmeof4j.initiator.NvmeofNamespace;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

import java.nio.file.Path;
import java.util.stream.Collectors;

/**
 * The options {@code read} and {@code write} share, with nvme-cli's long names. nvme-cli's {@code -n} and {@code -s}
 * mean the subsystem NQN and the port here (the connection options), so namespace id and start block are long-only.
 */
abstract class BlockIoCommand extends CliCommand {
    /** Bytes per command of the future API (the library splits further at MDTS). */
    static final int CHUNK_BYTES = 1 << 20;

    @Mixin
    NamespaceIdOption namespaceId;

    @Option(names = "--start-block", paramLabel = "LBA", defaultValue = "0",
        description = "First logical block. Default: ${DEFAULT-VALUE}.")
    long startBlock;

    @Option(names = {"-z", "--data-size"}, paramLabel = "BYTES", converter = Sizes.class,
        description = "Bytes to transfer (K, M, G suffixes); rounded up to whole blocks on the wire.")
    Long dataSize;

    @Option(names = {"-d", "--data"}, paramLabel = "FILE",
        description = "Data file. Default: stdin (write) or stdout (read).")
    Path data;

    static NvmeofNamespace namespace(NvmeofController ctrl, int nsid) {
        NvmeofNamespace ns = ctrl.namespace(nsid);
        if (ns == null) {
            throw new CliUsageException("namespace " + nsid + " is not active on " + ctrl.peer() + " (active: "
                + ctrl.namespaces().stream().map(n -> Integer.toString(n.nsid())).collect(Collectors.joining(", "))
                + ")");
        }
        return ns;
    }

    /** Checks that {@code bytes} from {@link #startBlock} fit the namespace; returns the block count. */
    long checkRange(NvmeofNamespace ns, long bytes) {
        if (startBlock < 0) {
            throw new CliUsageException("--start-block " + startBlock + " is negative");
        }
        long blocks = (bytes + ns.blockSize() - 1) / ns.blockSize();
        if (startBlock > ns.blockCount() || blocks > ns.blockCount() - startBlock) {
            throw new CliUsageException(bytes + " bytes (" + blocks + " blocks of " + ns.blockSize()
                + ") from block " + startBlock + " go beyond the end of namespace " + ns.nsid() + " ("
                + ns.blockCount() + " blocks)");
        }
        return blocks;
    }
}
