package io.nvmeof4j.target.daemon;

import io.nvmeof4j.jni.cpu.ReactorPinning;
import io.nvmeof4j.jni.rdma.Rdma;
import io.nvmeof4j.protocol.auth.DhchapCredentials;
import io.nvmeof4j.protocol.buffer.OffHeapBufferPool;
import io.nvmeof4j.protocol.spi.TransportAddress;
import io.nvmeof4j.protocol.spi.TransportListener;
import io.nvmeof4j.jni.bdev.UringOptions;
import io.nvmeof4j.target.backend.BdevChannels;
import io.nvmeof4j.target.backend.QosLimits;
import io.nvmeof4j.protocol.spi.TransportType;
import io.nvmeof4j.target.backend.BlockDevice;
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
import io.nvmeof4j.target.metrics.TargetMetrics;
import io.nvmeof4j.target.model.AnaStates;
import io.nvmeof4j.target.model.Namespace;
import io.nvmeof4j.target.model.Port;
import io.nvmeof4j.target.model.Subsystem;
import io.nvmeof4j.target.model.TargetModel;
import io.nvmeof4j.tcp.tls.HostPskStore;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.net.BindException;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashSet;
import java.util.EnumSet;
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
    /** How long the reactor threads get to pin themselves at start. */
    static final Duration PIN_TIMEOUT = Duration.ofSeconds(10);
    /** How long a file device gets to finish its I/O and fsync when closed. */
    public static final Duration DEVICE_CLOSE_TIMEOUT = Duration.ofSeconds(10);

    private final TargetConfig config;
    private final TargetModel model = new TargetModel();
    /** The reactors, their poll groups, the transports and the listeners. */
    private final DaemonTransports transports = new DaemonTransports();
    /** The namespaces' devices, opened and closed in one place; the live namespace changes. */
    private final DaemonNamespaces namespaces;
    /** The live changes of subsystems and ports. */
    private final DaemonPorts ports;
    private NvmCommands nvm;
    /** Each host's TLS PSK ({@code hosts[].tls_key}), as every TLS port's handshakes look them up; changed live. */
    private HostPskStore tlsKeys;
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
    /** The reactors' CPUs and the housekeeping set ({@code reactor_cpus}), or null: no affinity is set. */
    private ReactorPinning pinning;
    private boolean started;
    private final AtomicBoolean closing = new AtomicBoolean();
    private final CountDownLatch closed = new CountDownLatch(1);

    private TargetDaemon(TargetConfig config) {
        this.config = config;
        this.namespaces = new DaemonNamespaces(this, config, model, transports);
        this.ports = new DaemonPorts(this, model, transports, namespaces);
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
        // First, before this start makes threads: they are made on the housekeeping CPUs then.
        pinning = pinOthers(settings);
        // The API token first: a token file that cannot be read fails the start before anything is opened.
        ApiToken token = settings.http() == null ? null
            : ApiToken.loadOrCreate(settings.httpSecurity().apiTokenFile());
        reserveConfiguredRam(settings);
        queueBufferBudget = new io.nvmeof4j.protocol.spi.MemoryBudget(settings.queueBufferBudgetBytes(),
            "queue buffer budget of " + Sizes.format(settings.queueBufferBudgetBytes()) + " (nvmeof4j."
                + DaemonSettings.QUEUE_BUFFER_BUDGET_MIB + ")");
        servedPorts = DaemonTransports.portsToServe(config);
        buildModel();
        if (settings.metrics()) {
            bindMetrics();
        }

        tlsKeys = new HostPskStore(config.tlsKeys());
        transports.start(settings, pinning, config.largestBuffer(), servedPorts, queueBufferBudget, tlsKeys, metrics);
        if (pinning != null) {
            LOG.info("{}", pinning.describe(pinning.awaitReactors(settings.reactors(), PIN_TIMEOUT)));
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
            TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - begin), transports.listenAddresses(),
            http == null ? "" : "; HTTP (metrics, management API) on " + http.url() + ", API token in "
                + http.tokenFile());
    }

    /**
     * With {@code reactor_cpus}: moves every thread of the process now (JIT, GC, the VM thread, this one, logging) to
     * the housekeeping CPUs, before the reactors start and pin themselves; threads started later by these inherit
     * them. Null without {@code reactor_cpus}: no affinity call at all.
     *
     * @throws ConfigException a reactor CPU this process may not run on, or no affinity library on this machine
     */
    private static ReactorPinning pinOthers(DaemonSettings settings) throws IOException {
        if (settings.reactorCpus() == null) {
            return null;
        }
        ReactorPinning plan;
        try {
            plan = ReactorPinning.start(settings.reactorCpus());
        } catch (IllegalArgumentException | IllegalStateException | UnsupportedOperationException e) {
            throw new ConfigException("nvmeof4j." + DaemonSettings.REACTOR_CPUS, e.getMessage(), e);
        }
        if (plan.housekeepingShared()) {
            LOG.warn("nvmeof4j.{} {} takes every CPU this process may run on ({}): the JIT and the garbage collector "
                + "share the reactors' CPUs; leave at least one CPU out for them", DaemonSettings.REACTOR_CPUS,
                plan.reactorCpus(), plan.allowed());
        }
        return plan;
    }

    /** Binds a port of the model (configured, or added live) and replaces it in the model by its bound form. */
    void listen(PortConfig pc, Port port) throws IOException {
        ControllerQueueHandlerFactory handlers = new ControllerQueueHandlerFactory(model, port, nvm, registry,
            metrics);
        TransportListener listener = transports.listen(pc, port, handlers);
        model.replacePort(port, port.boundTo(listener.address()));
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
                BlockDevice device = namespaces.open(sc.nqn(), nc, UringOptions.Confinement.NONE);
                Namespace namespace = new Namespace(nc.nsid(), device, nc.uuid(), nc.nguid(), nc.anaGroupId(),
                    namespaces.reservations(sc.nqn(), nc));
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
            model.referrals(pc.portId(), DaemonPorts.referrals(pc.referrals()));
        }
    }

    /**
     * Where a file namespace's reservations are kept: next to the configuration file, in
     * {@code <config file>.reservations/<subsystem NQN>-<NSID>.json} (characters other than letters, digits, '.',
     * '-' and '_' in the NQN become '_'); for a daemon started without a configuration file, under the state
     * directory ({@code $XDG_STATE_HOME/nvmeof4j/reservations}, else {@code ~/.local/state/nvmeof4j/reservations}).
     */
    public Path reservationFile(String subsystemNqn, int nsid) {
        return namespaces.reservationFile(subsystemNqn, nsid);
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
        return ports.setAnaState(portId, group, state);
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
        return namespaces.addNamespace(subsystemNqn, nc);
    }

    /** The reactors, for tests of what runs on them. */
    List<io.nvmeof4j.target.reactor.Reactor> reactors() {
        return transports.reactors();
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
        return namespaces.removeNamespace(subsystemNqn, nsid);
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
        return namespaces.resizeNamespace(subsystemNqn, nsid, sizeBytes);
    }

    /**
     * Sets a live namespace's QoS rate limits ({@link QosLimits#NONE} removes them); running I/O follows at once.
     *
     * @throws IllegalArgumentException no such subsystem or namespace
     */
    public synchronized void setQos(String subsystemNqn, int nsid, QosLimits limits) {
        checkRunning();
        namespaces.setQos(subsystemNqn, nsid, limits);
    }

    /**
     * Creates an empty subsystem (control plane): its hosts and identity from {@code sc}; its namespaces are added one
     * by one afterwards. No port exports it yet.
     *
     * @throws IllegalStateException the NQN is taken, or the daemon is not running
     */
    public synchronized Subsystem addSubsystem(SubsystemConfig sc) {
        checkRunning();
        return ports.addSubsystem(sc);
    }

    /**
     * Deletes a subsystem (control plane): every port stops exporting it (discovery log change event), its
     * controllers are disconnected, then its namespaces are removed as {@link #removeNamespace} does. Returns the
     * removed subsystem, or null when there was none.
     */
    public synchronized Subsystem removeSubsystem(String nqn) {
        checkRunning();
        return ports.removeSubsystem(nqn);
    }

    /**
     * Starts serving a port added live (control plane): binds its listener on the reactors' poll groups, then
     * publishes it (discovery log change event).
     *
     * @throws IOException the address cannot be bound (the message names it); nothing was changed
     */
    public synchronized Port addPort(PortConfig pc) throws IOException {
        checkRunning();
        return ports.addPort(pc);
    }

    /**
     * Sets which subsystems a served port exports (control plane): hosts get the discovery log change event; the
     * controllers of a subsystem the port no longer exports that came through this port are disconnected.
     */
    public synchronized void exportOnPort(int portId, Set<String> subsystems) {
        checkRunning();
        ports.exportOnPort(portId, subsystems);
    }

    /**
     * Stops serving a port (control plane): closes its listener, disconnects every controller that came through it
     * (discovery controllers too), and tells the others the discovery log changed. Returns it, or null.
     */
    public synchronized Port removePort(int portId) {
        checkRunning();
        return ports.removePort(portId);
    }

    /**
     * Sets the referrals a served port's discovery log lists (control plane): connected discovery controllers get
     * the discovery log change event.
     */
    public synchronized void setReferrals(int portId, List<ReferralConfig> list) {
        checkRunning();
        ports.setReferrals(portId, list);
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
        return DaemonTransports.rdmaUnavailableReason();
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
        return Collections.unmodifiableList(transports.listenAddresses());
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
        long bound = config.daemon().shutdownTimeout().toMillis()
            + REACTOR_STOP_TIMEOUT.toMillis() * transports.reactors().size()
            + DEVICE_CLOSE_TIMEOUT.toMillis() * Math.max(1, namespaces.openDeviceCount()) + 10_000;
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
        transports.closeListeners();
        if (registry != null) {
            Duration timeout = config.daemon().shutdownTimeout();
            step("shutting down the controllers", () -> {
                if (!registry.shutdown(timeout)) {
                    LOG.warn("commands were still in flight after {} ms; their queues were disconnected anyway",
                        timeout.toMillis());
                }
            });
        }
        boolean reactorStuck = transports.stopReactors();
        transports.closeTransports(reactorStuck);
        List<DaemonNamespaces.OpenDevice> toClose;
        // Under the lock live changes hold: one in progress finishes first, none starts (closing is set).
        synchronized (this) {
            toClose = namespaces.takeOpenDevices();
        }
        namespaces.close(toClose, reactorStuck);
        if (!started) {
            namespaces.removeCreatedFiles();
        }
        if (pinning != null) {
            // An embedding process (a test JVM) goes on with the CPUs it started with.
            step("giving every thread the CPUs the process started with (" + pinning.allowed() + ")", pinning::close);
        }
    }

    interface Step {
        void run() throws Exception;
    }

    static void step(String what, Step step) {
        try {
            step.run();
        } catch (Exception | Error e) {
            LOG.error("shutdown: {} failed", what, e);
        }
    }

    @Override
    public String toString() {
        return "TargetDaemon[" + transports.listenAddresses() + (closing.get() ? ", closed" : "") + "]";
    }
}
