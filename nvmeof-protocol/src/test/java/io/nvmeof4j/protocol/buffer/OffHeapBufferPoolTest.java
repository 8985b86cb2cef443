package io.nvmeof4j.protocol.buffer;

import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class OffHeapBufferPoolTest {

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
        com.sun.management.ThreadMXBean mx =
            (com.sun.management.ThreadMXBean) java.lang.management.ManagementFactory.getThreadMXBean();
        long before = mx.getCurrentThreadAllocatedBytes();
        for (int round = 0; round < 20_000; round++) {
            cycle(pool, held);
        }
        long allocated = mx.getCurrentThreadAllocatedBytes() - before;
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

    private static void cycle(OffHeapBufferPool pool, ByteBuffer[] held) {
        for (int i = 0; i < held.length; i++) {
            held[i] = pool.acquire(4096 << (i & 3));
        }
        for (int i = held.length - 1; i >= 0; i--) {
            pool.release(held[i]);
        }
    }
}
