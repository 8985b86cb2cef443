package io.nvmeof4j.target.metrics;

import io.nvmeof4j.target.backend.RamBlockDevice;
import io.nvmeof4j.target.limits.RamBudget;

import io.micrometer.core.instrument.Counter;
import io.nvmeof4j.protocol.spi.PendingConnections;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.MultiGauge;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import io.nvmeof4j.protocol.auth.DhchapGroup;
import io.nvmeof4j.protocol.auth.DhchapHash;
import io.nvmeof4j.protocol.command.NvmeStatus;
import io.nvmeof4j.protocol.spi.BufferPool;
import io.nvmeof4j.protocol.spi.TransportType;
import io.nvmeof4j.target.controller.Controller;
import io.nvmeof4j.target.controller.ControllerRegistry;
import io.nvmeof4j.target.controller.QueueInfo;
import io.nvmeof4j.target.model.Namespace;
import io.nvmeof4j.target.model.Subsystem;
import io.nvmeof4j.target.reactor.Reactor;

import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import static io.nvmeof4j.target.metrics.TargetMeterNames.*;

/**
 * The target's meters (names in {@link TargetMeterNames}) on one Micrometer {@link MeterRegistry}, by default a
 * Prometheus registry whose text the daemon serves at {@code GET /metrics}.
 *
 * <h2>Recording without allocation or locks</h2>
 * Meters are resolved when a subsystem or namespace appears ({@link #bindSubsystem}, {@link #bindNamespace}) and
 * kept in arrays ({@link NamespaceMeters}, {@link SubsystemMeters}); the data path indexes them by transport and op.
 * What a {@link Timer#record} costs on the Prometheus registry (micrometer 1.14, read from its source):
 * {@code AbstractTimer.record} → {@code PrometheusTimer.recordNonNegative}: two {@code LongAdder} adds (count, total),
 * {@code TimeWindowMax.record} (a CAS only when the value is a new maximum) and
 * {@code PrometheusHistogram.recordLong} (binary search of the bucket, {@code AtomicLongArray.incrementAndGet}).
 * No allocation (a {@code LongAdder} allocates its cells once, the first time two threads collide). The only lock
 * on that path is in {@code TimeWindowMax.rotate()}/{@code AbstractTimeWindowHistogram.rotate()}: the recording
 * thread that finds the window expired rotates it inside {@code synchronized}, which the scrape thread also takes.
 * We set the distribution expiry to ten years with one buffer, so the rotation never comes due and the recording
 * path never reaches that monitor; the price is that {@code *_max} is the maximum since start, not of the last
 * two minutes. (The Prometheus histogram itself already never rotates: it is cumulative.) The pause detector is
 * Micrometer's default {@code NoPauseDetector}: no interval estimator on the path. Both rotations read the registry
 * clock's {@code wallTime()} on every record to see whether they are due: the Prometheus registry made here has a
 * {@link CachedWallClock}, refreshed before each scrape, so recording reads no clock (why that is safe: its comment).
 * Failure counts, whose statuses
 * are not known in advance, go into {@link FailureCounts} and become meters on the scrape thread.
 *
 * <h2>Scrape</h2>
 * {@link #refresh()} (called before each scrape) publishes failure counters for newly seen statuses and re-reads the
 * per-queue in-flight gauges from the controller registry; it allocates, on the HTTP thread only.
 */
public final class TargetMetrics {
    /** Expiry of the timers' max window: never, so recording never rotates (see the class comment). */
    static final Duration NEVER_ROTATE = Duration.ofDays(3650);

    private final MeterRegistry registry;
    /** The registry's clock when this class made the registry (refreshed before scrapes), else null. */
    private final CachedWallClock wallClock;
    /** The states of the resource-wait counters, kept reachable here (see {@link #bindResourceWaits}). */
    private final List<Object> resourceWaitOwners = new java.util.concurrent.CopyOnWriteArrayList<>();
    private final Set<TransportType> transports;
    private final Map<String, SubsystemMeters> subsystems = new ConcurrentHashMap<>();
    private final Object refreshLock = new Object();
    private volatile ControllerRegistry controllers;
    private MultiGauge queueInflight;
    /** [transport ordinal][refusal ordinal]: registered up front, so counting allocates nothing. */
    private final Counter[][] connectionsRefused;

    /**
     * @param transports the transports the daemon serves: timers exist for these (a queue of another transport is
     *                   counted in failures only)
     */
    public TargetMetrics(MeterRegistry registry, Set<TransportType> transports) {
        this(registry, null, transports);
    }

