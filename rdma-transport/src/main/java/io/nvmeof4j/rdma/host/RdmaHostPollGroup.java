package io.nvmeof4j.rdma.host;

import io.nvmeof4j.protocol.spi.host.HostPollGroup;
import io.nvmeof4j.rdma.CompletionWaiter;
import io.nvmeof4j.rdma.WorkCompletions;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.Arrays;
import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * The NVMe/RDMA host share of one host reactor thread: its queues (each with its own completion queue, all
 * reporting to one completion channel), and the long-lived registered memory they move data through
 * ({@link HostMemory}, made once when the group first connects on a device). {@link #poll()} runs control tasks and
 * polls every queue's completion queue into one preallocated batch, which runs the completion callbacks.
 * {@link #await} arms the completion queues, polls once more, and blocks on the completion channel.
 * Nothing allocates per I/O.
 */
public final class RdmaHostPollGroup implements HostPollGroup {
    private static final Logger LOG = LoggerFactory.getLogger(RdmaHostPollGroup.class);
    public static final int POLL_BATCH = 32;

    private final CompletionWaiter waiter;
    private final WorkCompletions completions = new WorkCompletions(POLL_BATCH);
    private final ConcurrentLinkedQueue<Runnable> tasks = new ConcurrentLinkedQueue<>();
    private RdmaHostQueue[] queues = new RdmaHostQueue[8];
    private int queueCount;
    private RdmaHostQueue[] flushList = new RdmaHostQueue[8];
    private int flushCount;
    private volatile Thread thread;
    private volatile boolean closed;
    /** The device resources (JNI) or, in unit tests, null; closed after the queues. */
    volatile AutoCloseable resources;

    RdmaHostPollGroup(CompletionWaiter waiter) {
        this.waiter = waiter;
    }

    CompletionWaiter waiter() {
        return waiter;
    }

    @Override
    public int poll() {
        bindThread();
        int work = 0;
        if (!tasks.isEmpty()) {
            work += runTasks();
        }
        work += pollQueues();
        return work + flush();
    }

    /**
     * Posts the capsules submitted on this thread since the last flush, one chained post per queue. {@link #poll()}
     * ends with it; a caller that submits outside a poll and wants the commands out at once calls it.
     */
    public int flush() {
        int n = flushCount;
        int work = 0;
        for (int i = 0; i < n; i++) {
            RdmaHostQueue q = flushList[i];
            flushList[i] = null;
            work += q.flushSends();
        }
        // Queues that asked again during the loop (a failed post closing a queue does not) were appended after n.
        int later = flushCount - n;
        System.arraycopy(flushList, n, flushList, 0, later);
        java.util.Arrays.fill(flushList, later, flushCount, null);
        flushCount = later;
        return work;
    }

    void requestFlush(RdmaHostQueue queue) {
        if (flushCount == flushList.length) {
            flushList = Arrays.copyOf(flushList, flushCount * 2);
        }
        flushList[flushCount++] = queue;
    }

    private int pollQueues() {
        int work = 0;
        for (int i = queueCount - 1; i >= 0; i--) {
            if (i < queueCount) {
                work += queues[i].poll(completions);
            }
        }
        return work;
    }

    @Override
    public void await(long timeoutNanos) {
        bindThread();
        if (!tasks.isEmpty() || flushCount > 0) {
            flush();
            return;
        }
        for (int i = 0; i < queueCount; i++) {
            queues[i].armNotification();
        }
        if (pollQueues() > 0 || timeoutNanos <= 0 || !tasks.isEmpty()) {
            flush();
            return;
        }
        waiter.await(timeoutNanos);
    }

    @Override
    public void wakeup() {
        waiter.wakeup();
    }

    @Override
    public void execute(Runnable task) {
        if (closed) {
            throw new IllegalStateException("NVMe/RDMA host poll group is closed");
        }
        tasks.add(task);
        waiter.wakeup();
    }

    @Override
    public boolean inPollGroupThread() {
        return thread == Thread.currentThread();
    }

    boolean isClosed() {
        return closed;
    }

    /** Queues polled now (a gauge). */
    public int queueCount() {
        return queueCount;
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        runTasks();
        flush();
        for (int i = queueCount - 1; i >= 0; i--) {
            if (i < queueCount) {
                queues[i].destroyNow();
            }
        }
        waiter.close();
        AutoCloseable r = resources;
        if (r != null) {
            try {
                r.close();
            } catch (Exception e) {
                LOG.warn("closing the NVMe/RDMA host poll group's device resources failed", e);
            }
        }
    }

    private void bindThread() {
        if (thread == null) {
            thread = Thread.currentThread();
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
                LOG.error("task on an NVMe/RDMA host poll group failed", e);
            }
        }
        return n;
    }

    void register(RdmaHostQueue queue) {
        if (queue.registered) {
            return;
        }
        if (queueCount == queues.length) {
            queues = Arrays.copyOf(queues, queueCount * 2);
        }
        queues[queueCount++] = queue;
        queue.registered = true;
    }

    void unregister(RdmaHostQueue queue) {
        for (int i = 0; i < queueCount; i++) {
            if (queues[i] == queue) {
                queues[i] = queues[--queueCount];
                queues[queueCount] = null;
                queue.registered = false;
                return;
            }
        }
    }

    @Override
    public String toString() {
        return "RdmaHostPollGroup[queues=" + queueCount + "]";
    }
}
