package io.nvmeof4j.initiator.cli;

import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

import java.io.InputStream;
import java.io.OutputStream;
import java.io.OutputStreamWriter;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.util.Objects;

/**
 * {@code nvmeof}: the command-line host of nvmeof4j (discover, identify, read, write, perf) with nvme-cli's option
 * names. Text output goes to stdout, one-line errors ({@code nvmeof: error: ...}) to stderr; {@code read} and
 * {@code write} move raw data through stdout/stdin when no {@code --data FILE} is given.
 */
@Command(name = "nvmeof", mixinStandardHelpOptions = true, versionProvider = NvmeofCli.Version.class,
    sortOptions = false,
    subcommands = {DiscoverCommand.class, IdentifyCommand.class, ReadCommand.class, WriteCommand.class,
        CompareAndWriteCommand.class, CopyCommand.class, VerifyCommand.class, PerfCommand.class,
        ReservationCommands.Register.class, ReservationCommands.Acquire.class, ReservationCommands.Release.class,
        ReservationCommands.Report.class, CommandLine.HelpCommand.class},
    description = {"NVMe-over-Fabrics host (NVMe/TCP) on the JVM: discover subsystems, identify",
        "controllers, read and write blocks, generate load. Connection options follow",
        "nvme-cli's 'nvme connect' (-t -a -s -n -q -I ...), after the subcommand:",
        "  nvmeof discover -t tcp -a 127.0.0.1 -s 8009",
        "  nvmeof perf -a 127.0.0.1 -s 4420 -n nqn.2014-08.org.example:disk \\",
        "      --workload randread --io-size 4K --queue-depth 32 --time 10",
        "-n is the subsystem NQN and -s the port in every subcommand; read and write take",
        "the namespace and start block as --namespace-id and --start-block.",
        "perf takes several paths of one subsystem: -a 10.0.0.5,10.0.0.6 (or -s 4420,4421)",
        "with --iopolicy numa|round-robin|queue-depth.",
        ""},
    exitCodeListHeading = "%nExit status:%n",
    exitCodeList = {
        "0:success",
        "1:other failure (protocol error, unexpected answer, local file error)",
        "2:invalid command line or argument (also: a transport this build lacks, an unknown namespace)",
        "3:wrong address (not an IPv4/IPv6 address: names are not resolved; no route to the host)",
        "4:connection refused (nothing listens at the address and port)",
        "5:unknown subsystem NQN (the controller does not serve it on that port)",
        "6:host not allowed (the subsystem does not list this host NQN)",
        "7:timeout (no connection or no answer within the timeout)",
        "8:an I/O command failed (NVMe status)"})
public final class NvmeofCli implements Runnable {
    public static final int EXIT_OK = 0;
    public static final int EXIT_FAILURE = 1;
    public static final int EXIT_USAGE = 2;
    public static final int EXIT_ADDRESS = 3;
    public static final int EXIT_REFUSED = 4;
    public static final int EXIT_UNKNOWN_NQN = 5;
    public static final int EXIT_HOST_NOT_ALLOWED = 6;
    public static final int EXIT_TIMEOUT = 7;
    public static final int EXIT_IO_ERROR = 8;

    final InputStream stdin;
    /** Raw data of {@code read} without {@code --data}; nothing else writes to it. */
    final OutputStream stdout;

    @Spec
    private CommandSpec spec;

    NvmeofCli(InputStream stdin, OutputStream stdout) {
        this.stdin = Objects.requireNonNull(stdin, "stdin");
        this.stdout = Objects.requireNonNull(stdout, "stdout");
    }

    @Override
    public void run() {
        throw new CommandLine.ParameterException(spec.commandLine(),
            "a subcommand is needed: discover, identify, read, write, perf, resv-register, resv-acquire, "
                + "resv-release or resv-report");
    }

    public static void main(String[] args) {
        CliLogging.configure(isVerbose(args));
        PrintStream rawOut = System.out;
        PrintWriter out = new PrintWriter(new OutputStreamWriter(rawOut, StandardCharsets.UTF_8), true);
        PrintWriter err = new PrintWriter(new OutputStreamWriter(System.err, StandardCharsets.UTF_8), true);
        int status = run(System.in, rawOut, out, err, args);
        out.flush();
        err.flush();
        rawOut.flush();
        CliLogging.stop();
        System.exit(status);
    }

    /**
     * Runs one command in this JVM and returns its exit status (tests, embedding).
     *
     * @param stdin  data for {@code write} without {@code --data}
     * @param stdout where {@code read} without {@code --data} writes the raw data
     * @param out    text output
     * @param err    errors and diagnostics
     */
    public static int run(InputStream stdin, OutputStream stdout, PrintWriter out, PrintWriter err, String... args) {
        CommandLine cl = new CommandLine(new NvmeofCli(stdin, stdout));
        cl.setOut(out).setErr(err);
        cl.setParameterExceptionHandler((e, a) -> {
            CommandLine c = e.getCommandLine();
            c.getErr().println("nvmeof: error: " + e.getMessage().replace('\n', ' ') + " (see: "
                + c.getCommandSpec().qualifiedName() + " --help)");
            c.getErr().flush();
            return EXIT_USAGE;
        });
        cl.setExecutionExceptionHandler((e, c, parseResult) -> {
            // The commands report their own failures; this is for what escaped them.
            return CliErrors.report(c.getErr(), e, isVerbose(args));
        });
        int status = cl.execute(args);
        out.flush();
        err.flush();
        return status;
    }

    static boolean isVerbose(String[] args) {
        for (String a : args) {
            if ("-v".equals(a) || "--verbose".equals(a)) {
                return true;
            }
        }
        return false;
    }

    /** {@code --version}. */
    static final class Version implements CommandLine.IVersionProvider {
        @Override
        public String[] getVersion() {
            Package p = NvmeofCli.class.getPackage();
            String v = p == null || p.getImplementationVersion() == null ? "(development build)"
                : p.getImplementationVersion();
            return new String[] {"nvmeof " + v,
                "Java " + System.getProperty("java.version") + " (" + System.getProperty("java.vm.name") + ")"};
        }
    }
}