    private TargetMetrics(MeterRegistry registry, CachedWallClock wallClock, Set<TransportType> transports) {
        this.registry = Objects.requireNonNull(registry, "registry");
        this.wallClock = wallClock;
        this.transports = transports.isEmpty() ? EnumSet.noneOf(TransportType.class) : EnumSet.copyOf(transports);
        PendingConnections.Refusal[] reasons = PendingConnections.Refusal.values();
        this.connectionsRefused = new Counter[TRANSPORTS][reasons.length];
        for (TransportType t : this.transports) {
            for (PendingConnections.Refusal r : reasons) {
                connectionsRefused[t.ordinal()][r.ordinal()] = Counter.builder(CONNECTIONS_REFUSED)
                    .description("Queues refused or closed before their Connect")
                    .tags(TAG_TRANSPORT, transportName(t), TAG_REASON, r.tag())
                    .register(registry);
            }
        }
    }

    /** A queue refused or closed before its Connect (any transport thread). */
    public void connectionRefused(TransportType transport, PendingConnections.Refusal reason) {
        Counter c = connectionsRefused[transport.ordinal()][reason.ordinal()];
        if (c != null) {
            c.increment();
        }
    }

    /** The count of {@link #connectionRefused} calls so far (tests, the management API). */
    public double connectionsRefused(TransportType transport, PendingConnections.Refusal reason) {
        Counter c = connectionsRefused[transport.ordinal()][reason.ordinal()];
        return c == null ? 0 : c.count();
    }

    /**
     * One DH-HMAC-CHAP transaction ended on a queue (its reactor thread; rare, so the counter is looked up here).
     * Null hash or group: the failure came before they were negotiated.
     */
    public void authentication(boolean success, DhchapHash hash, DhchapGroup group) {
        registry.counter(AUTHENTICATIONS, TAG_RESULT, success ? "success" : "failure",
            TAG_HASH, hash == null ? "none" : hash.name().toLowerCase(Locale.ROOT),
            TAG_DHGROUP, group == null ? "none" : group.linuxName()).increment();
    }

    /** Metrics on a new Prometheus registry whose wall clock is read per scrape, not per record. */
    public static TargetMetrics prometheus(Set<TransportType> transports) {
        return prometheus(transports, new CachedWallClock());
    }

    static TargetMetrics prometheus(Set<TransportType> transports, CachedWallClock clock) {
        return new TargetMetrics(new PrometheusMeterRegistry(PrometheusConfig.DEFAULT, new PrometheusRegistry(), clock),
            clock, transports);
    }

    public MeterRegistry registry() {
        return registry;
    }

    /** The registry's Prometheus text (after {@link #refresh()}), or null when it is not a Prometheus registry. */
    public String scrape() {
        refresh();
        return registry instanceof PrometheusMeterRegistry p ? p.scrape() : null;
    }

    private static Timer timer(MeterRegistry registry, Tags tags) {
        return Timer.builder(IO)
            .description("NVMe command latency from capsule receipt to completion")
            .tags(tags)
            .publishPercentileHistogram()
            .minimumExpectedValue(LATENCY_MIN)
            .maximumExpectedValue(LATENCY_MAX)
            .distributionStatisticExpiry(NEVER_ROTATE)
            .distributionStatisticBufferLength(1)
            .register(registry);
    }

    /** Meters of a subsystem (or of the discovery NQN): admin timers, failures, controller and queue gauges. */
    public SubsystemMeters bindSubsystem(String nqn) {
        return subsystems.computeIfAbsent(nqn, n -> {
            List<Meter> all = new ArrayList<>();
            Timer[] admin = new Timer[TRANSPORTS];
            for (TransportType t : transports) {
                admin[t.ordinal()] = timer(registry, Tags.of(TAG_OP, opName(OP_ADMIN), TAG_SUBSYSTEM, n,
                    TAG_NSID, ADMIN_NSID, TAG_TRANSPORT, transportName(t)));
                all.add(admin[t.ordinal()]);
            }
            all.add(Gauge.builder(CONTROLLERS, this, m -> m.controllerCount(n))
                .description("Live controllers").tag(TAG_SUBSYSTEM, n).strongReference(true).register(registry));
            all.add(Gauge.builder(QUEUE_PAIRS, this, m -> m.queuePairCount(n))
                .description("Connected queue pairs (admin and I/O)").tag(TAG_SUBSYSTEM, n).strongReference(true)
                .register(registry));
            return new SubsystemMeters(n, admin, all);
        });
    }

    /** The meters of a bound subsystem, or null. */
    public SubsystemMeters subsystem(String nqn) {
        return subsystems.get(nqn);
    }

