package io.nvmeof4j.target.io;

import io.nvmeof4j.protocol.io.NvmOpcode;
import io.nvmeof4j.protocol.command.NvmeStatus;
import io.nvmeof4j.target.backend.BlockDevice;
import io.nvmeof4j.target.backend.BlockIo;
import io.nvmeof4j.target.backend.RamBlockDevice;
import io.nvmeof4j.target.model.Namespace;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

import static io.nvmeof4j.target.io.NvmCommands.CDW11_AD;
import static io.nvmeof4j.target.io.NvmCommands.CDW12_DEAC;
import static io.nvmeof4j.target.io.NvmCommands.CDW12_FUA;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * NVM I/O commands over a RAM device, through a fake transport request. Statuses are asserted as the numbers
 * the spec and nvmet use (wire reference 1.2), not through the constants under test: 0x00F SGL Data Length
 * Invalid, 0x080 LBA Out of Range, 0x001 Invalid Opcode, 0x285 Compare Failure, each with DNR (0x8000).
 */
class NvmCommandsTest {
    private static final int DNR = 0x8000;
    private static final int SGL_DATA_LENGTH_INVALID_DNR = 0x00F | DNR;
    private static final int LBA_OUT_OF_RANGE_DNR = 0x080 | DNR;
    private static final int INVALID_OPCODE_DNR = 0x001 | DNR;
    private static final int COMPARE_FAILURE_DNR = 0x285 | DNR;
    private static final long SIZE = 8L << 20;

    private final NvmCommands nvm = new NvmCommands();
    private final FakeRequest request = new FakeRequest();
    private final List<AutoCloseable> toClose = new ArrayList<>();

    @AfterEach
    void closeDevices() throws Exception {
        for (AutoCloseable c : toClose) {
            c.close();
        }
    }

    private RecordingDevice device(int blockSize, boolean async) {
        RecordingDevice d = new RecordingDevice(new RamBlockDevice("test", SIZE, blockSize), async);
        toClose.add(d);
        return d;
    }

    private static Namespace namespace(BlockDevice device) {
        return new Namespace(1, device, UUID.randomUUID(), new byte[16]);
    }

    private int execute(Namespace ns) {
        nvm.execute(request, ns, request.io);
        return request.awaitStatus();
    }

    private int write(Namespace ns, long slba, ByteBuffer data, int cdw12Flags) {
        int blocks = data.limit() / ns.blockSize();
        request.reset(NvmOpcode.WRITE).slba(slba).cdw(12, (blocks - 1) | cdw12Flags).data(data);
        return execute(ns);
    }

    private ByteBuffer read(Namespace ns, long slba, int blocks) {
        request.reset(NvmOpcode.READ).slba(slba).cdw(12, blocks - 1).data(blocks * ns.blockSize());
        assertThat(execute(ns)).as("read status").isZero();
        return request.data();
    }

    private static ByteBuffer pattern(int length, long seed) {
        ByteBuffer b = ByteBuffer.allocateDirect(length).order(ByteOrder.LITTLE_ENDIAN);
        Random r = new Random(seed);
        for (int i = 0; i < length; i++) {
            b.put(i, (byte) (r.nextInt(255) + 1)); // never 0: zeroed ranges stand out
        }
        return b;
    }

    private static boolean allZero(ByteBuffer b, int from, int length) {
        for (int i = from; i < from + length; i++) {
            if (b.get(i) != 0) {
                return false;
            }
        }
        return true;
    }

    private static boolean sameBytes(ByteBuffer a, int aFrom, ByteBuffer b, int bFrom, int length) {
        for (int i = 0; i < length; i++) {
            if (a.get(aFrom + i) != b.get(bFrom + i)) {
                return false;
            }
        }
        return true;
    }

    /** DSM ranges: {slba, blocks} pairs, 16 bytes each (context attributes 0). */
    private static ByteBuffer ranges(long... slbaAndBlocks) {
        ByteBuffer b = ByteBuffer.allocateDirect(slbaAndBlocks.length / 2 * 16).order(ByteOrder.LITTLE_ENDIAN);
        for (int i = 0; i < slbaAndBlocks.length; i += 2) {
            int at = i / 2 * 16;
            b.putInt(at, 0);
            b.putInt(at + 4, (int) slbaAndBlocks[i + 1]);
            b.putLong(at + 8, slbaAndBlocks[i]);
        }
        return b;
    }

