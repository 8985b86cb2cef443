package io.nvmeof4j.target.backend;

import io.nvmeof4j.jni.bdev.Bdev;
import io.nvmeof4j.protocol.command.NvmeStatus;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

import static io.nvmeof4j.target.backend.BlockIo.Op.DEALLOCATE;
import static io.nvmeof4j.target.backend.BlockIo.Op.READ;
import static io.nvmeof4j.target.backend.BlockIo.Op.WRITE;
import static io.nvmeof4j.target.backend.RamBlockDevice.CHUNK_SIZE;
import static io.nvmeof4j.target.backend.RamBlockDevice.HUGEPAGE_CHUNK_SIZE;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assumptions.assumeThat;

/**
 * Background population of RAM namespaces: every chunk committed with nobody writing (hugepage chunks faulted in),
 * writes racing it kept, stopped by a device's close and quietly at the memory limit, the thread stopped at close.
 */
class RamPopulatorTest {
    private static final int HUGE = HUGEPAGE_CHUNK_SIZE;

    @Test
    void shouldCommitTheWholeCapacityWithNobodyWriting() throws Exception {
        long size = 64L * CHUNK_SIZE + 4096; // a short last chunk
        try (RamPopulator populator = new RamPopulator();
             RamBlockDevice device = new RamBlockDevice("", size, 4096)) {
            assertThat(device.committedBytes()).isZero();
            populator.populate(device);
            await("the whole capacity committed", () -> device.committedBytes() == size);
            assertThat(populator.threadAlive()).isTrue();
            ByteBuffer back = ByteBuffer.allocateDirect(4096);
            assertThat(SyncIo.run(device, READ, size - 4096, 4096, back, false)).isZero();
            assertThat(SyncIo.allZero(back, 0, 4096)).as("populated chunks read as zeros").isTrue();
            assertThat(device.allocationFailures()).isZero();
            populator.close();
            assertThat(populator.threadAlive()).as("thread stopped by close").isFalse();
        }
    }

    /**
     * Deallocate and Write Zeroes drop whole chunks (their memory goes back); the populator makes them again, zeroed,
     * so writes after a host's discard of the whole device (mkfs does one) find their chunks ready.
     */
    @ParameterizedTest
    @ValueSource(booleans = {false, true})
    void shouldMakeChunksDroppedByDeallocateAgain(boolean hugepages) throws Exception {
        assumeThat(!hugepages || Bdev.isAvailable()).as("block-device library (hugepage chunks are mapped there)")
            .isTrue();
        int chunk = hugepages ? HUGE : CHUNK_SIZE;
        long size = 16L * chunk;
        try (RamPopulator populator = new RamPopulator();
             RamBlockDevice device = new RamBlockDevice("", size, 4096, hugepages)) {
            populator.populate(device);
            await("populated", () -> device.committedBytes() == size);
            ByteBuffer back = ByteBuffer.allocateDirect(4096);
            for (int pass = 0; pass < 3; pass++) {
                assertThat(SyncIo.run(device, WRITE, 5L * chunk, 4096, SyncIo.pattern(4096, 5), false)).isZero();
                // The whole device, as a host's mkfs: every chunk dropped, all of the memory back. (How much is
                // committed right after is a race with the populator, which may already be making them again.)
                assertThat(SyncIo.run(device, DEALLOCATE, 0, size, null, false)).isZero();
                await("made again after the Deallocate", () -> device.committedBytes() == size);
                assertThat(SyncIo.run(device, READ, 5L * chunk, 4096, back.clear(), false)).isZero();
                assertThat(SyncIo.allZero(back, 0, 4096)).as("pass %d: the written chunk reads as zeros", pass)
                    .isTrue();
            }
            // A host discarding in a loop: the device waits in the queue once, not once per Deallocate.
            for (int i = 0; i < 1_000; i++) {
                assertThat(SyncIo.run(device, DEALLOCATE, (i % 16L) * chunk, chunk, null, false)).isZero();
                assertThat(populator.queued()).as("queue entries after %d Deallocates", i + 1).isLessThanOrEqualTo(1);
            }
            await("made again after 1,000 Deallocates", () -> device.committedBytes() == size);
            // Write Zeroes over some chunks: made again too.
            assertThat(SyncIo.run(device, BlockIo.Op.WRITE_ZEROES, 2L * chunk, 4L * chunk, null, false)).isZero();
            await("made again after Write Zeroes", () -> device.committedBytes() == size);
            assertThat(SyncIo.run(device, READ, 5L * chunk, 4096, back.clear(), false)).isZero();
            assertThat(SyncIo.allZero(back, 0, 4096)).as("a chunk made again reads as zeros").isTrue();
            assertThat(device.allocationFailures()).isZero();
        }
    }

