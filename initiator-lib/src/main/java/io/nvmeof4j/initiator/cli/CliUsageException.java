package io.nvmeof4j.initiator.cli;

/** A bad argument found after parsing (a value out of range, an unknown namespace): exit status 2. */
final class CliUsageException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    CliUsageException(String message) {
        super(message);
    }
}
