package io.nvmeof4j.it.tcp;

import io.nvmeof4j.it.tcp.RawNvmeTcpHost.DataMode;
import io.nvmeof4j.protocol.command.NvmeStatus;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * NVM I/O (wire reference 3 and 5) on both namespaces of subsystem a, every write read back and compared.
 * Each test takes LBAs from its own region so that no test reads another's data.
 */
class NvmIoIT extends SharedTestTarget {
    static final HostIdentity HOST = HostIdentity.random();
    /** Next free byte offset per namespace; regions are handed out in 128 KiB steps. */
    static final AtomicLong[] NEXT = {new AtomicLong(), new AtomicLong(), new AtomicLong()};

    /** A region of {@code bytes} (rounded up to 128 KiB) that no other test uses; returns its first LBA. */
    static long region(TestTarget.Namespace ns, long bytes) {
        long size = (bytes + (1 << 17) - 1) & -(1L << 17);
        long start = NEXT[ns.nsid()].getAndAdd(size);
        assertThat(start + size).as("test regions fit namespace %d", ns.nsid()).isLessThanOrEqualTo(ns.bytes() - (1 << 20));
        return start / ns.blockSize();
    }

    /** An admin queue plus one I/O queue of a fresh controller of subsystem a. */
    static final class Session implements AutoCloseable {
        final RawNvmeTcpHost admin;
        final RawNvmeTcpHost io;

        Session(int cattr, boolean headerDigest, boolean dataDigest) throws Exception {
            admin = Sessions.enabledAdmin(target.ioPort(), TestTarget.NQN_A, HOST, Sessions.KATO_MS, headerDigest, dataDigest);
            try {
                Sessions.requestIoQueues(admin, 1);
                io = Sessions.ioQueue(target.ioPort(), TestTarget.NQN_A, HOST, 1, admin.cntlid(), cattr, headerDigest,
                    dataDigest);
            } catch (Exception e) {
                admin.close();
                throw e;
            }
        }

        Session() throws Exception {
            this(0, false, false);
        }

        @Override
        public void close() {
            io.close();
            admin.close();
        }
    }

    static Stream<Arguments> sizesAndNamespaces() {
        List<Arguments> args = new ArrayList<>();
        for (TestTarget.Namespace ns : List.of(TestTarget.A1, TestTarget.A2)) {
            for (int size : new int[] {512, 4096, 16384, 65536, 131072, 1 << 20}) {
                if (size >= ns.blockSize()) {
                    args.add(Arguments.of(ns.nsid(), ns.blockSize(), size));
                }
            }
        }
        return args.stream();
    }

    static TestTarget.Namespace namespace(int nsid) {
        return nsid == 1 ? TestTarget.A1 : TestTarget.A2;
    }

    @ParameterizedTest(name = "NSID {0} ({1} B blocks), {2} bytes")
    @MethodSource("sizesAndNamespaces")
    void shouldReadBackWhatWasWrittenAtQueueDepthOne(int nsid, int blockSize, int size) throws Exception {
        TestTarget.Namespace ns = namespace(nsid);
        long base = region(ns, 4L * size);
        SplittableRandom random = new SplittableRandom(nsid * 31L + size);
        try (Session s = new Session()) {
            for (int i = 0; i < 4; i++) {
                long slba = base + random.nextLong(4L * size / blockSize - size / blockSize + 1);
                int blocks = size / blockSize;
                byte[] data = Bytes.random(random.nextLong(), size);
                boolean fua = i % 2 == 1;
                Completion w = s.io.write(nsid, slba, blocks, data, fua);
                assertThat(w.status()).as("write NSID %d SLBA %d %d blocks FUA %s: %s", nsid, slba, blocks, fua, w)
                    .isEqualTo(NvmeStatus.SUCCESS);
                assertThat(w.sqid()).as("CQE SQID").isEqualTo(1);
                if (size <= TestTarget.INLINE_DATA_SIZE) {
                    assertThat(w.r2ts()).as("in-capsule write needs no R2T").isZero();
                } else {
                    assertThat(w.r2ts()).as("a %d-byte write goes by R2T", size).isPositive();
                }
                Completion r = s.io.read(nsid, slba, blocks, blockSize);
                assertThat(r.status()).as("read NSID %d SLBA %d %d blocks: %s", nsid, slba, blocks, r)
                    .isEqualTo(NvmeStatus.SUCCESS);
                assertThat(r.data()).as("read-back NSID %d SLBA %d %d bytes", nsid, slba, size).isEqualTo(data);
            }
        }
    }

