package io.nvmeof4j.rdma;

import io.nvmeof4j.protocol.buffer.OffHeapBufferPool;
import io.nvmeof4j.protocol.spi.PollGroup;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * The NVMe/RDMA share of one reactor (SPDK's RDMA poll group): the queues it owns, each with its own completion
 * queue, all reporting to one completion channel; the reactor's buffer pool, whose region was registered with the
 * device's protection domain once, when this group was created.
 * <p>{@link #poll()} runs control tasks, polls every queue's completion queue into one preallocated
 * {@link WorkCompletions} batch, finishes completions other threads handed over, and gives waiting commands pool
 * buffers as they come back. Nothing allocates per I/O. {@link #await} arms every completion queue, polls once
 * more (a completion may have slipped in before arming), then blocks on the completion channel;
 * {@link #wakeup()} interrupts it.
 * <p>Completions from other threads go on an intrusive lock-free stack (one CAS per command, never full), as in the
 * NVMe/TCP poll group.
 */
public final class RdmaPollGroup implements PollGroup {
    private static final Logger LOG = LoggerFactory.getLogger(RdmaPollGroup.class);
    /** Work completions taken from a completion queue per poll call. */
    static final int POLL_BATCH = 32;
    private static final VarHandle COMPLETED_HEAD;

    static {
        try {
            COMPLETED_HEAD = MethodHandles.lookup().findVarHandle(RdmaPollGroup.class, "completedHead",
                RdmaRequest.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private final OffHeapBufferPool pool;
    private final CompletionWaiter waiter;
    /** Released when the group closes, after its queues (the pool region's registrations, the devices' resources). */
    private final AutoCloseable resources;
    private final WorkCompletions completions = new WorkCompletions(POLL_BATCH);
    private final ConcurrentLinkedQueue<Runnable> tasks = new ConcurrentLinkedQueue<>();
    private volatile Thread reactorThread;
    private volatile boolean sleeping;
    private volatile boolean closed;
    @SuppressWarnings("unused") // accessed through COMPLETED_HEAD
    private volatile RdmaRequest completedHead;

    private RdmaControllerQueue[] queues = new RdmaControllerQueue[8];
    private int queueCount;
    private RdmaRequest parkedHead;
    private RdmaRequest parkedTail;
    /** Written by the reactor only. */
    private volatile long bufferWaits;

    /**
     * @param pool      the reactor's pool, built over a region; the transport registers the region once with each
     *                  device's protection domain this group serves, and hands each queue those keys
     * @param waiter    the completion channel(s) the queues' completion queues report to
     * @param resources closed with the group, after its queues
     */
    public RdmaPollGroup(OffHeapBufferPool pool, CompletionWaiter waiter, AutoCloseable resources) {
        if (pool.region() == null) {
            throw new IllegalArgumentException("an RDMA poll group needs a buffer pool built over a region "
                + "(new OffHeapBufferPool(max, region)): the region is registered once with the device");
        }
        this.pool = pool;
        this.waiter = waiter;
        this.resources = resources;
    }

    public OffHeapBufferPool pool() {
        return pool;
    }

    CompletionWaiter waiter() {
        return waiter;
    }

    /** Queues owned by this group (a gauge). */
    public int queueCount() {
        return queueCount;
    }

    Thread reactorThread() {
        return reactorThread;
    }

    boolean isClosed() {
        return closed;
    }

    // ---- PollGroup ---------------------------------------------------------------------------------------------

    @Override
    public int poll() {
        bindReactorThread();
        int work = 0;
        if (!tasks.isEmpty()) {
            work += runTasks();
        }
        work += pollQueues();
        work += drainCompletions();
        if (parkedHead != null) {
            work += retryParked();
        }
        flushQueues();
        return work;
    }

    /** One chained post per queue for everything its commands staged this round. */
    private void flushQueues() {
        for (int i = queueCount - 1; i >= 0; i--) {
            if (i < queueCount) {
                queues[i].flushSends();
            }
        }
    }

    private int pollQueues() {
        int work = 0;
        // Backwards: a queue that finishes closing removes itself (swapping the last one into its place).
        for (int i = queueCount - 1; i >= 0; i--) {
            if (i < queueCount) {
                work += queues[i].poll(completions);
            }
        }
        return work;
    }

    @Override
    public void await(long timeoutNanos) {
        bindReactorThread();
        sleeping = true; // volatile write, then the volatile reads below: pairs with enqueueCompletion (Dekker)
        try {
            if (completedHead != null || !tasks.isEmpty()) {
                return;
            }
            flushQueues();
            for (int i = 0; i < queueCount; i++) {
                queues[i].armNotification();
            }
            if (pollQueues() > 0 || timeoutNanos <= 0) {
                flushQueues();
                return;
            }
            waiter.await(timeoutNanos);
        } finally {
            sleeping = false;
        }
    }

    @Override
    public void wakeup() {
        waiter.wakeup();
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        runTasks();
        flushQueues();
        for (int i = queueCount - 1; i >= 0; i--) {
            if (i < queueCount) {
                queues[i].finishClose();
            }
        }
        drainCompletions();
        while (parkedHead != null) {
            RdmaRequest request = parkedHead;
            parkedHead = request.parkedNext;
            request.parkedNext = null;
            request.queue.dropParked(request);
        }
        parkedTail = null;
        waiter.close();
        if (resources != null) {
            try {
                resources.close();
            } catch (Exception e) {
                LOG.warn("closing the RDMA poll group's device resources failed", e);
            }
        }
    }

    private void bindReactorThread() {
        if (reactorThread == null) {
            reactorThread = Thread.currentThread();
        }
    }

    // ---- hand-over from other threads ----------------------------------------------------------------------------

    /** Any thread: runs {@code task} on the reactor thread during a coming {@link #poll()}. */
    public void execute(Runnable task) {
        tasks.add(task);
        waiter.wakeup();
    }

    void enqueueCompletion(RdmaRequest request) {
        RdmaRequest head;
        do {
            head = completedHead;
            request.completedNext = head;
        } while (!COMPLETED_HEAD.compareAndSet(this, head, request));
        if (sleeping) {
            waiter.wakeup();
        }
    }

    private int runTasks() {
        int n = 0;
        Runnable task;
        while ((task = tasks.poll()) != null) {
            n++;
            try {
                task.run();
            } catch (RuntimeException e) {
                LOG.error("task on an NVMe/RDMA poll group failed", e);
            }
        }
        return n;
    }

    private int drainCompletions() {
        if (completedHead == null) {
            return 0;
        }
        RdmaRequest stack = (RdmaRequest) COMPLETED_HEAD.getAndSet(this, (RdmaRequest) null);
        RdmaRequest fifo = null;
        while (stack != null) {
            RdmaRequest next = stack.completedNext;
            stack.completedNext = fifo;
            fifo = stack;
            stack = next;
        }
        int n = 0;
        while (fifo != null) {
            RdmaRequest next = fifo.completedNext;
            fifo.completedNext = null;
            fifo.queue.onCompleted(fifo, fifo.completionStatus);
            fifo = next;
            n++;
        }
        return n;
    }

    // ---- queues --------------------------------------------------------------------------------------------------

    void register(RdmaControllerQueue queue) {
        if (queue.registeredInGroup) {
            return;
        }
        if (queueCount == queues.length) {
            queues = Arrays.copyOf(queues, queueCount * 2);
        }
        queues[queueCount++] = queue;
        queue.registeredInGroup = true;
    }

    void unregister(RdmaControllerQueue queue) {
        for (int i = 0; i < queueCount; i++) {
            if (queues[i] == queue) {
                queues[i] = queues[--queueCount];
                queues[queueCount] = null;
                queue.registeredInGroup = false;
                return;
            }
        }
    }

    /** Queues currently polled, for tests. */
    List<RdmaControllerQueue> queues() {
        return new ArrayList<>(Arrays.asList(queues).subList(0, queueCount));
    }

    // ---- data buffers ------------------------------------------------------------------------------------------

    /** Where a pool buffer starts inside the pool's region (add the region's registered address). */
    long regionOffset(ByteBuffer buffer) {
        long offset = pool.regionOffset(buffer);
        if (offset < 0) {
            throw new IllegalArgumentException("buffer " + buffer + " is not from this group's registered pool");
        }
        return offset;
    }

    ByteBuffer acquireInOrder(int length) {
        return parkedHead != null ? null : pool.acquire(length);
    }

    /** Commands that found the data-buffer pool dry (or others waiting) and waited for a buffer. Any thread. */
    public long bufferWaits() {
        return bufferWaits;
    }

    void release(ByteBuffer buffer) {
        pool.release(buffer);
    }

    void park(RdmaRequest request) {
        bufferWaits = bufferWaits + 1; // the reactor is the only writer
        request.parkedNext = null;
        if (parkedTail == null) {
            parkedHead = request;
        } else {
            parkedTail.parkedNext = request;
        }
        parkedTail = request;
    }

    private int retryParked() {
        int granted = 0;
        while (parkedHead != null) {
            RdmaRequest request = parkedHead;
            if (request.queue.isGone()) {
                popParked();
                request.queue.dropParked(request);
                continue;
            }
            ByteBuffer buffer = pool.acquire(request.dataLength);
            if (buffer == null) {
                break;
            }
            popParked();
            granted++;
            request.queue.onBufferGranted(request, buffer);
        }
        return granted;
    }

    private void popParked() {
        RdmaRequest request = parkedHead;
        parkedHead = request.parkedNext;
        if (parkedHead == null) {
            parkedTail = null;
        }
        request.parkedNext = null;
    }

    @Override
    public String toString() {
        return "RdmaPollGroup[queues=" + queueCount + "]";
    }
}
