package io.nvmeof4j.target.io;

import io.nvmeof4j.protocol.io.NvmOpcode;
import io.nvmeof4j.protocol.command.NvmeStatus;
import io.nvmeof4j.protocol.command.SubmissionQueueEntry;
import io.nvmeof4j.protocol.spi.Request;
import io.nvmeof4j.protocol.spi.TransportQueue;
import io.nvmeof4j.target.backend.BdevChannels;
import io.nvmeof4j.target.backend.BlockDevice;
import io.nvmeof4j.target.backend.BlockIo;
import io.nvmeof4j.target.backend.QosBudget;
import io.nvmeof4j.target.backend.QosWaits;
import io.nvmeof4j.target.model.Namespace;
import io.nvmeof4j.target.reactor.Reactor;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.function.Predicate;

/**
 * The NVM command set I/O commands (NVMe NVM Command Set 1.0, 3; wire reference 3): Flush, Write, Read, Compare,
 * Write Zeroes, Dataset Management, Verify, Copy and the fused Compare and Write, executed on a namespace's
 * {@link BlockDevice}.
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
 * <h2>Verify (0Ch) and Copy (19h)</h2>
 * Verify reads the range from the device (chunk by chunk into the slot's scratch buffer) and returns no data; a
 * read error is its status. Copy takes Source Range Entries format 0 (CDW12 bits 11:8 = 0, else Invalid Field):
 * at most {@link #COPY_MAX_RANGES} ranges (MSRC + 1), each at most {@link #copyMaxBlocks MSSRL} blocks, all together
 * at most {@link #copyMaxBlocks MCL} blocks, otherwise Command Size Limit Exceeded + DNR (0x183); a source or the
 * destination beyond NSZE is LBA Out of Range + DNR. Every source range is read into the scratch buffer before the
 * destination is written, so a source overlapping the destination copies the data as it was before the command
 * (the spec leaves overlap to the host; QEMU's device behaves the same way, SPDK hands the copy to its bdev).
 * CDW12 bit 30 (FUA) makes the destination write durable before completion.
 *
 * <h2>Fused Compare and Write (NVMe Base 2.0, 3.4.2; NVM Command Set 1.0, 3.2.1)</h2>
 * The controller layer pairs the halves ({@code FusedPairs}, behind the command entry) and hands both here. Both
 * must name the same SLBA and NLB (else Invalid Field + DNR for both, as the spec says); a half failing its own
 * checks gets its status and the other Aborted – Failed Fused Command (0x009). The pair then takes its range in the namespace's
 * {@link LbaRangeLock}, compares, and writes only on a match: a miscompare answers the Compare with 0x285 + DNR and
 * the Write with 0x009, and the range is unchanged. Writes from any queue to the range wait for the pair; the
 * pair waits for writes already in flight.
 *
 * <h2>Data path</h2>
 * Per queue slot, one {@link IoContext} (the command layer's per-slot context holds it and passes it with every
 * command of the slot) is the {@link BlockIo} submitted to the device; its completion completes the request. Every command that writes (Write, Write Zeroes, deallocate, Copy) is counted in the namespace's
 * {@link LbaRangeLock} (two uncontended atomic adds while no fused pair is active). The request's data buffer goes to the device as is: network and backend share one buffer. Compare
 * reads the device into a per-slot 64 KiB scratch buffer, chunk by chunk. Nothing is allocated per command once
 * a slot has been used; there are no locks. A namespace with QoS limits ({@link QosBudget}) may hold a Read or
 * Write (or a Compare, Verify or Copy step) on its reactor until the next timeslice; it is submitted then, never failed. Multi-step commands (DSM ranges, compare chunks) advance in a loop
 * when the device completes inline, so a 256-range DSM on a RAM device does not recurse 256 deep.
 * <p>Thread-safe: one instance serves every queue of every reactor; all state lives in the slots.
 */
public final class NvmCommands implements NvmCommandExecutor {
    static final Logger LOG = LoggerFactory.getLogger(NvmCommands.class);

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

