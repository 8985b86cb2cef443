package io.nvmeof4j.target.daemon;

import io.nvmeof4j.jni.rdma.Rdma;
import io.nvmeof4j.protocol.auth.DhchapCredentials;
import io.nvmeof4j.protocol.buffer.OffHeapBufferPool;
import io.nvmeof4j.protocol.spi.PollGroup;
import io.nvmeof4j.protocol.spi.TransportAddress;
import io.nvmeof4j.protocol.spi.TransportListener;
import io.nvmeof4j.jni.NativeIoException;
import io.nvmeof4j.jni.bdev.Bdev;
import io.nvmeof4j.jni.bdev.BdevRegion;
import io.nvmeof4j.jni.bdev.UringOptions;
import io.nvmeof4j.target.backend.BdevChannels;
import io.nvmeof4j.target.backend.QosLimits;
import io.nvmeof4j.target.backend.QosWaits;
import io.nvmeof4j.protocol.spi.TransportType;
import io.nvmeof4j.rdma.RdmaControllerTransport;
import io.nvmeof4j.target.backend.BlockDevice;
import io.nvmeof4j.target.backend.NullBlockDevice;
import io.nvmeof4j.target.backend.RamBlockDevice;
import io.nvmeof4j.target.backend.UringBlockDevice;
import io.nvmeof4j.target.config.BackendType;
import io.nvmeof4j.target.config.BuildVersion;
import io.nvmeof4j.target.config.ConfigException;
import io.nvmeof4j.target.config.DaemonSettings;
import io.nvmeof4j.target.config.NamespaceConfig;
import io.nvmeof4j.target.config.PortConfig;
import io.nvmeof4j.target.config.ReferralConfig;
import io.nvmeof4j.target.config.Sizes;
import io.nvmeof4j.target.config.SubsystemConfig;
import io.nvmeof4j.target.config.TargetConfig;
import io.nvmeof4j.target.control.ControlPlane;
import io.nvmeof4j.target.control.rpc.RpcServer;
import io.nvmeof4j.target.controller.Controller;
import io.nvmeof4j.target.controller.ControllerQueueHandlerFactory;
import io.nvmeof4j.target.controller.ControllerRegistry;
import io.nvmeof4j.target.config.HttpSecurity;
import io.nvmeof4j.target.http.ApiToken;
import io.nvmeof4j.target.http.HttpApiServer;
import io.nvmeof4j.target.limits.NamespaceRefusedException;
import io.nvmeof4j.target.limits.PathConfinement;
import io.nvmeof4j.target.limits.RamBudget;
import io.nvmeof4j.target.io.NvmCommands;
import io.nvmeof4j.target.metrics.TargetMeterNames;
import io.nvmeof4j.target.metrics.TargetMetrics;
import io.nvmeof4j.target.model.AnaStates;
import io.nvmeof4j.target.model.Namespace;
import io.nvmeof4j.target.model.Port;
import io.nvmeof4j.target.model.Referral;
import io.nvmeof4j.target.model.Subsystem;
import io.nvmeof4j.target.model.TargetModel;
import io.nvmeof4j.target.reactor.Reactor;
import io.nvmeof4j.target.reservation.Reservations;
import io.nvmeof4j.tcp.TcpControllerTransport;
import io.nvmeof4j.tcp.tls.HostPskStore;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.net.BindException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashSet;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.Map;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The running target: the devices, the model, the reactors and the listeners a {@link TargetConfig} asks for.
 *
 * <h2>Start</h2>
 * {@link #start} checks the files the configuration names once more, opens every enabled namespace's device,
 * builds the {@link TargetModel}, creates per reactor one {@link OffHeapBufferPool} over one mapped region (registered
 * once as the reactor's io_uring fixed buffer and, with RDMA, once per protection domain), an NVMe-oF/RDMA poll group
 * when RDMA ports are served (first, so an idle reactor blocks on its completion channel), an NVMe/TCP poll group when
 * TCP ports are served, and one block-device poll group ({@link BdevChannels}: the reactor's io_uring); starts the
 * reactors, then binds every port in configuration order (port 0: any free port; the model's port is replaced by its
 * bound form), each with its own {@link ControllerQueueHandlerFactory}. Without RDMA (no rdma-core, no device) RDMA
 * ports are skipped with a warning giving {@code Rdma.unavailabilityCause()}, and the rest is served. A daemon that
 * started without an RDMA port gets its NVMe-oF/RDMA transport and one RDMA poll group per reactor (on that
 * reactor's pool, handed to the running reactor) with the first RDMA port added live ({@link #addPort}); they stay
 * when the last RDMA port is removed (idle groups cost one empty completion poll per reactor round). If any step
 * fails, everything done so far is undone (listeners closed, reactors stopped, devices closed, files this start
 * created removed) and the error is thrown: the daemon never half-starts. With {@code metrics} on (the default) every
 * subsystem and namespace is bound to a {@link TargetMetrics} before the first Connect; with {@code http} set (default
 * 127.0.0.1:9480) the {@link HttpApiServer} serves {@code /metrics} and the management API once every port is bound.
 *
 * <h2>Live changes</h2>
 * {@link #addNamespace} and {@link #removeNamespace} (the management API) open and close devices through the
 * same path as the configured namespaces, one change at a time, and announce the change to connected hosts
 * (namespace attribute changed). The data path's namespace lookup stays a lock-free copy-on-write array. They are held
 * to limits the configuration file is not: a file or block device must lie inside {@code allowed_paths}
 * ({@link PathConfinement}, checked here so no caller can skip it). Every RAM namespace, configured or live,
 * reserves its size from the {@link RamBudget} before its device is created; the configuration's are reserved first
 * thing at start, so a configuration beyond the budget fails before anything is allocated.
 *
 * <h2>Close</h2>
 * {@link #close()} is the orderly shutdown, each step bounded and each failure logged with what it concerned:
 * stop accepting connections; let the controllers finish the commands in flight and disconnect every queue
 * ({@link ControllerRegistry#shutdown}, bounded by {@code shutdown_timeout_ms}); stop the reactors (their poll
 * groups close the remaining sockets and wait for the block I/O in flight); close the devices (files fsync).
 * Idempotent and thread-safe: a second caller waits (bounded) for the first to finish.
 */
public final class TargetDaemon implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(TargetDaemon.class);

    /** How long a reactor gets to stop and close its poll groups. */
    /** Longer than a reactor's ring drain on close (so a slow disk finishes draining before devices close). */
    public static final Duration REACTOR_STOP_TIMEOUT =
        Duration.ofNanos(io.nvmeof4j.jni.bdev.BdevPollGroup.CLOSE_DRAIN_NANOS).plusSeconds(2);
    /** How long a file device gets to finish its I/O and fsync when closed. */
    public static final Duration DEVICE_CLOSE_TIMEOUT = Duration.ofSeconds(10);

    private final TargetConfig config;
    private final TargetModel model = new TargetModel();
    /** Open devices, in opening order, with the namespace each serves (for shutdown messages). */
    private final List<OpenDevice> devices = new ArrayList<>();
    private final List<Path> createdFiles = new ArrayList<>();
    private final List<Reactor> reactors = new ArrayList<>();
    private final List<TransportListener> listeners = new ArrayList<>();
    private final List<TransportAddress> listenAddresses = new ArrayList<>();
    /** The listener of each served port, by PORTID (a port added or removed live too). */
    private final Map<Integer, TransportListener> listenerByPort = new HashMap<>();
    /** Every reactor's NVMe/TCP and NVMe-oF/RDMA poll group: what a port added live listens with. */
    private final List<PollGroup> tcpGroups = new ArrayList<>();
    private final List<PollGroup> rdmaGroups = new ArrayList<>();
    /** Each reactor's buffer pool, by reactor index: what a poll group created live draws from. */
    private final List<OffHeapBufferPool> pools = new ArrayList<>();
    /**
     * Each reactor's buffer-wait counters, summed by its resource-wait meter; a poll group created live adds its own
     * (copy-on-write: the meter reads from a scrape thread).
     */
    private final List<List<java.util.function.LongSupplier>> bufferWaits = new ArrayList<>();
    private NvmCommands nvm;
    private TcpControllerTransport transport;
    /** Each host's TLS PSK ({@code hosts[].tls_key}), as every TLS port's handshakes look them up; changed live. */
    private HostPskStore tlsKeys;
    /** Created with the first RDMA port (at start or live); serving once every reactor has its RDMA group. */
    private RdmaControllerTransport rdmaTransport;
    private volatile boolean rdmaServed;
    /** TCP poll groups exist (always, unless the daemon started with RDMA ports only). */
    private volatile boolean tcpServed;
    /** The ports started: every configured port, less RDMA ports when RDMA is unavailable. */
    private List<PortConfig> servedPorts = List.of();
    private ControllerRegistry registry;
    private TargetMetrics metrics;
    private HttpApiServer http;
    /** Every live change goes through it (HTTP API, JSON-RPC), and is persisted by it. */
    private ControlPlane controlPlane;
    private volatile RpcServer rpc;
    /** What RAM namespaces may hold together; every one, configured or live, reserves its size here first. */
    private RamBudget ramBudget;
    /** What connected NVMe/TCP queues may hold in buffers together ({@code queue_buffer_budget_mib}). */
    private io.nvmeof4j.protocol.spi.MemoryBudget queueBufferBudget;
    /** Where live file and block-device namespaces may lie ({@code allowed_paths}). */
    private PathConfinement confinement;
    private boolean started;
    private final AtomicBoolean closing = new AtomicBoolean();
    private final CountDownLatch closed = new CountDownLatch(1);

    private TargetDaemon(TargetConfig config) {
        this.config = config;
    }

    /**
     * Opens, builds, starts and binds everything the configuration describes.
     *
     * @throws ConfigException when a file the configuration needs has gone or changed since it was loaded
     * @throws IOException     when a device cannot be opened or a port cannot be bound; the message names the
     *                         namespace or the port ({@code ports[0] (portid 1): cannot listen on tcp://…})
     */
    public static TargetDaemon start(TargetConfig config) throws IOException {
        config.checkEnvironment();
        TargetDaemon daemon = new TargetDaemon(config);
        try {
            daemon.startUp();
            return daemon;
        } catch (IOException | RuntimeException | Error e) {
            LOG.error("start failed: {}; undoing what was started", e.getMessage());
            daemon.close();
            throw e;
        }
    }

    private void startUp() throws IOException {
        long begin = System.nanoTime();
        DaemonSettings settings = config.daemon();
        LOG.info("nvmeof4j target {} starting: {} subsystem(s), {} port(s), {} reactor(s), idle strategy {}",
            BuildVersion.version(), config.subsystems().size(), config.ports().size(), settings.reactors(),
            settings.idleStrategy().configName());
        // The API token first: a token file that cannot be read fails the start before anything is opened.
        ApiToken token = settings.http() == null ? null
            : ApiToken.loadOrCreate(settings.httpSecurity().apiTokenFile());
        reserveConfiguredRam(settings);
        queueBufferBudget = new io.nvmeof4j.protocol.spi.MemoryBudget(settings.queueBufferBudgetBytes(),
            "queue buffer budget of " + Sizes.format(settings.queueBufferBudgetBytes()) + " (nvmeof4j."
                + DaemonSettings.QUEUE_BUFFER_BUDGET_MIB + ")");
        confinement = new PathConfinement(settings.allowedPaths());
        servedPorts = portsToServe();
        buildModel();
        if (settings.metrics()) {
            bindMetrics();
        }

        transport = new TcpControllerTransport(io.nvmeof4j.tcp.TcpTransportOptions.defaults(), queueBufferBudget);
        tlsKeys = new HostPskStore(config.tlsKeys());
        transport.pskResolver(tlsKeys);
        boolean rdma = servedPorts.stream().anyMatch(p -> p.transportType() == TransportType.RDMA);
        boolean tcp = !rdma || servedPorts.stream().anyMatch(p -> p.transportType() == TransportType.TCP);
        int largestBuffer = config.largestBuffer();
        for (int i = 0; i < settings.reactors(); i++) {
            Reactor reactor = new Reactor("nvmeof-reactor-" + i, settings.idleStrategy(), settings.idleSpinNanos());
            reactors.add(reactor);
            OffHeapBufferPool pool = new OffHeapBufferPool(largestBuffer, poolRegion(reactor, settings));
            pools.add(pool);
            if (metrics != null) {
                metrics.bindPool(i, pool);
            }
            List<java.util.function.LongSupplier> waits = new java.util.concurrent.CopyOnWriteArrayList<>();
            bufferWaits.add(waits);
            if (rdma) {
                // First: an idle reactor blocks on its first group's wait primitive (here the completion channel).
                addRdmaGroup(i);
            }
            if (tcp) {
                // Only when TCP ports exist: an idle group still costs a selectNow per reactor round.
                addTcpGroup(i);
            }
            if (metrics != null) {
                metrics.bindResourceWaits(i, TargetMeterNames.RESOURCE_BUFFER_POOL, waits,
                    ws -> ws.stream().mapToLong(java.util.function.LongSupplier::getAsLong).sum());
            }
            // Every reactor: a RAM namespace's I/O waits for its QoS budget as a file namespace's does.
            QosWaits qosWaits = new QosWaits(reactor.name() + " QoS");
            reactor.add(qosWaits);
            if (metrics != null) {
                metrics.bindResourceWaits(i, TargetMeterNames.RESOURCE_QOS, qosWaits, QosWaits::waits);
            }
            if (Bdev.isAvailable()) {
                try {
                    BdevChannels channels = new BdevChannels(reactor.name() + " block I/O", pool,
                        BdevChannels.entriesFromProperty());
                    reactor.add(channels);
                    if (metrics != null) {
                        metrics.bindResourceWaits(i, TargetMeterNames.RESOURCE_IO_URING, channels, BdevChannels::waits);
                    }
                } catch (NativeIoException e) {
                    // io_uring refused (a seccomp profile, kernel.io_uring_disabled): RAM and null namespaces still
                    // serve; file and block-device namespaces answer Namespace Not Ready on this reactor.
                    LOG.warn("{}: no io_uring for file and block-device namespaces: {}", reactor.name(),
                        e.getMessage());
                }
            }
        }
        rdmaServed = rdma;
        tcpServed = tcp;
        for (Reactor reactor : reactors) {
            reactor.start();
        }
        registry = new ControllerRegistry(config.maxIoQueues());
        registry.hostKeys().replaceAll(config.hostCredentials());
        registry.tlsKeys(tlsKeys);
        if (metrics != null) {
            metrics.bindControllers(registry);
        }
        nvm = new NvmCommands();

        for (PortConfig pc : servedPorts) {
            listen(pc, findPort(pc.portId()));
        }
        controlPlane = new ControlPlane(this, config, config.source().orElse(null));
        startHttp(settings, token);
        started = true;
        LOG.info("nvmeof4j target started in {} ms, listening on {}{}",
            TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - begin), listenAddresses,
            http == null ? "" : "; HTTP (metrics, management API) on " + http.url() + ", API token in "
                + http.tokenFile());
    }

    /** Binds a port of the model (configured, or added live) and replaces it in the model by its bound form. */
    private void listen(PortConfig pc, Port port) throws IOException {
        ControllerQueueHandlerFactory handlers = new ControllerQueueHandlerFactory(model, port, nvm, registry,
            metrics);
        TransportListener listener;
        try {
            if (pc.transportType() == TransportType.RDMA) {
                serveRdma();
                listener = rdmaTransport.listen(port.address(), port.options(), rdmaGroups, handlers);
            } else {
                serveTcp();
                listener = transport.listen(port.address(), port.options(), tcpGroups, handlers);
            }
        } catch (IOException e) {
            throw new IOException(pc.where() + " (portid " + pc.portId() + "): " + e.getMessage(), e);
        }
        listeners.add(listener);
        listenerByPort.put(pc.portId(), listener);
        model.replacePort(port, port.boundTo(listener.address()));
        listenAddresses.add(listener.address());
    }

    /**
     * Makes every reactor serve NVMe-oF/RDMA, for the first RDMA port added live to a daemon that started without
     * one (a no-op once served). Creates the transport and, per reactor that has none yet, an RDMA poll group on that
     * reactor's pool, handed to the running reactor. A failure part-way leaves the groups already handed over (idle:
     * no listener feeds them) and serves nothing: the port is refused, and the next RDMA port completes the set.
     * Under the daemon's lock (start, or a live change).
     */
    private void serveRdma() throws IOException {
        if (rdmaServed) {
            return;
        }
        if (!Rdma.isAvailable()) {
            throw new IOException(rdmaUnavailableReason());
        }
        addGroupsToRunningReactors("NVMe-oF/RDMA", rdmaGroups, this::addRdmaGroup);
        rdmaServed = true;
    }

    /**
     * A daemon started with RDMA ports only has no TCP poll groups (each would cost a selectNow per reactor round);
     * the first TCP port added live gives every running reactor one, as {@link #serveRdma()} does for RDMA.
     */
    private void serveTcp() throws IOException {
        if (tcpServed) {
            return;
        }
        addGroupsToRunningReactors("NVMe/TCP", tcpGroups, this::addTcpGroup);
        tcpServed = true;
    }

    /**
     * The first live listener of a transport the daemon did not start with: a poll group for every reactor that has
     * none yet (one that refused its group before, its task queue full, gets it now).
     */
    private void addGroupsToRunningReactors(String transport, List<PollGroup> groups,
                                            java.util.function.IntConsumer addGroup) throws IOException {
        for (int i = groups.size(); i < reactors.size(); i++) {
            try {
                addGroup.accept(i);
            } catch (RuntimeException e) {
                throw new IOException(reactors.get(i) + ": cannot add an " + transport + " poll group: "
                    + e.getMessage(), e);
            }
        }
        LOG.info("{} served from now on: one poll group added to each of the {} running reactor(s)", transport,
            reactors.size());
    }

    /** Creates reactor {@code index}'s TCP poll group on its pool and hands it to the reactor (started or not). */
    private void addTcpGroup(int index) {
        io.nvmeof4j.tcp.TcpPollGroup group = transport.createPollGroup(pools.get(index));
        try {
            reactors.get(index).add(group);
        } catch (RuntimeException e) {
            group.close(); // never polled: it has no connection yet
            throw e;
        }
        tcpGroups.add(group);
        bufferWaits.get(index).add(group::bufferWaits);
    }

    /** Creates reactor {@code index}'s RDMA poll group on its pool and hands it to the reactor (started or not). */
    private void addRdmaGroup(int index) {
        if (rdmaTransport == null) {
            rdmaTransport = new RdmaControllerTransport();
        }
        io.nvmeof4j.rdma.RdmaPollGroup group = rdmaTransport.createPollGroup(pools.get(index));
        try {
            reactors.get(index).add(group);
        } catch (RuntimeException e) {
            group.close(); // never polled: it has no queue and no device yet
            throw e;
        }
        rdmaGroups.add(group);
        bufferWaits.get(index).add(group::bufferWaits);
    }

    /** Every subsystem, the discovery subsystem and every namespace get their meters before the first Connect. */
    private void bindMetrics() {
        Set<io.nvmeof4j.protocol.spi.TransportType> types = EnumSet.noneOf(io.nvmeof4j.protocol.spi.TransportType.class);
        for (PortConfig pc : config.servablePorts()) {
            types.add(pc.address().type());
        }
        // A TCP port may be added live, to an RDMA-only daemon too.
        types.add(io.nvmeof4j.protocol.spi.TransportType.TCP);
        if (Rdma.isAvailable()) {
            // An RDMA port may be added live: its queues are timed like those of a configured one.
            types.add(io.nvmeof4j.protocol.spi.TransportType.RDMA);
        }
        metrics = TargetMetrics.prometheus(types);
        metrics.bindSubsystem(Port.DISCOVERY_NQN);
        metrics.bindRamBudget(ramBudget);
        metrics.bindQueueBufferBudget(queueBufferBudget);
        for (Subsystem s : model.subsystems()) {
            metrics.bindSubsystem(s.nqn());
            for (Namespace ns : s.namespaces()) {
                metrics.bindNamespace(s, ns);
            }
        }
    }

    private void startHttp(DaemonSettings settings, ApiToken token) throws IOException {
        if (settings.http() == null) {
            LOG.info("HTTP server off (\"http\": \"off\"): no /metrics, no management API");
            return;
        }
        InetSocketAddress address = DaemonSettings.parseHttpAddress(settings.http());
        HttpSecurity security = settings.httpSecurity();
        InetSocketAddress metricsAddress = security.metricsHttp() == null ? null
            : DaemonSettings.parseHttpAddress(security.metricsHttp());
        try {
            http = HttpApiServer.start(address, metricsAddress, security, token, this);
        } catch (IOException e) {
            if (!settings.httpExplicit() && metricsAddress == null && e instanceof BindException) {
                // Only the default address: a second daemon on the same machine still starts, without HTTP.
                LOG.warn("HTTP server not started: the default address {} is taken ({}); set \"http\" in the "
                    + "\"nvmeof4j\" section or --http to use another", settings.http(), e.getMessage());
                return;
            }
            throw new IOException("nvmeof4j.http: cannot serve HTTP on " + settings.http()
                + (metricsAddress == null ? "" : " and " + security.metricsHttp()) + ": " + e.getMessage(), e);
        }
    }

    private static ByteBuffer poolRegion(Reactor reactor, DaemonSettings settings) throws IOException {
        if (!Bdev.isAvailable()) {
            return ByteBuffer.allocateDirect((int) Math.min(Integer.MAX_VALUE, settings.bufferPoolBytes()));
        }
        BdevRegion region = BdevRegion.map(Math.min(Integer.MAX_VALUE, settings.bufferPoolBytes()), settings.hugepages());
        if (settings.hugepages() && !region.hugepages()) {
            LOG.warn("{}: no hugepages for the {} buffer pool (errno {}; reserve some with vm.nr_hugepages): "
                + "using normal pages", reactor.name(), Sizes.format(region.length()), region.hugepageFailure());
        }
        reactor.own(region);
        return region.buffer();
    }

    /**
     * The configured ports this machine can serve: RDMA ports only when RDMA is available (else each is named
     * with the reason, and the daemon serves the rest).
     */
    private List<PortConfig> portsToServe() throws IOException {
        List<PortConfig> served = new ArrayList<>();
        Throwable rdmaCause = null;
        boolean rdmaChecked = false;
        for (PortConfig p : config.servablePorts()) {
            if (p.transportType() == TransportType.RDMA) {
                if (!rdmaChecked) {
                    rdmaCause = Rdma.unavailabilityCause();
                    rdmaChecked = true;
                }
                if (rdmaCause != null) {
                    LOG.warn("{} (portid {}, {}): not served: RDMA is unavailable: {}", p.where(), p.portId(),
                        p.address(), rdmaCause.getMessage());
                    continue;
                }
            }
            served.add(p);
        }
        if (served.isEmpty() && !config.servablePorts().isEmpty()) {
            throw new IOException("nothing to serve: every port is RDMA and RDMA is unavailable: "
                + (rdmaCause == null ? "?" : rdmaCause.getMessage()));
        }
        return served;
    }

    private Port findPort(int portId) {
        for (Port p : model.ports()) {
            if (p.portId() == portId) {
                return p;
            }
        }
        throw new IllegalStateException("port " + portId + " missing from the model");
    }

    private void buildModel() throws IOException {
        for (SubsystemConfig sc : config.subsystems()) {
            Subsystem subsystem = new Subsystem(sc.nqn(), sc.serial(), sc.model(), sc.firmware(), sc.allowAnyHost());
            subsystem.cntlidRange(sc.cntlidMin(), sc.cntlidMax());
            for (String host : sc.allowedHosts()) {
                subsystem.addAllowedHost(host);
            }
            for (NamespaceConfig nc : sc.namespaces()) {
                if (!nc.enabled()) {
                    continue;
                }
                BlockDevice device = open(sc.nqn(), nc, UringOptions.Confinement.NONE);
                Namespace namespace = new Namespace(nc.nsid(), device, nc.uuid(), nc.nguid(), nc.anaGroupId(),
                    reservations(sc.nqn(), nc));
                namespace.qos().limits(nc.qos());
                subsystem.addNamespace(namespace);
                LOG.info("{} namespace {}: {}, {} blocks of {} bytes, uuid {}", sc.nqn(),
                    Integer.toUnsignedString(nc.nsid()), device.description(), device.blockCount(), device.blockSize(),
                    nc.uuid());
            }
            model.addSubsystem(subsystem);
        }
        for (PortConfig pc : servedPorts) {
            Set<String> exported = new LinkedHashSet<>(pc.subsystems());
            model.addPort(new Port(pc.portId(), pc.address(), pc.options(), exported, new AnaStates(pc.anaGroups())));
            model.referrals(pc.portId(), referrals(pc.referrals()));
        }
    }

    /**
     * The one place devices are created (configured namespaces and namespaces added through the API alike).
     *
     * @param confinement what a live namespace's path was checked to be ({@link PathConfinement}); NONE for the
     *                    configuration's namespaces
     */
    private BlockDevice open(String subsystemNqn, NamespaceConfig nc, UringOptions.Confinement confinement)
        throws IOException {
        String label = subsystemNqn + " namespace " + Integer.toUnsignedString(nc.nsid());
        BlockDevice device;
        try {
            if (nc.backend() == BackendType.RAM) {
                device = new RamBlockDevice("", nc.sizeBytes(), nc.blockSize());
            } else if (nc.backend() == BackendType.NULL) {
                device = new NullBlockDevice("", nc.sizeBytes(), nc.blockSize());
            } else {
                if (!Bdev.isAvailable()) {
                    throw new IOException("the io_uring block-device library is not available: "
                        + Bdev.unavailabilityCause());
                }
                boolean existed = Files.exists(nc.path());
                device = UringBlockDevice.open(nc.path(), nc.sizeBytes(), nc.blockSize(), nc.bufferedIo(), confinement,
                    nc.shared());
                if (!existed) {
                    createdFiles.add(nc.path());
                    LOG.info("{}: created {} ({}, sparse)", nc.where(), nc.path(), Sizes.format(nc.sizeBytes()));
                }
            }
        } catch (IOException | RuntimeException e) {
            throw new IOException(nc.where() + " (" + label + "): cannot open "
                + (nc.path() != null ? nc.path() : nc.backend().configName() + " device") + ": " + e.getMessage(), e);
        } catch (OutOfMemoryError e) {
            // The budget keeps a RAM device's chunk table small; should memory still run out, this namespace is
            // refused and the daemon keeps serving the others.
            throw new IOException(nc.where() + " (" + label + "): not enough memory for the "
                + nc.backend().configName() + " device: " + e.getMessage());
        }
        synchronized (devices) {
            devices.add(new OpenDevice(label, device));
        }
        return device;
    }

    /**
     * The reservation state of a namespace. A file namespace's is persisted in {@link #reservationFile}; RAM and null
     * namespaces lose their data with the daemon, so their reservations live in memory only.
     */
    private Reservations reservations(String subsystemNqn, NamespaceConfig nc) throws IOException {
        if (nc.backend() != BackendType.FILE) {
            return new Reservations(null);
        }
        Path file = reservationFile(subsystemNqn, nc.nsid());
        try {
            Reservations r = Reservations.load(file);
            Reservations.Report report = r.report();
            if (!report.registrants().isEmpty()) {
                LOG.info("{} namespace {}: {} registrant(s), reservation type {} restored from {}", subsystemNqn,
                    Integer.toUnsignedString(nc.nsid()), report.registrants().size(), report.type(), file);
            }
            return r;
        } catch (IOException e) {
            throw new IOException(nc.where() + ": reservation state: " + e.getMessage(), e);
        }
    }

    /**
     * Where a file namespace's reservations are kept: next to the configuration file, in
     * {@code <config file>.reservations/<subsystem NQN>-<NSID>.json} (characters other than letters, digits, '.',
     * '-' and '_' in the NQN become '_'); for a daemon started without a configuration file, under the state
     * directory ({@code $XDG_STATE_HOME/nvmeof4j/reservations}, else {@code ~/.local/state/nvmeof4j/reservations}).
     */
    public Path reservationFile(String subsystemNqn, int nsid) {
        Path dir = config.source()
            .map(src -> src.toAbsolutePath().resolveSibling(src.getFileName() + ".reservations"))
            .orElseGet(() -> HttpSecurity.stateDirectoryTokenFile().getParent().resolve("reservations"));
        return dir.resolve(subsystemNqn.replaceAll("[^A-Za-z0-9._-]", "_") + "-" + Integer.toUnsignedString(nsid)
            + ".json");
    }

    /**
     * Changes the ANA state of group {@code group} on port {@code portId} (management API) and raises the ANA change
     * event on every controller connected through that port.
     *
     * @return the previous state
     * @throws IllegalArgumentException no such port, group or state
     */
    public int setAnaState(int portId, int group, int state) {
        checkRunning();
        Port port = null;
        for (Port p : model.ports()) {
            if (p.portId() == portId) {
                port = p;
            }
        }
        if (port == null) {
            throw new IllegalArgumentException("no port " + portId);
        }
        int old = port.ana().state(group, state);
        LOG.info("port {}: ANA group {} {} -> {}", portId, group, io.nvmeof4j.protocol.ana.AnaState.name(old),
            io.nvmeof4j.protocol.ana.AnaState.name(state));
        for (io.nvmeof4j.target.controller.Controller c : registry.controllers()) {
            if (!c.isDiscovery() && c.port().portId() == portId) {
                c.notifyAnaChanged();
            }
        }
        return old;
    }

    // ---------------------------------------------------------------------------------------------- live changes

    /**
     * Adds a namespace to a running subsystem (management API): opens its device through the path configured
     * namespaces take, binds its meters, publishes it to the data path, then raises the namespace attribute changed
     * event on every controller of the subsystem so hosts rescan. All or nothing: if any step fails, what was done
     * is undone (device closed, a file this call created removed) and the error is thrown.
     *
     * @throws IllegalArgumentException the subsystem does not exist
     * @throws IllegalStateException    the NSID is taken, or the daemon is not running
     * @throws NamespaceRefusedException a file outside {@code allowed_paths}, or RAM beyond the budget; nothing was
     *                                  opened, created or allocated
     * @throws ConfigException          the (allowed) file cannot be used: missing without a size, unreadable, ...
     * @throws IOException              the device cannot be opened (the message names the namespace)
     */
    public synchronized Namespace addNamespace(String subsystemNqn, NamespaceConfig nc) throws IOException {
        checkRunning();
        Subsystem subsystem = model.subsystem(subsystemNqn);
        if (subsystem == null) {
            throw new IllegalArgumentException("no subsystem " + subsystemNqn);
        }
        if (subsystem.namespace(nc.nsid()) != null) {
            throw new IllegalStateException(subsystemNqn + " already has namespace " + Integer.toUnsignedString(nc.nsid()));
        }
        String label = subsystemNqn + " namespace " + Integer.toUnsignedString(nc.nsid());
        UringOptions.Confinement kind = UringOptions.Confinement.NONE;
        if (nc.backend() == BackendType.FILE) {
            // Whatever the request said, a live namespace's file lies inside allowed_paths: checked before the
            // file is looked at for anything else, opened by the checked real path without following symlinks.
            PathConfinement.Checked checked = confinement.check(nc.path(), nc.sizeBytes() > 0);
            nc = nc.withPath(checked.realPath());
            kind = checked.kind();
            TargetConfig.checkNamespaceFile(nc);
        }
        long ramReserved = 0;
        if (nc.backend() == BackendType.RAM) {
            ramBudget.reserve(nc.sizeBytes(), label);
            ramReserved = nc.sizeBytes();
        }
        int createdBefore = createdFiles.size();
        BlockDevice device;
        try {
            device = open(subsystemNqn, nc, kind);
        } catch (IOException | RuntimeException | Error e) {
            ramBudget.release(ramReserved);
            throw e;
        }
        Namespace namespace = null;
        boolean added = false;
        try {
            namespace = new Namespace(nc.nsid(), device, nc.uuid(), nc.nguid(), nc.anaGroupId(),
                reservations(subsystemNqn, nc));
            namespace.qos().limits(nc.qos());
            if (metrics != null) {
                // This NSID has no meters (checked above, and changes are serialised): unbinding below on failure
                // removes only what this call bound.
                metrics.bindNamespace(subsystem, namespace);
            }
            added = subsystem.addNamespace(namespace);
            if (!added) {
                throw new IllegalStateException(subsystemNqn + " already has namespace "
                    + Integer.toUnsignedString(nc.nsid()));
            }
        } finally {
            if (!added) {
                if (metrics != null && namespace != null) {
                    metrics.unbindNamespace(namespace);
                }
                closeDevice(device);
                ramBudget.release(ramReserved);
                if (createdFiles.size() > createdBefore) {
                    Path created = createdFiles.remove(createdFiles.size() - 1);
                    try {
                        Files.deleteIfExists(created);
                    } catch (IOException e) {
                        // Do not hide why the add failed; say what is left behind.
                        LOG.warn("{}: created for namespace {}, not removed after the failed add: {}", created,
                            Integer.toUnsignedString(nc.nsid()), e.toString());
                    }
                }
            }
        }
        // The file is the namespace's now: a later failed start must not delete it.
        while (createdFiles.size() > createdBefore) {
            createdFiles.remove(createdFiles.size() - 1);
        }
        LOG.info("{} namespace {} added: {}, {} blocks of {} bytes, uuid {}", subsystemNqn,
            Integer.toUnsignedString(nc.nsid()), device.description(), device.blockCount(), device.blockSize(),
            nc.uuid());
        registry.notifyNamespaceChanged(subsystemNqn, nc.nsid());
        return namespace;
    }

    /**
     * Removes a namespace from a running subsystem (management API): new commands for it fail with Invalid
     * Namespace at once, connected hosts get the namespace attribute changed event, and its device is closed, which
     * waits (bounded) for the I/O already submitted to it; I/O that looked the namespace up just before the removal
     * and reaches the closed device completes with Namespace Not Ready. Returns the removed namespace, or null.
     *
     * @throws IllegalArgumentException the subsystem does not exist
     */
    public synchronized Namespace removeNamespace(String subsystemNqn, int nsid) {
        checkRunning();
        Subsystem subsystem = model.subsystem(subsystemNqn);
        if (subsystem == null) {
            throw new IllegalArgumentException("no subsystem " + subsystemNqn);
        }
        Namespace removed = subsystem.removeNamespace(nsid);
        if (removed == null) {
            return null;
        }
        registry.notifyNamespaceChanged(subsystemNqn, nsid);
        releaseNamespace(subsystem, removed);
        return removed;
    }

    /**
     * Resizes a namespace's device live (control plane): {@code sizeBytes} > 0 that size, 0 the size its file or
     * block device has now (SPDK's rescan). I/O up to the new end is served from the moment this returns; the caller
     * announces it ({@link ControllerRegistry#notifyNamespaceChanged}) once the change is persisted. Returns the new
     * size in bytes.
     *
     * @throws IllegalArgumentException      no such subsystem or namespace
     * @throws UnsupportedOperationException the device cannot be resized (RAM)
     * @throws IOException                   the file or device is smaller than asked, or a rescan would shrink it
     */
    public synchronized long resizeNamespace(String subsystemNqn, int nsid, long sizeBytes) throws IOException {
        checkRunning();
        Subsystem subsystem = model.subsystem(subsystemNqn);
        Namespace ns = subsystem == null ? null : subsystem.namespace(nsid);
        if (ns == null) {
            throw new IllegalArgumentException("no namespace " + Integer.toUnsignedString(nsid) + " in "
                + subsystemNqn);
        }
        long before = ns.blockCount() * ns.blockSize();
        long after = ns.device().resize(sizeBytes);
        if (after != before) {
            LOG.info("{} namespace {} resized: {} -> {} ({} blocks of {} bytes)", subsystemNqn,
                Integer.toUnsignedString(nsid), Sizes.format(before), Sizes.format(after), ns.blockCount(),
                ns.blockSize());
        }
        return after;
    }

    /**
     * Sets a live namespace's QoS rate limits ({@link QosLimits#NONE} removes them); running I/O follows at once.
     *
     * @throws IllegalArgumentException no such subsystem or namespace
     */
    public synchronized void setQos(String subsystemNqn, int nsid, QosLimits limits) {
        checkRunning();
        Subsystem subsystem = model.subsystem(subsystemNqn);
        Namespace namespace = subsystem == null ? null : subsystem.namespace(nsid);
        if (namespace == null) {
            throw new IllegalArgumentException("no namespace " + Integer.toUnsignedString(nsid) + " in "
                + subsystemNqn);
        }
        namespace.qos().limits(limits);
        LOG.info("{} namespace {}: {}", subsystemNqn, Integer.toUnsignedString(nsid), limits);
    }

    /** Unbinds the meters of a namespace taken off the data path and closes its device once its I/O has drained. */
    private void releaseNamespace(Subsystem subsystem, Namespace removed) {
        String subsystemNqn = subsystem.nqn();
        int nsid = removed.nsid();
        // I/O waiting for the QoS budget goes to the device at its reactor's next poll (which answers it Namespace
        // Not Ready once the device stops), so nothing stays queued for a namespace that is gone.
        removed.qos().limits(QosLimits.NONE);
        if (metrics != null) {
            metrics.unbindNamespace(removed);
        }
        if (removed.device() instanceof UringBlockDevice uring) {
            // Its I/O channels live on the reactors: each reactor finishes the I/O in flight there and closes its
            // channel before the native device may be freed. If one does not in time, leak the device (say so)
            // rather than free memory a ring still completes into.
            boolean detached;
            try {
                detached = uring.detach(reactors, DEVICE_CLOSE_TIMEOUT);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                detached = false;
            }
            if (!detached) {
                LOG.error("{} namespace {} removed, but its I/O did not finish within {} ms: {} is left open",
                    subsystemNqn, Integer.toUnsignedString(nsid), DEVICE_CLOSE_TIMEOUT.toMillis(),
                    uring.description());
                forgetDevice(uring);
                return;
            }
        }
        closeDevice(removed.device());
        if (removed.device() instanceof RamBlockDevice) {
            ramBudget.release(removed.device().blockCount() * removed.device().blockSize());
        }
        LOG.info("{} namespace {} removed ({})", subsystemNqn, Integer.toUnsignedString(nsid),
            removed.device().description());
    }

    /**
     * Creates an empty subsystem (control plane): its hosts and identity from {@code sc}; its namespaces are added one
     * by one afterwards. No port exports it yet.
     *
     * @throws IllegalStateException the NQN is taken, or the daemon is not running
     */
    public synchronized Subsystem addSubsystem(SubsystemConfig sc) {
        checkRunning();
        if (model.subsystem(sc.nqn()) != null) {
            throw new IllegalStateException("subsystem " + sc.nqn() + " exists already");
        }
        Subsystem subsystem = new Subsystem(sc.nqn(), sc.serial(), sc.model(), sc.firmware(), sc.allowAnyHost());
        // Live as at start: a second daemon serving the subsystem relies on the range from the first Connect on.
        subsystem.cntlidRange(sc.cntlidMin(), sc.cntlidMax());
        for (String host : sc.allowedHosts()) {
            subsystem.addAllowedHost(host);
        }
        model.addSubsystem(subsystem);
        if (metrics != null) {
            metrics.bindSubsystem(subsystem.nqn());
        }
        LOG.info("{} created (serial {}, model {}, allow_any_host {})", sc.nqn(), sc.serial(), sc.model(),
            sc.allowAnyHost());
        return subsystem;
    }

    /**
     * Deletes a subsystem (control plane): every port stops exporting it (discovery log change event), its
     * controllers are disconnected, then its namespaces are removed as {@link #removeNamespace} does. Returns the
     * removed subsystem, or null when there was none.
     */
    public synchronized Subsystem removeSubsystem(String nqn) {
        checkRunning();
        Subsystem subsystem = model.subsystem(nqn);
        if (subsystem == null) {
            return null;
        }
        for (Port p : model.ports()) {
            if (p.exports(nqn)) {
                Set<String> rest = new LinkedHashSet<>(p.subsystems());
                rest.remove(nqn);
                model.replacePort(p, new Port(p.portId(), p.address(), p.options(), rest, p.ana()));
            }
        }
        model.removeSubsystem(nqn);
        registry.notifyDiscoveryChanged();
        for (Controller c : registry.controllers(nqn)) {
            c.disconnect("subsystem " + nqn + " deleted");
        }
        for (Namespace ns : subsystem.namespaces()) {
            releaseNamespace(subsystem, ns);
        }
        LOG.info("{} deleted", nqn);
        return subsystem;
    }

    /**
     * Starts serving a port added live (control plane): binds its listener on the reactors' poll groups, then
     * publishes it (discovery log change event).
     *
     * @throws IOException the address cannot be bound (the message names it); nothing was changed
     */
    public synchronized Port addPort(PortConfig pc) throws IOException {
        checkRunning();
        if (model.port(pc.portId()) != null) {
            throw new IllegalStateException("portid " + pc.portId() + " is in use");
        }
        Port port = new Port(pc.portId(), pc.address(), pc.options(), new LinkedHashSet<>(pc.subsystems()),
            new AnaStates(pc.anaGroups()));
        model.addPort(port);
        model.referrals(pc.portId(), referrals(pc.referrals()));
        try {
            listen(pc, port);
        } catch (IOException | RuntimeException e) {
            model.removePort(pc.portId());
            throw e;
        }
        registry.notifyDiscoveryChanged();
        LOG.info("port {} added: {} exporting {}", pc.portId(), model.port(pc.portId()).address(), pc.subsystems());
        return model.port(pc.portId());
    }

    /**
     * Sets which subsystems a served port exports (control plane): hosts get the discovery log change event; the
     * controllers of a subsystem the port no longer exports that came through this port are disconnected.
     */
    public synchronized void exportOnPort(int portId, Set<String> subsystems) {
        checkRunning();
        Port port = model.port(portId);
        if (port == null) {
            throw new IllegalArgumentException("no port " + portId);
        }
        // The same ANA states: controllers of this port keep reading them, and a change must not reset them.
        model.replacePort(port, new Port(portId, port.address(), port.options(), subsystems, port.ana()));
        registry.notifyDiscoveryChanged();
        for (Controller c : registry.controllers()) {
            if (!c.isDiscovery() && c.port().portId() == portId && !subsystems.contains(c.subsystemNqn())) {
                c.disconnect("listener " + port.address() + " removed from " + c.subsystemNqn());
            }
        }
    }

    /**
     * Stops serving a port (control plane): closes its listener, disconnects every controller that came through it
     * (discovery controllers too), and tells the others the discovery log changed. Returns it, or null.
     */
    public synchronized Port removePort(int portId) {
        checkRunning();
        Port port = model.removePort(portId);
        if (port == null) {
            return null;
        }
        TransportListener listener = listenerByPort.remove(portId);
        if (listener != null) {
            listeners.remove(listener);
            listenAddresses.remove(listener.address());
            step("closing the listener on " + listener.address(), listener::close);
        }
        for (Controller c : registry.controllers()) {
            if (c.port().portId() == portId) {
                c.disconnect("listener " + port.address() + " removed");
            }
        }
        registry.notifyDiscoveryChanged();
        LOG.info("port {} removed ({})", portId, port.address());
        return port;
    }

    /**
     * Sets the referrals a served port's discovery log lists (control plane): connected discovery controllers get
     * the discovery log change event.
     */
    public synchronized void setReferrals(int portId, List<ReferralConfig> list) {
        checkRunning();
        if (model.port(portId) == null) {
            throw new IllegalArgumentException("no port " + portId);
        }
        model.referrals(portId, referrals(list));
        registry.notifyDiscoveryChanged();
    }

    /** The enabled referrals of a port, as the discovery log lists them. */
    private static List<Referral> referrals(List<ReferralConfig> list) {
        List<Referral> served = new ArrayList<>();
        for (ReferralConfig r : list) {
            if (r.enabled()) {
                served.add(new Referral(r.portId(), r.address(), r.treqBits(), r.subnqn()));
            }
        }
        return served;
    }

    /**
     * True when NVMe-oF/RDMA listeners can be added live: the machine has RDMA (the first RDMA port added live gives
     * every running reactor its RDMA poll group, if the start did not).
     */
    public boolean servesRdma() {
        return Rdma.isAvailable();
    }

    /** Why an RDMA listener cannot be added (see {@link #servesRdma()}). */
    public String rdmaUnavailableReason() {
        Throwable cause = Rdma.unavailabilityCause();
        return "NVMe-oF/RDMA is unavailable on this machine: " + (cause == null ? "?" : cause.getMessage());
    }

    /** Takes {@code device} off the list of devices to close at shutdown; returns its entry, or null. */
    private OpenDevice forgetDevice(BlockDevice device) {
        synchronized (devices) {
            for (int i = 0; i < devices.size(); i++) {
                if (devices.get(i).device() == device) {
                    return devices.remove(i);
                }
            }
        }
        return null;
    }

    private void closeDevice(BlockDevice device) {
        OpenDevice open = forgetDevice(device);
        String label = open != null ? open.label() : device.description();
        step("closing " + label + " (" + device.description() + ")", device::close);
    }

    private void checkRunning() {
        if (!started || closing.get()) {
            throw new IllegalStateException("the target is " + (closing.get() ? "shutting down" : "not started"));
        }
    }

    /**
     * Reserves the RAM of every enabled RAM namespace of the configuration before anything is allocated: a
     * configuration whose RAM namespaces exceed the budget fails the start, naming the first that does not fit.
     */
    private void reserveConfiguredRam(DaemonSettings settings) throws ConfigException {
        ramBudget = RamBudget.of(settings);
        for (SubsystemConfig s : config.subsystems()) {
            for (NamespaceConfig n : s.namespaces()) {
                if (n.enabled() && n.backend() == BackendType.RAM) {
                    try {
                        ramBudget.reserve(n.sizeBytes(), s.nqn() + " namespace " + Integer.toUnsignedString(n.nsid()));
                    } catch (NamespaceRefusedException e) {
                        throw new ConfigException(n.where() + ".device.size", e.getMessage());
                    }
                }
            }
        }
        LOG.info("RAM namespaces reserve {} of the {}", Sizes.format(ramBudget.reservedBytes()), ramBudget.describe());
    }

    /** The control plane every live change goes through; null before the start. */
    public ControlPlane controlPlane() {
        return controlPlane;
    }

    /**
     * Serves SPDK's JSON-RPC on a Unix socket ({@code -r PATH}, {@code "rpc_socket"}); see
     * {@link RpcServer}. Closed with the daemon.
     */
    public synchronized RpcServer startRpc(Path socket) throws IOException {
        checkRunning();
        if (rpc != null) {
            throw new IllegalStateException("JSON-RPC is served on " + rpc.path() + " already");
        }
        rpc = RpcServer.start(socket, this);
        return rpc;
    }

    /** Where JSON-RPC is served, or null. */
    public Path rpcSocket() {
        RpcServer r = rpc;
        return r == null ? null : r.path();
    }

    /** The RAM budget (its limit and what RAM namespaces hold of it); null before the start. */
    public RamBudget ramBudget() {
        return ramBudget;
    }

    /** What the connected NVMe/TCP queues' buffers hold of {@code queue_buffer_budget_mib}. */
    public io.nvmeof4j.protocol.spi.MemoryBudget queueBufferBudget() {
        return queueBufferBudget;
    }

    /** The configuration this daemon serves. */
    /**
     * Sets, replaces (key rotation) or, with null, removes the DH-HMAC-CHAP credentials a host must prove; no
     * restart. Applies to the host's next Connect and next re-authentication: queues already authenticated stay up
     * (as on a Linux target after writing dhchap_key). Logs which host changed, never a key.
     */
    public void setHostCredentials(String hostNqn, DhchapCredentials credentials) {
        registry.hostKeys().set(TargetConfig.checkNqn(hostNqn), credentials);
        LOG.info("DH-HMAC-CHAP for host {}: {}", hostNqn, credentials == null ? "removed" : credentials);
    }

    /**
     * Sets, replaces (key rotation) or, with null, removes a host's TLS PSK; no restart. TLS handshakes that start
     * afterwards use the new key, so the old one is refused; connections already established keep their session
     * keys (TLS derives them at the handshake) and go on. Logs which host changed, never a key.
     */
    public void setTlsKey(String hostNqn, HostPskStore.HostPsk psk) {
        String nqn = TargetConfig.checkNqn(hostNqn);
        if (psk == null) {
            tlsKeys.remove(nqn);
        } else {
            tlsKeys.put(nqn, psk);
        }
        LOG.info("TLS PSK for host {}: {}", nqn, psk == null ? "removed"
            : "set (" + psk.key().cipherHash() + ", " + psk.version0Derivation() + " for identity version 0)");
    }

    /** The host's TLS PSK now in force, or null. */
    public HostPskStore.HostPsk tlsKey(String hostNqn) {
        return tlsKeys.get(hostNqn);
    }

    /**
     * The TLS PSKs that DH-HMAC-CHAP generated (secure channel concatenation) and the target holds now, by identity
     * ({@code NVMe1G..}, not secret), each with the CNTLID of the controller it serves, or 0 while it waits for the
     * host's TLS reconnect.
     */
    public Map<String, Integer> generatedTlsPsks() {
        Map<String, Integer> out = new java.util.TreeMap<>();
        tlsKeys.generatedOwners().forEach((identity, owner) ->
            out.put(identity, owner instanceof Controller c ? c.cntlid() : 0));
        return out;
    }

    /** Host NQNs that have a TLS PSK now. */
    public java.util.Set<String> tlsHosts() {
        return tlsKeys.hosts();
    }

    /** Host NQNs that must authenticate with DH-HMAC-CHAP now. */
    public java.util.Set<String> authenticatingHosts() {
        return registry.hostKeys().hosts();
    }

    public TargetConfig config() {
        return config;
    }

    /** What the daemon exports; ports hold their bound addresses. */
    public TargetModel model() {
        return model;
    }

    /** The bound address of every served port, in configuration order (port 0 resolved to the real port). */
    public List<TransportAddress> listenAddresses() {
        return Collections.unmodifiableList(listenAddresses);
    }

    /** The live controllers (for status output and the management API). */
    public ControllerRegistry registry() {
        return registry;
    }

    /** The target's meters, or null when {@code metrics} is off. */
    public TargetMetrics metrics() {
        return metrics;
    }

    /** Where the HTTP server listens (the real port when 0 was asked for), or null when it is off. */
    public InetSocketAddress httpAddress() {
        HttpApiServer h = http;
        return h == null ? null : h.address();
    }

    /** Where the metrics-only HTTP listener listens, or null when there is none (or HTTP is off). */
    public InetSocketAddress metricsHttpAddress() {
        HttpApiServer h = http;
        return h == null ? null : h.metricsAddress();
    }

    /** The file holding the management API's token, or null when the HTTP server is off. */
    public Path apiTokenFile() {
        HttpApiServer h = http;
        return h == null ? null : h.tokenFile();
    }

    /** True once {@link #close()} has begun. */
    public boolean isClosed() {
        return closing.get();
    }

    /** Orderly shutdown; see the class description. Idempotent; concurrent callers wait for the first. */
    @Override
    public void close() {
        if (!closing.compareAndSet(false, true)) {
            awaitClosed();
            return;
        }
        long begin = System.nanoTime();
        try {
            shutDown();
        } finally {
            closed.countDown();
        }
        LOG.info("nvmeof4j target stopped in {} ms", TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - begin));
    }

    private void awaitClosed() {
        long bound = config.daemon().shutdownTimeout().toMillis() + REACTOR_STOP_TIMEOUT.toMillis() * reactors.size()
            + DEVICE_CLOSE_TIMEOUT.toMillis() * Math.max(1, devices.size()) + 10_000;
        try {
            if (!closed.await(bound, TimeUnit.MILLISECONDS)) {
                LOG.warn("close: the shutdown running in another thread did not finish within {} ms", bound);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private void shutDown() {
        if (started) {
            LOG.info("nvmeof4j target stopping");
        }
        if (rpc != null) {
            RpcServer r = rpc;
            step("stopping JSON-RPC on " + r.path(), r::close);
        }
        if (http != null) {
            HttpApiServer h = http;
            step("stopping the HTTP server on " + h.url(), h::close);
        }
        for (int i = listeners.size() - 1; i >= 0; i--) {
            TransportListener listener = listeners.get(i);
            step("closing the listener on " + listener.address(), listener::close);
        }
        if (registry != null) {
            Duration timeout = config.daemon().shutdownTimeout();
            step("shutting down the controllers", () -> {
                if (!registry.shutdown(timeout)) {
                    LOG.warn("commands were still in flight after {} ms; their queues were disconnected anyway",
                        timeout.toMillis());
                }
            });
        }
        boolean[] reactorStuck = {false};
        for (int i = reactors.size() - 1; i >= 0; i--) {
            Reactor reactor = reactors.get(i);
            step("stopping " + reactor, () -> {
                if (!reactor.stop(REACTOR_STOP_TIMEOUT)) {
                    reactorStuck[0] = true;
                    LOG.warn("{} did not stop within {} ms", reactor, REACTOR_STOP_TIMEOUT.toMillis());
                }
            });
        }
        if (transport != null) {
            step("closing the NVMe/TCP transport", transport::close);
        }
        if (rdmaTransport != null) {
            if (reactorStuck[0]) {
                // Closing it destroys the queue pairs a still-running reactor may be polling.
                LOG.error("not closing the NVMe-oF/RDMA transport: a reactor did not stop");
            } else {
                step("closing the NVMe-oF/RDMA transport", rdmaTransport::close);
            }
        }
        List<OpenDevice> toClose;
        // Under the lock live changes hold: one in progress finishes first, none starts (closing is set).
        synchronized (this) {
            synchronized (devices) {
                toClose = new ArrayList<>(devices);
                devices.clear();
            }
        }
        for (int i = toClose.size() - 1; i >= 0; i--) {
            OpenDevice open = toClose.get(i);
            if (reactorStuck[0] && open.device() instanceof UringBlockDevice) {
                // A reactor still running may still be draining its ring into this device's native structures.
                LOG.error("not closing {} ({}): a reactor did not stop, and its io_uring may still use the device",
                    open.label(), open.device().description());
                continue;
            }
            step("closing " + open.label() + " (" + open.device().description() + ")", open.device()::close);
        }
        if (!started) {
            // A failed start leaves nothing behind, not even the empty files it created for new namespaces.
            for (Path file : createdFiles) {
                step("removing " + file + ", created by the failed start", () -> Files.deleteIfExists(file));
            }
        }
    }

    private record OpenDevice(String label, BlockDevice device) {
    }

    private interface Step {
        void run() throws Exception;
    }

    private static void step(String what, Step step) {
        try {
            step.run();
        } catch (Exception | Error e) {
            LOG.error("shutdown: {} failed", what, e);
        }
    }

    @Override
    public String toString() {
        return "TargetDaemon[" + listenAddresses + (closing.get() ? ", closed" : "") + "]";
    }
}
