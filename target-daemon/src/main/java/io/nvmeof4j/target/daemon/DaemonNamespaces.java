package io.nvmeof4j.target.daemon;

import io.nvmeof4j.jni.bdev.Bdev;
import io.nvmeof4j.jni.bdev.UringOptions;
import io.nvmeof4j.target.backend.QosLimits;
import io.nvmeof4j.target.backend.BlockDevice;
import io.nvmeof4j.target.backend.NullBlockDevice;
import io.nvmeof4j.target.backend.RamBlockDevice;
import io.nvmeof4j.target.backend.RamPopulator;
import io.nvmeof4j.target.backend.ReactorBackends;
import io.nvmeof4j.target.backend.UringBlockDevice;
import io.nvmeof4j.target.config.BackendType;
import io.nvmeof4j.target.config.NamespaceConfig;
import io.nvmeof4j.target.config.Sizes;
import io.nvmeof4j.target.config.TargetConfig;
import io.nvmeof4j.target.config.HttpSecurity;
import io.nvmeof4j.target.limits.PathConfinement;
import io.nvmeof4j.target.model.Namespace;
import io.nvmeof4j.target.model.Subsystem;
import io.nvmeof4j.target.model.TargetModel;
import io.nvmeof4j.target.reactor.Reactor;
import io.nvmeof4j.target.reservation.Reservations;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.RejectedExecutionException;

/**
 * The namespaces of a {@link TargetDaemon} and their devices: the one place a device is opened (configured and
 * live namespaces alike) and closed, the live namespace changes (add, remove, resize, QoS), the reservation state
 * of each namespace and the files a start created. The daemon holds its lock and checks it runs before each change.
 */
final class DaemonNamespaces {
    /** Logged as the daemon: these are the daemon's start, live changes and shutdown steps. */
    private static final Logger LOG = LoggerFactory.getLogger(TargetDaemon.class);

    private final TargetDaemon daemon;
    private final TargetConfig config;
    private final TargetModel model;
    private final DaemonTransports transports;
    /** Where live file and block-device namespaces may lie ({@code allowed_paths}). */
    private final PathConfinement confinement;
    /** Open devices, in opening order, with the namespace each serves (for shutdown messages). */
    private final List<OpenDevice> devices = new ArrayList<>();
    private final List<Path> createdFiles = new ArrayList<>();
    /** Populates RAM namespaces in the background unless the RAM budget is overcommitted; closed with the rest. */
    private final RamPopulator populator = new RamPopulator();

    DaemonNamespaces(TargetDaemon daemon, TargetConfig config, TargetModel model, DaemonTransports transports) {
        this.daemon = daemon;
        this.config = config;
        this.model = model;
        this.transports = transports;
        this.confinement = new PathConfinement(config.daemon().allowedPaths());
    }

