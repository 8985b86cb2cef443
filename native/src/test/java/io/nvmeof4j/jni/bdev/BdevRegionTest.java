package io.nvmeof4j.jni.bdev;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assumptions.assumeThat;

/** Anonymous mappings on this host's kernel: alignment, transparent hugepages, and unmapping by the collector. */
class BdevRegionTest {
    private static final long TWO_MIB = 2L << 20;

    @Test
    void shouldStartMappingsAdvisedForHugepagesOnA2MiBBoundaryAndBackThemWithTransparentHugepages() throws Exception {
        ByteBuffer buffer = BdevRegion.mapCollected(6 << 20, unmapped -> { });
        long address = BdevNative.address0(buffer);
        assertThat(address % TWO_MIB).as("address %x", address).isZero();
        assumeThat(Files.readString(Path.of("/sys/kernel/mm/transparent_hugepage/enabled")))
            .as("transparent hugepages allowed").doesNotContain("[never]");
        buffer.put((int) TWO_MIB, (byte) 1); // one fault: the whole second 2 MiB
        assertThat(anonHugeKib(address)).as("AnonHugePages of the mapping").isGreaterThanOrEqualTo(2048);
        assertThat(buffer.get(0)).isZero();
        assertThat(buffer.get((int) TWO_MIB)).isEqualTo((byte) 1);
    }

    @Test
    void shouldKeepMappingsNotAdvisedOnNormalPagesWhereTransparentHugepagesAreOnlyByAdvice() throws Exception {
        assumeThat(Files.readString(Path.of("/sys/kernel/mm/transparent_hugepage/enabled")))
            .as("transparent hugepages by advice only (Debian's default)").contains("[madvise]");
        try (BdevRegion region = BdevRegion.map(6L << 20, false)) {
            long address = BdevNative.address0(region.buffer());
            for (int i = 0; i < (6 << 20); i += 4096) {
                region.buffer().put(i, (byte) 7);
            }
            assertThat(anonHugeKib(address)).isZero();
            assertThat(region.buffer().get(5 << 20)).isEqualTo((byte) 7);
        }
        ByteBuffer small = BdevRegion.mapCollected(64 << 10, unmapped -> { });
        small.put(0, (byte) 7);
        assertThat(anonHugeKib(BdevNative.address0(small))).as("below 2 MiB").isZero();
    }

    @Test
    void shouldUnmapACollectedMappingOnceNoSliceOfItIsReachable() throws Exception {
        AtomicLong unmapped = new AtomicLong();
        ByteBuffer buffer = BdevRegion.mapCollected(4 << 20, unmapped::addAndGet);
        long address = BdevNative.address0(buffer);
        assertThat(address % TWO_MIB).isZero();
        ByteBuffer slice = buffer.slice(1 << 20, 4096);
        buffer = null;
        slice.put(0, (byte) 9);
        awaitCollection(unmapped, 2);
        assertThat(unmapped.get()).as("not unmapped while a slice is reachable").isZero();
        assertThat(mapped(address)).isTrue();
        assertThat(slice.get(0)).isEqualTo((byte) 9);
        slice = null;
        awaitCollection(unmapped, 100);
        assertThat(unmapped.get()).isEqualTo(4 << 20);
        assertThat(mapped(address)).as("mapping at %x after the unmap", address).isFalse();
    }

    /** Up to {@code rounds} collections of ~50 ms, until {@code unmapped} moves. */
    private static void awaitCollection(AtomicLong unmapped, int rounds) throws InterruptedException {
        for (int i = 0; i < rounds && unmapped.get() == 0; i++) {
            System.gc();
            Thread.sleep(50);
        }
    }

    private static boolean mapped(long address) throws IOException {
        return vma(address) != null;
    }

    /** The AnonHugePages of the mapping that contains {@code address}, from /proc/self/smaps. */
    private static long anonHugeKib(long address) throws IOException {
        List<String> lines = vma(address);
        assertThat(lines).as("a mapping at %x", address).isNotNull();
        return lines.stream().filter(l -> l.startsWith("AnonHugePages:"))
            .mapToLong(l -> Long.parseLong(l.replaceAll("[^0-9]", ""))).findFirst().orElse(0);
    }

    /** The smaps lines of the mapping that contains {@code address}, or null. */
    private static List<String> vma(long address) throws IOException {
        List<String> lines = Files.readAllLines(Path.of("/proc/self/smaps"));
        for (int i = 0; i < lines.size(); i++) {
            String line = lines.get(i);
            int dash = line.indexOf('-');
            int space = line.indexOf(' ');
            if (dash <= 0 || space < dash || !line.substring(0, dash).matches("[0-9a-f]+")) {
                continue;
            }
            long start = Long.parseUnsignedLong(line.substring(0, dash), 16);
            long end = Long.parseUnsignedLong(line.substring(dash + 1, space), 16);
            if (Long.compareUnsigned(address, start) >= 0 && Long.compareUnsigned(address, end) < 0) {
                int next = i + 1;
                while (next < lines.size() && !lines.get(next).matches("^[0-9a-f]+-[0-9a-f]+ .*")) {
                    next++;
                }
                return lines.subList(i, next);
            }
        }
        return null;
    }
}
