package io.nvmeof4j.target.backend;

import io.nvmeof4j.protocol.command.NvmeStatus;
import io.nvmeof4j.protocol.spi.idle.IdleMode;
import io.nvmeof4j.target.reactor.OnReactor;
import io.nvmeof4j.target.reactor.Reactor;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static io.nvmeof4j.target.backend.BlockIo.Op.DEALLOCATE;
import static io.nvmeof4j.target.backend.BlockIo.Op.FLUSH;
import static io.nvmeof4j.target.backend.BlockIo.Op.READ;
import static io.nvmeof4j.target.backend.BlockIo.Op.WRITE;
import static io.nvmeof4j.target.backend.BlockIo.Op.WRITE_ZEROES;
import static io.nvmeof4j.target.backend.RamBlockDevice.CHUNK_SIZE;
import static org.assertj.core.api.Assertions.assertThat;

class RamBlockDeviceTest {
    private static final long GIB = 1L << 30;

    @Test
    void shouldCommitNothingUntilWritten() {
        try (RamBlockDevice device = new RamBlockDevice("", GIB, 512)) {
            assertThat(device.committedBytes()).isZero();
            assertThat(device.blockCount()).isEqualTo(GIB / 512);
            ByteBuffer buf = ByteBuffer.allocateDirect(4096);
            fill(buf, (byte) 0x5A);
            assertThat(SyncIo.run(device, READ, GIB - 4096, 4096, buf, false)).isEqualTo(NvmeStatus.SUCCESS);
            assertThat(SyncIo.allZero(buf, 0, 4096)).as("never-written range reads as zeros").isTrue();
            assertThat(device.committedBytes()).as("reads do not commit memory").isZero();

            assertThat(SyncIo.run(device, WRITE, 5L * CHUNK_SIZE + 512, 4096, SyncIo.pattern(4096, 1), false))
                .isEqualTo(NvmeStatus.SUCCESS);
            assertThat(device.committedBytes()).isEqualTo(CHUNK_SIZE);
        }
    }

    @Test
    void shouldWriteAcrossChunkBoundaryIntoTwoChunks() {
        try (RamBlockDevice device = new RamBlockDevice("", 8L * CHUNK_SIZE, 4096)) {
            ByteBuffer data = SyncIo.pattern(3 * 4096, 2);
            long offset = CHUNK_SIZE - 4096;
            assertThat(SyncIo.run(device, WRITE, offset, data.remaining(), data, false)).isZero();
            assertThat(device.committedBytes()).isEqualTo(2L * CHUNK_SIZE);
            ByteBuffer back = ByteBuffer.allocateDirect(3 * 4096);
            assertThat(SyncIo.run(device, READ, offset, back.remaining(), back, false)).isZero();
            assertThat(back).isEqualTo(data);
            assertThat(back.position()).as("position untouched").isZero();
            assertThat(back.limit()).isEqualTo(3 * 4096);
        }
    }

    @Test
    void shouldUse2MiBChunksWithHugepagesAndDropOneWholeOnDeallocate() {
        int chunk = RamBlockDevice.HUGEPAGE_CHUNK_SIZE;
        try (RamBlockDevice device = new RamBlockDevice("", 4L * chunk, 4096, true)) {
            ByteBuffer data = SyncIo.pattern(3 * 4096, 5);
            long offset = chunk - 4096;
            assertThat(SyncIo.run(device, WRITE, offset, data.remaining(), data, false)).isZero();
            assertThat(device.committedBytes()).isEqualTo(2L * chunk);
            ByteBuffer back = ByteBuffer.allocateDirect(3 * 4096);
            assertThat(SyncIo.run(device, READ, offset, back.remaining(), back, false)).isZero();
            assertThat(back).isEqualTo(data);
            // A 1 MiB chunk's worth is not a whole 2 MiB chunk: zeroed in place, kept.
            assertThat(SyncIo.run(device, DEALLOCATE, chunk, CHUNK_SIZE, null, false)).isZero();
            assertThat(device.committedBytes()).isEqualTo(2L * chunk);
            assertThat(SyncIo.run(device, DEALLOCATE, 0, chunk, null, false)).isZero();
            assertThat(device.committedBytes()).isEqualTo(chunk);
            back.clear();
            assertThat(SyncIo.run(device, READ, offset, back.remaining(), back, false)).isZero();
            assertThat(SyncIo.allZero(back, 0, 3 * 4096)).isTrue();
        }
    }