    /** Resolves the meters of a namespace and attaches them to it ({@link Namespace#meters()}). */
    public NamespaceMeters bindNamespace(Subsystem subsystem, Namespace namespace) {
        SubsystemMeters s = bindSubsystem(subsystem.nqn());
        String nsid = Integer.toUnsignedString(namespace.nsid());
        List<Meter> all = new ArrayList<>();
        Timer[] timers = new Timer[TRANSPORTS * IO_OPS];
        Counter[] read = new Counter[TRANSPORTS];
        Counter[] written = new Counter[TRANSPORTS];
        for (TransportType t : transports) {
            int ti = t.ordinal();
            Tags base = Tags.of(TAG_SUBSYSTEM, subsystem.nqn(), TAG_NSID, nsid, TAG_TRANSPORT, transportName(t));
            for (int op = 0; op < IO_OPS; op++) {
                timers[ti * IO_OPS + op] = timer(registry, base.and(TAG_OP, opName(op)));
                all.add(timers[ti * IO_OPS + op]);
            }
            read[ti] = Counter.builder(IO_READ_BYTES).baseUnit("bytes").description("Bytes of successful Reads")
                .tags(base).register(registry);
            written[ti] = Counter.builder(IO_WRITTEN_BYTES).baseUnit("bytes")
                .description("Bytes of successful Writes").tags(base).register(registry);
            all.add(read[ti]);
            all.add(written[ti]);
        }
        if (namespace.device() instanceof RamBlockDevice ram) {
            all.add(FunctionCounter.builder(RAM_ALLOCATION_FAILURES, ram, RamBlockDevice::allocationFailures)
                .description("Writes refused with Capacity Exceeded: no memory for a new chunk")
                .tags(TAG_SUBSYSTEM, subsystem.nqn(), TAG_NSID, nsid).register(registry));
        }
        NamespaceMeters meters = new NamespaceMeters(s, namespace.nsid(), timers, read, written, all);
        namespace.meters(meters);
        return meters;
    }

    /**
     * The namespace is gone: its meters leave the registry (I/O still in flight records into the detached meters,
     * harmlessly). A namespace added again with the same NSID starts from zero.
     */
    public void unbindNamespace(Namespace namespace) {
        NamespaceMeters m = namespace.meters();
        if (m != null) {
            for (Meter meter : m.meters()) {
                registry.remove(meter);
            }
        }
    }

    /** Gauges of live controllers and queues come from here. */
    public void bindControllers(ControllerRegistry registry) {
        this.controllers = registry;
        synchronized (refreshLock) {
            queueInflight = MultiGauge.builder(QUEUE_INFLIGHT).baseUnit("commands")
                .description("Commands received on the queue and not yet answered").register(this.registry);
        }
    }

    /** Gauges of the RAM budget: its limit and what RAM namespaces reserve of it. */
    public void bindRamBudget(RamBudget budget) {
        Gauge.builder(RAM_BUDGET, budget, b -> (double) b.limitBytes()).baseUnit("bytes")
            .description("The most all RAM namespaces may hold").strongReference(true).register(registry);
        Gauge.builder(RAM_RESERVED, budget, b -> (double) b.reservedBytes()).baseUnit("bytes")
            .description("Sizes of the RAM namespaces, reserved from the budget").strongReference(true)
            .register(registry);
    }

    /** Gauges of the queue buffer budget: its limit and what connected queues' buffers hold of it. */
    public void bindQueueBufferBudget(io.nvmeof4j.protocol.spi.MemoryBudget budget) {
        Gauge.builder(QUEUE_BUFFER_BUDGET, budget, b -> (double) b.limitBytes()).baseUnit("bytes")
            .description("The most the connected queues' buffers may hold").strongReference(true).register(registry);
        Gauge.builder(QUEUE_BUFFER_RESERVED, budget, b -> (double) b.reservedBytes()).baseUnit("bytes")
            .description("Buffers of the connected queues, reserved from the budget at Connect").strongReference(true)
            .register(registry);
    }

    /** Gauge of a reactor's buffer pool. */
    public void bindPool(int reactor, BufferPool pool) {
        Gauge.builder(POOL_BUFFERS_IN_USE, pool, BufferPool::buffersInUse).description("Data buffers handed out")
            .tag(TAG_REACTOR, Integer.toString(reactor)).strongReference(true).register(registry);
    }

