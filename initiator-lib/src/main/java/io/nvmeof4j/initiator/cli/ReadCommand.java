package io.nvmeof4j.initiator.cli;

import io.nvmeof4j.initiator.ConnectOptions;
import io.nvmeof4j.initiator.NvmeofController;
import io.nvmeof4j.initiator.NvmeofHost;
import io.nvmeof4j.initiator.NvmeofNamespace;
import picocli.CommandLine.Command;

import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.util.concurrent.TimeUnit;

/** {@code nvmeof read}: exactly {@code --data-size} bytes (whole blocks on the wire) to a file or stdout. */
@Command(name = "read", sortOptions = false, mixinStandardHelpOptions = true,
    description = {"Read --data-size bytes from a namespace, from --start-block, into --data FILE",
        "(or stdout). Whole blocks are read; exactly --data-size bytes are written out.", ""})
final class ReadCommand extends BlockIoCommand {
    @Override
    int execute() throws Exception {
        String nqn = connection.requireNqn();
        if (dataSize == null || dataSize <= 0) {
            throw new CliUsageException("-z/--data-size (a positive number of bytes) is required");
        }
        ConnectOptions options = connection.connectOptions(false, 1, 0, 0);
        try (NvmeofHost host = createHost(1);
             NvmeofController ctrl = host.connect(connection.address(ConnectionOptions.IO_PORT_DEFAULT), nqn,
                 options)) {
            NvmeofNamespace ns = namespace(ctrl, namespaceId.value);
            long blocks = checkRange(ns, dataSize);
            int bs = ns.blockSize();
            ByteBuffer buffer = ByteBuffer.allocateDirect(Math.max(bs, CHUNK_BYTES / bs * bs));
            byte[] staging = new byte[buffer.capacity()];
            OutputStream out = data == null ? cli.stdout : Files.newOutputStream(data);
            try {
                long done = 0;
                long lba = startBlock;
                while (done < dataSize) {
                    long left = dataSize - done;
                    int bytes = (int) Math.min(buffer.capacity(), (left + bs - 1) / bs * bs);
                    buffer.clear().limit(bytes);
                    ns.read(lba, buffer).get(ioWait(options).toMillis(), TimeUnit.MILLISECONDS);
                    int useful = (int) Math.min(bytes, left);
                    buffer.position(0).limit(useful);
                    buffer.get(staging, 0, useful);
                    out.write(staging, 0, useful);
                    done += useful;
                    lba += bytes / bs;
                }
                out.flush();
            } finally {
                if (data != null) {
                    out.close();
                }
            }
            err().println("read: Success (" + dataSize + " bytes, " + blocks + " blocks from LBA " + startBlock
                + " of namespace " + ns.nsid() + ")");
            err().flush();
        }
        return NvmeofCli.EXIT_OK;
    }
}
