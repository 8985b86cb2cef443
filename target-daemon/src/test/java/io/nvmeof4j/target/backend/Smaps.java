package io.nvmeof4j.target.backend;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/** This process's memory as the kernel accounts it (tests of what memory RAM namespaces sit on). */
public final class Smaps {
    private Smaps() {
    }

    /** The process's AnonHugePages (transparent hugepages), KiB. */
    public static long anonHugeKib() throws IOException {
        return Files.readAllLines(Path.of("/proc/self/smaps_rollup")).stream()
            .filter(l -> l.startsWith("AnonHugePages:")).mapToLong(l -> Long.parseLong(l.replaceAll("[^0-9]", "")))
            .findFirst().orElse(0);
    }

    /**
     * {@link #anonHugeKib()} once the hugepage chunks of closed devices are unmapped (collected, then unmapped by their
     * cleaner), so that memory given back later cannot pass for a shrink of what comes next; waits at most 5 s.
     */
    public static long anonHugeKibOnceChunksUnmapped() throws IOException, InterruptedException {
        for (int i = 0; i < 50 && ChunkMemory.mappedBytes() > 0; i++) {
            System.gc();
            Thread.sleep(100);
        }
        return anonHugeKib();
    }

    /** The kernel's transparent hugepage mode is "madvise": only memory advised for them gets them. */
    public static boolean transparentHugepagesByAdvice() throws IOException {
        return Files.readString(Path.of("/sys/kernel/mm/transparent_hugepage/enabled")).contains("[madvise]");
    }
}
