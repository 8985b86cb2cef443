package io.nvmeof4j.initiator.cli;

import picocli.CommandLine.Option;

/**
 * {@code --namespace-id}, for every command that works on one namespace. Long-only: nvme-cli's {@code -n} is the
 * subsystem NQN here (a connection option).
 */
final class NamespaceIdOption {
    @Option(names = "--namespace-id", paramLabel = "NSID", defaultValue = "1",
        description = "Namespace id. Default: ${DEFAULT-VALUE}.")
    int value;
}
