package io.nvmeof4j.rdma.host;

import io.nvmeof4j.protocol.spi.host.HostPollGroup;
import io.nvmeof4j.protocol.spi.transport.FlushList;
import io.nvmeof4j.protocol.spi.transport.PollGroupCore;
import io.nvmeof4j.protocol.spi.transport.RoundClock;
import io.nvmeof4j.rdma.CompletionWaiter;
import io.nvmeof4j.rdma.PolledQueues;
import io.nvmeof4j.rdma.WorkCompletions;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;


/**
 * The NVMe/RDMA host share of one host reactor thread: its queues (each with its own completion queue, reporting
 * to the group's completion channel on the queue's device), and the long-lived registered memory they move data
 * through ({@link HostMemory}, made once per device, when the group first connects through it). {@link #poll()} runs control tasks and
 * polls every queue's completion queue into one preallocated batch, which runs the completion callbacks.
 * {@link #await} arms the completion queues, polls once more, and blocks on the completion channels.
 * Nothing allocates per I/O.
 */
public final class RdmaHostPollGroup implements HostPollGroup {
    private static final Logger LOG = LoggerFactory.getLogger(RdmaHostPollGroup.class);
    public static final int POLL_BATCH = 32;

    private final CompletionWaiter waiter;
    private final WorkCompletions completions = new WorkCompletions(POLL_BATCH);
    private final PollGroupCore core;
    private final PolledQueues<RdmaHostQueue> queues = new PolledQueues<>();
    private final FlushList<RdmaHostQueue> flushList = new FlushList<>(8);
    /** The device resources (JNI) or, in unit tests, null; closed after the queues. */
    volatile AutoCloseable resources;

    RdmaHostPollGroup(CompletionWaiter waiter) {
        this.waiter = waiter;
        this.core = new PollGroupCore("NVMe/RDMA host poll group", waiter::wakeup);
    }

    CompletionWaiter waiter() {
        return waiter;
    }

    @Override
    public int poll() {
        int work = core.beginPoll();
        work += pollQueues();
        return work + flush();
    }

    /**
     * Posts the receives reposted and the capsules submitted on this thread since the last flush, one JNI crossing
     * per queue (receives, then capsules). {@link #poll()} ends with it; a caller that submits outside a poll and
     * wants the commands out at once calls it.
     */
    public int flush() {
        int n = flushList.size();
        int work = 0;
        for (int i = 0; i < n; i++) {
            work += flushList.take(i).flush();
        }
        // Queues that asked again during the loop (a failed post closing a queue does not) were appended after n.
        flushList.keepAfter(n);
        return work;
    }

    void requestFlush(RdmaHostQueue queue) {
        flushList.add(queue);
    }

    private int pollQueues() {
        core.clock().beginRound(); // also the poll after arming, in await: a round of its own
        return queues.pollAll(completions);
    }

    @Override
    public void await(long timeoutNanos) {
        core.beginWait(); // then the volatile reads below: pairs with execute (PollGroupCore)
        try {
            if (core.hasTasks() || flushList.size() > 0) {
                flush();
                return;
            }
            queues.armAll();
            if (pollQueues() > 0 || timeoutNanos <= 0 || core.hasTasks()) {
                flush();
                return;
            }
            waiter.await(timeoutNanos);
        } finally {
            core.endWait();
        }
    }

    @Override
    public void wakeup() {
        waiter.wakeup();
    }

    @Override
    public void execute(Runnable task) {
        if (core.isClosed()) {
            throw new IllegalStateException("NVMe/RDMA host poll group is closed");
        }
        core.execute(task);
    }

    @Override
    public RoundClock clock() {
        return core.clock();
    }

    @Override
    public boolean inPollGroupThread() {
        return core.inReactorThread();
    }

    boolean isClosed() {
        return core.isClosed();
    }

    /** Queues polled now (a gauge). */
    public int queueCount() {
        return queues.size();
    }

    @Override
    public void close() {
        if (!core.markClosed()) {
            return;
        }
        core.runTasks();
        flush();
        for (int i = queues.size() - 1; i >= 0; i--) {
            if (i < queues.size()) {
                queues.get(i).destroyNow();
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

    void register(RdmaHostQueue queue) {
        if (queue.registered) {
            return;
        }
        queues.add(queue);
        queue.registered = true;
    }

    void unregister(RdmaHostQueue queue) {
        if (queues.remove(queue)) {
            queue.registered = false;
        }
    }

    @Override
    public String toString() {
        return "RdmaHostPollGroup[queues=" + queues.size() + "]";
    }
}
