package io.nvmeof4j.target.backend;

import io.nvmeof4j.jni.NativeIoException;
import io.nvmeof4j.jni.bdev.Bdev;
import io.nvmeof4j.jni.bdev.BdevRegion;
import io.nvmeof4j.target.limits.RamBudget;

import java.lang.management.BufferPoolMXBean;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Memory for RAM namespace chunks. By default {@code ByteBuffer.allocateDirect}: the JDK counts it against the
 * direct-memory limit ({@code -XX:MaxDirectMemorySize}), collects and waits when the limit is reached, and frees it
 * once the buffer is unreachable. With {@code hugepages} (the daemon's default for populated RAM namespaces,
 * {@code io.nvmeof4j.target.config.Hugepages}) a chunk is an anonymous mapping advised for transparent hugepages
 * ({@link BdevRegion#mapCollected}), so a copy out of a namespace pays no TLB miss per 4 KiB, as SPDK's malloc bdev
 * in its hugepages: measured on this project's 2-vCPU EPYC VM, a 4 KiB copy from a random place in 512 MiB took 430
 * ns on 2 MiB pages against 556 ns on 4 KiB ones, a 128 KiB one 5.5 against 6.7 µs. The first touch of each 2 MiB
 * faults in all of it at once, and on a VM whose host takes back free guest memory (virtio-balloon free page
 * reporting, as on that VM) that costs milliseconds (512 MiB: 1.1 s the first time against 0.25 s on 4 KiB pages):
 * fine on the population thread, not on a reactor, hence not for thin namespaces by default. A mapped chunk is not
 * touched yet ({@link #touch});
 * {@code allocateDirect} zeroes, and so touches, its buffer. Either way the cost is paid where the chunk is made: by
 * {@link RamPopulator}'s background thread for populated devices, on the reactor by a first write otherwise.
 * <p>The JDK cannot account for those mappings, so this class does what it does for its own: what is mapped counts,
 * with the JDK's direct buffers, against the same limit (a thin-provisioned namespace that outgrows the memory the JVM
 * was given gets refused writes, not the OOM killer); a dropped chunk stays mapped until the collector finds its
 * buffer unreachable (a reader on another reactor may still be copying out of it), so when the limit is reached while
 * dropped chunks wait for that, one {@code System.gc()} and a wait of at most {@value #GC_WAIT_MS} ms let them go
 * first.
 */
final class ChunkMemory {
    private static final int GC_WAIT_MS = 500;
    /** The page size the kernel falls back to when it has no free 2 MiB page for a fault. */
    private static final int SMALL_PAGE = 4096;
    private static final long LIMIT = limit();
    /** Bytes mapped (hugepage chunks) and not yet unmapped. */
    private static final AtomicLong MAPPED = new AtomicLong();
    /**
     * Bytes of hugepage chunks that devices hold ({@link #held}); the rest of
     * {@link #MAPPED} waits for the collector.
     */
    private static final AtomicLong HELD = new AtomicLong();
    private static final BufferPoolMXBean JDK_DIRECT = ManagementFactory.getPlatformMXBeans(BufferPoolMXBean.class)
        .stream().filter(pool -> pool.getName().equals("direct")).findFirst().orElse(null);

    private ChunkMemory() {
    }

    /**
     * {@code length} zeroed bytes, or null when the limit or the system refuses them. Not for the data path: a
     * chunk's first write or population (and at the limit, a collection). The caller reports a hugepage chunk with
     * {@link #held} while it holds it. A hugepage chunk is mapped, not touched: see {@link #touch}.
     */
    static ByteBuffer allocate(int length, boolean hugepages) {
        if (!hugepages || !Bdev.isAvailable()) {
            try {
                return ByteBuffer.allocateDirect(length);
            } catch (OutOfMemoryError e) {
                return null; // the direct-memory limit or malloc: the JVM's heap is untouched, the reactor carries on
            }
        }
        if (!reserve(length) && !(collectDropped(length) && reserve(length))) {
            return null;
        }
        try {
            return BdevRegion.mapCollected(length, unmapped -> MAPPED.addAndGet(-unmapped));
        } catch (NativeIoException e) {
            MAPPED.addAndGet(-length);
            return null;
        }
    }

    /**
     * Faults a mapped chunk in by writing one zero byte per 4 KiB. The first write of a 2 MiB-aligned chunk advised
     * for transparent hugepages makes the kernel allocate and zero the whole 2 MiB page (AnonHugePages grows by 2048
     * KiB) when it has a free one (with THP defrag "madvise", Debian's default, it compacts for one here, on the
     * caller's thread); when it has none, or THP is off, that fault maps a single 4 KiB page, and the chunk's other
     * 511 would each fault on a reactor later. So one write per 4 KiB page: on a hugepage the 511 others are plain
     * stores into memory already mapped (a few µs for the chunk, against milliseconds for the fault), otherwise each
     * faults its page in here. A read would not do: a read fault maps the shared zero page and allocates nothing.
     */
    static void touch(ByteBuffer chunk) {
        for (int i = 0; i < chunk.capacity(); i += SMALL_PAGE) {
            chunk.put(i, (byte) 0);
        }
    }

    /** A device took ({@code delta > 0}) or dropped ({@code delta < 0}) hugepage chunks of that many bytes. */
    static void held(long delta) {
        HELD.addAndGet(delta);
    }

    /** Bytes mapped for hugepage chunks and not yet unmapped. */
    static long mappedBytes() {
        return MAPPED.get();
    }

    private static boolean reserve(int length) {
        while (true) {
            long mapped = MAPPED.get();
            if (mapped + jdkDirect() + length > LIMIT) {
                return false;
            }
            if (MAPPED.compareAndSet(mapped, mapped + length)) {
                return true;
            }
        }
    }

    /** When dropped chunks could make room for {@code length}: collects and waits (bounded) for them to go. */
    private static boolean collectDropped(int length) {
        if (MAPPED.get() - HELD.get() < length) {
            return false;
        }
        System.gc();
        long deadline = System.nanoTime() + GC_WAIT_MS * 1_000_000L;
        for (long sleepMs = 1; System.nanoTime() < deadline; sleepMs = Math.min(sleepMs * 2, 64)) {
            if (MAPPED.get() + jdkDirect() + length <= LIMIT) {
                return true;
            }
            try {
                Thread.sleep(sleepMs);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return false;
            }
        }
        return false;
    }

    private static long jdkDirect() {
        return JDK_DIRECT == null ? 0 : JDK_DIRECT.getMemoryUsed();
    }

    private static long limit() {
        long max = RamBudget.maxDirectMemory();
        return max > 0 ? max : Long.MAX_VALUE;
    }
}