    @ParameterizedTest
    @ValueSource(ints = {512, 4096})
    void shouldMatchAReferenceModelOverRandomReadsWritesAndZeroing(int blockSize) {
        long size = 4L * CHUNK_SIZE + 3L * 4096; // last chunk is short
        byte[] model = new byte[(int) size];
        Random random = new Random(blockSize);
        try (RamBlockDevice device = new RamBlockDevice("model", size, blockSize)) {
            for (int round = 0; round < 300; round++) {
                long blocks = size / blockSize;
                long slba = (long) (random.nextDouble() * blocks);
                long maxBlocks = Math.min(blocks - slba, (3L * CHUNK_SIZE) / blockSize);
                int count = 1 + random.nextInt((int) maxBlocks);
                int offset = (int) (slba * blockSize);
                int length = count * blockSize;
                int kind = random.nextInt(10);
                if (kind < 5) {
                    ByteBuffer data = SyncIo.pattern(length, random.nextLong());
                    assertThat(SyncIo.run(device, WRITE, offset, length, data, false)).isZero();
                    data.get(0, model, offset, length);
                } else if (kind < 7) {
                    BlockIo.Op op = kind == 5 ? WRITE_ZEROES : DEALLOCATE;
                    assertThat(SyncIo.run(device, op, offset, length, null, false)).isZero();
                    java.util.Arrays.fill(model, offset, offset + length, (byte) 0);
                } else {
                    ByteBuffer back = ByteBuffer.allocate(length);
                    fill(back, (byte) 0x77);
                    assertThat(SyncIo.run(device, READ, offset, length, back, false)).isZero();
                    assertThat(back.array()).as("read %d at %d", length, offset)
                        .isEqualTo(java.util.Arrays.copyOfRange(model, offset, offset + length));
                }
            }
            ByteBuffer all = ByteBuffer.allocate((int) size);
            assertThat(SyncIo.run(device, READ, 0, size, all, false)).isZero();
            assertThat(all.array()).isEqualTo(model);
        }
    }

    @Test
    void shouldReturnChunkMemoryOnWholeChunkDeallocateAndZeroPartialRanges() {
        try (RamBlockDevice device = new RamBlockDevice("", 4L * CHUNK_SIZE, 512)) {
            ByteBuffer data = SyncIo.pattern(2 * CHUNK_SIZE, 3);
            assertThat(SyncIo.run(device, WRITE, 0, data.remaining(), data, false)).isZero();
            assertThat(device.committedBytes()).isEqualTo(2L * CHUNK_SIZE);

            // Partial: bytes zeroed, chunk kept.
            assertThat(SyncIo.run(device, DEALLOCATE, 4096, 8192, null, false)).isZero();
            assertThat(device.committedBytes()).isEqualTo(2L * CHUNK_SIZE);
            ByteBuffer back = ByteBuffer.allocate(16384);
            assertThat(SyncIo.run(device, READ, 0, 16384, back, false)).isZero();
            assertThat(SyncIo.allZero(back, 4096, 8192)).isTrue();
            assertThat(back.get(0)).isEqualTo(data.get(0));
            assertThat(back.get(12288)).isEqualTo(data.get(12288));

            // Whole chunk 1 plus part of chunk 0: chunk 1 dropped.
            assertThat(SyncIo.run(device, WRITE_ZEROES, CHUNK_SIZE - 512, CHUNK_SIZE + 512, null, false)).isZero();
            assertThat(device.committedBytes()).isEqualTo(CHUNK_SIZE);
            ByteBuffer tail = ByteBuffer.allocate(CHUNK_SIZE);
            fill(tail, (byte) 1);
            assertThat(SyncIo.run(device, READ, CHUNK_SIZE, CHUNK_SIZE, tail, false)).isZero();
            assertThat(SyncIo.allZero(tail, 0, CHUNK_SIZE)).isTrue();
        }
    }

    @Test
    void shouldRejectOutOfRangeAndMisalignedIo() {
        try (RamBlockDevice device = new RamBlockDevice("", CHUNK_SIZE, 4096)) {
            ByteBuffer buf = ByteBuffer.allocate(8192);
            assertThat(SyncIo.run(device, READ, CHUNK_SIZE - 4096, 8192, buf, false))
                .isEqualTo(NvmeStatus.LBA_OUT_OF_RANGE | NvmeStatus.DNR);
            assertThat(SyncIo.run(device, WRITE, 512, 4096, buf, false))
                .isEqualTo(NvmeStatus.INVALID_FIELD | NvmeStatus.DNR);
            assertThat(SyncIo.run(device, FLUSH, 0, 0, null, false)).isZero();
            assertThat(device.hasVolatileWriteCache()).isFalse();
        }
    }

    @Test
    void shouldFailIoAfterCloseWithRetryableStatus() {
        RamBlockDevice device = new RamBlockDevice("", CHUNK_SIZE, 512);
        assertThat(SyncIo.run(device, WRITE, 0, 512, SyncIo.pattern(512, 4), false)).isZero();
        device.close();
        device.close();
        assertThat(device.committedBytes()).isZero();
        assertThat(SyncIo.run(device, READ, 0, 512, ByteBuffer.allocate(512), false))
            .isEqualTo(NvmeStatus.NAMESPACE_NOT_READY);
    }

