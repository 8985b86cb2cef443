package io.nvmeof4j.jni.cpu;

import io.nvmeof4j.jni.Errno;
import io.nvmeof4j.jni.NativeIoException;

import java.io.IOException;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;

/**
 * SPDK's core mask done the JVM way, for the target's reactors ({@code nvmeof4j.reactor_cpus}) and perf's host
 * reactors ({@code --cpus}) alike: each reactor thread pins itself to its CPU when it starts ({@link #reactorBody}),
 * and every other thread of the process (JIT compilers, GC, the VM thread, HTTP, timers, blocking workers) is moved to
 * the housekeeping set: the CPUs the process was allowed at start less the reactor CPUs, where SPDK/DPDK put their
 * control threads. Measured why (docs/datapath.md, "Pinning"): under {@code taskset -c 0} for the whole JVM, a busy
 * reactor waited 1.7 s of 4.4 s on the run queue while a C2 compiler thread ran 1.3 s on its CPU.
 * <p>Threads created later inherit their creator's affinity (clone(2)): the JVM's own (compiler threads added on
 * demand, GC workers) are created by housekeeping threads, so they land there. A thread started from a reactor thread
 * would inherit the reactor's CPU: such threads run {@link #leaveReactorCpus()} first
 * ({@link #housekeeping(Runnable)}).
 * <p>One plan per process ({@link #start}); {@link #close()} gives every thread the CPUs the process started with.
 */
public final class ReactorPinning implements AutoCloseable {
    /** Sweeps of /proc/self/task at start: a pass that finds no thread it has not seen ends it. */
    private static final int MAX_SWEEPS = 10;
    private static volatile ReactorPinning active;

    private final int[] cpus;
    private final CpuSet reactorCpus;
    private final CpuSet allowed;
    private final CpuSet housekeeping;
    private final boolean shared;
    private final Set<Integer> reactorTids = ConcurrentHashMap.newKeySet();
    private final ConcurrentLinkedQueue<String> pinned = new ConcurrentLinkedQueue<>();
    private final ConcurrentLinkedQueue<NativeIoException> failures = new ConcurrentLinkedQueue<>();
    private final Semaphore pinResults = new Semaphore(0);
    private volatile boolean closed;

    private ReactorPinning(CpuSet reactorCpus, CpuSet allowed) {
        this.reactorCpus = reactorCpus;
        this.cpus = reactorCpus.toArray();
        this.allowed = allowed;
        CpuSet rest = allowed.minus(reactorCpus);
        this.shared = rest.isEmpty();
        this.housekeeping = shared ? allowed : rest;
    }

    /**
     * Plans reactors on {@code reactorCpus} and moves every thread of the process now to the housekeeping set.
     * Call before the reactor threads start.
     *
     * @throws IllegalArgumentException      a reactor CPU the process may not use (its CPUs at start, as taskset,
     *                                       systemd's CPUAffinity or a cgroup cpuset left them)
     * @throws IllegalStateException         another plan is active in this process
     * @throws UnsupportedOperationException the affinity library is unavailable
     *                                       ({@link CpuAffinity#unavailabilityCause()})
     * @throws IOException                   reading /proc/self/task or moving a thread failed (named with its errno)
     */
    public static synchronized ReactorPinning start(CpuSet reactorCpus) throws IOException {
        Objects.requireNonNull(reactorCpus, "reactorCpus");
        if (reactorCpus.isEmpty()) {
            throw new IllegalArgumentException("no reactor CPU given");
        }
        if (!CpuAffinity.isAvailable()) {
            throw new UnsupportedOperationException("reactor CPUs " + reactorCpus + " cannot be pinned: "
                + "libnvmeof4j-affinity did not load: " + CpuAffinity.unavailabilityCause(),
                CpuAffinity.unavailabilityCause());
        }
        if (active != null) {
            throw new IllegalStateException("reactor CPUs " + reactorCpus + ": this process already pins reactors to "
                + "CPUs " + active.reactorCpus + " (one reactor CPU set per process)");
        }
        CpuSet allowed = processCpus();
        requireAllowed(reactorCpus, allowed);
        ReactorPinning plan = new ReactorPinning(reactorCpus, allowed);
        plan.moveOthersToHousekeeping();
        active = plan;
        return plan;
    }

    /**
     * The CPUs this process may run on: its main thread's (tid = pid), what taskset, systemd's CPUAffinity or a cgroup
     * cpuset gave it at start, whatever the calling thread was given since.
     */
    public static CpuSet processCpus() throws NativeIoException {
        return CpuAffinity.get((int) ProcessHandle.current().pid());
    }

    /** @throws IllegalArgumentException naming the reactor CPUs not in {@code allowed} */
    public static void requireAllowed(CpuSet reactorCpus, CpuSet allowed) {
        if (!allowed.containsAll(reactorCpus)) {
            throw new IllegalArgumentException("reactor CPU(s) " + reactorCpus.minus(allowed) + " not among the CPUs "
                + "this process may run on (" + allowed + ")");
        }
    }

    /** The plan of this process, or null when reactors are not pinned. */
    public static ReactorPinning active() {
        return active;
    }

    /** Reactor {@code index}'s CPU: the reactor CPUs in ascending order, taken in turn. */
    public int cpu(int index) {
        return cpus[Math.floorMod(index, cpus.length)];
    }

    public CpuSet reactorCpus() {
        return reactorCpus;
    }

