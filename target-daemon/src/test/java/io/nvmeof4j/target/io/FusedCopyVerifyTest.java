package io.nvmeof4j.target.io;

import io.nvmeof4j.protocol.io.NvmOpcode;
import io.nvmeof4j.target.backend.BlockDevice;
import io.nvmeof4j.target.backend.BlockIo;
import io.nvmeof4j.target.backend.RamBlockDevice;
import io.nvmeof4j.target.io.NvmCommandsTest.RecordingDevice;
import io.nvmeof4j.target.model.Namespace;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Predicate;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Fused Compare and Write, Copy and Verify over RAM devices, through fake transport requests. Statuses are the
 * spec's numbers: 0x285 Compare Failure, 0x009 Aborted – Failed Fused Command, 0x002 Invalid Field, 0x080 LBA Out
 * of Range, 0x00F SGL Data Length Invalid, 0x183 Command Size Limit Exceeded; DNR is 0x8000.
 */
class FusedCopyVerifyTest {
    private static final int DNR = 0x8000;
    private static final long SIZE = 8L << 20;

    private final NvmCommands nvm = new NvmCommands();
    private final List<AutoCloseable> toClose = new ArrayList<>();

    @AfterEach
    void closeDevices() throws Exception {
        for (AutoCloseable c : toClose) {
            c.close();
        }
    }

    private Namespace namespace(int blockSize, boolean async) {
        RecordingDevice d = new RecordingDevice(new RamBlockDevice("test", SIZE, blockSize), async);
        toClose.add(d);
        return new Namespace(1, d, UUID.randomUUID(), new byte[16]);
    }

    private static ByteBuffer filled(int length, int value) {
        ByteBuffer b = ByteBuffer.allocateDirect(length).order(ByteOrder.LITTLE_ENDIAN);
        for (int i = 0; i < length; i++) {
            b.put(i, (byte) (value + i % 7));
        }
        return b;
    }

    private int write(Namespace ns, long slba, ByteBuffer data) {
        FakeRequest r = new FakeRequest().reset(NvmOpcode.WRITE).slba(slba).cdw(12, data.limit() / ns.blockSize() - 1)
            .data(data);
        nvm.execute(r, ns, r.io);
        return r.awaitStatus();
    }

    private ByteBuffer read(Namespace ns, long slba, int blocks) {
        FakeRequest r = new FakeRequest().reset(NvmOpcode.READ).slba(slba).cdw(12, blocks - 1).data(blocks * ns.blockSize());
        nvm.execute(r, ns, r.io);
        assertThat(r.awaitStatus()).as("read status").isZero();
        return r.data();
    }

    private static FakeRequest compareHalf(long slba, int blocks, ByteBuffer expected) {
        return new FakeRequest().reset(NvmOpcode.COMPARE).slba(slba).cdw(12, blocks - 1).data(expected);
    }

    private static FakeRequest writeHalf(long slba, int blocks, ByteBuffer data) {
        return new FakeRequest().reset(NvmOpcode.WRITE).slba(slba).cdw(12, blocks - 1).data(data);
    }

    private static boolean same(ByteBuffer a, ByteBuffer b, int length) {
        for (int i = 0; i < length; i++) {
            if (a.get(i) != b.get(i)) {
                return false;
            }
        }
        return true;
    }

    // ------------------------------------------------------------------------------------- fused compare and write

    @ParameterizedTest
    @CsvSource({"512,false", "512,true", "4096,false", "4096,true"})
    void shouldWriteWhenTheCompareMatches(int blockSize, boolean async) {
        Namespace ns = namespace(blockSize, async);
        ByteBuffer a = filled(2 * blockSize, 1);
        ByteBuffer b = filled(2 * blockSize, 50);
        assertThat(write(ns, 10, a)).isZero();

        FakeRequest cmp = compareHalf(10, 2, a);
        FakeRequest wr = writeHalf(10, 2, b);
        nvm.executeFused(cmp, wr, ns, cmp.io);
        assertThat(cmp.awaitStatus()).isZero();
        assertThat(wr.awaitStatus()).isZero();
        assertThat(same(read(ns, 10, 2), b, 2 * blockSize)).as("the write landed").isTrue();
        assertThat(ns.rangeLock().isLocked()).as("range released").isFalse();
    }

