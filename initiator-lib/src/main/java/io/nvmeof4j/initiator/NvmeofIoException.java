package io.nvmeof4j.initiator;

import java.io.IOException;

/**
 * A block I/O failed (the {@link java.util.concurrent.CompletableFuture} API). The message names the operation,
 * the namespace, the controller and the status; {@link #status()} carries the code.
 */
public class NvmeofIoException extends IOException {
    private static final long serialVersionUID = 1L;
    private final int status;

    public NvmeofIoException(String message, int status) {
        super(message);
        this.status = status;
    }

    /** The NVMe (or host) status code, as an {@link IoCallback} would have received it. */
    public int status() {
        return status;
    }
}
