package io.nvmeof4j.target.backend;

import io.nvmeof4j.jni.cpu.ReactorPinning;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.LockSupport;

/**
 * Populates RAM namespaces in the background, as SPDK's malloc bdev allocates its memory when it is created: one
 * thread ({@value #THREAD_NAME}, on the housekeeping CPUs when reactors are pinned, never on a reactor's) commits
 * every chunk of each {@link #populate queued} device that is still empty, in order, through the write path's
 * publish step ({@link RamBlockDevice#populate}): a chunk a write published first is kept. Writes meanwhile work as
 * without population (a write into a chunk not yet populated commits it itself), but the reactor no longer pays
 * for allocating, zeroing and faulting in every chunk a first write touches (about 1 ms per 1 MiB chunk on a VM
 * whose host takes back free guest memory).
 * <p>A device's population stops at its close (before the next chunk; the chunk being made is dropped again), and
 * quietly at the memory limit: that is no write failure, the rest of the device stays thin. One line is logged per
 * device. The daemon has one populator for its RAM namespaces (configured and live) and {@link #close}s it at its
 * own close.
 * <p>Write Zeroes and Deallocate drop the whole chunks they cover (the memory goes back to the system); a populated
 * device then queues itself again, so the populator makes those chunks anew and the next writes find them ready. A
 * host's discard of the whole device (mkfs does one) would otherwise leave every later first write to make its chunk
 * on the reactor, a whole 2 MiB hugepage on the default chunks. That queueing runs on the reactor that dropped the
 * chunks: lock-free (a {@link ConcurrentLinkedQueue} node and an unpark), at most once per device until the
 * populator takes it up again. Later passes log at debug level only (a host may discard often).
 */
public final class RamPopulator implements AutoCloseable {
    static final String THREAD_NAME = "nvmeof-ram-populate";
    /** Bound of the join at close: a chunk's allocation, or at the limit a collection and its wait (0.5 s). */
    static final long STOP_TIMEOUT_MS = 2_000;
    /** The idle thread's wait for a device: a queued device wakes it; the bound is only the project's rule. */
    private static final long IDLE_WAIT_SECONDS = 10;
    private static final Logger LOG = LoggerFactory.getLogger(RamPopulator.class);

    private final ConcurrentLinkedQueue<Entry> queue = new ConcurrentLinkedQueue<>();
    /** Started for the first queued device (written under this). */
    private volatile Thread thread;
    private volatile boolean running = true;

    /** Queues {@code device} for population; ignored once this populator is closed. */
    public synchronized void populate(RamBlockDevice device) {
        if (!running) {
            return;
        }
        if (thread == null) {
            Thread t = new Thread(ReactorPinning.housekeeping(this::run), THREAD_NAME);
            t.setDaemon(true);
            thread = t;
            t.start();
        }
        Entry entry = new Entry(device);
        device.onChunksDropped(entry::queue);
        entry.queue();
    }

    /**
     * Takes {@code device} off the queue (a namespace removed before its turn), so that a client adding and removing
     * RAM namespaces while a large one populates cannot grow the queue: each entry holds its device's chunk table.
     * Population already under way stops at the device's close instead.
     */
    public void forget(RamBlockDevice device) {
        queue.removeIf(e -> e.device == device);
    }

    /** Devices waiting for their turn. */
    int queued() {
        return queue.size();
    }

    /** True while the populator's thread runs. */
    synchronized boolean threadAlive() {
        return thread != null && thread.isAlive();
    }

    /** Stops the thread (a bounded join); devices not yet populated stay thin. Idempotent. */
    @Override
    public void close() {
        Thread t;
        synchronized (this) {
            running = false;
            t = thread;
        }
        queue.clear();
        if (t == null) {
            return;
        }
        t.interrupt();
        try {
            t.join(STOP_TIMEOUT_MS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        if (t.isAlive()) {
            LOG.warn("{} did not stop within {} ms; it stops after the chunk it is making", THREAD_NAME,
                STOP_TIMEOUT_MS);
        }
    }

    private void run() {
        while (running) {
            Entry entry = queue.poll();
            if (entry == null) {
                LockSupport.parkNanos(this, TimeUnit.SECONDS.toNanos(IDLE_WAIT_SECONDS)); // a queued device unparks
                if (Thread.currentThread().isInterrupted()) {
                    return; // close()
                }
                continue;
            }
            entry.queued.set(false); // chunks dropped from here on queue the device again
            populateAll(entry.device, entry.passes++ == 0);
        }
    }

    /** One pass over {@code device}: makes every empty chunk. The first pass logs at info level, later ones debug. */
    private void populateAll(RamBlockDevice device, boolean first) {
        long start = System.nanoTime();
        long committedBefore = device.committedBytes();
        int chunks = device.chunkCount();
        for (int i = 0; i < chunks; i++) {
            if (!running || device.isClosed()) {
                LOG.info("{}: population stopped at chunk {} of {} (closed)", device, i, chunks);
                return;
            }
            if (!device.populate(i)) {
                if (!running || device.isClosed()) {
                    continue; // interrupted by close(), or closed: said at the loop's check
                }
                if (first) {
                    LOG.warn("{}: population stopped at the memory limit at chunk {} of {}, {} MiB committed; the "
                        + "rest stays thin", device, i, chunks, device.committedBytes() >> 20);
                } else {
                    LOG.debug("{}: making dropped chunks again stopped at the memory limit at chunk {}", device, i);
                }
                return;
            }
        }
        long millis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
        if (first) {
            LOG.info("{}: populated, {} MiB in {} ms", device, device.committedBytes() >> 20, millis);
        } else {
            LOG.debug("{}: {} MiB dropped by Write Zeroes or Deallocate made again in {} ms", device,
                (device.committedBytes() - committedBefore) >> 20, millis);
        }
    }

    /** A device the populator serves, and whether it waits in the queue (so drops queue it at most once a pass). */
    private final class Entry {
        final RamBlockDevice device;
        final AtomicBoolean queued = new AtomicBoolean();
        /** Passes made (the populator's thread only). */
        int passes;

        Entry(RamBlockDevice device) {
            this.device = device;
        }

        /** Any thread, lock-free: into the queue unless it is there already, the populator closed or the device. */
        void queue() {
            if (running && !device.isClosed() && queued.compareAndSet(false, true)) {
                queue.offer(this);
                LockSupport.unpark(thread);
            }
        }
    }
}