    @ParameterizedTest
    @ValueSource(booleans = {false, true})
    void shouldAbortTheWriteOnAMiscompareAndLeaveTheRange(boolean async) {
        Namespace ns = namespace(512, async);
        ByteBuffer a = filled(512, 1);
        assertThat(write(ns, 3, a)).isZero();

        FakeRequest cmp = compareHalf(3, 1, filled(512, 2));
        FakeRequest wr = writeHalf(3, 1, filled(512, 90));
        nvm.executeFused(cmp, wr, ns, cmp.io);
        assertThat(cmp.awaitStatus()).isEqualTo(0x285 | DNR);
        assertThat(wr.awaitStatus()).isEqualTo(0x009);
        assertThat(same(read(ns, 3, 1), a, 512)).as("range unchanged").isTrue();
        assertThat(ns.rangeLock().isLocked()).isFalse();
    }

    @Test
    void shouldAnswerInvalidFieldForBothWhenTheRangesDiffer() {
        Namespace ns = namespace(512, false);
        ByteBuffer a = filled(512, 1);
        assertThat(write(ns, 3, a)).isZero();
        FakeRequest cmp = compareHalf(3, 1, a);
        FakeRequest wr = writeHalf(4, 1, filled(512, 7));
        nvm.executeFused(cmp, wr, ns, cmp.io);
        assertThat(cmp.awaitStatus()).isEqualTo(0x002 | DNR);
        assertThat(wr.awaitStatus()).isEqualTo(0x002 | DNR);

        FakeRequest cmp2 = compareHalf(3, 1, a);
        FakeRequest wr2 = writeHalf(3, 2, filled(1024, 7));
        nvm.executeFused(cmp2, wr2, ns, cmp2.io);
        assertThat(cmp2.awaitStatus()).isEqualTo(0x002 | DNR);
        assertThat(wr2.awaitStatus()).isEqualTo(0x002 | DNR);
        assertThat(same(read(ns, 3, 1), a, 512)).isTrue();
        assertThat(read(ns, 4, 1).get(0)).as("block 4 untouched").isZero();
    }

    @Test
    void shouldAbortTheOtherHalfWhenOneFailsItsChecks() {
        Namespace ns = namespace(512, false);
        long last = SIZE / 512 - 1;
        FakeRequest cmp = compareHalf(last, 2, filled(1024, 1));
        FakeRequest wr = writeHalf(last, 2, filled(1024, 2));
        nvm.executeFused(cmp, wr, ns, cmp.io);
        assertThat(cmp.awaitStatus()).isEqualTo(0x080 | DNR);
        assertThat(wr.awaitStatus()).isEqualTo(0x009);

        FakeRequest cmp2 = compareHalf(0, 1, filled(512, 0));
        FakeRequest wr2 = writeHalf(0, 1, filled(1024, 2)); // two blocks of data for one block
        nvm.executeFused(cmp2, wr2, ns, cmp2.io);
        assertThat(wr2.awaitStatus()).isEqualTo(0x00F | DNR);
        assertThat(cmp2.awaitStatus()).isEqualTo(0x009);
        assertThat(ns.rangeLock().isLocked()).isFalse();
    }

    @Test
    void shouldHoldAnOverlappingWriteUntilThePairEnds() throws Exception {
        GateDevice device = new GateDevice(new RamBlockDevice("gate", SIZE, 512));
        toClose.add(device);
        Namespace ns = new Namespace(1, device, UUID.randomUUID(), new byte[16]);
        ByteBuffer a = filled(512, 1);
        assertThat(write(ns, 8, a)).isZero();

        device.holdIf(io -> io.op() == BlockIo.Op.READ); // the pair's compare read stays in the device
        FakeRequest cmp = compareHalf(8, 1, a);
        FakeRequest wr = writeHalf(8, 1, filled(512, 30));
        nvm.executeFused(cmp, wr, ns, cmp.io);
        assertThat(device.held()).as("compare read submitted").isEqualTo(1);

        ByteBuffer plain = filled(512, 60);
        FakeRequest overlapping = new FakeRequest().reset(NvmOpcode.WRITE).slba(8).cdw(12, 0).data(plain);
        nvm.execute(overlapping, ns, overlapping.io);
        FakeRequest elsewhere = new FakeRequest().reset(NvmOpcode.WRITE).slba(100).cdw(12, 0).data(filled(512, 9));
        nvm.execute(elsewhere, ns, elsewhere.io);
        assertThat(elsewhere.awaitStatus()).as("a write to another range is not held").isZero();
        assertThat(overlapping.completions()).as("the overlapping write waits for the pair").isZero();
        assertThat(device.writesAt(8 * 512L)).as("nothing written to the pair's range yet but the setup").isEqualTo(1);

        device.holdIf(io -> false);
        device.release();
        assertThat(cmp.awaitStatus()).isZero();
        assertThat(wr.awaitStatus()).isZero();
        assertThat(overlapping.awaitStatus()).isZero();
        assertThat(device.writeOrderAt(8 * 512L)).as("pair's write first, then the deferred one")
            .containsExactly((byte) 1, (byte) 30, (byte) 60);
        assertThat(same(read(ns, 8, 1), plain, 512)).isTrue();
        assertThat(ns.rangeLock().isLocked()).isFalse();
    }

