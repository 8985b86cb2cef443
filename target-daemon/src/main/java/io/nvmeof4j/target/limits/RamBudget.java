package io.nvmeof4j.target.limits;

import io.nvmeof4j.protocol.spi.MemoryBudget;
import io.nvmeof4j.target.config.DaemonSettings;
import io.nvmeof4j.target.config.Sizes;

import java.lang.management.ManagementFactory;

/**
 * How many bytes all RAM namespaces together may hold, and how many they hold already: every RAM namespace
 * reserves its full size before anything is allocated for it (configured ones at start, live ones when added) and
 * gives it back when removed. The configured size counts: a host may write every block, and a daemon that runs out
 * of memory fails every host at once. So committing a namespace's memory up front admits nothing new, and the daemon
 * populates RAM namespaces in the background, unless the budget is {@link #overcommitted()} (they stay thin then:
 * memory is taken as blocks are first written).
 *
 * <h2>The limit</h2>
 * {@code ram_budget_mib} when set; otherwise what this JVM may really use for them: the smaller of its direct-memory
 * limit ({@code -XX:MaxDirectMemorySize}, by default the heap's maximum) and the machine's (or container's) memory,
 * less the reactors' buffer pools ({@code reactors} x {@code buffer_pool_mib}) and the queue buffer budget
 * ({@code queue_buffer_budget_mib}), which take memory from the same places. Thread-safe (a {@link MemoryBudget}).
 */
public final class RamBudget {
    /** The accounting (the queue buffer budget is one too); this class adds the derived limit and the refusals. */
    private final MemoryBudget budget;
    /** {@code ram_budget_mib} is above the derived limit: the operator overcommits on purpose. */
    private final boolean overcommitted;

    RamBudget(long limitBytes, String limitSource) {
        this(limitBytes, limitSource, false);
    }

    private RamBudget(long limitBytes, String limitSource, boolean overcommitted) {
        this.overcommitted = overcommitted;
        this.budget = new MemoryBudget(limitBytes, "RAM budget of "
            + (limitBytes == Long.MAX_VALUE ? "unlimited" : Sizes.format(limitBytes)) + " (" + limitSource + ")");
    }

    /** The budget the settings ask for: {@code ram_budget_mib}, or the derived one (see the class description). */
    public static RamBudget of(DaemonSettings settings) {
        if (settings.ramBudgetBytes() != DaemonSettings.RAM_BUDGET_DERIVED) {
            long usable = derived(settings).limitBytes();
            return new RamBudget(settings.ramBudgetBytes(), "nvmeof4j." + DaemonSettings.RAM_BUDGET_MIB,
                settings.ramBudgetBytes() > usable);
        }
        return derived(settings);
    }

    private static RamBudget derived(DaemonSettings settings) {
        return derived(maxDirectMemory(), physicalMemory(), settings.reactors() * settings.bufferPoolBytes(),
            settings.queueBufferBudgetBytes());
    }

    /**
     * The limit is above what this JVM may really use (an explicit {@code ram_budget_mib} larger than the derived
     * budget): the operator overcommits on purpose, so RAM namespaces stay thin and are not populated at start
     * (writes past the memory then fail with Capacity Exceeded). False for the derived budget and any setting within
     * it.
     */
    public boolean overcommitted() {
        return overcommitted;
    }

    /**
     * The derived budget: the smaller of the direct-memory limit and physical memory (each ignored when unknown,
     * i.e. not positive), less the buffer pools and the queue buffer budget (the memory connected queues may hold);
     * 0 when those take it all.
     */
    static RamBudget derived(long maxDirectMemory, long physicalMemory, long bufferPools, long queueBuffers) {
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
        source.append(" less ").append(Sizes.format(bufferPools)).append(" of buffer pools and ")
            .append(Sizes.format(queueBuffers)).append(" of queue buffers");
        return new RamBudget(Math.max(0, usable - bufferPools - queueBuffers), source.toString());
    }

    /**
     * Reserves {@code bytes} for the RAM namespace {@code what}.
     *
     * @throws NamespaceRefusedException it does not fit: {@link NamespaceRefusedException.Reason#LARGER_THAN_BUDGET}
     *         when it would not fit even alone, else {@link NamespaceRefusedException.Reason#BUDGET_EXHAUSTED}
     */
    public void reserve(long bytes, String what) throws NamespaceRefusedException {
        if (bytes < 0) {
            throw new IllegalArgumentException("negative size " + bytes);
        }
        if (bytes > budget.limitBytes()) {
            throw new NamespaceRefusedException(NamespaceRefusedException.Reason.LARGER_THAN_BUDGET, what + ": "
                + Sizes.format(bytes) + " of RAM is more than the daemon may use for RAM namespaces (" + describe()
                + "); give a smaller size, or raise nvmeof4j." + DaemonSettings.RAM_BUDGET_MIB
                + " if the machine has the memory");
        }
        if (!budget.tryReserve(bytes)) {
            long reserved = budget.reservedBytes();
            throw new NamespaceRefusedException(NamespaceRefusedException.Reason.BUDGET_EXHAUSTED, what + ": "
                + Sizes.format(bytes) + " of RAM does not fit: RAM namespaces hold " + Sizes.format(reserved)
                + " of the " + describe() + ", " + Sizes.format(budget.limitBytes() - reserved) + " are left");
        }
    }

    /** Gives back what {@link #reserve} took for a namespace that was removed or could not be added. */
    public void release(long bytes) {
        budget.release(bytes);
    }

    public long limitBytes() {
        return budget.limitBytes();
    }

    public long reservedBytes() {
        return budget.reservedBytes();
    }

    /** "RAM budget of 20 GiB (the machine's memory 24 GiB less 64 MiB of buffer pools and 512 MiB of queue buffers)". */
    public String describe() {
        return budget.describe();
    }

    /** {@code -XX:MaxDirectMemorySize}, or the heap's maximum when unset (the JVM's rule); -1 when not HotSpot. */
    public static long maxDirectMemory() {
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
