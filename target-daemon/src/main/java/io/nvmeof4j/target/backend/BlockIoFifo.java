package io.nvmeof4j.target.backend;

import java.util.function.Predicate;

/**
 * A first-come-first-served queue of {@link BlockIo}s waiting on a reactor for a data-path resource (a ring slot in
 * {@link BdevChannels}, a namespace's QoS budget in {@link QosWaits}), linked through the I/O itself
 * ({@link BlockIo#waitingNext}): the descriptors are preallocated per queue slot, so waiting allocates nothing and
 * needs no bound beyond the commands in flight. An I/O is in at most one such queue at a time. One thread (the
 * reactor's).
 */
final class BlockIoFifo {
    private BlockIo head;
    private BlockIo tail;

    boolean isEmpty() {
        return head == null;
    }

    /** The oldest I/O, or null. */
    BlockIo peek() {
        return head;
    }

    void add(BlockIo io) {
        io.waitingNext = null;
        if (tail == null) {
            head = io;
        } else {
            tail.waitingNext = io;
        }
        tail = io;
    }

    /** Takes the oldest I/O out; null when empty. */
    BlockIo poll() {
        BlockIo io = head;
        if (io == null) {
            return null;
        }
        head = io.waitingNext;
        if (head == null) {
            tail = null;
        }
        io.waitingNext = null;
        return io;
    }

    /**
     * Takes out the I/Os {@code which} selects (every one when null), keeping the others in order, and returns them
     * as a chain through {@link BlockIo#waitingNext}, oldest first (null when none). Split first, complete after:
     * a completion may submit (and queue) again, which must find a consistent queue.
     */
    BlockIo removeAll(Predicate<BlockIo> which) {
        BlockIo keepHead = null;
        BlockIo keepTail = null;
        BlockIo takenHead = null;
        BlockIo takenTail = null;
        while (head != null) {
            BlockIo io = poll();
            if (which == null || which.test(io)) {
                if (takenTail == null) {
                    takenHead = io;
                } else {
                    takenTail.waitingNext = io;
                }
                takenTail = io;
            } else {
                if (keepTail == null) {
                    keepHead = io;
                } else {
                    keepTail.waitingNext = io;
                }
                keepTail = io;
            }
        }
        head = keepHead;
        tail = keepTail;
        return takenHead;
    }

    /** Completes a chain {@link #removeAll} returned with {@code status}, oldest first. */
    static void completeAll(BlockIo chain, int status) {
        while (chain != null) {
            BlockIo io = chain;
            chain = io.waitingNext;
            io.waitingNext = null;
            io.waitingDevice = null;
            io.qosDevice = null;
            io.complete(status);
        }
    }
}