    @Test
    void shouldHonourR2tForSmallWritesAndH2cDataSplitBelowMaxH2cData() throws Exception {
        long base = region(TestTarget.A1, 1 << 20);
        try (Session s = new Session()) {
            byte[] small = Bytes.random(5, 4096);
            Completion w = s.io.write(1, base, 8, small, false, DataMode.R2T);
            assertThat(w.status()).as("4 KiB write by R2T %s", w).isEqualTo(NvmeStatus.SUCCESS);
            assertThat(w.r2ts()).as("R2Ts for a 4 KiB write sent with SGL 0x5A").isPositive();
            assertThat(s.io.read(1, base, 8, 512).data()).isEqualTo(small);

            s.io.h2cChunkLimit(8192);
            byte[] big = Bytes.random(6, 128 * 1024);
            Completion w2 = s.io.write(1, base + 8, 256, big, true, DataMode.R2T);
            assertThat(w2.status()).as("128 KiB write in 8 KiB H2CData PDUs %s", w2).isEqualTo(NvmeStatus.SUCCESS);
            assertThat(w2.h2cPdus()).as("H2CData PDUs").isGreaterThanOrEqualTo(16);
            assertThat(s.io.read(1, base + 8, 256, 512).data()).isEqualTo(big);
        }
    }

    @Test
    void shouldServe32PipelinedWritesThenReadsOnBothNamespaces() throws Exception {
        try (Session s = new Session()) {
            for (TestTarget.Namespace ns : List.of(TestTarget.A1, TestTarget.A2)) {
                int[] sizes = {4096, 16384, 65536, 131072};
                long base = region(ns, 32L * 131072);
                SplittableRandom random = new SplittableRandom(ns.nsid());
                List<long[]> extents = new ArrayList<>();
                List<byte[]> payloads = new ArrayList<>();
                List<Integer> cids = new ArrayList<>();
                for (int i = 0; i < 32; i++) {
                    int size = sizes[random.nextInt(sizes.length)];
                    // slot i holds 128 KiB; the write lands anywhere block-aligned inside it
                    long slot = base + (long) i * 131072 / ns.blockSize();
                    long slba = slot + random.nextInt((131072 - size) / ns.blockSize() + 1);
                    byte[] data = Bytes.random(random.nextLong(), size);
                    extents.add(new long[] {slba, size / ns.blockSize()});
                    payloads.add(data);
                    cids.add(s.io.submit(RawNvmeTcpHost.writeCommand(ns.nsid(), slba, size / ns.blockSize(), data, i % 3 == 0)));
                }
                List<Completion> writes = s.io.awaitAll(cids);
                for (int i = 0; i < 32; i++) {
                    assertThat(writes.get(i).status()).as("pipelined write %d NSID %d: %s", i, ns.nsid(), writes.get(i))
                        .isEqualTo(NvmeStatus.SUCCESS);
                    assertThat(writes.get(i).cid()).isEqualTo(cids.get(i));
                }
                cids.clear();
                for (long[] e : extents) {
                    cids.add(s.io.submit(RawNvmeTcpHost.readCommand(ns.nsid(), e[0], (int) e[1], ns.blockSize(), false)));
                }
                List<Completion> reads = s.io.awaitAll(cids);
                for (int i = 0; i < 32; i++) {
                    assertThat(reads.get(i).status()).as("pipelined read %d NSID %d: %s", i, ns.nsid(), reads.get(i))
                        .isEqualTo(NvmeStatus.SUCCESS);
                    assertThat(reads.get(i).data()).as("pipelined read-back %d NSID %d SLBA %d", i, ns.nsid(), extents.get(i)[0])
                        .isEqualTo(payloads.get(i));
                }
            }
        }
    }

