package io.nvmeof4j.target.daemon;

import io.nvmeof4j.jni.cpu.ReactorPinning;
import io.nvmeof4j.jni.rdma.Rdma;
import io.nvmeof4j.protocol.buffer.OffHeapBufferPool;
import io.nvmeof4j.protocol.spi.PollGroup;
import io.nvmeof4j.protocol.spi.TransportAddress;
import io.nvmeof4j.protocol.spi.TransportListener;
import io.nvmeof4j.jni.NativeIoException;
import io.nvmeof4j.jni.bdev.Bdev;
import io.nvmeof4j.jni.bdev.BdevRegion;
import io.nvmeof4j.target.backend.BdevChannels;
import io.nvmeof4j.target.backend.QosWaits;
import io.nvmeof4j.protocol.spi.TransportType;
import io.nvmeof4j.protocol.spi.idle.IdleMode;
import io.nvmeof4j.rdma.RdmaControllerTransport;
import io.nvmeof4j.target.config.DaemonSettings;
import io.nvmeof4j.target.config.PortConfig;
import io.nvmeof4j.target.config.Sizes;
import io.nvmeof4j.target.config.TargetConfig;
import io.nvmeof4j.target.controller.ControllerQueueHandlerFactory;
import io.nvmeof4j.target.metrics.TargetMeterNames;
import io.nvmeof4j.target.metrics.TargetMetrics;
import io.nvmeof4j.target.model.Port;
import io.nvmeof4j.target.reactor.Reactor;
import io.nvmeof4j.tcp.TcpControllerTransport;
import io.nvmeof4j.tcp.tls.HostPskStore;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The reactors of a {@link TargetDaemon} and what they serve with: each reactor's buffer pool, its NVMe/TCP and
 * NVMe-oF/RDMA poll groups (added live for a transport the daemon did not start with), the transports and the
 * listeners of the served ports. The daemon decides what is served; this class wires it onto the reactors and
 * takes it down in the order {@link TargetDaemon#close()} describes.
 */
final class DaemonTransports {
    /** Logged as the daemon: these are the daemon's start, live changes and shutdown steps. */
    private static final Logger LOG = LoggerFactory.getLogger(TargetDaemon.class);

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
    private TcpControllerTransport transport;
    /** Created with the first RDMA port (at start or live); serving once every reactor has its RDMA group. */
    private RdmaControllerTransport rdmaTransport;
    private volatile boolean rdmaServed;
    /** TCP poll groups exist (always, unless the daemon started with RDMA ports only). */
    private volatile boolean tcpServed;

    /**
     * Creates the transports and the reactors (each with its pool, its poll groups for the transports the served
     * ports use, its QoS waits and its io_uring channels) and starts the reactors, each pinning itself to its CPU
     * of {@code pinning} when there is one. The reactors are made here only: live changes add poll groups to them,
     * never reactors, so no reactor thread starts unpinned later.
     */
    void start(DaemonSettings settings, ReactorPinning pinning, int largestBuffer, List<PortConfig> servedPorts,
               io.nvmeof4j.protocol.spi.MemoryBudget queueBufferBudget, HostPskStore tlsKeys, TargetMetrics metrics)
        throws IOException {
        transport = new TcpControllerTransport(io.nvmeof4j.tcp.TcpTransportOptions.defaults(), queueBufferBudget);
        transport.pskResolver(tlsKeys);
        boolean rdma = servedPorts.stream().anyMatch(p -> p.transportType() == TransportType.RDMA);
        boolean tcp = !rdma || servedPorts.stream().anyMatch(p -> p.transportType() == TransportType.TCP);
        for (int i = 0; i < settings.reactors(); i++) {
            Reactor reactor = new Reactor("nvmeof-reactor-" + i, settings.idleStrategy(), settings.idleSpinNanos(),
                pinning, i);
            reactors.add(reactor);
            OffHeapBufferPool pool = new OffHeapBufferPool(largestBuffer, poolRegion(reactor, settings));
            pools.add(pool);
            if (metrics != null) {
                metrics.bindPool(i, pool);
                metrics.bindRunDelay(i, reactor);
                if (settings.idleStrategy() == IdleMode.ADAPTIVE) {
                    metrics.bindIdling(i, reactor);
                }
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
    }

    /**
     * The configured ports this machine can serve: RDMA ports only when RDMA is available (else each is named
     * with the reason, and the daemon serves the rest).
     */
    static List<PortConfig> portsToServe(TargetConfig config) throws IOException {
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

    /** Binds a port on the reactors' poll groups of its transport (served from now on, if it was not). */
    TransportListener listen(PortConfig pc, Port port, ControllerQueueHandlerFactory handlers) throws IOException {
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
        listenAddresses.add(listener.address());
        return listener;
    }

    /** Closes the listener of port {@code portId}, if it has one (a port removed live). */
    void closeListener(int portId) {
    TransportListener listener = listenerByPort.remove(portId);
    if (listener != null) {
        listeners.remove(listener);
        listenAddresses.remove(listener.address());
        TargetDaemon.step("closing the listener on " + listener.address(), listener::close);
    }
    }

    /** Stops accepting connections: every listener, in reverse order. */
    void closeListeners() {
        for (int i = listeners.size() - 1; i >= 0; i--) {
            TransportListener listener = listeners.get(i);
            TargetDaemon.step("closing the listener on " + listener.address(), listener::close);
        }
    }

    /** Stops the reactors, in reverse order, each bounded; true when one did not stop in time. */
    boolean stopReactors() {
        boolean[] reactorStuck = {false};
        for (int i = reactors.size() - 1; i >= 0; i--) {
            Reactor reactor = reactors.get(i);
            TargetDaemon.step("stopping " + reactor, () -> {
                if (!reactor.stop(TargetDaemon.REACTOR_STOP_TIMEOUT)) {
                    reactorStuck[0] = true;
                    LOG.warn("{} did not stop within {} ms", reactor, TargetDaemon.REACTOR_STOP_TIMEOUT.toMillis());
                }
            });
        }
        return reactorStuck[0];
    }

    /** Closes the transports; not the RDMA one while a reactor that did not stop may still poll its queue pairs. */
    void closeTransports(boolean reactorStuck) {
        if (transport != null) {
            TargetDaemon.step("closing the NVMe/TCP transport", transport::close);
        }
        if (rdmaTransport != null) {
            if (reactorStuck) {
                // Closing it destroys the queue pairs a still-running reactor may be polling.
                LOG.error("not closing the NVMe-oF/RDMA transport: a reactor did not stop");
            } else {
                TargetDaemon.step("closing the NVMe-oF/RDMA transport", rdmaTransport::close);
            }
        }
    }

    List<Reactor> reactors() {
        return reactors;
    }

    List<TransportAddress> listenAddresses() {
        return listenAddresses;
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

    private static ByteBuffer poolRegion(Reactor reactor, DaemonSettings settings) throws IOException {
        if (!Bdev.isAvailable()) {
            return ByteBuffer.allocateDirect((int) Math.min(Integer.MAX_VALUE, settings.bufferPoolBytes()));
        }
        BdevRegion region = BdevRegion.map(Math.min(Integer.MAX_VALUE, settings.bufferPoolBytes()),
            settings.hugepages().pools());
        if (settings.hugepages().pools() && !region.hugepages()) {
            LOG.warn("{}: no hugepages for the {} buffer pool (errno {}; reserve some with vm.nr_hugepages): "
                + "using normal pages", reactor.name(), Sizes.format(region.length()), region.hugepageFailure());
        }
        reactor.own(region);
        return region.buffer();
    }

    /** Why an RDMA listener cannot be added (see {@link TargetDaemon#servesRdma()}). */
    static String rdmaUnavailableReason() {
        Throwable cause = Rdma.unavailabilityCause();
        return "NVMe-oF/RDMA is unavailable on this machine: " + (cause == null ? "?" : cause.getMessage());
    }
}
