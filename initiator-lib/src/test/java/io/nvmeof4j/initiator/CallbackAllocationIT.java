package io.nvmeof4j.initiator;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;

import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The callback API allocates nothing per I/O in steady state, on the host reactor thread and on the submitting
 * thread (issue 3; architecture: no allocation per I/O). Measured with the per-thread allocated-bytes counter over
 * 200 000 I/Os after a warm-up: a correctness property, not a timing. Any per-I/O allocation would show as at least
 * 16 bytes per I/O, far above the bound.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class CallbackAllocationIT {
    private static final int DEPTH = 32;
    private static final int BLOCKS = 8; // 4 KiB of 512-byte blocks
    private static final int WARM_UP = 50_000;
    private static final int MEASURED = 200_000;
    private static final double BOUND_BYTES_PER_IO = 1.0;
    private static final com.sun.management.ThreadMXBean THREADS =
        (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();

    private InJvmTarget target;
    private NvmeofHost host;
    private BlockNamespace ns;

    @BeforeAll
    void connect(@TempDir Path dir) throws Exception {
        target = new InJvmTarget(dir);
        host = createHost();
        ns = connectNamespace(host, target, ConnectOptions.defaults().withIoQueues(1).withQueueDepth(DEPTH));
    }

    /** Namespace 1 of the target over one path (a subclass measures the same over several). */
    BlockNamespace connectNamespace(NvmeofHost host, InJvmTarget target, ConnectOptions options) throws Exception {
        return host.connect(target.ioAddress(), InJvmTarget.NQN_A, options).namespace(1);
    }

    /** The host under test (a subclass measures the same with metrics on). */
    NvmeofHost createHost() {
        return NvmeofHost.create(HostIdentity.generate(), 1);
    }

    @AfterAll
    void close() {
        host.close();
        target.close();
    }

    /** One I/O slot: its buffer and whether an I/O is using it. Preallocated: the context object of the I/O. */
    static final class Slot {
        final int index;
        final ByteBuffer buffer;
        volatile boolean busy;

        Slot(int index) {
            this(index, BLOCKS);
        }

        Slot(int index, int blocks) {
            this.index = index;
            this.buffer = ByteBuffer.allocateDirect(blocks * 512);
        }
    }

    /** Reads and writes submitted from a plain application thread: the cross-thread hand-off path. */
    @Test
    void shouldNotAllocatePerIoWhenSubmittingFromAnotherThread() {
        Slot[] slots = new Slot[DEPTH];
        for (int i = 0; i < DEPTH; i++) {
            slots[i] = new Slot(i);
        }
        AtomicLong completed = new AtomicLong();
        AtomicLong failures = new AtomicLong();
        Thread[] reactor = new Thread[1];
        IoCallback callback = (status, context) -> {
            if (status != 0) {
                failures.incrementAndGet();
            }
            reactor[0] = Thread.currentThread();
            ((Slot) context).busy = false;
            completed.incrementAndGet();
        };
        long[] submitted = {0};
        run(slots, callback, submitted, completed, WARM_UP);
        long reactorId = reactor[0].getId();
        long submitterId = Thread.currentThread().getId();
        long reactorBefore = THREADS.getThreadAllocatedBytes(reactorId);
        long submitterBefore = THREADS.getThreadAllocatedBytes(submitterId);
        run(slots, callback, submitted, completed, WARM_UP + MEASURED);
        long submitterBytes = THREADS.getThreadAllocatedBytes(submitterId) - submitterBefore;
        long reactorBytes = THREADS.getThreadAllocatedBytes(reactorId) - reactorBefore;
        double submitterPerIo = (double) submitterBytes / MEASURED;
        double reactorPerIo = (double) reactorBytes / MEASURED;
        System.out.printf("callback API, 4 KiB reads/writes at QD %d from an application thread: reactor %.4f, "
            + "submitter %.4f bytes per I/O over %d I/Os%n", DEPTH, reactorPerIo, submitterPerIo, MEASURED);
        assertThat(failures.get()).isZero();
        assertThat(reactorPerIo).isLessThan(BOUND_BYTES_PER_IO);
        assertThat(submitterPerIo).isLessThan(BOUND_BYTES_PER_IO);
    }

    private void run(Slot[] slots, IoCallback callback, long[] submitted, AtomicLong completed, long until) {
        int next = 0;
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
        while (submitted[0] < until) {
            Slot slot = slots[next];
            next = next + 1 == slots.length ? 0 : next + 1;
            if (slot.busy) {
                if (next == 0) {
                    java.util.concurrent.locks.LockSupport.parkNanos(1_000); // all busy: leave the CPU to the reactors
                }
                if (System.nanoTime() > deadline) {
                    throw new AssertionError("I/O stalled: " + completed.get() + " of " + submitted[0] + " completed");
                }
                continue;
            }
            slot.busy = true;
            slot.buffer.clear();
            long lba = (submitted[0] % 4096) * BLOCKS;
            boolean accepted = (submitted[0] & 1) == 0
                ? ns.submitRead(lba, BLOCKS, slot.buffer, callback, slot)
                : ns.submitWrite(lba, BLOCKS, slot.buffer, false, callback, slot);
            if (!accepted) {
                throw new AssertionError("request pool exhausted at QD " + DEPTH);
            }
            submitted[0]++;
        }
        while (completed.get() < submitted[0]) {
            Thread.yield();
            if (System.nanoTime() > deadline) {
                throw new AssertionError("I/O stalled: " + completed.get() + " of " + submitted[0] + " completed");
            }
        }
    }

    /** The next I/O submitted from the completion callback, on the reactor thread: the direct path. */
    @Test
    void shouldNotAllocatePerIoWhenResubmittingFromTheCallback() throws Exception {
        double perIo = resubmitFromTheCallback(BLOCKS, DEPTH, WARM_UP, MEASURED);
        System.out.printf("callback API, 4 KiB reads at QD %d resubmitted from the callback: reactor %.4f bytes per "
            + "I/O over %d I/Os%n", DEPTH, perIo, MEASURED);
        assertThat(perIo).isLessThan(BOUND_BYTES_PER_IO);
    }

    /**
     * 128 KiB reads: payloads read straight from the socket into the caller's buffers, each header behind one read
     * on its own (PduReceiver's large-payload path).
     */
    @Test
    void shouldNotAllocatePerIoOnLargeReadsResubmittedFromTheCallback() throws Exception {
        int measured = 20_000;
        double perIo = resubmitFromTheCallback(256, 8, 5_000, measured);
        System.out.printf("callback API, 128 KiB reads at QD 8 resubmitted from the callback: reactor %.4f bytes per "
            + "I/O over %d I/Os%n", perIo, measured);
        assertThat(perIo).isLessThan(BOUND_BYTES_PER_IO);
    }

    /** Reads of {@code blocks} at {@code depth}, each resubmitted from its callback; the reactor's bytes per I/O. */
    private double resubmitFromTheCallback(int blocks, int depth, int warmUp, int measured) throws Exception {
        Slot[] slots = new Slot[depth];
        for (int i = 0; i < depth; i++) {
            slots[i] = new Slot(i, blocks);
        }
        AtomicLong completed = new AtomicLong();
        AtomicLong failures = new AtomicLong();
        long[] reactorId = {-1};
        long[] reactorBefore = {0};
        long[] reactorAfter = {0};
        long total = warmUp + measured;
        CountDownLatch done = new CountDownLatch(1);
        long[] issued = {0}; // reactor thread only after the first depth
        long span = (16L << 20) / (blocks * 512L); // I/Os over the first 16 MiB
        IoCallback[] self = new IoCallback[1];
        self[0] = (status, context) -> {
            if (status != 0) {
                failures.incrementAndGet();
            }
            long n = completed.incrementAndGet();
            if (n == warmUp) {
                reactorId[0] = Thread.currentThread().getId();
                reactorBefore[0] = THREADS.getThreadAllocatedBytes(reactorId[0]);
            }
            if (n == total) {
                reactorAfter[0] = THREADS.getThreadAllocatedBytes(reactorId[0]);
                done.countDown();
                return;
            }
            if (issued[0] < total) {
                Slot slot = (Slot) context;
                slot.buffer.clear();
                long i = issued[0]++;
                ns.submitRead((i % span) * blocks, blocks, slot.buffer, self[0], slot);
            }
        };
        synchronized (issued) {
            issued[0] = depth;
        }
        for (int i = 0; i < depth; i++) {
            ns.submitRead((long) i * blocks, blocks, slots[i].buffer, self[0], slots[i]);
        }
        assertThat(done.await(120, TimeUnit.SECONDS)).as("all I/O completed").isTrue();
        assertThat(failures.get()).isZero();
        return (double) (reactorAfter[0] - reactorBefore[0]) / measured;
    }
}