    /** Copy CDW12 bits 7:0: Number of Ranges, 0-based. */
    public static final int COPY_CDW12_NR_MASK = 0xFF;
    /** Copy CDW12 bits 11:8: Descriptor Format; only format 0 is served (OCFS bit 0). */
    public static final int COPY_CDW12_DESFMT_SHIFT = 8;
    public static final int COPY_CDW12_DESFMT_MASK = 0xF;
    /** Source Range Entry format 0: 32 bytes, SLBA at 8 (8 bytes), NLB at 16 (2 bytes, 0-based). */
    public static final int COPY_RANGE_LENGTH = 32;
    public static final int COPY_RANGE_SLBA_OFFSET = 8;
    public static final int COPY_RANGE_NLB_OFFSET = 16;
    /** MSRC + 1: the source ranges one Copy may carry (nvme-cli sends at most 128 of format 0). */
    public static final int COPY_MAX_RANGES = 128;
    /** A Copy is staged whole in the slot's scratch buffer: MCL and MSSRL are this many bytes in blocks. */
    public static final int COPY_MAX_BYTES = COMPARE_CHUNK_SIZE;

    /** MCL and MSSRL in blocks of {@code 1 << blockShift} bytes. */
    public static int copyMaxBlocks(int blockShift) {
        return COPY_MAX_BYTES >>> blockShift;
    }

    @Override
    public void execute(Request request, Namespace namespace, IoContext slot) {
        slot.begin(request, namespace);
        dispatch(slot, request, namespace);
    }

    /** Runs a command; also where a deferred write starts again (its slot already counted in flight). */
    static void dispatch(IoContext slot, Request request, Namespace namespace) {
        SubmissionQueueEntry sqe = request.command();
        int opcode = sqe.opcode();
        switch (opcode) {
            case NvmOpcode.READ:
            case NvmOpcode.WRITE:
            case NvmOpcode.COMPARE:
                readWriteCompare(slot, request, namespace, sqe, opcode);
                return;
            case NvmOpcode.FLUSH:
                if (request.dataLength() != 0) {
                    request.complete(NvmeStatus.SGL_DATA_LENGTH_INVALID | NvmeStatus.DNR);
                    return;
                }
                slot.submitSingle(request, namespace.device(), BlockIo.Op.FLUSH, 0, 0, null, false);
                return;
            case NvmOpcode.WRITE_ZEROES:
                writeZeroes(slot, request, namespace, sqe);
                return;
            case NvmOpcode.DATASET_MANAGEMENT:
                datasetManagement(slot, request, namespace, sqe);
                return;
            case NvmOpcode.VERIFY:
                verify(slot, request, namespace, sqe);
                return;
            case NvmOpcode.COPY:
                copy(slot, request, namespace, sqe);
                return;
            default:
                request.complete(NvmeStatus.INVALID_OPCODE | NvmeStatus.DNR);
        }
    }

    @Override
    public void executeFused(Request compare, Request write, Namespace namespace, IoContext slot) {
        SubmissionQueueEntry c = compare.command();
        SubmissionQueueEntry w = write.command();
        long slba = c.cdw10And11();
        int nlb = c.cdw12() & CDW12_NLB_MASK;
        if (slba != w.cdw10And11() || nlb != (w.cdw12() & CDW12_NLB_MASK)) {
            // NVMe Base 2.0, 3.4.2: the LBA ranges of a fused pair shall match, else Invalid Field for both.
            compare.complete(NvmeStatus.INVALID_FIELD | NvmeStatus.DNR);
            write.complete(NvmeStatus.INVALID_FIELD | NvmeStatus.DNR);
            return;
        }
        long blocks = nlb + 1L;
        int shift = namespace.blockSizeShift();
        long length = blocks << shift;
        if (compare.dataLength() != length) {
            compare.complete(NvmeStatus.SGL_DATA_LENGTH_INVALID | NvmeStatus.DNR);
            write.complete(NvmeStatus.ABORTED_FAILED_FUSED);
            return;
        }
        if (write.dataLength() != length) {
            write.complete(NvmeStatus.SGL_DATA_LENGTH_INVALID | NvmeStatus.DNR);
            compare.complete(NvmeStatus.ABORTED_FAILED_FUSED);
            return;
        }
        if (!inRange(slba, blocks, namespace.blockCount())) {
            compare.complete(NvmeStatus.LBA_OUT_OF_RANGE | NvmeStatus.DNR);
            write.complete(NvmeStatus.ABORTED_FAILED_FUSED);
            return;
        }
        slot.begin(compare, namespace);
        slot.startFused(compare, write, namespace, slba, blocks, (w.cdw12() & CDW12_FUA) != 0);
    }

