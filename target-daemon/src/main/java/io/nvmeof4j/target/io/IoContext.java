package io.nvmeof4j.target.io;

import io.nvmeof4j.protocol.command.NvmeStatus;
import io.nvmeof4j.protocol.spi.Request;
import io.nvmeof4j.protocol.spi.TransportQueue;
import io.nvmeof4j.target.backend.BlockDevice;
import io.nvmeof4j.target.backend.BlockIo;
import io.nvmeof4j.target.backend.QosBudget;
import io.nvmeof4j.target.model.Namespace;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;

/**
 * A queue slot's I/O context: the {@link BlockIo} handed to the device, plus the cursors of multi-step
 * commands and its place in the namespace's {@link LbaRangeLock}. The command layer makes one per I/O queue slot
 * (its typed per-slot command context holds it) and hands it to {@link NvmCommandExecutor#execute} with every
 * command of that slot: nothing is allocated per command. Used by one command at a time (the slot's), completed
 * from any thread.
 */
public final class IoContext extends BlockIo implements Runnable {
    private static final VarHandle STATE;

    static {
        try {
            STATE = MethodHandles.lookup().findVarHandle(IoContext.class, "state", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    static final int KIND_SINGLE = 0;
    static final int KIND_DEALLOCATE = 1;
    static final int KIND_COMPARE = 2;
    static final int KIND_VERIFY = 3;
    static final int KIND_COPY = 4;
    static final int KIND_FUSED = 5;

    /** Multi-step progress: no step outstanding; a step submitted; a step completed inside its submit. */
    private static final int IDLE = 0;
    private static final int SUBMITTING = 1;
    private static final int COMPLETED_INLINE = 2;
    /** afterStep(): keep going. */
    private static final int CONTINUE = -1;

    /** The slot's current command, null between commands. */
    Request request;
    private BlockDevice device;
    /** The namespace of the slot's current command (a deferred command resumes with it). */
    Namespace namespace;
    private int kind;
    @SuppressWarnings("unused") // through STATE
    private volatile int state;
    private int inlineStatus;
    private boolean started;
    /** Copy and fused pairs: false while reading, true once the write step is under way. */
    private boolean writing;
    private boolean fua;

    // Dataset Management and Copy source ranges
    private ByteBuffer ranges;
    private int rangeBase;
    private int rangeCount;
    private int nextRange;
    private int blockShift;

    // Compare, Verify, Copy, fused: the device range read into the scratch buffer, chunk by chunk
    private ByteBuffer scratch;
    private long compareOffset;
    private int compareLength;
    private int compared;
    private int chunkLength;
    /** Copy: the destination byte offset. */
    private long destinationOffset;

    /** Fused: the Write half (the slot belongs to the Compare half). */
    private Request fusedWrite;

    // LbaRangeLock state: written under its monitor, or by the slot's own command before it is shared
    /** The in-flight counter this slot's write was counted in, or -1. */
    int inFlightIndex = -1;
    IoContext lockNext;
    IoContext resumeNext;
    long lockFirst;
    long lockEnd;
    boolean lockPair;
    boolean lockHeld;
    long drainEpoch;
    private LbaRangeLock rangeLock;

    /** A new command in this slot: what {@link #resume} needs before anything may defer it. */
    void begin(Request request, Namespace namespace) {
        this.request = request;
        this.namespace = namespace;
        this.kind = KIND_SINGLE;
    }

    /**
     * Counts this slot's write of blocks [first, end) in the namespace's lock: true to go on, false when it was
     * deferred behind a fused pair ({@link #resume} runs the command again). A resumed write is already counted.
     */
    boolean claimWrite(Namespace namespace, long first, long end) {
        rangeLock = namespace.rangeLock();
        if (inFlightIndex >= 0) {
            return true;
        }
        return rangeLock.beginWrite(this, first, end);
    }

    /** A deferred command may go on: continue it on its queue's reactor thread. Any thread. */
    void resume() {
        Request r = request;
        TransportQueue queue = r == null ? null : r.queue();
        if (queue != null) {
            try {
                queue.execute(this);
                return;
            } catch (RuntimeException e) {
                NvmCommands.LOG.debug("reactor of {} gone; resuming on this thread", queue.peer(), e);
            }
        }
        run();
    }

    /** Continues a deferred command ({@link #resume}). */
    @Override
    public void run() {
        if (kind == KIND_FUSED) {
            startFusedCompare();
        } else {
            NvmCommands.dispatch(this, request, namespace);
        }
    }

    void submitSingle(Request request, BlockDevice device, Op op, long offset, long length, ByteBuffer buffer,
                      boolean fua) {
        this.request = request;
        this.device = device;
        this.kind = KIND_SINGLE;
        prepare(op, offset, length, buffer, fua).lendable(op == Op.READ && request.takesLentData());
        submitToDevice();
    }

    /** Hands the prepared I/O to the device, through the namespace's QoS budget while it has limits. */
    private void submitToDevice() {
        QosBudget qos = namespace == null ? null : namespace.qos();
        if (qos != null && qos.enabled()) {
            qos.submit(this, device); // may wait on this reactor for the next timeslice; never fails
        } else {
            device.submit(this);
        }
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

    /** Compare or Verify: reads the range into the scratch buffer, chunk by chunk. */
    void startRead(int kind, Request request, BlockDevice device, long offset, int length) {
        this.request = request;
        this.device = device;
        this.kind = kind;
        ensureScratch(request.data());
        this.compareOffset = offset;
        this.compareLength = length;
        this.compared = 0;
        this.chunkLength = 0;
        this.started = false;
        drive(NvmeStatus.SUCCESS);
    }

    void startCopy(Request request, BlockDevice device, ByteBuffer ranges, int base, int count, int shift,
                   long destinationOffset, int length, boolean fua) {
        this.request = request;
        this.device = device;
        this.kind = KIND_COPY;
        ensureScratch(null);
        this.ranges = ranges;
        this.rangeBase = base;
        this.rangeCount = count;
        this.nextRange = 0;
        this.blockShift = shift;
        this.destinationOffset = destinationOffset;
        this.compareLength = length;
        this.compared = 0;
        this.fua = fua;
        this.writing = false;
        this.started = false;
        drive(NvmeStatus.SUCCESS);
    }

    void startFused(Request compare, Request write, Namespace namespace, long slba, long blocks, boolean fua) {
        this.request = compare;
        this.fusedWrite = write;
        this.device = namespace.device();
        this.kind = KIND_FUSED;
        this.rangeLock = namespace.rangeLock();
        int shift = namespace.blockSizeShift();
        this.compareOffset = slba << shift;
        this.compareLength = (int) (blocks << shift);
        this.fua = fua;
        if (rangeLock.lockRange(this, slba, slba + blocks)) {
            startFusedCompare();
        }
        // else: resume() starts it once the range is ours
    }

    private void startFusedCompare() {
        ensureScratch(request.data());
        this.compared = 0;
        this.chunkLength = 0;
        this.writing = false;
        this.started = false;
        drive(NvmeStatus.SUCCESS);
    }

    private void ensureScratch(ByteBuffer data) {
        if (scratch == null) {
            // Page-aligned: an O_DIRECT device (io_uring) refuses a buffer at an unaligned address.
            scratch = ByteBuffer.allocateDirect(NvmCommands.COMPARE_CHUNK_SIZE + 4096).alignedSlice(4096);
        }
        if (data != null) {
            // Compared a long at a time: both buffers must read bytes into longs the same way.
            scratch.order(data.order());
        }
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
            submitToDevice();
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
        } else {
            switch (kind) {
                case KIND_COMPARE:
                    if (!chunkMatches()) {
                        return NvmeStatus.COMPARE_FAILURE | NvmeStatus.DNR;
                    }
                    compared += chunkLength;
                    break;
                case KIND_FUSED:
                    if (writing) {
                        return NvmeStatus.SUCCESS;
                    }
                    if (!chunkMatches()) {
                        return NvmeStatus.COMPARE_FAILURE | NvmeStatus.DNR;
                    }
                    compared += chunkLength;
                    break;
                case KIND_VERIFY:
                    compared += chunkLength;
                    break;
                case KIND_COPY:
                    if (writing) {
                        return NvmeStatus.SUCCESS;
                    }
                    compared += chunkLength;
                    break;
                default:
                    break;
            }
        }
        switch (kind) {
            case KIND_COMPARE:
            case KIND_VERIFY:
                return compared < compareLength ? CONTINUE : NvmeStatus.SUCCESS;
            case KIND_FUSED:
                if (compared >= compareLength) {
                    writing = true; // the whole range matched: the Write goes now, the range still ours
                }
                return CONTINUE;
            case KIND_COPY:
                if (nextRange >= rangeCount) {
                    writing = true; // every source is staged: only now is the destination written
                }
                return CONTINUE;
            default:
                while (nextRange < rangeCount && rangeBlocks(nextRange) == 0) {
                    nextRange++;
                }
                return nextRange < rangeCount ? CONTINUE : NvmeStatus.SUCCESS;
        }
    }

    private void prepareStep() {
        switch (kind) {
            case KIND_COMPARE:
            case KIND_VERIFY:
                readChunk();
                break;
            case KIND_FUSED:
                if (writing) {
                    prepare(Op.WRITE, compareOffset, compareLength, fusedWrite.data(), fua);
                } else {
                    readChunk();
                }
                break;
            case KIND_COPY:
                if (writing) {
                    scratch.clear().limit(compareLength);
                    prepare(Op.WRITE, destinationOffset, compareLength, scratch, fua);
                } else {
                    int at = rangeBase + nextRange * NvmCommands.COPY_RANGE_LENGTH;
                    long slba = NvmCommands.longLe(ranges, at + NvmCommands.COPY_RANGE_SLBA_OFFSET);
                    chunkLength = ((NvmCommands.shortLe(ranges, at + NvmCommands.COPY_RANGE_NLB_OFFSET) & 0xFFFF) + 1) << blockShift;
                    scratch.clear().position(compared).limit(compared + chunkLength);
                    prepare(Op.READ, slba << blockShift, chunkLength, scratch, false);
                    nextRange++;
                }
                break;
            default:
                int at = rangeBase + nextRange * NvmCommands.DSM_RANGE_LENGTH;
                long slba = NvmCommands.longLe(ranges, at + NvmCommands.DSM_RANGE_SLBA_OFFSET);
                prepare(Op.DEALLOCATE, slba << blockShift, rangeBlocks(nextRange) << blockShift, null, false);
                nextRange++;
        }
    }

    private void readChunk() {
        chunkLength = Math.min(NvmCommands.COMPARE_CHUNK_SIZE, compareLength - compared);
        scratch.clear().limit(chunkLength);
        prepare(Op.READ, compareOffset + compared, chunkLength, scratch, false);
    }

    private long rangeBlocks(int index) {
        return Integer.toUnsignedLong(NvmCommands.intLe(ranges, rangeBase + index * NvmCommands.DSM_RANGE_LENGTH + NvmCommands.DSM_RANGE_LENGTH_OFFSET));
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
        if (kind == KIND_FUSED) {
            Request write = fusedWrite;
            fusedWrite = null;
            // Failed before the Write ran (miscompare, read error): the Write is aborted, the range unchanged.
            int compareStatus = writing ? NvmeStatus.SUCCESS : status;
            int writeStatus = writing ? status : NvmeStatus.ABORTED_FAILED_FUSED;
            rangeLock.unlockRange(this);
            done.complete(compareStatus);
            write.complete(writeStatus);
            return;
        }
        if (inFlightIndex >= 0) {
            rangeLock.endWrite(this);
        }
        ByteBuffer lentData = lent();
        if (lentData != null) {
            int lentOffset = lentOffset();
            lend(null, 0); // the descriptor keeps nothing alive past its command
            if (status == NvmeStatus.SUCCESS) {
                done.lendData(lentData, lentOffset);
            }
        }
        done.complete(status);
    }
}
