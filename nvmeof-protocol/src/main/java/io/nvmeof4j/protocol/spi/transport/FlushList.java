package io.nvmeof4j.protocol.spi.transport;

import java.util.Arrays;

/**
 * The queues of a poll group that staged sends this round, each listed once (the queue keeps its own "listed" flag):
 * the round ends by flushing each with one gathering write or one chained post. The poll group walks a snapshot
 * ({@link #size()} before the walk, {@link #get}), and queues that ask again while it walks are appended after it and
 * kept for the next walk ({@link #keepAfter}). Grows only while queues are added; allocates nothing per round.
 *
 * @param <T> the binding's queue type
 */
public final class FlushList<T> {
    private Object[] queues;
    private int count;

    public FlushList(int initialCapacity) {
        queues = new Object[Math.max(1, initialCapacity)];
    }

    public void add(T queue) {
        if (count == queues.length) {
            queues = Arrays.copyOf(queues, count * 2);
        }
        queues[count++] = queue;
    }

    /** Makes room for {@code capacity} queues ahead of time (when a queue joins the group, not on the data path). */
    public void ensureCapacity(int capacity) {
        if (queues.length < capacity) {
            queues = Arrays.copyOf(queues, capacity);
        }
    }

    public int size() {
        return count;
    }

    /** The {@code index}-th listed queue, cleared from the list. */
    @SuppressWarnings("unchecked")
    public T take(int index) {
        T queue = (T) queues[index];
        queues[index] = null;
        return queue;
    }

    /** Drops the first {@code walked} entries (taken by a walk), keeping those added during it. */
    public void keepAfter(int walked) {
        if (walked == 0) {
            return;
        }
        int later = count - walked;
        System.arraycopy(queues, walked, queues, 0, later);
        Arrays.fill(queues, later, count, null);
        count = later;
    }
}
