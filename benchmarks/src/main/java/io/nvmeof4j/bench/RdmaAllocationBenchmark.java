package io.nvmeof4j.bench;

import io.nvmeof4j.initiator.ConnectOptions;
import io.nvmeof4j.initiator.HostIdentity;
import io.nvmeof4j.initiator.IoCallback;
import io.nvmeof4j.initiator.IoStatus;
import io.nvmeof4j.initiator.NvmeofController;
import io.nvmeof4j.initiator.NvmeofHost;
import io.nvmeof4j.initiator.NvmeofNamespace;
import io.nvmeof4j.protocol.spi.AddressFamily;
import io.nvmeof4j.protocol.spi.TransportAddress;
import io.nvmeof4j.protocol.spi.TransportType;
import io.nvmeof4j.target.config.TargetConfig;
import io.nvmeof4j.target.daemon.TargetDaemon;

import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.Locale;
import java.util.concurrent.TimeUnit;

/**
 * Benchmark (not a test): bytes allocated per I/O on the NVMe-oF/RDMA data path, on both sides, in one JVM.
 * <p>Starts our daemon in this JVM (one reactor, an RDMA port on {@code 10.0.2.15}, a RAM namespace) and our
 * initiator ({@link NvmeofHost}, one RDMA I/O queue, one host reactor), warms up, then runs N 4 KiB random writes
 * and N 4 KiB random reads through the allocation-free callback API at a fixed queue depth (the callback resubmits,
 * as {@code nvmeof perf} does), and prints, per direction, the bytes allocated
 * ({@code com.sun.management.ThreadMXBean#getThreadAllocatedBytes}) divided by the I/O count on the target's reactor
 * threads ({@code nvmeof-reactor-*}) and on the initiator's RDMA reactor threads ({@code nvmeof-host-rdma-reactor-*}).
 * The counters are read before the first submission and after the last completion of a phase, so everything those
 * threads do meanwhile counts, the admin queue's Keep Alive included (it runs on the same reactors and allocates per
 * command, not per I/O): an idle phase of no I/O measures that rate in bytes per second, and each direction's line
 * also gives its bytes per I/O net of it.
 * <p>Needs an RDMA device: run inside the QEMU guest over Soft-RoCE rxe0 ({@code integration-tests/vm/bench-rdma-alloc.sh}).
 * <pre>
 * java -cp … io.nvmeof4j.bench.RdmaAllocationBenchmark [ios-per-phase (200000)] [queue-depth (32)]
 *     [inline data bytes of the port (4096: 4 KiB writes in the capsule; 0: the target RDMA READs them)]
 *     [target metrics: on (default) | off] [address (10.0.2.15)] [idle seconds (10)]
 * </pre>
 * Output: one {@code RESULT role=… dir=… …} line per role and direction (idle, write, read; the script parses
 * them), after a human-readable line each.
 */
public final class RdmaAllocationBenchmark {
    private static final String SUBSYSTEM = "nqn.2014-08.io.nvmeof4j:bench-rdma-alloc";
    private static final int BLOCK = 4096;
    private static final long NAMESPACE_BYTES = 256L << 20;
    private static final String TARGET_REACTOR = "nvmeof-reactor-";
    private static final String HOST_REACTOR = "nvmeof-host-rdma-reactor-";
    private static final long PHASE_TIMEOUT_NANOS = TimeUnit.MINUTES.toNanos(15);

