package io.nvmeof4j.target.backend;

import io.nvmeof4j.protocol.command.NvmeStatus;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static io.nvmeof4j.target.backend.BlockIo.Op.DEALLOCATE;
import static io.nvmeof4j.target.backend.BlockIo.Op.FLUSH;
import static io.nvmeof4j.target.backend.BlockIo.Op.READ;
import static io.nvmeof4j.target.backend.BlockIo.Op.WRITE;
import static io.nvmeof4j.target.backend.BlockIo.Op.WRITE_ZEROES;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class FileBlockDeviceTest {
    private static final int MIB = 1 << 20;

    @TempDir
    Path dir;

    @Test
    void shouldCreateASparseFileOfTheGivenSize() throws IOException {
        Path file = dir.resolve("ns1.img");
        try (FileBlockDevice device = FileBlockDevice.open(file, 64L * MIB, 4096, FileBlockDevice.Options.defaults())) {
            assertThat(Files.size(file)).isEqualTo(64L * MIB);
            assertThat(device.blockCount()).isEqualTo(64L * MIB / 4096);
            assertThat(device.hasVolatileWriteCache()).isTrue();
            assertThat(device.description()).isEqualTo("file " + file);
            ByteBuffer back = ByteBuffer.allocateDirect(8192);
            assertThat(SyncIo.run(device, READ, 32L * MIB, 8192, back, false)).isZero();
            assertThat(SyncIo.allZero(back, 0, 8192)).isTrue();
        }
    }

    @Test
    void shouldReadBackWritesOfSeveralSizesAndOffsets() throws IOException {
        Path file = dir.resolve("rw.img");
        try (FileBlockDevice device = FileBlockDevice.open(file, 16L * MIB, 512, FileBlockDevice.Options.defaults())) {
            long[] offsets = {0, 512, 4096 - 512, MIB - 512, 16L * MIB - 128 * 1024};
            int[] lengths = {512, 4096, 12288, 128 * 1024};
            long seed = 0;
            for (long offset : offsets) {
                for (int length : lengths) {
                    if (offset + length > 16L * MIB) {
                        continue;
                    }
                    ByteBuffer data = SyncIo.pattern(length, ++seed);
                    assertThat(SyncIo.run(device, WRITE, offset, length, data, false)).isZero();
                    assertThat(data.position()).as("write leaves position").isZero();
                    ByteBuffer back = ByteBuffer.allocateDirect(length);
                    assertThat(SyncIo.run(device, READ, offset, length, back, false)).isZero();
                    assertThat(back.position()).as("read leaves position").isZero();
                    assertThat(back.limit()).isEqualTo(length);
                    assertThat(back).as("%d bytes at %d", length, offset).isEqualTo(data);
                }
            }
            // A heap buffer with a non-zero position: data is taken from the position on.
            ByteBuffer heap = ByteBuffer.allocate(4096 + 100);
            heap.position(100);
            SyncIo.pattern(4096, 77).get(0, heap.array(), 100, 4096);
            assertThat(SyncIo.run(device, WRITE, 8192, 4096, heap, false)).isZero();
            ByteBuffer back = ByteBuffer.allocate(4096);
            assertThat(SyncIo.run(device, READ, 8192, 4096, back, false)).isZero();
            assertThat(back).isEqualTo(SyncIo.pattern(4096, 77));
        }
    }

    @Test
    void shouldKeepFuaAndFlushedWritesAcrossReopen() throws IOException {
        Path file = dir.resolve("durable.img");
        ByteBuffer fua = SyncIo.pattern(4096, 11);
        ByteBuffer flushed = SyncIo.pattern(8192, 12);
        try (FileBlockDevice device = FileBlockDevice.open(file, 8L * MIB, 4096, FileBlockDevice.Options.defaults())) {
            assertThat(SyncIo.run(device, WRITE, 4096, 4096, fua, true)).isZero();
            assertThat(SyncIo.run(device, WRITE, MIB, 8192, flushed, false)).isZero();
            assertThat(SyncIo.run(device, FLUSH, 0, 0, null, false)).isZero();
        }
        try (FileBlockDevice reopened = FileBlockDevice.open(file, 0, 4096, FileBlockDevice.Options.defaults())) {
            assertThat(reopened.blockCount()).isEqualTo(8L * MIB / 4096);
            ByteBuffer back = ByteBuffer.allocateDirect(4096);
            assertThat(SyncIo.run(reopened, READ, 4096, 4096, back, false)).isZero();
            assertThat(back).isEqualTo(fua);
            ByteBuffer back2 = ByteBuffer.allocateDirect(8192);
            assertThat(SyncIo.run(reopened, READ, MIB, 8192, back2, false)).isZero();
            assertThat(back2).isEqualTo(flushed);
        }
    }

    @Test
    void shouldReadZerosAfterWriteZeroesAndDeallocateInTheMiddleAndAtTheEnd() throws IOException {
        Path file = dir.resolve("zero.img");
        long size = 8L * MIB;
        try (FileBlockDevice device = FileBlockDevice.open(file, size, 4096, FileBlockDevice.Options.defaults())) {
            ByteBuffer data = SyncIo.pattern((int) size, 5);
            assertThat(SyncIo.run(device, WRITE, 0, size, data, false)).isZero();

            assertThat(SyncIo.run(device, WRITE_ZEROES, 4096, 600 * 1024, null, true)).isZero();
            assertThat(SyncIo.run(device, DEALLOCATE, 2L * MIB, 4096, null, false)).isZero();
            // Runs to the end: truncated and re-extended (sparse).
            assertThat(SyncIo.run(device, DEALLOCATE, 6L * MIB, 2L * MIB, null, false)).isZero();
            assertThat(Files.size(file)).isEqualTo(size);

            ByteBuffer back = ByteBuffer.allocateDirect((int) size);
            assertThat(SyncIo.run(device, READ, 0, size, back, false)).isZero();
            for (int i = 0; i < size; i += 512) {
                boolean zeroed = (i >= 4096 && i < 4096 + 600 * 1024) || (i >= 2 * MIB && i < 2 * MIB + 4096)
                    || i >= 6 * MIB;
                if (zeroed) {
                    assertThat(SyncIo.allZero(back, i, 512)).as("zeroed at %d", i).isTrue();
                } else {
                    assertThat(back.getLong(i)).as("kept at %d", i).isEqualTo(data.getLong(i));
                }
            }
            // The whole device from LBA 0 (mkfs's discard).
            assertThat(SyncIo.run(device, DEALLOCATE, 0, size, null, false)).isZero();
            assertThat(SyncIo.run(device, READ, 0, size, back, false)).isZero();
            assertThat(SyncIo.allZero(back, 0, (int) size)).isTrue();
            assertThat(Files.size(file)).isEqualTo(size);
        }
    }

    @Test
    void shouldUseAnExistingFilesSizeExtendAShortOneAndNeverTruncateALongOne() throws IOException {
        Path file = dir.resolve("existing.img");
        try (RandomAccessFile raf = new RandomAccessFile(file.toFile(), "rw")) {
            raf.setLength(3L * MIB + 100);
        }
        try (FileBlockDevice device = FileBlockDevice.open(file, 0, 4096, FileBlockDevice.Options.defaults())) {
            assertThat(device.blockCount()).isEqualTo(3L * MIB / 4096);
        }
        try (FileBlockDevice device = FileBlockDevice.open(file, 4L * MIB, 4096, FileBlockDevice.Options.defaults())) {
            assertThat(Files.size(file)).isEqualTo(4L * MIB);
            assertThat(device.blockCount()).isEqualTo(4L * MIB / 4096);
        }
        try (FileBlockDevice device = FileBlockDevice.open(file, MIB, 4096, FileBlockDevice.Options.defaults())) {
            assertThat(device.blockCount()).isEqualTo(MIB / 4096);
            // The file is longer than the namespace: a tail deallocate must not truncate the file.
            assertThat(SyncIo.run(device, DEALLOCATE, 0, MIB, null, false)).isZero();
        }
        assertThat(Files.size(file)).isEqualTo(4L * MIB);
    }

    @Test
    void shouldRefuseAMissingFileWithoutSizeAndASecondOpen() throws IOException {
        assertThatThrownBy(() -> FileBlockDevice.open(dir.resolve("missing.img"), 0, 4096,
            FileBlockDevice.Options.defaults()))
            .isInstanceOf(NoSuchFileException.class).hasMessageContaining("missing.img");
        assertThat(dir.resolve("missing.img")).doesNotExist();

        Path file = dir.resolve("locked.img");
        try (FileBlockDevice first = FileBlockDevice.open(file, MIB, 512, FileBlockDevice.Options.defaults())) {
            assertThatThrownBy(() -> FileBlockDevice.open(file, MIB, 512, FileBlockDevice.Options.defaults()))
                .isInstanceOf(IOException.class).hasMessageContaining("already open");
            assertThat(first.blockCount()).isEqualTo(MIB / 512);
        }
        Files.writeString(dir.resolve("empty.img"), "");
        assertThatThrownBy(() -> FileBlockDevice.open(dir.resolve("empty.img"), 0, 4096,
            FileBlockDevice.Options.defaults()))
            .isInstanceOf(IOException.class).hasMessageContaining("less than one 4096-byte block");
    }

    @Test
    void shouldRejectOutOfRangeAndFailAfterClose() throws IOException {
        FileBlockDevice device = FileBlockDevice.open(dir.resolve("c.img"), MIB, 4096,
            FileBlockDevice.Options.defaults());
        ByteBuffer buf = ByteBuffer.allocateDirect(8192);
        assertThat(SyncIo.run(device, READ, MIB - 4096, 8192, buf, false))
            .isEqualTo(NvmeStatus.LBA_OUT_OF_RANGE | NvmeStatus.DNR);
        device.close();
        device.close();
        assertThat(SyncIo.run(device, READ, 0, 4096, buf, false)).isEqualTo(NvmeStatus.NAMESPACE_NOT_READY);
    }

    @Test
    void shouldMapIoErrorsToNvmeStatuses() {
        assertThat(FileBlockDevice.statusFor(READ, new IOException("Input/output error")))
            .isEqualTo(NvmeStatus.UNRECOVERED_READ_ERROR | NvmeStatus.DNR);
        assertThat(FileBlockDevice.statusFor(WRITE, new IOException("Input/output error")))
            .isEqualTo(NvmeStatus.WRITE_FAULT | NvmeStatus.DNR);
        assertThat(FileBlockDevice.statusFor(WRITE, new IOException("No space left on device")))
            .isEqualTo(NvmeStatus.CAPACITY_EXCEEDED | NvmeStatus.DNR);
        assertThat(FileBlockDevice.statusFor(FLUSH, new IOException("Input/output error")))
            .isEqualTo(NvmeStatus.INTERNAL_ERROR | NvmeStatus.DNR);
        assertThat(FileBlockDevice.statusFor(READ, new java.nio.channels.ClosedChannelException()))
            .isEqualTo(NvmeStatus.NAMESPACE_NOT_READY);
    }

    @Test
    void shouldKeepEveryThreadsDataUnderConcurrentIo() throws Exception {
        Path file = dir.resolve("concurrent.img");
        int threads = 6;
        int blocks = 2048;
        try (FileBlockDevice device = FileBlockDevice.open(file, blocks * 4096L, 4096,
            FileBlockDevice.Options.defaults().withWorkers(3))) {
            ExecutorService pool = Executors.newFixedThreadPool(threads);
            try {
                List<Future<?>> futures = new ArrayList<>();
                for (int t = 0; t < threads; t++) {
                    int id = t;
                    futures.add(pool.submit(() -> {
                        SyncIo io = new SyncIo();
                        for (int block = id; block < blocks; block += threads) {
                            ByteBuffer data = SyncIo.pattern(4096, block);
                            assertThat(io.submitAndWait(device, WRITE, block * 4096L, 4096, data, block % 7 == 0))
                                .isZero();
                            ByteBuffer back = ByteBuffer.allocateDirect(4096);
                            assertThat(io.submitAndWait(device, READ, block * 4096L, 4096, back, false)).isZero();
                            assertThat(back).isEqualTo(data);
                        }
                        return null;
                    }));
                }
                for (Future<?> f : futures) {
                    f.get(60, TimeUnit.SECONDS);
                }
            } finally {
                pool.shutdownNow();
            }
            // A worker counts an I/O out just after its completion callback returns: wait for the last one.
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
            while (device.inFlight() != 0 && System.nanoTime() < deadline) {
                Thread.sleep(1);
            }
            assertThat(device.inFlight()).isZero();
            ByteBuffer all = ByteBuffer.allocateDirect(blocks * 4096);
            assertThat(SyncIo.run(device, READ, 0, blocks * 4096L, all, false)).isZero();
            for (int block = 0; block < blocks; block++) {
                assertThat(all.slice(block * 4096, 4096)).as("block %d", block)
                    .isEqualTo(SyncIo.pattern(4096, block));
            }
        }
    }
}
