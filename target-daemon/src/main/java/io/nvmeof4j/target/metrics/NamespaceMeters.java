package io.nvmeof4j.target.metrics;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.Timer;
import io.nvmeof4j.protocol.command.NvmeStatus;

import java.util.List;
import java.util.concurrent.TimeUnit;

import static io.nvmeof4j.target.metrics.TargetMeterNames.IO_OPS;
import static io.nvmeof4j.target.metrics.TargetMeterNames.OP_OTHER;
import static io.nvmeof4j.target.metrics.TargetMeterNames.OP_READ;
import static io.nvmeof4j.target.metrics.TargetMeterNames.OP_WRITE;

/**
 * The meters of one namespace, resolved once when the namespace appears (configuration or management API) and kept
 * in arrays indexed by transport ordinal and op, so that recording an I/O is two array loads and the meters' own
 * lock-free updates: no registry lookup, no tag objects, no allocation.
 */
public final class NamespaceMeters {
    private final SubsystemMeters subsystem;
    private final int nsid;
    /** [transport ordinal × IO_OPS + op]; null for a transport the daemon does not serve. */
    private final Timer[] timers;
    private final Counter[] readBytes;
    private final Counter[] writtenBytes;
    private final List<Meter> all;

    NamespaceMeters(SubsystemMeters subsystem, int nsid, Timer[] timers, Counter[] readBytes, Counter[] writtenBytes,
                    List<Meter> all) {
        this.subsystem = subsystem;
        this.nsid = nsid;
        this.timers = timers;
        this.readBytes = readBytes;
        this.writtenBytes = writtenBytes;
        this.all = all;
    }

    public int nsid() {
        return nsid;
    }

    public SubsystemMeters subsystem() {
        return subsystem;
    }

    List<Meter> meters() {
        return all;
    }

    /**
     * One I/O command finished: its latency, its bytes on success, its status on failure. Any thread; allocation-free.
     *
     * @param transport {@link io.nvmeof4j.protocol.spi.TransportType#ordinal()} of the queue
     * @param op        {@link TargetMeterNames} op index
     */
    public void record(int transport, int op, long latencyNanos, int status, long bytes) {
        if (op < IO_OPS) {
            Timer timer = timers[transport * IO_OPS + op];
            if (timer != null) {
                timer.record(latencyNanos, TimeUnit.NANOSECONDS);
            }
        }
        if (NvmeStatus.isSuccess(status)) {
            if (op == OP_READ) {
                Counter c = readBytes[transport];
                if (c != null) {
                    c.increment(bytes);
                }
            } else if (op == OP_WRITE) {
                Counter c = writtenBytes[transport];
                if (c != null) {
                    c.increment(bytes);
                }
            }
        } else {
            subsystem.failures().increment(op < IO_OPS ? op : OP_OTHER, NvmeStatus.code(status));
        }
    }

    /** Commands of {@code op} (a {@link TargetMeterNames} I/O op) completed, over every transport; control path. */
    public long completed(int op) {
        long n = 0;
        for (int t = 0; t * IO_OPS + op < timers.length; t++) {
            Timer timer = timers[t * IO_OPS + op];
            n += timer == null ? 0 : timer.count();
        }
        return n;
    }

    /** Total latency of the completed commands of {@code op}, in nanoseconds, over every transport; control path. */
    public long latencyNanos(int op) {
        double total = 0;
        for (int t = 0; t * IO_OPS + op < timers.length; t++) {
            Timer timer = timers[t * IO_OPS + op];
            total += timer == null ? 0 : timer.totalTime(TimeUnit.NANOSECONDS);
        }
        return (long) total;
    }

    /** Bytes read, or written ({@code read} false), by successful commands over every transport; control path. */
    public long bytes(boolean read) {
        double total = 0;
        for (Counter c : read ? readBytes : writtenBytes) {
            total += c == null ? 0 : c.count();
        }
        return (long) total;
    }

    /** The timer of (transport, op), or null; for tests and the management API. */
    public Timer timer(int transport, int op) {
        return op < IO_OPS ? timers[transport * IO_OPS + op] : null;
    }
}
