package io.nvmeof4j.target.metrics;

import io.micrometer.core.instrument.Clock;

import java.util.function.LongSupplier;

/**
 * The registry's {@link Clock}, whose wall time is the one read at the last {@link #refresh()} (every scrape)
 * instead of a read per call: micrometer 1.14's {@code PrometheusTimer} reads {@code wallTime()} twice on every
 * record, in {@code TimeWindowMax.rotate()} and in {@code AbstractTimeWindowHistogram.rotate()} (the Prometheus
 * histogram's), and where the kernel's clocksource is not readable from user space (the QEMU guest's HPET) each read
 * is a {@code clock_gettime} system call on the reactor thread (issue 17).
 * <p>Why a stale wall time is safe: on the record path it is only compared with the window's last rotation to see
 * whether a rotation is due, and our timers' window is ten years ({@link TargetMetrics#NEVER_ROTATE}), so the
 * answer is "no" whatever the value; a stale value can only make a rotation later, never earlier. Readers of the
 * rotated values ({@code max}, the histogram snapshot) rotate too, on the scrape thread, right after
 * {@link TargetMetrics#refresh()} refreshed this clock: they see the wall time of the scrape. The monotonic time
 * (the pause detector's, unused by the default {@code NoPauseDetector}) is read live.
 */
final class CachedWallClock implements Clock {
    private final LongSupplier wall;
    private volatile long wallMillis;

    CachedWallClock() {
        this(System::currentTimeMillis);
    }

    /** @param wall the wall clock in milliseconds (tests count its reads) */
    CachedWallClock(LongSupplier wall) {
        this.wall = wall;
        this.wallMillis = wall.getAsLong();
    }

    /** Reads the wall clock once (the scrape thread, before every scrape). */
    void refresh() {
        wallMillis = wall.getAsLong();
    }

    @Override
    public long wallTime() {
        return wallMillis;
    }

    @Override
    public long monotonicTime() {
        return System.nanoTime();
    }
}
