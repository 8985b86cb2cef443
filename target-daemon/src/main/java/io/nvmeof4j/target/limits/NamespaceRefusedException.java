package io.nvmeof4j.target.limits;

import java.io.IOException;

/**
 * A namespace the daemon will not add, for a reason of policy rather than of the request's form: its device lies
 * outside {@code allowed_paths}, or it needs more memory than the RAM budget has. Nothing was opened or allocated.
 */
public final class NamespaceRefusedException extends IOException {
    /** Why, so the management API can answer with the right status. */
    public enum Reason {
        /** The path is not under {@code allowed_paths} (or is of a kind never allowed): 403. */
        PATH_NOT_ALLOWED,
        /** The namespace alone is larger than the whole RAM budget: 400, no retry can succeed. */
        LARGER_THAN_BUDGET,
        /** The namespace fits the budget, but not next to the RAM namespaces already there: 409. */
        BUDGET_EXHAUSTED
    }

    private final Reason reason;

    public NamespaceRefusedException(Reason reason, String message) {
        super(message);
        this.reason = reason;
    }

    public Reason reason() {
        return reason;
    }
}
