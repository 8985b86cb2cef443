package io.nvmeof4j.target.metrics;

import io.nvmeof4j.protocol.io.NvmOpcode;
import io.nvmeof4j.protocol.spi.TransportType;

import java.time.Duration;

/**
 * Every meter the target publishes, in one place (Micrometer conventions: lowercase, dot-separated, low-cardinality
 * tags). The Prometheus registry renders {@code nvmeof.target.io} as {@code nvmeof_target_io_seconds_*} and the byte
 * counters as {@code nvmeof_target_io_read_bytes_total} and so on; {@code deploy/grafana} queries those names.
 *
 * <table>
 *   <caption>Meters</caption>
 *   <tr><th>name</th><th>type</th><th>tags</th><th>what</th></tr>
 *   <tr><td>{@value #IO}</td><td>timer, percentile histogram 1 µs – 10 s</td><td>op, subsystem, nsid, transport</td>
 *       <td>capsule received → command completed (admin commands: nsid "0"; Asynchronous Event Requests are not
 *       timed, they wait by design)</td></tr>
 *   <tr><td>{@value #IO_READ_BYTES}</td><td>counter (bytes)</td><td>subsystem, nsid, transport</td>
 *       <td>bytes of successful Reads</td></tr>
 *   <tr><td>{@value #IO_WRITTEN_BYTES}</td><td>counter (bytes)</td><td>subsystem, nsid, transport</td>
 *       <td>bytes of successful Writes</td></tr>
 *   <tr><td>{@value #COMMANDS_FAILED}</td><td>counter</td><td>subsystem, op, status, status_name</td>
 *       <td>commands completed with a non-zero status (I/O and admin)</td></tr>
 *   <tr><td>{@value #CONTROLLERS}</td><td>gauge</td><td>subsystem</td><td>live controllers</td></tr>
 *   <tr><td>{@value #QUEUE_PAIRS}</td><td>gauge</td><td>subsystem</td><td>connected queue pairs (admin + I/O)</td></tr>
 *   <tr><td>{@value #QUEUE_INFLIGHT}</td><td>gauge</td><td>subsystem, cntlid, qid, transport</td>
 *       <td>commands received on the queue and not yet answered</td></tr>
 *   <tr><td>{@value #POOL_BUFFERS_IN_USE}</td><td>gauge</td><td>reactor</td><td>data buffers handed out</td></tr>
 *   <tr><td>{@value #REACTOR_IDLE_SPIN}</td><td>gauge (seconds)</td><td>reactor</td><td>how long the reactor's
 *       next idle stretch spins before it blocks, as learned from the gaps between commands (adaptive idling only;
 *       docs/datapath.md "How long to spin")</td></tr>
 *   <tr><td>{@value #REACTOR_WAKEUP_DELAY}</td><td>gauge (seconds)</td><td>reactor</td><td>run delay per block in
 *       the last measured window: how long a woken reactor waited for its CPU (adaptive idling with schedstats;
 *       0 until measured)</td></tr>
 *   <tr><td>{@value #REACTOR_CPU_SHARED}</td><td>gauge (0 or 1)</td><td>reactor</td><td>1 while the run delay
 *       shows the reactor's CPU shared with another thread (it then tries blocking at once against spinning)</td></tr>
 *   <tr><td>{@value #REACTOR_RUN_DELAY}</td><td>counter (seconds)</td><td>reactor</td><td>how long the reactor's
 *       thread was runnable but waiting for its CPU (schedstat): other tasks on its CPU, and with adaptive idling its
 *       wake-ups; every reactor</td></tr>
 *   <tr><td>{@value #RESOURCE_WAITS}</td><td>counter</td><td>reactor, resource</td>
 *       <td>commands that found a fixed-size data-path resource full and waited for it (never failed):
 *       {@value #RESOURCE_IO_URING} (the reactor's ring), {@value #RESOURCE_BUFFER_POOL} (the reactor's data
 *       buffers), {@value #RESOURCE_QOS} (a namespace's QoS rate limit: Reads and Writes held for a later
 *       timeslice)</td></tr>
 *   <tr><td>{@value #RAM_ALLOCATION_FAILURES}</td><td>counter</td><td>subsystem, nsid</td>
 *       <td>writes to a RAM namespace refused (Capacity Exceeded) because memory for a new chunk (1 MiB; 2 MiB with
 *       hugepages) could not be had</td></tr>
 *   <tr><td>{@value #RAM_BUDGET}</td><td>gauge (bytes)</td><td></td><td>the most all RAM namespaces may hold
 *       ({@code ram_budget_mib} or derived)</td></tr>
 *   <tr><td>{@value #RAM_RESERVED}</td><td>gauge (bytes)</td><td></td><td>the sizes of the RAM namespaces
 *       there are, reserved from the budget</td></tr>
 *   <tr><td>{@value #QUEUE_BUFFER_BUDGET}</td><td>gauge (bytes)</td><td></td><td>the most the connected
 *       NVMe/TCP queues' buffers may hold ({@code queue_buffer_budget_mib})</td></tr>
 *   <tr><td>{@value #QUEUE_BUFFER_RESERVED}</td><td>gauge (bytes)</td><td></td><td>what the connected queues'
 *       buffers hold of it (charged at Connect, given back when the queue closes)</td></tr>
 *   <tr><td>{@value #CONNECTIONS_REFUSED}</td><td>counter</td><td>transport, reason</td>
 *       <td>queues refused or closed before their Connect: reason {@code port_limit} (the oldest pending one closed
 *       for a new one), {@code host_limit} (a new one from an address at its limit), {@code connect_timeout};
 *       Connects refused with Controller Busy: {@code queue_buffer_budget} (the queue's buffers did not fit the
 *       queue buffer budget), {@code direct_memory} (allocating them failed)</td></tr>
 *   <tr><td>{@value #AUTHENTICATIONS}</td><td>counter</td><td>result, hash, dhgroup</td>
 *       <td>DH-HMAC-CHAP transactions ended, per queue: result {@code success} or {@code failure}, with the hash and
 *       group negotiated ({@code none} when the failure came before)</td></tr>
 * </table>
 */
