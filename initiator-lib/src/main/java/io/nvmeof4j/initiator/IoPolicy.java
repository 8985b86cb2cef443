package io.nvmeof4j.initiator;

import java.util.Locale;

/**
 * How a {@link MultipathController} picks the path of each I/O, named after the Linux host's {@code iopolicy}
 * ({@code /sys/class/nvme-subsystem/.../iopolicy}). Every policy takes only paths whose controller is live and
 * whose ANA state for the namespace is optimized; non-optimized paths are used only when no optimized one is left;
 * inaccessible, persistent-loss and changing ones never.
 */
public enum IoPolicy {
    /** The first usable path in the order given at connect (the Linux default, {@code numa}; a JVM knows no NUMA
     *  node of the caller, so it behaves as Linux does on a one-node machine). */
    NUMA("numa"),
    /** Rotate over the usable paths, so that each carries an equal share of the I/O: on a host reactor thread one
     *  reactor round per turn (everything that round submits goes down one path, which costs one read and one write
     *  per round instead of one per path), elsewhere one I/O per turn as Linux does; see
     *  {@link MultipathController#roundRobinPerIo(boolean)}. */
    ROUND_ROBIN("round-robin"),
    /** The usable path with the fewest I/Os in flight. */
    QUEUE_DEPTH("queue-depth");

    private final String configName;

    IoPolicy(String configName) {
        this.configName = configName;
    }

    /** Linux's name: {@code numa}, {@code round-robin}, {@code queue-depth}. */
    public String configName() {
        return configName;
    }

    public static IoPolicy fromConfigName(String name) {
        String n = name.trim().toLowerCase(Locale.ROOT).replace('_', '-');
        for (IoPolicy p : values()) {
            if (p.configName.equals(n)) {
                return p;
            }
        }
        throw new IllegalArgumentException("iopolicy '" + name + "' is not one of numa, round-robin, queue-depth");
    }
}