    @Test
    void shouldWaitForAWriteInFlightBeforeComparing() throws Exception {
        GateDevice device = new GateDevice(new RamBlockDevice("gate", SIZE, 512));
        toClose.add(device);
        Namespace ns = new Namespace(1, device, UUID.randomUUID(), new byte[16]);
        ByteBuffer a = filled(512, 1);
        assertThat(write(ns, 8, a)).isZero();

        device.holdIf(io -> io.op() == BlockIo.Op.WRITE);
        ByteBuffer b = filled(512, 40);
        FakeRequest inFlight = new FakeRequest().reset(NvmOpcode.WRITE).slba(8).cdw(12, 0).data(b);
        nvm.execute(inFlight, ns, inFlight.io);
        assertThat(device.held()).isEqualTo(1);

        // The host expects b (the write already submitted): the compare must see it, not a.
        FakeRequest cmp = compareHalf(8, 1, b);
        FakeRequest wr = writeHalf(8, 1, filled(512, 70));
        nvm.executeFused(cmp, wr, ns, cmp.io);
        assertThat(device.reads()).as("no compare read while the earlier write is in flight").isZero();

        device.holdIf(io -> false);
        device.release();
        assertThat(inFlight.awaitStatus()).isZero();
        assertThat(cmp.awaitStatus()).isZero();
        assertThat(wr.awaitStatus()).isZero();
        assertThat(read(ns, 8, 1).get(0)).isEqualTo((byte) 70);
    }

    @Test
    void shouldRunPairsOnOneRangeOneAfterTheOtherInArrivalOrder() {
        GateDevice device = new GateDevice(new RamBlockDevice("gate", SIZE, 512));
        toClose.add(device);
        Namespace ns = new Namespace(1, device, UUID.randomUUID(), new byte[16]);
        ByteBuffer v0 = filled(512, 0);
        assertThat(write(ns, 5, v0)).isZero();
        device.holdIf(io -> io.op() == BlockIo.Op.READ);
        // Both expect v0: the first wins, the second must then miscompare (it may not run in between).
        ByteBuffer v1 = filled(512, 11);
        ByteBuffer v2 = filled(512, 22);
        FakeRequest cmp1 = compareHalf(5, 1, v0);
        FakeRequest wr1 = writeHalf(5, 1, v1);
        FakeRequest cmp2 = compareHalf(5, 1, v0);
        FakeRequest wr2 = writeHalf(5, 1, v2);
        nvm.executeFused(cmp1, wr1, ns, cmp1.io);
        nvm.executeFused(cmp2, wr2, ns, cmp2.io);
        assertThat(device.held()).as("only the first pair reads").isEqualTo(1);
        device.holdIf(io -> false);
        device.release();
        assertThat(cmp1.awaitStatus()).isZero();
        assertThat(wr1.awaitStatus()).isZero();
        assertThat(cmp2.awaitStatus()).isEqualTo(0x285 | DNR);
        assertThat(wr2.awaitStatus()).isEqualTo(0x009);
        assertThat(same(read(ns, 5, 1), v1, 512)).isTrue();
    }

    // ------------------------------------------------------------------------------------------------------ copy

    /** Source Range Entries format 0: {slba, blocks} pairs, 32 bytes each. */
    private static ByteBuffer copyRanges(long... slbaAndBlocks) {
        ByteBuffer b = ByteBuffer.allocateDirect(slbaAndBlocks.length / 2 * 32).order(ByteOrder.LITTLE_ENDIAN);
        for (int i = 0; i < slbaAndBlocks.length; i += 2) {
            int at = i / 2 * 32;
            b.putLong(at + 8, slbaAndBlocks[i]);
            b.putShort(at + 16, (short) (slbaAndBlocks[i + 1] - 1));
        }
        return b;
    }

