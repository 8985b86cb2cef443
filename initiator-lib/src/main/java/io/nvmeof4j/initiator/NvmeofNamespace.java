package io.nvmeof4j.initiator;

import io.nvmeof4j.protocol.io.NvmOpcode;
import io.nvmeof4j.protocol.command.NvmeStatus;
import io.nvmeof4j.protocol.reservation.ReservationCommand;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.Objects;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * One active namespace of a connected controller, with block I/O in two styles.
 *
 * <h2>Callback API ({@code submit*})</h2>
 * For hot loops: the caller supplies the buffer (direct buffers avoid a JDK copy) and a long-lived
 * {@link IoCallback}; nothing is allocated per I/O in steady state. The data range is
 * {@code [buffer.position(), buffer.position() + blocks × blockSize)}; while the I/O is in flight the buffer's
 * position and limit belong to the library (restored before the callback). A {@code submit*} method returns false,
 * without side effects, when its queue already holds {@link ConnectOptions#maxOutstandingRequests()} requests.
 * Large transfers are split at the controller's MDTS into several commands, transparently.
 *
 * <h2>Future API</h2>
 * Convenience methods returning a {@link CompletableFuture}, completed on the queue's reactor thread (use the
 * {@code *Async} stages for blocking work). A failed I/O completes exceptionally with an {@link NvmeofIoException}
 * naming the operation, namespace, controller and status.
 * <p>Both styles may be used from any thread at once; see the package documentation for the threading model.
 */
public final class NvmeofNamespace implements BlockNamespace {
    private static final IoCallback FUTURE_CALLBACK = (status, context) -> ((FutureIo) context).complete(status);

    private final NvmeofController controller;
    private final int nsid;
    private final int blockShift;
    private final long blockCount;
    private final byte[] nguid;
    private final UUID uuid;
    private final byte[] eui64;
    /** Null unless the host records metrics. */
    private final HostMetrics.NamespaceMeters meters;

    NvmeofNamespace(NvmeofController controller, int nsid, int blockShift, long blockCount, byte[] nguid, UUID uuid,
                    byte[] eui64) {
        this.controller = controller;
        this.nsid = nsid;
        this.blockShift = blockShift;
        this.blockCount = blockCount;
        this.nguid = nguid;
        this.uuid = uuid;
        this.eui64 = eui64;
        HostMetrics metrics = controller.hostMetrics();
        this.meters = metrics == null ? null
            : metrics.namespace(controller.subsystemNqn(), nsid, controller.address().type().configName());
    }

    public NvmeofController controller() {
        return controller;
    }

    public int nsid() {
        return nsid;
    }

    /** Bytes per logical block (512, 4096, ...). */
    public int blockSize() {
        return 1 << blockShift;
    }

    /** NSZE: the namespace size in logical blocks. */
    public long blockCount() {
        return blockCount;
    }

    public long sizeBytes() {
        return blockCount << blockShift;
    }

    /** NGUID (16 bytes), or null when the controller reports none (all zero). */
    public byte[] nguid() {
        return nguid == null ? null : nguid.clone();
    }

    /** The namespace UUID (Identify CNS 03h), or null. */
    public UUID uuid() {
        return uuid;
    }

    /** EUI-64 (8 bytes), or null. */
    public byte[] eui64() {
        return eui64 == null ? null : eui64.clone();
    }

    boolean sameGeometry(NvmeofNamespace other) {
        return other != null && other.blockShift == blockShift && other.blockCount == blockCount
            && Arrays.equals(other.nguid, nguid) && Objects.equals(other.uuid, uuid);
    }

    // ---- callback API ------------------------------------------------------------------------------------------

    /** Reads {@code blocks} blocks at {@code lba} into {@code dst} from its position. */
    public boolean submitRead(long lba, int blocks, ByteBuffer dst, IoCallback callback, Object context) {
        BlockBuffers.checkData(blocks, dst, blockShift);
        if (dst.isReadOnly()) {
            throw new IllegalArgumentException("cannot read into a read-only buffer");
        }
        return queue().submit(NvmOpcode.READ, nsid, lba, blocks, blockShift, 0, 0, dst, callback, context, meters);
    }

    /** Writes {@code blocks} blocks from {@code src}'s position to {@code lba}; FUA: durable before completion. */
    public boolean submitWrite(long lba, int blocks, ByteBuffer src, boolean forceUnitAccess, IoCallback callback,
                               Object context) {
        BlockBuffers.checkData(blocks, src, blockShift);
        return queue().submit(NvmOpcode.WRITE, nsid, lba, blocks, blockShift, forceUnitAccess ? 1 << 30 : 0, 0, src,
            callback, context, meters);
    }

