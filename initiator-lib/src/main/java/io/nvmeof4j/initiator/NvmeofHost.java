package io.nvmeof4j.initiator;

import io.nvmeof4j.jni.cpu.ReactorPinning;
import io.nvmeof4j.protocol.discovery.DiscoveryLogEntry;
import io.nvmeof4j.protocol.discovery.DiscoveryLogPage;
import io.nvmeof4j.protocol.admin.IdentifyController;
import io.nvmeof4j.protocol.admin.LogPageIdentifier;
import io.nvmeof4j.protocol.spi.TransportAddress;
import io.nvmeof4j.protocol.spi.TransportType;
import io.nvmeof4j.protocol.spi.host.HostTransport;
import io.nvmeof4j.protocol.spi.idle.AdaptiveIdleStrategy;
import io.nvmeof4j.rdma.host.RdmaHostTransport;
import io.nvmeof4j.tcp.SocketSelector;
import io.nvmeof4j.tcp.host.TcpHostTransport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The entry point of the initiator: one host identity, its data-path threads (host reactors) and its control
 * threads, shared by every controller it connects.
 * <pre>{@code
 * try (NvmeofHost host = NvmeofHost.create()) {                       // identity from ~/.config/nvmeof4j
 *     List<DiscoveryEntry> entries = host.discover(TransportAddress.tcp("10.0.0.5", 8009));
 *     try (NvmeofController ctrl = host.connect(entries.get(0).address(), entries.get(0).subsystemNqn(),
 *                                               ConnectOptions.defaults())) {
 *         NvmeofNamespace ns = ctrl.namespaces().get(0);
 *         ByteBuffer block = ns.read(0, 1).get(30, TimeUnit.SECONDS);
 *     }
 * }
 * }</pre>
 */
