package io.nvmeof4j.target.controller;

import io.nvmeof4j.protocol.HostId;
import io.nvmeof4j.protocol.command.NvmeStatus;
import io.nvmeof4j.protocol.spi.JvmOptions;
import io.nvmeof4j.protocol.spi.Request;
import io.nvmeof4j.target.io.NvmCommands;
import io.nvmeof4j.target.model.Namespace;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicIntegerArray;

/**
 * The "abort" of a Reservation Acquire with RACQA 010b, Preempt and Abort (NVMe Base 2.0, 7.2 and 8.19.8): once the
 * preemption is applied (and persisted), the Acquire completes only when no command of the preempted hosts'
 * controllers that was admitted on the namespace before it is left in the target or the backend. A command already
 * handed to the device (an io_uring write submitted) cannot be recalled, so, like nvmet ({@code nvmet_pr_do_abort}:
 * "the target does not support abort", it waits for per-controller references) and SPDK (it counts the preempted
 * hosts' outstanding requests per poll group), those are waited for; those still waiting inside the target for a
 * resource (a namespace's QoS budget, an io_uring slot) end with Command Aborted due to Preempt and Abort (0x1B) and
 * never reach the device.
 *
 * <h2>How, without a lock on the data path</h2>
 * Each I/O queue counts the commands it admitted (past the reservation check) until they complete, in two halves
 * ({@link ControllerQueueHandler#beginDrain}). For every I/O queue of every controller of a preempted host, a barrier
 * task runs on that queue's reactor after the preemption: commands it admitted before the barrier could have passed the
 * old reservation and are all counted in the current half; every command it admits after the barrier sees the new
 * reservation (the state was published before the task was queued). The barrier ends the queue's waiting commands on
 * the namespace, switches new commands to the other half and hands back the half to wait for. A timer then reads the
 * counters every {@value #POLL_PERIOD_MILLIS} ms (SPDK checks every 100 µs) until each is zero, and completes the
 * Acquire: no reactor ever waits. The counters are per queue, not per namespace: a preempted controller's commands on
 * another namespace admitted before the barrier are waited for too (bounded by the same device latency), which spares
 * the data path a namespace lookup.
 *
 * <h2>Bound</h2>
 * The wait is bounded by {@value #TIMEOUT_PROP_NAME} (default {@value #TIMEOUT_MILLIS_DEFAULT} ms, SPDK's
 * {@code NS_RESERVATION_IO_WAIT_TIMEOUT_S}). Past it the Acquire completes with Command Interrupted (0x21, no DNR), as
 * SPDK answers, and the preemption stands: the host knows the fence may not be complete and can retry or wait. nvmet
 * waits without a bound. A preempted queue that closes meanwhile still drains: its commands in the backend complete and
 * are counted off; a queue whose reactor has stopped runs nothing more and counts as drained.
 */
public final class PreemptAndAbort implements Runnable {
    private static final Logger LOG = LoggerFactory.getLogger(PreemptAndAbort.class);

    /** System property: how long an Acquire waits for the preempted hosts' commands, in milliseconds. */
    public static final String TIMEOUT_PROP_NAME = "nvmeof4j.reservation.preempt_abort_timeout_ms";
    static final long TIMEOUT_MILLIS_DEFAULT = 10_000;
    /** Largest {@value #TIMEOUT_PROP_NAME}: an hour, far past a host's I/O timeout (Linux: 30 s). */
    static final long TIMEOUT_MILLIS_MAX = 3_600_000;
    /** How often the timer looks at the counters. */
    static final long POLL_PERIOD_MILLIS = 1;

    /** Queue states; a value of 0 or 1 is the half being waited for. */
    private static final int RETRY = -1;
    private static final int PENDING = -2;
    private static final int DRAINED = -3;

    private final Controller issuer;
    private final Request acquire;
    private final Namespace namespace;
    private final ControllerQueueHandler[] queues;
    private final AtomicIntegerArray states;
    /** Whether a queue's barrier ran once: only the first run ends waiting commands (later ones are the host's new). */
    private final AtomicIntegerArray barrierRan;
    private final long startNanos = System.nanoTime();
    private final long timeoutMillis;
    private final AtomicBoolean finished = new AtomicBoolean();
    private final AtomicInteger aborted = new AtomicInteger();
    private volatile ScheduledFuture<?> timer;

    private PreemptAndAbort(Controller issuer, Request acquire, Namespace namespace, List<ControllerQueueHandler> queues,
                            long timeoutMillis) {
        this.issuer = issuer;
        this.acquire = acquire;
        this.namespace = namespace;
        this.queues = queues.toArray(new ControllerQueueHandler[0]);
        this.states = new AtomicIntegerArray(this.queues.length);
        this.barrierRan = new AtomicIntegerArray(this.queues.length);
        this.timeoutMillis = timeoutMillis;
    }

    /** {@value #TIMEOUT_PROP_NAME} (1..{@value #TIMEOUT_MILLIS_MAX}), else {@value #TIMEOUT_MILLIS_DEFAULT}. */
    public static long timeoutMillis() {
        return JvmOptions.longOption(TIMEOUT_PROP_NAME, TIMEOUT_MILLIS_DEFAULT, 1, TIMEOUT_MILLIS_MAX);
    }

