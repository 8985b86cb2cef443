package io.nvmeof4j.bench;

import io.nvmeof4j.protocol.HostId;
import io.nvmeof4j.protocol.Nqn;
import io.nvmeof4j.protocol.command.NvmeStatus;
import io.nvmeof4j.protocol.spi.TransportAddress;
import io.nvmeof4j.target.config.TargetConfig;
import io.nvmeof4j.target.daemon.TargetDaemon;

import java.lang.management.ManagementFactory;
import java.util.Arrays;
import java.util.SplittableRandom;

/**
 * Benchmark (not a test): bytes the target's reactor threads allocate per I/O in steady state.
 * <p>Starts the daemon in this JVM with a RAM namespace on 127.0.0.1, warms up, then drives N 4 KiB random reads and
 * N 4 KiB random writes at a fixed queue depth through one NVMe/TCP I/O queue, and prints the reactor threads'
 * allocated bytes ({@code com.sun.management.ThreadMXBean#getThreadAllocatedBytes}) divided by the I/O count,
 * with the IOPS seen (the client is a simple blocking one: the IOPS are not the target's best).
 * <pre>
 * java -cp … io.nvmeof4j.bench.TargetAllocationBenchmark [ios-per-phase (default 1000000)] [queue-depth (32)]
 *     [metrics: on (default) | off]
 * </pre>
 * The target's metrics are on, as in the daemon's default configuration: the I/O timers, byte counters and
 * failure table are on the measured path. Its HTTP server is off (nothing scrapes during the run).
 */
public final class TargetAllocationBenchmark {
    private static final String SUBSYSTEM = "nqn.2014-08.io.nvmeof4j:bench";
    private static final int BLOCK = 4096;
    private static final long NAMESPACE_BYTES = 256L << 20;

    public static void main(String[] args) throws Exception {
        long ios = args.length > 0 ? Long.parseLong(args[0]) : 1_000_000L;
        int depth = args.length > 1 ? Integer.parseInt(args[1]) : 32;
        boolean metrics = args.length <= 2 || !"off".equals(args[2]);
        String json = "{\"nvmeof4j\": {\"http\": \"off\", \"metrics\": " + metrics + "},"
            + " \"ports\": [{\"portid\": 1, \"addr\": {\"trtype\": \"tcp\", \"adrfam\": \"ipv4\","
            + " \"traddr\": \"127.0.0.1\", \"trsvcid\": \"0\"}, \"subsystems\": [\"" + SUBSYSTEM + "\"]}],"
            + " \"subsystems\": [{\"nqn\": \"" + SUBSYSTEM + "\", \"attr\": {\"allow_any_host\": \"1\"},"
            + " \"namespaces\": [{\"nsid\": 1, \"enable\": 1, \"device\": {\"backend\": \"ram\", \"size\": \""
            + NAMESPACE_BYTES + "\", \"block_size\": " + BLOCK + "}}]}]}";
        try (TargetDaemon daemon = TargetDaemon.start(TargetConfig.parse(json))) {
            System.out.println("target metrics " + (daemon.metrics() != null ? "on" : "off"));
            TransportAddress address = daemon.listenAddresses().get(0);
            HostId hostId = HostId.random();
            String hostNqn = Nqn.ofUuid(hostId.uuid()).value();
            try (PipelinedTcpHost admin = new PipelinedTcpHost(address.traddr(), address.port(), 10_000)) {
                int cntlid = admin.connect(0, 32, 0xFFFF, SUBSYSTEM, hostNqn, hostId, 0);
                admin.enableController(10_000);
                try (PipelinedTcpHost io = new PipelinedTcpHost(address.traddr(), address.port(), 10_000)) {
                    io.connect(1, 128, cntlid, SUBSYSTEM, hostNqn, hostId, 0);
                    byte[] data = new byte[BLOCK];
                    Arrays.fill(data, (byte) 0x5A);
                    run(io, 0x01, Math.max(ios / 5, 100_000), depth, data);
                    run(io, 0x02, Math.max(ios / 5, 100_000), depth, data);
                    report("write 4 KiB", io, 0x01, ios, depth, data);
                    report("read 4 KiB", io, 0x02, ios, depth, data);
                }
            }
        }
    }

    private static void report(String name, PipelinedTcpHost io, int opcode, long ios, int depth, byte[] data)
            throws Exception {
        long[] reactors = reactorThreadIds();
        long before = allocated(reactors);
        long start = System.nanoTime();
        run(io, opcode, ios, depth, data);
        double seconds = (System.nanoTime() - start) / 1e9;
        long bytes = allocated(reactors) - before;
        System.out.printf("%-12s %,d I/Os at QD%d: %,.0f IOPS; reactor threads (%d) allocated %,d bytes = %.4f bytes/IO%n",
            name, ios, depth, ios / seconds, reactors.length, bytes, (double) bytes / ios);
    }

    private static void run(PipelinedTcpHost io, int opcode, long count, int depth, byte[] data) throws Exception {
        SplittableRandom random = new SplittableRandom(42);
        long blocks = NAMESPACE_BYTES / BLOCK;
        long submitted = 0;
        long completed = 0;
        while (completed < count) {
            while (submitted < count && submitted - completed < depth) {
                io.submitIo(opcode, 1, random.nextLong(blocks), 1, data, BLOCK);
                submitted++;
            }
            io.flush();
            int status = io.awaitCompletion(data);
            if (!NvmeStatus.isSuccess(status)) {
                throw new IllegalStateException("I/O failed with " + NvmeStatus.describe(status));
            }
            completed++;
        }
    }

    private static long[] reactorThreadIds() {
        return Thread.getAllStackTraces().keySet().stream()
            .filter(t -> t.getName().contains("reactor"))
            .mapToLong(Thread::getId)
            .toArray();
    }

    private static long allocated(long[] threadIds) {
        com.sun.management.ThreadMXBean mx = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        return Arrays.stream(mx.getThreadAllocatedBytes(threadIds)).sum();
    }
}
