package io.nvmeof4j.initiator.cli;

import io.nvmeof4j.initiator.ConnectOptions;
import io.nvmeof4j.initiator.NvmeofHost;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.ParentCommand;
import picocli.CommandLine.Spec;

import java.io.PrintWriter;
import java.time.Duration;
import java.util.concurrent.Callable;

/** A subcommand: the connection options, and every failure turned into one line and an exit status. */
abstract class CliCommand implements Callable<Integer> {
    @Mixin
    ConnectionOptions connection;

    @ParentCommand
    NvmeofCli cli;

    @Spec
    CommandSpec spec;

    @Override
    public final Integer call() {
        try {
            NvmeofHost.checkJvmOptions();
        } catch (IllegalArgumentException e) {
            // A JVM option (NVMEOF4J_JAVA_OPTS) is part of the command line: a bad one is a usage error.
            return CliErrors.report(err(), new CliUsageException(e.getMessage()), false);
        }
        try {
            return execute();
        } catch (Exception e) {
            return CliErrors.report(err(), e, connection.verbose);
        }
    }

    abstract int execute() throws Exception;

    PrintWriter out() {
        return spec.commandLine().getOut();
    }

    PrintWriter err() {
        return spec.commandLine().getErr();
    }

    NvmeofHost createHost(int reactorThreads) {
        return NvmeofHost.create(connection.identity(), reactorThreads);
    }

    /** {@code value} when it lies in {@code min..max}, else the usage error that names the option and the range. */
    static int range(int value, int min, int max, String option) {
        if (value < min || value > max) {
            throw new CliUsageException(option + " " + value + " outside " + min + ".." + max);
        }
        return value;
    }

    /** A bound on waiting for one I/O of the future API: its command timeout plus slack for the hand-offs. */
    static Duration ioWait(ConnectOptions options) {
        return options.commandTimeout().plusSeconds(5);
    }
}
