package io.nvmeof4j.rdma;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;

/**
 * Registered memory of a fake fabric: each registration gets a made-up address range and keys, and RDMA
 * operations of the fake queue pairs resolve addresses back to the buffers. Unit tests only.
 */
public final class FakeMemory {
    private record Region(long address, ByteBuffer buffer, int lkey, int rkey) {
    }

    private final List<Region> regions = new ArrayList<>();
    private long nextAddress = 0x10_0000_0000L;
    private int nextKey = 0x100;

    public synchronized MemoryKeys register(ByteBuffer buffer) {
        long address = nextAddress;
        nextAddress += (buffer.capacity() + 0xFFFFL) & ~0xFFFFL;
        int lkey = nextKey++;
        int rkey = nextKey++;
        regions.add(new Region(address, buffer, lkey, rkey));
        return new MemoryKeys(address, buffer.capacity(), lkey, rkey);
    }

    public synchronized void deregister(MemoryKeys keys) {
        regions.removeIf(r -> r.address == keys.address());
    }

    public synchronized int registrations() {
        return regions.size();
    }

    /** The bytes at {@code [address, address + length)} checked against {@code key} (lkey or rkey), or null. */
    synchronized ByteBuffer resolve(long address, int length, int key, boolean remote) {
        for (Region r : regions) {
            if ((remote ? r.rkey : r.lkey) == key && address >= r.address
                && address + length <= r.address + r.buffer.capacity()) {
                return r.buffer.slice((int) (address - r.address), length);
            }
        }
        return null;
    }
}
