package io.nvmeof4j.jni.cpu;

import io.nvmeof4j.jni.Errno;
import io.nvmeof4j.jni.NativeIoException;
import io.nvmeof4j.jni.NativeLibrary;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

/**
 * The CPU affinity of this process's threads ({@code sched_setaffinity}/{@code sched_getaffinity} through
 * {@code libnvmeof4j-affinity}), and the list of its threads ({@code /proc/self/task}). Pure Java cannot set a
 * thread's affinity; without the library (another OS, another architecture) {@link #isAvailable()} is false and
 * {@link #unavailabilityCause()} says why, and nothing else of nvmeof4j needs it.
 */
public final class CpuAffinity {
    private static final Throwable UNAVAILABILITY_CAUSE = NativeLibrary.load("affinity");
    private static final Path TASKS = Path.of("/proc/self/task");
    private static final Path POSSIBLE = Path.of("/sys/devices/system/cpu/possible");
    /** The machine's CPU count, read once; the size of every mask passed to the kernel. */
    private static final int POSSIBLE_CPUS = readPossibleCpus();

    private CpuAffinity() {
    }

    public static boolean isAvailable() {
        return UNAVAILABILITY_CAUSE == null;
    }

    /** Why the affinity calls cannot be made here, or null when they can. */
    public static Throwable unavailabilityCause() {
        return UNAVAILABILITY_CAUSE;
    }

    /**
     * The machine's CPUs: one more than the highest in /sys/devices/system/cpu/possible (online or not), the bound of
     * every CPU number given by a user; {@link CpuSet#MAX_CPUS} when that file cannot be read.
     */
    public static int possibleCpus() {
        return POSSIBLE_CPUS;
    }

    private static int readPossibleCpus() {
        try {
            int[] cpus = CpuSet.parse(Files.readString(POSSIBLE, StandardCharsets.US_ASCII).trim(), CpuSet.MAX_CPUS)
                .toArray();
            return cpus[cpus.length - 1] + 1;
        } catch (IOException | IllegalArgumentException e) {
            return CpuSet.MAX_CPUS;
        }
    }

    /** The kernel's id of the calling thread (its entry in /proc/self/task). */
    public static int currentTid() {
        requireAvailable();
        return gettid0();
    }

    /** The CPUs thread {@code tid} may run on (0: the calling thread). */
    public static CpuSet get(int tid) throws NativeIoException {
        requireAvailable();
        long[] bits = new long[(POSSIBLE_CPUS + 63) / 64];
        int rc = getAffinity0(tid, bits);
        if (rc < 0) {
            throw new NativeIoException("sched_getaffinity of thread " + tid, -rc);
        }
        return CpuSet.fromBits(bits);
    }

    /**
     * Confines thread {@code tid} (0: the calling thread) to {@code cpus}.
     *
     * @throws NativeIoException ESRCH when the thread has ended, EINVAL when none of {@code cpus} is online and
     *                           allowed by the process's cpuset, EPERM for another user's thread
     */
    public static void set(int tid, CpuSet cpus) throws NativeIoException {
        requireAvailable();
        if (cpus.isEmpty()) {
            throw new NativeIoException("sched_setaffinity of thread " + tid, Errno.EINVAL, "no CPU given");
        }
        int rc = setAffinity0(tid, cpus.toBits((POSSIBLE_CPUS + 63) / 64));
        if (rc < 0) {
            throw new NativeIoException("sched_setaffinity of thread " + tid + " to CPUs " + cpus, -rc);
        }
    }

    /** A thread of this process: its kernel id and its name ({@code comm}: the JVM's first 15 bytes of it). */
    public record ThreadInfo(int tid, String name) {
    }

    /** The threads of this process now, from /proc/self/task (one that ends meanwhile is left out). */
    public static List<ThreadInfo> threads() throws IOException {
        List<ThreadInfo> threads = new ArrayList<>();
        try (Stream<Path> tasks = Files.list(TASKS)) {
            for (Path task : (Iterable<Path>) tasks::iterator) {
                int tid;
                try {
                    tid = Integer.parseInt(task.getFileName().toString());
                } catch (NumberFormatException e) {
                    continue;
                }
                try {
                    threads.add(new ThreadInfo(tid, Files.readString(task.resolve("comm"), StandardCharsets.UTF_8)
                        .strip()));
                } catch (NoSuchFileException ended) {
                    // the thread ended after the listing
                }
            }
        }
        return threads;
    }

    private static void requireAvailable() {
        if (UNAVAILABILITY_CAUSE != null) {
            throw new UnsupportedOperationException("CPU affinity is unavailable: libnvmeof4j-affinity did not load: "
                + UNAVAILABILITY_CAUSE, UNAVAILABILITY_CAUSE);
        }
    }

    private static native int gettid0();

    private static native int setAffinity0(int tid, long[] mask);

    private static native int getAffinity0(int tid, long[] mask);
}