    private int copy(Namespace ns, long sdlba, int cdw12Extra, ByteBuffer ranges) {
        int count = ranges.limit() / 32;
        FakeRequest r = new FakeRequest().reset(NvmOpcode.COPY).slba(sdlba).cdw(12, (count - 1) | cdw12Extra).data(ranges);
        nvm.execute(r, ns, r.io);
        return r.awaitStatus();
    }

    @ParameterizedTest
    @CsvSource({"512,false", "512,true", "4096,false", "4096,true"})
    void shouldCopyRangesInOrderToTheDestination(int blockSize, boolean async) {
        Namespace ns = namespace(blockSize, async);
        ByteBuffer x = filled(2 * blockSize, 3);
        ByteBuffer y = filled(blockSize, 80);
        assertThat(write(ns, 0, x)).isZero();
        assertThat(write(ns, 9, y)).isZero();

        assertThat(copy(ns, 20, 0, copyRanges(9, 1, 0, 2))).isZero();
        ByteBuffer back = read(ns, 20, 3);
        for (int i = 0; i < blockSize; i++) {
            assertThat(back.get(i)).isEqualTo(y.get(i));
        }
        for (int i = 0; i < 2 * blockSize; i++) {
            assertThat(back.get(blockSize + i)).isEqualTo(x.get(i));
        }
        assertThat(read(ns, 23, 1).get(0)).as("nothing past the destination").isZero();
    }

    @Test
    void shouldCopyAnOverlappingSourceAsItWasBeforeTheCommand() {
        Namespace ns = namespace(512, false);
        ByteBuffer x = filled(4 * 512, 5);
        assertThat(write(ns, 10, x)).isZero();
        // Source 10..13 onto 12..15: a block-by-block forward copy would read its own output.
        assertThat(copy(ns, 12, 0, copyRanges(10, 4))).isZero();
        ByteBuffer back = read(ns, 12, 4);
        assertThat(same(back, x, 4 * 512)).isTrue();
    }

    @Test
    void shouldPassFuaToTheDestinationWrite() {
        Namespace ns = namespace(512, false);
        RecordingDevice d = (RecordingDevice) ns.device();
        assertThat(copy(ns, 40, 1 << 30, copyRanges(0, 1))).isZero();
        NvmCommandsTest.Op last = d.ops.get(d.ops.size() - 1);
        assertThat(last.op()).isEqualTo(BlockIo.Op.WRITE);
        assertThat(last.fua()).isTrue();
        assertThat(last.offset()).isEqualTo(40 * 512L);
    }

    @ParameterizedTest
    @ValueSource(ints = {512, 4096})
    void shouldRefuseCopiesAboveTheLimits(int blockSize) {
        Namespace ns = namespace(blockSize, false);
        int mcl = 65536 / blockSize;
        ByteBuffer marker = filled(blockSize, 9);
        assertThat(write(ns, 500, marker)).isZero();
        // One range above MSSRL.
        assertThat(copy(ns, 500, 0, copyRanges(0, mcl + 1))).isEqualTo(0x183 | DNR);
        // Ranges each within MSSRL, together above MCL.
        assertThat(copy(ns, 500, 0, copyRanges(0, mcl, mcl, 1))).isEqualTo(0x183 | DNR);
        // 129 ranges: MSRC is 127 (0-based).
        long[] many = new long[129 * 2];
        for (int i = 0; i < 129; i++) {
            many[2 * i] = i;
            many[2 * i + 1] = 1;
        }
        assertThat(copy(ns, 500, 0, copyRanges(many))).isEqualTo(0x183 | DNR);
        // 128 single blocks fit when MCL allows them (512-byte blocks: MCL 128).
        if (blockSize == 512) {
            long[] max = new long[128 * 2];
            for (int i = 0; i < 128; i++) {
                max[2 * i] = i;
                max[2 * i + 1] = 1;
            }
            assertThat(copy(ns, 1000, 0, copyRanges(max))).isZero();
        }
        assertThat(same(read(ns, 500, 1), marker, blockSize)).as("refused copies wrote nothing").isTrue();
    }

