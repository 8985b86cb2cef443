package io.nvmeof4j.it.vm;

import org.junit.jupiter.api.Assumptions;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Drives the QEMU guest harness of {@code integration-tests/vm} (see its README) and our daemon process from a
 * test: {@code prepare.sh}, {@code run-guest.sh}, {@code bin/nvmeof-target}. Every wait has a timeout, and every
 * process started here is stopped by PID (with its descendants) when it is closed.
 */
final class VmHarness {
    /** Exit code of {@code prepare.sh} when it is not root and Debian packages are missing. */
    static final int PREPARE_NEEDS_ROOT = 3;
    /** Exit code of {@code run-guest.sh} when the guest kernel crashed (oops, BUG, panic) while the job ran. */
    static final int GUEST_KERNEL_CRASHED = 126;
    /** The start of the lines in which {@code run-guest.sh} reports a guest kernel crash on stderr. */
    private static final List<String> CRASH_LINES = List.of("run-guest.sh: GUEST KERNEL CRASHED",
        "run-guest.sh: crash in: ", "run-guest.sh: the job's last step: ", "run-guest.sh: | ");
    private static final Logger LOG = LoggerFactory.getLogger(VmHarness.class);

    private VmHarness() {
    }

    /** How long the first {@code prepare.sh} (packages, kernel download, initramfs) may take. */
    static final Duration PREPARE_TIMEOUT = Duration.ofMinutes(30);

    /**
     * The shared {@code @BeforeAll} of the guest tests: skips them when {@code NVMEOF4J_SKIP_VM_TESTS=1}, off Linux,
     * or when only root could install the harness's packages; otherwise runs {@code prepare.sh} and requires it to
     * succeed. Returns the repository root.
     */
    static Path prepareGuest() throws IOException, InterruptedException {
        Assumptions.assumeFalse("1".equals(System.getenv("NVMEOF4J_SKIP_VM_TESTS")), "NVMEOF4J_SKIP_VM_TESTS=1");
        Assumptions.assumeTrue(System.getProperty("os.name").toLowerCase().contains("linux"), "needs Linux");
        Path repo = repoRoot();
        Path prepare = repo.resolve("integration-tests/vm/prepare.sh");
        Result prepared = run(List.of(prepare.toString()), Map.of(), PREPARE_TIMEOUT, "[prepare] ", null);
        Assumptions.assumeFalse(prepared.exitCode() == PREPARE_NEEDS_ROOT,
            "the VM harness needs Debian packages that only root can install:\n" + prepared.tail(3));
        assertThat(prepared.exitCode()).as("prepare.sh exit code; output:\n%s", prepared.tail(30)).isZero();
        return repo;
    }

    /**
     * This test JVM's classpath (failsafe runs it from a manifest-only jar and reports the real one in
     * {@code surefire.test.class.path}): the compiled tests with {@link KernelTargetProbe} and {@link AuthProbe},
     * initiator-lib and its dependencies. Every entry is a path on the host, which the guest sees at the same place.
     */
    static String testClasspath() {
        return String.join(File.pathSeparator, testClasspathEntries());
    }

    /** {@link #testClasspath()} as a list of entries, for a caller that picks some of them. */
    static List<String> testClasspathEntries() {
        String cp = System.getProperty("surefire.test.class.path");
        if (cp == null || cp.isBlank()) {
            cp = System.getProperty("java.class.path");
        }
        List<String> entries = new ArrayList<>();
        for (String e : cp.split(File.pathSeparator)) {
            if (!e.isBlank() && !e.contains(",") && Files.exists(Path.of(e))) {
                entries.add(Path.of(e).toAbsolutePath().toString());
            }
        }
        assertThat(entries).as("test classpath entries from %s", cp).isNotEmpty();
        return entries;
    }

    /**
     * The repository root: the nearest folder, walking up from the working directory, holding
     * {@code bin/nvmeof-target}.
     */
    static Path repoRoot() {
        Path p = Path.of("").toAbsolutePath();
        for (Path d = p; d != null; d = d.getParent()) {
            if (Files.exists(d.resolve("bin/nvmeof-target")) && Files.isDirectory(d.resolve("integration-tests/vm"))) {
                return d;
            }
        }
        for (Path d = p; d != null; d = d.getParent()) {   // before the daemon script exists: the harness alone
            if (Files.isDirectory(d.resolve("integration-tests/vm"))) {
                return d;
            }
        }
        throw new IllegalStateException("no folder containing bin/nvmeof-target above " + p);
    }

    static Path vmDir() {
        return repoRoot().resolve("integration-tests/vm");
    }

    /** What a finished child process left: its exit code and everything it printed (stdout and stderr merged). */
    record Result(int exitCode, List<String> lines, boolean timedOut) {
        String output() {
            return String.join("\n", lines);
        }

