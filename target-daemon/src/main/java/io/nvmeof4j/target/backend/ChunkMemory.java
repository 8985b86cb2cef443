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
 * once the buffer is unreachable. With {@code hugepages} (the daemon's {@code hugepages} setting) a chunk is an
 * anonymous mapping advised for transparent hugepages ({@link BdevRegion#mapCollected}), so a copy out of a namespace
 * pays no TLB miss per 4 KiB, as SPDK's malloc bdev in its hugepages: measured on this project's 2-vCPU EPYC VM, a 4
 * KiB copy from a random place in 512 MiB took 430 ns on 2 MiB pages against 556 ns on 4 KiB ones, a 128 KiB one 5.5
 * against 6.7 µs. Not the default: the first write into each 2 MiB faults in all of it at once, and on a VM whose host
 * takes back free guest memory (virtio-balloon free page reporting, as on that VM) that costs milliseconds on the
 * reactor (512 MiB: 1.1 s the first time against 0.25 s on 4 KiB pages). A {@link ChunkReserve} of chunks faulted
 * in on a background thread serves first writes while it keeps up (about 4 ms per chunk there, one thread).
 * <p>The JDK cannot account for those mappings, so this class does what it does for its own: what is mapped counts,
 * with the JDK's direct buffers, against the same limit (a thin-provisioned namespace that outgrows the memory the JVM
 * was given gets refused writes, not the OOM killer); a dropped chunk stays mapped until the collector finds its
 * buffer unreachable (a reader on another reactor may still be copying out of it), so when the limit is reached while
 * dropped chunks wait for that, one {@code System.gc()} and a wait of at most {@value #GC_WAIT_MS} ms let them go
 * first.
 */
final class ChunkMemory {
    private static final int GC_WAIT_MS = 500;
    private static final long LIMIT = limit();
    /** Bytes mapped (hugepage chunks) and not yet unmapped. */
    private static final AtomicLong MAPPED = new AtomicLong();
    /**
     * Bytes of hugepage chunks that devices or the {@link ChunkReserve} hold ({@link #held}); the rest of
     * {@link #MAPPED} waits for the collector.
     */
    private static final AtomicLong HELD = new AtomicLong();
    private static final BufferPoolMXBean JDK_DIRECT = ManagementFactory.getPlatformMXBeans(BufferPoolMXBean.class)
        .stream().filter(pool -> pool.getName().equals("direct")).findFirst().orElse(null);

    private ChunkMemory() {
    }

    /**
     * {@code length} zeroed bytes, or null when the limit or the system refuses them. Not for the data path: a
     * chunk's first write (and at the limit, a collection). The caller reports a hugepage chunk with {@link #held}
     * while it holds it.
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
        return map(length);
    }

    /**
     * A hugepage chunk of {@code length} zeroed bytes (not yet touched) if the limit has room for it now, else null:
     * never collects or waits, for {@link ChunkReserve}'s filler, whose reserve just stays smaller at the limit.
     */
    static ByteBuffer mapIfRoom(int length) {
        return Bdev.isAvailable() && reserve(length) ? map(length) : null;
    }

    /** Maps {@code length} bytes {@link #reserve}d before; on failure gives them back and returns null. */
    private static ByteBuffer map(int length) {
        try {
            return BdevRegion.mapCollected(length, unmapped -> MAPPED.addAndGet(-unmapped));
        } catch (NativeIoException e) {
            MAPPED.addAndGet(-length);
            return null;
        }
    }

    /**
     * A device or the reserve took ({@code delta > 0}) or dropped ({@code delta < 0}) hugepage chunks of that many
     * bytes.
     */
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