    public static void main(String[] args) throws Exception {
        long ios = args.length > 0 ? Long.parseLong(args[0]) : 200_000L;
        int depth = args.length > 1 ? Integer.parseInt(args[1]) : 32;
        int inline = args.length > 2 ? Integer.parseInt(args[2]) : 4096;
        boolean metrics = args.length <= 3 || !"off".equals(args[3]);
        String addr = args.length > 4 ? args[4] : "10.0.2.15";
        int idleSeconds = args.length > 5 ? Integer.parseInt(args[5]) : 10;
        String port = "4420";
        String json = "{\"nvmeof4j\": {\"http\": \"off\", \"metrics\": " + metrics + ", \"reactors\": 1},"
            + " \"hosts\": [], \"ports\": [{\"portid\": 1, \"addr\": {\"trtype\": \"rdma\", \"adrfam\": \"ipv4\","
            + " \"traddr\": \"" + addr + "\", \"trsvcid\": \"" + port + "\"}, \"param\": {\"inline_data_size\": \""
            + inline + "\"}, \"subsystems\": [\"" + SUBSYSTEM + "\"]}],"
            + " \"subsystems\": [{\"nqn\": \"" + SUBSYSTEM + "\", \"attr\": {\"allow_any_host\": \"1\"},"
            + " \"namespaces\": [{\"nsid\": 1, \"enable\": 1, \"device\": {\"backend\": \"ram\", \"size\": \""
            + NAMESPACE_BYTES + "\", \"block_size\": " + BLOCK + "}}]}]}";
        try (TargetDaemon daemon = TargetDaemon.start(TargetConfig.parse(json));
             NvmeofHost host = NvmeofHost.create(HostIdentity.generate(), 1)) {
            System.out.printf(Locale.ROOT, "setup: target metrics %s, port inline_data_size %d, %s:%s, %s %s%n",
                daemon.metrics() != null ? "on" : "off", inline, addr, port, System.getProperty("java.vm.name"),
                ManagementFactory.getRuntimeMXBean().getInputArguments());
            TransportAddress address = new TransportAddress(TransportType.RDMA, AddressFamily.IPV4, addr, port);
            ConnectOptions options = ConnectOptions.defaults().withIoQueues(1)
                .withQueueDepth(Math.max(ConnectOptions.QUEUE_DEPTH_DEFAULT, depth + 1))
                .withMaxOutstandingRequests(Math.max(ConnectOptions.defaults().maxOutstandingRequests(), depth));
            try (NvmeofController ctrl = host.connect(address, SUBSYSTEM, options)) {
                NvmeofNamespace ns = ctrl.namespace(1);
                Driver driver = new Driver(ns, depth);
                long warmup = Math.max(ios / 2, 50_000);
                driver.run(true, warmup);
                driver.run(false, warmup);
                long[] target = threadIds(TARGET_REACTOR);
                long[] initiator = threadIds(HOST_REACTOR);
                if (target.length == 0 || initiator.length == 0) {
                    throw new IllegalStateException("reactor threads not found: target " + target.length
                        + ", initiator " + initiator.length);
                }
                double[] idle = idleRate(idleSeconds, target, initiator);
                report("write", driver, true, ios, depth, target, initiator, idle);
                report("read", driver, false, ios, depth, target, initiator, idle);
            }
        }
    }

    /**
     * Bytes per second the reactor threads allocate with no I/O at all: the admin queue's Keep Alive (the host sends
     * one every KATO/2 = 2.5 s whatever the traffic; the target re-arms its timer) shares the reactor with the I/O
     * queue. The direction lines subtract this rate times their duration ({@code net_bytes_per_io}).
     */
    private static double[] idleRate(int seconds, long[] target, long[] initiator) throws InterruptedException {
        long targetBefore = allocated(target);
        long initiatorBefore = allocated(initiator);
        long start = System.nanoTime();
        Thread.sleep(seconds * 1000L);
        double elapsed = (System.nanoTime() - start) / 1e9;
        double[] rates = {(allocated(target) - targetBefore) / elapsed, (allocated(initiator) - initiatorBefore) / elapsed};
        String[] roles = {"target", "initiator"};
        for (int i = 0; i < 2; i++) {
            System.out.printf(Locale.ROOT, "%-9s idle: no I/O for %.1f s; reactor threads allocated %.1f bytes/s%n",
                roles[i], elapsed, rates[i]);
            System.out.printf(Locale.ROOT, "RESULT role=%s dir=idle seconds=%.1f bytes_per_s=%.1f%n", roles[i], elapsed,
                rates[i]);
        }
        return rates;
    }