    /** Where every other thread runs: the CPUs allowed at start less the reactor CPUs (all when none remain). */
    public CpuSet housekeeping() {
        return housekeeping;
    }

    /** The CPUs the process was allowed at start. */
    public CpuSet allowed() {
        return allowed;
    }

    /** True when the reactor CPUs are all the process had: the JIT and GC share them with the reactors. */
    public boolean housekeepingShared() {
        return shared;
    }

    /**
     * The body of reactor {@code index}'s thread: pins the thread to {@link #cpu(int)}, then runs {@code body}. A
     * failure to pin is kept for {@link #awaitReactors} and the reactor runs on (on the housekeeping CPUs).
     */
    public Runnable reactorBody(int index, String name, Runnable body) {
        int cpu = cpu(index);
        return () -> {
            int tid = CpuAffinity.currentTid();
            reactorTids.add(tid);
            try {
                CpuAffinity.set(0, CpuSet.of(cpu));
                pinned.add(name + " pinned to CPU " + cpu);
            } catch (NativeIoException | RuntimeException e) {
                failures.add(e instanceof NativeIoException n ? n
                    : new NativeIoException("pinning " + name + " to CPU " + cpu, Errno.EINVAL, e.toString()));
            } finally {
                pinResults.release();
            }
            try {
                body.run();
            } finally {
                reactorTids.remove(tid); // the kernel may give the id to a later thread, which is not a reactor
            }
        };
    }

    /**
     * Waits until {@code count} reactor threads pinned themselves; returns {@code "NAME pinned to CPU c"} of each.
     *
     * @throws NativeIoException the first failure to pin, naming the reactor, the CPU and the errno
     * @throws IOException       when they did not all report within {@code timeout}
     */
    public List<String> awaitReactors(int count, Duration timeout) throws IOException {
        try {
            if (!pinResults.tryAcquire(count, timeout.toNanos(), TimeUnit.NANOSECONDS)) {
                throw new IOException(count + " reactor thread(s) did not pin themselves within "
                    + timeout.toMillis() + " ms");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted waiting for reactor threads to pin themselves", e);
        }
        pinResults.release(count); // a later call (more reactors) counts these again
        NativeIoException failure = failures.peek();
        if (failure != null) {
            throw failure;
        }
        return List.copyOf(pinned);
    }

    /**
     * The log line of a start: {@code "reactor nvmeof-reactor-0 pinned to CPU 1; housekeeping (JIT, GC, other
     * threads) on CPUs 0"}.
     */
    public String describe(List<String> reactors) {
        return String.join(", ", reactors) + "; housekeeping (JIT, GC, other threads) on CPUs " + housekeeping
            + (shared ? " (shared with the reactors: no CPU of the " + allowed + " allowed is left for them)" : "");
    }

    /**
     * Moves the calling thread to the housekeeping CPUs when a plan is active and this is not a reactor thread: the
     * first step of a thread that a reactor may have started. Returns false when nothing was done.
     */
    public static boolean leaveReactorCpus() {
        ReactorPinning plan = active;
        if (plan == null) {
            return false;
        }
        int tid = CpuAffinity.currentTid();
        if (plan.reactorTids.contains(tid)) {
            return false;
        }
        try {
            CpuAffinity.set(0, plan.housekeeping);
            return true;
        } catch (NativeIoException e) {
            return false; // the thread keeps its CPUs; nothing better to do from here
        }
    }

    /** {@code body} run after {@link #leaveReactorCpus()}: for threads that a reactor thread may start. */
    public static Runnable housekeeping(Runnable body) {
        Objects.requireNonNull(body, "body");
        return () -> {
            leaveReactorCpus();
            body.run();
        };
    }

    /** Every thread but the reactors to the housekeeping CPUs; returns how many were moved. */
    private int moveOthersToHousekeeping() throws IOException {
        return moveAll(housekeeping, true);
    }

    /**
     * Sets every thread of the process (but reactors, when {@code skipReactors}) to {@code cpus}, repeating the sweep
     * while it finds threads it had not seen (a thread created meanwhile by one not yet moved would be missed).
     */
    private int moveAll(CpuSet cpus, boolean skipReactors) throws IOException {
        Set<Integer> seen = new HashSet<>();
        int moved = 0;
        for (int sweep = 0; sweep < MAX_SWEEPS; sweep++) {
            boolean found = false;
            for (CpuAffinity.ThreadInfo t : CpuAffinity.threads()) {
                if (!seen.add(t.tid()) || (skipReactors && reactorTids.contains(t.tid()))) {
                    continue;
                }
                found = true;
                try {
                    CpuAffinity.set(t.tid(), cpus);
                    moved++;
                } catch (NativeIoException e) {
                    if (e.errno() != Errno.ESRCH) { // ESRCH: it ended meanwhile
                        throw new NativeIoException(e.operation() + " (thread \"" + t.name() + "\")", e.errno());
                    }
                }
            }
            if (!found) {
                break;
            }
        }
        return moved;
    }

    /** Gives every thread of the process the CPUs it started with, and ends the plan. Idempotent. */
    @Override
    public synchronized void close() throws IOException {
        if (closed) {
            return;
        }
        closed = true;
        synchronized (ReactorPinning.class) {
            if (active == this) {
                active = null;
            }
        }
        moveAll(allowed, false);
    }

    /** For messages: the reactor CPUs and the housekeeping set. */
    @Override
    public String toString() {
        return "reactors on CPUs " + reactorCpus + ", housekeeping on CPUs " + housekeeping;
    }
}