        String tail(int n) {
            return String.join("\n", lines.subList(Math.max(0, lines.size() - n), lines.size()));
        }
    }

    /**
     * Runs a command to completion, echoing its output line by line (with a prefix) to stdout and, when
     * {@code log} is given, to that file. Kills it and its descendants after {@code timeout}.
     */
    static Result run(List<String> command, Map<String, String> env, Duration timeout, String prefix, Path log)
        throws IOException, InterruptedException {
        ProcessBuilder pb = new ProcessBuilder(command).redirectErrorStream(true)
            .redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")));
        pb.environment().putAll(env);
        Process process = pb.start();
        List<String> lines = Collections.synchronizedList(new ArrayList<>());
        Thread pump = new Thread(() -> {
            try (BufferedReader r = new BufferedReader(
                     new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
                 var w = log == null ? null : Files.newBufferedWriter(log, StandardCharsets.UTF_8)) {
                String line;
                while ((line = r.readLine()) != null) {
                    lines.add(line);
                    System.out.println(prefix + line);
                    if (w != null) {
                        w.write(line);
                        w.newLine();
                        w.flush();
                    }
                }
            } catch (IOException e) {
                lines.add("<output pump failed: " + e + ">");
            }
        }, "output-" + prefix.trim());
        pump.setDaemon(true);
        pump.start();
        boolean finished = false;
        try {
            finished = process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS);
        } finally {
            if (!finished) {
                killTree(process, Duration.ofSeconds(20));
            }
        }
        pump.join(10_000);
        return new Result(finished ? process.exitValue() : -1, List.copyOf(lines), !finished);
    }

    /** One boot of a guest layer: {@code run-guest.sh} with its job, {@code attempt} 1, or 2 after a kernel crash. */
    @FunctionalInterface
    interface GuestAttempt {
        Result run(int attempt) throws Exception;
    }

    /**
     * Runs a guest layer, and boots it once more (the whole job again) when the guest kernel crashed while the job
     * ran ({@link #GUEST_KERNEL_CRASHED}): a rare kernel bug under the test (docs/testing.md, "Guest kernel
     * crashes") should not fail the layer alone, and is named in a WARN saying that this is a retry. A second crash
     * fails with both crash reports. Every other result, failed or not, is returned as it is to the caller's
     * assertions: nothing else is ever retried, and the normal case stays one boot.
     */
    static Result runGuestLayer(String layer, GuestAttempt attempt) throws Exception {
        Result first = attempt.run(1);
        if (first.exitCode() != GUEST_KERNEL_CRASHED) {
            return first;
        }
        LOG.warn("{}: the guest kernel crashed in {} ({}); this is a retry: booting the layer once more", layer,
            crashFunction(first), crashHeadline(first));
        Result second = attempt.run(2);
        if (second.exitCode() == GUEST_KERNEL_CRASHED) {
            throw new AssertionError(layer + ": the guest kernel crashed in both boots, in " + crashFunction(first)
                + " and in " + crashFunction(second) + "\nfirst boot:\n" + crashText(first) + "\nsecond boot:\n"
                + crashText(second));
        }
        return second;
    }

    /**
     * {@link #runGuestLayer} for a layer whose job is the same {@code run-guest.sh} command every time; the console
     * of a second boot goes to {@code log}'s {@link #attemptLog sibling}.
     */
    static Result runGuest(String layer, List<String> command, Duration timeout, Path log) throws Exception {
        return runGuestLayer(layer, attempt -> run(command, Map.of(), timeout, "[guest] ", attemptLog(log, attempt)));
    }

    /** The log of boot {@code attempt}: {@code log} itself for the first, {@code NAME-boot2.log} for the second. */
    static Path attemptLog(Path log, int attempt) {
        if (attempt == 1) {
            return log;
        }
        String name = log.getFileName().toString();
        String base = name.endsWith(".log") ? name.substring(0, name.length() - 4) : name;
        return log.resolveSibling(base + "-boot" + attempt + ".log");
    }

    /** The function {@code run-guest.sh} named for a crash ("nvme_tcp_recv_skb"), or "an unnamed function". */
    static String crashFunction(Result guest) {
        return guest.lines().stream().filter(l -> l.startsWith(CRASH_LINES.get(1))).findFirst()
            .map(l -> l.substring(CRASH_LINES.get(1).length()).strip().split("[+ ]", 2)[0])
            .filter(f -> !f.isEmpty()).orElse("an unnamed function");
    }

    /** The crash's first kernel line ("BUG: kernel NULL pointer dereference, address: 0000000000000190"). */
    private static String crashHeadline(Result guest) {
        return guest.lines().stream().filter(l -> l.startsWith(CRASH_LINES.get(0))).findFirst()
            .map(l -> l.contains("): ") ? l.substring(l.indexOf("): ") + 3) : l).orElse("no crash line");
    }

