package io.nvmeof4j.target.controller;

import io.nvmeof4j.target.auth.HostKeys;
import io.nvmeof4j.tcp.tls.HostPskStore;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.Collections;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

/**
 * Every live controller of the target: controller-id allocation, lookup for I/O-queue Connects, namespace and
 * discovery change events, the keep-alive timer, and the orderly shutdown the daemon runs on SIGTERM.
 * <p>One registry serves all ports and all subsystems. CNTLIDs are unique across the whole target (as with the
 * Linux target's single id allocator), hence also unique per subsystem; they are handed out round-robin in
 * 1..0xFFEF so a host reconnecting with a stale CNTLID does not land on a new controller at once.
 * <p>Thread-safe. The keep-alive timer is one daemon thread owned here.
 */
public final class ControllerRegistry implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(ControllerRegistry.class);

    /** Default limit of I/O queues per controller (the Linux target's default {@code attr_qid_max}). */
    public static final int MAX_IO_QUEUES_DEFAULT = 128;
    public static final int CNTLID_MIN = 1;
    /** Highest CNTLID of the dynamic controller model (0xFFF0 and above are reserved). */
    public static final int CNTLID_MAX = 0xFFEF;
    public static final Duration SHUTDOWN_TIMEOUT_DEFAULT = Duration.ofSeconds(5);

    private final HostKeys hostKeys = new HostKeys();
    /** The TLS PSKs, where secure channel concatenation keeps the generated ones; null: no TLS (tests). */
    private volatile HostPskStore tlsKeys;
    private final int maxIoQueues;
    private final ScheduledThreadPoolExecutor timer;
    private final Map<Integer, Controller> controllers = new ConcurrentHashMap<>();
    private final BitSet usedCntlids = new BitSet(CNTLID_MAX + 1);
    private int nextCntlid = CNTLID_MIN;
    private volatile boolean accepting = true;
    private final String discoverySerialNumber = randomSerialNumber();

    public ControllerRegistry() {
        this(MAX_IO_QUEUES_DEFAULT);
    }

    /** @param maxIoQueues I/O queues a controller may have at most (1..65535): Set Features 07h grants no more */
    public ControllerRegistry(int maxIoQueues) {
        if (maxIoQueues < 1 || maxIoQueues > 0xFFFF) {
            throw new IllegalArgumentException("max I/O queues " + maxIoQueues + " outside 1..65535");
        }
        this.maxIoQueues = maxIoQueues;
        this.timer = new ScheduledThreadPoolExecutor(1, r -> {
            // Created at the first schedule, a Connect on a reactor thread: off its pinned CPU first.
            Thread t = new Thread(io.nvmeof4j.jni.cpu.ReactorPinning.housekeeping(r), "nvmeof-keep-alive");
            t.setDaemon(true);
            return t;
        });
        timer.setRemoveOnCancelPolicy(true);
        timer.setExecuteExistingDelayedTasksAfterShutdownPolicy(false);
    }

    public int maxIoQueues() {
        return maxIoQueues;
    }

    /** Serial number the discovery controllers report: random per target run, as with the Linux target. */
    public String discoverySerialNumber() {
        return discoverySerialNumber;
    }

    private static String randomSerialNumber() {
        byte[] bytes = new byte[10];
        new java.security.SecureRandom().nextBytes(bytes);
        StringBuilder sb = new StringBuilder(20);
        for (byte b : bytes) {
            sb.append(String.format("%02x", b & 0xFF));
        }
        return sb.toString();
    }

    /** False once {@link #shutdown} started: Connects are then answered Controller Busy. */
    public boolean isAcceptingConnects() {
        return accepting;
    }

    /** Live controllers ordered by CNTLID (a snapshot). */
    public List<Controller> controllers() {
        List<Controller> list = new ArrayList<>(controllers.values());
        list.sort(Comparator.comparingInt(Controller::cntlid));
        return Collections.unmodifiableList(list);
    }

    /** Live controllers of one subsystem (or of discovery, for the discovery NQN). */
    public List<Controller> controllers(String subsystemNqn) {
        List<Controller> list = new ArrayList<>();
        for (Controller c : controllers.values()) {
            if (c.subsystemNqn().equals(subsystemNqn)) {
                list.add(c);
            }
        }
        list.sort(Comparator.comparingInt(Controller::cntlid));
        return Collections.unmodifiableList(list);
    }

    /** The live controller with this id, or null. */
    public Controller controller(int cntlid) {
        return controllers.get(cntlid);
    }

    /** The live controller with this id serving {@code subsystemNqn}, or null (I/O-queue Connect). */
    Controller find(String subsystemNqn, int cntlid) {
        Controller c = controllers.get(cntlid);
        return c != null && c.subsystemNqn().equals(subsystemNqn) ? c : null;
    }

    /**
     * Tells every controller of the subsystem that namespace {@code nsid} was added, removed or changed: each
     * records it in its Changed Namespace List log and, when the host enabled namespace attribute notices,
     * completes an Asynchronous Event Request. For the management API.
     */
    public void notifyNamespaceChanged(String subsystemNqn, int nsid) {
        for (Controller c : controllers.values()) {
            if (!c.isDiscovery() && c.subsystemNqn().equals(subsystemNqn)) {
                c.notifyNamespaceChanged(nsid);
            }
        }
    }

    /**
     * Tells every discovery controller that the discovery log changed (ports, subsystems, allowed hosts): those
     * whose host enabled discovery log change notices get an event (notice F0h, log 70h).
     */
    public void notifyDiscoveryChanged() {
        for (Controller c : controllers.values()) {
            if (c.isDiscovery()) {
                c.notifyDiscoveryChanged();
            }
        }
    }

    /** Allocates a CNTLID and registers the controller built for it; null when every id is taken. */
    Controller register(java.util.function.IntFunction<Controller> factory) {
        return register(CNTLID_MIN, CNTLID_MAX, factory);
    }

    /**
     * As {@link #register(java.util.function.IntFunction)} with the CNTLID taken from {@code [min, max]} (a
     * subsystem's {@code cntlid_min}/{@code cntlid_max}: two daemons serving one subsystem give it disjoint ranges so
     * the host never sees one CNTLID twice). Ids stay unique across the whole target; the next id is searched from
     * after the last one handed out, wrapping inside the range.
     */
    Controller register(int min, int max, java.util.function.IntFunction<Controller> factory) {
        int cntlid;
        synchronized (usedCntlids) {
            int from = nextCntlid < min || nextCntlid > max ? min : nextCntlid;
            cntlid = usedCntlids.nextClearBit(from);
            if (cntlid > max) {
                cntlid = usedCntlids.nextClearBit(min);
                if (cntlid > max) {
                    return null;
                }
            }
            usedCntlids.set(cntlid);
            nextCntlid = cntlid == CNTLID_MAX ? CNTLID_MIN : cntlid + 1;
        }
        Controller controller;
        try {
            controller = factory.apply(cntlid);
        } catch (RuntimeException | Error e) {
            release(cntlid);
            throw e;
        }
        controllers.put(cntlid, controller);
        return controller;
    }

    void unregister(Controller controller) {
        if (controllers.remove(controller.cntlid(), controller)) {
            release(controller.cntlid());
        }
        HostPskStore psks = tlsKeys;
        if (psks != null) {
            // A PSK that DH-HMAC-CHAP generated serves one association, as on nvmet (nvmet_destroy_auth).
            psks.releaseGenerated(controller);
        }
    }

    private void release(int cntlid) {
        synchronized (usedCntlids) {
            usedCntlids.clear(cntlid);
        }
    }

    /** The DH-HMAC-CHAP credentials hosts must prove (live; the daemon fills it from the configuration). */
    public HostKeys hostKeys() {
        return hostKeys;
    }

    /** The TLS PSK store of every TLS port, where generated PSKs (secure channel concatenation) go; may be null. */
    public HostPskStore tlsKeys() {
        return tlsKeys;
    }

    public void tlsKeys(HostPskStore store) {
        this.tlsKeys = store;
    }

    ScheduledFuture<?> schedule(Runnable task, long delayMillis) {
        if (timer.isShutdown()) {
            return null;
        }
        try {
            return timer.schedule(task, delayMillis, TimeUnit.MILLISECONDS);
        } catch (java.util.concurrent.RejectedExecutionException e) {
            return null;
        }
    }

    /** Runs {@code task} every {@code periodMillis} on the timer thread until cancelled; null once shut down. */
    ScheduledFuture<?> scheduleAtFixedRate(Runnable task, long periodMillis) {
        if (timer.isShutdown()) {
            return null;
        }
        try {
            return timer.scheduleAtFixedRate(task, periodMillis, periodMillis, TimeUnit.MILLISECONDS);
        } catch (java.util.concurrent.RejectedExecutionException e) {
            return null;
        }
    }

    /**
     * Orderly shutdown (SIGTERM): stops accepting Connects, ends the parked Asynchronous Event Requests and answers
     * new commands with Aborted – SQ Deletion, waits up to {@code timeout} until every command in flight (writes
     * still receiving their data included) is answered on the wire, then disconnects every queue of every
     * controller and stops the keep-alive timer.
     *
     * @return true when every queue drained within the timeout
     */
    public boolean shutdown(Duration timeout) {
        accepting = false;
        long deadline = System.nanoTime() + timeout.toNanos();
        List<Controller> all = new ArrayList<>(controllers.values());
        for (Controller c : all) {
            c.drain();
        }
        boolean drained = false;
        while (true) {
            long inFlight = 0;
            for (Controller c : all) {
                inFlight += c.inFlightCommands();
            }
            if (inFlight == 0) {
                drained = true;
                break;
            }
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                LOG.warn("shutdown: {} command(s) still in flight after {} ms; disconnecting anyway", inFlight,
                    timeout.toMillis());
                break;
            }
            try {
                Thread.sleep(Math.min(10, Math.max(1, TimeUnit.NANOSECONDS.toMillis(left))));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            }
        }
        // Controllers created while draining (a Connect racing the flag) go too.
        all = new ArrayList<>(controllers.values());
        for (Controller c : all) {
            c.destroy("target shutting down", false);
        }
        timer.shutdownNow();
        if (!all.isEmpty()) {
            LOG.info("shutdown: disconnected {} controller(s){}", all.size(), drained ? "" : " (not drained)");
        }
        return drained;
    }

    /** {@link #shutdown(Duration)} with {@link #SHUTDOWN_TIMEOUT_DEFAULT}. Idempotent. */
    @Override
    public void close() {
        shutdown(SHUTDOWN_TIMEOUT_DEFAULT);
    }
}
