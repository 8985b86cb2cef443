package io.nvmeof4j.initiator;

import io.nvmeof4j.protocol.spi.host.HostStatus;

import java.io.IOException;

/**
 * A control-path failure (discover, connect, identify, admin command) the user can act on. The message names the
 * peer, the step and, when the controller answered, the NVMe status:
 * {@code "tcp://127.0.0.1:4420 (nqn.2014-08.org.example:disk): Connect (admin queue): 0x184 CONNECT_INVALID_HOST,
 * DNR: host nqn.2014-08.org.nvmexpress:uuid:… is not allowed"}.
 */
public class NvmeofException extends IOException {
    private static final long serialVersionUID = 1L;
    /** {@link #status()} when the failure is not an NVMe status (refused connection, timeout, bad answer). */
    public static final int NO_STATUS = -1;

    private final String peer;
    private final String step;
    private final int status;

    public NvmeofException(String peer, String step, int status, String detail, Throwable cause) {
        super(peer + ": " + step + ": " + (status == NO_STATUS ? "" : HostStatus.describe(status)
            + (detail == null || detail.isEmpty() ? "" : ": ")) + (detail == null ? "" : detail), cause);
        this.peer = peer;
        this.step = step;
        this.status = status;
    }

    /** Where: {@code "tcp://127.0.0.1:4420"} plus the subsystem NQN when known. */
    public String peer() {
        return peer;
    }

    /** What was being done: {@code "TCP connect"}, {@code "Connect (admin queue)"}, {@code "Identify Controller"}. */
    public String step() {
        return step;
    }

    /** The NVMe status the controller answered with, or {@link #NO_STATUS}. */
    public int status() {
        return status;
    }
}