    /** Compares {@code blocks} blocks at {@code lba} with {@code src}: status 0x285 (COMPARE_FAILURE) on mismatch. */
    public boolean submitCompare(long lba, int blocks, ByteBuffer src, IoCallback callback, Object context) {
        BlockBuffers.checkData(blocks, src, blockShift);
        return queue().submit(NvmOpcode.COMPARE, nsid, lba, blocks, blockShift, 0, 0, src, callback, context, meters);
    }

    /** Flush: makes completed writes durable (meaningful when the controller reports a volatile write cache). */
    public boolean submitFlush(IoCallback callback, Object context) {
        Objects.requireNonNull(callback, "callback");
        return queue().submit(NvmOpcode.FLUSH, nsid, 0, 0, blockShift, 0, 0, null, callback, context, meters);
    }

    /** Write Zeroes; with {@code deallocate} the controller may deallocate the blocks instead (DEAC). */
    public boolean submitWriteZeroes(long lba, int blocks, boolean deallocate, IoCallback callback, Object context) {
        BlockBuffers.checkBlocks(blocks);
        Objects.requireNonNull(callback, "callback");
        return queue().submit(NvmOpcode.WRITE_ZEROES, nsid, lba, blocks, blockShift, deallocate ? 1 << 25 : 0, 0,
            null, callback, context, meters);
    }

    /** Deallocate (Dataset Management with AD, one range): what a discard/TRIM becomes. */
    public boolean submitDeallocate(long lba, int blocks, IoCallback callback, Object context) {
        BlockBuffers.checkBlocks(blocks);
        Objects.requireNonNull(callback, "callback");
        return queue().submit(NvmOpcode.DATASET_MANAGEMENT, nsid, lba, blocks, blockShift, 0, 1 << 2, null, callback, context, meters);
    }

    /**
     * Fused Compare and Write (NVMe Base 2.0, 3.4.2): writes {@code blocks} blocks from {@code replacement} to
     * {@code lba} only if the blocks there equal {@code expected}, atomically against every other write to them
     * (VMware's atomic test-and-set). A miscompare completes with 0x285 (COMPARE_FAILURE) and leaves the blocks as
     * they were. Both halves go out next to each other on one queue, so the pair is never split: it must fit in
     * one command ({@link NvmeofController#maxTransferBytes()}, 65536 blocks).
     */
    public boolean submitCompareAndWrite(long lba, int blocks, ByteBuffer expected, ByteBuffer replacement,
                                         boolean forceUnitAccess, IoCallback callback, Object context) {
        BlockBuffers.checkData(blocks, expected, blockShift);
        BlockBuffers.checkData(blocks, replacement, blockShift);
        checkSingleCommand(blocks);
        Objects.requireNonNull(callback, "callback");
        return queue().submitCompareAndWrite(nsid, lba, blocks, blockShift, expected, replacement, forceUnitAccess,
            callback, context, meters);
    }

    /** Verify: the controller reads and checks {@code blocks} blocks at {@code lba}, returning no data. */
    public boolean submitVerify(long lba, int blocks, IoCallback callback, Object context) {
        BlockBuffers.checkBlocks(blocks);
        Objects.requireNonNull(callback, "callback");
        return queue().submit(NvmOpcode.VERIFY, nsid, lba, blocks, blockShift, 0, 0, null, callback, context,
            meters);
    }

    private IoQueue queue() {
        return controller.selectQueue();
    }

    private void checkSingleCommand(int blocks) {
        long bytes = (long) blocks << blockShift;
        if (blocks > IoQueue.MAX_BLOCKS_PER_COMMAND || bytes > controller.maxTransferBytes()) {
            throw new IllegalArgumentException(blocks + " blocks (" + bytes + " bytes) do not fit in one command: "
                + "the controller takes at most " + controller.maxTransferBytes() + " bytes");
        }
    }

    /**
     * Multipath: one I/O on this path that ends with a path status (not DNR) instead of waiting for this
     * controller's reconnect, so that {@link MultipathNamespace} can redo it on another path. Allocation-free.
     */
    boolean submitOnPath(int opcode, long lba, long blocks, int cdw12Flags, int cdw11, ByteBuffer buffer,
                         IoCallback callback, Object context) {
        return queue().submit(opcode, nsid, lba, blocks, blockShift, cdw12Flags, cdw11, buffer, callback, context,
            meters, true);
    }

