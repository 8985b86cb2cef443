package io.nvmeof4j.target.model;

import java.util.Arrays;
import java.util.Collection;
import java.util.Collections;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * An NVM subsystem: an NQN, identity strings, namespaces by NSID and the hosts allowed to connect.
 * Namespaces and hosts may change while hosts are connected (management API); the data path reads them
 * without locks.
 * <p>Namespaces live in a copy-on-write array sorted by unsigned NSID: every I/O command looks its NSID up, and
 * a binary search over a volatile array allocates nothing (a map keyed by {@code Integer} would box the NSID on
 * every lookup). Changes are rare and rebuild the array under a lock.
 */
public final class Subsystem {
    /**
     * NN, the number of namespaces a subsystem supports, reported by Identify Controller: valid NSIDs are 1..NN
     * (NVMe Base 2.0, 3.2.1.2), so no namespace gets an NSID above it. The Linux target's NVMET_MAX_NAMESPACES.
     */
    public static final int MAX_NSID = 1024;
    private static final Namespace[] NO_NAMESPACES = new Namespace[0];

    private final String nqn;
    private final String serialNumber;
    private final String modelNumber;
    private final String firmwareRevision;
    private volatile boolean allowAnyHost;
    private final Set<String> allowedHosts = ConcurrentHashMap.newKeySet();
    private final Object namespaceLock = new Object();
    /** Sorted by {@link Integer#compareUnsigned} of the NSID; replaced, never modified, under namespaceLock. */
    private volatile Namespace[] namespaces = NO_NAMESPACES;
    private volatile int cntlidMin = 1;
    private volatile int cntlidMax = 0xFFEF;

    public Subsystem(String nqn, String serialNumber, String modelNumber, String firmwareRevision, boolean allowAnyHost) {
        this.nqn = Objects.requireNonNull(nqn, "nqn");
        this.serialNumber = Objects.requireNonNull(serialNumber, "serialNumber");
        this.modelNumber = Objects.requireNonNull(modelNumber, "modelNumber");
        this.firmwareRevision = Objects.requireNonNull(firmwareRevision, "firmwareRevision");
        this.allowAnyHost = allowAnyHost;
    }

    public String nqn() {
        return nqn;
    }

    /** Lowest CNTLID of this subsystem's controllers ({@code attr.cntlid_min}). */
    public int cntlidMin() {
        return cntlidMin;
    }

    public int cntlidMax() {
        return cntlidMax;
    }

    /** {@code attr.cntlid_min}/{@code cntlid_max}: 1 ≤ min ≤ max ≤ 0xFFEF. */
    public void cntlidRange(int min, int max) {
        if (min < 1 || max > 0xFFEF || min > max) {
            throw new IllegalArgumentException("CNTLID range " + min + ".." + max + " outside 1..65519");
        }
        this.cntlidMin = min;
        this.cntlidMax = max;
    }

    public String serialNumber() {
        return serialNumber;
    }

    public String modelNumber() {
        return modelNumber;
    }

    public String firmwareRevision() {
        return firmwareRevision;
    }

    public boolean allowAnyHost() {
        return allowAnyHost;
    }

    public void allowAnyHost(boolean allow) {
        this.allowAnyHost = allow;
    }

    /** True when the host may connect: {@code allow_any_host}, or its NQN is in the allow list. */
    public boolean isHostAllowed(String hostNqn) {
        return allowAnyHost || allowedHosts.contains(hostNqn);
    }

    public Set<String> allowedHosts() {
        return Collections.unmodifiableSet(allowedHosts);
    }

    public boolean addAllowedHost(String hostNqn) {
        return allowedHosts.add(hostNqn);
    }

    public boolean removeAllowedHost(String hostNqn) {
        return allowedHosts.remove(hostNqn);
    }

    /** The namespace with this NSID, or null. Allocation-free and lock-free: safe on the I/O path. */
    public Namespace namespace(int nsid) {
        Namespace[] current = namespaces;
        int i = indexOf(current, nsid);
        return i >= 0 ? current[i] : null;
    }

    /** Namespaces in NSID order (a snapshot). */
    public Collection<Namespace> namespaces() {
        return Collections.unmodifiableList(Arrays.asList(namespaces));
    }

    /**
     * Adds a namespace; false when the NSID is taken.
     *
     * @throws IllegalArgumentException the NSID is outside 1..{@link #MAX_NSID}
     */
    public boolean addNamespace(Namespace namespace) {
        Objects.requireNonNull(namespace, "namespace");
        if (namespace.nsid() < 1 || namespace.nsid() > MAX_NSID) {
            throw new IllegalArgumentException("NSID " + Integer.toUnsignedString(namespace.nsid()) + " outside 1.."
                + MAX_NSID);
        }
        synchronized (namespaceLock) {
            Namespace[] current = namespaces;
            int i = indexOf(current, namespace.nsid());
            if (i >= 0) {
                return false;
            }
            int at = -(i + 1);
            Namespace[] next = new Namespace[current.length + 1];
            System.arraycopy(current, 0, next, 0, at);
            next[at] = namespace;
            System.arraycopy(current, at, next, at + 1, current.length - at);
            namespaces = next;
            return true;
        }
    }

    /** Removes and returns the namespace, or null. The caller closes its device once I/O has drained. */
    public Namespace removeNamespace(int nsid) {
        synchronized (namespaceLock) {
            Namespace[] current = namespaces;
            int i = indexOf(current, nsid);
            if (i < 0) {
                return null;
            }
            Namespace removed = current[i];
            Namespace[] next = current.length == 1 ? NO_NAMESPACES : new Namespace[current.length - 1];
            System.arraycopy(current, 0, next, 0, i);
            System.arraycopy(current, i + 1, next, i, current.length - i - 1);
            namespaces = next;
            return removed;
        }
    }

    /** Binary search by unsigned NSID: the index, or -(insertion point) - 1. */
    private static int indexOf(Namespace[] sorted, int nsid) {
        int low = 0;
        int high = sorted.length - 1;
        while (low <= high) {
            int mid = (low + high) >>> 1;
            int cmp = Integer.compareUnsigned(sorted[mid].nsid(), nsid);
            if (cmp < 0) {
                low = mid + 1;
            } else if (cmp > 0) {
                high = mid - 1;
            } else {
                return mid;
            }
        }
        return -(low + 1);
    }

    @Override
    public String toString() {
        return "subsystem " + nqn;
    }
}
