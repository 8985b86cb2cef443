package io.nvmeof4j.target.config;

import io.nvmeof4j.target.backend.QosLimits;

import java.nio.file.Path;
import java.util.Objects;
import java.util.UUID;

/**
 * One {@code subsystems[i].namespaces[j]} entry, validated.
 *
 * @param where     its JSON path ({@code subsystems[0].namespaces[1]}), for messages at open time
 * @param nsid      1..0xFFFFFFFE (an int holding the unsigned value)
 * @param enabled   {@code enable}: a disabled namespace is validated but neither opened nor exported
 * @param backend   file, ram or null
 * @param path      the file or block device (absolute); null for ram/null devices
 * @param sizeBytes namespace size; 0 for a file device means "the file's size"
 * @param blockSize 512 or 4096; 0 for a file namespace without {@code block_size}: the device's (the logical block
 *                  size of a block device, 4096 for a regular file)
 * @param bufferedIo {@code device.buffered_io} (an nvmeof4j extension, named after nvmet's namespace attribute):
 *                  through the page cache instead of O_DIRECT
 * @param uuid      as configured, or derived from the subsystem NQN and NSID
 * @param nguid     16 bytes, as configured or derived
 * @param anaGroupId {@code ana_grpid} (nvmetcli's namespace attribute): the ANA group, 1 by default
 * @param shared    {@code device.shared} (an nvmeof4j extension): open the file under a shared lock so a second
 *                  daemon serving the same subsystem may open it too (docs/high-availability.md)
 * @param qos       {@code qos}: the namespace's rate limits (an nvmeof4j extension, SPDK's {@code bdev_set_qos_limit}
 *                  parameters); {@link QosLimits#NONE} when absent
 */
public record NamespaceConfig(String where, int nsid, boolean enabled, BackendType backend, Path path, long sizeBytes,
                              int blockSize, boolean bufferedIo, UUID uuid, byte[] nguid, int anaGroupId,
                              boolean shared, QosLimits qos) {
    /** A namespace in ANA group 1, not shared, without QoS limits. */
    public NamespaceConfig(String where, int nsid, boolean enabled, BackendType backend, Path path, long sizeBytes,
                           int blockSize, boolean bufferedIo, UUID uuid, byte[] nguid) {
        this(where, nsid, enabled, backend, path, sizeBytes, blockSize, bufferedIo, uuid, nguid, 1, false,
            QosLimits.NONE);
    }

    /** A namespace without QoS limits. */
    public NamespaceConfig(String where, int nsid, boolean enabled, BackendType backend, Path path, long sizeBytes,
                           int blockSize, boolean bufferedIo, UUID uuid, byte[] nguid, int anaGroupId,
                           boolean shared) {
        this(where, nsid, enabled, backend, path, sizeBytes, blockSize, bufferedIo, uuid, nguid, anaGroupId, shared,
            QosLimits.NONE);
    }

    /** A namespace in ANA group 1, not shared. */
    public NamespaceConfig(String where, int nsid, boolean enabled, BackendType backend, Path path, long sizeBytes,
                           int blockSize, boolean bufferedIo, UUID uuid, byte[] nguid, QosLimits qos) {
        this(where, nsid, enabled, backend, path, sizeBytes, blockSize, bufferedIo, uuid, nguid, 1, false, qos);
    }

    public NamespaceConfig {
        Objects.requireNonNull(where, "where");
        Objects.requireNonNull(qos, "qos");
        Objects.requireNonNull(backend, "backend");
        Objects.requireNonNull(uuid, "uuid");
        if (nguid == null || nguid.length != 16) {
            throw new IllegalArgumentException("nguid must be 16 bytes");
        }
        if (backend == BackendType.FILE && path == null) {
            throw new IllegalArgumentException("a file namespace needs a path");
        }
        nguid = nguid.clone();
    }

    /** This namespace with its device at {@code realPath} (the path a confinement check resolved). */
    public NamespaceConfig withPath(Path realPath) {
        return new NamespaceConfig(where, nsid, enabled, backend, realPath, sizeBytes, blockSize, bufferedIo, uuid,
            nguid, anaGroupId, shared, qos);
    }

    /** This namespace with other QoS limits. */
    public NamespaceConfig withQos(QosLimits limits) {
        return new NamespaceConfig(where, nsid, enabled, backend, path, sizeBytes, blockSize, bufferedIo, uuid, nguid,
            anaGroupId, shared, limits);
    }

    /** This namespace with {@code size} bytes (a namespace resized live; 0 for a file: the file's size). */
    public NamespaceConfig withSize(long size) {
        return new NamespaceConfig(where, nsid, enabled, backend, path, size, blockSize, bufferedIo, uuid, nguid,
            anaGroupId, shared, qos);
    }

    /** A copy of the 16-byte NGUID. */
    @Override
    public byte[] nguid() {
        return nguid.clone();
    }

    /** The NGUID as 32 hex digits in nvmet's UUID-like layout ({@code 8-4-4-4-12}). */
    public String nguidText() {
        StringBuilder sb = new StringBuilder(36);
        for (int i = 0; i < 16; i++) {
            if (i == 4 || i == 6 || i == 8 || i == 10) {
                sb.append('-');
            }
            sb.append(Character.forDigit((nguid[i] >> 4) & 0xF, 16)).append(Character.forDigit(nguid[i] & 0xF, 16));
        }
        return sb.toString();
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof NamespaceConfig n && n.where.equals(where) && n.nsid == nsid && n.enabled == enabled
            && n.backend == backend && Objects.equals(n.path, path) && n.sizeBytes == sizeBytes
            && n.blockSize == blockSize && n.bufferedIo == bufferedIo && n.uuid.equals(uuid) && java.util.Arrays.equals(n.nguid, nguid)
            && n.anaGroupId == anaGroupId && n.shared == shared && n.qos.equals(qos);
    }

    @Override
    public int hashCode() {
        return Objects.hash(where, nsid, backend, path, sizeBytes, blockSize, uuid);
    }

    @Override
    public String toString() {
        return "namespace " + Integer.toUnsignedString(nsid) + " (" + backend.configName()
            + (path != null ? " " + path : "") + (sizeBytes > 0 ? ", " + Sizes.format(sizeBytes) : "")
            + (blockSize == 0 ? ", the device's block size" : ", " + blockSize + " B blocks")
            + (bufferedIo ? ", buffered" : "") + (shared ? ", shared" : "")
            + (anaGroupId != 1 ? ", ANA group " + anaGroupId : "") + (qos.none() ? "" : ", " + qos)
            + (enabled ? "" : ", disabled") + ")";
    }
}
