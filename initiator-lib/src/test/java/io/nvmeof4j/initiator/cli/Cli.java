package io.nvmeof4j.initiator.cli;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/** Runs {@code nvmeof} in this JVM and captures what it printed. */
final class Cli {
    private Cli() {
    }

    /** One run: exit status, text on stdout and stderr, raw bytes on stdout. */
    record Outcome(int status, String out, String err, byte[] data) {
        @Override
        public String toString() {
            return "exit " + status + "\n--- stdout\n" + out + "--- stderr\n" + err;
        }
    }

    static Outcome run(String... args) {
        return runWithInput(new byte[0], args);
    }

    static Outcome runWithInput(byte[] stdin, String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        ByteArrayOutputStream data = new ByteArrayOutputStream();
        int status = NvmeofCli.run(new ByteArrayInputStream(stdin), data, new PrintWriter(out, true),
            new PrintWriter(err, true), args);
        return new Outcome(status, out.toString(), err.toString(), data.toByteArray());
    }

    /** {@code subcommand -a 127.0.0.1 -s port -q HOST_A [rest]}. */
    static String[] args(String subcommand, int port, String... rest) {
        List<String> a = new ArrayList<>(List.of(subcommand, "-t", "tcp", "-a", "127.0.0.1", "-s",
            Integer.toString(port), "-q", CliTarget.HOST_A));
        a.addAll(Arrays.asList(rest));
        return a.toArray(new String[0]);
    }
}