    // ------------------------------------------------------------------------------------- read, write, flush

    @ParameterizedTest
    @ValueSource(ints = {512, 4096})
    void shouldReadBackWhatWasWritten(int blockSize) {
        Namespace ns = namespace(device(blockSize, false));
        ByteBuffer data = pattern(5 * blockSize, blockSize);
        assertThat(write(ns, 3, data, 0)).isZero();
        ByteBuffer back = read(ns, 3, 5);
        assertThat(sameBytes(back, 0, data, 0, 5 * blockSize)).isTrue();
        assertThat(back.position()).as("the transport sends from position 0").isZero();
        assertThat(back.limit()).isEqualTo(5 * blockSize);

        ByteBuffer before = read(ns, 2, 1);
        assertThat(allZero(before, 0, blockSize)).as("block before the write untouched").isTrue();
        ByteBuffer last = read(ns, SIZE / blockSize - 1, 1);
        assertThat(allZero(last, 0, blockSize)).as("last block readable, never written").isTrue();
    }

    @ParameterizedTest
    @ValueSource(ints = {512, 4096})
    void shouldAddressByLogicalBlockOfTheNamespaceBlockSize(int blockSize) {
        RecordingDevice device = device(blockSize, false);
        Namespace ns = namespace(device);
        assertThat(write(ns, 10, pattern(2 * blockSize, 1), 0)).isZero();
        assertThat(device.ops).containsExactly(new Op(BlockIo.Op.WRITE, 10L * blockSize, 2L * blockSize, false));
    }

    @Test
    void shouldPassForceUnitAccessToTheDevice() {
        RecordingDevice device = device(512, false);
        Namespace ns = namespace(device);
        assertThat(write(ns, 0, pattern(512, 2), CDW12_FUA)).isZero();
        assertThat(write(ns, 1, pattern(512, 3), 0)).isZero();
        assertThat(device.ops).extracting(Op::fua).containsExactly(true, false);
        assertThat(sameBytes(read(ns, 0, 1), 0, pattern(512, 2), 0, 512)).isTrue();
    }

    @Test
    void shouldFlush() {
        RecordingDevice device = device(4096, false);
        Namespace ns = namespace(device);
        request.reset(NvmOpcode.FLUSH);
        assertThat(execute(ns)).isZero();
        assertThat(device.ops).extracting(Op::op).containsExactly(BlockIo.Op.FLUSH);
    }

    @Test
    void shouldRejectFlushCarryingData() {
        RecordingDevice device = device(4096, false);
        request.reset(NvmOpcode.FLUSH).data(4096);
        assertThat(execute(namespace(device))).isEqualTo(SGL_DATA_LENGTH_INVALID_DNR);
        assertThat(device.ops).isEmpty();
    }

    // ------------------------------------------------------------------------------------- write zeroes

    @ParameterizedTest
    @ValueSource(ints = {512, 4096})
    void shouldReadZerosAfterWriteZeroes(int blockSize) {
        RecordingDevice device = device(blockSize, false);
        Namespace ns = namespace(device);
        ByteBuffer data = pattern(8 * blockSize, 5);
        assertThat(write(ns, 0, data, 0)).isZero();

        request.reset(NvmOpcode.WRITE_ZEROES).slba(2).cdw(12, 3 | CDW12_FUA); // blocks 2..5
        assertThat(execute(ns)).isZero();
        assertThat(device.ops.get(1)).isEqualTo(new Op(BlockIo.Op.WRITE_ZEROES, 2L * blockSize, 4L * blockSize, true));

        ByteBuffer back = read(ns, 0, 8);
        assertThat(sameBytes(back, 0, data, 0, 2 * blockSize)).as("blocks 0-1 kept").isTrue();
        assertThat(allZero(back, 2 * blockSize, 4 * blockSize)).as("blocks 2-5 zero").isTrue();
        assertThat(sameBytes(back, 6 * blockSize, data, 6 * blockSize, 2 * blockSize)).as("blocks 6-7 kept").isTrue();
    }

