package io.nvmeof4j.bench;

import io.nvmeof4j.initiator.BlockNamespace;
import io.nvmeof4j.initiator.ConnectOptions;
import io.nvmeof4j.initiator.HostIdentity;
import io.nvmeof4j.initiator.IoCallback;
import io.nvmeof4j.initiator.IoPolicy;
import io.nvmeof4j.initiator.MultipathController;
import io.nvmeof4j.initiator.NvmeofHost;
import io.nvmeof4j.initiator.PathStats;
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
 * single path and once as a multipath namespace over both ports. Short windows of 4 KiB random reads at QD32
 * (callback API, each I/O resubmitted from its callback, so on the host reactor thread) alternate between the
 * modes, so all see the same moments of a noisy machine; prints each mode's IOPS, its ratio to single path (total
 * and median of the per-cycle ratios), and each path's I/Os sent, completed and in flight per mode.
 * <pre>
 * java -cp … io.nvmeof4j.bench.MultipathOverheadBenchmark [seconds (default 20)] [window-ms (default 250)]
 *     [iopolicy: round-robin (default) | numa | queue-depth]
 * </pre>
 * With {@code round-robin} two multipath modes take part: turns per reactor round (the default) and per I/O
 * ({@link MultipathController#roundRobinPerIo(boolean)}, Linux's granularity). With {@code numa} every I/O takes
 * the first path: the multipath layer's own cost (selection, request pool, counters) without spreading the queue
 * depth over two connections.
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
            MultipathController mp = host.connectMultipath(List.of(ports.get(0), ports.get(1)), NQN, options,
                policy);
            BlockNamespace multi = mp.namespace(1);
            boolean rr = policy == IoPolicy.ROUND_ROBIN;
            String[] modes = rr ? new String[] {"single path", "round-robin per round", "round-robin per I/O"}
                : new String[] {"single path", policy.configName()};
            int m = modes.length;
            Load load = new Load();
            load.window(single, 2000);                           // warm-up, every mode
            for (int k = 1; k < m; k++) {
                mp.roundRobinPerIo(k == 2);
                load.window(multi, 2000);
            }
            int cycles = Math.max(1, seconds * 1000 / (m * windowMs));
            long[] totals = new long[m];
            double[][] ratios = new double[m][cycles];
            long[][] sent = new long[m][2];
            long[][] done = new long[m][2];
            for (int c = 0; c < cycles; c++) {
                long[] got = new long[m];
                for (int j = 0; j < m; j++) {
                    // Rotate which mode goes first, so none always gets the later part of a load change.
                    int k = (c + j) % m;
                    mp.roundRobinPerIo(k == 2);
                    List<PathStats> before = mp.pathStats();
                    got[k] = load.window(k == 0 ? single : multi, windowMs);
                    List<PathStats> after = mp.pathStats();
                    for (int p = 0; p < 2; p++) {
                        sent[k][p] += after.get(p).submitted() - before.get(p).submitted();
                        done[k][p] += after.get(p).completed() - before.get(p).completed();
                    }
                    totals[k] += got[k];
                }
                for (int k = 1; k < m; k++) {
                    ratios[k][c] = got[0] == 0 ? Double.NaN : (double) got[k] / got[0];
                }
            }
            double windowSeconds = cycles * windowMs / 1000.0;
            System.out.printf(Locale.ROOT, "4 KiB random reads at QD%d, %d cycles of %d-ms windows per mode, "
                + "load average %s%n", DEPTH, cycles, windowMs, loadAverage());
            System.out.printf(Locale.ROOT, "  %-22s %,10.0f IOPS%n", modes[0], totals[0] / windowSeconds);
            for (int k = 1; k < m; k++) {
                double[] sorted = Arrays.stream(ratios[k]).filter(r -> !Double.isNaN(r)).sorted().toArray();
                System.out.printf(Locale.ROOT, "  %-22s %,10.0f IOPS   ratio to single path: total %.3f, median "
                        + "%.3f (p25 %.3f, p75 %.3f); path 0/1 sent %,d/%,d completed %,d/%,d%n", modes[k],
                    totals[k] / windowSeconds, (double) totals[k] / totals[0], quantile(sorted, 0.5),
                    quantile(sorted, 0.25), quantile(sorted, 0.75), sent[k][0], sent[k][1], done[k][0],
                    done[k][1]);
            }
            List<PathStats> end = mp.pathStats();
            System.out.printf(Locale.ROOT, "  in flight now per path %d/%d; errors %d; aim >= 0.95%n",
                end.get(0).inFlight(), end.get(1).inFlight(), load.errors.get());
        }
    }

    private static double quantile(double[] sorted, double q) {
        return sorted.length == 0 ? Double.NaN : sorted[(int) (sorted.length * q)];
    }

    private static String loadAverage() {
        try {
            String[] f = java.nio.file.Files.readString(java.nio.file.Path.of("/proc/loadavg")).split(" ");
            return f[0] + " " + f[1] + " " + f[2];
        } catch (java.io.IOException | RuntimeException e) {
            return "unknown";
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