public final class TargetMeterNames {
    public static final String IO = "nvmeof.target.io";
    public static final String IO_READ_BYTES = "nvmeof.target.io.read";
    public static final String IO_WRITTEN_BYTES = "nvmeof.target.io.written";
    public static final String COMMANDS_FAILED = "nvmeof.target.commands.failed";
    public static final String CONTROLLERS = "nvmeof.target.controllers";
    public static final String QUEUE_PAIRS = "nvmeof.target.queue.pairs";
    public static final String QUEUE_INFLIGHT = "nvmeof.target.queue.inflight";
    public static final String POOL_BUFFERS_IN_USE = "nvmeof.target.pool.buffers.in.use";
    public static final String REACTOR_IDLE_SPIN = "nvmeof.target.reactor.idle.spin";
    public static final String REACTOR_WAKEUP_DELAY = "nvmeof.target.reactor.wakeup.delay";
    public static final String REACTOR_CPU_SHARED = "nvmeof.target.reactor.cpu.shared";
    public static final String REACTOR_RUN_DELAY = "nvmeof.target.reactor.run.delay";
    public static final String RESOURCE_WAITS = "nvmeof.target.resource.waits";
    public static final String RAM_ALLOCATION_FAILURES = "nvmeof.target.ram.allocation.failures";
    public static final String RAM_BUDGET = "nvmeof.target.ram.budget";
    public static final String RAM_RESERVED = "nvmeof.target.ram.reserved";
    public static final String QUEUE_BUFFER_BUDGET = "nvmeof.target.queue.buffers.budget";
    public static final String QUEUE_BUFFER_RESERVED = "nvmeof.target.queue.buffers.reserved";
    public static final String AUTHENTICATIONS = "nvmeof.target.authentications";
    public static final String CONNECTIONS_REFUSED = "nvmeof.target.connections.refused";

    public static final String TAG_OP = "op";
    public static final String TAG_SUBSYSTEM = "subsystem";
    public static final String TAG_NSID = "nsid";
    public static final String TAG_TRANSPORT = "transport";
    public static final String TAG_STATUS = "status";
    public static final String TAG_STATUS_NAME = "status_name";
    public static final String TAG_CNTLID = "cntlid";
    public static final String TAG_QID = "qid";
    public static final String TAG_REACTOR = "reactor";
    public static final String TAG_RESOURCE = "resource";
    public static final String TAG_REASON = "reason";
    public static final String TAG_RESULT = "result";
    public static final String TAG_HASH = "hash";
    public static final String TAG_DHGROUP = "dhgroup";

    /** {@value #RESOURCE_WAITS} resource tag values. */
    public static final String RESOURCE_IO_URING = "io_uring";
    public static final String RESOURCE_BUFFER_POOL = "buffer_pool";
    /** A namespace's QoS budget (bdev_set_qos_limit) was spent: the I/O waited for the next timeslice. */
    public static final String RESOURCE_QOS = "qos";

    /** nsid tag of admin commands (they belong to the controller, not to a namespace). */
    public static final String ADMIN_NSID = "0";

    /** Histogram range: microseconds (a RAM read over loopback) to seconds (a stalled file system). */
    public static final Duration LATENCY_MIN = Duration.ofNanos(1_000);
    public static final Duration LATENCY_MAX = Duration.ofSeconds(10);

    // Operation indexes: meters live in arrays indexed by these, resolved when a namespace appears.
    public static final int OP_READ = NvmOpcode.OP_READ;
    public static final int OP_WRITE = NvmOpcode.OP_WRITE;
    public static final int OP_FLUSH = NvmOpcode.OP_FLUSH;
    public static final int OP_WRITE_ZEROES = NvmOpcode.OP_WRITE_ZEROES;
    public static final int OP_DEALLOCATE = NvmOpcode.OP_DEALLOCATE;
    public static final int OP_COMPARE = NvmOpcode.OP_COMPARE;
    public static final int OP_VERIFY = NvmOpcode.OP_VERIFY;
    public static final int OP_COPY = NvmOpcode.OP_COPY;
    /** Ops with a latency timer per namespace (the I/O ops). */
    public static final int IO_OPS = NvmOpcode.METERED_OPS;
    public static final int OP_ADMIN = IO_OPS;
    /** An I/O opcode we do not implement (or a reservation command): counted as failed, not timed. */
    public static final int OP_OTHER = IO_OPS + 1;
    public static final int OPS = IO_OPS + 2;

    public static final int TRANSPORTS = TransportType.values().length;

    private TargetMeterNames() {
    }

    public static String opName(int op) {
        return op == OP_ADMIN ? "admin" : op == OP_OTHER ? "other" : NvmOpcode.meteredOpName(op);
    }

    /** The op index of an NVM command set opcode; {@link #OP_OTHER} for one not metered as I/O. */
    public static int ioOp(int opcode) {
        int op = NvmOpcode.meteredOp(opcode);
        return op < 0 ? OP_OTHER : op;
    }

    /** Transport tag value. */
    public static String transportName(TransportType type) {
        return type.configName();
    }
}
