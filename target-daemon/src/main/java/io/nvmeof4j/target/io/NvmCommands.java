package io.nvmeof4j.target.io;

import io.nvmeof4j.protocol.command.NvmeStatus;
import io.nvmeof4j.protocol.command.SubmissionQueueEntry;
import io.nvmeof4j.protocol.spi.Request;
import io.nvmeof4j.target.backend.BlockDevice;
import io.nvmeof4j.target.backend.BlockIo;
import io.nvmeof4j.target.model.Namespace;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * The NVM command set I/O commands (NVMe NVM Command Set 1.0, 3; wire reference 3): Flush, Write, Read, Compare,
 * Write Zeroes and Dataset Management, executed on a namespace's {@link BlockDevice}.
 *
 * <h2>Checks, in nvmet's order and with its statuses</h2>
 * <ol>
 *   <li>Unknown opcode → Invalid Command Opcode + DNR (0x001).</li>
 *   <li>Transfer length: Read/Write/Compare need exactly (NLB+1)&lt;&lt;LBADS bytes, Flush and Write Zeroes none
 *       ({@code nvmet_check_transfer_len}); Dataset Management at least (NR+1)×16 bytes
 *       ({@code nvmet_check_data_len_lte}: nvmet accepts a longer transfer since a Linux host sent one, see
 *       kernel commit "nvmet: fix dsm failure when payload does not match sgl descriptor"). Otherwise SGL Data
 *       Length Invalid + DNR (0x00F).</li>
 *   <li>LBA range: SLBA + NLB + 1 beyond NSZE (with unsigned overflow taken as beyond) → LBA Out of Range + DNR
 *       (0x080), the status the NVM command set specifies. (nvmet's file backend answers Capacity Exceeded and its
 *       block backend leaves the check to the block layer; SPDK answers LBA Out of Range.) Every DSM range is
 *       checked before any is deallocated, so a bad range changes nothing.</li>
 * </ol>
 * Field use: SLBA = CDW10–11, NLB = CDW12 bits 15:0 (0-based), FUA = CDW12 bit 30 (Write, Write Zeroes),
 * DEAC = CDW12 bit 25 (Write Zeroes may deallocate), DSM: NR = CDW10 bits 7:0 (0-based), AD = CDW11 bit 2; without
 * AD the ranges are hints and the command succeeds doing nothing. A miscompare completes with Compare Failure + DNR
 * (0x285): the same compare would fail again.
 *
 * <h2>Data path</h2>
 * Per queue slot, one {@link IoSlot} (created the first time the slot is seen and kept in
 * {@link Request#attachment()}) is the {@link BlockIo} submitted to the device; its completion completes the
 * request. The request's data buffer goes to the device as is: network and backend share one buffer. Compare
 * reads the device into a per-slot 64 KiB scratch buffer, chunk by chunk. Nothing is allocated per command once
 * a slot has been used; there are no locks. Multi-step commands (DSM ranges, compare chunks) advance in a loop
 * when the device completes inline, so a 256-range DSM on a RAM device does not recurse 256 deep.
 * <p>Thread-safe: one instance serves every queue of every reactor; all state lives in the slots.
 */
public final class NvmCommands implements NvmCommandExecutor {
    private static final Logger LOG = LoggerFactory.getLogger(NvmCommands.class);

    public static final int OPC_FLUSH = 0x00;
    public static final int OPC_WRITE = 0x01;
    public static final int OPC_READ = 0x02;
    public static final int OPC_COMPARE = 0x05;
    public static final int OPC_WRITE_ZEROES = 0x08;
    public static final int OPC_DATASET_MANAGEMENT = 0x09;

    /** CDW12: Force Unit Access. */
    public static final int CDW12_FUA = 1 << 30;
    /** CDW12 of Write Zeroes: Deallocate. */
    public static final int CDW12_DEAC = 1 << 25;
    public static final int CDW12_NLB_MASK = 0xFFFF;
    /** CDW11 of Dataset Management: Attribute – Deallocate. */
    public static final int CDW11_AD = 1 << 2;
    public static final int DSM_RANGE_LENGTH = 16;
    public static final int DSM_RANGE_LENGTH_OFFSET = 4;
    public static final int DSM_RANGE_SLBA_OFFSET = 8;
    public static final int COMPARE_CHUNK_SIZE = 64 * 1024;

    @Override
    public void execute(Request request, Namespace namespace) {
        IoSlot slot = slot(request);
        SubmissionQueueEntry sqe = request.command();
        int opcode = sqe.opcode();
        switch (opcode) {
            case OPC_READ:
            case OPC_WRITE:
            case OPC_COMPARE:
                readWriteCompare(slot, request, namespace, sqe, opcode);
                return;
            case OPC_FLUSH:
                if (request.dataLength() != 0) {
                    request.complete(NvmeStatus.SGL_DATA_LENGTH_INVALID | NvmeStatus.DNR);
                    return;
                }
                slot.submitSingle(request, namespace.device(), BlockIo.Op.FLUSH, 0, 0, null, false);
                return;
            case OPC_WRITE_ZEROES:
                writeZeroes(slot, request, namespace, sqe);
                return;
            case OPC_DATASET_MANAGEMENT:
                datasetManagement(slot, request, namespace, sqe);
                return;
            default:
                request.complete(NvmeStatus.INVALID_OPCODE | NvmeStatus.DNR);
        }
    }

    private static void readWriteCompare(IoSlot slot, Request request, Namespace namespace, SubmissionQueueEntry sqe,
                                         int opcode) {
        long slba = sqe.cdw10And11();
        int cdw12 = sqe.cdw12();
        long blocks = (cdw12 & CDW12_NLB_MASK) + 1L;
        int shift = namespace.blockSizeShift();
        long length = blocks << shift;
        if (request.dataLength() != length) {
            request.complete(NvmeStatus.SGL_DATA_LENGTH_INVALID | NvmeStatus.DNR);
            return;
        }
        if (!inRange(slba, blocks, namespace.blockCount())) {
            request.complete(NvmeStatus.LBA_OUT_OF_RANGE | NvmeStatus.DNR);
            return;
        }
        long offset = slba << shift;
        switch (opcode) {
            case OPC_READ:
                slot.submitSingle(request, namespace.device(), BlockIo.Op.READ, offset, length, request.data(), false);
                break;
            case OPC_WRITE:
                slot.submitSingle(request, namespace.device(), BlockIo.Op.WRITE, offset, length, request.data(),
                    (cdw12 & CDW12_FUA) != 0);
                break;
            default:
                slot.startCompare(request, namespace.device(), offset, (int) length);
        }
    }

    private static void writeZeroes(IoSlot slot, Request request, Namespace namespace, SubmissionQueueEntry sqe) {
        if (request.dataLength() != 0) {
            request.complete(NvmeStatus.SGL_DATA_LENGTH_INVALID | NvmeStatus.DNR);
            return;
        }
        long slba = sqe.cdw10And11();
        int cdw12 = sqe.cdw12();
        long blocks = (cdw12 & CDW12_NLB_MASK) + 1L;
        if (!inRange(slba, blocks, namespace.blockCount())) {
            request.complete(NvmeStatus.LBA_OUT_OF_RANGE | NvmeStatus.DNR);
            return;
        }
        int shift = namespace.blockSizeShift();
        boolean fua = (cdw12 & CDW12_FUA) != 0;
        // DEAC only permits deallocating: it is taken where deallocated blocks read as zeroes (DLFEAT says so) and no
        // FUA asks for durability the deallocate path does not give; otherwise the blocks are zeroed.
        BlockIo.Op op = (cdw12 & CDW12_DEAC) != 0 && !fua && namespace.device().deallocatedBlocksReadZeroes()
            ? BlockIo.Op.DEALLOCATE : BlockIo.Op.WRITE_ZEROES;
        slot.submitSingle(request, namespace.device(), op, slba << shift, blocks << shift, null, fua);
    }

    private static void datasetManagement(IoSlot slot, Request request, Namespace namespace, SubmissionQueueEntry sqe) {
        int rangeCount = (sqe.cdw10() & 0xFF) + 1;
        if (request.dataLength() < rangeCount * DSM_RANGE_LENGTH || request.data() == null) {
            request.complete(NvmeStatus.SGL_DATA_LENGTH_INVALID | NvmeStatus.DNR);
            return;
        }
        if ((sqe.cdw11() & CDW11_AD) == 0) {
            // Integral dataset read/write hints only: nothing to do for these devices.
            request.complete(NvmeStatus.SUCCESS);
            return;
        }
        ByteBuffer ranges = request.data();
        int base = ranges.position();
        long capacity = namespace.blockCount();
        for (int i = 0; i < rangeCount; i++) {
            int at = base + i * DSM_RANGE_LENGTH;
            long blocks = Integer.toUnsignedLong(intLe(ranges, at + DSM_RANGE_LENGTH_OFFSET));
            long slba = longLe(ranges, at + DSM_RANGE_SLBA_OFFSET);
            if (blocks != 0 && !inRange(slba, blocks, capacity)) {
                request.complete(NvmeStatus.LBA_OUT_OF_RANGE | NvmeStatus.DNR);
                return;
            }
        }
        slot.startDeallocate(request, namespace.device(), ranges, base, rangeCount, namespace.blockSizeShift());
    }

    /** SLBA + blocks ≤ capacity, SLBA read as unsigned 64-bit. */
    static boolean inRange(long slba, long blocks, long capacityBlocks) {
        return Long.compareUnsigned(slba, capacityBlocks) < 0 && blocks <= capacityBlocks - slba;
    }

    private static int intLe(ByteBuffer buffer, int index) {
        int v = buffer.getInt(index);
        return buffer.order() == ByteOrder.LITTLE_ENDIAN ? v : Integer.reverseBytes(v);
    }

    private static long longLe(ByteBuffer buffer, int index) {
        long v = buffer.getLong(index);
        return buffer.order() == ByteOrder.LITTLE_ENDIAN ? v : Long.reverseBytes(v);
    }

    /** The slot's I/O context, created the first time the slot carries an I/O command. */
    private static IoSlot slot(Request request) {
        Object attachment = request.attachment();
        if (attachment instanceof IoSlot) {
            return (IoSlot) attachment;
        }
        IoSlot slot = new IoSlot();
        request.attach(slot);
        return slot;
    }

    /**
     * A queue slot's I/O context: the {@link BlockIo} handed to the device, plus the cursors of multi-step
     * commands. Used by one command at a time (the slot's), completed from any thread.
     */
    static final class IoSlot extends BlockIo {
        private static final VarHandle STATE;

        static {
            try {
                STATE = MethodHandles.lookup().findVarHandle(IoSlot.class, "state", int.class);
            } catch (ReflectiveOperationException e) {
                throw new ExceptionInInitializerError(e);
            }
        }

        private static final int KIND_SINGLE = 0;
        private static final int KIND_DEALLOCATE = 1;
        private static final int KIND_COMPARE = 2;

        /** Multi-step progress: no step outstanding; a step submitted; a step completed inside its submit. */
        private static final int IDLE = 0;
        private static final int SUBMITTING = 1;
        private static final int COMPLETED_INLINE = 2;
        /** afterStep(): keep going. */
        private static final int CONTINUE = -1;

        private Request request;
        private BlockDevice device;
        private int kind;
        @SuppressWarnings("unused") // through STATE
        private volatile int state;
        private int inlineStatus;
        private boolean started;

        // Dataset Management
        private ByteBuffer ranges;
        private int rangeBase;
        private int rangeCount;
        private int nextRange;
        private int blockShift;

        // Compare
        private ByteBuffer scratch;
        private long compareOffset;
        private int compareLength;
        private int compared;
        private int chunkLength;

        void submitSingle(Request request, BlockDevice device, Op op, long offset, long length, ByteBuffer buffer,
                          boolean fua) {
            this.request = request;
            this.device = device;
            this.kind = KIND_SINGLE;
            prepare(op, offset, length, buffer, fua);
            device.submit(this);
        }

        void startDeallocate(Request request, BlockDevice device, ByteBuffer ranges, int base, int count, int shift) {
            this.request = request;
            this.device = device;
            this.kind = KIND_DEALLOCATE;
            this.ranges = ranges;
            this.rangeBase = base;
            this.rangeCount = count;
            this.nextRange = 0;
            this.blockShift = shift;
            this.started = false;
            drive(NvmeStatus.SUCCESS);
        }

        void startCompare(Request request, BlockDevice device, long offset, int length) {
            this.request = request;
            this.device = device;
            this.kind = KIND_COMPARE;
            if (scratch == null) {
                // Page-aligned: an O_DIRECT device (io_uring) refuses a buffer at an unaligned address.
                scratch = ByteBuffer.allocateDirect(COMPARE_CHUNK_SIZE + 4096).alignedSlice(4096);
            }
            // Compared a long at a time: both buffers must read bytes into longs the same way.
            scratch.order(request.data().order());
            this.compareOffset = offset;
            this.compareLength = length;
            this.compared = 0;
            this.chunkLength = 0;
            this.started = false;
            drive(NvmeStatus.SUCCESS);
        }

        @Override
        public void complete(int nvmeStatus) {
            if (kind == KIND_SINGLE) {
                finish(nvmeStatus);
                return;
            }
            inlineStatus = nvmeStatus;
            if (STATE.compareAndSet(this, SUBMITTING, COMPLETED_INLINE)) {
                return; // the submitting thread is still inside submit() and carries on from there
            }
            drive(nvmeStatus);
        }

        /** Runs steps until one completes asynchronously or the command is done. */
        private void drive(int stepStatus) {
            int status = stepStatus;
            while (true) {
                int result = afterStep(status);
                if (result != CONTINUE) {
                    finish(result);
                    return;
                }
                prepareStep();
                state = SUBMITTING;
                device.submit(this);
                if (STATE.compareAndSet(this, SUBMITTING, IDLE)) {
                    return; // asynchronous: complete() resumes on the device's thread
                }
                state = IDLE;
                status = inlineStatus;
            }
        }

        private int afterStep(int status) {
            if (!started) {
                started = true;
            } else if (status != NvmeStatus.SUCCESS) {
                return status;
            } else if (kind == KIND_COMPARE) {
                if (!chunkMatches()) {
                    return NvmeStatus.COMPARE_FAILURE | NvmeStatus.DNR;
                }
                compared += chunkLength;
            }
            if (kind == KIND_COMPARE) {
                return compared < compareLength ? CONTINUE : NvmeStatus.SUCCESS;
            }
            while (nextRange < rangeCount && rangeBlocks(nextRange) == 0) {
                nextRange++;
            }
            return nextRange < rangeCount ? CONTINUE : NvmeStatus.SUCCESS;
        }

        private void prepareStep() {
            if (kind == KIND_COMPARE) {
                chunkLength = Math.min(scratch.capacity(), compareLength - compared);
                scratch.clear().limit(chunkLength);
                prepare(Op.READ, compareOffset + compared, chunkLength, scratch, false);
            } else {
                int at = rangeBase + nextRange * DSM_RANGE_LENGTH;
                long slba = longLe(ranges, at + DSM_RANGE_SLBA_OFFSET);
                prepare(Op.DEALLOCATE, slba << blockShift, rangeBlocks(nextRange) << blockShift, null, false);
                nextRange++;
            }
        }

        private long rangeBlocks(int index) {
            return Integer.toUnsignedLong(intLe(ranges, rangeBase + index * DSM_RANGE_LENGTH + DSM_RANGE_LENGTH_OFFSET));
        }

        private boolean chunkMatches() {
            ByteBuffer data = request.data();
            int dataIndex = data.position() + compared;
            int n = chunkLength;
            int i = 0;
            for (; i + 8 <= n; i += 8) {
                if (scratch.getLong(i) != data.getLong(dataIndex + i)) {
                    return false;
                }
            }
            for (; i < n; i++) {
                if (scratch.get(i) != data.get(dataIndex + i)) {
                    return false;
                }
            }
            return true;
        }

        private void finish(int status) {
            Request done = request;
            request = null;
            device = null;
            ranges = null;
            done.complete(status);
        }
    }
}