    /** Hugepage chunks are faulted in by the populator: AnonHugePages grows with nobody writing. */
    @Test
    void shouldFaultInHugepageChunksWithNobodyWriting() throws Exception {
        assumeThat(Bdev.isAvailable()).as("block-device library (hugepage chunks are mapped there)").isTrue();
        long mappedBefore = settled();
        long hugeBefore = Smaps.anonHugeKib();
        try (RamPopulator populator = new RamPopulator();
             RamBlockDevice device = new RamBlockDevice("", 8L * HUGE, 4096, true)) {
            populator.populate(device);
            await("8 hugepage chunks committed", () -> device.committedBytes() == 8L * HUGE);
            assertThat(ChunkMemory.mappedBytes() - mappedBefore).as("mapped, counted against the limit")
                .isGreaterThanOrEqualTo(8L * HUGE);
            if (!Files.readString(Path.of("/sys/kernel/mm/transparent_hugepage/enabled")).contains("[never]")) {
                assertThat(Smaps.anonHugeKib() - hugeBefore)
                    .as("AnonHugePages grown by 8 chunks nobody wrote to, KiB (one 2 MiB page may be refused)")
                    .isGreaterThanOrEqualTo(7 * 2048);
            }
        }
        awaitMapped(mappedBefore);
    }

    /** Writes into every chunk while population runs: each chunk keeps its writer's data, whoever published it. */
    @ParameterizedTest
    @ValueSource(booleans = {false, true})
    void shouldKeepWhatWritesPutWhilePopulationRuns(boolean hugepages) throws Exception {
        assumeThat(!hugepages || Bdev.isAvailable()).as("block-device library for hugepages").isTrue();
        int chunk = hugepages ? HUGE : CHUNK_SIZE;
        int chunks = 128;
        long size = (long) chunks * chunk;
        ExecutorService writers = Executors.newFixedThreadPool(2);
        try (RamPopulator populator = new RamPopulator();
             RamBlockDevice device = new RamBlockDevice("", size, 4096, hugepages)) {
            populator.populate(device);
            List<Future<?>> done = new ArrayList<>();
            for (int w = 0; w < 2; w++) {
                int first = w;
                done.add(writers.submit(() -> {
                    // From the end backwards, every other chunk each: writers meet the populator mid-way.
                    for (int c = chunks - 1 - first; c >= 0; c -= 2) {
                        long offset = (long) c * chunk + (c % 7) * 4096L;
                        assertThat(SyncIo.run(device, WRITE, offset, 8192, SyncIo.pattern(8192, c), false))
                            .as("write into chunk %d", c).isZero();
                    }
                    return null;
                }));
            }
            for (Future<?> f : done) {
                f.get(30, TimeUnit.SECONDS);
            }
            await("the whole capacity committed", () -> device.committedBytes() == size);
            for (int c = 0; c < chunks; c++) {
                ByteBuffer back = ByteBuffer.allocateDirect(3 * 4096);
                long offset = (long) c * chunk + (c % 7) * 4096L;
                assertThat(SyncIo.run(device, READ, offset, back.remaining(), back, false)).isZero();
                assertThat(back.slice(0, 8192)).as("chunk %d", c).isEqualTo(SyncIo.pattern(8192, c));
                assertThat(SyncIo.allZero(back, 8192, 4096)).isTrue();
            }
            assertThat(device.allocationFailures()).isZero();
        } finally {
            writers.shutdownNow();
        }
    }

    @Test
    void shouldStopADeviceAtItsCloseAndLeaveNothingCommitted() throws Exception {
        try (RamPopulator populator = new RamPopulator()) {
            RamBlockDevice big = new RamBlockDevice("", 1024L * CHUNK_SIZE, 4096);
            RamBlockDevice next = new RamBlockDevice("", 8L * CHUNK_SIZE, 4096);
            populator.populate(big);
            populator.populate(next);
            await("population under way", () -> big.committedBytes() > 0);
            big.close();
            assertThat(big.committedBytes()).as("right after the close").isZero();
            // The populator moved on to the next device: the closed one's population stopped.
            await("the next device populated", () -> next.committedBytes() == 8L * CHUNK_SIZE);
            assertThat(big.committedBytes()).as("after its population stopped").isZero();
            next.close();
        }
    }

    /** A device removed before its turn leaves the queue at once: add/remove loops cannot grow it. */
    @Test
    void shouldDropAForgottenDeviceFromTheQueue() throws Exception {
        try (RamPopulator populator = new RamPopulator();
             RamBlockDevice busy = new RamBlockDevice("", 1024L * CHUNK_SIZE, 4096)) {
            populator.populate(busy);
            await("population under way", () -> busy.committedBytes() > 0);
            List<RamBlockDevice> removed = new ArrayList<>();
            for (int i = 0; i < 100; i++) {
                RamBlockDevice device = new RamBlockDevice("", 4L * CHUNK_SIZE, 4096);
                populator.populate(device);
                device.close();
                populator.forget(device);
                removed.add(device);
            }
            RamBlockDevice kept = new RamBlockDevice("", 4L * CHUNK_SIZE, 4096);
            populator.populate(kept);
            int queued = populator.queued();
            assumeThat(busy.committedBytes()).as("the busy device still populating (else the queue drained anyway)")
                .isLessThan(1024L * CHUNK_SIZE);
            assertThat(queued).as("only the device not removed waits").isEqualTo(1);
            await("the kept device populated", () -> kept.committedBytes() == 4L * CHUNK_SIZE);
            assertThat(removed).allSatisfy(d -> assertThat(d.committedBytes()).isZero());
            kept.close();
        }
    }