    @Test
    void shouldServePipelinedWritesSentInH2cDataSmallerThanMaxH2cData() throws Exception {
        long base = region(TestTarget.A1, 32L * 131072);
        try (Session s = new Session(0, true, true)) {
            s.io.h2cChunkLimit(4096);
            List<Integer> cids = new ArrayList<>();
            List<byte[]> payloads = new ArrayList<>();
            for (int i = 0; i < 32; i++) {
                byte[] data = Bytes.random(500 + i, 131072);
                payloads.add(data);
                cids.add(s.io.submit(RawNvmeTcpHost.writeCommand(1, base + 256L * i, 256, data, false).mode(DataMode.R2T)));
            }
            for (Completion c : s.io.awaitAll(cids)) {
                assertThat(c.status()).as("pipelined write in 4 KiB H2CData PDUs %s", c).isEqualTo(NvmeStatus.SUCCESS);
                assertThat(c.h2cPdus()).as("H2CData PDUs for 128 KiB").isEqualTo(32);
            }
            for (int i = 0; i < 32; i++) {
                Completion r = s.io.read(1, base + 256L * i, 256, 512);
                assertThat(r.data()).as("read-back of pipelined write %d", i).isEqualTo(payloads.get(i));
            }
        }
    }

    @Test
    void shouldAdvanceSqhdByOnePerCommandWithSqFlowControl() throws Exception {
        long base = region(TestTarget.A1, 1 << 20);
        try (Session s = new Session()) {
            int previous = -1;
            for (int i = 0; i < Sessions.IO_SQSIZE + 10; i++) {
                Completion c = i % 2 == 0 ? s.io.flush(1) : s.io.read(1, base, 1, 512);
                assertThat(c.status()).as("command %d %s", i, c).isEqualTo(NvmeStatus.SUCCESS);
                assertThat(c.sqhd()).as("SQHD within the %d-entry queue", Sessions.IO_SQSIZE + 1)
                    .isLessThanOrEqualTo(Sessions.IO_SQSIZE);
                if (previous >= 0) {
                    assertThat(c.sqhd()).as("SQHD after command %d (previous %d)", i, previous)
                        .isEqualTo((previous + 1) % (Sessions.IO_SQSIZE + 1));
                }
                previous = c.sqhd();
            }
        }
    }

    @Test
    void shouldReportSqhdFfffAndMayUseC2hSuccessWithSqFlowControlDisabled() throws Exception {
        long base = region(TestTarget.A1, 1 << 20);
        try (Session s = new Session(RawNvmeTcpHost.CATTR_DISABLE_SQ_FLOW_CONTROL, false, false)) {
            byte[] data = Bytes.random(77, 65536);
            Completion w = s.io.write(1, base, 128, data, false);
            assertThat(w.status()).as("write %s", w).isEqualTo(NvmeStatus.SUCCESS);
            assertThat(w.sqhd()).as("SQHD with CATTR bit 2").isEqualTo(0xFFFF);
            Completion r = s.io.read(1, base, 128, 512);
            assertThat(r.status()).as("read %s", r).isEqualTo(NvmeStatus.SUCCESS);
            assertThat(r.sqhd()).as("SQHD with CATTR bit 2").isEqualTo(0xFFFF);
            assertThat(r.data()).isEqualTo(data);
            Completion f = s.io.flush(1);
            assertThat(f.sqhd()).as("SQHD of a CapsuleResp with CATTR bit 2").isEqualTo(0xFFFF);
        }
    }

    @Test
    void shouldFlushBothNamespaces() throws Exception {
        try (Session s = new Session()) {
            for (int nsid : new int[] {1, 2}) {
                Completion f = s.io.flush(nsid);
                assertThat(f.status()).as("Flush NSID %d %s", nsid, f).isEqualTo(NvmeStatus.SUCCESS);
            }
        }
    }

    @Test
    void shouldReadZerosAfterWriteZeroesAndKeepTheNeighbours() throws Exception {
        try (Session s = new Session()) {
            for (TestTarget.Namespace ns : List.of(TestTarget.A1, TestTarget.A2)) {
                long base = region(ns, 10L * ns.blockSize());
                byte[] data = Bytes.random(ns.nsid() + 40, 10 * ns.blockSize());
                assertThat(s.io.write(ns.nsid(), base, 10, data, false).status()).isEqualTo(NvmeStatus.SUCCESS);
                Completion wz = s.io.writeZeroes(ns.nsid(), base + 1, 8, false, false);
                assertThat(wz.status()).as("Write Zeroes NSID %d %s", ns.nsid(), wz).isEqualTo(NvmeStatus.SUCCESS);
                byte[] expected = data.clone();
                java.util.Arrays.fill(expected, ns.blockSize(), 9 * ns.blockSize(), (byte) 0);
                Completion r = s.io.read(ns.nsid(), base, 10, ns.blockSize());
                assertThat(r.status()).isEqualTo(NvmeStatus.SUCCESS);
                assertThat(r.data()).as("blocks 1-8 zero, blocks 0 and 9 kept, NSID %d", ns.nsid()).isEqualTo(expected);
            }
        }
    }