    /** What {@code run-guest.sh} reported of a crash: first line, function, the job's last step, the trace. */
    static String crashText(Result guest) {
        List<String> text = guest.lines().stream().filter(l -> CRASH_LINES.stream().anyMatch(l::startsWith)).toList();
        return text.isEmpty() ? "(no crash report; output tail:)\n" + guest.tail(40) : String.join("\n", text);
    }

    /**
     * A fresh work directory for one guest run, {@code target/PREFIXyyyyMMdd-HHmmss} (absolute), with its
     * {@code results} folder (the guest's results mount) already made.
     */
    static Path workDir(String prefix) throws IOException {
        Path work = Path.of("target", prefix + java.time.LocalDateTime.now()
            .format(java.time.format.DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss"))).toAbsolutePath();
        Files.createDirectories(work.resolve("results"));
        return work;
    }

    /** SIGTERM to a process and its descendants (deepest first), then SIGKILL to what is left after {@code grace}. */
    static void killTree(Process process, Duration grace) {
        List<ProcessHandle> all = new ArrayList<>(process.descendants().toList());
        Collections.reverse(all);
        all.add(process.toHandle());
        all.forEach(ProcessHandle::destroy);
        long deadline = System.nanoTime() + grace.toNanos();
        for (ProcessHandle h : all) {
            long left = deadline - System.nanoTime();
            try {
                if (left > 0) {
                    h.onExit().get(left, TimeUnit.NANOSECONDS);
                }
            } catch (Exception ignored) {
                // fall through to SIGKILL
            }
            if (h.isAlive()) {
                h.destroyForcibly();
            }
        }
    }

    static int freePort() {
        try (ServerSocket s = new ServerSocket()) {
            s.setReuseAddress(false);
            s.bind(new InetSocketAddress("127.0.0.1", 0));
            return s.getLocalPort();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Waits until 127.0.0.1:{@code port} accepts a connection; false on timeout or when {@code owner} died. */
    static boolean waitForPort(int port, Duration timeout, Process owner) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (System.nanoTime() < deadline) {
            try (Socket s = new Socket()) {
                s.connect(new InetSocketAddress("127.0.0.1", port), 1000);
                return true;
            } catch (IOException notYet) {
                if (owner != null && !owner.isAlive()) {
                    return false;
                }
                Thread.sleep(250);
            }
        }
        return false;
    }

    /** Our daemon, {@code bin/nvmeof-target --config FILE}, run as a child process with its output in a log file. */
    static final class Daemon implements AutoCloseable {
        private final Process process;
        private final Path log;

        private Daemon(Process process, Path log) {
            this.process = process;
            this.log = log;
        }

        static Daemon start(Path repoRoot, Path launcher, Path config, Path log) throws IOException {
            ProcessBuilder pb = new ProcessBuilder(launcher.toString(), "--config", config.toString())
                .directory(repoRoot.toFile())
                .redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()))
                .redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")));
            return new Daemon(pb.start(), log);
        }

        Process process() {
            return process;
        }

        boolean waitForPorts(Duration timeout, int... ports) throws InterruptedException {
            long deadline = System.nanoTime() + timeout.toNanos();
            for (int port : ports) {
                Duration left = Duration.ofNanos(Math.max(0, deadline - System.nanoTime()));
                if (!waitForPort(port, left, process)) {
                    return false;
                }
            }
            return true;
        }

        /**
         * SIGTERM (what {@link Process#destroy()} sends) to the launcher and wait; returns its exit code, or -1 when
         * it had to be killed after {@code timeout}. Processes the launcher started and left behind are given a few
         * seconds, then killed, so a restart on the same ports is not blocked by a leftover JVM.
         */
        int stop(Duration timeout) throws InterruptedException {
            List<ProcessHandle> children = process.descendants().toList();
            if (!process.isAlive()) {
                return process.exitValue();
            }
            process.destroy();
            boolean exited = process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS);
            for (ProcessHandle c : children) {
                try {
                    c.onExit().get(10, TimeUnit.SECONDS);
                } catch (Exception e) {
                    System.out.println("[daemon] killing leftover process " + c.pid() + " "
                        + c.info().commandLine().orElse(""));
                    c.destroyForcibly();
                }
            }
            if (exited) {
                return process.exitValue();
            }
            killTree(process, Duration.ofSeconds(5));
            return -1;
        }

        String logTail(int n) {
            try {
                List<String> lines = Files.readAllLines(log, StandardCharsets.UTF_8);
                return String.join("\n", lines.subList(Math.max(0, lines.size() - n), lines.size()));
            } catch (IOException e) {
                return "<no log: " + e + ">";
            }
        }

        @Override
        public void close() {
            if (process.isAlive()) {
                killTree(process, Duration.ofSeconds(15));
            }
        }
    }
}