    // ---- reservations (NVMe Base 2.0, 7.2-7.5; codes in ReservationCommand and ReservationType) ----------------

    /**
     * Reservation Register: {@code action} {@link ReservationCommand#REGISTER}, {@code UNREGISTER} or {@code REPLACE};
     * {@code cptpl} {@link ReservationCommand#CPTPL_NO_CHANGE}, {@code CPTPL_CLEAR} or {@code CPTPL_SET} (Persist
     * Through Power Loss). Fails with RESERVATION_CONFLICT (0x083) when {@code currentKey} does not match.
     */
    public CompletableFuture<Void> reservationRegister(int action, boolean ignoreExistingKey, int cptpl,
                                                       long currentKey, long newKey) {
        ByteBuffer data = Commands.direct(ReservationCommand.REGISTER_DATA_LENGTH);
        data.putLong(ReservationCommand.CRKEY_OFFSET, currentKey).putLong(ReservationCommand.SECOND_KEY_OFFSET, newKey);
        return reservation(ReservationCommand.OPC_REGISTER,
            ReservationCommand.cdw10(action, ignoreExistingKey, 0, cptpl), 0, data);
    }

    /** Reservation Acquire: {@code action} ACQUIRE, PREEMPT or PREEMPT_AND_ABORT; {@code type} a {@link
     *  io.nvmeof4j.protocol.reservation.ReservationType}; {@code preemptKey} the key to preempt. */
    public CompletableFuture<Void> reservationAcquire(int action, boolean ignoreExistingKey, int type,
                                                      long currentKey, long preemptKey) {
        ByteBuffer data = Commands.direct(ReservationCommand.ACQUIRE_DATA_LENGTH);
        data.putLong(ReservationCommand.CRKEY_OFFSET, currentKey)
            .putLong(ReservationCommand.SECOND_KEY_OFFSET, preemptKey);
        return reservation(ReservationCommand.OPC_ACQUIRE,
            ReservationCommand.cdw10(action, ignoreExistingKey, type, 0), 0, data);
    }

    /** Reservation Release: {@code action} RELEASE or CLEAR. */
    public CompletableFuture<Void> reservationRelease(int action, boolean ignoreExistingKey, int type,
                                                      long currentKey) {
        ByteBuffer data = Commands.direct(ReservationCommand.RELEASE_DATA_LENGTH);
        data.putLong(ReservationCommand.CRKEY_OFFSET, currentKey);
        return reservation(ReservationCommand.OPC_RELEASE,
            ReservationCommand.cdw10(action, ignoreExistingKey, type, 0), 0, data);
    }

    /**
     * Reservation Report into a new little-endian direct buffer of {@code bytes} bytes (NUMD = bytes / 4 - 1): the
     * reservation status data structure, extended (128-bit host identifiers) when {@code extended}; read it with
     * {@link io.nvmeof4j.protocol.reservation.ReservationStatusData}.
     */
    public CompletableFuture<ByteBuffer> reservationReport(boolean extended, int bytes) {
        if (bytes < 4 || (bytes & 3) != 0) {
            throw new IllegalArgumentException("report length " + bytes + " is not a positive multiple of 4");
        }
        ByteBuffer data = Commands.direct(bytes);
        return reservation(ReservationCommand.OPC_REPORT, bytes / 4 - 1, extended ? ReservationCommand.REPORT_EDS : 0,
            data).thenApply(v -> data);
    }

    private CompletableFuture<Void> reservation(int opcode, int cdw10, int cdw11, ByteBuffer data) {
        FutureIo io = new FutureIo(this, opcode, 0, 0);
        // "blocks" carries the data length in bytes for these commands (IoQueue.submitNext); no meters.
        submitWithRetry(io, () -> queue().submit(opcode, nsid, 0, data.remaining(), blockShift, cdw10, cdw11, data,
            FUTURE_CALLBACK, io, null));
        return io.thenApply(ok -> null);
    }

    // ---- future API ----------------------------------------------------------------------------------------------

    /** Reads {@code dst.remaining()} bytes (a whole number of blocks) at {@code lba} into {@code dst}. */
    public CompletableFuture<Void> read(long lba, ByteBuffer dst) {
        int blocks = BlockBuffers.wholeBlocks(dst, blockShift);
        FutureIo io = new FutureIo(this, NvmOpcode.READ, lba, blocks);
        submitWithRetry(io, () -> submitRead(lba, blocks, dst, FUTURE_CALLBACK, io));
        return io.thenApply(ok -> null);
    }

