package io.nvmeof4j.protocol.spi.host;

import io.nvmeof4j.protocol.command.NvmeStatus;

/**
 * Status codes a host synthesizes for commands that never got a completion from the controller, in the codes the
 * Linux host uses for the same cases (NVMe Base 2.0, Figure 104, path related status, SCT 3).
 */
public final class HostStatus {
    private HostStatus() {
    }

    /**
     * The queue the command was on went away (connection lost, protocol error, queue closed). Without DNR: the
     * command may be retried on a new connection (the Linux host requeues it).
     */
    public static final int HOST_PATH_ERROR = NvmeStatus.HOST_PATH_ERROR;
    /** The host gave up on the command (its timeout expired, or the controller was lost); always with DNR. */
    public static final int HOST_ABORTED_COMMAND = 0x371;

    /** {@link NvmeStatus#describe} that also names the host-side codes. */
    public static String describe(int status) {
        if (NvmeStatus.code(status) == HOST_ABORTED_COMMAND) {
            return String.format("0x%03x HOST_ABORTED_COMMAND%s", HOST_ABORTED_COMMAND,
                NvmeStatus.isDnr(status) ? ", DNR" : "");
        }
        return NvmeStatus.describe(status);
    }
}
