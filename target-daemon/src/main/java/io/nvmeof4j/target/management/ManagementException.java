package io.nvmeof4j.target.management;

/** A management request that cannot be carried out: the HTTP status to answer and a message saying why. */
public final class ManagementException extends Exception {
    private final int httpStatus;

    public ManagementException(int httpStatus, String message) {
        super(message);
        this.httpStatus = httpStatus;
    }

    public int httpStatus() {
        return httpStatus;
    }
}