    /** Reads {@code blocks} blocks at {@code lba} into a new direct buffer (position 0, limit = the bytes read). */
    public CompletableFuture<ByteBuffer> read(long lba, int blocks) {
        BlockBuffers.checkBlocks(blocks);
        ByteBuffer dst = ByteBuffer.allocateDirect(Math.toIntExact((long) blocks << blockShift));
        return read(lba, dst).thenApply(v -> dst);
    }

    public CompletableFuture<Void> write(long lba, ByteBuffer src) {
        return write(lba, src, false);
    }

    /** Writes {@code src.remaining()} bytes (a whole number of blocks) to {@code lba}. */
    public CompletableFuture<Void> write(long lba, ByteBuffer src, boolean forceUnitAccess) {
        int blocks = BlockBuffers.wholeBlocks(src, blockShift);
        FutureIo io = new FutureIo(this, NvmOpcode.WRITE, lba, blocks);
        submitWithRetry(io, () -> submitWrite(lba, blocks, src, forceUnitAccess, FUTURE_CALLBACK, io));
        return io.thenApply(ok -> null);
    }

    /** True when the blocks at {@code lba} equal {@code src}, false on a miscompare (status 0x285). */
    public CompletableFuture<Boolean> compare(long lba, ByteBuffer src) {
        int blocks = BlockBuffers.wholeBlocks(src, blockShift);
        FutureIo io = new FutureIo(this, NvmOpcode.COMPARE, lba, blocks);
        submitWithRetry(io, () -> submitCompare(lba, blocks, src, FUTURE_CALLBACK, io));
        return io;
    }

    /**
     * Fused Compare and Write of {@code expected.remaining()} bytes (a whole number of blocks, as many as in
     * {@code replacement}): true when the blocks matched and were replaced, false on a miscompare (nothing written).
     */
    public CompletableFuture<Boolean> compareAndWrite(long lba, ByteBuffer expected, ByteBuffer replacement) {
        int blocks = BlockBuffers.wholeBlocks(expected, blockShift);
        if (replacement.remaining() != expected.remaining()) {
            throw new IllegalArgumentException("expected holds " + expected.remaining() + " bytes, replacement "
                + replacement.remaining() + ": a Compare and Write compares and writes the same blocks");
        }
        FutureIo io = new FutureIo(this, IoQueue.OP_COMPARE_AND_WRITE, lba, blocks);
        submitWithRetry(io, () -> submitCompareAndWrite(lba, blocks, expected, replacement, false, FUTURE_CALLBACK,
            io));
        return io;
    }

    /** Verify of {@code blocks} blocks at {@code lba}: completes normally when the controller could read them all. */
    public CompletableFuture<Void> verify(long lba, long blocks) {
        if (blocks < 1) {
            throw new IllegalArgumentException("block count " + blocks + " below 1");
        }
        FutureIo io = new FutureIo(this, NvmOpcode.VERIFY, lba, blocks);
        submitWithRetry(io, () -> queue().submit(NvmOpcode.VERIFY, nsid, lba, blocks, blockShift, 0, 0, null,
            FUTURE_CALLBACK, io, meters));
        return io.thenApply(ok -> null);
    }

    /**
     * Copy (NVM Command Set 1.0, 3.3.1, Source Range Entries format 0): the controller copies the source ranges,
     * one after the other, to {@code destinationLba}, without the data crossing the network. The controller's
     * limits (Identify Namespace MSRC, MSSRL, MCL) apply; above them it answers 0x183 (Command Size Limit
     * Exceeded).
     *
     * @param sourceLbas   first block of each range
     * @param blockCounts  blocks of each range, 1..65536
     * @param forceUnitAccess the copied blocks are durable before completion
     */
    public CompletableFuture<Void> copy(long destinationLba, long[] sourceLbas, int[] blockCounts,
                                        boolean forceUnitAccess) {
        if (sourceLbas.length != blockCounts.length || sourceLbas.length < 1 || sourceLbas.length > 256) {
            throw new IllegalArgumentException("a Copy takes 1 to 256 ranges with one block count each; got "
                + sourceLbas.length + " LBAs and " + blockCounts.length + " counts");
        }
        ByteBuffer ranges = ByteBuffer.allocateDirect(sourceLbas.length * 32).order(ByteOrder.LITTLE_ENDIAN);
        long total = 0;
        for (int i = 0; i < sourceLbas.length; i++) {
            if (blockCounts[i] < 1 || blockCounts[i] > IoQueue.MAX_BLOCKS_PER_COMMAND) {
                throw new IllegalArgumentException("range " + i + ": " + blockCounts[i] + " blocks, not 1..65536");
            }
            ranges.putLong(i * 32 + 8, sourceLbas[i]).putShort(i * 32 + 16, (short) (blockCounts[i] - 1));
            total += blockCounts[i];
        }
        long blocks = total;
        FutureIo io = new FutureIo(this, NvmOpcode.COPY, destinationLba, blocks);
        submitWithRetry(io, () -> queue().submitCopy(nsid, destinationLba, ranges, sourceLbas.length, blocks,
            blockShift, forceUnitAccess, FUTURE_CALLBACK, io, meters));
        return io.thenApply(ok -> null);
    }

