package io.nvmeof4j.rdma.host;

import io.nvmeof4j.rdma.MemoryKeys;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.ByteBuffer;

/**
 * Long-lived memory registrations of the direct buffers applications hand the host for I/O (one per buffer object,
 * registered the first time it carries data and kept, so an application that reuses its buffers, like the
 * {@code perf} tool, pays for registration once and then sends keyed SGLs 0x40 on its own memory without copying).
 * <p>An entry keeps its buffer strongly reachable: the memory cannot be freed, and its address reused, while it is
 * registered, which is what makes caching by object identity safe (a cache by address would need the kernel's
 * MMU notifiers to notice unmapped memory). The cache is bounded in bytes and entries; when full, the least recently
 * used entry no command is using is deregistered. When every entry is in use the caller falls back to a copy through
 * registered bounce buffers.
 * <p>Lookups are an identity-hash probe of a small open-addressing table: no allocation. Poll-group thread only.
 */
final class RegistrationCache {
    private static final Logger LOG = LoggerFactory.getLogger(RegistrationCache.class);
    static final long MAX_BYTES_DEFAULT = 1L << 30;
    static final int MAX_ENTRIES_DEFAULT = 1024;

    private final MemoryRegistrar registrar;
    private final long maxBytes;
    private final int maxEntries;
    // Entries by a stable id (what commands hold), and an identity table buffer -> id.
    private final ByteBuffer[] buffers;
    private final MemoryKeys[] keys;
    private final int[] users;
    private final long[] lastUse;
    private final int[] freeIds;
    private int freeCount;
    private final int[] table;
    private int count;
    private long bytes;
    private long clock;
    private long registrations;

    RegistrationCache(MemoryRegistrar registrar, long maxBytes, int maxEntries) {
        this.registrar = registrar;
        this.maxBytes = maxBytes;
        this.maxEntries = maxEntries;
        buffers = new ByteBuffer[maxEntries];
        keys = new MemoryKeys[maxEntries];
        users = new int[maxEntries];
        lastUse = new long[maxEntries];
        freeIds = new int[maxEntries];
        for (int id = maxEntries - 1; id >= 0; id--) {
            freeIds[freeCount++] = id;
        }
        table = new int[Integer.highestOneBit(Math.max(4, maxEntries) * 2 - 1) << 1];
        java.util.Arrays.fill(table, -1);
    }

    /**
     * The id of {@code buffer}'s registration, registering it if needed (and possible), with one more user; or
     * -1 when the buffer cannot be registered now (heap buffer, too large, every entry busy, registration failed).
     */
    int acquire(ByteBuffer buffer) {
        if (!buffer.isDirect()) {
            return -1;
        }
        int id = find(buffer);
        if (id < 0) {
            id = insert(buffer);
            if (id < 0) {
                return -1;
            }
        }
        users[id]++;
        lastUse[id] = ++clock;
        return id;
    }

    MemoryKeys keys(int id) {
        return keys[id];
    }

    void release(int id) {
        users[id]--;
    }

    int entries() {
        return count;
    }

    long registrations() {
        return registrations;
    }

    private int find(ByteBuffer buffer) {
        int mask = table.length - 1;
        int i = System.identityHashCode(buffer) & mask;
        while (table[i] >= 0) {
            if (buffers[table[i]] == buffer) {
                return table[i];
            }
            i = (i + 1) & mask;
        }
        return -1;
    }

    private int insert(ByteBuffer buffer) {
        long size = buffer.capacity();
        if (size > maxBytes) {
            return -1;
        }
        while (count >= maxEntries || bytes + size > maxBytes) {
            if (!evictOne()) {
                return -1;
            }
        }
        MemoryKeys k;
        try {
            k = registrar.register(buffer);
        } catch (IOException | RuntimeException e) {
            LOG.warn("cannot register a {}-byte I/O buffer for RDMA ({}); copying through bounce buffers instead",
                size, e.getMessage());
            return -1;
        }
        registrations++;
        int id = freeIds[--freeCount];
        buffers[id] = buffer;
        keys[id] = k;
        users[id] = 0;
        count++;
        bytes += size;
        int mask = table.length - 1;
        int i = System.identityHashCode(buffer) & mask;
        while (table[i] >= 0) {
            i = (i + 1) & mask;
        }
        table[i] = id;
        return id;
    }

    private boolean evictOne() {
        int victim = -1;
        for (int id = 0; id < maxEntries; id++) {
            if (buffers[id] != null && users[id] == 0 && (victim < 0 || lastUse[id] < lastUse[victim])) {
                victim = id;
            }
        }
        if (victim < 0) {
            return false;
        }
        remove(victim);
        return true;
    }

    private void remove(int id) {
        ByteBuffer buffer = buffers[id];
        registrar.deregister(keys[id]);
        bytes -= buffer.capacity();
        count--;
        int mask = table.length - 1;
        int slot = System.identityHashCode(buffer) & mask;
        while (table[slot] != id) {
            slot = (slot + 1) & mask;
        }
        table[slot] = -1;
        buffers[id] = null;
        keys[id] = null;
        freeIds[freeCount++] = id;
        // Re-insert the rest of the probe run so lookups do not stop at the hole (linear probing deletion).
        int i = (slot + 1) & mask;
        while (table[i] >= 0) {
            int moved = table[i];
            table[i] = -1;
            int j = System.identityHashCode(buffers[moved]) & mask;
            while (table[j] >= 0) {
                j = (j + 1) & mask;
            }
            table[j] = moved;
            i = (i + 1) & mask;
        }
    }

    /** Deregisters everything (the poll group is closing). */
    void clear() {
        for (int id = 0; id < maxEntries; id++) {
            if (buffers[id] != null) {
                registrar.deregister(keys[id]);
                buffers[id] = null;
                keys[id] = null;
            }
        }
        java.util.Arrays.fill(table, -1);
        freeCount = 0;
        for (int id = maxEntries - 1; id >= 0; id--) {
            freeIds[freeCount++] = id;
        }
        count = 0;
        bytes = 0;
    }
}
