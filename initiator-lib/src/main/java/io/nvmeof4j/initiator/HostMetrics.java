package io.nvmeof4j.initiator;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;
import io.nvmeof4j.protocol.spi.host.HostStatus;
import io.nvmeof4j.protocol.spi.idle.IdleMode;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicReferenceArray;

import static io.nvmeof4j.initiator.HostMeterNames.*;

/**
 * The host's meters on the application's registry. Only this class and {@link NamespaceMeters} touch Micrometer,
 * and they are loaded only when the application gave a registry: Micrometer stays an optional dependency.
 * <p>Meters are resolved when a namespace is identified (connect, rescan), never per I/O; recording is an array
 * load and the meters' own lock-free updates; the reactors' gauges are functions the scrape reads. The timers' max
 * window never rotates (ten-year expiry, one buffer):
 * rotating it takes a monitor on the recording thread (micrometer {@code TimeWindowMax.rotate}).
 */
final class HostMetrics {
    private static final Duration NEVER_ROTATE = Duration.ofDays(3650);

    private final MeterRegistry registry;
    private final boolean histogram;
    private final Map<String, NamespaceMeters> namespaces = new ConcurrentHashMap<>();
    /** The gauges that read this host (its controllers, its reactors' idling), removed when it closes. */
    private final List<Meter> hostGauges = new CopyOnWriteArrayList<>();

    HostMetrics(MeterRegistry registry, boolean histogram, NvmeofHost host) {
        this.registry = registry;
        this.histogram = histogram;
        hostGauges.add(Gauge.builder(CONTROLLERS, host, h -> h.controllers().size())
            .description("Connected controllers").register(registry));
    }

    /**
     * The per-path meters of a multipath controller: functions over its counters, read when the registry is
     * scraped, so the data path only increments its atomics.
     */
    void paths(MultipathController mp) {
        for (MultipathController.Path p : mp.paths) {
            Tags tags = Tags.of(TAG_SUBSYSTEM, mp.subsystemNqn(), TAG_PATH, p.address.toString());
            io.micrometer.core.instrument.FunctionCounter.builder(PATH_IOS, p, x -> x.completed.get())
                .tags(tags).tag(TAG_OUTCOME, "completed").description("Multipath I/Os per path and outcome")
                .register(registry);
            io.micrometer.core.instrument.FunctionCounter.builder(PATH_IOS, p, x -> x.failed.get())
                .tags(tags).tag(TAG_OUTCOME, "failed").register(registry);
            io.micrometer.core.instrument.FunctionCounter.builder(PATH_IOS, p, x -> x.failedOver.get())
                .tags(tags).tag(TAG_OUTCOME, "failed_over").register(registry);
            Gauge.builder(PATH_IN_FLIGHT, p, x -> x.inFlight.get()).tags(tags)
                .description("Multipath I/Os in flight on the path").register(registry);
            Gauge.builder(PATH_LIVE, p, x -> {
                NvmeofController c = x.controller;
                return c != null && c.state() == ControllerState.LIVE ? 1 : 0;
            }).tags(tags).description("1 while the path's controller is live").register(registry);
        }
    }

    /**
     * Gauges of each adaptive reactor's idling, as the target's ({@code TargetMetrics.bindIdling}): the spin it
     * learned, what a wake-up cost it in run delay, whether its CPU is shared. The scrape thread reads them from the
     * volatile fields the reactor's strategy publishes (0 until the reactor's thread made it); nothing per I/O.
     * A busy-polling reactor gets none, as on the target: it never blocks, so it has no spin and no wake-up.
     * Called once per set of reactors: the host's NVMe/TCP ones when the metrics are made, NVMe-oF/RDMA's when they
     * are made on first use. A host never replaces a reactor (one stopped by an unexpected failure is not
     * restarted, and its gauges keep its last values, as the target's do).
     */
    void reactors(List<HostReactor> reactors) {
        for (HostReactor r : reactors) {
            if (r.idleMode != IdleMode.ADAPTIVE) {
                continue;
            }
            // Held weakly, as the host's other gauges: while it runs, a reactor's own thread keeps it reachable,
            // and the application's registry must not keep a dropped host's reactors alive.
            Tags tags = Tags.of(TAG_REACTOR, Integer.toString(r.slot()));
            hostGauges.add(Gauge.builder(REACTOR_IDLE_SPIN, r, x -> x.idleSpinNanos() / 1e9).baseUnit("seconds")
                .description("How long the reactor's next idle stretch spins before blocking, as learned")
                .tags(tags).register(registry));
            hostGauges.add(Gauge.builder(REACTOR_WAKEUP_DELAY, r, x -> x.wakeupCostNanos() / 1e9)
                .baseUnit("seconds")
                .description("Run delay per block in the last measured window: what a wake-up cost in waiting for"
                    + " the CPU")
                .tags(tags).register(registry));
            hostGauges.add(Gauge.builder(REACTOR_CPU_SHARED, r, x -> x.cpuShared() ? 1 : 0)
                .description("1 while the reactor's run delay shows its CPU shared with another thread")
                .tags(tags).register(registry));
        }
    }

