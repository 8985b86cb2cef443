package io.nvmeof4j.protocol.buffer;

import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.IdentityHashMap;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class OffHeapBufferPoolTest {
    private static final com.sun.management.ThreadMXBean THREADS =
        (com.sun.management.ThreadMXBean) java.lang.management.ManagementFactory.getThreadMXBean();

    @Test
    void shouldHandOutLittleEndianDirectBuffersOfTheRoundedUpClass() {
        OffHeapBufferPool pool = new OffHeapBufferPool(1 << 20, 8 << 20);
        ByteBuffer small = pool.acquire(512);
        assertThat(small.isDirect()).isTrue();
        assertThat(small.order()).isEqualTo(ByteOrder.LITTLE_ENDIAN);
        assertThat(small.position()).isZero();
        assertThat(small.limit()).isEqualTo(512);
        assertThat(small.capacity()).isEqualTo(4096);

        assertThat(pool.acquire(4097).capacity()).isEqualTo(8192);
        assertThat(pool.acquire(131072).capacity()).isEqualTo(131072);
        assertThat(pool.acquire(1 << 20).capacity()).isEqualTo(1 << 20);
        assertThat(pool.acquire(0).limit()).isZero();
        assertThat(pool.buffersInUse()).isEqualTo(5);
    }

    @Test
    void shouldAllocateSlabsLazily() {
        OffHeapBufferPool pool = new OffHeapBufferPool(1 << 20, 64L << 20);
        assertThat(pool.bytesAllocated()).isZero();
        pool.acquire(4096);
        assertThat(pool.bytesAllocated()).isEqualTo(OffHeapBufferPool.SLAB_SIZE);
        for (int i = 1; i < OffHeapBufferPool.SLAB_SIZE / 4096; i++) {
            pool.acquire(4096);
        }
        assertThat(pool.bytesAllocated()).isEqualTo(OffHeapBufferPool.SLAB_SIZE);
        pool.acquire(4096);
        assertThat(pool.bytesAllocated()).isEqualTo(2L * OffHeapBufferPool.SLAB_SIZE);
    }

    @Test
    void shouldReturnNullOnceTheCapIsReachedAndRecoverOnRelease() {
        OffHeapBufferPool pool = new OffHeapBufferPool(8192, 16384);
        ByteBuffer a = pool.acquire(8192);
        ByteBuffer b = pool.acquire(8192);
        assertThat(pool.acquire(8192)).isNull();
        assertThat(pool.acquire(100)).isNull(); // the 4 KiB class cannot grow either
        assertThat(pool.bytesAllocated()).isEqualTo(16384);
        pool.release(a);
        ByteBuffer again = pool.acquire(8000);
        assertThat(again).isSameAs(a);
        assertThat(again.limit()).isEqualTo(8000);
        assertThat(pool.buffersInUse()).isEqualTo(2);
        pool.release(b);
        pool.release(again);
        assertThat(pool.buffersInUse()).isZero();
    }

    @Test
    void shouldReuseMostRecentlyReleasedFirst() {
        OffHeapBufferPool pool = new OffHeapBufferPool(1 << 20, 4 << 20);
        ByteBuffer a = pool.acquire(4096);
        ByteBuffer b = pool.acquire(4096);
        pool.release(a);
        pool.release(b);
        assertThat(pool.acquire(4096)).isSameAs(b);
        assertThat(pool.acquire(4096)).isSameAs(a);
    }

    @Test
    void shouldRejectForeignBuffersAndDoubleRelease() {
        OffHeapBufferPool pool = new OffHeapBufferPool(1 << 20, 4 << 20);
        ByteBuffer a = pool.acquire(4096);
        assertThatThrownBy(() -> pool.release(ByteBuffer.allocateDirect(4096)))
            .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> pool.release(a.duplicate())).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> pool.release(null)).isInstanceOf(IllegalArgumentException.class);
        pool.release(a);
        assertThatThrownBy(() -> pool.release(a)).isInstanceOf(IllegalStateException.class);
        assertThat(pool.buffersInUse()).isZero();
    }

    @Test
    void shouldRejectOversizedRequestsAndBadConfiguration() {
        OffHeapBufferPool pool = new OffHeapBufferPool(65536, 1 << 20);
        assertThatThrownBy(() -> pool.acquire(65537)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> pool.acquire(-1)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new OffHeapBufferPool(3000, 1 << 20)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new OffHeapBufferPool(1 << 20, 4096)).isInstanceOf(IllegalArgumentException.class);
        assertThat(pool.maxBufferSize()).isEqualTo(65536);
    }

    @Test
    void shouldHandOutDisjointSlices() {
        OffHeapBufferPool pool = new OffHeapBufferPool(1 << 20, 4 << 20);
        List<ByteBuffer> held = new ArrayList<>();
        for (int i = 0; i < 600; i++) { // more than one slab of the 4 KiB class
            ByteBuffer b = pool.acquire(4096);
            b.putInt(0, i);
            b.putInt(4092, i);
            held.add(b);
        }
        assertThat(new IdentityHashMap<ByteBuffer, Boolean>() {{ held.forEach(b -> put(b, true)); }}).hasSize(600);
        for (int i = 0; i < 600; i++) {
            assertThat(held.get(i).getInt(0)).isEqualTo(i);
            assertThat(held.get(i).getInt(4092)).isEqualTo(i);
        }
        held.forEach(pool::release);
        assertThat(pool.buffersInUse()).isZero();
    }

    @Test
    void shouldResetPositionLimitAndOrderOnAcquire() {
        OffHeapBufferPool pool = new OffHeapBufferPool(1 << 20, 4 << 20);
        ByteBuffer a = pool.acquire(4096);
        a.position(100).limit(200);
        a.order(ByteOrder.BIG_ENDIAN);
        pool.release(a);
        ByteBuffer again = pool.acquire(1000);
        assertThat(again).isSameAs(a);
        assertThat(again.position()).isZero();
        assertThat(again.limit()).isEqualTo(1000);
        assertThat(again.order()).isEqualTo(ByteOrder.LITTLE_ENDIAN);
    }

    @Test
    void shouldNotAllocateInSteadyState() {
        OffHeapBufferPool pool = new OffHeapBufferPool(1 << 20, 16 << 20);
        ByteBuffer[] held = new ByteBuffer[64];
        for (int round = 0; round < 20_000; round++) { // warm up: slabs exist, code is compiled
            cycle(pool, held);
        }
        long before = allocatedBytes();
        for (int round = 0; round < 20_000; round++) {
            cycle(pool, held);
        }
        long allocated = allocatedBytes() - before;
        assertThat(allocated).isLessThan(1024); // 2.5 million acquire/release pairs
    }

    @Test
    void shouldCarveEveryBufferOutOfItsRegionAtDistinctOffsets() {
        ByteBuffer region = ByteBuffer.allocateDirect(4 << 20);
        OffHeapBufferPool pool = new OffHeapBufferPool(1 << 20, region);
        assertThat(pool.region()).isSameAs(region);
        assertThat(pool.capacityBytes()).isEqualTo(4 << 20);

        List<ByteBuffer> held = new ArrayList<>();
        List<long[]> ranges = new ArrayList<>();
        for (int size : new int[] {4096, 4096, 65536, 1 << 20, 8192}) {
            ByteBuffer b = pool.acquire(size);
            long offset = pool.regionOffset(b);
            assertThat(offset).isBetween(0L, (long) region.capacity() - b.capacity());
            // The buffer really is that part of the region: bytes written through it show up there.
            b.put(0, (byte) 0x5A).put(b.capacity() - 1, (byte) 0xA5);
            assertThat(region.get((int) offset)).isEqualTo((byte) 0x5A);
            assertThat(region.get((int) offset + b.capacity() - 1)).isEqualTo((byte) 0xA5);
            for (long[] r : ranges) { // no two buffers overlap
                assertThat(offset + b.capacity() <= r[0] || offset >= r[1]).isTrue();
            }
            ranges.add(new long[] {offset, offset + b.capacity()});
            held.add(b);
        }
        assertThat(pool.regionOffset(ByteBuffer.allocateDirect(4096))).isEqualTo(-1);
        assertThat(new OffHeapBufferPool(1 << 20, 4 << 20).regionOffset(held.get(0))).isEqualTo(-1);
        held.forEach(pool::release);
    }

    @Test
    void shouldReportExhaustionWhenTheRegionIsUsedUp() {
        OffHeapBufferPool pool = new OffHeapBufferPool(1 << 20, ByteBuffer.allocateDirect(1 << 20));
        ByteBuffer whole = pool.acquire(1 << 20);
        assertThat(whole).isNotNull();
        assertThat(pool.acquire(4096)).isNull();
        pool.release(whole);
        assertThat(pool.acquire(1 << 20)).isSameAs(whole);
    }

    @Test
    void shouldCarveFreedSmallBuffersIntoLargeOnesOnceTheCapacityIsUsedUp() {
        ByteBuffer region = ByteBuffer.allocateDirect(4 << 20);
        OffHeapBufferPool pool = new OffHeapBufferPool(1 << 20, region);
        List<ByteBuffer> small = acquireAll(pool, 4096);
        assertThat(small).hasSize(1024);
        assertThat(pool.acquire(128 << 10)).as("every byte is in the 4 KiB class").isNull();
        // Ten buffers of the first slab stay in use: it is the one slab that must not move.
        List<ByteBuffer> live = new ArrayList<>();
        for (int i = 0; i < 1024; i++) {
            if (i < 256 && i % 25 == 0) {
                live.add(small.get(i));
            } else {
                pool.release(small.get(i));
            }
        }
        fill(live, 0x40);

        List<ByteBuffer> large = acquireAll(pool, 128 << 10);
        assertThat(large).as("three free slabs of 1 MiB, eight 128 KiB buffers each").hasSize(24);
        assertThat(pool.bytesAllocated()).isEqualTo(4 << 20);
        assertThat(pool.buffersInUse()).isEqualTo(24 + live.size());
        List<ByteBuffer> all = new ArrayList<>(live);
        all.addAll(large);
        assertInsideRegionAndDisjoint(pool, region, all);
        fill(large, 0x80);
        assertFilled(live, 0x40);
        assertFilled(large, 0x80);
        large.forEach(pool::release);
        live.forEach(pool::release);
        assertThat(pool.buffersInUse()).isZero();
    }

    @Test
    void shouldNeverTakeASlabThatHasALiveBuffer() {
        ByteBuffer region = ByteBuffer.allocateDirect(4 << 20);
        OffHeapBufferPool pool = new OffHeapBufferPool(1 << 20, region);
        List<ByteBuffer> small = acquireAll(pool, 4096);
        List<ByteBuffer> live = new ArrayList<>();
        for (int i = 0; i < small.size(); i++) {
            if (i % 256 == 17) { // one in each slab
                live.add(small.get(i));
            } else {
                pool.release(small.get(i));
            }
        }
        assertThat(live).hasSize(4);
        assertThat(pool.acquire(64 << 10)).as("no slab is wholly free").isNull();
        ByteBuffer another = pool.acquire(4096);
        assertThat(another).as("the 4 KiB class itself still has room").isNotNull();
        live.add(another);

        pool.release(live.remove(2));
        fill(live, 0x11);
        List<ByteBuffer> large = acquireAll(pool, 64 << 10);
        assertThat(large).as("the one slab now free: 16 buffers of 64 KiB").hasSize(16);
        long slabStart = pool.regionOffset(large.get(0));
        assertThat(slabStart).isEqualTo(2L << 20);
        fill(large, 0xEE);
        assertFilled(live, 0x11);
        List<ByteBuffer> all = new ArrayList<>(live);
        all.addAll(large);
        assertInsideRegionAndDisjoint(pool, region, all);
    }

    @Test
    void shouldKeepTheRegistryBoundedOverAThousandShifts() {
        ByteBuffer region = ByteBuffer.allocateDirect(4 << 20);
        OffHeapBufferPool pool = new OffHeapBufferPool(1 << 20, region);
        int[] sizes = {4096, 128 << 10, 8192, 1 << 20};
        int registered = 0;
        for (int shift = 0; shift < 1000; shift++) {
            if (shift == 4) {
                registered = pool.registryHighWater();
            }
            int size = sizes[shift & 3];
            List<ByteBuffer> held = acquireAll(pool, size);
            assertThat(held).as("shift %d to %d bytes", shift, size).hasSize((4 << 20) / size);
            if (shift % 100 == 0) {
                assertInsideRegionAndDisjoint(pool, region, held);
            }
            held.forEach(pool::release);
        }
        // One set of slices per (slab, class) pair, cut in the first four shifts and reused since.
        assertThat(registered).isEqualTo(4 * (256 + 8 + 128 + 1)).isLessThan(2 * (4 << 20) / 4096);
        assertThat(pool.registryHighWater()).isEqualTo(registered);
        assertThat(pool.identityTableLength()).isLessThanOrEqualTo(4096);
        assertThat(pool.bytesAllocated()).isEqualTo(4 << 20);
        assertThat(pool.buffersInUse()).isZero();
    }

    @Test
    void shouldRejectForeignRetiredAndDoubleReleasedBuffersAfterACarve() {
        OffHeapBufferPool pool = new OffHeapBufferPool(1 << 20, 2 << 20); // slabs of their own, no region
        List<ByteBuffer> small = acquireAll(pool, 4096);
        small.forEach(pool::release);
        ByteBuffer whole = pool.acquire(1 << 20);
        ByteBuffer second = pool.acquire(1 << 20);
        assertThat(whole).isNotNull();
        assertThat(second).isNotNull();
        assertThat(pool.acquire(4096)).isNull();
        whole.put(0, (byte) 1);
        second.put(0, (byte) 2);
        assertThat(whole.get(0)).isEqualTo((byte) 1); // distinct memory
        assertThat(pool.regionOffset(whole)).isEqualTo(-1);

        assertThatThrownBy(() -> pool.release(small.get(0)))
            .as("a 4 KiB slice of a carved slab is no longer this pool's").isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> pool.release(ByteBuffer.allocateDirect(4096)))
            .isInstanceOf(IllegalArgumentException.class);
        pool.release(whole);
        assertThatThrownBy(() -> pool.release(whole)).isInstanceOf(IllegalStateException.class);
        assertThat(pool.buffersInUse()).isEqualTo(1);
        pool.release(second);
        assertThat(acquireAll(pool, 4096)).as("and back again").hasSize(512);
    }

    @Test
    void shouldOnlyCarveASlabLongEnoughForTheClass() {
        ByteBuffer region = ByteBuffer.allocateDirect(3 << 19); // 1.5 MiB: slabs of 1 MiB and 0.5 MiB
        OffHeapBufferPool pool = new OffHeapBufferPool(1 << 20, region);
        acquireAll(pool, 4096).forEach(pool::release);
        assertThat(pool.bytesAllocated()).isEqualTo(3 << 19);
        ByteBuffer whole = pool.acquire(1 << 20);
        assertThat(pool.regionOffset(whole)).isZero();
        assertThat(pool.acquire(1 << 20)).as("the 0.5 MiB slab cannot hold 1 MiB").isNull();
        List<ByteBuffer> half = acquireAll(pool, 256 << 10);
        assertThat(half).extracting(pool::regionOffset).containsExactly(1L << 20, (1L << 20) + (256 << 10));
        half.add(whole);
        assertInsideRegionAndDisjoint(pool, region, half);
    }

    @Test
    void shouldNotAllocateInSteadyStateAfterShifts() {
        OffHeapBufferPool pool = new OffHeapBufferPool(1 << 20, ByteBuffer.allocateDirect(4 << 20));
        acquireAll(pool, 4096).forEach(pool::release);
        acquireAll(pool, 128 << 10).forEach(pool::release); // every slab carved for 128 KiB
        ByteBuffer[] held = new ByteBuffer[32];
        for (int round = 0; round < 20_000; round++) {
            large(pool, held);
        }
        long before = allocatedBytes();
        for (int round = 0; round < 20_000; round++) {
            large(pool, held);
        }
        assertThat(allocatedBytes() - before).isLessThan(1024);
    }

    @Test
    void shouldReCarveWithoutAllocatingOnceEachSlabHasHeldEachClass() {
        ByteBuffer region = ByteBuffer.allocateDirect(4 << 20);
        OffHeapBufferPool pool = new OffHeapBufferPool(1 << 20, region);
        // Eight 4 KiB buffers of the first slab stay in use throughout: that slab never moves, the other three do.
        List<ByteBuffer> live = new ArrayList<>();
        for (int i = 0; i < 8; i++) {
            live.add(pool.acquire(4096));
        }
        fill(live, 0x33);
        ByteBuffer[] small = new ByteBuffer[1024];
        ByteBuffer[] large = new ByteBuffer[32];
        ByteBuffer view = region.duplicate().order(ByteOrder.LITTLE_ENDIAN); // as the pool's buffers
        long stamp = 0;
        for (int round = 0; round < 200; round++) { // warm-up: each moving slab carved once per class, code compiled
            stamp = alternate(pool, view, small, large, stamp);
        }
        int registry = pool.registryHighWater();
        assertThat(registry).as("one slab of 4 KiB slices, three of 4 KiB and of 128 KiB").isEqualTo(256 + 3 * 264);

        long before = allocatedBytes();
        for (int round = 0; round < 100; round++) { // 600 re-carves, 104,000 acquire/release pairs
            stamp = alternate(pool, view, small, large, stamp);
        }
        long allocated = allocatedBytes() - before;
        assertThat(allocated).as("bytes allocated by 100 alternations after the warm-up").isZero();
        assertThat(pool.registryHighWater()).isEqualTo(registry);
        assertThat(pool.identityTableLength()).isLessThanOrEqualTo(4096);
        assertFilled(live, 0x33);
        assertThat(pool.bytesAllocated()).isEqualTo(4 << 20);
        assertThat(pool.buffersInUse()).isEqualTo(live.size());

        // The last phase was 128 KiB: the 4 KiB slices of the three moved slabs are retired, the first slab's are not.
        List<ByteBuffer> retired = new ArrayList<>();
        List<ByteBuffer> current = new ArrayList<>();
        for (ByteBuffer b : Arrays.copyOf(small, 1016)) {
            (pool.regionOffset(b) < 0 ? retired : current).add(b);
        }
        assertThat(retired).hasSize(3 * 256);
        ByteBuffer stale = retired.get(0);
        assertThatThrownBy(() -> pool.release(stale))
            .as("a slice of a slab now carved for 128 KiB").isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> pool.release(current.get(0))).isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> pool.release(large[0])).isInstanceOf(IllegalStateException.class);
        assertThat(pool.buffersInUse()).isEqualTo(live.size());

        // Carved back for 4 KiB, the slabs hand out the very same slice objects, reset.
        stale.position(100).limit(200);
        List<ByteBuffer> again = acquireAll(pool, 4096);
        IdentityHashMap<ByteBuffer, Boolean> same = new IdentityHashMap<>();
        retired.forEach(b -> same.put(b, true));
        current.forEach(b -> same.put(b, true));
        again.forEach(b -> same.put(b, true));
        assertThat(again).hasSize(1016);
        assertThat(same).as("no slice object is new").hasSize(1016);
        assertThat(stale.position()).isZero();
        assertThat(stale.limit()).isEqualTo(4096);
        assertThat(pool.regionOffset(stale)).isBetween(1L << 20, (4L << 20) - 4096);
        again.addAll(live);
        assertInsideRegionAndDisjoint(pool, region, again);
        assertFilled(live, 0x33);
        assertThat(pool.registryHighWater()).isEqualTo(registry);
    }

    /** A phase of 4 KiB buffers, then one of 128 KiB, each taking every buffer the pool has (see fullPhase). */
    private static long alternate(OffHeapBufferPool pool, ByteBuffer region, ByteBuffer[] small, ByteBuffer[] large,
                                  long stamp) {
        fullPhase(pool, region, 4096, small, 1016, stamp);
        fullPhase(pool, region, 128 << 10, large, 24, stamp + 1024);
        return stamp + 2048;
    }

    /**
     * Acquires {@code size} buffers until the pool returns null, stamps both ends of each, checks every stamp through
     * the buffer and through the region at the buffer's offset (a buffer overlapping another, or not where its offset
     * says, shows a wrong stamp), then releases them. Allocates nothing unless a check fails.
     */
    private static void fullPhase(OffHeapBufferPool pool, ByteBuffer region, int size, ByteBuffer[] held,
                                  int expected, long stamp) {
        int count = 0;
        ByteBuffer b;
        while ((b = pool.acquire(size)) != null) {
            if (count == held.length || b.position() != 0 || b.limit() != size || b.capacity() != size) {
                throw new AssertionError("buffer " + count + " of " + size + " bytes: " + b);
            }
            held[count++] = b;
        }
        if (count != expected) {
            throw new AssertionError(count + " buffers of " + size + " bytes, expected " + expected);
        }
        for (int i = 0; i < count; i++) {
            held[i].putLong(0, stamp + i).putLong(size - 8, ~(stamp + i));
        }
        for (int i = 0; i < count; i++) {
            long offset = pool.regionOffset(held[i]);
            if (offset < 0 || offset % size != 0 || offset + size > region.capacity()
                || held[i].getLong(0) != stamp + i || held[i].getLong(size - 8) != ~(stamp + i)
                || region.getLong((int) offset) != stamp + i
                || region.getLong((int) offset + size - 8) != ~(stamp + i)) {
                throw new AssertionError("buffer " + i + " of " + size + " bytes at offset " + offset);
            }
        }
        for (int i = 0; i < count; i++) {
            pool.release(held[i]);
        }
    }

    /** This thread's allocated bytes so far (the MXBean is looked up once: looking it up allocates). */
    private static long allocatedBytes() {
        return THREADS.getThreadAllocatedBytes(Thread.currentThread().getId());
    }

    private static void large(OffHeapBufferPool pool, ByteBuffer[] held) {
        for (int i = 0; i < held.length; i++) {
            held[i] = pool.acquire(128 << 10);
        }
        for (ByteBuffer b : held) {
            pool.release(b);
        }
    }

    /** Acquires buffers of {@code size} until the pool returns null. */
    private static List<ByteBuffer> acquireAll(OffHeapBufferPool pool, int size) {
        List<ByteBuffer> held = new ArrayList<>();
        ByteBuffer b;
        while ((b = pool.acquire(size)) != null) {
            assertThat(b.capacity()).isEqualTo(size);
            held.add(b);
        }
        return held;
    }

    /** Each buffer's bytes are the region's at its offset, and no two buffers overlap. */
    private static void assertInsideRegionAndDisjoint(OffHeapBufferPool pool, ByteBuffer region,
                                                      List<ByteBuffer> buffers) {
        long[][] ranges = new long[buffers.size()][];
        for (int i = 0; i < buffers.size(); i++) {
            ByteBuffer b = buffers.get(i);
            long offset = pool.regionOffset(b);
            assertThat(offset).isBetween(0L, (long) region.capacity() - b.capacity());
            byte first = b.get(0);
            byte last = b.get(b.capacity() - 1);
            b.put(0, (byte) 0x5A).put(b.capacity() - 1, (byte) 0xA5);
            assertThat(region.get((int) offset)).isEqualTo((byte) 0x5A);
            assertThat(region.get((int) offset + b.capacity() - 1)).isEqualTo((byte) 0xA5);
            b.put(0, first).put(b.capacity() - 1, last);
            ranges[i] = new long[] {offset, offset + b.capacity()};
        }
        Arrays.sort(ranges, (x, y) -> Long.compare(x[0], y[0]));
        for (int i = 1; i < ranges.length; i++) {
            assertThat(ranges[i][0]).as("buffer at %d overlaps the one before", ranges[i][0])
                .isGreaterThanOrEqualTo(ranges[i - 1][1]);
        }
    }

    private static void fill(List<ByteBuffer> buffers, int seed) {
        for (int i = 0; i < buffers.size(); i++) {
            ByteBuffer b = buffers.get(i);
            for (int j = 0; j < b.capacity(); j++) {
                b.put(j, (byte) (seed + i + j));
            }
        }
    }

    private static void assertFilled(List<ByteBuffer> buffers, int seed) {
        for (int i = 0; i < buffers.size(); i++) {
            ByteBuffer b = buffers.get(i);
            for (int j = 0; j < b.capacity(); j++) {
                if (b.get(j) != (byte) (seed + i + j)) {
                    throw new AssertionError("buffer " + i + " byte " + j + " overwritten");
                }
            }
        }
    }

    private static void cycle(OffHeapBufferPool pool, ByteBuffer[] held) {
        for (int i = 0; i < held.length; i++) {
            held[i] = pool.acquire(4096 << (i & 3));
        }
        for (int i = held.length - 1; i >= 0; i--) {
            pool.release(held[i]);
        }
    }
}
