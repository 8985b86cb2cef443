package io.nvmeof4j.target.backend;

import io.nvmeof4j.jni.bdev.Bdev;
import io.nvmeof4j.target.limits.RamBudget;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.function.BooleanSupplier;

import static io.nvmeof4j.target.backend.BlockIo.Op.READ;
import static io.nvmeof4j.target.backend.BlockIo.Op.WRITE;
import static io.nvmeof4j.target.backend.RamBlockDevice.HUGEPAGE_CHUNK_SIZE;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assumptions.assumeThat;

/**
 * Pre-faulted hugepage chunks: filled in the background, taken by a hugepage device's first writes, refilled, counted
 * against the chunk memory limit, and gone with the last hugepage device.
 */
class ChunkReserveTest {
    private static final int CHUNK = HUGEPAGE_CHUNK_SIZE;

    @BeforeEach
    void needsTheNativeLibraryAndNoOtherReserve() {
        assumeThat(Bdev.isAvailable()).as("block-device library (hugepage chunks are mapped there)").isTrue();
        assertThat(ChunkReserve.current()).as("no hugepage device left open by another test").isNull();
    }

    @Test
    void shouldFillInTheBackgroundWithFaultedInHugepages() throws Exception {
        long mappedBefore = ChunkMemory.mappedBytes();
        long hugeBefore = Smaps.anonHugeKib();
        ChunkReserve reserve = new ChunkReserve(4);
        try {
            await("the reserve full", () -> reserve.available() == 4);
            assertThat(reserve.filled()).isEqualTo(4);
            assertThat(ChunkMemory.mappedBytes() - mappedBefore).as("mapped, counted against the limit")
                .isEqualTo(4L * CHUNK);
            if (!Files.readString(Path.of("/sys/kernel/mm/transparent_hugepage/enabled")).contains("[never]")) {
                assertThat(Smaps.anonHugeKib() - hugeBefore)
                    .as("AnonHugePages grown by 4 chunks nobody wrote to, KiB (one 2 MiB page may be refused)")
                    .isGreaterThanOrEqualTo(3 * 2048);
            }
            assertZeroed(reserve.take()); // not kept in a local: the frame would keep it mapped
        } finally {
            reserve.close();
        }
        assertThat(reserve.fillerAlive()).as("filler stopped by close").isFalse();
        assertThat(reserve.available()).isZero();
        awaitMapped(mappedBefore);
    }

    @Test
    void shouldEmptyWhenTakenFasterThanFilledAndRefillToItsSize() throws Exception {
        long mappedBefore = ChunkMemory.mappedBytes();
        ChunkReserve reserve = new ChunkReserve(3);
        try {
            await("the reserve full", () -> reserve.available() == 3);
            for (int i = 0; i < 3; i++) {
                assertThat(reserve.take()).as("take %d of a full reserve", i).isNotNull();
            }
            // The filler maps and faults a chunk in tens of µs at best, a take is a CAS: it runs dry.
            int takes = 3;
            while (reserve.take() != null && takes < 64) {
                takes++;
            }
            assertThat(reserve.missed()).as("a take found the reserve empty").isEqualTo(1);
            assertThat(reserve.taken()).isEqualTo(takes);
            await("the reserve refilled", () -> reserve.available() == 3);
            assertThat(reserve.filled()).isEqualTo(takes + 3);
        } finally {
            reserve.close();
        }
        awaitMapped(mappedBefore);
    }

    @Test
    void shouldGiveAHugepageDevicesFirstWritesPrefaultedChunks() throws Exception {
        long mappedBefore = ChunkMemory.mappedBytes();
        try (RamBlockDevice device = new RamBlockDevice("", 32L * CHUNK + 4096, 4096, true)) {
            ChunkReserve reserve = ChunkReserve.current();
            assertThat(reserve).as("started by the first hugepage device").isNotNull();
            assertThat(reserve.chunks()).isEqualTo(ChunkReserve.CHUNKS_DEFAULT);
            await("the reserve full", () -> reserve.available() == ChunkReserve.CHUNKS_DEFAULT);

            ByteBuffer data = SyncIo.pattern(4096, 3);
            assertThat(SyncIo.run(device, WRITE, 5L * CHUNK + 8192, 4096, data, false)).isZero();
            assertThat(reserve.taken()).as("chunks taken from the reserve").isEqualTo(1);
            assertThat(reserve.missed()).as("chunks the writer had to map and fault").isZero();
            assertThat(device.committedBytes()).isEqualTo(CHUNK);
            ByteBuffer back = ByteBuffer.allocateDirect(3 * 4096);
            assertThat(SyncIo.run(device, READ, 5L * CHUNK + 4096, back.remaining(), back, false)).isZero();
            assertThat(SyncIo.allZero(back, 0, 4096)).as("the rest of a reserve chunk reads as zeros").isTrue();
            assertThat(back.slice(4096, 4096)).isEqualTo(data);
            assertThat(SyncIo.allZero(back, 8192, 4096)).isTrue();

            // The short last chunk (4 KiB) is mapped for its length, not taken from the reserve.
            assertThat(SyncIo.run(device, WRITE, 32L * CHUNK, 4096, data, false)).isZero();
            assertThat(reserve.taken() + reserve.missed()).isEqualTo(1);
            assertThat(device.committedBytes()).isEqualTo(CHUNK + 4096);

            // A fill: every chunk's first write takes one or, once it ran dry, maps its own; then it refills.
            for (int c = 0; c < 32; c++) {
                assertThat(SyncIo.run(device, WRITE, (long) c * CHUNK, 4096, SyncIo.pattern(4096, c), false))
                    .isZero();
            }
            assertThat(reserve.taken() + reserve.missed()).as("chunks created").isEqualTo(32);
            assertThat(reserve.taken()).isGreaterThanOrEqualTo(ChunkReserve.CHUNKS_DEFAULT);
            assertThat(device.committedBytes()).isEqualTo(32L * CHUNK + 4096);
            await("the reserve refilled", () -> reserve.available() == ChunkReserve.CHUNKS_DEFAULT);
            for (int c = 0; c < 32; c++) {
                back = ByteBuffer.allocateDirect(4096);
                assertThat(SyncIo.run(device, READ, (long) c * CHUNK, 4096, back, false)).isZero();
                assertThat(back).as("chunk %d", c).isEqualTo(SyncIo.pattern(4096, c));
            }
        }
        assertThat(ChunkReserve.current()).isNull();
        awaitMapped(mappedBefore);
    }