    /**
     * The one place devices are created (configured namespaces and namespaces added through the API alike).
     *
     * @param confinement what a live namespace's path was checked to be ({@link PathConfinement}); NONE for the
     *                    configuration's namespaces
     */
    BlockDevice open(String subsystemNqn, NamespaceConfig nc, UringOptions.Confinement confinement)
        throws IOException {
        String label = subsystemNqn + " namespace " + Integer.toUnsignedString(nc.nsid());
        BlockDevice device;
        try {
            if (nc.backend() == BackendType.RAM) {
                // Populated: the budget reserved its whole size, so committing it now admits nothing new (RamBudget);
                // then the populator, not the reactor, pays each 2 MiB's first touch, so chunks go on hugepages.
                boolean populated = !daemon.ramBudget().overcommitted();
                RamBlockDevice ram = new RamBlockDevice("", nc.sizeBytes(), nc.blockSize(),
                    config.daemon().hugepages().ramChunks(populated));
                if (populated) {
                    populator.populate(ram);
                }
                device = ram;
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
    Reservations reservations(String subsystemNqn, NamespaceConfig nc) throws IOException {
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
    Path reservationFile(String subsystemNqn, int nsid) {
        Path dir = config.source()
            .map(src -> src.toAbsolutePath().resolveSibling(src.getFileName() + ".reservations"))
            .orElseGet(() -> HttpSecurity.stateDirectoryTokenFile().getParent().resolve("reservations"));
        return dir.resolve(subsystemNqn.replaceAll("[^A-Za-z0-9._-]", "_") + "-" + Integer.toUnsignedString(nsid)
            + ".json");
    }

    /** See {@link TargetDaemon#addNamespace}; under the daemon's lock, the daemon running. */
    Namespace addNamespace(String subsystemNqn, NamespaceConfig nc) throws IOException {
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
            daemon.ramBudget().reserve(nc.sizeBytes(), label);
            ramReserved = nc.sizeBytes();
        }
        int createdBefore = createdFiles.size();
        BlockDevice device;
        try {
            device = open(subsystemNqn, nc, kind);
        } catch (IOException | RuntimeException | Error e) {
            daemon.ramBudget().release(ramReserved);
            throw e;
        }
        Namespace namespace = null;
        boolean added = false;
        try {
            namespace = new Namespace(nc.nsid(), device, nc.uuid(), nc.nguid(), nc.anaGroupId(),
                reservations(subsystemNqn, nc));
            namespace.qos().limits(nc.qos());
            if (daemon.metrics() != null) {
                // This NSID has no meters (checked above, and changes are serialised): unbinding below on failure
                // removes only what this call bound.
                daemon.metrics().bindNamespace(subsystem, namespace);
            }
            added = subsystem.addNamespace(namespace);
            if (!added) {
                throw new IllegalStateException(subsystemNqn + " already has namespace "
                    + Integer.toUnsignedString(nc.nsid()));
            }
        } finally {
            if (!added) {
                if (daemon.metrics() != null && namespace != null) {
                    daemon.metrics().unbindNamespace(namespace);
                }
                closeDevice(device);
                daemon.ramBudget().release(ramReserved);
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
        openChannels(device);
        LOG.info("{} namespace {} added: {}, {} blocks of {} bytes, uuid {}", subsystemNqn,
            Integer.toUnsignedString(nc.nsid()), device.description(), device.blockCount(), device.blockSize(),
            nc.uuid());
        daemon.registry().notifyNamespaceChanged(subsystemNqn, nc.nsid());
        return namespace;
    }

    /**
     * Opens a namespace added live on every reactor's ring (a task each), as an I/O queue's Connect opens those of
     * its subsystem ({@link ReactorBackends}): the I/O queues already connected find its channel open, so no I/O opens
     * one. A reactor that is stopping is skipped (it opens nothing any more); a removal that follows closes what was
     * opened ({@link UringBlockDevice#detach} runs after these tasks on each reactor).
     */
    private void openChannels(BlockDevice device) {
        if (!(device instanceof UringBlockDevice)) {
            return; // RAM and null devices have no channels
        }
        for (Reactor reactor : transports.reactors()) {
            try {
                reactor.execute(() -> {
                    ReactorBackends backends = ReactorBackends.current();
                    if (backends != null) {
                        backends.open(device);
                    }
                });
            } catch (RejectedExecutionException e) {
                LOG.debug("{}: not opened on {}: {}", device, reactor, e.getMessage());
            }
        }
    }

    /** See {@link TargetDaemon#removeNamespace}; under the daemon's lock, the daemon running. */
    Namespace removeNamespace(String subsystemNqn, int nsid) {
        Subsystem subsystem = model.subsystem(subsystemNqn);
        if (subsystem == null) {
            throw new IllegalArgumentException("no subsystem " + subsystemNqn);
        }
        Namespace removed = subsystem.removeNamespace(nsid);
        if (removed == null) {
            return null;
        }
        daemon.registry().notifyNamespaceChanged(subsystemNqn, nsid);
        releaseNamespace(subsystem, removed);
        return removed;
    }

    /** See {@link TargetDaemon#resizeNamespace}; under the daemon's lock, the daemon running. */
    long resizeNamespace(String subsystemNqn, int nsid, long sizeBytes) throws IOException {
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

    /** See {@link TargetDaemon#setQos}; under the daemon's lock, the daemon running. */
    void setQos(String subsystemNqn, int nsid, QosLimits limits) {
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
    void releaseNamespace(Subsystem subsystem, Namespace removed) {
        String subsystemNqn = subsystem.nqn();
        int nsid = removed.nsid();
        // I/O waiting for the QoS budget goes to the device at its reactor's next poll (which answers it Namespace
        // Not Ready once the device stops), so nothing stays queued for a namespace that is gone.
        removed.qos().limits(QosLimits.NONE);
        if (daemon.metrics() != null) {
            daemon.metrics().unbindNamespace(removed);
        }
        if (removed.device() instanceof UringBlockDevice uring) {
            // Its I/O channels live on the reactors: each reactor finishes the I/O in flight there and closes its
            // channel before the native device may be freed. If one does not in time, leak the device (say so)
            // rather than free memory a ring still completes into.
            boolean detached;
            try {
                detached = uring.detach(transports.reactors(), TargetDaemon.DEVICE_CLOSE_TIMEOUT);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                detached = false;
            }
            if (!detached) {
                LOG.error("{} namespace {} removed, but its I/O did not finish within {} ms: {} is left open",
                    subsystemNqn, Integer.toUnsignedString(nsid), TargetDaemon.DEVICE_CLOSE_TIMEOUT.toMillis(),
                    uring.description());
                forgetDevice(uring);
                return;
            }
        }
        closeDevice(removed.device());
        if (removed.device() instanceof RamBlockDevice) {
            daemon.ramBudget().release(removed.device().blockCount() * removed.device().blockSize());
        }
        LOG.info("{} namespace {} removed ({})", subsystemNqn, Integer.toUnsignedString(nsid),
            removed.device().description());
    }

    /** Takes {@code device} off the list of devices to close at shutdown; returns its entry, or null. */
    OpenDevice forgetDevice(BlockDevice device) {
        synchronized (devices) {
            for (int i = 0; i < devices.size(); i++) {
                if (devices.get(i).device() == device) {
                    return devices.remove(i);
                }
            }
        }
        return null;
    }

    void closeDevice(BlockDevice device) {
        OpenDevice open = forgetDevice(device);
        if (device instanceof RamBlockDevice ram) {
            populator.forget(ram);
        }
        String label = open != null ? open.label() : device.description();
        TargetDaemon.step("closing " + label + " (" + device.description() + ")", device::close);
    }

    /** Takes every open device off the list (shutdown, under the daemon's lock: no live change runs). */
    List<OpenDevice> takeOpenDevices() {
        synchronized (devices) {
            List<OpenDevice> toClose = new ArrayList<>(devices);
            devices.clear();
            return toClose;
        }
    }

    /** Closes {@code toClose} in reverse opening order; io_uring devices not while a reactor may still use them. */
    void close(List<OpenDevice> toClose, boolean reactorStuck) {
        TargetDaemon.step("stopping the RAM namespace populator", populator::close);
        for (int i = toClose.size() - 1; i >= 0; i--) {
            OpenDevice open = toClose.get(i);
            if (reactorStuck && open.device() instanceof UringBlockDevice) {
                // A reactor still running may still be draining its ring into this device's native structures.
                LOG.error("not closing {} ({}): a reactor did not stop, and its io_uring may still use the device",
                    open.label(), open.device().description());
                continue;
            }
            TargetDaemon.step("closing " + open.label() + " (" + open.device().description() + ")",
                open.device()::close);
        }
    }

    /** A failed start leaves nothing behind, not even the empty files it created for new namespaces. */
    void removeCreatedFiles() {
        for (Path file : createdFiles) {
            TargetDaemon.step("removing " + file + ", created by the failed start",
                () -> Files.deleteIfExists(file));
        }
    }

    int openDeviceCount() {
        synchronized (devices) {
            return devices.size();
        }
    }

    record OpenDevice(String label, BlockDevice device) {
    }
}
