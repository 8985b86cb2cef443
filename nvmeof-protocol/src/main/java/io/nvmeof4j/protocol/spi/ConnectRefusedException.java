package io.nvmeof4j.protocol.spi;

import io.nvmeof4j.protocol.command.NvmeStatus;

/**
 * A transport cannot set up a queue for what its Fabrics Connect asks ({@link TransportQueue#install}): the Connect
 * is answered with {@link #status()}, counted under {@link #reason()}, and logged with the message, which says what
 * was short and by how much.
 */
public final class ConnectRefusedException extends Exception {
    private final int status;
    private final PendingConnections.Refusal reason;

    /**
     * @param status the Connect's status ({@link NvmeStatus}): Controller Busy without DNR when the queue may fit
     *               later, so the host tries again
     */
    public ConnectRefusedException(int status, PendingConnections.Refusal reason, String message) {
        super(message);
        this.status = status;
        this.reason = reason;
    }

    public int status() {
        return status;
    }

    public PendingConnections.Refusal reason() {
        return reason;
    }
}