    @Test
    void shouldDeallocateOnWriteZeroesWithDeac() {
        RecordingDevice device = device(512, false);
        Namespace ns = namespace(device);
        assertThat(write(ns, 0, pattern(2048, 6), 0)).isZero();
        request.reset(NvmOpcode.WRITE_ZEROES).slba(0).cdw(12, 3 | CDW12_DEAC);
        assertThat(execute(ns)).isZero();
        assertThat(device.ops.get(1).op()).isEqualTo(BlockIo.Op.DEALLOCATE);
        assertThat(allZero(read(ns, 0, 4), 0, 2048)).isTrue();
    }

    @Test
    void shouldZeroNotDeallocateWhereDeallocatedBlocksNeedNotReadZeroesOrFuaIsAsked() {
        RecordingDevice device = device(512, false);
        Namespace ns = namespace(device);
        device.zeroesAfterDeallocate = false; // a block device: discard need not zero
        request.reset(NvmOpcode.WRITE_ZEROES).slba(0).cdw(12, 3 | CDW12_DEAC);
        assertThat(execute(ns)).isZero();
        assertThat(device.ops.get(0).op()).isEqualTo(BlockIo.Op.WRITE_ZEROES);

        device.zeroesAfterDeallocate = true; // deallocating would do, but FUA wants durability the deallocate lacks
        request.reset(NvmOpcode.WRITE_ZEROES).slba(0).cdw(12, 3 | CDW12_DEAC | NvmCommands.CDW12_FUA);
        assertThat(execute(ns)).isZero();
        assertThat(device.ops.get(1).op()).isEqualTo(BlockIo.Op.WRITE_ZEROES);
        assertThat(device.ops.get(1).fua()).isTrue();
    }

    @Test
    void shouldRejectWriteZeroesCarryingData() {
        RecordingDevice device = device(512, false);
        request.reset(NvmOpcode.WRITE_ZEROES).slba(0).cdw(12, 0).data(512);
        assertThat(execute(namespace(device))).isEqualTo(SGL_DATA_LENGTH_INVALID_DNR);
        assertThat(device.ops).isEmpty();
    }

    @Test
    void shouldRejectWriteZeroesBeyondTheEnd() {
        RecordingDevice device = device(512, false);
        long blocks = SIZE / 512;
        request.reset(NvmOpcode.WRITE_ZEROES).slba(blocks - 1).cdw(12, 1);
        assertThat(execute(namespace(device))).isEqualTo(LBA_OUT_OF_RANGE_DNR);
        assertThat(device.ops).isEmpty();
    }

    // ------------------------------------------------------------------------------------- dataset management

    @ParameterizedTest
    @ValueSource(booleans = {false, true})
    void shouldDeallocateEveryRangeAndSkipEmptyOnes(boolean asyncDevice) {
        RecordingDevice device = device(4096, asyncDevice);
        Namespace ns = namespace(device);
        ByteBuffer data = pattern(16 * 4096, 7);
        assertThat(write(ns, 0, data, 0)).isZero();

        ByteBuffer r = ranges(1, 2, 6, 0, 8, 1, 12, 4); // blocks 1-2, (empty), 8, 12-15
        request.reset(NvmOpcode.DATASET_MANAGEMENT).cdw(10, 3).cdw(11, CDW11_AD).data(r);
        assertThat(execute(ns)).isZero();
        assertThat(device.ops.subList(1, device.ops.size())).containsExactly(
            new Op(BlockIo.Op.DEALLOCATE, 4096, 2 * 4096, false),
            new Op(BlockIo.Op.DEALLOCATE, 8 * 4096, 4096, false),
            new Op(BlockIo.Op.DEALLOCATE, 12 * 4096, 4 * 4096, false));

        ByteBuffer back = read(ns, 0, 16);
        for (int block = 0; block < 16; block++) {
            boolean deallocated = block == 1 || block == 2 || block == 8 || block >= 12;
            if (deallocated) {
                assertThat(allZero(back, block * 4096, 4096)).as("block %d reads zeros", block).isTrue();
            } else {
                assertThat(sameBytes(back, block * 4096, data, block * 4096, 4096)).as("block %d kept", block).isTrue();
            }
        }
    }