    @Test
    void shouldKeepEveryThreadsDataUnderConcurrentIo() throws Exception {
        int threads = 6;
        long size = 4L * CHUNK_SIZE;
        int blocks = (int) (size / 4096);
        try (RamBlockDevice device = new RamBlockDevice("", size, 512)) {
            ExecutorService pool = Executors.newFixedThreadPool(threads);
            try {
                List<Future<?>> futures = new ArrayList<>();
                for (int t = 0; t < threads; t++) {
                    int id = t;
                    futures.add(pool.submit(() -> {
                        // Thread t owns blocks b with b % threads == t, visited chunk by chunk in a rotating order
                        // so every thread races the others to create every chunk.
                        SyncIo io = new SyncIo();
                        for (int i = 0; i < blocks; i++) {
                            int block = (i * 257 + id * 64) % blocks;
                            if (block % threads != id) {
                                continue;
                            }
                            ByteBuffer data = SyncIo.pattern(4096, block);
                            assertThat(io.submitAndWait(device, WRITE, block * 4096L, 4096, data, false)).isZero();
                            ByteBuffer back = ByteBuffer.allocateDirect(4096);
                            assertThat(io.submitAndWait(device, READ, block * 4096L, 4096, back, false)).isZero();
                            assertThat(back).isEqualTo(data);
                        }
                        return null;
                    }));
                }
                for (Future<?> f : futures) {
                    f.get(30, TimeUnit.SECONDS);
                }
            } finally {
                pool.shutdownNow();
            }
            assertThat(device.committedBytes()).isEqualTo(size);
            for (int block = 0; block < blocks; block++) {
                ByteBuffer back = ByteBuffer.allocateDirect(4096);
                assertThat(SyncIo.run(device, READ, block * 4096L, 4096, back, false)).isZero();
                assertThat(back).as("block %d", block).isEqualTo(SyncIo.pattern(4096, block));
            }
        }
    }

    @Test
    void shouldDescribeItself() {
        try (RamBlockDevice device = new RamBlockDevice("", GIB, 512)) {
            assertThat(device.description()).isEqualTo("ram 1 GiB");
        }
    }