    @Test
    void shouldRefuseOutOfRangeSourcesAndDestinationsAndOtherFormats() {
        Namespace ns = namespace(512, false);
        long blocks = SIZE / 512;
        assertThat(copy(ns, 0, 0, copyRanges(blocks - 1, 2))).isEqualTo(0x080 | DNR);
        assertThat(copy(ns, blocks - 1, 0, copyRanges(0, 2))).isEqualTo(0x080 | DNR);
        assertThat(copy(ns, 0, 0, copyRanges(-1L, 1))).as("SLBA read as unsigned").isEqualTo(0x080 | DNR);
        assertThat(copy(ns, 0, 1 << 8, copyRanges(0, 1))).as("descriptor format 1").isEqualTo(0x002 | DNR);
        // NR says two ranges, the data holds one.
        FakeRequest r = new FakeRequest().reset(NvmOpcode.COPY).slba(0).cdw(12, 1).data(copyRanges(0, 1));
        nvm.execute(r, ns, r.io);
        assertThat(r.awaitStatus()).isEqualTo(0x00F | DNR);
    }

    // ---------------------------------------------------------------------------------------------------- verify

    @ParameterizedTest
    @ValueSource(booleans = {false, true})
    void shouldVerifyARangeWithoutReturningData(boolean async) {
        Namespace ns = namespace(4096, async);
        RecordingDevice d = (RecordingDevice) ns.device();
        // 40 blocks of 4 KiB: more than one 64 KiB chunk.
        FakeRequest r = new FakeRequest().reset(NvmOpcode.VERIFY).slba(7).cdw(12, 39);
        nvm.execute(r, ns, r.io);
        assertThat(r.awaitStatus()).isZero();
        long bytesRead = d.ops.stream().filter(o -> o.op() == BlockIo.Op.READ).mapToLong(NvmCommandsTest.Op::length)
            .sum();
        assertThat(bytesRead).as("the whole range was read").isEqualTo(40 * 4096L);

        FakeRequest out = new FakeRequest().reset(NvmOpcode.VERIFY).slba(SIZE / 4096 - 1).cdw(12, 1);
        nvm.execute(out, ns, out.io);
        assertThat(out.awaitStatus()).isEqualTo(0x080 | DNR);
        FakeRequest withData = new FakeRequest().reset(NvmOpcode.VERIFY).slba(0).cdw(12, 0).data(4096);
        nvm.execute(withData, ns, withData.io);
        assertThat(withData.awaitStatus()).as("Verify transfers no data").isEqualTo(0x00F | DNR);
    }

    /** A RAM device that can hold chosen I/O until released, and records what it wrote where. */
    static final class GateDevice implements BlockDevice {
        private final BlockDevice delegate;
        private final List<BlockIo> held = new CopyOnWriteArrayList<>();
        private final List<long[]> writes = new CopyOnWriteArrayList<>();
        private volatile Predicate<BlockIo> hold = io -> false;
        private volatile int reads;

        GateDevice(BlockDevice delegate) {
            this.delegate = delegate;
        }

        void holdIf(Predicate<BlockIo> predicate) {
            hold = predicate;
        }

        int held() {
            return held.size();
        }

        int reads() {
            return reads;
        }

        /** Releases what is held, in order (completing on this thread, as an inline device would). */
        void release() {
            while (!held.isEmpty()) {
                BlockIo io = held.remove(0);
                pass(io);
            }
        }

        long writesAt(long offset) {
            return writes.stream().filter(w -> w[0] == offset).count();
        }

        List<Byte> writeOrderAt(long offset) {
            List<Byte> firstBytes = new ArrayList<>();
            for (long[] w : writes) {
                if (w[0] == offset) {
                    firstBytes.add((byte) w[1]);
                }
            }
            return firstBytes;
        }

        private void pass(BlockIo io) {
            if (io.op() == BlockIo.Op.WRITE) {
                writes.add(new long[] {io.offset(), io.buffer().get(io.buffer().position())});
            } else if (io.op() == BlockIo.Op.READ) {
                reads++;
            }
            delegate.submit(io);
        }

        @Override
        public void submit(BlockIo io) {
            if (hold.test(io)) {
                held.add(io);
                return;
            }
            pass(io);
        }

        @Override
        public String description() {
            return "gate " + delegate.description();
        }

        @Override
        public int blockSize() {
            return delegate.blockSize();
        }

        @Override
        public long blockCount() {
            return delegate.blockCount();
        }

        @Override
        public boolean hasVolatileWriteCache() {
            return false;
        }

        @Override
        public void close() {
            delegate.close();
        }
    }
}