    @Test
    void shouldDeallocate256RangesOnAnInlineDeviceWithoutRecursingDeep() {
        RecordingDevice device = device(512, false);
        long[] pairs = new long[512];
        for (int i = 0; i < 256; i++) {
            pairs[2 * i] = i * 4L;
            pairs[2 * i + 1] = 1;
        }
        request.reset(NvmOpcode.DATASET_MANAGEMENT).cdw(10, 255).cdw(11, CDW11_AD).data(ranges(pairs));
        assertThat(execute(namespace(device))).isZero();
        assertThat(device.ops).hasSize(256);
    }

    @Test
    void shouldTreatDsmWithoutDeallocateAsAHint() {
        RecordingDevice device = device(512, false);
        Namespace ns = namespace(device);
        assertThat(write(ns, 0, pattern(512, 8), 0)).isZero();
        request.reset(NvmOpcode.DATASET_MANAGEMENT).cdw(10, 0).cdw(11, 0b011).data(ranges(0, 1)); // IDR | IDW
        assertThat(execute(ns)).isZero();
        assertThat(device.ops).hasSize(1);
        assertThat(sameBytes(read(ns, 0, 1), 0, pattern(512, 8), 0, 512)).isTrue();
    }

    @Test
    void shouldRequireDsmDataOfAtLeastNrPlusOneRanges() {
        RecordingDevice device = device(512, false);
        Namespace ns = namespace(device);
        // NR = 2 (three ranges, 48 bytes) with only 32 bytes of data
        request.reset(NvmOpcode.DATASET_MANAGEMENT).cdw(10, 2).cdw(11, CDW11_AD).data(ranges(0, 1, 4, 1));
        assertThat(execute(ns)).isEqualTo(SGL_DATA_LENGTH_INVALID_DNR);
        assertThat(device.ops).isEmpty();

        request.reset(NvmOpcode.DATASET_MANAGEMENT).cdw(10, 1).cdw(11, CDW11_AD).data(ranges(0, 1, 4, 1));
        assertThat(execute(ns)).as("exactly (NR+1)*16 bytes").isZero();

        // nvmet_check_data_len_lte(): a longer transfer is accepted; only the first NR+1 ranges count.
        ByteBuffer longer = ranges(0, 1, 8, 1, 16, 1);
        request.reset(NvmOpcode.DATASET_MANAGEMENT).cdw(10, 1).cdw(11, CDW11_AD).data(longer);
        assertThat(execute(ns)).isZero();
        assertThat(device.ops).hasSize(4);
    }

    @Test
    void shouldRejectDsmRangeBeyondTheEndAndDeallocateNothing() {
        RecordingDevice device = device(512, false);
        Namespace ns = namespace(device);
        ByteBuffer data = pattern(1024, 9);
        assertThat(write(ns, 0, data, 0)).isZero();
        long blocks = SIZE / 512;
        request.reset(NvmOpcode.DATASET_MANAGEMENT).cdw(10, 1).cdw(11, CDW11_AD).data(ranges(0, 2, blocks - 1, 2));
        assertThat(execute(ns)).isEqualTo(LBA_OUT_OF_RANGE_DNR);
        assertThat(device.ops).as("the valid first range was not applied either").hasSize(1);
        assertThat(sameBytes(read(ns, 0, 2), 0, data, 0, 1024)).isTrue();
    }

    @Test
    void shouldRejectDsmRangeWhoseEndOverflows() {
        RecordingDevice device = device(512, false);
        request.reset(NvmOpcode.DATASET_MANAGEMENT).cdw(10, 0).cdw(11, CDW11_AD).data(ranges(-1L, 2));
        assertThat(execute(namespace(device))).isEqualTo(LBA_OUT_OF_RANGE_DNR);
        assertThat(device.ops).isEmpty();
    }

