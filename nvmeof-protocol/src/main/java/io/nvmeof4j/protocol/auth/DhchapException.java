package io.nvmeof4j.protocol.auth;

/**
 * DH-HMAC-CHAP failed on one queue: either the controller said so (Failure1) or the host found the controller's
 * messages wrong (and sent Failure2). The message names the step and the reason, never a key.
 */
public final class DhchapException extends Exception {
    private static final long serialVersionUID = 1L;

    private final int explanation;
    private final boolean reportedByController;
    private final int nvmeStatus;

    public DhchapException(String message, int explanation, boolean reportedByController, int nvmeStatus) {
        super(message);
        this.explanation = explanation;
        this.reportedByController = reportedByController;
        this.nvmeStatus = nvmeStatus;
    }

    /** The reason code explanation ({@link DhchapFailure}), 0 when the failure was an NVMe status instead. */
    public int explanation() {
        return explanation;
    }

    /** True when the controller sent Failure1; false when this host detected the fault. */
    public boolean reportedByController() {
        return reportedByController;
    }

    /** The NVMe status of a failed AUTH_Send/AUTH_Receive, 0 when the commands succeeded. */
    public int nvmeStatus() {
        return nvmeStatus;
    }
}
