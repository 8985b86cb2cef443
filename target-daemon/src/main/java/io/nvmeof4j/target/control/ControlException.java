package io.nvmeof4j.target.control;

/**
 * A live change the control plane refused; nothing was changed. {@link Kind} says why, in terms both front ends map
 * onto their own codes (HTTP statuses, SPDK JSON-RPC error codes).
 */
public final class ControlException extends Exception {
    /** Why a change was refused. */
    public enum Kind {
        /** A parameter is malformed or contradicts the configuration's rules (HTTP 400, EINVAL). */
        INVALID,
        /** What the change names does not exist (HTTP 404, ENOENT / ENODEV). */
        NOT_FOUND,
        /** What the change creates exists already (HTTP 409, EEXIST). */
        EXISTS,
        /** Something still uses what the change removes (HTTP 409, EBUSY). */
        BUSY,
        /** Outside {@code allowed_paths} (HTTP 403, EPERM). */
        FORBIDDEN,
        /** Beyond the RAM budget (HTTP 409, ENOMEM). */
        NO_SPACE,
        /** The configuration file or a device could not be written or opened (HTTP 500, EIO). */
        IO
    }

    private final Kind kind;

    public ControlException(Kind kind, String message) {
        super(message);
        this.kind = kind;
    }

    public ControlException(Kind kind, String message, Throwable cause) {
        super(message, cause);
        this.kind = kind;
    }

    public Kind kind() {
        return kind;
    }
}
