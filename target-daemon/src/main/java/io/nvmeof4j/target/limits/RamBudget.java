package io.nvmeof4j.target.limits;

import io.nvmeof4j.target.config.DaemonSettings;
import io.nvmeof4j.target.config.Sizes;

import java.lang.management.ManagementFactory;

/**
 * How many bytes all RAM namespaces together may hold, and how many they hold already: every RAM namespace
 * reserves its full size before anything is allocated for it (configured ones at start, live ones when added) and
 * gives it back when removed. RAM namespaces are thin (memory is taken as blocks are first written), but a host may
 * write every block, and a daemon that runs out of memory fails every host at once; so the configured size counts.
 *
 * <h2>The limit</h2>
 * {@code ram_budget_mib} when set; otherwise what this JVM may really use for them: the smaller of its direct-memory
 * limit ({@code -XX:MaxDirectMemorySize}, by default the heap's maximum) and the machine's (or container's) memory,
 * less the reactors' buffer pools ({@code reactors} x {@code buffer_pool_mib}), which take memory from the same
 * places. Thread-safe: reservations are serialised on this object.
 */
public final class RamBudget {
    private final long limitBytes;
    private final String limitSource;
    private long reservedBytes;

    RamBudget(long limitBytes, String limitSource) {
        if (limitBytes < 0) {
            throw new IllegalArgumentException("negative budget " + limitBytes);
        }
        this.limitBytes = limitBytes;
        this.limitSource = limitSource;
    }

    /** The budget the settings ask for: {@code ram_budget_mib}, or the derived one (see the class description). */
    public static RamBudget of(DaemonSettings settings) {
        if (settings.ramBudgetBytes() != DaemonSettings.RAM_BUDGET_DERIVED) {
            return new RamBudget(settings.ramBudgetBytes(), "nvmeof4j." + DaemonSettings.RAM_BUDGET_MIB);
        }
        return derived(maxDirectMemory(), physicalMemory(), settings.reactors() * settings.bufferPoolBytes());
    }

    /**
     * The derived budget: the smaller of the direct-memory limit and physical memory (each ignored when unknown,
     * i.e. not positive), less the buffer pools; 0 when the pools take it all.
     */
    static RamBudget derived(long maxDirectMemory, long physicalMemory, long bufferPools) {
        long usable = Long.MAX_VALUE;
        StringBuilder source = new StringBuilder();
        if (maxDirectMemory > 0) {
            usable = maxDirectMemory;
            source.append("the JVM's direct-memory limit ").append(Sizes.format(maxDirectMemory));
        }
        if (physicalMemory > 0 && physicalMemory < usable) {
            usable = physicalMemory;
            source.setLength(0);
            source.append("the machine's memory ").append(Sizes.format(physicalMemory));
        }
        if (usable == Long.MAX_VALUE) {
            return new RamBudget(Long.MAX_VALUE, "no known memory limit");
        }
        source.append(" less ").append(Sizes.format(bufferPools)).append(" of buffer pools");
        return new RamBudget(Math.max(0, usable - bufferPools), source.toString());
    }

    /**
     * Reserves {@code bytes} for the RAM namespace {@code what}.
     *
     * @throws NamespaceRefusedException it does not fit: {@link NamespaceRefusedException.Reason#LARGER_THAN_BUDGET}
     *         when it would not fit even alone, else {@link NamespaceRefusedException.Reason#BUDGET_EXHAUSTED}
     */
    public synchronized void reserve(long bytes, String what) throws NamespaceRefusedException {
        if (bytes < 0) {
            throw new IllegalArgumentException("negative size " + bytes);
        }
        if (bytes > limitBytes) {
            throw new NamespaceRefusedException(NamespaceRefusedException.Reason.LARGER_THAN_BUDGET, what + ": "
                + Sizes.format(bytes) + " of RAM is more than the daemon may use for RAM namespaces (" + describe()
                + "); give a smaller size, or raise nvmeof4j." + DaemonSettings.RAM_BUDGET_MIB
                + " if the machine has the memory");
        }
        if (bytes > limitBytes - reservedBytes) {
            throw new NamespaceRefusedException(NamespaceRefusedException.Reason.BUDGET_EXHAUSTED, what + ": "
                + Sizes.format(bytes) + " of RAM does not fit: RAM namespaces hold " + Sizes.format(reservedBytes)
                + " of the " + describe() + ", " + Sizes.format(limitBytes - reservedBytes) + " are left");
        }
        reservedBytes += bytes;
    }

    /** Gives back what {@link #reserve} took for a namespace that was removed or could not be added. */
    public synchronized void release(long bytes) {
        if (bytes < 0 || bytes > reservedBytes) {
            throw new IllegalArgumentException("releasing " + bytes + " of " + reservedBytes + " reserved bytes");
        }
        reservedBytes -= bytes;
    }

    public long limitBytes() {
        return limitBytes;
    }

    public synchronized long reservedBytes() {
        return reservedBytes;
    }

    /** "RAM budget of 20 GiB (the machine's memory 24 GiB less 64 MiB of buffer pools)". */
    public String describe() {
        return "RAM budget of " + (limitBytes == Long.MAX_VALUE ? "unlimited" : Sizes.format(limitBytes)) + " ("
            + limitSource + ")";
    }

    /** {@code -XX:MaxDirectMemorySize}, or the heap's maximum when unset (the JVM's rule); -1 when not HotSpot. */
    static long maxDirectMemory() {
        try {
            com.sun.management.HotSpotDiagnosticMXBean bean =
                ManagementFactory.getPlatformMXBean(com.sun.management.HotSpotDiagnosticMXBean.class);
            long value = Long.parseLong(bean.getVMOption("MaxDirectMemorySize").getValue());
            return value > 0 ? value : Runtime.getRuntime().maxMemory();
        } catch (RuntimeException | LinkageError e) {
            return -1;
        }
    }

    /** The memory of the machine, or of the container (the JDK reads the cgroup limit); -1 when unknown. */
    static long physicalMemory() {
        try {
            java.lang.management.OperatingSystemMXBean os = ManagementFactory.getOperatingSystemMXBean();
            if (os instanceof com.sun.management.OperatingSystemMXBean sun) {
                long total = sun.getTotalMemorySize();
                return total > 0 ? total : -1;
            }
        } catch (RuntimeException | LinkageError e) {
            // not HotSpot's bean: unknown
        }
        return -1;
    }
}
