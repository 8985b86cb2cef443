package io.nvmeof4j.rdma;

import java.util.Arrays;

/**
 * The queues an RDMA poll group polls, either role: each with its own completion queue, all reporting to the
 * group's completion channel. Polled backwards, so that a queue that finishes closing during the walk may remove
 * itself (the last one is swapped into its place). Grows only when queues join; allocates nothing per poll.
 * Poll-group thread only.
 *
 * @param <Q> the role's queue type
 */
public final class PolledQueues<Q extends PolledQueues.Polled> {
    /** A queue with a completion queue of its own. */
    public interface Polled {
        /** Polls the queue's completion queue once into {@code wc} and handles what came; returns how many. */
        int poll(WorkCompletions wc);

        /** Asks for an event on the completion channel at the next completion (before the group blocks). */
        int armNotification();
    }

    private Object[] queues = new Object[8];
    private int count;

    public void add(Q queue) {
        if (count == queues.length) {
            queues = Arrays.copyOf(queues, count * 2);
        }
        queues[count++] = queue;
    }

    /** Removes {@code queue}; false if it was not here. */
    public boolean remove(Q queue) {
        for (int i = 0; i < count; i++) {
            if (queues[i] == queue) {
                queues[i] = queues[--count];
                queues[count] = null;
                return true;
            }
        }
        return false;
    }

    public int size() {
        return count;
    }

    @SuppressWarnings("unchecked")
    public Q get(int index) {
        return (Q) queues[index];
    }

    /** Polls every queue once; returns the completions handled. */
    public int pollAll(WorkCompletions wc) {
        int work = 0;
        for (int i = count - 1; i >= 0; i--) {
            if (i < count) {
                work += get(i).poll(wc);
            }
        }
        return work;
    }

    /** Arms every queue's completion notification. */
    public void armAll() {
        for (int i = 0; i < count; i++) {
            get(i).armNotification();
        }
    }
}
