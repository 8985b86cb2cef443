package io.nvmeof4j.rdma;

import io.nvmeof4j.protocol.buffer.OffHeapBufferPool;
import io.nvmeof4j.protocol.spi.JvmOptions;
import io.nvmeof4j.protocol.spi.PollGroup;
import io.nvmeof4j.protocol.spi.reactor.WakesSelector;
import io.nvmeof4j.protocol.spi.transport.BufferWaitQueue;
import io.nvmeof4j.protocol.spi.transport.CompletionInbox;
import io.nvmeof4j.protocol.spi.transport.PollGroupCore;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.nio.ByteBuffer;
import java.nio.channels.Selector;
import java.util.ArrayList;
import java.util.List;

/**
 * The NVMe/RDMA share of one reactor (SPDK's RDMA poll group): the queues it owns, each with its own completion
 * queue, all reporting to one completion channel; the reactor's buffer pool, whose region was registered with the
 * device's protection domain once, when this group was created.
 * <p>{@link #poll()} runs control tasks, polls every queue's completion queue into one preallocated
 * {@link WorkCompletions} batch, finishes completions other threads handed over, and gives waiting commands pool
 * buffers as they come back. Nothing allocates per I/O. {@link #await} arms every completion queue, polls once
 * more (a completion may have slipped in before arming), then blocks on the completion channel;
 * {@link #wakeup()} interrupts it. On a reactor that also serves NVMe/TCP the reactor blocks in that group's selector
 * instead ({@link WakesSelector}): the completion channels join the selector's epoll set, and {@link #armWakeup()}
 * does what {@code await} does before blocking, then lets the reactor select.
 * <p>Control tasks, the reactor binding and the wake-up flag are the shared {@link PollGroupCore}; completions from
 * other threads arrive through a {@link CompletionInbox}; commands waiting for pool buffers wait in a
 * {@link BufferWaitQueue}, as in the NVMe/TCP poll group.
 */
public final class RdmaPollGroup implements PollGroup, WakesSelector {
    private static final Logger LOG = LoggerFactory.getLogger(RdmaPollGroup.class);
    /** Work completions taken from a completion queue per poll call. */
    static final int POLL_BATCH = 32;
    /**
     * System property: false keeps the completion channels out of the reactor's NVMe/TCP selector (a reactor serving
     * both then blocks 1 ms at a time: the behaviour before issue 17 item 3), for before/after comparisons.
     */
    public static final String WAKE_SELECTOR_PROP_NAME = "nvmeof4j.rdma.wake_selector";

    private final OffHeapBufferPool pool;
    private final CompletionWaiter waiter;
    /** Released when the group closes, after its queues (the pool region's registrations, the devices' resources). */
    private final AutoCloseable resources;
    private final WorkCompletions completions = new WorkCompletions(POLL_BATCH);
    private final PollGroupCore core;
    private final CompletionInbox<RdmaRequest> inbox = new CompletionInbox<>();
    private final BufferWaitQueue<RdmaRequest> bufferWaits;

