package io.nvmeof4j.initiator.cli;

import io.nvmeof4j.initiator.NvmeofException;
import io.nvmeof4j.initiator.NvmeofIoException;
import io.nvmeof4j.protocol.command.NvmeStatus;
import io.nvmeof4j.protocol.spi.host.HostStatus;
import io.nvmeof4j.protocol.spi.host.TransportConnectException;

import java.io.IOException;
import java.io.PrintWriter;
import java.util.Locale;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;

/**
 * Turns a failure into what the user sees: one line {@code nvmeof: error: <peer>: <step>: <status>: <detail>}
 * plus what to check, and the exit status of {@link NvmeofCli}.
 */
final class CliErrors {
    private CliErrors() {
    }

    /** A failure as shown: exit status and the line (without the {@code nvmeof: error: } prefix). */
    record Failure(int exitStatus, String message) {
    }

    static int report(PrintWriter err, Throwable e, boolean verbose) {
        Failure f = classify(e);
        err.println("nvmeof: error: " + f.message().replace('\n', ' ').replace('\r', ' '));
        if (verbose) {
            e.printStackTrace(err);
        }
        err.flush();
        return f.exitStatus();
    }

    static Failure classify(Throwable thrown) {
        Throwable e = unwrap(thrown);
        if (e instanceof CliUsageException) {
            return new Failure(NvmeofCli.EXIT_USAGE, e.getMessage());
        }
        if (e instanceof NvmeofException) {
            return classifyConnect((NvmeofException) e);
        }
        if (e instanceof NvmeofIoException) {
            NvmeofIoException ioe = (NvmeofIoException) e;
            String message = e.getMessage();
            if (NvmeStatus.code(ioe.status()) == HostStatus.HOST_ABORTED_COMMAND) {
                return new Failure(NvmeofCli.EXIT_TIMEOUT, message);
            }
            return new Failure(NvmeofCli.EXIT_IO_ERROR, message);
        }
        if (e instanceof java.util.concurrent.TimeoutException) {
            return new Failure(NvmeofCli.EXIT_TIMEOUT, e.getMessage() == null ? "timed out" : e.getMessage());
        }
        if (e instanceof IOException) {
            return new Failure(NvmeofCli.EXIT_FAILURE, e.getMessage() == null ? e.toString() : e.getMessage());
        }
        return new Failure(NvmeofCli.EXIT_FAILURE, e.toString());
    }

    private static Failure classifyConnect(NvmeofException e) {
        String message = e.getMessage();
        String lower = message.toLowerCase(Locale.ROOT);
        if (e.status() != NvmeofException.NO_STATUS) {
            int code = NvmeStatus.code(e.status());
            if (code == NvmeStatus.FABRICS_CONNECT_INVALID_PARAMETERS && message.contains("SUBNQN")) {
                return new Failure(NvmeofCli.EXIT_UNKNOWN_NQN, message
                    + "; check -n/--nqn ('nvmeof discover' lists the subsystems)");
            }
            if (code == NvmeStatus.FABRICS_CONNECT_INVALID_HOST) {
                return new Failure(NvmeofCli.EXIT_HOST_NOT_ALLOWED, message
                    + "; add the host NQN to the subsystem's allowed hosts, or use an allowed one with -q/--hostnqn");
            }
            return new Failure(NvmeofCli.EXIT_FAILURE, message);
        }
        // No NVMe status: the controller never answered (or the transport failed before it could).
        String noStatus = message + " (no NVMe status)";
        if (lower.contains("no completion within") || lower.contains("within the connect timeout")
            || lower.contains("timed out")) {
            return new Failure(NvmeofCli.EXIT_TIMEOUT, noStatus
                + "; check -a/--traddr and -s/--trsvcid, or raise --connect-timeout");
        }
        if (TransportConnectException.STEP_RESOLVE.equals(e.step())) {
            return new Failure(NvmeofCli.EXIT_ADDRESS, noStatus + "; check -a/--traddr");
        }
        if (TransportConnectException.STEP_CONNECT.equals(e.step())) {
            if (lower.contains("refused")) {
                return new Failure(NvmeofCli.EXIT_REFUSED, noStatus
                    + "; is a target listening there? check -a/--traddr and -s/--trsvcid");
            }
            return new Failure(NvmeofCli.EXIT_ADDRESS, noStatus + "; check -a/--traddr");
        }
        if (TransportConnectException.STEP_ICREQ.equals(e.step())) {
            return new Failure(NvmeofCli.EXIT_FAILURE, noStatus
                + "; does an NVMe/TCP target listen there? check -s/--trsvcid");
        }
        if (lower.contains("discovery controller")) {
            return new Failure(NvmeofCli.EXIT_UNKNOWN_NQN, noStatus
                + "; -n/--nqn names the discovery subsystem, which serves no I/O ('nvmeof discover' lists the others)");
        }
        return new Failure(NvmeofCli.EXIT_FAILURE, noStatus);
    }

    private static Throwable unwrap(Throwable e) {
        Throwable t = e;
        while ((t instanceof ExecutionException || t instanceof CompletionException) && t.getCause() != null) {
            t = t.getCause();
        }
        return t;
    }
}
