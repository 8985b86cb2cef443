package io.nvmeof4j.target.backend;

import io.nvmeof4j.jni.cpu.ReactorPinning;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

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
 * own close. Used only off the data path: queueing takes a lock.
 */
public final class RamPopulator implements AutoCloseable {
    static final String THREAD_NAME = "nvmeof-ram-populate";
    /** Bound of the join at close: a chunk's allocation, or at the limit a collection and its wait (0.5 s). */
    static final long STOP_TIMEOUT_MS = 2_000;
    /** The idle thread's wait for a device: a queued device wakes it; the bound is only the project's rule. */
    private static final long IDLE_WAIT_SECONDS = 10;
    private static final Logger LOG = LoggerFactory.getLogger(RamPopulator.class);

    private final LinkedBlockingQueue<RamBlockDevice> queue = new LinkedBlockingQueue<>();
    /** Started for the first queued device (guarded by this). */
    private Thread thread;
    private volatile boolean running = true;

    /** Queues {@code device} for population; ignored once this populator is closed. */
    public synchronized void populate(RamBlockDevice device) {
        if (!running) {
            return;
        }
        queue.add(device);
        if (thread == null) {
            thread = new Thread(ReactorPinning.housekeeping(this::run), THREAD_NAME);
            thread.setDaemon(true);
            thread.start();
        }
    }

    /**
     * Takes {@code device} off the queue (a namespace removed before its turn), so that a client adding and removing
     * RAM namespaces while a large one populates cannot grow the queue: each entry holds its device's chunk table.
     * Population already under way stops at the device's close instead.
     */
    public void forget(RamBlockDevice device) {
        queue.remove(device);
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
            RamBlockDevice device;
            try {
                device = queue.poll(IDLE_WAIT_SECONDS, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                return; // close()
            }
            if (device != null) {
                populateAll(device);
            }
        }
    }

    private void populateAll(RamBlockDevice device) {
        long start = System.nanoTime();
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
                LOG.warn("{}: population stopped at the memory limit at chunk {} of {}, {} MiB committed; the rest "
                    + "stays thin", device, i, chunks, device.committedBytes() >> 20);
                return;
            }
        }
        LOG.info("{}: populated, {} MiB in {} ms", device, device.committedBytes() >> 20,
            TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start));
    }
}