    /** At the limit population stops quietly: no write failure counted, the rest of the device stays thin. */
    @Test
    void shouldStopQuietlyAtTheMemoryLimit() throws Exception {
        assumeThat(Bdev.isAvailable()).as("block-device library (hugepage chunks count against the limit)").isTrue();
        long mappedBefore = settled(); // and the JDK's direct buffers of earlier tests collected
        List<ByteBuffer> held = new ArrayList<>();
        int big = Integer.MAX_VALUE - 8; // mapped, never touched
        for (ByteBuffer b; held.size() < 64 && (b = ChunkMemory.allocate(big, true)) != null; ) {
            held.add(b);
            ChunkMemory.held(big);
        }
        List<ByteBuffer> small = new ArrayList<>();
        for (ByteBuffer b; small.size() < 2048 && (b = ChunkMemory.allocate(HUGE, true)) != null; ) {
            small.add(b);
            ChunkMemory.held(HUGE);
        }
        try (RamPopulator populator = new RamPopulator();
             RamBlockDevice device = new RamBlockDevice("", 8L * HUGE, 4096, true)) {
            // Room for three chunks comes back (dropped, collected).
            small.subList(0, 3).clear();
            ChunkMemory.held(-3L * HUGE);
            long target = ChunkMemory.mappedBytes() - 3L * HUGE;
            for (int i = 0; i < 100 && ChunkMemory.mappedBytes() > target; i++) {
                System.gc();
                Thread.sleep(50);
            }
            populator.populate(device);
            await("three chunks populated", () -> device.committedBytes() == 3L * HUGE);
            Thread.sleep(1_000); // past the populator's refused chunk (a collection, a wait of at most 0.5 s)
            assertThat(device.committedBytes()).as("population stopped at the limit").isEqualTo(3L * HUGE);
            assertThat(device.allocationFailures()).as("not a write failure").isZero();
            assertThat(SyncIo.run(device, WRITE, 7L * HUGE, 4096, SyncIo.pattern(4096, 7), false))
                .as("a write into a chunk left thin, at the limit")
                .isEqualTo(NvmeStatus.CAPACITY_EXCEEDED | NvmeStatus.DNR);
            assertThat(device.allocationFailures()).isEqualTo(1);
        } finally {
            ChunkMemory.held(-((long) held.size() * big + (long) small.size() * HUGE));
            held.clear();
            small.clear();
        }
        awaitMapped(mappedBefore);
    }

    @Test
    void shouldStopItsThreadAtCloseAndIgnoreDevicesAfterIt() throws Exception {
        RamPopulator populator = new RamPopulator();
        try (RamBlockDevice device = new RamBlockDevice("", 1024L * CHUNK_SIZE, 4096)) {
            populator.populate(device);
            await("population under way", () -> device.committedBytes() > 0);
            populator.close();
            populator.close(); // idempotent
            assertThat(populator.threadAlive()).isFalse();
            long committed = device.committedBytes();
            Thread.sleep(100);
            assertThat(device.committedBytes()).as("nothing committed after the close").isEqualTo(committed);
            try (RamBlockDevice after = new RamBlockDevice("", 4L * CHUNK_SIZE, 4096)) {
                populator.populate(after);
                Thread.sleep(100);
                assertThat(after.committedBytes()).as("queued after the close").isZero();
            }
        }
    }

    private static void await(String what, BooleanSupplier condition) throws InterruptedException {
        for (int i = 0; i < 1000 && !condition.getAsBoolean(); i++) {
            Thread.sleep(10);
        }
        assertThat(condition.getAsBoolean()).as(what + " within 10 s").isTrue();
    }

    /** Collects until the chunks and direct buffers earlier tests dropped are gone; returns the mapped bytes. */
    private static long settled() throws InterruptedException {
        java.lang.management.BufferPoolMXBean direct = java.lang.management.ManagementFactory
            .getPlatformMXBeans(java.lang.management.BufferPoolMXBean.class).stream()
            .filter(pool -> pool.getName().equals("direct")).findFirst().orElseThrow();
        long last = -1;
        for (int i = 0; i < 40; i++) {
            System.gc();
            Thread.sleep(50);
            long now = ChunkMemory.mappedBytes() + direct.getMemoryUsed();
            if (now == last) {
                break;
            }
            last = now;
        }
        return ChunkMemory.mappedBytes();
    }

    /** Collects for up to 5 s until the mapped bytes are at {@code expected}. */
    private static void awaitMapped(long expected) throws InterruptedException {
        for (int i = 0; i < 100 && ChunkMemory.mappedBytes() != expected; i++) {
            System.gc();
            Thread.sleep(50);
        }
        assertThat(ChunkMemory.mappedBytes()).as("mapped after the chunks became unreachable").isEqualTo(expected);
    }
}