    private static void report(String dir, Driver driver, boolean write, long ios, int depth, long[] target,
                               long[] initiator, double[] idle) throws InterruptedException {
        long targetBefore = allocated(target);
        long initiatorBefore = allocated(initiator);
        long start = System.nanoTime();
        driver.run(write, ios);
        double seconds = (System.nanoTime() - start) / 1e9;
        long targetBytes = allocated(target) - targetBefore;
        long initiatorBytes = allocated(initiator) - initiatorBefore;
        for (Object[] row : new Object[][] {{"target", target.length, targetBytes, idle[0]},
                                            {"initiator", initiator.length, initiatorBytes, idle[1]}}) {
            long bytes = (Long) row[2];
            double net = (bytes - (Double) row[3] * seconds) / ios;
            System.out.printf(Locale.ROOT, "%-9s %-5s 4 KiB: %,d I/Os at QD%d in %.1f s, %,.0f IOPS; reactor threads (%d) "
                + "allocated %,d bytes = %.4f bytes/IO (%.4f net of the idle rate)%n", row[0], dir, ios, depth, seconds,
                ios / seconds, row[1], bytes, (double) bytes / ios, net);
            System.out.printf(Locale.ROOT, "RESULT role=%s dir=%s ios=%d qd=%d seconds=%.1f iops=%.0f bytes=%d "
                + "bytes_per_io=%.4f net_bytes_per_io=%.4f%n", row[0], dir, ios, depth, seconds, ios / seconds, bytes,
                (double) bytes / ios, net);
        }
    }

    /**
     * Keeps {@code depth} I/Os in flight: the callback (on the host reactor) resubmits the slot until the phase's
     * count is submitted; the main thread waits for the completed count. Allocates nothing per I/O.
     */
    private static final class Driver implements IoCallback {
        private final NvmeofNamespace ns;
        private final ByteBuffer[] slots;
        private final long blocks;
        // Written by the starting thread before the first submission, then by the reactor thread only.
        private boolean write;
        private long toSubmit;
        // Also moved by the starting thread's first submissions while early completions resubmit: a benign race on
        // a random LBA generator.
        private long rng = 0x9E3779B97F4A7C15L;
        private volatile long completed;
        private volatile int firstError;

        Driver(NvmeofNamespace ns, int depth) {
            this.ns = ns;
            this.blocks = ns.blockCount() / (BLOCK / ns.blockSize());
            this.slots = new ByteBuffer[depth];
            for (int i = 0; i < depth; i++) {
                slots[i] = ByteBuffer.allocateDirect(BLOCK);
                for (int j = 0; j < BLOCK; j += 8) {
                    slots[i].putLong(j, 0x6e766d656f66346aL ^ j);
                }
            }
        }

        void run(boolean write, long count) throws InterruptedException {
            this.write = write;
            this.completed = 0;
            this.toSubmit = count - Math.min(count, slots.length);
            int initial = (int) Math.min(count, slots.length);
            for (int i = 0; i < initial; i++) {
                submit(slots[i]);
            }
            long deadline = System.nanoTime() + PHASE_TIMEOUT_NANOS;
            while (completed < count && firstError == 0) {
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException("phase timed out: " + completed + " of " + count + " completed");
                }
                Thread.sleep(5);
            }
            if (firstError != 0) {
                throw new IllegalStateException("an I/O failed: " + IoStatus.describe(firstError));
            }
        }

        @Override
        public void onComplete(int status, Object context) {
            if (status != 0) {
                firstError = status;
                return;
            }
            if (toSubmit > 0) {
                toSubmit--;
                submit((ByteBuffer) context);
            }
            completed++; // single writer: the reactor thread
        }

        private void submit(ByteBuffer buffer) {
            long x = rng;
            x ^= x << 13;
            x ^= x >>> 7;
            x ^= x << 17;
            rng = x;
            long lba = Long.remainderUnsigned(x, blocks) * (BLOCK / ns.blockSize());
            buffer.clear();
            boolean accepted = write ? ns.submitWrite(lba, BLOCK / ns.blockSize(), buffer, false, this, buffer)
                : ns.submitRead(lba, BLOCK / ns.blockSize(), buffer, this, buffer);
            if (!accepted) {
                firstError = -1;
            }
        }
    }

    private static long[] threadIds(String prefix) {
        return Thread.getAllStackTraces().keySet().stream()
            .filter(t -> t.getName().startsWith(prefix))
            .mapToLong(Thread::getId)
            .toArray();
    }

    private static long allocated(long[] threadIds) {
        com.sun.management.ThreadMXBean mx = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        return Arrays.stream(mx.getThreadAllocatedBytes(threadIds)).sum();
    }
}
