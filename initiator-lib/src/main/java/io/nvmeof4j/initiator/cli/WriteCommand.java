package io.nvmeof4j.initiator.cli;

import io.nvmeof4j.initiator.ConnectOptions;
import io.nvmeof4j.initiator.NvmeofController;
import io.nvmeof4j.initiator.NvmeofHost;
import io.nvmeof4j.initiator.NvmeofNamespace;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.util.concurrent.TimeUnit;

/** {@code nvmeof write}: blocks from a file or stdin; a partial last block is padded with zeros. */
@Command(name = "write", sortOptions = false, mixinStandardHelpOptions = true,
    description = {"Write --data FILE (or stdin) to a namespace, from --start-block. Without",
        "--data-size: the whole file, or stdin to its end. A partial last block is",
        "padded with zeros.", ""})
final class WriteCommand extends BlockIoCommand {
    @Option(names = {"-f", "--force-unit-access"}, description = "FUA: durable before the command completes.")
    boolean forceUnitAccess;

    @Override
    int execute() throws Exception {
        String nqn = connection.requireNqn();
        if (dataSize != null && dataSize <= 0) {
            throw new CliUsageException("-z/--data-size must be positive");
        }
        ConnectOptions options = connection.connectOptions(false, 1, 0, 0);
        try (NvmeofHost host = createHost(1);
             NvmeofController ctrl = host.connect(connection.address(ConnectionOptions.IO_PORT_DEFAULT), nqn,
                 options);
             InputStream in = data == null ? cli.stdin : Files.newInputStream(data)) {
            NvmeofNamespace ns = namespace(ctrl, namespaceId.value);
            long limit = dataSize != null ? dataSize : data != null ? Files.size(data)
                : (ns.blockCount() - Math.min(ns.blockCount(), startBlock)) * ns.blockSize();
            if (dataSize != null || data != null) {
                checkRange(ns, limit);
            }
            int bs = ns.blockSize();
            ByteBuffer buffer = ByteBuffer.allocateDirect(Math.max(bs, CHUNK_BYTES / bs * bs));
            byte[] staging = new byte[buffer.capacity()];
            long written = 0;
            long lba = startBlock;
            while (written < limit) {
                int want = (int) Math.min(staging.length, limit - written);
                int got = in.readNBytes(staging, 0, want);
                if (got == 0) {
                    break;
                }
                int padded = (got + bs - 1) / bs * bs;
                buffer.clear();
                buffer.put(staging, 0, got);
                while (buffer.position() < padded) {
                    buffer.put((byte) 0);
                }
                buffer.flip();
                ns.write(lba, buffer, forceUnitAccess).get(ioWait(options).toMillis(), TimeUnit.MILLISECONDS);
                written += got;
                lba += padded / bs;
                if (got < want) {
                    break;
                }
            }
            if (dataSize != null && written < dataSize) {
                throw new CliUsageException("the input ended after " + written + " of the " + dataSize
                    + " bytes of -z/--data-size (nothing beyond was written)");
            }
            if (data == null && dataSize == null && in.read() >= 0) {
                throw new CliUsageException("stdin holds more than the " + limit + " bytes from block " + startBlock
                    + " to the end of namespace " + ns.nsid() + " (they were written; the rest was not)");
            }
            err().println("write: Success (" + written + " bytes, " + (lba - startBlock) + " blocks from LBA "
                + startBlock + " of namespace " + ns.nsid() + ")");
            err().flush();
        }
        return NvmeofCli.EXIT_OK;
    }
}