    @Test
    void shouldLastAsLongAsTheLastHugepageDevice() throws Exception {
        long mappedBefore = ChunkMemory.mappedBytes();
        try (RamBlockDevice plain = new RamBlockDevice("", 4L * CHUNK, 4096, false)) {
            assertThat(ChunkReserve.current()).as("no reserve for devices without hugepages").isNull();
            assertThat(SyncIo.run(plain, WRITE, 0, 4096, SyncIo.pattern(4096, 1), false)).isZero();
        }
        RamBlockDevice first = new RamBlockDevice("", 4L * CHUNK, 4096, true);
        ChunkReserve reserve = ChunkReserve.current();
        RamBlockDevice second = new RamBlockDevice("", 4L * CHUNK, 4096, true);
        assertThat(ChunkReserve.current()).as("one reserve per process").isSameAs(reserve);
        await("the reserve full", () -> reserve.available() == reserve.chunks());

        first.close();
        first.close(); // idempotent: releases once
        assertThat(ChunkReserve.current()).as("a hugepage device is still open").isSameAs(reserve);
        assertThat(reserve.fillerAlive()).isTrue();
        assertThat(SyncIo.run(second, WRITE, 0, 4096, SyncIo.pattern(4096, 2), false)).isZero();
        assertThat(reserve.taken()).isEqualTo(1);

        second.close(); // as a live namespace removal or the daemon's close does
        assertThat(ChunkReserve.current()).as("dropped with the last hugepage device").isNull();
        assertThat(reserve.fillerAlive()).as("filler stopped").isFalse();
        assertThat(reserve.available()).isZero();
        awaitMapped(mappedBefore);

        try (RamBlockDevice again = new RamBlockDevice("", 4L * CHUNK, 4096, true)) {
            assertThat(ChunkReserve.current()).as("a new reserve for the next hugepage device").isNotNull()
                .isNotSameAs(reserve);
        }
        awaitMapped(mappedBefore);
    }

    /**
     * At the limit the reserve stays smaller (the filler neither collects nor fails), fills what room comes back,
     * and never takes the process past the limit.
     */
    @Test
    void shouldStaySmallerAtTheLimit() throws Exception {
        long mappedBefore = ChunkMemory.mappedBytes();
        awaitMapped(mappedBefore); // and the JDK's direct buffers of earlier tests collected
        long limit = RamBudget.maxDirectMemory(); // the heap's maximum when unset: a few GiB in a test JVM
        List<ByteBuffer> held = new ArrayList<>();
        int big = Integer.MAX_VALUE - 8; // mapped, never touched
        for (ByteBuffer b; held.size() < 64 && (b = ChunkMemory.mapIfRoom(big)) != null; ) {
            held.add(b);
            ChunkMemory.held(big);
        }
        List<ByteBuffer> small = new ArrayList<>();
        for (ByteBuffer b; small.size() < 2048 && (b = ChunkMemory.mapIfRoom(CHUNK)) != null; ) {
            small.add(b);
            ChunkMemory.held(CHUNK);
        }
        assertThat(ChunkMemory.mapIfRoom(CHUNK)).as("the limit of %d reached", limit).isNull();
        ChunkReserve reserve = new ChunkReserve(4);
        try {
            Thread.sleep(300);
            assertThat(reserve.filled()).as("chunks filled at the limit").isZero();
            assertThat(reserve.take()).isNull();

            // Two chunks' room comes back (dropped, collected): the filler's next try takes it, no more.
            small.subList(0, 2).clear();
            ChunkMemory.held(-2L * CHUNK);
            for (int i = 0; i < 1000 && reserve.available() < 2; i++) {
                System.gc();
                Thread.sleep(10);
            }
            assertThat(reserve.available()).as("chunks in the reserve once room came back").isEqualTo(2);
            Thread.sleep(1_500); // past the filler's next try
            assertThat(reserve.available()).as("the reserve, at the limit").isEqualTo(2);
            assertThat(reserve.filled()).isEqualTo(2);
            assertThat(ChunkMemory.mapIfRoom(CHUNK)).as("no room left beside the reserve").isNull();
        } finally {
            reserve.close();
            ChunkMemory.held(-((long) held.size() * big + (long) small.size() * CHUNK));
            held.clear();
            small.clear();
        }
        awaitMapped(mappedBefore);
    }

    private static void assertZeroed(ByteBuffer chunk) {
        assertThat(chunk.capacity()).isEqualTo(CHUNK);
        for (int i = 0; i < CHUNK; i += 512) {
            assertThat(chunk.get(i)).as("byte %d of a reserve chunk", i).isZero();
        }
    }

    private static void await(String what, BooleanSupplier condition) throws InterruptedException {
        for (int i = 0; i < 1000 && !condition.getAsBoolean(); i++) {
            Thread.sleep(10);
        }
        assertThat(condition.getAsBoolean()).as(what + " within 10 s").isTrue();
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
