package io.nvmeof4j.initiator.cli;

import io.nvmeof4j.initiator.ConnectOptions;
import io.nvmeof4j.initiator.NvmeofController;
import io.nvmeof4j.initiator.NvmeofHost;
import io.nvmeof4j.initiator.NvmeofIoException;
import io.nvmeof4j.initiator.NvmeofNamespace;
import io.nvmeof4j.protocol.command.NvmeStatus;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

/**
 * {@code nvmeof compare-and-write}: a fused Compare and Write (the atomic test-and-set VMware ESXi uses for VMFS
 * locks). A miscompare is an I/O failure (exit 8) and leaves the blocks as they were.
 */
@Command(name = "compare-and-write", sortOptions = false, mixinStandardHelpOptions = true,
    description = {"Atomically replace blocks from --start-block with --data FILE if they hold exactly",
        "--compare-data FILE (both files the same whole number of blocks). Exit 8 with",
        "0x285 COMPARE_FAILURE when they differ: nothing is written then.", ""})
final class CompareAndWriteCommand extends BlockIoCommand {
    @Option(names = {"-c", "--compare-data"}, paramLabel = "FILE", required = true,
        description = "The blocks' expected content.")
    Path compareData;

    @Option(names = {"-f", "--force-unit-access"}, description = "FUA: the write is durable before completion.")
    boolean forceUnitAccess;

    @Override
    int execute() throws Exception {
        String nqn = connection.requireNqn();
        if (data == null) {
            throw new CliUsageException("-d/--data FILE (the new content) is required");
        }
        if (dataSize != null) {
            throw new CliUsageException("-z/--data-size does not apply: the files give the size");
        }
        byte[] expected = Files.readAllBytes(compareData);
        byte[] replacement = Files.readAllBytes(data);
        ConnectOptions options = connection.connectOptions(false, 1, 0, 0);
        try (NvmeofHost host = createHost(1);
             NvmeofController ctrl = host.connect(connection.address(ConnectionOptions.IO_PORT_DEFAULT), nqn,
                 options)) {
            NvmeofNamespace ns = namespace(ctrl, namespaceId.value);
            int bs = ns.blockSize();
            if (expected.length == 0 || expected.length % bs != 0 || expected.length != replacement.length) {
                throw new CliUsageException("--compare-data holds " + expected.length + " bytes and --data "
                    + replacement.length + ": both must hold the same whole number of " + bs + "-byte blocks");
            }
            long blocks = checkRange(ns, expected.length);
            if (expected.length > ctrl.maxTransferBytes()) {
                throw new CliUsageException(blocks + " blocks exceed what one command carries ("
                    + ctrl.maxTransferBytes() + " bytes): a fused pair cannot be split");
            }
            ByteBuffer cmp = ByteBuffer.allocateDirect(expected.length).put(expected).flip();
            ByteBuffer wr = ByteBuffer.allocateDirect(replacement.length).put(replacement).flip();
            boolean written = ns.compareAndWrite(startBlock, cmp, wr)
                .get(ioWait(options).toMillis(), TimeUnit.MILLISECONDS);
            if (!written) {
                throw new NvmeofIoException("Compare and Write of " + blocks + " blocks at LBA " + startBlock
                    + " on namespace " + ns.nsid() + " of " + nqn + " at " + ctrl.peer() + ": "
                    + NvmeStatus.describe(NvmeStatus.COMPARE_FAILURE | NvmeStatus.DNR)
                    + ": the blocks differ from --compare-data; nothing was written",
                    NvmeStatus.COMPARE_FAILURE | NvmeStatus.DNR);
            }
            err().println("compare-and-write: Success (" + blocks + " blocks from LBA " + startBlock
                + " of namespace " + ns.nsid() + " replaced)");
            err().flush();
        }
        return NvmeofCli.EXIT_OK;
    }
}
