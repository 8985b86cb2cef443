package io.nvmeof4j.target.control;

import io.nvmeof4j.target.backend.QosLimits;
import io.nvmeof4j.target.config.ConfigException;
import io.nvmeof4j.target.config.NamespaceConfig;
import io.nvmeof4j.target.config.SubsystemConfig;
import io.nvmeof4j.target.config.TargetConfig;
import io.nvmeof4j.target.limits.NamespaceRefusedException;
import io.nvmeof4j.target.model.Namespace;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import io.nvmeof4j.target.daemon.TargetDaemon;

/**
 * Namespaces added, removed, resized and their QoS limits: the changes {@link ControlPlane} makes for this family,
 * each over its persist-or-undo step, run under its lock (see there for each operation's contract).
 */
final class NamespaceChanges {
    private final ControlPlane plane;
    private final TargetDaemon daemon;

    NamespaceChanges(ControlPlane plane, TargetDaemon daemon) {
        this.plane = plane;
        this.daemon = daemon;
    }

    Namespace addNamespace(String who, String nqn, NamespaceConfig nc) throws ControlException {
        SubsystemConfig s = plane.requireSubsystem(nqn);
        if (s.maxNamespaces() > 0 && Integer.compareUnsigned(nc.nsid(), s.maxNamespaces()) > 0) {
            // SPDK: "Cannot add namespace with nsid N > max_nsid M".
            throw new ControlException(ControlException.Kind.INVALID, "cannot add namespace with nsid "
                + Integer.toUnsignedString(nc.nsid()) + " > max_namespaces " + s.maxNamespaces() + " of " + nqn);
        }
        for (NamespaceConfig n : s.namespaces()) {
            if (n.nsid() == nc.nsid()) {
                throw new ControlException(ControlException.Kind.EXISTS, "subsystem " + nqn + " already has namespace "
                    + Integer.toUnsignedString(nc.nsid()));
            }
        }
        // Not validated against the file's rules before the daemon has checked allowed_paths: validating looks at
        // the file, and a refusal must say nothing about what lies outside the allowed directories. The daemon
        // checks confinement and the RAM budget first, then opens; the whole configuration is validated after.
        Namespace added;
        try {
            added = daemon.addNamespace(nqn, nc);
        } catch (NamespaceRefusedException e) {
            throw new ControlException(switch (e.reason()) {
                case PATH_NOT_ALLOWED -> ControlException.Kind.FORBIDDEN;
                case LARGER_THAN_BUDGET -> ControlException.Kind.INVALID;
                case BUDGET_EXHAUSTED -> ControlException.Kind.NO_SPACE;
            }, e.getMessage());
        } catch (ConfigException e) {
            throw new ControlException(ControlException.Kind.INVALID, e.getMessage());
        } catch (IllegalStateException e) {
            throw new ControlException(ControlException.Kind.EXISTS, e.getMessage());
        } catch (IllegalArgumentException e) {
            throw new ControlException(ControlException.Kind.NOT_FOUND, e.getMessage());
        } catch (IOException e) {
            throw new ControlException(ControlException.Kind.IO, e.getMessage(), e);
        }
        // Persist the file the daemon opened (every symlink resolved), as checked against allowed_paths.
        NamespaceConfig persisted = nc;
        if (nc.path() != null) {
            try {
                persisted = nc.withPath(nc.path().toRealPath());
            } catch (IOException e) {
                persisted = nc;
            }
        }
        List<NamespaceConfig> finalList = new ArrayList<>(s.namespaces());
        finalList.add(persisted);
        TargetConfig next;
        try {
            next = plane.validate(plane.replace(nqn, old -> withNamespaces(old, finalList)));
        } catch (ControlException e) {
            daemon.removeNamespace(nqn, nc.nsid());
            throw e;
        }
        plane.commitOrUndo(who, "add namespace " + Integer.toUnsignedString(nc.nsid()) + " to " + nqn, next,
            () -> daemon.removeNamespace(nqn, nc.nsid()));
        return added;
    }

    Namespace removeNamespace(String who, String nqn, int nsid) throws ControlException {
        SubsystemConfig s = plane.requireSubsystem(nqn);
        List<NamespaceConfig> namespaces = new ArrayList<>(s.namespaces());
        if (!namespaces.removeIf(n -> n.nsid() == nsid)) {
            throw new ControlException(ControlException.Kind.NOT_FOUND, "subsystem " + nqn + " has no namespace "
                + Integer.toUnsignedString(nsid));
        }
        TargetConfig next = plane.validate(plane.replace(nqn, old -> withNamespaces(old, namespaces)));
        plane.commit(who, "remove namespace " + Integer.toUnsignedString(nsid) + " from " + nqn, next);
        return daemon.removeNamespace(nqn, nsid);
    }

