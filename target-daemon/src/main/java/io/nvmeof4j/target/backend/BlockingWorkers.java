package io.nvmeof4j.target.backend;

import io.nvmeof4j.jni.cpu.ReactorPinning;
import io.nvmeof4j.protocol.command.NvmeStatus;
import io.nvmeof4j.target.reactor.Reactor;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

/**
 * The few threads that run what the kernel can only do synchronously, so that it never runs on a reactor: BLKDISCARD
 * on kernels without io_uring's block discard command (before 6.12) blocks its caller for as long as the discard
 * takes, seconds on a large range, and every queue on that reactor would stall meanwhile. {@value #THREADS}
 * threads, shared by every device: a bounded pool, so a burst of discards queues here (first come, first served)
 * instead of multiplying threads; each result goes back to the reactor that submitted the I/O and completes there,
 * like a ring completion.
 * <p>Handing over allocates one queue node per operation (a lock-free queue); reads and writes never come here.
 */
final class BlockingWorkers {
    private static final Logger LOG = LoggerFactory.getLogger(BlockingWorkers.class);
    static final int THREADS = 2;
    /** How long a worker retries a reactor whose task queue is full before completing on its own thread. */
    private static final long HANDBACK_RETRY_NANOS = TimeUnit.SECONDS.toNanos(10);

    private static final ConcurrentLinkedQueue<BlockIo> QUEUE = new ConcurrentLinkedQueue<>();
    private static final Semaphore QUEUED = new Semaphore(0);
    private static final AtomicLong HANDED_OVER = new AtomicLong();

    static {
        for (int i = 0; i < THREADS; i++) {
            // Started by the first discard, on a reactor thread: off its pinned CPU first (ReactorPinning).
            Thread t = new Thread(ReactorPinning.housekeeping(BlockingWorkers::work), "nvmeof-blocking-io-" + i);
            t.setDaemon(true);
            t.start();
        }
    }

    private BlockingWorkers() {
    }

    /**
     * Runs {@code io} on a worker for {@code device}; it completes on the calling reactor. Reactor thread: the I/O
     * must not be touched again until it completes.
     */
    static void submit(BlockIo io, UringBlockDevice device, Reactor reactor) {
        io.waitingDevice = device;
        io.completingReactor = reactor;
        if (io.deferredCompletion == null) {
            // Once per I/O descriptor (one per queue slot), not per I/O.
            io.deferredCompletion = () -> io.complete(io.deferredStatus);
        }
        HANDED_OVER.incrementAndGet();
        QUEUE.offer(io);
        QUEUED.release();
    }

    /** Operations handed to the workers since start (the tests' proof that the worker path ran). */
    static long handedOver() {
        return HANDED_OVER.get();
    }

    private static void work() {
        while (true) {
            QUEUED.acquireUninterruptibly();
            BlockIo io = QUEUE.poll();
            if (io == null) {
                continue;
            }
            UringBlockDevice device = io.waitingDevice;
            io.waitingDevice = null;
            int status;
            try {
                status = device.runBlocking(io);
            } catch (RuntimeException e) {
                LOG.error("{}: {} on a worker failed", device, io.op(), e);
                status = NvmeStatus.INTERNAL_ERROR;
            }
            handBack(io, status);
            device.blockingDone();
        }
    }

    /** Completes {@code io} on its reactor; on this thread only when that reactor has stopped or stays full. */
    private static void handBack(BlockIo io, int status) {
        io.deferredStatus = status;
        Reactor reactor = io.completingReactor;
        io.completingReactor = null;
        long deadline = System.nanoTime() + HANDBACK_RETRY_NANOS;
        while (true) {
            try {
                reactor.execute(io.deferredCompletion);
                return;
            } catch (RejectedExecutionException e) {
                if (!reactor.isRunning() || System.nanoTime() - deadline > 0) {
                    io.complete(status); // BlockIo.complete may be called from any thread
                    return;
                }
                LockSupport.parkNanos(TimeUnit.MICROSECONDS.toNanos(100)); // the task queue is full: wait, not fail
            }
        }
    }
}