    // ------------------------------------------------------------------------------------- compare

    @ParameterizedTest
    @ValueSource(booleans = {false, true})
    void shouldCompareEqualDataAsSuccessAcrossScratchChunks(boolean asyncDevice) {
        Namespace ns = namespace(device(4096, asyncDevice));
        int length = NvmCommands.COMPARE_CHUNK_SIZE * 2 + 4096; // three device reads
        ByteBuffer data = pattern(length, 10);
        assertThat(write(ns, 4, data, 0)).isZero();
        request.reset(NvmOpcode.COMPARE).slba(4).cdw(12, length / 4096 - 1).data(data);
        assertThat(execute(ns)).isZero();
    }

    @ParameterizedTest
    @ValueSource(booleans = {false, true})
    void shouldFailCompareOnAMismatchInTheLastChunk(boolean asyncDevice) {
        Namespace ns = namespace(device(512, asyncDevice));
        int length = NvmCommands.COMPARE_CHUNK_SIZE + 1024;
        ByteBuffer data = pattern(length, 11);
        assertThat(write(ns, 0, data, 0)).isZero();
        ByteBuffer other = pattern(length, 11);
        other.put(length - 3, (byte) (other.get(length - 3) ^ 0x40));
        request.reset(NvmOpcode.COMPARE).slba(0).cdw(12, length / 512 - 1).data(other);
        assertThat(execute(ns)).isEqualTo(COMPARE_FAILURE_DNR);
    }

    @Test
    void shouldFailCompareAgainstUnwrittenBlocks() {
        Namespace ns = namespace(device(512, false));
        request.reset(NvmOpcode.COMPARE).slba(100).cdw(12, 0).data(pattern(512, 12));
        assertThat(execute(ns)).isEqualTo(COMPARE_FAILURE_DNR);
    }

    // ------------------------------------------------------------------------------------- errors

    @ParameterizedTest
    @ValueSource(ints = {NvmOpcode.READ, NvmOpcode.WRITE, NvmOpcode.COMPARE})
    void shouldRejectTransferLengthOtherThanBlocksTimesBlockSize(int opcode) {
        RecordingDevice device = device(4096, false);
        Namespace ns = namespace(device);
        // NLB 7 (8 blocks) is 32 KiB on a 4 KiB namespace; 8 x 512 is what a host assuming 512 B would send.
        request.reset(opcode).slba(0).cdw(12, 7).data(8 * 512);
        assertThat(execute(ns)).isEqualTo(SGL_DATA_LENGTH_INVALID_DNR);
        request.reset(opcode).slba(0).cdw(12, 0).data(4096 + 512);
        assertThat(execute(ns)).isEqualTo(SGL_DATA_LENGTH_INVALID_DNR);
        request.reset(opcode).slba(0).cdw(12, 0);
        assertThat(execute(ns)).as("no data at all").isEqualTo(SGL_DATA_LENGTH_INVALID_DNR);
        assertThat(device.ops).isEmpty();
    }

    @ParameterizedTest
    @ValueSource(ints = {512, 4096})
    void shouldRejectLbaRangesBeyondTheEnd(int blockSize) {
        RecordingDevice device = device(blockSize, false);
        Namespace ns = namespace(device);
        long blocks = SIZE / blockSize;
        request.reset(NvmOpcode.READ).slba(blocks).cdw(12, 0).data(blockSize);
        assertThat(execute(ns)).as("SLBA = NSZE").isEqualTo(LBA_OUT_OF_RANGE_DNR);
        request.reset(NvmOpcode.WRITE).slba(blocks - 1).cdw(12, 1).data(2 * blockSize);
        assertThat(execute(ns)).as("last block + 1").isEqualTo(LBA_OUT_OF_RANGE_DNR);
        request.reset(NvmOpcode.READ).slba(-2L).cdw(12, 3).data(4 * blockSize);
        assertThat(execute(ns)).as("SLBA + NLB wraps around 2^64").isEqualTo(LBA_OUT_OF_RANGE_DNR);
        request.reset(NvmOpcode.READ).slba(Long.MAX_VALUE).cdw(12, 0).data(blockSize);
        assertThat(execute(ns)).as("huge SLBA").isEqualTo(LBA_OUT_OF_RANGE_DNR);
        assertThat(device.ops).isEmpty();

        request.reset(NvmOpcode.READ).slba(blocks - 2).cdw(12, 1).data(2 * blockSize);
        assertThat(execute(ns)).as("the last two blocks are in range").isZero();
    }

