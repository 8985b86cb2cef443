package io.nvmeof4j.target.model;

import io.nvmeof4j.target.backend.BlockDevice;
import io.nvmeof4j.target.backend.QosBudget;
import io.nvmeof4j.target.io.LbaRangeLock;
import io.nvmeof4j.target.metrics.NamespaceMeters;
import io.nvmeof4j.target.reservation.Reservations;

import java.util.Objects;
import java.util.UUID;

/**
 * An NVM namespace of a subsystem: an NSID over a block device, with the identifiers the host uses to tell
 * namespaces apart across paths and restarts (Identify CNS 03h descriptors, Identify Namespace NGUID/EUI64).
 */
public final class Namespace {
    private final int nsid;
    private final BlockDevice device;
    private final UUID uuid;
    private final byte[] nguid;
    /** Keeps fused Compare and Write atomic against writes from every queue of every controller. */
    private final LbaRangeLock rangeLock = new LbaRangeLock();
    /** QoS rate limits (none until set): asked per I/O only while it has a limit. */
    private final QosBudget qos = new QosBudget();
    private final int anaGroupId;
    private final Reservations reservations;
    /** Resolved once when the namespace is bound to the metrics; read per I/O by the metered path. */
    private volatile NamespaceMeters meters;

    /**
     * @param nsid   1..0xFFFFFFFE
     * @param uuid   never null (configuration generates a stable one when none is given)
     * @param nguid  16 bytes, never null
     */
    public Namespace(int nsid, BlockDevice device, UUID uuid, byte[] nguid) {
        this(nsid, device, uuid, nguid, AnaStates.DEFAULT_GROUP, new Reservations(null));
    }

    /**
     * @param anaGroupId   the ANA group (1..{@link AnaStates#GROUP_MAX}): its state on a port is this namespace's
     * @param reservations the namespace's reservation state (persisted or in memory)
     */
    public Namespace(int nsid, BlockDevice device, UUID uuid, byte[] nguid, int anaGroupId, Reservations reservations) {
        if (anaGroupId < 1 || anaGroupId > AnaStates.GROUP_MAX) {
            throw new IllegalArgumentException("ANA group " + anaGroupId + " outside 1.." + AnaStates.GROUP_MAX);
        }
        this.anaGroupId = anaGroupId;
        this.reservations = Objects.requireNonNull(reservations, "reservations");
        if (nsid == 0 || nsid == -1) {
            throw new IllegalArgumentException("nsid " + Integer.toUnsignedString(nsid) + " is reserved");
        }
        if (nguid.length != 16) {
            throw new IllegalArgumentException("nguid must be 16 bytes, got " + nguid.length);
        }
        this.nsid = nsid;
        this.device = Objects.requireNonNull(device, "device");
        this.uuid = Objects.requireNonNull(uuid, "uuid");
        this.nguid = nguid.clone();
    }

    public int nsid() {
        return nsid;
    }

    /** ANAGRPID. */
    public int anaGroupId() {
        return anaGroupId;
    }

    public Reservations reservations() {
        return reservations;
    }

    public BlockDevice device() {
        return device;
    }

    public UUID uuid() {
        return uuid;
    }

    /** A copy of the 16-byte NGUID. */
    public byte[] nguid() {
        return nguid.clone();
    }

    public int blockSize() {
        return device.blockSize();
    }

    /** log2 of the block size: Identify Namespace LBAF.LBADS. */
    public int blockSizeShift() {
        return Integer.numberOfTrailingZeros(device.blockSize());
    }

    public long blockCount() {
        return device.blockCount();
    }

    public LbaRangeLock rangeLock() {
        return rangeLock;
    }

    /** The namespace's QoS rate limits ({@code bdev_set_qos_limit}); change them with {@link QosBudget#limits}. */
    public QosBudget qos() {
        return qos;
    }

    /** The namespace's meters, or null when metrics are off. */
    public NamespaceMeters meters() {
        return meters;
    }

    public void meters(NamespaceMeters meters) {
        this.meters = meters;
    }

    @Override
    public String toString() {
        return "namespace " + Integer.toUnsignedString(nsid) + " (" + device.description() + ")";
    }
}
