package io.nvmeof4j.it.tcp;

import java.io.File;
import java.io.IOException;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * The daemon as a real process ({@code bin/nvmeof-target}, so with the launcher's JVM options); {@link #kill()} sends
 * SIGKILL to it and everything it started.
 */
public final class DaemonProcess implements AutoCloseable {
    /** The launcher builds the daemon first when its build is missing or stale. */
    public static final Duration START_TIMEOUT = Duration.ofSeconds(300);

    private final Process process;

    private DaemonProcess(Process process) {
        this.process = process;
    }

    /** Starts {@code command} (output appended to {@code log}) and waits until something listens on {@code port}. */
    public static DaemonProcess start(List<String> command, Path log, int port) throws Exception {
        return start(command, Map.of(), log, port);
    }

    /** As {@link #start(List, Path, int)}, with {@code environment} added to this process's. */
    public static DaemonProcess start(List<String> command, Map<String, String> environment, Path log, int port)
        throws Exception {
        ProcessBuilder pb = new ProcessBuilder(command).redirectErrorStream(true)
            .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()))
            .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")));
        pb.environment().putAll(environment);
        DaemonProcess d = new DaemonProcess(pb.start());
        long deadline = System.nanoTime() + START_TIMEOUT.toNanos();
        while (true) {
            try (Socket ignored = new Socket("127.0.0.1", port)) {
                return d;
            } catch (IOException notYet) {
                if (!d.process.isAlive() || System.nanoTime() - deadline > 0) {
                    d.kill();
                    throw new AssertionError("daemon did not listen on " + port + ":\n" + Files.readString(log));
                }
                Thread.sleep(100);
            }
        }
    }

    /** {@code bin/nvmeof-target} of this source tree. */
    public static Path launcher() {
        Path d = Path.of("").toAbsolutePath();
        while (d != null && !Files.exists(d.resolve("bin/nvmeof-target"))) {
            d = d.getParent();
        }
        if (d == null) {
            throw new IllegalStateException("no bin/nvmeof-target above " + Path.of("").toAbsolutePath());
        }
        return d.resolve("bin/nvmeof-target");
    }

    public boolean isAlive() {
        return process.isAlive();
    }

    /**
     * Sends SIGSTOP to the daemon and everything it started: it stops answering while the kernel still accepts what
     * peers send to its sockets, so commands sent to it stay in flight (a hung daemon). {@link #kill()} still works.
     */
    public void freeze() throws IOException, InterruptedException {
        List<ProcessHandle> all = new ArrayList<>(process.descendants().toList());
        all.add(process.toHandle());
        for (ProcessHandle h : all) {
            Process stop = new ProcessBuilder("kill", "-STOP", Long.toString(h.pid())).redirectErrorStream(true)
                .start();
            if (!stop.waitFor(10, TimeUnit.SECONDS) || stop.exitValue() != 0) {
                stop.destroyForcibly();
                throw new IOException("kill -STOP " + h.pid() + " failed: "
                    + new String(stop.getInputStream().readAllBytes()));
            }
        }
        // kill returns once the signal is queued; a busy thread on another CPU may still finish a round (and
        // complete I/O) before it stops. Return only when every thread of every process shows state T.
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        for (ProcessHandle h : all) {
            while (!allThreadsStopped(h.pid())) {
                if (System.nanoTime() - deadline > 0) {
                    throw new IOException("process " + h.pid() + " not stopped 10 s after SIGSTOP");
                }
                Thread.sleep(1);
            }
        }
    }

    /** Whether every thread of {@code pid} is stopped (state T or t in /proc/pid/task/tid/stat). */
    private static boolean allThreadsStopped(long pid) throws IOException {
        Path tasks = Path.of("/proc", Long.toString(pid), "task");
        try (Stream<Path> ids = Files.list(tasks)) {
            for (Path task : (Iterable<Path>) ids::iterator) {
                String stat;
                try {
                    stat = Files.readString(task.resolve("stat"));
                } catch (NoSuchFileException gone) {
                    continue; // the thread ended meanwhile
                }
                // The state follows the command name in parentheses, which may itself contain ") ".
                char state = stat.charAt(stat.lastIndexOf(')') + 2);
                if (state != 'T' && state != 't') {
                    return false;
                }
            }
        } catch (NoSuchFileException gone) {
            return true; // the process is gone: nothing of it runs
        }
        return true;
    }

    public void kill() throws InterruptedException {
        List<ProcessHandle> all = new ArrayList<>(process.descendants().toList());
        all.add(process.toHandle());
        for (ProcessHandle h : all) {
            h.destroyForcibly(); // SIGKILL
        }
        for (ProcessHandle h : all) {
            try {
                h.onExit().get(10, TimeUnit.SECONDS);
            } catch (Exception e) {
                throw new AssertionError("process " + h.pid() + " did not die from SIGKILL", e);
            }
        }
    }

    @Override
    public void close() throws Exception {
        if (process.isAlive() || process.descendants().findAny().isPresent()) {
            kill();
        }
    }
}