    @Test
    void shouldCheckTransferLengthBeforeLbaRangeAsNvmetDoes() {
        Namespace ns = namespace(device(512, false));
        request.reset(NvmOpcode.READ).slba(SIZE).cdw(12, 0).data(1024);
        assertThat(execute(ns)).isEqualTo(SGL_DATA_LENGTH_INVALID_DNR);
    }

    @ParameterizedTest
    @ValueSource(ints = {0x04, 0x0D, 0x11, 0x15, 0x7E, 0x80, 0xFF})
    void shouldRejectUnknownOpcodes(int opcode) {
        RecordingDevice device = device(512, false);
        request.reset(opcode).data(512);
        assertThat(execute(namespace(device))).isEqualTo(INVALID_OPCODE_DNR);
        assertThat(device.ops).isEmpty();
    }

    @Test
    void shouldUseTheStatusValuesOfTheSpec() {
        // The executor's constants are the wire values nvmet and the spec use.
        assertThat(NvmeStatus.SGL_DATA_LENGTH_INVALID | NvmeStatus.DNR).isEqualTo(SGL_DATA_LENGTH_INVALID_DNR);
        assertThat(NvmeStatus.LBA_OUT_OF_RANGE | NvmeStatus.DNR).isEqualTo(LBA_OUT_OF_RANGE_DNR);
        assertThat(NvmeStatus.INVALID_OPCODE | NvmeStatus.DNR).isEqualTo(INVALID_OPCODE_DNR);
        assertThat(NvmeStatus.COMPARE_FAILURE | NvmeStatus.DNR).isEqualTo(COMPARE_FAILURE_DNR);
    }

    @Test
    void shouldPassDeviceErrorsThrough() {
        Namespace ns = namespace(device(512, false));
        ns.device().close();
        request.reset(NvmOpcode.READ).slba(0).cdw(12, 0).data(512);
        assertThat(execute(ns)).as("closed device: Namespace Not Ready, retryable").isEqualTo(0x082);
    }

    // ------------------------------------------------------------------------------------- test doubles

    record Op(BlockIo.Op op, long offset, long length, boolean fua) {
    }

    /**
     * Wraps a device, records every I/O submitted, and optionally completes each one later on another thread
     * (as a file device does) instead of inline.
     */
    static final class RecordingDevice implements BlockDevice {
        final List<Op> ops = Collections.synchronizedList(new ArrayList<>());
        private final BlockDevice delegate;
        private final ExecutorService completer;
        /** What the device says of deallocated blocks (a block device's discard need not zero). */
        boolean zeroesAfterDeallocate = true;

        RecordingDevice(BlockDevice delegate, boolean async) {
            this.delegate = delegate;
            this.completer = async ? Executors.newSingleThreadExecutor(r -> {
                Thread t = new Thread(r, "test-device-completer");
                t.setDaemon(true);
                return t;
            }) : null;
        }

        @Override
        public String description() {
            return "recording " + delegate.description();
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
            return delegate.hasVolatileWriteCache();
        }

        @Override
        public boolean deallocatedBlocksReadZeroes() {
            return zeroesAfterDeallocate;
        }

        @Override
        public void submit(BlockIo io) {
            ops.add(new Op(io.op(), io.offset(), io.length(), io.forceUnitAccess()));
            if (completer == null) {
                delegate.submit(io);
            } else {
                completer.execute(() -> delegate.submit(io));
            }
        }

        @Override
        public void close() {
            if (completer != null) {
                completer.shutdown();
                try {
                    completer.awaitTermination(5, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            delegate.close();
        }
    }
}