    private static void readWriteCompare(IoContext slot, Request request, Namespace namespace, SubmissionQueueEntry sqe,
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
            case NvmOpcode.READ:
                slot.submitSingle(request, namespace.device(), BlockIo.Op.READ, offset, length, request.data(), false);
                break;
            case NvmOpcode.WRITE:
                if (!slot.claimWrite(namespace, slba, slba + blocks)) {
                    return; // deferred behind a fused pair on an overlapping range
                }
                slot.submitSingle(request, namespace.device(), BlockIo.Op.WRITE, offset, length, request.data(),
                    (cdw12 & CDW12_FUA) != 0);
                break;
            default:
                slot.startRead(IoContext.KIND_COMPARE, request, namespace.device(), offset, (int) length);
        }
    }

    private static void writeZeroes(IoContext slot, Request request, Namespace namespace, SubmissionQueueEntry sqe) {
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
        if (!slot.claimWrite(namespace, slba, slba + blocks)) {
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

    private static void datasetManagement(IoContext slot, Request request, Namespace namespace, SubmissionQueueEntry sqe) {
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
        long lowest = Long.MAX_VALUE;
        long highest = 0;
        for (int i = 0; i < rangeCount; i++) {
            int at = base + i * DSM_RANGE_LENGTH;
            long blocks = Integer.toUnsignedLong(intLe(ranges, at + DSM_RANGE_LENGTH_OFFSET));
            long slba = longLe(ranges, at + DSM_RANGE_SLBA_OFFSET);
            if (blocks != 0 && !inRange(slba, blocks, capacity)) {
                request.complete(NvmeStatus.LBA_OUT_OF_RANGE | NvmeStatus.DNR);
                return;
            }
            if (blocks != 0) {
                lowest = Math.min(lowest, slba);
                highest = Math.max(highest, slba + blocks);
            }
        }
        // One claim from the lowest to the highest block: wider than the ranges, only ever checked while a pair runs.
        if (lowest < highest && !slot.claimWrite(namespace, lowest, highest)) {
            return;
        }
        slot.startDeallocate(request, namespace.device(), ranges, base, rangeCount, namespace.blockSizeShift());
    }

    private static void verify(IoContext slot, Request request, Namespace namespace, SubmissionQueueEntry sqe) {
        if (request.dataLength() != 0) {
            request.complete(NvmeStatus.SGL_DATA_LENGTH_INVALID | NvmeStatus.DNR);
            return;
        }
        long slba = sqe.cdw10And11();
        long blocks = (sqe.cdw12() & CDW12_NLB_MASK) + 1L;
        if (!inRange(slba, blocks, namespace.blockCount())) {
            request.complete(NvmeStatus.LBA_OUT_OF_RANGE | NvmeStatus.DNR);
            return;
        }
        int shift = namespace.blockSizeShift();
        slot.startRead(IoContext.KIND_VERIFY, request, namespace.device(), slba << shift, (int) (blocks << shift));
    }

    private static void copy(IoContext slot, Request request, Namespace namespace, SubmissionQueueEntry sqe) {
        int cdw12 = sqe.cdw12();
        if (((cdw12 >>> COPY_CDW12_DESFMT_SHIFT) & COPY_CDW12_DESFMT_MASK) != 0) {
            request.complete(NvmeStatus.INVALID_FIELD | NvmeStatus.DNR);
            return;
        }
        int rangeCount = (cdw12 & COPY_CDW12_NR_MASK) + 1;
        if (request.dataLength() < rangeCount * COPY_RANGE_LENGTH || request.data() == null) {
            request.complete(NvmeStatus.SGL_DATA_LENGTH_INVALID | NvmeStatus.DNR);
            return;
        }
        if (rangeCount > COPY_MAX_RANGES) {
            request.complete(NvmeStatus.COMMAND_SIZE_LIMIT_EXCEEDED | NvmeStatus.DNR);
            return;
        }
        int shift = namespace.blockSizeShift();
        long capacity = namespace.blockCount();
        int maxBlocks = copyMaxBlocks(shift);
        ByteBuffer ranges = request.data();
        int base = ranges.position();
        long total = 0;
        for (int i = 0; i < rangeCount; i++) {
            int at = base + i * COPY_RANGE_LENGTH;
            long blocks = (shortLe(ranges, at + COPY_RANGE_NLB_OFFSET) & 0xFFFF) + 1L;
            long slba = longLe(ranges, at + COPY_RANGE_SLBA_OFFSET);
            if (blocks > maxBlocks) {
                request.complete(NvmeStatus.COMMAND_SIZE_LIMIT_EXCEEDED | NvmeStatus.DNR); // above MSSRL
                return;
            }
            if (!inRange(slba, blocks, capacity)) {
                request.complete(NvmeStatus.LBA_OUT_OF_RANGE | NvmeStatus.DNR);
                return;
            }
            total += blocks;
        }
        if (total > maxBlocks) {
            request.complete(NvmeStatus.COMMAND_SIZE_LIMIT_EXCEEDED | NvmeStatus.DNR); // above MCL
            return;
        }
        long sdlba = sqe.cdw10And11();
        if (!inRange(sdlba, total, capacity)) {
            request.complete(NvmeStatus.LBA_OUT_OF_RANGE | NvmeStatus.DNR);
            return;
        }
        if (!slot.claimWrite(namespace, sdlba, sdlba + total)) {
            return;
        }
        slot.startCopy(request, namespace.device(), ranges, base, rangeCount, shift, sdlba << shift,
            (int) (total << shift), (cdw12 & CDW12_FUA) != 0);
    }

    /**
     * Completes with {@code status} the commands of {@code queue} on {@code namespace} that wait on the calling
     * reactor for a resource before reaching the device (a namespace's QoS budget, an io_uring slot): Preempt and
     * Abort ends them instead of letting them write. A step of a multi-step command ends the command (a Copy whose
     * destination write waited leaves the destination unchanged). Returns how many. Reactor thread of the queue.
     */
    public static int abortWaiting(TransportQueue queue, Namespace namespace, int status) {
        Reactor reactor = Reactor.current();
        if (reactor == null) {
            return 0;
        }
        Predicate<BlockIo> which = io -> io instanceof IoContext s && s.namespace == namespace && s.request != null
            && s.request.queue() == queue;
        int n = 0;
        QosWaits qos = reactor.pollGroup(QosWaits.class);
        if (qos != null) {
            n += qos.abortWaiting(which, status);
        }
        BdevChannels ring = reactor.pollGroup(BdevChannels.class);
        if (ring != null) {
            n += ring.abortWaiting(which, status);
        }
        return n;
    }

    /** SLBA + blocks ≤ capacity, SLBA read as unsigned 64-bit. */
    static boolean inRange(long slba, long blocks, long capacityBlocks) {
        return Long.compareUnsigned(slba, capacityBlocks) < 0 && blocks <= capacityBlocks - slba;
    }

    static short shortLe(ByteBuffer buffer, int index) {
        short v = buffer.getShort(index);
        return buffer.order() == ByteOrder.LITTLE_ENDIAN ? v : Short.reverseBytes(v);
    }

    static int intLe(ByteBuffer buffer, int index) {
        int v = buffer.getInt(index);
        return buffer.order() == ByteOrder.LITTLE_ENDIAN ? v : Integer.reverseBytes(v);
    }

    static long longLe(ByteBuffer buffer, int index) {
        long v = buffer.getLong(index);
        return buffer.order() == ByteOrder.LITTLE_ENDIAN ? v : Long.reverseBytes(v);
    }
}
