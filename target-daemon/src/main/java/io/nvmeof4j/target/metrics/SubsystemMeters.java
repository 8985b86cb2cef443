package io.nvmeof4j.target.metrics;

import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.Timer;
import io.nvmeof4j.protocol.command.NvmeStatus;

import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The meters of one subsystem (or of discovery): the admin-command timers per transport and the failed-command
 * table. Resolved once per subsystem; the queue handlers keep a reference.
 */
public final class SubsystemMeters {
    private final String nqn;
    private final Timer[] adminTimers;
    private final FailureCounts failures = new FailureCounts();
    /** Failure slots already published as function counters (scrape thread only). */
    final boolean[] published = new boolean[FailureCounts.CAPACITY];
    final List<Meter> all;

    SubsystemMeters(String nqn, Timer[] adminTimers, List<Meter> all) {
        this.nqn = nqn;
        this.adminTimers = adminTimers;
        this.all = all;
    }

    public String nqn() {
        return nqn;
    }

    public FailureCounts failures() {
        return failures;
    }

    /** An admin command finished (any thread; allocation-free). */
    public void recordAdmin(int transport, long latencyNanos, int status) {
        Timer t = adminTimers[transport];
        if (t != null) {
            t.record(latencyNanos, TimeUnit.NANOSECONDS);
        }
        if (!NvmeStatus.isSuccess(status)) {
            failures.increment(TargetMeterNames.OP_ADMIN, NvmeStatus.code(status));
        }
    }

    /** A command failed before it reached a namespace (bad NSID, bad flags, controller not ready). */
    public void recordEarlyFailure(int op, int status) {
        failures.increment(op, NvmeStatus.code(status));
    }

    public Timer adminTimer(int transport) {
        return adminTimers[transport];
    }
}
