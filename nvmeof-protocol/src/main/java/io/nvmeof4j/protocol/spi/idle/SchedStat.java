package io.nvmeof4j.protocol.spi.idle;

import java.io.IOException;
import java.io.RandomAccessFile;

/**
 * The calling thread's scheduler statistics ({@code /proc/thread-self/schedstat}: time on the CPU, time spent
 * runnable but waiting for a CPU, timeslices), read without allocating: the file is opened once on the thread it
 * describes and re-read from offset 0 into a fixed buffer. "Waiting for a CPU" is the contention a reactor cannot see
 * otherwise: it grows while another process holds the reactor's CPU and while a woken reactor waits to run.
 * <p>One thread only. Where the file does not exist (not Linux, schedstats compiled out) {@link #open()} returns null.
 */
final class SchedStat implements AutoCloseable {
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

    /** Re-reads the file; false when it cannot be read or parsed (the values keep their last reading). */
    boolean read() {
        int n;
        try {
            file.seek(0);
            n = file.read(buffer);
        } catch (IOException e) {
            return false;
        }
        // "<on-cpu ns> <run-delay ns> <timeslices>\n"
        int i = 0;
        while (i < n && buffer[i] != ' ') {
            i++;
        }
        i++;
        long value = 0;
        int digits = 0;
        while (i < n && buffer[i] >= '0' && buffer[i] <= '9') {
            value = value * 10 + (buffer[i] - '0');
            i++;
            digits++;
        }
        if (digits == 0) {
            return false;
        }
        runDelayNanos = value;
        return true;
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