    /**
     * Drains the I/O queues of every controller of the {@code preempted} hosts on the issuer's subsystem, then
     * completes {@code acquire} (SUCCESS, or Command Interrupted past the bound). Returns at once; the issuer's
     * reactor goes on.
     */
    static void start(Controller issuer, Request acquire, Namespace namespace, List<HostId> preempted) {
        List<ControllerQueueHandler> queues = new ArrayList<>();
        for (Controller other : issuer.registry().controllers(issuer.subsystemNqn())) {
            if (preempted.contains(other.hostId())) {
                queues.addAll(other.ioQueueHandlers());
            }
        }
        new PreemptAndAbort(issuer, acquire, namespace, queues, timeoutMillis()).begin();
    }

    private void begin() {
        for (int i = 0; i < queues.length; i++) {
            post(i);
        }
        run(); // the barriers may have run already (nothing in flight: the common case answers at once)
        if (finished.get()) {
            return;
        }
        ScheduledFuture<?> t = issuer.registry().scheduleAtFixedRate(this, POLL_PERIOD_MILLIS);
        if (t == null) {
            // The registry's timer is gone: the target is shutting down and ends every command anyway.
            finish(NvmeStatus.COMMAND_INTERRUPTED, "the target is shutting down");
            return;
        }
        timer = t;
        if (finished.get()) {
            t.cancel(false);
        }
    }

    /** Queues queue {@code i}'s barrier on its reactor. */
    private void post(int i) {
        states.set(i, PENDING);
        try {
            queues[i].queue().execute(() -> barrier(i));
        } catch (RuntimeException e) {
            // The queue's reactor has stopped: nothing is admitted or completed there any more.
            LOG.debug("preempt and abort: {} not drained, its reactor is gone: {}", queues[i], e.toString());
            states.set(i, DRAINED);
        }
    }

    /** On queue {@code i}'s reactor thread. */
    private void barrier(int i) {
        ControllerQueueHandler q = queues[i];
        if (barrierRan.getAndSet(i, 1) == 0) {
            aborted.addAndGet(NvmCommands.abortWaiting(q.queue(), namespace, NvmeStatus.ABORTED_PREEMPT_AND_ABORT));
        }
        int half = q.beginDrain();
        states.set(i, half >= 0 ? half : RETRY);
    }

    /** The timer's check (and the first one, on the issuer's reactor). */
    @Override
    public void run() {
        if (finished.get()) {
            return;
        }
        boolean drained = true;
        for (int i = 0; i < queues.length; i++) {
            int state = states.get(i);
            if (state == DRAINED) {
                continue;
            }
            ControllerQueueHandler q = queues[i];
            if (state >= 0 && q.admittedInFlight(state) == 0) {
                states.set(i, DRAINED);
                continue;
            }
            if (state == PENDING && q.isClosed() && q.admittedInFlight() == 0) {
                states.set(i, DRAINED); // closed with nothing in flight: its barrier has nothing left to guard
                continue;
            }
            drained = false;
            if (state == RETRY) {
                post(i); // an earlier drain's half has emptied or will: ask the reactor again
            }
        }
        if (drained) {
            finish(NvmeStatus.SUCCESS, null);
        } else if (System.nanoTime() - startNanos > TimeUnit.MILLISECONDS.toNanos(timeoutMillis)) {
            finish(NvmeStatus.COMMAND_INTERRUPTED, "commands still in flight after " + timeoutMillis + " ms: "
                + stillDraining());
        }
    }

    private String stillDraining() {
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < queues.length; i++) {
            int state = states.get(i);
            if (state != DRAINED) {
                if (b.length() > 0) {
                    b.append(", ");
                }
                ControllerQueueHandler q = queues[i];
                b.append(q).append(" (").append(state >= 0 ? q.admittedInFlight(state) : q.admittedInFlight())
                    .append(state == PENDING ? " in flight, barrier not run yet)" : " in flight)");
            }
        }
        return b.toString();
    }

    private void finish(int status, String why) {
        if (!finished.compareAndSet(false, true)) {
            return;
        }
        ScheduledFuture<?> t = timer;
        if (t != null) {
            t.cancel(false);
        }
        long millis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - startNanos);
        if (status == NvmeStatus.SUCCESS) {
            LOG.debug("preempt and abort on {} of {} by {}: {} queue(s) drained in {} ms, {} waiting command(s) aborted",
                namespace, issuer.subsystemNqn(), acquire.queue().peer(), queues.length, millis, aborted.get());
        } else {
            LOG.warn("preempt and abort on {} of {} by {} (host {}): {}; the preemption stands, the Acquire completes "
                    + "with Command Interrupted ({} waiting command(s) were aborted)", namespace,
                issuer.subsystemNqn(), acquire.queue().peer(), issuer.hostId(), why, aborted.get());
        }
        acquire.complete(status);
    }
}
