package io.nvmeof4j.initiator;

import io.nvmeof4j.protocol.io.NvmOpcode;
import java.time.Duration;

/**
 * Every meter the initiator library publishes when the application gives it a Micrometer {@code MeterRegistry}
 * ({@link NvmeofHost#create(HostIdentity, int, io.micrometer.core.instrument.MeterRegistry)}); the same shape as the
 * target's {@code nvmeof.target.*} meters.
 * <table>
 *   <caption>Meters</caption>
 *   <tr><th>name</th><th>type</th><th>tags</th><th>what</th></tr>
 *   <tr><td>{@value #IO}</td><td>timer</td><td>op, subsystem, nsid, transport</td>
 *       <td>submit → callback of one block I/O of the callback or future API (a request split at MDTS counts once)</td></tr>
 *   <tr><td>{@value #IO_READ_BYTES}</td><td>counter (bytes)</td><td>subsystem, nsid, transport</td><td>successful reads</td></tr>
 *   <tr><td>{@value #IO_WRITTEN_BYTES}</td><td>counter (bytes)</td><td>subsystem, nsid, transport</td><td>successful writes</td></tr>
 *   <tr><td>{@value #COMMANDS_FAILED}</td><td>counter</td><td>subsystem, nsid, op, status, status_name</td>
 *       <td>I/O completed with an error status (NVMe or host-side, such as 0x370 HOST_PATH_ERROR)</td></tr>
 *   <tr><td>{@value #CONTROLLERS}</td><td>gauge</td><td>-</td><td>controllers connected and not closed</td></tr>
 *   <tr><td>{@value #PATH_IOS}</td><td>function counter</td><td>subsystem, path, outcome (completed, failed,
 *       failed_over)</td><td>multipath I/Os per path: done there, failed there, or moved from there to another
 *       path after a path error</td></tr>
 *   <tr><td>{@value #PATH_IN_FLIGHT}</td><td>gauge</td><td>subsystem, path</td><td>multipath I/Os in flight on the
 *       path (what the queue-depth policy compares)</td></tr>
 *   <tr><td>{@value #PATH_LIVE}</td><td>gauge</td><td>subsystem, path</td><td>1 while the path's controller is
 *       live</td></tr>
 *   <tr><td>{@value #REACTOR_IDLE_SPIN}</td><td>gauge (seconds)</td><td>reactor</td><td>how long the reactor's
 *       next idle stretch spins before it blocks, as learned from the gaps between commands (adaptive idling only;
 *       docs/datapath.md "How long to spin"); at its floor under steady QD1 traffic the reactor blocks and is woken
 *       for every completion</td></tr>
 *   <tr><td>{@value #REACTOR_WAKEUP_DELAY}</td><td>gauge (seconds)</td><td>reactor</td><td>run delay per block in
 *       the last measured window: how long a woken reactor waited for its CPU (adaptive idling with schedstats;
 *       0 until measured)</td></tr>
 *   <tr><td>{@value #REACTOR_CPU_SHARED}</td><td>gauge (0 or 1)</td><td>reactor</td><td>1 while the run delay
 *       shows the reactor's CPU shared with another thread (it then tries blocking at once against spinning)</td></tr>
 * </table>
 * The {@code reactor} tag is the reactor's index among the host's reactors: {@code 0..n-1} for NVMe/TCP's
 * ({@code nvmeof-host-reactor-N}), {@code n..2n-1} for NVMe-oF/RDMA's ({@code nvmeof-host-rdma-reactor-N}, made on
 * first use), n being the host's reactor threads. A host that busy-polls
 * ({@code -D}{@value NvmeofHost#IDLE_PROP_NAME}{@code =busy}) has no reactor gauges, as a busy target has none.
 * A library does not force percentile histograms on its users: the timer publishes none by default. An application
 * that wants them (as the {@code nvmeof perf --metrics} tool does) says so, either with
 * {@link NvmeofHost#create(HostIdentity, int, io.micrometer.core.instrument.MeterRegistry, boolean)} or with a
 * Micrometer {@code MeterFilter} on {@value #IO}; the buckets then span {@link #LATENCY_MIN} to {@link #LATENCY_MAX}.
 */
public final class HostMeterNames {
    public static final String IO = "nvmeof.host.io";
    public static final String IO_READ_BYTES = "nvmeof.host.io.read";
    public static final String IO_WRITTEN_BYTES = "nvmeof.host.io.written";
    public static final String COMMANDS_FAILED = "nvmeof.host.commands.failed";
    public static final String CONTROLLERS = "nvmeof.host.controllers";
    public static final String PATH_IOS = "nvmeof.host.path.ios";
    public static final String PATH_IN_FLIGHT = "nvmeof.host.path.in_flight";
    public static final String PATH_LIVE = "nvmeof.host.path.live";
    public static final String REACTOR_IDLE_SPIN = "nvmeof.host.reactor.idle.spin";
    public static final String REACTOR_WAKEUP_DELAY = "nvmeof.host.reactor.wakeup.delay";
    public static final String REACTOR_CPU_SHARED = "nvmeof.host.reactor.cpu.shared";

    public static final String TAG_OP = "op";
    public static final String TAG_SUBSYSTEM = "subsystem";
    public static final String TAG_NSID = "nsid";
    public static final String TAG_TRANSPORT = "transport";
    public static final String TAG_STATUS = "status";
    public static final String TAG_STATUS_NAME = "status_name";
    public static final String TAG_PATH = "path";
    public static final String TAG_OUTCOME = "outcome";
    public static final String TAG_REACTOR = "reactor";

    public static final Duration LATENCY_MIN = Duration.ofNanos(1_000);
    public static final Duration LATENCY_MAX = Duration.ofSeconds(10);

    static final int OP_READ = NvmOpcode.OP_READ;
    static final int OP_WRITE = NvmOpcode.OP_WRITE;
    static final int OP_FLUSH = NvmOpcode.OP_FLUSH;
    static final int OP_WRITE_ZEROES = NvmOpcode.OP_WRITE_ZEROES;
    static final int OP_DEALLOCATE = NvmOpcode.OP_DEALLOCATE;
    static final int OP_COMPARE = NvmOpcode.OP_COMPARE;
    static final int OP_VERIFY = NvmOpcode.OP_VERIFY;
    static final int OP_COPY = NvmOpcode.OP_COPY;
    /** A fused Compare and Write pair, timed as one operation (the application submits it as one). */
    static final int OP_COMPARE_AND_WRITE = NvmOpcode.METERED_OPS;
    static final int OPS = NvmOpcode.METERED_OPS + 1;

    private HostMeterNames() {
    }

    public static String opName(int op) {
        return op == OP_COMPARE_AND_WRITE ? "compare_and_write" : NvmOpcode.meteredOpName(op);
    }

    static int op(int opcode) {
        if (opcode == IoQueue.OP_COMPARE_AND_WRITE) {
            return OP_COMPARE_AND_WRITE;
        }
        int op = NvmOpcode.meteredOp(opcode);
        if (op < 0) {
            throw new IllegalArgumentException("no host metric op for opcode " + opcode);
        }
        return op;
    }
}