    /**
     * Gauges of an adaptive reactor's idling: the spin it learned, what a wake-up cost it in run delay, whether its
     * CPU is shared. Read from the scrape thread (the reactor publishes them in volatile fields).
     */
    public void bindIdling(int index, Reactor reactor) {
        String tag = Integer.toString(index);
        Gauge.builder(REACTOR_IDLE_SPIN, reactor, r -> r.idleSpinNanos() / 1e9).baseUnit("seconds")
            .description("How long the reactor's next idle stretch spins before blocking, as learned")
            .tag(TAG_REACTOR, tag).strongReference(true).register(registry);
        Gauge.builder(REACTOR_WAKEUP_DELAY, reactor, r -> r.wakeupCostNanos() / 1e9).baseUnit("seconds")
            .description("Run delay per block in the last measured window: what a wake-up cost in waiting for the CPU")
            .tag(TAG_REACTOR, tag).strongReference(true).register(registry);
        Gauge.builder(REACTOR_CPU_SHARED, reactor, r -> r.cpuShared() ? 1 : 0)
            .description("1 while the reactor's run delay shows its CPU shared with another thread")
            .tag(TAG_REACTOR, tag).strongReference(true).register(registry);
    }

    /**
     * Counter of the time a reactor's thread waited for its CPU while runnable ({@link Reactor#runDelayNanos()}, read
     * from the thread's schedstat file by the scrape): stretches in which something else ran on a reactor's CPU.
     */
    public void bindRunDelay(int index, Reactor reactor) {
        FunctionCounter.builder(REACTOR_RUN_DELAY, reactor, r -> Math.max(0, r.runDelayNanos()) / 1e9)
            .baseUnit("seconds")
            .description("Time the reactor's thread was runnable but waiting for its CPU (another task had it)")
            .tag(TAG_REACTOR, Integer.toString(index)).register(registry);
    }

    /**
     * Counter of the commands that waited for {@code resource} ({@link TargetMeterNames#RESOURCE_IO_URING}, ...) on
     * a reactor; {@code waits} reads the owner's running count (scrape thread).
     */
    public <T> void bindResourceWaits(int reactor, String resource, T owner, java.util.function.ToDoubleFunction<T> waits) {
        // Micrometer holds a function counter's state weakly: an owner nothing else keeps (the daemon's list of a
        // reactor's poll groups) was collected and the counter then read 0 however many commands waited.
        resourceWaitOwners.add(owner);
        FunctionCounter.builder(RESOURCE_WAITS, owner, waits)
            .description("Commands that found a fixed-size data-path resource full and waited for it")
            .tags(TAG_REACTOR, Integer.toString(reactor), TAG_RESOURCE, resource).register(registry);
    }

    private double controllerCount(String nqn) {
        ControllerRegistry r = controllers;
        return r == null ? 0 : r.controllers(nqn).size();
    }

    private double queuePairCount(String nqn) {
        ControllerRegistry r = controllers;
        if (r == null) {
            return 0;
        }
        int n = 0;
        for (Controller c : r.controllers(nqn)) {
            n += c.queueIds().length;
        }
        return n;
    }

    /**
     * Refreshes the registry's wall clock, publishes new failure counters and re-reads the per-queue gauges (scrape
     * thread; allocates).
     */
    public void refresh() {
        if (wallClock != null) {
            wallClock.refresh();
        }
        synchronized (refreshLock) {
            for (SubsystemMeters s : subsystems.values()) {
                FailureCounts f = s.failures();
                f.forEachSlot(slot -> {
                    if (!s.published[slot]) {
                        s.published[slot] = true;
                        int key = f.key(slot);
                        int code = FailureCounts.statusCode(key);
                        String name = NvmeStatus.describe(code);
                        int space = name.indexOf(' ');
                        FunctionCounter.builder(COMMANDS_FAILED, f, c -> c.count(slot))
                            .description("Commands completed with an error status")
                            .tags(TAG_SUBSYSTEM, s.nqn(), TAG_OP, opName(FailureCounts.op(key)),
                                TAG_STATUS, String.format("0x%03x", code),
                                TAG_STATUS_NAME, space < 0 ? name : name.substring(space + 1))
                            .register(registry);
                    }
                });
            }
            ControllerRegistry r = controllers;
            if (r != null && queueInflight != null) {
                List<MultiGauge.Row<?>> rows = new ArrayList<>();
                for (Controller c : r.controllers()) {
                    for (QueueInfo q : c.queues()) {
                        rows.add(MultiGauge.Row.of(Tags.of(TAG_SUBSYSTEM, c.subsystemNqn(),
                            TAG_CNTLID, Integer.toString(c.cntlid()), TAG_QID, Integer.toString(q.qid()),
                            TAG_TRANSPORT, transportName(c.transportType())), q.commandsOutstanding()));
                    }
                }
                queueInflight.register(rows, true);
            }
        }
    }

    /** Transport index of a queue's transport type (meter arrays are indexed by it). */
    public static int transportIndex(TransportType type) {
        return type.ordinal();
    }
}
