package io.nvmeof4j.target.backend;

import io.nvmeof4j.protocol.spi.PollGroup;
import io.nvmeof4j.target.reactor.InFlightAware;
import io.nvmeof4j.target.reactor.Reactor;

import java.util.Arrays;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Predicate;

/**
 * One reactor's I/Os waiting for a namespace's QoS budget ({@link QosBudget}): a {@link BlockIoFifo} per namespace
 * (SPDK: a channel's {@code qos_queued_io}), so a throttled namespace never holds up another one's I/O. The reactor
 * polls it in its loop: each poll gives every namespace's oldest waiting I/Os whatever budget the current timeslice
 * has, in order, and submits them to their device. While I/O waits, an idle reactor sleeps here at most until the
 * next timeslice ({@link InFlightAware}), never on its selector's 100 ms.
 * <p>Waiting allocates nothing: the queues are linked through the preallocated {@link BlockIo}s; a namespace's queue
 * is made the first time one of its I/Os waits on this reactor. Each wait is counted ({@link #waits()}, the metric
 * {@code nvmeof.target.resource.waits{resource="qos"}}). Reactor thread only.
 */
public final class QosWaits implements PollGroup, InFlightAware {
    private final String name;
    private BlockIoFifo[] queues = new BlockIoFifo[4];
    private QosBudget[] budgets = new QosBudget[4];
    private int waiting;
    private boolean closed;
    /** Written by the reactor only; read by the metrics scrape. */
    private volatile long waits;
    /** The reactor thread this group belongs to, once known. */
    private volatile Thread owner;

    public QosWaits(String name) {
        this.name = name;
    }

    /** The calling reactor's, or null off a reactor thread. */
    static QosWaits current() {
        Reactor reactor = Reactor.current();
        return reactor == null ? null : reactor.pollGroup(QosWaits.class);
    }

    /** These waits are {@code reactorThread}'s (found through that thread's reactor); the first caller tells. */
    void ownedBy(Thread reactorThread) {
        if (owner == null) {
            owner = reactorThread;
        }
    }

    /**
     * The calling reactor's, as bound to {@code io} when its queue connected there ({@link ReactorBackends}; a queue
     * slot stays on its reactor: no lookup per I/O, as {@link BdevChannels#bound}), else looked up and bound now; null
     * off the reactors.
     */
    static QosWaits bound(BlockIo io) {
        QosWaits qos = io.boundQos;
        if (qos != null && qos.owner == Thread.currentThread()) {
            return qos;
        }
        qos = current();
        io.boundQos = qos;
        if (qos != null) {
            qos.ownedBy(Thread.currentThread()); // current() found it through this thread's reactor
        }
        return qos;
    }

    /** I/Os that waited for a QoS budget on this reactor, since start. Any thread. */
    public long waits() {
        return waits;
    }

    /** I/Os waiting now. Reactor thread (tests). */
    int waiting() {
        return waiting;
    }

    /** Submits {@code io} now when the namespace has nothing waiting here and its budget allows; else queues it. */
    void submit(QosBudget budget, BlockIo io, BlockDevice device) {
        int id = budget.id();
        BlockIoFifo queue = id < queues.length ? queues[id] : null;
        if ((queue == null || queue.isEmpty()) && budget.tryTake(io)) {
            device.submit(io);
            return;
        }
        if (closed) {
            io.complete(DeviceSupport.STATUS_CLOSED);
            return;
        }
        if (queue == null) {
            queue = queue(budget);
        }
        io.qosDevice = device;
        queue.add(io);
        waiting++;
        waits = waits + 1; // the reactor is the only writer
        budget.countWait();
    }

    /** The namespace's queue on this reactor, made once (allocates once per namespace and reactor). */
    private BlockIoFifo queue(QosBudget budget) {
        int id = budget.id();
        if (id >= queues.length) {
            int length = Math.max(id + 1, queues.length * 2);
            queues = Arrays.copyOf(queues, length);
            budgets = Arrays.copyOf(budgets, length);
        }
        queues[id] = new BlockIoFifo();
        budgets[id] = budget;
        return queues[id];
    }

    /**
     * Completes the I/Os waiting here that {@code which} selects with {@code status}, keeping the others in order
     * (Preempt and Abort: the preempted hosts' commands end before they reach the device). Returns how many.
     * Reactor thread.
     */
    public int abortWaiting(Predicate<BlockIo> which, int status) {
        if (waiting == 0) {
            return 0;
        }
        int n = 0;
        for (int id = 0; id < queues.length; id++) {
            BlockIoFifo queue = queues[id];
            if (queue == null || queue.isEmpty()) {
                continue;
            }
            BlockIo chain = queue.removeAll(which);
            for (BlockIo io = chain; io != null; io = io.waitingNext) {
                waiting--;
                budgets[id].waitEnded();
                n++;
            }
            BlockIoFifo.completeAll(chain, status);
        }
        return n;
    }

    @Override
    public int poll() {
        if (waiting == 0) {
            return 0;
        }
        int n = 0;
        for (int id = 0; id < queues.length && waiting > 0; id++) {
            BlockIoFifo queue = queues[id];
            if (queue == null) {
                continue;
            }
            QosBudget budget = budgets[id];
            BlockIo io;
            while ((io = queue.peek()) != null && budget.tryTake(io)) {
                queue.poll();
                waiting--;
                budget.waitEnded();
                n++;
                BlockDevice device = io.qosDevice;
                io.qosDevice = null;
                device.submit(io); // may complete inline and queue the command's next step: the loop sees it
            }
        }
        return n;
    }

    @Override
    public boolean hasInFlight() {
        return waiting > 0;
    }

    /** Sleeps until the earliest waiting namespace's next timeslice, at most {@code timeoutNanos}. */
    @Override
    public void await(long timeoutNanos) {
        long sleep = timeoutNanos;
        for (int id = 0; id < queues.length; id++) {
            if (queues[id] != null && !queues[id].isEmpty()) {
                sleep = Math.min(sleep, budgets[id].nanosToNextSlice());
            }
        }
        if (sleep > 0) {
            LockSupport.parkNanos(sleep);
        }
    }

    /** The reactor bounds the wait instead (the same as a ring wait). */
    @Override
    public void wakeup() {
    }

    /** Completes what still waits with Namespace Not Ready: the reactor is stopping. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        for (int id = 0; id < queues.length; id++) {
            BlockIoFifo queue = queues[id];
            if (queue != null) {
                BlockIo chain = queue.removeAll(null);
                for (BlockIo io = chain; io != null; io = io.waitingNext) {
                    waiting--;
                    budgets[id].waitEnded();
                }
                BlockIoFifo.completeAll(chain, DeviceSupport.STATUS_CLOSED);
            }
        }
    }

    @Override
    public String toString() {
        return name;
    }
}
