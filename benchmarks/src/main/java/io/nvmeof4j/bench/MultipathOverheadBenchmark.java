package io.nvmeof4j.bench;

import io.nvmeof4j.initiator.BlockNamespace;
import io.nvmeof4j.initiator.ConnectOptions;
import io.nvmeof4j.initiator.HostIdentity;
import io.nvmeof4j.initiator.IoCallback;
import io.nvmeof4j.initiator.IoPolicy;
import io.nvmeof4j.initiator.NvmeofHost;
import io.nvmeof4j.protocol.spi.TransportAddress;
import io.nvmeof4j.target.config.TargetConfig;
import io.nvmeof4j.target.daemon.TargetDaemon;

import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

/**
 * Benchmark (not a test): what multipath costs, measured so that the machine's load drifts out. Our daemon in this
 * JVM listens on two ports of 127.0.0.1 (RAM namespace, 4 KiB blocks); one host connects namespace 1 once over a
 * single path and once as a round-robin multipath namespace over both ports. Short windows of 4 KiB random reads
 * at QD32 (callback API, each I/O resubmitted from its callback) alternate between the two, so both see the same
 * moments of a noisy machine; prints each pair's ratio, the median ratio and the totals.
 * <pre>
 * java -cp … io.nvmeof4j.bench.MultipathOverheadBenchmark [seconds (default 20)] [window-ms (default 250)]
 *     [iopolicy: round-robin (default) | numa | queue-depth]
 * </pre>
 * With {@code numa} every I/O takes the first path: the multipath layer's own cost (selection, request pool,
 * counters) without spreading the queue depth over two connections.
 */
public final class MultipathOverheadBenchmark {
    private static final String NQN = "nqn.2014-08.io.nvmeof4j:multipath-bench";
    private static final int BLOCK = 4096;
    private static final int DEPTH = 32;
    private static final long BLOCKS = (256L << 20) / BLOCK;

    public static void main(String[] args) throws Exception {
        int seconds = args.length > 0 ? Integer.parseInt(args[0]) : 20;
        int windowMs = args.length > 1 ? Integer.parseInt(args[1]) : 250;
        String port = "{\"portid\": %d, \"addr\": {\"trtype\": \"tcp\", \"adrfam\": \"ipv4\", \"traddr\": "
            + "\"127.0.0.1\", \"trsvcid\": \"0\"}, \"subsystems\": [\"" + NQN + "\"]}";
        String json = "{\"nvmeof4j\": {\"http\": \"off\", \"reactors\": 1}, \"ports\": [" + String.format(port, 1)
            + ", " + String.format(port, 2) + "], \"subsystems\": [{\"nqn\": \"" + NQN + "\", \"attr\": "
            + "{\"allow_any_host\": \"1\"}, \"namespaces\": [{\"nsid\": 1, \"enable\": 1, \"device\": "
            + "{\"backend\": \"ram\", \"size\": \"" + (BLOCKS * BLOCK) + "\", \"block_size\": " + BLOCK + "}}]}]}";
        try (TargetDaemon daemon = TargetDaemon.start(TargetConfig.parse(json));
             NvmeofHost host = NvmeofHost.create(HostIdentity.generate(), 1)) {
            List<TransportAddress> ports = daemon.listenAddresses();
            ConnectOptions options = ConnectOptions.defaults().withIoQueues(1).withQueueDepth(DEPTH + 1)
                .withMaxOutstandingRequests(DEPTH);
            BlockNamespace single = host.connect(ports.get(0), NQN, options).namespace(1);
            IoPolicy policy = args.length > 2 ? IoPolicy.fromConfigName(args[2]) : IoPolicy.ROUND_ROBIN;
            BlockNamespace multi = host.connectMultipath(List.of(ports.get(0), ports.get(1)), NQN, options,
                policy).namespace(1);
            Load load = new Load();
            load.window(single, 2000);                           // warm-up, both
            load.window(multi, 2000);
            int pairs = Math.max(1, seconds * 1000 / (2 * windowMs));
            double[] ratios = new double[pairs];
            long singleTotal = 0;
            long multiTotal = 0;
            for (int i = 0; i < pairs; i++) {
                // Alternate which goes first, so neither always gets the later half of a load change.
                long s;
                long m;
                if ((i & 1) == 0) {
                    s = load.window(single, windowMs);
                    m = load.window(multi, windowMs);
                } else {
                    m = load.window(multi, windowMs);
                    s = load.window(single, windowMs);
                }
                singleTotal += s;
                multiTotal += m;
                ratios[i] = s == 0 ? Double.NaN : (double) m / s;
            }
            double[] sorted = Arrays.stream(ratios).filter(r -> !Double.isNaN(r)).sorted().toArray();
            double median = sorted.length == 0 ? Double.NaN : sorted[sorted.length / 2];
            double windowSeconds = pairs * windowMs / 1000.0;
            System.out.printf(Locale.ROOT, "4 KiB random reads at QD%d, %d alternating %d-ms windows per mode: "
                    + "single path %,.0f IOPS, multipath (%s over 2 ports) %,.0f IOPS%n", DEPTH, pairs,
                windowMs, singleTotal / windowSeconds, policy.configName(), multiTotal / windowSeconds);
            System.out.printf(Locale.ROOT, "ratio multipath/single: total %.3f, median of pairs %.3f (p25 %.3f, "
                    + "p75 %.3f); errors %d; aim >= 0.95%n", (double) multiTotal / singleTotal, median,
                sorted.length == 0 ? Double.NaN : sorted[sorted.length / 4],
                sorted.length == 0 ? Double.NaN : sorted[sorted.length * 3 / 4], load.errors.get());
        }
    }

    /** QD32 of reads, each resubmitted from its callback until the window ends; counts completions. */
    static final class Load implements IoCallback {
        final AtomicLong errors = new AtomicLong();
        private final ByteBuffer[] buffers = new ByteBuffer[DEPTH];
        private final AtomicInteger active = new AtomicInteger();
        private volatile boolean stop;
        private volatile BlockNamespace ns;
        private long completed; // reactor thread only while the window runs
        private long rng = 0x9E3779B97F4A7C15L;

        Load() {
            for (int i = 0; i < DEPTH; i++) {
                buffers[i] = ByteBuffer.allocateDirect(BLOCK);
            }
        }

        long window(BlockNamespace target, int millis) {
            ns = target;
            stop = false;
            completed = 0;
            for (int i = 0; i < DEPTH; i++) {
                active.incrementAndGet();
                buffers[i].clear();
                if (!target.submitRead(nextLba(), 1, buffers[i], this, buffers[i])) {
                    active.decrementAndGet();
                    errors.incrementAndGet();
                }
            }
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(millis));
            stop = true;
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (active.get() > 0) {
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException(active.get() + " reads did not complete within 30 s");
                }
                LockSupport.parkNanos(100_000);
            }
            return completed;
        }

        @Override
        public void onComplete(int status, Object context) {
            if (status != 0) {
                errors.incrementAndGet();
            }
            if (stop) {
                active.decrementAndGet();
                return;
            }
            completed++;
            ByteBuffer b = (ByteBuffer) context;
            b.clear();
            if (!ns.submitRead(nextLba(), 1, b, this, b)) {
                errors.incrementAndGet();
                active.decrementAndGet();
            }
        }

        private long nextLba() {
            long x = rng;
            x ^= x << 13;
            x ^= x >>> 7;
            x ^= x << 17;
            rng = x;
            return Long.remainderUnsigned(x, BLOCKS);
        }
    }
}