    long resizeNamespace(String who, String nqn, int nsid, long sizeBytes) throws ControlException {
        SubsystemConfig s = plane.requireSubsystem(nqn);
        NamespaceConfig nc = s.namespaces().stream().filter(n -> n.nsid() == nsid && n.enabled()).findFirst()
            .orElseThrow(() -> new ControlException(ControlException.Kind.NOT_FOUND, "subsystem " + nqn
                + " has no namespace " + Integer.toUnsignedString(nsid)));
        Namespace live = daemon.model().subsystem(nqn).namespace(nsid);
        if (live == null) {
            throw new ControlException(ControlException.Kind.NOT_FOUND, "subsystem " + nqn + " has no namespace "
                + Integer.toUnsignedString(nsid));
        }
        long before = live.blockCount() * live.blockSize();
        switch (nc.backend()) {
            case RAM -> throw new ControlException(ControlException.Kind.INVALID, "namespace "
                + Integer.toUnsignedString(nsid) + " of " + nqn + " is RAM, which cannot be resized");
            case NULL -> {
                if (sizeBytes <= 0) {
                    throw new ControlException(ControlException.Kind.INVALID, "a null namespace needs its new size");
                }
            }
            default -> {
            }
        }
        if (sizeBytes > 0 && sizeBytes < before) {
            throw new ControlException(ControlException.Kind.INVALID, "namespace " + Integer.toUnsignedString(nsid)
                + " of " + nqn + " has " + before + " bytes; shrinking to " + sizeBytes + " is refused (only growing)");
        }
        if (sizeBytes > 0 && sizeBytes % live.blockSize() != 0) {
            throw new ControlException(ControlException.Kind.INVALID, "size " + sizeBytes
                + " is not a multiple of the block size " + live.blockSize());
        }
        long after;
        try {
            after = daemon.resizeNamespace(nqn, nsid, sizeBytes);
        } catch (UnsupportedOperationException | IllegalArgumentException e) {
            throw new ControlException(ControlException.Kind.INVALID, e.getMessage());
        } catch (io.nvmeof4j.jni.NativeIoException e) {
            throw new ControlException(e.errno() == 16 ? ControlException.Kind.BUSY : ControlException.Kind.INVALID,
                "namespace " + Integer.toUnsignedString(nsid) + " of " + nqn + ": " + (e.errno() == 16
                    ? "the file or device is smaller than the namespace now; shrinking is refused"
                    : e.getMessage()), e);
        } catch (IOException e) {
            throw new ControlException(ControlException.Kind.IO, e.getMessage(), e);
        }
        // A file namespace sized by its file stays so; one with a configured size keeps the new size.
        NamespaceConfig resized = nc.withSize(nc.backend() == io.nvmeof4j.target.config.BackendType.FILE
            && nc.sizeBytes() == 0 ? 0 : after);
        List<NamespaceConfig> list = new ArrayList<>();
        for (NamespaceConfig n : s.namespaces()) {
            list.add(n.nsid() == nsid ? resized : n);
        }
        Runnable undo = () -> {
            try {
                daemon.resizeNamespace(nqn, nsid, before);
            } catch (IOException e) {
                throw new IllegalStateException("cannot restore the size " + before + ": " + e.getMessage(), e);
            }
        };
        TargetConfig next;
        try {
            next = plane.validate(plane.replace(nqn, old -> withNamespaces(old, list)));
        } catch (ControlException e) {
            undo.run();
            throw e;
        }
        plane.commitOrUndo(who, "resize namespace " + Integer.toUnsignedString(nsid) + " of " + nqn + " to " + after
            + " bytes", next, undo);
        if (after != before) {
            daemon.registry().notifyNamespaceChanged(nqn, nsid);
        }
        return after;
    }

    NamespaceConfig setQos(String who, String nqn, int nsid, QosLimits limits)
        throws ControlException {
        SubsystemConfig s = plane.requireSubsystem(nqn);
        List<NamespaceConfig> namespaces = new ArrayList<>();
        NamespaceConfig changed = null;
        for (NamespaceConfig n : s.namespaces()) {
            if (n.nsid() == nsid) {
                changed = n.withQos(limits);
                namespaces.add(changed);
            } else {
                namespaces.add(n);
            }
        }
        if (changed == null) {
            throw new ControlException(ControlException.Kind.NOT_FOUND, "subsystem " + nqn + " has no namespace "
                + Integer.toUnsignedString(nsid));
        }
        TargetConfig next = plane.validate(plane.replace(nqn, old -> withNamespaces(old, namespaces)));
        plane.commit(who, "set QoS of namespace " + Integer.toUnsignedString(nsid) + " of " + nqn + ": " + limits,
            next);
        if (changed.enabled()) {
            daemon.setQos(nqn, nsid, limits); // cannot fail: the namespace is live and changes are serialised
        }
        return changed;
    }

    private static SubsystemConfig withNamespaces(SubsystemConfig s, List<NamespaceConfig> namespaces) {
        return new SubsystemConfig(s.nqn(), s.allowAnyHost(), s.allowedHosts(), s.serial(), s.model(), s.firmware(),
            s.version(), s.cntlidMin(), s.cntlidMax(), s.qidMax(), namespaces, s.maxNamespaces());
    }
}