    public CompletableFuture<Void> flush() {
        FutureIo io = new FutureIo(this, NvmOpcode.FLUSH, 0, 0);
        submitWithRetry(io, () -> submitFlush(FUTURE_CALLBACK, io));
        return io.thenApply(ok -> null);
    }

    public CompletableFuture<Void> writeZeroes(long lba, int blocks) {
        FutureIo io = new FutureIo(this, NvmOpcode.WRITE_ZEROES, lba, blocks);
        submitWithRetry(io, () -> submitWriteZeroes(lba, blocks, false, FUTURE_CALLBACK, io));
        return io.thenApply(ok -> null);
    }

    public CompletableFuture<Void> deallocate(long lba, int blocks) {
        FutureIo io = new FutureIo(this, NvmOpcode.DATASET_MANAGEMENT, lba, blocks);
        submitWithRetry(io, () -> submitDeallocate(lba, blocks, FUTURE_CALLBACK, io));
        return io.thenApply(ok -> null);
    }

    /**
     * Submits, waiting (off the reactor threads) for room in the queue's request pool up to the command timeout.
     * On a reactor thread waiting would deadlock: a full pool fails the future at once.
     */
    private void submitWithRetry(FutureIo io, java.util.function.BooleanSupplier submit) {
        if (submit.getAsBoolean()) {
            return;
        }
        if (controller.isReactorThread()) {
            io.completeExceptionally(new NvmeofIoException(io.describe() + ": the queue is full ("
                + controller.options().maxOutstandingRequests() + " requests outstanding)", -1));
            return;
        }
        long deadline = System.nanoTime() + controller.options().commandTimeout().toNanos();
        while (System.nanoTime() - deadline < 0) {
            LockSupport.parkNanos(TimeUnit.MICROSECONDS.toNanos(50));
            if (submit.getAsBoolean()) {
                return;
            }
        }
        io.completeExceptionally(new NvmeofIoException(io.describe() + ": the queue stayed full for "
            + controller.options().commandTimeout().toMillis() + " ms", -1));
    }

    @Override
    public String toString() {
        return "NvmeofNamespace[nsid=" + nsid + " blocks=" + blockCount + " x " + blockSize() + " B on "
            + controller.subsystemNqn() + "]";
    }

    /** One future-API I/O: the future, and what to say when it fails. */
    private static final class FutureIo extends CompletableFuture<Boolean> implements IoQueue.ErrorDetailAware {
        private final NvmeofNamespace namespace;
        private final int opcode;
        private final long lba;
        private final long blocks;
        private volatile String detail;

        FutureIo(NvmeofNamespace namespace, int opcode, long lba, long blocks) {
            this.namespace = namespace;
            this.opcode = opcode;
            this.lba = lba;
            this.blocks = blocks;
        }

        @Override
        public void errorDetail(String text) {
            detail = text;
        }

        String describe() {
            String what = opcode == NvmOpcode.FLUSH || blocks == 0 ? IoQueue.opName(opcode)
                : IoQueue.opName(opcode) + " of " + blocks + " blocks at LBA " + lba;
            return what + " on namespace " + namespace.nsid + " of " + namespace.controller.subsystemNqn() + " at "
                + namespace.controller.address();
        }

        void complete(int status) {
            if (status == 0) {
                complete(Boolean.TRUE);
            } else if ((opcode == NvmOpcode.COMPARE || opcode == IoQueue.OP_COMPARE_AND_WRITE)
                && NvmeStatus.code(status) == NvmeStatus.COMPARE_FAILURE) {
                complete(Boolean.FALSE);
            } else {
                String text = detail;
                completeExceptionally(new NvmeofIoException(describe() + ": " + IoStatus.describe(status)
                    + (text == null ? "" : ": " + text), status));
            }
        }
    }
}