    /**
     * A lendable READ on a reactor that lies in one written chunk is lent, not copied: the view holds the bytes,
     * the caller's buffer is untouched; each reactor gets its own view; a chunk dropped by a Deallocate stays
     * readable through a view already lent, and the next read lends the new chunk. Anything else is copied.
     */
    @ParameterizedTest(name = "hugepages {0}")
    @ValueSource(booleans = {false, true})
    void shouldLendChunkMemoryToReadsOnAReactorAndCopyOtherwise(boolean hugepages) throws Exception {
        int chunk = hugepages ? RamBlockDevice.HUGEPAGE_CHUNK_SIZE : CHUNK_SIZE;
        try (RamBlockDevice device = new RamBlockDevice("", 4L * chunk, 4096, hugepages);
             Reactor first = startedReactor("lend-1");
             Reactor second = startedReactor("lend-2")) {
            ByteBuffer data = SyncIo.pattern(chunk, 7);
            assertThat(SyncIo.run(device, WRITE, chunk, chunk, data, false)).isZero();
            long offset = chunk + 8192;
            int length = 128 << 10;

            SyncIo lent = OnReactor.call(first, () -> lendableRead(device, offset, length));
            assertThat(lent.lent()).as("lent on a reactor").isNotNull();
            assertThat(bytes(lent.lent(), lent.lentOffset(), length)).isEqualTo(bytes(data, 8192, length));
            assertThat(SyncIo.allZero(lent.buffer(), 0, length)).as("the caller's buffer untouched").isTrue();
            java.util.Set<ByteBuffer> views = java.util.Collections.newSetFromMap(new java.util.IdentityHashMap<>());
            views.add(lent.lent());
            for (int i = 1; i < 8; i++) {
                long at = offset + (long) i * 4096;
                SyncIo next = OnReactor.call(first, () -> lendableRead(device, at, 4096));
                assertThat(bytes(next.lent(), next.lentOffset(), 4096)).isEqualTo(bytes(data, 8192 + i * 4096, 4096));
                views.add(next.lent());
            }
            assertThat(views).as("8 reads of one chunk in flight together: 8 views, one gathering write").hasSize(8);
            SyncIo ninth = OnReactor.call(first, () -> lendableRead(device, offset, 4096));
            assertThat(ninth.lent()).as("views are reused in turn").isSameAs(lent.lent());
            SyncIo other = OnReactor.call(second, () -> lendableRead(device, offset, length));
            assertThat(other.lent()).isNotNull();
            assertThat(views.contains(other.lent())).as("another reactor's own views").isFalse(); // identity
            assertThat(device.lentReads()).isEqualTo(10);

            SyncIo offReactor = lendableRead(device, offset, length);
            assertThat(offReactor.lent()).as("off the reactors: copied").isNull();
            assertThat(bytes(offReactor.buffer(), 0, length)).isEqualTo(bytes(data, 8192, length));
            SyncIo spanning = OnReactor.call(first, () -> lendableRead(device, 2L * chunk - 4096, 8192));
            assertThat(spanning.lent()).as("across two chunks: copied").isNull();
            assertThat(bytes(spanning.buffer(), 0, 4096)).isEqualTo(bytes(data, chunk - 4096, 4096));
            SyncIo unwritten = OnReactor.call(first, () -> lendableRead(device, 0, length));
            assertThat(unwritten.lent()).as("a chunk never written: zeros copied").isNull();
            SyncIo notLendable = OnReactor.call(first, () -> {
                SyncIo io = new SyncIo();
                io.submitAndWait(device, READ, offset, length, ByteBuffer.allocateDirect(length), false);
                return io;
            });
            assertThat(notLendable.lent()).as("not offered: copied").isNull();
            assertThat(bytes(notLendable.buffer(), 0, length)).isEqualTo(bytes(data, 8192, length));
            assertThat(device.lentReads()).isEqualTo(10);

            assertThat(SyncIo.run(device, DEALLOCATE, chunk, chunk, null, false)).isZero();
            assertThat(bytes(lent.lent(), lent.lentOffset(), length)).as("a lent view outlives the drop")
                .isEqualTo(bytes(data, 8192, length));
            ByteBuffer newer = SyncIo.pattern(chunk, 8);
            assertThat(SyncIo.run(device, WRITE, chunk, chunk, newer, false)).isZero();
            SyncIo afterDrop = OnReactor.call(first, () -> lendableRead(device, offset, length));
            assertThat(afterDrop.lent()).isNotNull();
            assertThat(views.contains(afterDrop.lent())).as("views of the new chunk").isFalse();
            assertThat(bytes(afterDrop.lent(), afterDrop.lentOffset(), length)).isEqualTo(bytes(newer, 8192, length));
        }
    }

    /**
     * A reactor's views do not keep a dropped chunk: once the reads lent from it are done, a Deallocate lets its
     * hugepage mapping go (the views would otherwise hold it for as long as the reactor lives).
     */
    @Test
    void shouldLetADroppedChunkGoThoughAReactorLentReadsFromIt() throws Exception {
        int chunk = RamBlockDevice.HUGEPAGE_CHUNK_SIZE;
        ChunkMemoryTest.awaitMapped(0); // what earlier tests dropped is collected first
        try (RamBlockDevice device = new RamBlockDevice("", 2L * chunk, 4096, true);
             Reactor reactor = startedReactor("lend-drop")) {
            assertThat(SyncIo.run(device, WRITE, 0, 4096, SyncIo.pattern(4096, 9), false)).isZero();
            org.junit.jupiter.api.Assumptions.assumeTrue(ChunkMemory.mappedBytes() == chunk,
                "hugepage chunks are native mappings here (the bdev library loads)");
            for (int i = 0; i < 3 * 8; i++) { // every view of the chunk made, none of the reads kept
                int at = i * 4096;
                assertThat(OnReactor.call(reactor, () -> lendableRead(device, at, 4096).lent() != null)).isTrue();
            }
            assertThat(SyncIo.run(device, DEALLOCATE, 0, chunk, null, false)).isZero();
            ChunkMemoryTest.awaitMapped(0);
        }
    }

    private static SyncIo lendableRead(RamBlockDevice device, long offset, int length) {
        SyncIo io = new SyncIo();
        io.lendNext();
        assertThat(io.submitAndWait(device, READ, offset, length, ByteBuffer.allocateDirect(length), false)).isZero();
        return io;
    }

    private static Reactor startedReactor(String name) {
        Reactor reactor = new Reactor(name, IdleMode.ADAPTIVE, TimeUnit.MICROSECONDS.toNanos(50));
        reactor.add(new DataPathPressureTest.ParkingGroup());
        reactor.start();
        return reactor;
    }

    private static byte[] bytes(ByteBuffer b, int from, int length) {
        byte[] out = new byte[length];
        b.get(from, out);
        return out;
    }

    static void fill(ByteBuffer b, byte value) {
        for (int i = 0; i < b.limit(); i++) {
            b.put(i, value);
        }
    }
}
