package io.nvmeof4j.protocol.spi;

import java.util.Objects;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A number of bytes of memory that several owners draw from: each reserves what it is about to allocate, and gives
 * it back when it lets the memory go. Nothing is allocated here; the budget only counts, so that memory a remote
 * host can make the daemon take (RAM namespaces added through the API, the buffers of the queues hosts connect) has
 * a limit the operator set, instead of ending in an {@link OutOfMemoryError}.
 * <p>Thread-safe without a lock (a compare-and-set on the reserved count), so a reactor thread can reserve at
 * Connect without waiting for another thread.
 */
public final class MemoryBudget {
    private final long limitBytes;
    private final String description;
    private final AtomicLong reservedBytes = new AtomicLong();

    /**
     * @param limitBytes  the most that may be reserved at once; {@link Long#MAX_VALUE} for no limit
     * @param description what the budget is and where its limit comes from, for messages:
     *                    {@code "queue buffer budget of 512 MiB (nvmeof4j.queue_buffer_budget_mib)"}
     */
    public MemoryBudget(long limitBytes, String description) {
        if (limitBytes < 0) {
            throw new IllegalArgumentException("negative budget " + limitBytes);
        }
        this.limitBytes = limitBytes;
        this.description = Objects.requireNonNull(description, "description");
    }

    /** A budget that refuses nothing (a transport used without a daemon: tests, embedding). */
    public static MemoryBudget unlimited(String what) {
        return new MemoryBudget(Long.MAX_VALUE, what + " (unlimited)");
    }

    /** Reserves {@code bytes} if they fit what is left; false (and nothing reserved) when they do not. */
    public boolean tryReserve(long bytes) {
        if (bytes < 0) {
            throw new IllegalArgumentException("negative size " + bytes);
        }
        while (true) {
            long reserved = reservedBytes.get();
            if (bytes > limitBytes - reserved) {
                return false;
            }
            if (reservedBytes.compareAndSet(reserved, reserved + bytes)) {
                return true;
            }
        }
    }

    /**
     * Gives back what {@link #tryReserve} took.
     *
     * @throws IllegalArgumentException when more would be given back than is reserved (a bug of the caller: the
     *                                  count is left as it was)
     */
    public void release(long bytes) {
        if (bytes < 0) {
            throw new IllegalArgumentException("negative size " + bytes);
        }
        while (true) {
            long reserved = reservedBytes.get();
            if (bytes > reserved) {
                throw new IllegalArgumentException("releasing " + bytes + " of " + reserved + " reserved bytes of the "
                    + description);
            }
            if (reservedBytes.compareAndSet(reserved, reserved - bytes)) {
                return;
            }
        }
    }

    public long limitBytes() {
        return limitBytes;
    }

    /** What is reserved now (a snapshot). */
    public long reservedBytes() {
        return reservedBytes.get();
    }

    /** What is left now (a snapshot). */
    public long availableBytes() {
        return limitBytes - reservedBytes.get();
    }

    /** What the budget is and where its limit comes from. */
    public String describe() {
        return description;
    }

    @Override
    public String toString() {
        return description;
    }
}