    /**
     * The host closed: the gauges that read it go. They would read a closed host and stopped reactors, and a later
     * host on the same registry would find their names and tags taken (Micrometer returns the meter already
     * registered) and never be read. The I/O meters stay: they count the application's I/O across hosts. (Two
     * hosts open at once on one registry share the gauges' names: the first one's are read, and its close removes
     * them for both; the gauges carry no tag that would tell two hosts apart.)
     */
    void close() {
        for (Meter m : hostGauges) {
            registry.remove(m);
        }
        hostGauges.clear();
    }

    /** The meters of one namespace of one subsystem over one transport (made once, then shared). */
    NamespaceMeters namespace(String subsystemNqn, int nsid, String transport) {
        String key = transport + " " + subsystemNqn + " " + Integer.toUnsignedString(nsid);
        return namespaces.computeIfAbsent(key, k -> new NamespaceMeters(subsystemNqn, nsid, transport));
    }

    /** One namespace's meters, indexed by op. */
    final class NamespaceMeters {
        private final Tags base;
        private final Timer[] timers = new Timer[OPS];
        private final Counter read;
        private final Counter written;
        /** Failure counters by (op, status code), created the first time each occurs. */
        private final AtomicIntegerArray failureKeys = new AtomicIntegerArray(64);
        private final AtomicReferenceArray<Counter> failures = new AtomicReferenceArray<>(64);

        NamespaceMeters(String subsystemNqn, int nsid, String transport) {
            base = Tags.of(TAG_SUBSYSTEM, subsystemNqn, TAG_NSID, Integer.toUnsignedString(nsid),
                TAG_TRANSPORT, transport);
            for (int op = 0; op < OPS; op++) {
                timers[op] = Timer.builder(IO).description("Block I/O latency, submit to callback")
                    .tags(base).tag(TAG_OP, opName(op))
                    .publishPercentileHistogram(histogram)
                    .minimumExpectedValue(LATENCY_MIN).maximumExpectedValue(LATENCY_MAX)
                    .distributionStatisticExpiry(NEVER_ROTATE).distributionStatisticBufferLength(1)
                    .register(registry);
            }
            read = Counter.builder(IO_READ_BYTES).baseUnit("bytes").tags(base).register(registry);
            written = Counter.builder(IO_WRITTEN_BYTES).baseUnit("bytes").tags(base).register(registry);
        }

        /** One I/O finished (its queue's reactor thread). */
        void record(int op, long latencyNanos, int status, long bytes) {
            timers[op].record(latencyNanos, TimeUnit.NANOSECONDS);
            if (status == 0) {
                if (op == OP_READ) {
                    read.increment(bytes);
                } else if (op == OP_WRITE) {
                    written.increment(bytes);
                }
            } else {
                failure(op, status).increment();
            }
        }

        /**
         * The counter of (op, status): a bounded probe of a fixed table; the first failure with a given status
         * registers its counter (once per status, on the failure path), later ones only increment.
         */
        private Counter failure(int op, int status) {
            int code = status & 0x7FF;
            int key = ((op << 11) | code) + 1;
            int i = (key * 0x9E3779B1) >>> 26;
            for (int probes = 0; probes < 64; probes++, i = (i + 1) & 63) {
                int k = failureKeys.get(i);
                if (k == key) {
                    Counter c = failures.get(i);
                    if (c != null) {
                        return c;
                    }
                    break; // another thread is registering it: fall through to the registry (same meter)
                }
                if (k == 0 && failureKeys.compareAndSet(i, 0, key)) {
                    Counter c = counter(op, code);
                    failures.set(i, c);
                    return c;
                }
            }
            return counter(op, code);
        }

        private Counter counter(int op, int code) {
            String name = HostStatus.describe(code);
            int space = name.indexOf(' ');
            return Counter.builder(COMMANDS_FAILED).tags(base).tag(TAG_OP, opName(op))
                .tag(TAG_STATUS, String.format("0x%03x", code))
                .tag(TAG_STATUS_NAME, space < 0 ? name : name.substring(space + 1).replace(", DNR", ""))
                .register(registry);
        }

        Timer timer(int op) {
            return timers[op];
        }
    }
}
