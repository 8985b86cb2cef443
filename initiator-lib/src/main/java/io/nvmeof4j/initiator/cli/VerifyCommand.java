package io.nvmeof4j.initiator.cli;

import io.nvmeof4j.initiator.ConnectOptions;
import io.nvmeof4j.initiator.NvmeofController;
import io.nvmeof4j.initiator.NvmeofHost;
import io.nvmeof4j.initiator.NvmeofNamespace;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

import java.util.concurrent.TimeUnit;

/** {@code nvmeof verify}: the controller reads and checks blocks; no data crosses the network. */
@Command(name = "verify", sortOptions = false, mixinStandardHelpOptions = true,
    description = {"Have the controller read and check --block-count blocks from --start-block",
        "(NVM Verify). No data is transferred; a block the device cannot read fails with",
        "its NVMe status (exit 8).", ""})
final class VerifyCommand extends CliCommand {
    @Mixin
    NamespaceIdOption namespaceId;

    @Option(names = "--start-block", paramLabel = "LBA", defaultValue = "0",
        description = "First logical block. Default: ${DEFAULT-VALUE}.")
    long startBlock;

    @Option(names = {"-c", "--block-count"}, paramLabel = "N", required = true,
        description = "Blocks to verify (1-based; several commands past 65536).")
    long blockCount;

    @Override
    int execute() throws Exception {
        String nqn = connection.requireNqn();
        if (blockCount < 1) {
            throw new CliUsageException("-c/--block-count must be at least 1");
        }
        ConnectOptions options = connection.connectOptions(false, 1, 0, 0);
        try (NvmeofHost host = createHost(1);
             NvmeofController ctrl = host.connect(connection.address(ConnectionOptions.IO_PORT_DEFAULT), nqn,
                 options)) {
            NvmeofNamespace ns = BlockIoCommand.namespace(ctrl, namespaceId.value);
            if (startBlock < 0 || startBlock > ns.blockCount() || blockCount > ns.blockCount() - startBlock) {
                throw new CliUsageException(blockCount + " blocks from block " + startBlock
                    + " go beyond the end of namespace " + ns.nsid() + " (" + ns.blockCount() + " blocks)");
            }
            ns.verify(startBlock, blockCount).get(ioWait(options).toMillis() * (1 + blockCount / 65536),
                TimeUnit.MILLISECONDS);
            err().println("verify: Success (" + blockCount + " blocks from LBA " + startBlock + " of namespace "
                + ns.nsid() + ")");
            err().flush();
        }
        return NvmeofCli.EXIT_OK;
    }
}
