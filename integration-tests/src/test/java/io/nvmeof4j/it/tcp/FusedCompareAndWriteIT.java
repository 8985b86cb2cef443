package io.nvmeof4j.it.tcp;

import io.nvmeof4j.initiator.ConnectOptions;
import io.nvmeof4j.initiator.HostIdentity;
import io.nvmeof4j.initiator.NvmeofController;
import io.nvmeof4j.initiator.NvmeofHost;
import io.nvmeof4j.initiator.NvmeofIoException;
import io.nvmeof4j.initiator.NvmeofNamespace;
import io.nvmeof4j.protocol.spi.TransportAddress;
import io.nvmeof4j.target.backend.UringBlockDevice;
import io.nvmeof4j.target.config.TargetConfig;
import io.nvmeof4j.target.daemon.TargetDaemon;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Fused Compare and Write, Copy and Verify end to end: our initiator against our daemon over NVMe/TCP on 127.0.0.1.
 * <p>The daemon runs three reactors; connections go to them round robin in the order they arrive, so host A's
 * admin and I/O queues land on reactors 0 and 1 and host B's on 2 and 0: the two hosts' I/O queues run on
 * different reactors. Port 1 takes 16 KiB in-capsule, port 2 none: host B's Compare and Write both pull their data
 * by R2T, so the target sees them in whatever order their data completes and pairs them by capsule order.
 * Namespace 1 is RAM (512-byte blocks), namespace 2 a file on io_uring (4096-byte blocks).
 * <p>The fused-pair bad input a conforming host never sends (a pair split across queues, a second half that never
 * comes, NSIDs that differ, halves whose data arrives out of order) is in {@link FusedRawHostIT}.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class FusedCompareAndWriteIT {
    private static final String NQN = "nqn.2014-08.io.nvmeof4j:fused";
    private static final int ROUNDS = 10_000;
    private static final long WAIT_SECONDS = 10;

    private TargetDaemon daemon;
    private NvmeofHost hostA;
    private NvmeofHost hostB;
    private NvmeofController ctrlA;
    private NvmeofController ctrlB;

    @BeforeAll
    void start(@TempDir Path dir) throws Exception {
        Path image = dir.resolve("fused.img");
        try (RandomAccessFile f = new RandomAccessFile(image.toFile(), "rw")) {
            f.setLength(32L << 20);
        }
        String json = """
            {
              "nvmeof4j": {"reactors": 3, "buffer_pool_mib": 16},
              "ports": [
                {"portid": 1, "addr": {"trtype": "tcp", "adrfam": "ipv4", "traddr": "127.0.0.1", "trsvcid": "0"},
                 "param": {"inline_data_size": "16384"}, "subsystems": ["%1$s"]},
                {"portid": 2, "addr": {"trtype": "tcp", "adrfam": "ipv4", "traddr": "127.0.0.1", "trsvcid": "0"},
                 "param": {"inline_data_size": "0"}, "subsystems": ["%1$s"]}
              ],
              "subsystems": [
                {"nqn": "%1$s", "attr": {"allow_any_host": "1"},
                 "namespaces": [
                   {"nsid": 1, "device": {"backend": "ram", "size": "64M", "block_size": 512}},
                   {"nsid": 2, "device": {"path": %2$s, "size": "32M", "block_size": 4096}}
                 ]}
              ]
            }
            """.formatted(NQN, "\"" + image.toAbsolutePath() + "\"");
        daemon = TargetDaemon.start(TargetConfig.parse(json, dir));
        assertThat(daemon.model().subsystem(NQN).namespace(2).device()).as("namespace 2: a file on io_uring")
            .isInstanceOf(UringBlockDevice.class);
        List<TransportAddress> ports = daemon.listenAddresses();
        ConnectOptions options = ConnectOptions.defaults().withIoQueues(1);
        hostA = NvmeofHost.create(HostIdentity.generate(), 1);
        hostB = NvmeofHost.create(HostIdentity.generate(), 1);
        ctrlA = hostA.connect(ports.get(0), NQN, options);
        ctrlB = hostB.connect(ports.get(1), NQN, options);
    }

    @AfterAll
    void stop() {
        for (AutoCloseable c : new AutoCloseable[] {ctrlA, ctrlB, hostA, hostB, daemon}) {
            try {
                if (c != null) {
                    c.close();
                }
            } catch (Exception e) {
                // best effort: the next one still closes
            }
        }
    }

    /** One block whose every 8 bytes hold {@code value}. */
    private static ByteBuffer block(int size, long value) {
        ByteBuffer b = ByteBuffer.allocateDirect(size).order(ByteOrder.LITTLE_ENDIAN);
        for (int i = 0; i < size; i += 8) {
            b.putLong(i, value);
        }
        return b;
    }

    private static long value(ByteBuffer data) {
        ByteBuffer block = data.order(ByteOrder.LITTLE_ENDIAN);
        long v = block.getLong(0);
        for (int i = 8; i < block.limit(); i += 8) {
            if (block.getLong(i) != v) {
                throw new AssertionError("torn block: " + Long.toHexString(v) + " at 0, "
                    + Long.toHexString(block.getLong(i)) + " at " + i);
            }
        }
        return v;
    }

    private static long tag(int host, long seq) {
        return ((long) host << 48) | seq;
    }

    @ParameterizedTest(name = "namespace {0}")
    @ValueSource(ints = {1, 2})
    void shouldLetExactlyOneHostWinEachRound(int nsid) throws Exception {
        NvmeofNamespace a = ctrlA.namespace(nsid);
        NvmeofNamespace b = ctrlB.namespace(nsid);
        int bs = a.blockSize();
        long lba = 77;
        a.write(lba, block(bs, 0)).get(WAIT_SECONDS, TimeUnit.SECONDS);

        AtomicLong current = new AtomicLong(0);
        boolean[][] won = new boolean[2][ROUNDS];
        AtomicInteger badRounds = new AtomicInteger();
        int[] round = {0};
        CyclicBarrier endOfRound = new CyclicBarrier(2, () -> {
            int r = round[0];
            boolean aWon = won[0][r];
            boolean bWon = won[1][r];
            if (aWon == bWon) {
                badRounds.incrementAndGet();
            }
            current.set(aWon ? tag(1, r + 1) : tag(2, r + 1));
            round[0] = r + 1;
        });
        CyclicBarrier startOfRound = new CyclicBarrier(2);
        ExecutorService pool = Executors.newFixedThreadPool(2);
        try {
            List<Future<?>> racers = new ArrayList<>();
            NvmeofNamespace[] sides = {a, b};
            for (int h = 0; h < 2; h++) {
                int host = h;
                racers.add(pool.submit(() -> {
                    ByteBuffer expected = ByteBuffer.allocateDirect(bs).order(ByteOrder.LITTLE_ENDIAN);
                    ByteBuffer mine = ByteBuffer.allocateDirect(bs).order(ByteOrder.LITTLE_ENDIAN);
                    for (int r = 0; r < ROUNDS; r++) {
                        startOfRound.await(WAIT_SECONDS, TimeUnit.SECONDS);
                        long seen = current.get();
                        long next = tag(host + 1, r + 1);
                        for (int i = 0; i < bs; i += 8) {
                            expected.putLong(i, seen);
                            mine.putLong(i, next);
                        }
                        won[host][r] = sides[host].compareAndWrite(lba, expected.clear(), mine.clear())
                            .get(WAIT_SECONDS, TimeUnit.SECONDS);
                        endOfRound.await(WAIT_SECONDS, TimeUnit.SECONDS);
                    }
                    return null;
                }));
            }
            for (Future<?> f : racers) {
                f.get(10, TimeUnit.MINUTES);
            }
        } finally {
            pool.shutdownNow();
            assertThat(pool.awaitTermination(WAIT_SECONDS, TimeUnit.SECONDS)).isTrue();
        }
        int winsA = 0;
        for (int r = 0; r < ROUNDS; r++) {
            winsA += won[0][r] ? 1 : 0;
        }
        assertThat(badRounds.get()).as("rounds without exactly one winner").isZero();
        assertThat(round[0]).isEqualTo(ROUNDS);
        long last = value(a.read(lba, 1).get(WAIT_SECONDS, TimeUnit.SECONDS));
        assertThat(last).as("the block holds the last winner's value").isEqualTo(current.get());
        // Both hosts win some rounds: the race is real (each side wins far more than 0 of 10,000).
        assertThat(winsA).isBetween(1, ROUNDS - 1);
    }

    @ParameterizedTest(name = "namespace {0}")
    @ValueSource(ints = {1, 2})
    void shouldNeverLetAPlainWriteLandBetweenCompareAndWrite(int nsid) throws Exception {
        NvmeofNamespace a = ctrlA.namespace(nsid);
        NvmeofNamespace b = ctrlB.namespace(nsid);
        int bs = a.blockSize();
        int blocks = 8;
        long lba = 400;
        a.write(lba, multi(bs, blocks, tag(2, 0))).get(WAIT_SECONDS, TimeUnit.SECONDS);
        int writes = 2000;
        // A's successful pairs: value written -> value its compare saw.
        Map<Long, Long> expectedBy = new ConcurrentHashMap<>();
        AtomicInteger violations = new AtomicInteger();
        AtomicInteger casWins = new AtomicInteger();
        AtomicInteger bDone = new AtomicInteger();
        ExecutorService pool = Executors.newFixedThreadPool(2);
        try {
            Future<?> writer = pool.submit(() -> {
                for (int j = 1; j <= writes; j++) {
                    long mine = tag(2, j);
                    b.write(lba, multi(bs, blocks, mine)).get(WAIT_SECONDS, TimeUnit.SECONDS);
                    long seen = uniform(b.read(lba, blocks).get(WAIT_SECONDS, TimeUnit.SECONDS), bs, blocks);
                    // Whatever A wrote since must chain back, through A's own values, to this write.
                    long v = seen;
                    while ((v >>> 48) == 1) {
                        v = expectedBy.get(v);
                    }
                    if (v != mine) {
                        violations.incrementAndGet();
                    }
                }
                bDone.set(1);
                return null;
            });
            Future<?> caser = pool.submit(() -> {
                long i = 0;
                while (bDone.get() == 0 && i < 1_000_000) {
                    long seen = uniform(a.read(lba, blocks).get(WAIT_SECONDS, TimeUnit.SECONDS), bs, blocks);
                    long next = tag(1, ++i);
                    expectedBy.put(next, seen); // before the write can be seen by B
                    if (a.compareAndWrite(lba, multi(bs, blocks, seen), multi(bs, blocks, next))
                        .get(WAIT_SECONDS, TimeUnit.SECONDS)) {
                        casWins.incrementAndGet();
                    } else {
                        expectedBy.remove(next);
                    }
                }
                return null;
            });
            writer.get(10, TimeUnit.MINUTES);
            caser.get(1, TimeUnit.MINUTES);
        } finally {
            pool.shutdownNow();
            assertThat(pool.awaitTermination(WAIT_SECONDS, TimeUnit.SECONDS)).isTrue();
        }
        assertThat(violations.get()).as("plain writes lost inside a compare-and-write").isZero();
        assertThat(casWins.get()).as("the pairs did run against the writes").isPositive();
    }

    private static ByteBuffer multi(int bs, int blocks, long value) {
        return block(bs * blocks, value);
    }

    private static long uniform(ByteBuffer data, int bs, int blocks) {
        return value(data.limit(bs * blocks));
    }

    @Test
    void shouldCopyAndVerifyThroughTheInitiator() throws Exception {
        for (int nsid = 1; nsid <= 2; nsid++) {
            NvmeofNamespace ns = ctrlA.namespace(nsid);
            int bs = ns.blockSize();
            ns.write(1000, block(2 * bs, 0x1111)).get(WAIT_SECONDS, TimeUnit.SECONDS);
            ns.write(1010, block(bs, 0x2222)).get(WAIT_SECONDS, TimeUnit.SECONDS);
            ctrlB.namespace(nsid).copy(2000, new long[] {1010, 1000}, new int[] {1, 2}, true)
                .get(WAIT_SECONDS, TimeUnit.SECONDS);
            ByteBuffer back = ns.read(2000, 3).get(WAIT_SECONDS, TimeUnit.SECONDS).order(ByteOrder.LITTLE_ENDIAN);
            assertThat(back.getLong(0)).isEqualTo(0x2222);
            assertThat(back.getLong(bs)).isEqualTo(0x1111);
            assertThat(back.getLong(3 * bs - 8)).isEqualTo(0x1111);

            ns.verify(0, Math.min(ns.blockCount(), 70_000)).get(WAIT_SECONDS, TimeUnit.SECONDS); // ns 1: two commands
            long blocks = ns.blockCount();
            assertThatThrownBy(() -> ns.verify(blocks - 1, 2).get(WAIT_SECONDS, TimeUnit.SECONDS))
                .isInstanceOf(ExecutionException.class).cause().isInstanceOf(NvmeofIoException.class)
                .satisfies(e -> assertThat(((NvmeofIoException) e).status() & 0x7FF).isEqualTo(0x080));
            int mcl = 65536 / bs;
            assertThatThrownBy(() -> ns.copy(3000, new long[] {0}, new int[] {mcl + 1}, false)
                .get(WAIT_SECONDS, TimeUnit.SECONDS))
                .cause().satisfies(e -> assertThat(((NvmeofIoException) e).status() & 0x7FF).isEqualTo(0x183));
            long[] many = new long[129];
            int[] ones = new int[129];
            java.util.Arrays.fill(ones, 1);
            assertThatThrownBy(() -> ns.copy(3000, many, ones, false).get(WAIT_SECONDS, TimeUnit.SECONDS))
                .cause().satisfies(e -> assertThat(((NvmeofIoException) e).status() & 0x7FF).isEqualTo(0x183));
            assertThatThrownBy(() -> ns.copy(blocks - 1, new long[] {0}, new int[] {2}, false)
                .get(WAIT_SECONDS, TimeUnit.SECONDS))
                .cause().satisfies(e -> assertThat(((NvmeofIoException) e).status() & 0x7FF).isEqualTo(0x080));
        }
    }

    @Test
    void shouldReportAMiscompareAndLeaveTheBlocks() throws Exception {
        NvmeofNamespace ns = ctrlB.namespace(2);
        int bs = ns.blockSize();
        ns.write(5000, block(4 * bs, 0xAAAA)).get(WAIT_SECONDS, TimeUnit.SECONDS);
        boolean written = ns.compareAndWrite(5000, block(4 * bs, 0xBBBB), block(4 * bs, 0xCCCC))
            .get(WAIT_SECONDS, TimeUnit.SECONDS);
        assertThat(written).isFalse();
        assertThat(value(ns.read(5000, 4).get(WAIT_SECONDS, TimeUnit.SECONDS))).isEqualTo(0xAAAA);
        assertThat(ns.compareAndWrite(5000, block(4 * bs, 0xAAAA), block(4 * bs, 0xCCCC))
            .get(WAIT_SECONDS, TimeUnit.SECONDS)).isTrue();
        assertThat(value(ns.read(5000, 4).get(WAIT_SECONDS, TimeUnit.SECONDS))).isEqualTo(0xCCCC);
    }
}
