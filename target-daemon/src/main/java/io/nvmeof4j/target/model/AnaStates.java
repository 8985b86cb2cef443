package io.nvmeof4j.target.model;

import io.nvmeof4j.protocol.ana.AnaState;

import java.util.Map;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * The ANA state of every ANA group as seen through one port (NVMe Base 2.0, 8.1.3): what a host reading the ANA log
 * (0Ch) through a controller of this port is told, and what the I/O path answers on this port.
 * <p>Group ids run 1..{@link #GROUP_MAX}. As nvmet sets a new port up, group 1 is optimized and every other group is
 * inaccessible until configured ({@code ports[].ana_groups}) or changed live (management API).
 * <p>Reads are one volatile array load each (the I/O path asks once per command, allocating nothing); changes are
 * rare, serialised by this object's lock, and count a change per group and per port for the log's CHGCNT fields.
 */
public final class AnaStates {
    /** ANAGRPMAX and NANAGRPID: nvmet's NVMET_MAX_ANAGRPS. */
    public static final int GROUP_MAX = 128;
    /** The group every namespace is in unless configured otherwise, optimized on every port. */
    public static final int DEFAULT_GROUP = 1;

    private final AtomicIntegerArray states = new AtomicIntegerArray(GROUP_MAX + 1);
    private final AtomicLongArray groupChanges = new AtomicLongArray(GROUP_MAX + 1);
    /** Groups configured on this port (or changed through it): listed in the ANA log even without namespaces. */
    private final AtomicIntegerArray configured = new AtomicIntegerArray(GROUP_MAX + 1);
    private volatile long changeCount;

    public AnaStates() {
        for (int g = 1; g <= GROUP_MAX; g++) {
            states.set(g, AnaState.INACCESSIBLE);
        }
        states.set(DEFAULT_GROUP, AnaState.OPTIMIZED);
        configured.set(DEFAULT_GROUP, 1);
    }

    /** States by group id as configured ({@code ports[].ana_groups}). */
    public AnaStates(Map<Integer, Integer> configuredStates) {
        this();
        configuredStates.forEach((group, state) -> {
            checkGroup(group);
            if (!AnaState.isValid(state)) {
                throw new IllegalArgumentException("ANA state " + state + " of group " + group);
            }
            states.set(group, state);
            configured.set(group, 1);
        });
    }

    /** The state of {@code group} on this port; a group id out of range reads as inaccessible. Lock-free. */
    public int state(int group) {
        return group >= 1 && group <= GROUP_MAX ? states.get(group) : AnaState.INACCESSIBLE;
    }

    /**
     * Changes a group's state; returns the previous one. The caller raises the ANA change event on the
     * controllers of this port.
     */
    public synchronized int state(int group, int state) {
        checkGroup(group);
        if (!AnaState.isValid(state)) {
            throw new IllegalArgumentException("not an ANA state: " + state);
        }
        configured.set(group, 1);
        int old = states.getAndSet(group, state);
        if (old != state) {
            groupChanges.incrementAndGet(group);
            changeCount++;
        }
        return old;
    }

    public boolean isConfigured(int group) {
        return group >= 1 && group <= GROUP_MAX && configured.get(group) != 0;
    }

    /** CHGCNT of the log header: state changes on this port since start. */
    public long changeCount() {
        return changeCount;
    }

    /** CHGCNT of a group descriptor. */
    public long changeCount(int group) {
        return group >= 1 && group <= GROUP_MAX ? groupChanges.get(group) : 0;
    }

    private static void checkGroup(int group) {
        if (group < 1 || group > GROUP_MAX) {
            throw new IllegalArgumentException("ANA group " + group + " outside 1.." + GROUP_MAX);
        }
    }
}
