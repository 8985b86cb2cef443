package io.nvmeof4j.initiator;

/**
 * Completion of one block I/O submitted through the callback API of {@link NvmeofNamespace}. Meant to be one
 * long-lived object reused for every I/O (the per-I/O state travels in {@code context}), so that completing
 * allocates nothing.
 * <p>Runs on the host reactor thread that owns the I/O queue: it must not block; it may submit the next I/O
 * (which then skips the cross-thread hand-off).
 */
@FunctionalInterface
public interface IoCallback {
    /**
     * @param status  0 on success, else an NVMe status code ({@code SCT << 8 | SC}, with
     *                {@link io.nvmeof4j.protocol.command.NvmeStatus#DNR} when retrying cannot help): the controller's
     *                (0x080 LBA out of range, 0x285 compare failure, ...) or the host's
     *                ({@link io.nvmeof4j.protocol.spi.host.HostStatus#HOST_ABORTED_COMMAND} for a command timeout,
     *                {@link io.nvmeof4j.protocol.spi.host.HostStatus#HOST_PATH_ERROR} when the controller is lost or
     *                closed). {@link IoStatus#describe} names it.
     * @param context the object given at submission
     */
    void onComplete(int status, Object context);
}
