package io.nvmeof4j.rdma.host;

import io.nvmeof4j.rdma.MemoryKeys;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

class RegistrationCacheTest {
    private final List<ByteBuffer> registered = new ArrayList<>();
    private final List<MemoryKeys> deregistered = new ArrayList<>();
    private long next = 0x1000;
    private final MemoryRegistrar registrar = new MemoryRegistrar() {
        @Override
        public MemoryKeys register(ByteBuffer buffer) throws IOException {
            registered.add(buffer);
            MemoryKeys k = new MemoryKeys(next, buffer.capacity(), (int) next, (int) next + 1);
            next += 0x10000;
            return k;
        }

        @Override
        public void deregister(MemoryKeys keys) {
            deregistered.add(keys);
        }
    };

    @Test
    void shouldRegisterOncePerBufferAndEvictTheLeastRecentlyUsedIdleOne() {
        RegistrationCache cache = new RegistrationCache(registrar, 1 << 20, 3);
        ByteBuffer a = ByteBuffer.allocateDirect(4096);
        ByteBuffer b = ByteBuffer.allocateDirect(4096);
        ByteBuffer c = ByteBuffer.allocateDirect(4096);
        ByteBuffer d = ByteBuffer.allocateDirect(4096);
        int ea = cache.acquire(a);
        cache.release(ea);
        assertThat(cache.acquire(a)).isEqualTo(ea);
        cache.release(ea);
        int eb = cache.acquire(b);
        cache.release(eb);
        int ec = cache.acquire(c); // kept busy
        assertThat(registered).containsExactly(a, b, c);
        cache.acquire(a);
        cache.release(ea); // a is now more recent than b
        int ed = cache.acquire(d);
        assertThat(ed).isNotNegative();
        assertThat(deregistered).hasSize(1);
        assertThat(deregistered.get(0).address()).isEqualTo(0x1000 + 0x10000); // b's registration
        assertThat(cache.keys(ec).address()).isEqualTo(0x1000 + 0x20000);      // c stays: in use
        assertThat(cache.acquire(a)).isEqualTo(ea);                            // still found after the removal
        assertThat(cache.acquire(ByteBuffer.allocate(4096))).isEqualTo(-1);    // heap: not registrable
        assertThat(cache.acquire(ByteBuffer.allocateDirect(2 << 20))).isEqualTo(-1); // above the byte bound
        cache.clear();
        assertThat(cache.entries()).isZero();
        assertThat(deregistered).hasSize(4);
    }

    @Test
    void shouldRefuseWhenEveryEntryIsBusy() {
        RegistrationCache cache = new RegistrationCache(registrar, 1 << 20, 2);
        cache.acquire(ByteBuffer.allocateDirect(4096));
        cache.acquire(ByteBuffer.allocateDirect(4096));
        assertThat(cache.acquire(ByteBuffer.allocateDirect(4096))).isEqualTo(-1);
        assertThat(deregistered).isEmpty();
    }
}
