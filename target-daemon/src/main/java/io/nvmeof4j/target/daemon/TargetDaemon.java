package io.nvmeof4j.target.daemon;

import io.nvmeof4j.jni.rdma.Rdma;
import io.nvmeof4j.protocol.buffer.OffHeapBufferPool;
import io.nvmeof4j.protocol.spi.PollGroup;
import io.nvmeof4j.protocol.spi.TransportAddress;
import io.nvmeof4j.protocol.spi.TransportListener;
import io.nvmeof4j.protocol.spi.TransportType;
import io.nvmeof4j.rdma.RdmaControllerTransport;
import io.nvmeof4j.target.backend.BlockDevice;
import io.nvmeof4j.target.backend.FileBlockDevice;
import io.nvmeof4j.target.backend.NullBlockDevice;
import io.nvmeof4j.target.backend.RamBlockDevice;
import io.nvmeof4j.target.config.BackendType;
import io.nvmeof4j.target.config.BuildVersion;
import io.nvmeof4j.target.config.ConfigException;
import io.nvmeof4j.target.config.DaemonSettings;
import io.nvmeof4j.target.config.NamespaceConfig;
import io.nvmeof4j.target.config.PortConfig;
import io.nvmeof4j.target.config.Sizes;
import io.nvmeof4j.target.config.SubsystemConfig;
import io.nvmeof4j.target.config.TargetConfig;
import io.nvmeof4j.target.controller.ControllerQueueHandlerFactory;
import io.nvmeof4j.target.controller.ControllerRegistry;
import io.nvmeof4j.target.io.NvmCommands;
import io.nvmeof4j.target.model.Namespace;
import io.nvmeof4j.target.model.Port;
import io.nvmeof4j.target.model.Subsystem;
import io.nvmeof4j.target.model.TargetModel;
import io.nvmeof4j.target.reactor.Reactor;
import io.nvmeof4j.tcp.TcpControllerTransport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The running target: the devices, the model, the reactors and the listeners a {@link TargetConfig} asks for.
 *
 * <h2>Start</h2>
 * {@link #start} checks the files the configuration names once more, opens every enabled namespace's device,
 * builds the {@link TargetModel}, creates one {@link OffHeapBufferPool} (over one region, which the RDMA transport
 * registers once per protection domain) and per reactor an NVMe/TCP poll group and, when RDMA ports are configured
 * and RDMA is available, an NVMe-oF/RDMA poll group drawing on the same pool; starts the reactors, then binds every
 * port in configuration order (port 0: any free port; the model's port is replaced by its bound form), each with its
 * own {@link ControllerQueueHandlerFactory}. Without RDMA (no rdma-core, no device) RDMA ports are skipped with a
 * warning giving {@code Rdma.unavailabilityCause()}, and the rest is served. If any step fails, everything done so
 * far is undone (listeners closed, reactors stopped, devices closed, files this start created removed) and the error
 * is thrown: the daemon never half-starts.
 *
 * <h2>Close</h2>
 * {@link #close()} is the orderly shutdown, each step bounded and each failure logged with what it concerned:
 * stop accepting connections; let the controllers finish the commands in flight and disconnect every queue
 * ({@link ControllerRegistry#shutdown}, bounded by {@code shutdown_timeout_ms}); stop the reactors (their poll
 * groups close the remaining sockets); close the devices (file devices drain their workers and fsync).
 * Idempotent and thread-safe: a second caller waits (bounded) for the first to finish.
 */
public final class TargetDaemon implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(TargetDaemon.class);

    /** How long a reactor gets to stop and close its poll groups. */
    public static final Duration REACTOR_STOP_TIMEOUT = Reactor.STOP_TIMEOUT_DEFAULT;
    /** How long a file device gets to finish its I/O and fsync when closed. */
    public static final Duration DEVICE_CLOSE_TIMEOUT = FileBlockDevice.Options.CLOSE_TIMEOUT_DEFAULT;

    private final TargetConfig config;
    private final TargetModel model = new TargetModel();
    /** Open devices, in opening order, with the namespace each serves (for shutdown messages). */
    private final List<OpenDevice> devices = new ArrayList<>();
    private final List<Path> createdFiles = new ArrayList<>();
    private final List<Reactor> reactors = new ArrayList<>();
    private final List<TransportListener> listeners = new ArrayList<>();
    private final List<TransportAddress> listenAddresses = new ArrayList<>();
    private TcpControllerTransport transport;
    private RdmaControllerTransport rdmaTransport;
    /** The ports started: every configured port, less RDMA ports when RDMA is unavailable. */
    private List<PortConfig> servedPorts = List.of();
    private ControllerRegistry registry;
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
        servedPorts = portsToServe();
        buildModel(settings);
        warnIfDirectMemoryShort(settings);

        transport = new TcpControllerTransport();
        boolean rdma = servedPorts.stream().anyMatch(p -> p.transportType() == TransportType.RDMA);
        if (rdma) {
            rdmaTransport = new RdmaControllerTransport();
        }
        List<PollGroup> groups = new ArrayList<>();
        List<PollGroup> rdmaGroups = new ArrayList<>();
        int largestBuffer = config.largestBuffer();
        for (int i = 0; i < settings.reactors(); i++) {
            Reactor reactor = new Reactor("nvmeof-reactor-" + i, settings.idleStrategy(), settings.idleSpinNanos());
            reactors.add(reactor);
            OffHeapBufferPool pool = new OffHeapBufferPool(largestBuffer,
                ByteBuffer.allocateDirect((int) Math.min(settings.bufferPoolBytes(), 1L << 30)));
            if (rdma) {
                // First: an idle reactor blocks on its first group's wait primitive (here the completion channel).
                PollGroup rdmaGroup = rdmaTransport.createPollGroup(pool);
                reactor.add(rdmaGroup);
                rdmaGroups.add(rdmaGroup);
            }
            if (!rdma || servedPorts.stream().anyMatch(p -> p.transportType() == TransportType.TCP)) {
                // Only when TCP ports exist: an idle group still costs a selectNow per reactor round.
                PollGroup group = transport.createPollGroup(pool);
                reactor.add(group);
                groups.add(group);
            }
        }
        for (Reactor reactor : reactors) {
            reactor.start();
        }
        registry = new ControllerRegistry(config.maxIoQueues());
        NvmCommands nvm = new NvmCommands();

        for (PortConfig pc : servedPorts) {
            Port port = findPort(pc.portId());
            ControllerQueueHandlerFactory handlers = new ControllerQueueHandlerFactory(model, port, nvm, registry);
            TransportListener listener;
            try {
                listener = pc.transportType() == TransportType.RDMA
                    ? rdmaTransport.listen(port.address(), port.options(), rdmaGroups, handlers)
                    : transport.listen(port.address(), port.options(), groups, handlers);
            } catch (IOException e) {
                throw new IOException(pc.where() + " (portid " + pc.portId() + "): " + e.getMessage(), e);
            }
            listeners.add(listener);
            model.replacePort(port, port.boundTo(listener.address()));
            listenAddresses.add(listener.address());
        }
        started = true;
        LOG.info("nvmeof4j target started in {} ms, listening on {}",
            TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - begin), listenAddresses);
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
        if (served.isEmpty()) {
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

    private void buildModel(DaemonSettings settings) throws IOException {
        for (SubsystemConfig sc : config.subsystems()) {
            Subsystem subsystem = new Subsystem(sc.nqn(), sc.serial(), sc.model(), sc.firmware(), sc.allowAnyHost());
            for (String host : sc.allowedHosts()) {
                subsystem.addAllowedHost(host);
            }
            for (NamespaceConfig nc : sc.namespaces()) {
                if (!nc.enabled()) {
                    continue;
                }
                BlockDevice device = open(sc, nc, settings);
                subsystem.addNamespace(new Namespace(nc.nsid(), device, nc.uuid(), nc.nguid()));
                LOG.info("{} namespace {}: {}, {} blocks of {} bytes, uuid {}", sc.nqn(),
                    Integer.toUnsignedString(nc.nsid()), device.description(), device.blockCount(), device.blockSize(),
                    nc.uuid());
            }
            model.addSubsystem(subsystem);
        }
        for (PortConfig pc : servedPorts) {
            Set<String> exported = new LinkedHashSet<>(pc.subsystems());
            model.addPort(new Port(pc.portId(), pc.address(), pc.options(), exported));
        }
    }

    private BlockDevice open(SubsystemConfig sc, NamespaceConfig nc, DaemonSettings settings) throws IOException {
        String label = sc.nqn() + " namespace " + Integer.toUnsignedString(nc.nsid());
        BlockDevice device;
        try {
            if (nc.backend() == BackendType.RAM) {
                device = new RamBlockDevice("", nc.sizeBytes(), nc.blockSize());
            } else if (nc.backend() == BackendType.NULL) {
                device = new NullBlockDevice("", nc.sizeBytes(), nc.blockSize());
            } else {
                boolean existed = Files.exists(nc.path());
                FileBlockDevice.Options options = new FileBlockDevice.Options(settings.fileWorkers(),
                    FileBlockDevice.Options.QUEUE_CAPACITY_DEFAULT, DEVICE_CLOSE_TIMEOUT);
                device = FileBlockDevice.open(nc.path(), nc.sizeBytes(), nc.blockSize(), options);
                if (!existed) {
                    createdFiles.add(nc.path());
                    LOG.info("{}: created {} ({}, sparse)", nc.where(), nc.path(), Sizes.format(nc.sizeBytes()));
                }
            }
        } catch (IOException | RuntimeException e) {
            throw new IOException(nc.where() + " (" + label + "): cannot open "
                + (nc.path() != null ? nc.path() : nc.backend().configName() + " device") + ": " + e.getMessage(), e);
        }
        devices.add(new OpenDevice(label, device));
        return device;
    }

    /**
     * RAM namespaces and buffer pools live in direct memory, which the JVM caps ({@code -XX:MaxDirectMemorySize},
     * by default the heap's maximum). Writes past the cap fail with Capacity Exceeded; say so at start.
     */
    private void warnIfDirectMemoryShort(DaemonSettings settings) {
        long ram = 0;
        for (SubsystemConfig s : config.subsystems()) {
            for (NamespaceConfig n : s.namespaces()) {
                if (n.enabled() && n.backend() == BackendType.RAM) {
                    ram += n.sizeBytes();
                }
            }
        }
        long needed = ram + settings.reactors() * settings.bufferPoolBytes();
        long limit = maxDirectMemory();
        if (limit > 0 && needed > limit) {
            LOG.warn("RAM namespaces ({}) and buffer pools ({} x {}) may need {} of direct memory, more than this "
                    + "JVM's limit of {}: writes beyond it fail with Capacity Exceeded. Raise -XX:MaxDirectMemorySize.",
                Sizes.format(ram), settings.reactors(), Sizes.format(settings.bufferPoolBytes()), Sizes.format(needed),
                Sizes.format(limit));
        }
    }

    private static long maxDirectMemory() {
        try {
            com.sun.management.HotSpotDiagnosticMXBean bean =
                ManagementFactory.getPlatformMXBean(com.sun.management.HotSpotDiagnosticMXBean.class);
            long value = Long.parseLong(bean.getVMOption("MaxDirectMemorySize").getValue());
            return value > 0 ? value : Runtime.getRuntime().maxMemory();
        } catch (RuntimeException | LinkageError e) {
            return -1; // not HotSpot: no warning
        }
    }

    /** The configuration this daemon serves. */
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
        for (int i = reactors.size() - 1; i >= 0; i--) {
            Reactor reactor = reactors.get(i);
            step("stopping " + reactor, () -> {
                if (!reactor.stop(REACTOR_STOP_TIMEOUT)) {
                    LOG.warn("{} did not stop within {} ms", reactor, REACTOR_STOP_TIMEOUT.toMillis());
                }
            });
        }
        if (transport != null) {
            step("closing the NVMe/TCP transport", transport::close);
        }
        if (rdmaTransport != null) {
            step("closing the NVMe-oF/RDMA transport", rdmaTransport::close);
        }
        for (int i = devices.size() - 1; i >= 0; i--) {
            OpenDevice open = devices.get(i);
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