    @Test
    void shouldReadZerosAfterDeallocate() throws Exception {
        try (Session s = new Session()) {
            for (TestTarget.Namespace ns : List.of(TestTarget.A1, TestTarget.A2)) {
                long base = region(ns, 16L * ns.blockSize());
                byte[] data = Bytes.random(ns.nsid() + 50, 16 * ns.blockSize());
                assertThat(s.io.write(ns.nsid(), base, 16, data, false).status()).isEqualTo(NvmeStatus.SUCCESS);
                Completion dsm = s.io.datasetManagement(ns.nsid(), 1 << 2, new long[][] {{base, 16}});
                assertThat(dsm.status()).as("DSM deallocate NSID %d %s", ns.nsid(), dsm).isEqualTo(NvmeStatus.SUCCESS);
                Completion r = s.io.read(ns.nsid(), base, 16, ns.blockSize());
                assertThat(r.status()).isEqualTo(NvmeStatus.SUCCESS);
                assertThat(Bytes.allZero(r.data())).as("deallocated blocks read as zeros, NSID %d", ns.nsid()).isTrue();
            }
        }
    }

    @Test
    void shouldCompareEqualAndReportMiscompare() throws Exception {
        try (Session s = new Session()) {
            for (TestTarget.Namespace ns : List.of(TestTarget.A1, TestTarget.A2)) {
                long base = region(ns, 4L * ns.blockSize());
                byte[] data = Bytes.random(ns.nsid() + 60, 4 * ns.blockSize());
                assertThat(s.io.write(ns.nsid(), base, 4, data, false).status()).isEqualTo(NvmeStatus.SUCCESS);
                Completion same = s.io.compare(ns.nsid(), base, 4, data);
                assertThat(same.status()).as("Compare equal NSID %d %s", ns.nsid(), same).isEqualTo(NvmeStatus.SUCCESS);
                byte[] different = data.clone();
                different[different.length - 1] ^= 0x01;
                Completion miss = s.io.compare(ns.nsid(), base, 4, different);
                assertThat(NvmeStatus.code(miss.status())).as("Compare different NSID %d %s", ns.nsid(), miss)
                    .isEqualTo(NvmeStatus.COMPARE_FAILURE);
            }
        }
    }

    @Test
    void shouldCarryIoWithHeaderAndDataDigests() throws Exception {
        long base = region(TestTarget.A1, 1 << 20);
        try (Session s = new Session(0, true, true)) {
            assertThat(s.io.headerDigest()).as("header digest granted").isTrue();
            assertThat(s.io.dataDigest()).as("data digest granted").isTrue();
            int offset = 0;
            for (int size : new int[] {512, 16384, 65536, 262144}) {
                byte[] data = Bytes.random(size, size);
                long slba = base + offset / 512;
                Completion w = s.io.write(1, slba, size / 512, data, false);
                assertThat(w.status()).as("write %d bytes with digests %s", size, w).isEqualTo(NvmeStatus.SUCCESS);
                Completion r = s.io.read(1, slba, size / 512, 512);
                assertThat(r.status()).as("read %d bytes with digests %s", size, r).isEqualTo(NvmeStatus.SUCCESS);
                assertThat(r.data()).as("read-back %d bytes with digests", size).isEqualTo(data);
                offset += size;
            }
            Completion id = s.admin.identify(1, 0);
            assertThat(id.status()).as("Identify with digests on the admin queue").isEqualTo(NvmeStatus.SUCCESS);
        }
    }

