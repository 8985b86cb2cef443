package io.nvmeof4j.target.backend;

import org.slf4j.Logger;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Logs I/O errors without flooding: the first one, then at most one per interval with the count of those
 * suppressed meanwhile. A failing disk can fail every I/O; the log should say so once a second, not 100k times.
 */
final class RateLimitedLog {
    private static final long INTERVAL_NANOS = TimeUnit.SECONDS.toNanos(1);

    private final Logger log;
    private final AtomicLong nextLogNanos = new AtomicLong(Long.MIN_VALUE);
    private final AtomicLong suppressed = new AtomicLong();

    RateLimitedLog(Logger log) {
        this.log = log;
    }

    void error(String format, Object... args) {
        long now = System.nanoTime();
        long next = nextLogNanos.get();
        if ((next != Long.MIN_VALUE && now - next < 0) || !nextLogNanos.compareAndSet(next, now + INTERVAL_NANOS)) {
            suppressed.incrementAndGet();
            return;
        }
        long skipped = suppressed.getAndSet(0);
        if (skipped > 0) {
            log.error(format + " (" + skipped + " similar errors not logged in the last second)", args);
        } else {
            log.error(format, args);
        }
    }
}