public final class NvmeofHost implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(NvmeofHost.class);
    /** The well-known discovery subsystem NQN. */
    public static final String DISCOVERY_NQN = "nqn.2014-08.org.nvmexpress.discovery";
    /** Re-reads of the discovery log when its generation counter keeps changing (libnvme retries 10 times). */
    static final int DISCOVERY_RETRIES = 10;
    /** libnvme reads discovery log entries in chunks of this many bytes. */
    static final int DISCOVERY_CHUNK = 4096;

    private final HostIdentity identity;
    private final int reactorThreads;
    /** NVMe/TCP: its transport and reactors, made with the host. */
    private final Fabric tcp;
    /** NVMe-oF/RDMA: made on first use (only then is rdma-core needed). */
    private volatile Fabric rdma;
    private final ScheduledExecutorService timer;
    private final ExecutorService control;
    private final List<NvmeofController> controllers = new CopyOnWriteArrayList<>();
    /** Null unless the application gave a MeterRegistry (Micrometer is an optional dependency). */
    private HostMetrics metrics;
    private volatile boolean closed;
    /**
     * System property: how the host's reactors idle, {@code adaptive} (the default: spin, then block) or {@code busy}
     * (poll without ever blocking, one whole CPU per reactor, as SPDK's perf: for a load generator on a dedicated
     * core). Read when a host is created.
     */
    public static final String IDLE_PROP_NAME = "nvmeof4j.host.idle_strategy";
    /** Null, or where the reactors pin themselves (perf's --cpus); RDMA's reactors, made later, too. */
    private final ReactorPinning pinning;

    private NvmeofHost(HostIdentity identity, int reactorThreads, ReactorPinning pinning) {
        this.identity = Objects.requireNonNull(identity, "identity");
        checkJvmOptions();
        if (reactorThreads < 1 || reactorThreads > 256) {
            throw new IllegalArgumentException("reactor threads " + reactorThreads + " outside 1..256");
        }
        this.reactorThreads = reactorThreads;
        this.pinning = pinning;
        this.tcp = new Fabric(new TcpHostTransport(), reactorThreads, 0, "nvmeof-host-reactor-", pinning);
        timer = Executors.newSingleThreadScheduledExecutor(daemon("nvmeof-host-timer"));
        control = Executors.newCachedThreadPool(daemon("nvmeof-host-control"));
        LOG.debug("host {} started with {} reactor thread(s)", identity, reactorThreads);
    }

    /**
     * Reads the JVM options a host uses ({@code -Dnvmeof4j.reactor.*},
     * {@value MultipathController#ROUND_ROBIN_PER_IO_PROP_NAME},
     * {@value SocketSelector#DIRECT_READ_SOCKETS_PROP_NAME}), refusing a malformed or out-of-range one with an
     * {@link IllegalArgumentException} that names it ({@link io.nvmeof4j.protocol.spi.JvmOptions}). Every host runs it
     * when made, so the refusal reaches the caller rather than a reactor thread; the {@code nvmeof} CLI runs it first
     * to report a usage error.
     */
    public static void checkJvmOptions() {
        AdaptiveIdleStrategy.checkJvmOptions();
        MultipathController.roundRobinPerIoFromProperty();
        SocketSelector.directReadSocketsFromProperty();
    }

    /** A host with the persisted default identity ({@link HostIdentity#defaultIdentity()}). */
    public static NvmeofHost create() {
        return create(HostIdentity.defaultIdentity());
    }

    public static NvmeofHost create(HostIdentity identity) {
        return create(identity, defaultReactorThreads(Runtime.getRuntime().availableProcessors()));
    }

    /**
     * @param reactorThreads data-path threads; I/O queues are spread over them round-robin. Each spins briefly when
     *                       idle, so more threads than spare CPUs only costs.
     */
    public static NvmeofHost create(HostIdentity identity, int reactorThreads) {
        return new NvmeofHost(identity, reactorThreads, null);
    }

    /**
     * A host whose reactor threads pin themselves to {@code pinning}'s CPUs (reactor i of each transport to
     * {@link ReactorPinning#cpu(int) cpu(i)}) as they start; threads the host starts from them (timer, control)
     * move to its housekeeping CPUs. {@code pinning} null: no affinity is set, as with
     * {@link #create(HostIdentity, int)}.
     */
    public static NvmeofHost create(HostIdentity identity, int reactorThreads, ReactorPinning pinning) {
        return new NvmeofHost(identity, reactorThreads, pinning);
    }

    /**
     * A host that records its I/O into {@code registry} ({@link HostMeterNames}: latency timers, bytes and failures
     * per op, subsystem, namespace and transport; connected controllers; each adaptive reactor's idling, until the
     * host closes). Recording allocates nothing per I/O.
     * The timers publish no percentile histogram (a library leaves that to the application, which may turn it on
     * with a {@code MeterFilter}, or with {@link #create(HostIdentity, int, io.micrometer.core.instrument.MeterRegistry, boolean)}).
     */
    public static NvmeofHost create(HostIdentity identity, int reactorThreads,
                                    io.micrometer.core.instrument.MeterRegistry registry) {
        return create(identity, reactorThreads, registry, false);
    }

    /** As {@link #create(HostIdentity, int, io.micrometer.core.instrument.MeterRegistry)}, with the timers
     *  publishing a percentile histogram (buckets {@link HostMeterNames#LATENCY_MIN} to {@link HostMeterNames#LATENCY_MAX})
     *  when {@code percentileHistogram}. */
    public static NvmeofHost create(HostIdentity identity, int reactorThreads,
                                    io.micrometer.core.instrument.MeterRegistry registry, boolean percentileHistogram) {
        return create(identity, reactorThreads, registry, percentileHistogram, null);
    }

    /** As {@link #create(HostIdentity, int, io.micrometer.core.instrument.MeterRegistry, boolean)}, pinned as
     *  {@link #create(HostIdentity, int, ReactorPinning)} (pinning null: not pinned). */
    public static NvmeofHost create(HostIdentity identity, int reactorThreads,
                                    io.micrometer.core.instrument.MeterRegistry registry, boolean percentileHistogram,
                                    ReactorPinning pinning) {
        Objects.requireNonNull(registry, "registry");
        NvmeofHost host = new NvmeofHost(identity, reactorThreads, pinning);
        host.metrics = new HostMetrics(registry, percentileHistogram, host);
        host.metrics.reactors(host.tcp.reactors);
        return host;
    }

    /** The host's meters, or null without a registry. */
    HostMetrics metrics() {
        return metrics;
    }

    /** One reactor up to 2 CPUs, else half the CPUs (the rest for the application and the TCP stack). */
    public static int defaultReactorThreads(int cpus) {
        return cpus <= 2 ? 1 : Math.min(64, cpus / 2);
    }

    public HostIdentity identity() {
        return identity;
    }

    /** Controllers connected and not closed. */
    public List<NvmeofController> controllers() {
        return Collections.unmodifiableList(controllers);
    }

    public List<DiscoveryEntry> discover(TransportAddress address) throws IOException {
        return discover(address, ConnectOptions.discoveryDefaults());
    }

    /**
     * Reads the discovery log of the discovery controller at {@code address}, the way libnvme does: the header
     * (GENCTR, NUMREC), the entries by LPO in 4096-byte chunks (RAE set on all but the last read), the header again,
     * and everything again (up to 10 times) if GENCTR changed meanwhile. Then disconnects.
     *
     * @throws NvmeofException naming the peer, the step and the status
     */
    public List<DiscoveryEntry> discover(TransportAddress address, ConnectOptions options) throws IOException {
        checkOpen();
        checkNotOnReactor("discover " + address);
        String step = "Get Log Page (discovery)";
        AdminConnection a = AdminConnection.open(transport(address.type()), reactor(address.type(), 0).group, address,
            DISCOVERY_NQN, identity, options, null, null);
        try {
            boolean extended = (a.info.logPageAttributes() & IdentifyController.LPA_EXTENDED_DATA) != 0;
            ByteBuffer header = Commands.direct(DiscoveryLogPage.HEADER_FIELDS_LENGTH);
            for (int attempt = 0; attempt < DISCOVERY_RETRIES; attempt++) {
                a.getLogPage(step, LogPageIdentifier.DISCOVERY, 0, header, DiscoveryLogPage.HEADER_FIELDS_LENGTH, 0,
                    true);
                DiscoveryLogPage page = new DiscoveryLogPage().wrap(header, 0);
                long generation = page.generationCounter();
                long records = page.numberOfRecords();
                if (records < 0 || records > 1024) {
                    throw new NvmeofException(a.peer, step, NvmeofException.NO_STATUS,
                        "implausible NUMREC " + records, null);
                }
                int bytes = (int) records * DiscoveryLogEntry.LENGTH;
                ByteBuffer entries = Commands.direct(Math.max(bytes, DiscoveryLogEntry.LENGTH));
                if (extended) {
                    for (int offset = 0; offset < bytes; offset += DISCOVERY_CHUNK) {
                        int length = Math.min(DISCOVERY_CHUNK, bytes - offset);
                        ByteBuffer chunk = Commands.direct(length);
                        a.getLogPage(step, LogPageIdentifier.DISCOVERY, 0, chunk, length,
                            DiscoveryLogPage.ENTRIES_OFFSET + offset, true);
                        entries.put(offset, chunk, 0, length);
                    }
                } else if (bytes > 0) {
                    // Without LPO support the whole log comes in one read from offset 0.
                    ByteBuffer whole = Commands.direct(DiscoveryLogPage.HEADER_LENGTH + bytes);
                    a.getLogPage(step, LogPageIdentifier.DISCOVERY, 0, whole, DiscoveryLogPage.HEADER_LENGTH + bytes,
                        0, true);
                    entries.put(0, whole, DiscoveryLogPage.HEADER_LENGTH, bytes);
                }
                a.getLogPage(step, LogPageIdentifier.DISCOVERY, 0, header, DiscoveryLogPage.HEADER_FIELDS_LENGTH, 0,
                    false);
                if (page.generationCounter() != generation) {
                    LOG.debug("{}: discovery log changed while read (GENCTR {} -> {}); reading again", a.peer,
                        generation, page.generationCounter());
                    continue;
                }
                List<DiscoveryEntry> result = new ArrayList<>();
                DiscoveryLogEntry entry = new DiscoveryLogEntry();
                for (int i = 0; i < records; i++) {
                    entry.wrap(entries, i * DiscoveryLogEntry.LENGTH);
                    result.add(new DiscoveryEntry(entry.transportType(), entry.addressFamily(),
                        entry.subsystemType(), entry.transportRequirements(), entry.portId(), entry.controllerId(),
                        entry.adminMaxSqSize(), entry.transportServiceId().trim(), entry.subsystemNqn(),
                        entry.transportAddress().trim(), entry.transportType() == TransportType.TCP.code()
                        ? entry.tsasByte(DiscoveryLogEntry.TSAS_TCP_SECTYPE_OFFSET) : 0));
                }
                return Collections.unmodifiableList(result);
            }
            throw new NvmeofException(a.peer, step, NvmeofException.NO_STATUS, "the discovery log kept changing "
                + "(GENCTR differed across " + DISCOVERY_RETRIES + " reads)", null);
        } finally {
            a.shutdownAndClose("discovery done");
        }
    }

    public NvmeofController connect(TransportAddress address, String subsystemNqn) throws IOException {
        return connect(address, subsystemNqn, ConnectOptions.defaults());
    }

    /**
     * Connects to subsystem {@code subsystemNqn} at {@code address}: admin queue, I/O queues, namespace scan,
     * keep-alive and asynchronous events. Blocks until done or failed (each step bounded by the connect timeout).
     *
     * @throws NvmeofException naming the peer, the step and the status: wrong address, refused connection, unknown
     *                         NQN (Connect 0x182 with IPO 256), host not allowed (0x184), timeout
     */
    public NvmeofController connect(TransportAddress address, String subsystemNqn, ConnectOptions options)
        throws IOException {
        checkOpen();
        Objects.requireNonNull(address, "address");
        Objects.requireNonNull(subsystemNqn, "subsystemNqn");
        Objects.requireNonNull(options, "options");
        checkNotOnReactor("connect to " + address + " (" + subsystemNqn + ")");
        fabric(address.type()); // fails early, saying why, for a transport this machine cannot use
        NvmeofController controller = NvmeofController.connect(this, address, subsystemNqn, options);
        controllers.add(controller);
        return controller;
    }

    /**
     * Connects to subsystem {@code subsystemNqn} over every address in {@code addresses} (one controller per path)
     * and returns them as one {@link MultipathController}, as the Linux host joins the controllers of one subsystem
     * under one multipath node. Paths that do not connect now are retried every {@code reconnectDelay}.
     *
     * @throws NvmeofException of the first path when no path connects
     */
    public MultipathController connectMultipath(List<TransportAddress> addresses, String subsystemNqn,
                                                ConnectOptions options, IoPolicy policy) throws IOException {
        checkOpen();
        Objects.requireNonNull(subsystemNqn, "subsystemNqn");
        Objects.requireNonNull(options, "options");
        Objects.requireNonNull(policy, "policy");
        checkNotOnReactor("connect to " + addresses + " (" + subsystemNqn + ")");
        for (TransportAddress a : addresses) {
            fabric(a.type());
        }
        return MultipathController.connect(this, List.copyOf(addresses), subsystemNqn, options, policy);
    }

    /**
     * Every path of subsystem {@code subsystemNqn} that the discovery controller at {@code discoveryAddress} lists
     * (one address per discovery log entry of that NQN, in log order, duplicates dropped): what to give
     * {@link #connectMultipath}.
     */
    public List<TransportAddress> discoverPaths(TransportAddress discoveryAddress, String subsystemNqn)
        throws IOException {
        List<TransportAddress> paths = new ArrayList<>();
        for (DiscoveryEntry e : discover(discoveryAddress)) {
            if (e.subsystemNqn().equals(subsystemNqn)) {
                TransportAddress a = e.address();
                if (!paths.contains(a)) {
                    paths.add(a);
                }
            }
        }
        return Collections.unmodifiableList(paths);
    }

    /** Closes every controller, then the reactor and control threads. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        for (NvmeofController controller : new ArrayList<>(controllers)) {
            try {
                controller.close();
            } catch (RuntimeException e) {
                LOG.warn("closing {} failed", controller, e);
            }
        }
        timer.shutdownNow();
        control.shutdownNow();
        // A reconnect or teardown still running on a control thread closes queues too: let it finish (bounded)
        // before the reactors close theirs, so no queue is closed from two threads at once.
        try {
            if (!control.awaitTermination(5, TimeUnit.SECONDS)) {
                LOG.warn("host control threads still busy after 5 s; closing the reactors anyway");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        tcp.close();
        Fabric r = rdma;
        if (r != null) {
            r.close();
        }
        HostMetrics m = metrics;
        if (m != null) {
            m.close();
        }
    }

    private void checkOpen() {
        if (closed) {
            throw new IllegalStateException("host is closed");
        }
    }

    // ---- for controllers -----------------------------------------------------------------------------------------

    HostTransport transport(TransportType type) {
        return fabric(type).transport;
    }

    /** Reactor for the {@code index}-th queue of a controller on {@code type}: round-robin over its reactors. */
    HostReactor reactor(TransportType type, int index) {
        List<HostReactor> reactors = fabric(type).reactors;
        return reactors.get(Math.floorMod(index, reactors.size()));
    }

    /**
     * The transport and reactors for {@code type}; RDMA's are made on first use.
     *
     * @throws IllegalArgumentException for a transport this build or machine cannot use, saying why (for RDMA:
     *                                  {@code Rdma.unavailabilityCause()})
     */
    private Fabric fabric(TransportType type) {
        if (type == TransportType.TCP) {
            return tcp;
        }
        if (type != TransportType.RDMA) {
            throw new IllegalArgumentException("transport " + type.configName() + " is not supported (tcp or rdma)");
        }
        Fabric r = rdma;
        if (r != null) {
            return r;
        }
        synchronized (this) {
            checkOpen();
            if (rdma == null) {
                RdmaHostTransport transport;
                try {
                    transport = new RdmaHostTransport();
                } catch (UnsupportedOperationException e) {
                    throw new IllegalArgumentException("transport rdma cannot be used here: " + e.getMessage(), e);
                } catch (LinkageError e) {
                    throw new IllegalArgumentException("transport rdma cannot be used here: " + e, e);
                }
                rdma = new Fabric(transport, reactorThreads, reactorThreads, "nvmeof-host-rdma-reactor-", pinning);
                HostMetrics m = metrics;
                if (m != null) {
                    m.reactors(rdma.reactors); // made after the metrics, so their gauges come now
                }
            }
            return rdma;
        }
    }

    /** A transport with its own host reactors (each reactor polls one transport's poll group). */
    private static final class Fabric {
        final HostTransport transport;
        final List<HostReactor> reactors = new ArrayList<>();

        /**
         * @param firstSlot the first reactor's {@link HostReactor.ReactorThread#slot}
         * @param pinning   null, or where reactor i pins itself ({@link ReactorPinning#cpu(int) cpu(i)})
         */
        Fabric(HostTransport transport, int threads, int firstSlot, String namePrefix, ReactorPinning pinning) {
            this.transport = transport;
            for (int i = 0; i < threads; i++) {
                reactors.add(new HostReactor(namePrefix + i, transport.createPollGroup(), firstSlot + i, pinning, i));
            }
        }

        void close() {
            for (HostReactor reactor : reactors) {
                reactor.close();
            }
            transport.close();
        }
    }

    /** How many reactor slots ({@link HostReactor.ReactorThread#slot}) this host may use: one per thread per fabric. */
    int reactorSlots() {
        return 2 * reactorThreads;
    }

    ScheduledExecutorService timer() {
        return timer;
    }

    ExecutorService control() {
        return control;
    }

    /**
     * The blocking calls (connect, discover, admin commands) wait for completions that the host reactors deliver:
     * on a reactor thread (an I/O callback) such a call could only time out, and its timeout closes the queue.
     * Refused at once instead, naming the thread.
     */
    void checkNotOnReactor(String what) {
        if (isReactorThread()) {
            throw new IllegalStateException(what + " blocks until the target answers and was called on host reactor"
                + " thread " + Thread.currentThread().getName() + ", which delivers those answers: call it from"
                + " another thread (a callback can hand it to an executor)");
        }
    }

    boolean isReactorThread() {
        Thread current = Thread.currentThread();
        for (Fabric f : new Fabric[] {tcp, rdma}) {
            if (f == null) {
                continue;
            }
            for (HostReactor reactor : f.reactors) {
                if (reactor.thread() == current) {
                    return true;
                }
            }
        }
        return false;
    }

    void forget(NvmeofController controller) {
        controllers.remove(controller);
    }

    private static ThreadFactory daemon(String name) {
        AtomicInteger n = new AtomicInteger();
        return r -> {
            // Started on first use, possibly from a reactor's callback: off a pinned reactor's CPU first.
            Thread t = new Thread(ReactorPinning.housekeeping(r), name + "-" + n.getAndIncrement());
            t.setDaemon(true);
            return t;
        };
    }
}
