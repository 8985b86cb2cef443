/**
 * {@code nvmeof}, the command-line host ({@code bin/nvmeof}): discover, identify, read, write and perf, with nvme-cli's
 * option names. {@link io.nvmeof4j.initiator.cli.NvmeofCli} is the entry point; its exit statuses tell the failures a
 * user can act on apart (wrong address, refused connection, unknown NQN, host not allowed, timeout). The CLI's
 * dependencies (picocli, HdrHistogram, Jackson, Logback) are optional dependencies of initiator-lib: applications
 * using the library do not inherit them.
 */
package io.nvmeof4j.initiator.cli;
