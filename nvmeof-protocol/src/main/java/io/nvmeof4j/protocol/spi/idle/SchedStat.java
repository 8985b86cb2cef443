package io.nvmeof4j.protocol.spi.idle;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The calling thread's scheduler statistics ({@code /proc/thread-self/schedstat}: time on the CPU, time spent
 * runnable but waiting for a CPU, timeslices), read without allocating: the file is opened once on the thread it
 * describes and re-read from offset 0 into a fixed buffer. "Waiting for a CPU" is the contention a reactor cannot see
 * otherwise: it grows while another process holds the reactor's CPU and while a woken reactor waits to run.
 * <p>One thread only. Where the file does not exist (not Linux, schedstats compiled out) {@link #open()} returns null.
 * Another thread (a metrics scrape) reads a thread's run delay through the file's path ({@link #threadFile()},
 * {@link #runDelayNanosOf(Path)}), allocating per read.
 */
public final class SchedStat implements AutoCloseable {
    private final RandomAccessFile file;
    private final byte[] buffer = new byte[96];
    private long runDelayNanos;

    private SchedStat(RandomAccessFile file) {
        this.file = file;
    }

    /** The calling thread's statistics, or null when the kernel does not offer them. */
    static SchedStat open() {
        try {
            SchedStat s = new SchedStat(new RandomAccessFile("/proc/thread-self/schedstat", "r"));
            return s.read() ? s : null;
        } catch (IOException | SecurityException e) {
            return null;
        }
    }

    /**
     * The calling thread's statistics file as any thread can open it ({@code /proc/PID/task/TID/schedstat}, from the
     * {@code /proc/thread-self} link), or null when the kernel does not offer it.
     */
    public static Path threadFile() {
        try {
            Path file = Path.of("/proc").resolve(Files.readSymbolicLink(Path.of("/proc/thread-self")))
                .resolve("schedstat");
            return Files.isReadable(file) ? file : null;
        } catch (IOException | UnsupportedOperationException | SecurityException e) {
            return null;
        }
    }

    /** A thread's total run delay from its {@link #threadFile()}, or -1 when it cannot be read (the thread ended). */
    public static long runDelayNanosOf(Path threadFile) {
        try {
            byte[] b = Files.readAllBytes(threadFile);
            return parseRunDelay(b, b.length);
        } catch (IOException | SecurityException e) {
            return -1;
        }
    }

    /** Re-reads the file; false when it cannot be read or parsed (the values keep their last reading). */
    boolean read() {
        int n;
        try {
            file.seek(0);
            n = file.read(buffer);
        } catch (IOException e) {
            return false;
        }
        long value = parseRunDelay(buffer, n);
        if (value < 0) {
            return false;
        }
        runDelayNanos = value;
        return true;
    }

    /** The second field of "{@code <on-cpu ns> <run-delay ns> <timeslices>\n}", or -1 when there is none. */
    private static long parseRunDelay(byte[] b, int n) {
        int i = 0;
        while (i < n && b[i] != ' ') {
            i++;
        }
        i++;
        long value = 0;
        int digits = 0;
        while (i < n && b[i] >= '0' && b[i] <= '9') {
            value = value * 10 + (b[i] - '0');
            i++;
            digits++;
        }
        return digits == 0 ? -1 : value;
    }

    /** Re-reads the file: the run delay, or -1 when it cannot be read (what {@link AdaptiveIdleStrategy} samples). */
    long readRunDelayNanos() {
        return read() ? runDelayNanos : -1;
    }

    /** Total time this thread was runnable but not running, as of the last {@link #read()}. */
    long runDelayNanos() {
        return runDelayNanos;
    }

    @Override
    public void close() {
        try {
            file.close();
        } catch (IOException ignored) {
            // read-only proc file: nothing to lose
        }
    }
}
