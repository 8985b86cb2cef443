package io.nvmeof4j.target.metrics;

import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.function.IntConsumer;

/**
 * Failed-command counts of one subsystem by (op, status code): a fixed open-addressing table, wait-free to record
 * into from any data-path thread and allocation-free.
 * <p>Why not a Micrometer counter per status: which statuses occur is known only when they occur, and creating a
 * meter means a registry lookup with locks and allocation on the thread that saw the failure. So the data path
 * only counts here (a bounded probe, one CAS the first time a key is seen, then an atomic add), and the scrape
 * thread turns keys it has not seen before into function counters ({@link TargetMetrics#refresh()}).
 * <p>A key is {@code op << 11 | status code} (the 11-bit SCT/SC, without DNR/More), stored plus one so 0 means
 * empty. With {@value #CAPACITY} slots for at most 8 ops × a few dozen statuses the table does not fill in
 * practice; if it did, the rest is counted under {@link #overflow()}.
 */
public final class FailureCounts {
    static final int CAPACITY = 256;
    private static final int MASK = CAPACITY - 1;

    private final AtomicIntegerArray keys = new AtomicIntegerArray(CAPACITY);
    private final AtomicLongArray counts = new AtomicLongArray(CAPACITY);
    private final AtomicLongArray overflow = new AtomicLongArray(1);

    /** Counts one failed command. Wait-free: at most {@value #CAPACITY} probes, no retry loop. */
    public void increment(int op, int statusCode) {
        int key = ((op << 11) | (statusCode & 0x7FF)) + 1;
        int i = (key * 0x9E3779B1) >>> 24 & MASK;
        for (int probes = 0; probes < CAPACITY; probes++, i = (i + 1) & MASK) {
            int k = keys.get(i);
            if (k == key || (k == 0 && (keys.compareAndSet(i, 0, key) || keys.get(i) == key))) {
                counts.getAndIncrement(i);
                return;
            }
        }
        overflow.getAndIncrement(0);
    }

    /** Calls {@code action} with the slot index of every key recorded so far (scrape thread). */
    void forEachSlot(IntConsumer action) {
        for (int i = 0; i < CAPACITY; i++) {
            if (keys.get(i) != 0) {
                action.accept(i);
            }
        }
    }

    static int op(int key) {
        return (key - 1) >>> 11;
    }

    static int statusCode(int key) {
        return (key - 1) & 0x7FF;
    }

    int key(int slot) {
        return keys.get(slot);
    }

    long count(int slot) {
        return counts.get(slot);
    }

    /** Failures that found the table full. */
    public long overflow() {
        return overflow.get(0);
    }

    /** Total for (op, status code); for tests and the management API. */
    public long count(int op, int statusCode) {
        int key = ((op << 11) | (statusCode & 0x7FF)) + 1;
        for (int i = 0; i < CAPACITY; i++) {
            if (keys.get(i) == key) {
                return counts.get(i);
            }
        }
        return 0;
    }
}
