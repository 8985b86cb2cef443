package io.nvmeof4j.target.config;

/**
 * What the daemon puts on hugepages: the {@code hugepages} setting. Absent, RAM namespaces that are populated (the
 * RAM budget not overcommitted) get their chunks on transparent hugepages: a copy out of a namespace then pays no TLB
 * miss per 4 KiB, as SPDK's malloc bdev in its hugepages, and the population thread, not the reactor, pays the first
 * touch of each 2 MiB (docs/benchmarks.md, "RAM namespaces on transparent hugepages by default").
 */
public enum Hugepages {
    /** No setting: populated RAM namespaces on transparent hugepages; thin ones and the buffer pools on 4 KiB pages. */
    POPULATED_RAM,
    /**
     * {@code true}: every reactor's buffer pool mapped with MAP_HUGETLB (normal pages advised for transparent
     * hugepages, with a log line, when the system has none reserved) and every RAM namespace's chunks on transparent
     * hugepages, thin ones too (whose first writes then fault a whole 2 MiB in on the reactor).
     */
    ALL,
    /** {@code false}: nothing on hugepages; RAM namespaces in 1 MiB chunks of 4 KiB pages. */
    NONE;

    /** Whether the buffer pools are mapped with MAP_HUGETLB. */
    public boolean pools() {
        return this == ALL;
    }

    /** Whether a RAM namespace's chunks go on transparent hugepages; {@code populated}: it is populated at start. */
    public boolean ramChunks(boolean populated) {
        return this == ALL || this == POPULATED_RAM && populated;
    }

    /** The setting's value, or null for the default (no setting). */
    public Boolean configValue() {
        return this == POPULATED_RAM ? null : this == ALL;
    }

    public static Hugepages of(boolean setting) {
        return setting ? ALL : NONE;
    }
}
