package io.nvmeof4j.target.backend;

import org.junit.jupiter.api.Test;

import io.nvmeof4j.target.limits.RamBudget;

import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assumptions.assumeThat;

/**
 * RAM namespace chunks on hugepages: mapped on the native side, counted while mapped, given back once unreachable;
 * other chunks are the JDK's direct buffers.
 */
class ChunkMemoryTest {
    @Test
    void shouldCountAChunkWhileMappedAndGiveItBackOnceUnreachable() throws Exception {
        long before = ChunkMemory.mappedBytes();
        ByteBuffer chunk = ChunkMemory.allocate(RamBlockDevice.HUGEPAGE_CHUNK_SIZE, true);
        assertThat(chunk).isNotNull();
        assertThat(chunk.isDirect()).isTrue();
        assertThat(chunk.capacity()).isEqualTo(RamBlockDevice.HUGEPAGE_CHUNK_SIZE);
        assertThat(ChunkMemory.mappedBytes() - before).isEqualTo(RamBlockDevice.HUGEPAGE_CHUNK_SIZE);
        for (int i = 0; i < chunk.capacity(); i += 4096) {
            assertThat(chunk.get(i)).as("byte %d of a new chunk", i).isZero();
        }
        chunk.put(RamBlockDevice.HUGEPAGE_CHUNK_SIZE - 1, (byte) 5);
        assertThat(chunk.get(RamBlockDevice.HUGEPAGE_CHUNK_SIZE - 1)).isEqualTo((byte) 5);
        chunk = null;
        awaitMapped(before);
    }

    @Test
    void shouldBackChunksWithTransparentHugepagesWhenAskedWhereTheKernelAllowsThem() throws Exception {
        assumeThat(Files.readString(Path.of("/sys/kernel/mm/transparent_hugepage/enabled")))
            .as("transparent hugepages allowed").doesNotContain("[never]");
        long before = ChunkMemory.mappedBytes();
        long hugeBefore = Smaps.anonHugeKib();
        ByteBuffer[] chunks = new ByteBuffer[8];
        for (int i = 0; i < chunks.length; i++) {
            chunks[i] = ChunkMemory.allocate(RamBlockDevice.HUGEPAGE_CHUNK_SIZE, true);
            chunks[i].put(4096, (byte) i); // one byte: the whole chunk is one 2 MiB page
        }
        assertThat(Smaps.anonHugeKib() - hugeBefore).as("AnonHugePages grown by 8 chunks of one byte written, KiB")
            .isGreaterThanOrEqualTo(8 * 2048 - 2048);
        for (int i = 0; i < chunks.length; i++) {
            assertThat(chunks[i].get(4096)).isEqualTo((byte) i);
        }
        if (Smaps.transparentHugepagesByAdvice()) {
            long hugeNow = Smaps.anonHugeKib();
            ByteBuffer plain = ChunkMemory.allocate(RamBlockDevice.HUGEPAGE_CHUNK_SIZE, false);
            for (int i = 0; i < plain.capacity(); i += 4096) {
                plain.put(i, (byte) 1);
            }
            assertThat(Smaps.anonHugeKib()).as("a chunk not asked for hugepages, written whole").isEqualTo(hugeNow);
        }
        chunks = null;
        awaitMapped(before);
    }

    @Test
    void shouldRefuseChunksBeyondTheJvmsDirectMemoryLimit() throws Exception {
        long before = ChunkMemory.mappedBytes();
        long limit = RamBudget.maxDirectMemory(); // the heap's maximum when unset: a few GiB in a test JVM
        int size = Integer.MAX_VALUE - 8;
        ByteBuffer[] held = new ByteBuffer[64]; // 128 GiB: past any test JVM's limit (mapped, never touched)
        int mapped = 0;
        while (mapped < held.length && (held[mapped] = ChunkMemory.allocate(size, true)) != null) {
            ChunkMemory.held(size);
            mapped++;
        }
        assertThat(mapped).as("chunks of %d bytes mapped under a limit of %d", size, limit).isLessThan(held.length);
        assertThat((long) mapped * size).isLessThanOrEqualTo(limit);
        assertThat(ChunkMemory.allocate(size, true)).as("refused again while every chunk is held").isNull();

        // Dropped (unreachable, not yet collected): the next chunk collects them instead of being refused.
        ChunkMemory.held(-(long) mapped * size);
        held = null;
        ByteBuffer next = ChunkMemory.allocate(size, true);
        assertThat(next).as("a chunk once the dropped ones could be collected").isNotNull();
        next = null;
        awaitMapped(before);
    }

    /** Collects for up to 5 s until the mapped bytes are back at {@code expected} (each test leaves them so). */
    static void awaitMapped(long expected) throws InterruptedException {
        for (int i = 0; i < 100 && ChunkMemory.mappedBytes() != expected; i++) {
            System.gc();
            Thread.sleep(50);
        }
        assertThat(ChunkMemory.mappedBytes()).as("mapped after the chunks became unreachable").isEqualTo(expected);
    }
}
