package io.nvmeof4j.initiator;

import io.nvmeof4j.protocol.admin.LogPageIdentifier;
import io.nvmeof4j.protocol.ana.AnaLogPage;
import io.nvmeof4j.protocol.ana.AnaState;
import io.nvmeof4j.protocol.spi.JvmOptions;
import io.nvmeof4j.protocol.spi.TransportAddress;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * One subsystem reached over several paths (one {@link NvmeofController} per address), as the Linux host's native
 * NVMe multipath shows one {@code /dev/nvmeXnY} for all controllers of a subsystem.
 *
 * <h2>Path selection</h2>
 * Per I/O, by {@link IoPolicy} over the paths whose controller is {@link ControllerState#LIVE} and whose ANA state
 * (log page 0Ch, read at connect, on every ANA change notice and after an ANA status) is optimized, else
 * non-optimized. Round-robin on a host reactor thread takes turns per reactor round rather than per I/O (see
 * {@link #select}; {@link #roundRobinPerIo(boolean)} restores Linux's per-I/O turns). Selection reads volatile
 * fields and atomics, and a reactor's own round state: no lock, no allocation.
 *
 * <h2>Failover</h2>
 * I/O sent on a path ends there with a path status instead of waiting for that controller's reconnect: a dropped
 * connection (in flight, or queued in the host), a command timeout, or an ANA status (SCT 3h). The multipath layer
 * then sends it again on another usable path. When no path is usable the I/O waits in the multipath layer and is
 * sent as soon as one is (a reconnect, an ANA change), or fails with its last status and DNR after the
 * controller-loss timeout counted from its first submission.
 *
 * <h2>Re-adding paths</h2>
 * A path's controller reconnects on its own (back-off as in {@link ConnectOptions}) and is used again once live. A
 * path that could not be connected at all, or whose controller was lost (controller-loss timeout), is connected
 * afresh every {@code reconnectDelay} until the multipath controller is closed.
 */
public final class MultipathController implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(MultipathController.class);
    /** First read of the ANA log; grown when the page says it is longer. */
    static final int ANA_LOG_INITIAL_BYTES = 4096;
    static final int ANA_LOG_MAX_BYTES = 1 << 20;
    /**
     * System property: {@code true} makes round-robin take turns per I/O on host reactor threads too (Linux's
     * granularity), for every multipath controller made afterwards; the default is per reactor round.
     */
    public static final String ROUND_ROBIN_PER_IO_PROP_NAME = "nvmeof4j.multipath.round-robin-per-io";

    private final NvmeofHost host;
    private final String subsystemNqn;
    private final ConnectOptions options;
    final Path[] paths;
    private volatile IoPolicy policy;
    private volatile boolean roundRobinPerIo = roundRobinPerIoFromProperty();
    /** Round-robin state per host reactor ({@link HostReactor.ReactorThread#slot}); each touched by its own thread. */
    private final RoundTurn[] turns;
    /** How far (in I/Os) a path may lag the others' round-robin share before it is lifted (see {@link #pick}). */
    private final long maxLag;
    private volatile List<MultipathNamespace> namespaces = List.of();
    private volatile boolean closed;

    /** One path: its address, its current controller (replaced when re-added) and its counters. */
    static final class Path {
        final int index;
        final TransportAddress address;
        volatile NvmeofController controller;
        final AtomicInteger inFlight = new AtomicInteger();
        final AtomicLong submitted = new AtomicLong();
        final AtomicLong completed = new AtomicLong();
        final AtomicLong failed = new AtomicLong();
        final AtomicLong failedOver = new AtomicLong();
        final AtomicLong rejoins = new AtomicLong();
        final AtomicBoolean anaRefreshQueued = new AtomicBoolean();
        volatile ScheduledFuture<?> rejoin;
        volatile String lastError;

        Path(int index, TransportAddress address) {
            this.index = index;
            this.address = address;
        }

        PathStats stats() {
            NvmeofController c = controller;
            return new PathStats(address, c == null ? null : c.state(), c == null ? -1 : c.controllerId(),
                inFlight.get(), submitted.get(), completed.get(), failed.get(), failedOver.get(), rejoins.get());
        }
    }

    private final NvmeofController.PathEvents events = new NvmeofController.PathEvents() {
        @Override
        public void onStateChanged(NvmeofController controller) {
            Path p = pathOf(controller);
            if (p == null) {
                return;
            }
            if (controller.state() == ControllerState.LOST) {
                p.lastError = controller.unavailableReason();
                scheduleRejoin(p);
            } else if (controller.state() == ControllerState.LIVE) {
                // A reconnect may come with another ANA state (a failed-over target, a new port configuration).
                refreshAna(p, true);
            }
            kickAll();
        }

        @Override
        public void onAnaChange(NvmeofController controller) {
            Path p = pathOf(controller);
            if (p != null) {
                refreshAna(p, false);
                kickAll();
            }
        }
    };

    private MultipathController(NvmeofHost host, List<TransportAddress> addresses, String subsystemNqn,
                                ConnectOptions options, IoPolicy policy) {
        this.host = host;
        this.subsystemNqn = subsystemNqn;
        this.options = options;
        this.policy = policy;
        this.paths = new Path[addresses.size()];
        for (int i = 0; i < paths.length; i++) {
            paths[i] = new Path(i, addresses.get(i));
        }
        this.turns = new RoundTurn[host.reactorSlots()];
        this.maxLag = (long) options.maxOutstandingRequests() * options.ioQueues();
    }

    /** One host reactor's round-robin turn: the path of its current round and the I/Os it sent down each path. */
    static final class RoundTurn {
        /** The reactor round {@link #path} was chosen in; -1: none yet. */
        long round = -1;
        int path = -1;
        /** The ANA state {@link #path} was chosen in (optimized, or non-optimized when no path was optimized). */
        int kind;
        /** I/Os this reactor sent down each path by round-robin (lifted by {@link #pick}, so only differences count). */
        final long[] sent;

        RoundTurn(int paths) {
            sent = new long[paths];
        }
    }

    /** See {@link NvmeofHost#connectMultipath}. */
    static MultipathController connect(NvmeofHost host, List<TransportAddress> addresses, String subsystemNqn,
                                       ConnectOptions options, IoPolicy policy) throws IOException {
        if (addresses.isEmpty()) {
            throw new IllegalArgumentException("no address to connect to");
        }
        if (addresses.size() > 64) {
            throw new IllegalArgumentException(addresses.size() + " paths: at most 64");
        }
        MultipathController mp = new MultipathController(host, addresses, subsystemNqn, options, policy);
        IOException first = null;
        for (Path p : mp.paths) {
            try {
                p.controller = host.connect(p.address, subsystemNqn, options);
            } catch (IOException e) {
                p.lastError = e.getMessage();
                LOG.warn("multipath {}: path {} not connected: {}; retrying every {} ms", subsystemNqn, p.address,
                    e.getMessage(), options.reconnectDelay().toMillis());
                if (first == null) {
                    first = e;
                }
            }
        }
        Path base = null;
        for (Path p : mp.paths) {
            if (p.controller != null) {
                base = p;
                break;
            }
        }
        if (base == null) {
            throw first;
        }
        List<MultipathNamespace> list = new ArrayList<>();
        for (NvmeofNamespace ns : base.controller.namespaces()) {
            list.add(new MultipathNamespace(mp, ns, mp.paths.length, mp.poolSize()));
        }
        mp.namespaces = Collections.unmodifiableList(list);
        for (Path p : mp.paths) {
            if (p.controller != null) {
                mp.attach(p, p.controller);
            } else {
                mp.scheduleRejoin(p);
            }
        }
        HostMetrics metrics = host.metrics();
        if (metrics != null) {
            metrics.paths(mp);
        }
        return mp;
    }

    /** Multipath requests per namespace: as many as all paths' queues accept at once. */
    private int poolSize() {
        return Math.max(2, options.maxOutstandingRequests() * options.ioQueues() * paths.length);
    }

    // ---- public API ----------------------------------------------------------------------------------------------

    public String subsystemNqn() {
        return subsystemNqn;
    }

    public IoPolicy ioPolicy() {
        return policy;
    }

    /** Changes the policy live (as writing the Linux host's {@code iopolicy} file does). */
    public void ioPolicy(IoPolicy policy) {
        this.policy = Objects.requireNonNull(policy, "policy");
    }

    /** Whether round-robin takes turns per I/O on host reactor threads too (default: per reactor round). */
    public boolean roundRobinPerIo() {
        return roundRobinPerIo;
    }

    /**
     * Round-robin granularity on host reactor threads, live: {@code true} one I/O per turn, as the Linux host does;
     * {@code false} (the default, or {@value #ROUND_ROBIN_PER_IO_PROP_NAME}) one reactor round per turn, which keeps
     * each round's commands on one connection. Per I/O spreads even one round's I/O over every path, which can matter
     * when each path has its own link and the links, not the host's CPU, are the limit.
     */
    public void roundRobinPerIo(boolean perIo) {
        this.roundRobinPerIo = perIo;
    }

    /** {@value #ROUND_ROBIN_PER_IO_PROP_NAME}, else false. */
    public static boolean roundRobinPerIoFromProperty() {
        return JvmOptions.booleanOption(ROUND_ROBIN_PER_IO_PROP_NAME, false);
    }

    /** The namespaces, as found on the first path that connected. */
    public List<MultipathNamespace> namespaces() {
        return namespaces;
    }

    /** Namespace {@code nsid}, or null. */
    public MultipathNamespace namespace(int nsid) {
        for (MultipathNamespace ns : namespaces) {
            if (ns.nsid() == nsid) {
                return ns;
            }
        }
        return null;
    }

    /** The paths' addresses, in the order given. */
    public List<TransportAddress> addresses() {
        List<TransportAddress> list = new ArrayList<>();
        for (Path p : paths) {
            list.add(p.address);
        }
        return list;
    }

    /** Each path's state and counters, in the order given at connect. */
    public List<PathStats> pathStats() {
        List<PathStats> list = new ArrayList<>();
        for (Path p : paths) {
            list.add(p.stats());
        }
        return list;
    }

    /** The controller of path {@code index} now, or null while it is being re-added. */
    public NvmeofController controller(int index) {
        return paths[index].controller;
    }

    /** Re-reads the ANA log of every live path now (blocking), as an ANA change notice does. */
    public void refreshAnaStates() {
        for (Path p : paths) {
            refreshAna(p, true);
        }
        kickAll();
    }

    public ConnectOptions options() {
        return options;
    }

    NvmeofHost host() {
        return host;
    }

    boolean isClosed() {
        return closed;
    }

    // ---- path selection (data path: no lock, no allocation) ------------------------------------------------------

    /**
     * The path for the next I/O of {@code ns}, or -1 when none is usable. {@code avoid}: the path an I/O just failed
     * on, taken only when it is the only usable one.
     * <p>Round-robin on a host reactor thread ({@link #selectForRound}) takes turns per reactor round: each
     * connection costs a read and a gathering write per round however many commands it carries, so turns per I/O
     * split every round's batch over all paths and pay that cost once per path (measured at QD32 over two paths:
     * per I/O 0.73-0.81 of one path's IOPS, per round 0.92-0.98; see docs/multipath.md). Failover ({@code avoid >= 0}) and
     * I/O submitted from other threads take turns per I/O.
     */
    int select(MultipathNamespace ns, int avoid) {
        IoPolicy p = policy;
        if (p == IoPolicy.ROUND_ROBIN && avoid < 0 && !roundRobinPerIo
            && Thread.currentThread() instanceof HostReactor.ReactorThread reactor) {
            return selectForRound(ns, reactor);
        }
        Path[] ps = paths;
        int n = ps.length;
        int start = p == IoPolicy.ROUND_ROBIN ? Math.floorMod(ns.roundRobin.getAndIncrement(), n) : 0;
        int optimized = -1;
        int nonOptimized = -1;
        int optimizedDepth = Integer.MAX_VALUE;
        int nonOptimizedDepth = Integer.MAX_VALUE;
        boolean avoidUsable = false;
        for (int k = 0; k < n; k++) {
            int i = start + k;
            if (i >= n) {
                i -= n;
            }
            int kind = usable(ns, ps[i], i);
            if (kind == 0) {
                continue;
            }
            if (i == avoid) {
                avoidUsable = true;
                continue;
            }
            if (p == IoPolicy.QUEUE_DEPTH) {
                int depth = ps[i].inFlight.get();
                if (kind == AnaState.OPTIMIZED && depth < optimizedDepth) {
                    optimized = i;
                    optimizedDepth = depth;
                } else if (kind == AnaState.NON_OPTIMIZED && depth < nonOptimizedDepth) {
                    nonOptimized = i;
                    nonOptimizedDepth = depth;
                }
            } else if (kind == AnaState.OPTIMIZED) {
                return i; // the first optimized path from the start (numa: from path 0; round-robin: rotating)
            } else if (nonOptimized < 0) {
                nonOptimized = i;
            }
        }
        if (optimized >= 0) {
            return optimized;
        }
        if (nonOptimized >= 0) {
            return nonOptimized;
        }
        return avoidUsable ? avoid : -1;
    }

    /**
     * Round-robin on host reactor thread {@code reactor}: every I/O of one reactor round goes down the path chosen at
     * the round's first I/O (kept for the round while it stays usable in the same ANA state for {@code ns}). The
     * turn goes to the usable path (optimized first) this reactor has sent the fewest I/Os, ties to the next one
     * after the previous round's path. Counting I/Os rather than rounds keeps the shares fair however the rounds'
     * batches are sized: a path with a large batch in flight waits for its turn until the others caught up, so no
     * path starves and the paths' counts differ by at most one round's I/O (plus {@link #maxLag} for a path that
     * was away). Reactor-thread state only: nothing shared is written.
     */
    private int selectForRound(MultipathNamespace ns, HostReactor.ReactorThread reactor) {
        RoundTurn turn = turns[reactor.slot];
        if (turn == null) {
            turn = new RoundTurn(paths.length); // once per reactor and controller
            turns[reactor.slot] = turn;
        }
        int chosen = turn.path;
        if (turn.round != reactor.round || usable(ns, paths[chosen], chosen) != turn.kind) {
            int kind = AnaState.OPTIMIZED;
            chosen = pick(ns, turn, kind);
            if (chosen < 0) {
                kind = AnaState.NON_OPTIMIZED;
                chosen = pick(ns, turn, kind);
                if (chosen < 0) {
                    return -1;
                }
            }
            turn.round = reactor.round;
            turn.path = chosen;
            turn.kind = kind;
        }
        turn.sent[chosen]++;
        return chosen;
    }

    /**
     * Among the paths usable in ANA state {@code kind} for {@code ns}: the one {@code turn} sent the fewest I/Os,
     * ties to the first after the previous round's path; -1 when none. A path more than {@link #maxLag} I/Os behind
     * the busiest candidate (it was unusable for a while) is lifted to that distance first, so that it comes back
     * with its fair share instead of taking every round until it has caught up.
     */
    private int pick(MultipathNamespace ns, RoundTurn turn, int kind) {
        Path[] ps = paths;
        int n = ps.length;
        long[] sent = turn.sent;
        long most = Long.MIN_VALUE;
        for (int i = 0; i < n; i++) {
            if (usable(ns, ps[i], i) == kind && sent[i] > most) {
                most = sent[i];
            }
        }
        if (most == Long.MIN_VALUE) {
            return -1;
        }
        long floor = most - maxLag;
        int best = -1;
        long fewest = Long.MAX_VALUE;
        int i = turn.path;
        for (int k = 0; k < n; k++) {
            i = i + 1 >= n ? 0 : i + 1;
            if (usable(ns, ps[i], i) != kind) {
                continue;
            }
            if (sent[i] < floor) {
                sent[i] = floor;
            }
            if (sent[i] < fewest) {
                fewest = sent[i];
                best = i;
            }
        }
        return best;
    }

    /** The path's ANA state for {@code ns} when it may carry I/O (optimized, non-optimized), else 0. */
    private static int usable(MultipathNamespace ns, Path path, int index) {
        NvmeofController c = path.controller;
        if (c == null || c.state() != ControllerState.LIVE || ns.onPath.get(index) == null) {
            return 0;
        }
        int state = ns.anaState.get(index);
        return state == AnaState.OPTIMIZED || state == AnaState.NON_OPTIMIZED ? state : 0;
    }

    /** An I/O got an ANA status on {@code path}: re-read its ANA log soon (once, however many I/Os report it). */
    void anaStatusSeen(Path path) {
        if (path.anaRefreshQueued.compareAndSet(false, true)) {
            host.control().execute(() -> {
                path.anaRefreshQueued.set(false);
                refreshAna(path, true);
                kickAll();
            });
        }
    }

    // ---- paths: attach, ANA, re-add ------------------------------------------------------------------------------

    private Path pathOf(NvmeofController controller) {
        for (Path p : paths) {
            if (p.controller == controller) {
                return p;
            }
        }
        return null;
    }

    /** Puts {@code controller} under path {@code p}: its namespaces, its ANA states, its events. */
    private void attach(Path p, NvmeofController controller) {
        controller.pathEvents(events);
        controller.addNamespaceListener((c, changed, current) -> mapNamespaces(p, c));
        mapNamespaces(p, controller);
        refreshAna(p, true);
    }

    /** Each multipath namespace's namespace object on path {@code p}, when the path shows the same namespace. */
    private void mapNamespaces(Path p, NvmeofController controller) {
        for (MultipathNamespace mns : namespaces) {
            NvmeofNamespace ns = controller.namespace(mns.nsid());
            if (ns != null && !mns.sameNamespace(ns)) {
                LOG.warn("multipath {}: namespace {} on path {} has other identifiers or geometry ({}); not using it "
                    + "there", subsystemNqn, mns.nsid(), p.address, ns);
                ns = null;
            }
            mns.onPath.set(p.index, ns);
        }
    }

    /**
     * Reads the ANA log of path {@code p} (control thread) and sets each namespace's state on it. A controller
     * without ANA reporting (CMIC bit 3) has every namespace optimized on every path.
     *
     * @param retainEvent RAE: set except when answering an ANA change notice (reading with RAE 0 re-arms it)
     */
    private void refreshAna(Path p, boolean retainEvent) {
        NvmeofController c = p.controller;
        if (c == null || c.state() != ControllerState.LIVE) {
            return;
        }
        if (!c.identifyController().supportsAna()) {
            for (MultipathNamespace ns : namespaces) {
                ns.anaState.set(p.index, AnaState.OPTIMIZED);
            }
            return;
        }
        try {
            int length = ANA_LOG_INITIAL_BYTES;
            for (int attempt = 0; attempt < 3; attempt++) {
                ByteBuffer data = c.readLogPage("Get Log Page (ANA)", LogPageIdentifier.ANA, length, retainEvent);
                AnaLogPage page = new AnaLogPage().wrap(data, 0);
                int groups = page.groupCount();
                int end = AnaLogPage.HEADER_LENGTH;
                boolean complete = true;
                for (int g = 0; g < groups; g++) {
                    if (end + AnaLogPage.DESCRIPTOR_HEADER_LENGTH > length) {
                        complete = false;
                        break;
                    }
                    end += AnaLogPage.DESCRIPTOR_HEADER_LENGTH + 4 * page.nsidCount(end);
                }
                if (!complete || end > length) {
                    length = Math.min(ANA_LOG_MAX_BYTES, Math.max(length * 2, (end + 4095) & ~4095));
                    continue;
                }
                applyAna(p, page, groups);
                return;
            }
            LOG.warn("multipath {}: the ANA log of {} kept growing; states unchanged", subsystemNqn, p.address);
        } catch (NvmeofException e) {
            LOG.warn("multipath {}: reading the ANA log of {} failed: {}", subsystemNqn, p.address, e.getMessage());
        }
    }

    private void applyAna(Path p, AnaLogPage page, int groups) {
        int at = AnaLogPage.HEADER_LENGTH;
        for (int g = 0; g < groups; g++) {
            int state = page.state(at);
            int count = page.nsidCount(at);
            for (int i = 0; i < count; i++) {
                MultipathNamespace ns = namespace(page.nsid(at, i));
                if (ns != null) {
                    int before = ns.anaState.getAndSet(p.index, state);
                    if (before != state) {
                        LOG.info("multipath {}: namespace {} on {} (ANA group {}) is now {}", subsystemNqn,
                            ns.nsid(), p.address, page.groupId(at), AnaState.name(state));
                    }
                }
            }
            at += AnaLogPage.DESCRIPTOR_HEADER_LENGTH + 4 * count;
        }
    }

    private void scheduleRejoin(Path p) {
        if (closed) {
            return;
        }
        synchronized (p) {
            ScheduledFuture<?> pending = p.rejoin;
            if (pending != null && !pending.isDone()) {
                return;
            }
            p.rejoin = host.timer().schedule(() -> host.control().execute(() -> rejoin(p)),
                options.reconnectDelay().toMillis(), TimeUnit.MILLISECONDS);
        }
    }

    /** Connects path {@code p} afresh (its controller was never connected, or was lost). Control thread. */
    private void rejoin(Path p) {
        if (closed) {
            return;
        }
        NvmeofController old = p.controller;
        if (old != null && old.state() != ControllerState.LOST && old.state() != ControllerState.CLOSED) {
            return; // it came back on its own
        }
        NvmeofController fresh;
        try {
            fresh = host.connect(p.address, subsystemNqn, options);
        } catch (IOException | RuntimeException e) {
            p.lastError = e.getMessage();
            LOG.debug("multipath {}: re-adding path {} failed: {}", subsystemNqn, p.address, e.getMessage());
            synchronized (p) {
                p.rejoin = null;
            }
            scheduleRejoin(p);
            return;
        }
        synchronized (p) {
            p.rejoin = null;
        }
        if (closed) {
            fresh.close();
            return;
        }
        p.controller = fresh;
        if (old != null) {
            old.close();
            p.rejoins.incrementAndGet();
        }
        attach(p, fresh);
        LOG.info("multipath {}: path {} added as controller {}", subsystemNqn, p.address, fresh.controllerId());
        kickAll();
    }

    private void kickAll() {
        for (MultipathNamespace ns : namespaces) {
            ns.kick();
        }
    }

    /** Closes every path's controller; I/O waiting for a path fails with HOST_PATH_ERROR and DNR. Idempotent. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        for (Path p : paths) {
            ScheduledFuture<?> r = p.rejoin;
            if (r != null) {
                r.cancel(false);
            }
            NvmeofController c = p.controller;
            if (c != null) {
                c.close();
            }
        }
        for (MultipathNamespace ns : namespaces) {
            ns.failWaiting();
        }
    }

    @Override
    public String toString() {
        return "MultipathController[" + subsystemNqn + " " + Arrays.toString(addresses().toArray()) + " "
            + policy.configName() + "]";
    }
}
