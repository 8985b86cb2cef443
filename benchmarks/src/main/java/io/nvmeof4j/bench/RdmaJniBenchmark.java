package io.nvmeof4j.bench;

import io.nvmeof4j.jni.rdma.CmEvent;
import io.nvmeof4j.jni.rdma.CmEventChannel;
import io.nvmeof4j.jni.rdma.CmEventType;
import io.nvmeof4j.jni.rdma.CmId;
import io.nvmeof4j.jni.rdma.CompletionQueue;
import io.nvmeof4j.jni.rdma.ConnectionParameters;
import io.nvmeof4j.jni.rdma.MemoryRegion;
import io.nvmeof4j.jni.rdma.ProtectionDomain;
import io.nvmeof4j.jni.rdma.QueuePair;
import io.nvmeof4j.jni.rdma.QueuePairCapabilities;
import io.nvmeof4j.jni.rdma.Rdma;
import io.nvmeof4j.jni.rdma.SendWorkRequests;
import io.nvmeof4j.jni.rdma.VerbsContext;
import io.nvmeof4j.jni.rdma.WorkCompletions;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;

/**
 * JMH benchmark of the RDMA JNI crossing (a benchmark, never a test), over a real device (Soft-RoCE rxe0 in the
 * QEMU guest; {@code integration-tests/vm/bench-jni.sh} runs it there):
 * <ul>
 *   <li>{@link #jniNoop}: the baseline, one JNI crossing into a C function doing nothing, same shape as a post;</li>
 *   <li>{@link #pollEmptyCompletionQueue}: one batched poll (up to 16) of an empty CQ: the crossing plus the
 *       provider's {@code ibv_poll_cq};</li>
 *   <li>{@link #postAndPollBatchOf16}: 16 chained RDMA WRITEs (64 bytes each, all signalled) posted in ONE
 *       crossing, then polled until all 16 completions are back: a whole batch round trip through the device.</li>
 * </ul>
 * Run with {@code -prof gc} to see that post and poll allocate nothing ({@code gc.alloc.rate.norm} ≈ 0 B/op).
 * The connection is two RC queue pairs over loopback on {@code RDMA_ADDR} (default 10.0.2.15, the guest's own).
 * On a machine without an RDMA device only {@link #jniNoop} can run.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
public class RdmaJniBenchmark {
    static final int BATCH = 16;

    /** Arguments the JIT cannot fold into constants. */
    @State(Scope.Thread)
    public static class Noop {
        long a = ThreadLocalRandom.current().nextLong();
        long b = ThreadLocalRandom.current().nextLong();
        int c = ThreadLocalRandom.current().nextInt();
    }

    /** A connected pair of RC queue pairs, a registered buffer on each side, and the preallocated batches. */
    @State(Scope.Thread)
    public static class Connection {
        private static final Duration TIMEOUT = Duration.ofSeconds(15);
        CmEventChannel listenChannel;
        CmEventChannel hostChannel;
        CmId listener;
        CmId host;
        CmId target;
        ProtectionDomain hostPd;
        ProtectionDomain targetPd;
        CompletionQueue hostCq;
        CompletionQueue targetCq;
        QueuePair hostQp;
        MemoryRegion hostMr;
        MemoryRegion targetMr;
        final SendWorkRequests writes = new SendWorkRequests(BATCH, 1);
        final WorkCompletions completions = new WorkCompletions(BATCH);

        @Setup(Level.Trial)
        public void connect() throws Exception {
            if (!Rdma.isAvailable()) {
                throw new IllegalStateException("RDMA unavailable", Rdma.unavailabilityCause());
            }
            InetSocketAddress address = new InetSocketAddress(
                InetAddress.getByName(System.getenv().getOrDefault("RDMA_ADDR", "10.0.2.15")),
                30000 + ThreadLocalRandom.current().nextInt(10000));
            QueuePairCapabilities caps = new QueuePairCapabilities(4 * BATCH, 4 * BATCH, 1, 1, 0);
            listenChannel = CmEventChannel.create();
            hostChannel = CmEventChannel.create();
            listener = listenChannel.createId(0);
            listener.bind(address);
            listener.listen(4);
            host = hostChannel.createId(0);
            host.resolve(address, TIMEOUT);
            VerbsContext hostCtx = host.verbsContext();
            hostPd = hostCtx.allocateProtectionDomain();
            hostCq = hostCtx.createCompletionQueue(8 * BATCH, null, 0);
            hostQp = host.createQueuePair(hostPd, hostCq, hostCq, caps);
            hostMr = hostPd.registerMemory(ByteBuffer.allocateDirect(BATCH * 64), MemoryRegion.LOCAL_WRITE);
            host.connect(ConnectionParameters.defaults());
            CmEvent request = listener.awaitConnectRequest(TIMEOUT);
            target = request.id();
            VerbsContext targetCtx = target.verbsContext();
            targetPd = targetCtx.allocateProtectionDomain();
            targetCq = targetCtx.createCompletionQueue(8 * BATCH, null, 0);
            target.createQueuePair(targetPd, targetCq, targetCq, caps);
            targetMr = targetPd.registerMemory(ByteBuffer.allocateDirect(BATCH * 64),
                MemoryRegion.LOCAL_WRITE | MemoryRegion.REMOTE_WRITE);
            target.accept(ConnectionParameters.defaults());
            hostChannel.awaitEvent(host, CmEventType.ESTABLISHED, TIMEOUT.toNanos(), "connect");
            listenChannel.awaitEvent(target, CmEventType.ESTABLISHED, TIMEOUT.toNanos(), "accept");
            for (int i = 0; i < BATCH; i++) {
                writes.rdmaWrite(i, i, SendWorkRequests.FLAG_SIGNALED, targetMr.address() + i * 64L, targetMr.rkey())
                    .sge(i, 0, hostMr.address() + i * 64L, 64, hostMr.lkey());
            }
        }

        @TearDown(Level.Trial)
        public void close() {
            for (AutoCloseable c : new AutoCloseable[] {host, target, listener, hostMr, targetMr, hostCq, targetCq,
                hostPd, targetPd, hostChannel, listenChannel}) {
                try {
                    if (c != null) {
                        c.close();
                    }
                } catch (Exception ignored) {
                    // best effort at the end of a trial
                }
            }
        }
    }

    @Benchmark
    public long jniNoop(Noop s) {
        return Rdma.noop(s.a, s.b, s.c);
    }

    @Benchmark
    public int pollEmptyCompletionQueue(Connection c) {
        return c.targetCq.poll(c.completions);
    }

    @Benchmark
    public int postAndPollBatchOf16(Connection c) {
        int rc = c.hostQp.postSend(c.writes, BATCH);
        if (rc != 0) {
            throw new IllegalStateException("ibv_post_send: " + rc + " at " + c.writes.failedIndex());
        }
        int done = 0;
        long deadline = System.nanoTime() + 5_000_000_000L;
        while (done < BATCH) {
            int n = c.hostCq.poll(c.completions);
            if (n < 0) {
                throw new IllegalStateException("ibv_poll_cq: " + n);
            }
            for (int i = 0; i < n; i++) {
                if (c.completions.status(i) != WorkCompletions.STATUS_SUCCESS) {
                    throw new IllegalStateException(WorkCompletions.statusName(c.completions.status(i)));
                }
            }
            done += n;
            if (n == 0 && System.nanoTime() > deadline) {
                throw new IllegalStateException("only " + done + " of " + BATCH + " completions within 5 s");
            }
        }
        return done;
    }
}