    @Test
    void shouldServeAPipelineMixingReadsAndWritesOfOneMebibyte() throws Exception {
        long base = region(TestTarget.A1, 8L << 20);
        try (Session s = new Session()) {
            byte[][] data = new byte[4][];
            List<Integer> writes = new ArrayList<>();
            for (int i = 0; i < 4; i++) {
                data[i] = Bytes.random(900 + i, 1 << 20);
                writes.add(s.io.submit(RawNvmeTcpHost.writeCommand(1, base + i * 2048L, 2048, data[i], false)));
            }
            for (Completion c : s.io.awaitAll(writes)) {
                assertThat(c.status()).as("1 MiB write %s", c).isEqualTo(NvmeStatus.SUCCESS);
            }
            List<Integer> mixed = new ArrayList<>();
            for (int i = 0; i < 4; i++) {
                mixed.add(s.io.submit(RawNvmeTcpHost.readCommand(1, base + i * 2048L, 2048, 512, false)));
                mixed.add(s.io.submit(RawNvmeTcpHost.writeCommand(1, base + (4 + i) * 2048L, 2048, data[i], false)));
            }
            List<Completion> done = s.io.awaitAll(mixed);
            for (int i = 0; i < 4; i++) {
                assertThat(done.get(2 * i).status()).isEqualTo(NvmeStatus.SUCCESS);
                assertThat(done.get(2 * i).data()).as("1 MiB read %d in a mixed pipeline", i).isEqualTo(data[i]);
                assertThat(done.get(2 * i + 1).status()).isEqualTo(NvmeStatus.SUCCESS);
            }
            for (int i = 0; i < 4; i++) {
                assertThat(s.io.read(1, base + (4 + i) * 2048L, 2048, 512).data()).isEqualTo(data[i]);
            }
        }
    }
    /**
     * Reads of a RAM namespace are sent from its chunk memory, lent (not copied) when no data digest is asked for:
     * 48 pipelined reads of 4-128 KiB, several of the same bytes and all in one chunk, so that many sends share one
     * chunk view, come back as written; with data digests the same reads are copied and come back alike.
     */
    @Test
    void shouldSendPipelinedReadsFromLentChunkMemoryAndCopyThemWithDataDigest() throws Exception {
        TestTarget.Namespace ns = TestTarget.A1;
        long bytes = 1 << 20;
        long base = region(ns, 2 * bytes);
        long chunkAligned = ((base * ns.blockSize() + bytes - 1) & -bytes) / ns.blockSize(); // inside one 1 MiB step
        byte[] data = Bytes.random(4242, (int) bytes);
        var device = (io.nvmeof4j.target.backend.RamBlockDevice) target.device(ns);
        for (boolean digest : new boolean[] {false, true}) {
            try (Session s = new Session(0, digest, digest)) {
                assertThat(s.io.write(1, chunkAligned, (int) (bytes / 512), data, false).status())
                    .isEqualTo(NvmeStatus.SUCCESS);
                SplittableRandom random = new SplittableRandom(digest ? 2 : 1);
                int[] sizes = {4096, 16384, 65536, 131072};
                List<long[]> extents = new ArrayList<>();
                List<Integer> cids = new ArrayList<>();
                long lentBefore = device.lentReads();
                for (int i = 0; i < 48; i++) {
                    int size = i % 8 == 7 ? (int) extents.get(i - 1)[1] * 512 : sizes[random.nextInt(sizes.length)];
                    // every 8th: the same bytes as the read before, in flight together
                    long at = i % 8 == 7 ? extents.get(i - 1)[0] : random.nextInt((int) (bytes - size) / 512 + 1);
                    extents.add(new long[] {at, size / 512});
                    cids.add(s.io.submit(RawNvmeTcpHost.readCommand(1, chunkAligned + at, size / 512, 512, false)));
                }
                List<Completion> reads = s.io.awaitAll(cids);
                long lent = device.lentReads() - lentBefore;
                for (int i = 0; i < 48; i++) {
                    int from = (int) extents.get(i)[0] * 512;
                    int length = (int) extents.get(i)[1] * 512;
                    assertThat(reads.get(i).status()).as("read %d, digest %s: %s", i, digest, reads.get(i))
                        .isEqualTo(NvmeStatus.SUCCESS);
                    assertThat(reads.get(i).data()).as("read %d (%d bytes at %d), digest %s", i, length, from, digest)
                        .isEqualTo(java.util.Arrays.copyOfRange(data, from, from + length));
                }
                assertThat(lent).as("reads lent with data digest %s", digest).isEqualTo(digest ? 0 : 48);
            }
        }
    }
}