    private final PolledQueues<RdmaControllerQueue> queues = new PolledQueues<>();
    /**
     * Queues accepted by the CM but not established yet: not polled (no response may be posted before the queue pair
     * is in RTS), but owned, so that closing the group destroys them too.
     */
    private final List<RdmaControllerQueue> accepted = new ArrayList<>();

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
        this.core = new PollGroupCore("NVMe/RDMA poll group", waiter::wakeup);
        this.bufferWaits = new BufferWaitQueue<>(pool);
    }

    public OffHeapBufferPool pool() {
        return pool;
    }

    CompletionWaiter waiter() {
        return waiter;
    }

    /** Queues polled by this group (a gauge). */
    public int queueCount() {
        return queues.size();
    }

    /** Queues accepted and not established yet (reactor thread, for tests). */
    int acceptedCount() {
        return accepted.size();
    }

    boolean inReactorThread() {
        return core.inReactorThread();
    }

    boolean isClosed() {
        return core.isClosed();
    }

    // ---- PollGroup ---------------------------------------------------------------------------------------------

    @Override
    public int poll() {
        int work = core.beginPoll();
        work += pollQueues();
        work += inbox.drain();
        if (!bufferWaits.isEmpty()) {
            work += bufferWaits.grant();
        }
        flushQueues();
        return work;
    }

    /** One crossing per queue for everything its commands staged this round: receives, then sends. */
    private void flushQueues() {
        for (int i = queues.size() - 1; i >= 0; i--) {
            if (i < queues.size()) {
                queues.get(i).flush();
            }
        }
    }

    private int pollQueues() {
        core.clock().beginRound();
        return queues.pollAll(completions);
    }

    /**
     * The stamp of the current polling of the queues, read when its first completion needs it: every capsule it
     * takes arrived before it, every response SEND it reaps completed before it, so one read serves a command's
     * start and another command's end (a SEND is posted after the poll that took its capsule, so it is reaped by a
     * later one, with a later stamp). Reactor thread, during a poll.
     */
    long pollNanos() {
        return core.clock().now();
    }

    @Override
    public void await(long timeoutNanos) {
        core.beginWait(); // then the volatile reads below: pairs with enqueueCompletion (PollGroupCore)
        try {
            if (readyToBlock() && timeoutNanos > 0) {
                waiter.await(timeoutNanos);
            }
        } finally {
            core.endWait();
        }
    }

    /**
     * After the sleeping flag is up: false when work is waiting (handed over, or completed before the queues were
     * armed: then polled here); true when every completion queue is armed and nothing is there.
     */
    private boolean readyToBlock() {
        if (!inbox.isEmpty() || core.hasTasks()) {
            return false;
        }
        flushQueues();
        queues.armAll();
        if (pollQueues() > 0) {
            flushQueues();
            return false;
        }
        return true;
    }

    // ---- WakesSelector: blocking in the reactor's NVMe/TCP selector ----------------------------------------------

    @Override
    public boolean wakeSelector(Selector selector) {
        return !core.isClosed() && wakeSelectorFromProperty() && waiter.joinSelector(selector);
    }

    /** {@value #WAKE_SELECTOR_PROP_NAME}, else true. */
    public static boolean wakeSelectorFromProperty() {
        return JvmOptions.booleanOption(WAKE_SELECTOR_PROP_NAME, true);
    }

    @Override
    public boolean wakes(Selector selector) {
        return selector != null && waiter.joinedSelector() == selector;
    }

    /** What {@link #await} does before it blocks, the block being the reactor's select. */
    @Override
    public boolean armWakeup() {
        waiter.enterSelect(); // wake-ups to the selector, pending events taken (their joins re-armed)
        core.beginWait();
        return readyToBlock();
    }

    @Override
    public void disarmWakeup() {
        core.endWait();
        waiter.leaveSelect();
    }

    @Override
    public void wakeup() {
        waiter.wakeup();
    }

    @Override
    public void close() {
        if (!core.markClosed()) {
            return;
        }
        core.runTasks();
        flushQueues();
        for (int i = queues.size() - 1; i >= 0; i--) {
            if (i < queues.size()) {
                queues.get(i).finishClose();
            }
        }
        for (RdmaControllerQueue queue : new ArrayList<>(accepted)) {
            queue.finishClose();
        }
        inbox.drain();
        bufferWaits.dropAll();
        waiter.close();
        if (resources != null) {
            try {
                resources.close();
            } catch (Exception e) {
                LOG.warn("closing the RDMA poll group's device resources failed", e);
            }
        }
    }

    // ---- hand-over from other threads ----------------------------------------------------------------------------

    /** Any thread: runs {@code task} on the reactor thread during a coming {@link #poll()}. */
    public void execute(Runnable task) {
        core.execute(task);
    }

    /** Any thread other than the reactor: a command completed; the reactor finishes it. */
    void enqueueCompletion(RdmaRequest request) {
        inbox.push(request);
        core.wakeIfSleeping();
    }

    // ---- queues --------------------------------------------------------------------------------------------------

    /** Any thread (the CM thread, once it accepted the queue): the group owns the queue from now on. */
    void adopt(RdmaControllerQueue queue) {
        execute(() -> accepted.add(queue));
    }

    void register(RdmaControllerQueue queue) {
        accepted.remove(queue);
        if (queue.registeredInGroup) {
            return;
        }
        queues.add(queue);
        queue.registeredInGroup = true;
    }

    void unregister(RdmaControllerQueue queue) {
        accepted.remove(queue);
        if (queues.remove(queue)) {
            queue.registeredInGroup = false;
        }
    }

    /** Queues currently polled, for tests. */
    List<RdmaControllerQueue> queues() {
        List<RdmaControllerQueue> list = new ArrayList<>();
        for (int i = 0; i < queues.size(); i++) {
            list.add(queues.get(i));
        }
        return list;
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

    /** The pool and the commands waiting for it (reactor thread). */
    BufferWaitQueue<RdmaRequest> buffers() {
        return bufferWaits;
    }

    /** Commands that found the data-buffer pool dry (or others waiting) and waited for a buffer. Any thread. */
    public long bufferWaits() {
        return bufferWaits.waits();
    }

    @Override
    public String toString() {
        return "RdmaPollGroup[queues=" + queues.size() + "]";
    }
}
