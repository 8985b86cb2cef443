package io.nvmeof4j.protocol.spi.transport;

import java.util.function.LongSupplier;

/**
 * A reactor round's view of {@link System#nanoTime()}: read at most once per round, when something first needs it,
 * and shared by everything the round stamps (arrivals, deadlines, latency ends). Where the kernel has no clock
 * readable from user space (the QEMU guest's HPET clocksource) every read is a {@code clock_gettime} system call:
 * issue 17 measured 4 of the 9.6 system calls per QD1 I/O on the NVMe/TCP target being clock reads.
 * <p>{@link #beginRound()} makes the next {@link #now()} read again. What a round's stamp means follows from where
 * the round begins: a poll of completion queues (every capsule it takes arrived before it, every SEND it reaps
 * completed before it), a gathering write (every response in it left when it returned). Reactor thread only.
 */
public final class RoundClock {
    private final LongSupplier source;
    private long nanos;
    /** {@link #nanos} was read since {@link #beginRound()}. */
    private boolean read;

    /** Over {@link System#nanoTime()}. */
    public RoundClock() {
        this(System::nanoTime);
    }

    /** @param source the monotonic nanosecond clock (tests give a stepped one) */
    public RoundClock(LongSupplier source) {
        this.source = source;
        this.nanos = source.getAsLong(); // so that last() is a time from the start
    }

    /** A new round: the next {@link #now()} reads the clock. */
    public void beginRound() {
        read = false;
    }

    /** The round's time: read on the first call after {@link #beginRound()}, the same value after that. */
    public long now() {
        if (!read) {
            nanos = source.getAsLong();
            read = true;
        }
        return nanos;
    }

    /**
     * The last time read, this round or an earlier one, without reading: for deadlines, which tolerate a stamp a
     * round old (the reactor blocks at most its timer period) and must not cost a read per command.
     */
    public long last() {
        return nanos;
    }

    /** The clock this one reads (a second round clock over the same source stamps another kind of batch). */
    public LongSupplier source() {
        return source;
    }
}
