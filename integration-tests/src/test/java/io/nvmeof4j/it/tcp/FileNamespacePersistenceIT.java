package io.nvmeof4j.it.tcp;

import io.nvmeof4j.protocol.command.NvmeStatus;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.RandomAccessFile;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;

/** Data written to the file namespace with FUA, or followed by Flush, is in the file and survives a new daemon. */
class FileNamespacePersistenceIT {
    @TempDir
    Path dir;

    @Test
    void shouldReadBackFuaAndFlushedWritesFromANewDaemon() throws Exception {
        HostIdentity host = TestTarget.ALLOWED_HOST_B;
        byte[] fuaData = Bytes.random(21, 65536);
        byte[] flushedData = Bytes.random(22, 131072);
        long fuaOffset = 1 << 20;
        long flushedOffset = 5L << 20;
        Path config;

        try (TestTarget target = TestTarget.start(dir)) {
            config = target.configFile();
            try (RawNvmeTcpHost admin = Sessions.enabledAdmin(target.ioPort(), TestTarget.NQN_B, host, Sessions.KATO_MS)) {
                Sessions.requestIoQueues(admin, 1);
                int bs = Sessions.blockSize(admin, 1);
                try (RawNvmeTcpHost io = Sessions.ioQueue(target.ioPort(), TestTarget.NQN_B, host, 1, admin.cntlid())) {
                    Completion fua = io.write(1, fuaOffset / bs, fuaData.length / bs, fuaData, true);
                    assertThat(fua.status()).as("FUA write %s", fua).isEqualTo(NvmeStatus.SUCCESS);
                    Completion plain = io.write(1, flushedOffset / bs, flushedData.length / bs, flushedData, false);
                    assertThat(plain.status()).as("write %s", plain).isEqualTo(NvmeStatus.SUCCESS);
                    Completion flush = io.flush(1);
                    assertThat(flush.status()).as("Flush %s", flush).isEqualTo(NvmeStatus.SUCCESS);
                    assertThat(io.read(1, fuaOffset / bs, fuaData.length / bs, bs).data()).as("read-back before restart")
                        .isEqualTo(fuaData);

                    // The file holds LBA n at byte n x block size.
                    assertThat(fileBytes(target.fileNamespace(), fuaOffset, fuaData.length))
                        .as("file bytes at offset %d after the FUA write", fuaOffset).isEqualTo(fuaData);
                    assertThat(fileBytes(target.fileNamespace(), flushedOffset, flushedData.length))
                        .as("file bytes at offset %d after Flush", flushedOffset).isEqualTo(flushedData);
                }
            }
        }

        try (TestTarget restarted = TestTarget.startFrom(config);
             RawNvmeTcpHost admin = Sessions.enabledAdmin(restarted.ioPort(), TestTarget.NQN_B, host, Sessions.KATO_MS)) {
            Sessions.requestIoQueues(admin, 1);
            int bs = Sessions.blockSize(admin, 1);
            try (RawNvmeTcpHost io = Sessions.ioQueue(restarted.ioPort(), TestTarget.NQN_B, host, 1, admin.cntlid())) {
                Completion a = io.read(1, fuaOffset / bs, fuaData.length / bs, bs);
                assertThat(a.status()).as("read after restart %s", a).isEqualTo(NvmeStatus.SUCCESS);
                assertThat(a.data()).as("FUA-written data after restart").isEqualTo(fuaData);
                Completion b = io.read(1, flushedOffset / bs, flushedData.length / bs, bs);
                assertThat(b.status()).as("read after restart %s", b).isEqualTo(NvmeStatus.SUCCESS);
                assertThat(b.data()).as("flushed data after restart").isEqualTo(flushedData);
            }
        }
    }

    private static byte[] fileBytes(Path file, long offset, int length) throws Exception {
        byte[] b = new byte[length];
        try (RandomAccessFile f = new RandomAccessFile(file.toFile(), "r")) {
            f.seek(offset);
            f.readFully(b);
        }
        return b;
    }
}
