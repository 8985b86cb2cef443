package io.nvmeof4j.initiator;

import io.nvmeof4j.protocol.io.NvmOpcode;
import io.nvmeof4j.protocol.ana.AnaState;
import io.nvmeof4j.protocol.command.NvmeStatus;
import io.nvmeof4j.protocol.spi.host.HostStatus;
import org.agrona.concurrent.ManyToManyConcurrentArrayQueue;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.concurrent.locks.LockSupport;

/**
 * One namespace of a {@link MultipathController}: the same NSID (and NGUID/UUID, and geometry) on each path, with
 * block I/O that picks a path per I/O and moves to another path on a path error.
 * <p>The callback API allocates nothing per I/O: each I/O takes a preallocated multipath request from a pool (an
 * Agrona ring), which is its context on the path; this object is the one long-lived callback of every path I/O.
 * A {@code submit*} returns false when the pool, or the chosen path's queue, is full. Callbacks run on a host
 * reactor thread, except for an I/O that waited for a usable path and then failed: that one completes on a host
 * control thread.
 */
public final class MultipathNamespace implements BlockNamespace, IoCallback {
    private static final Logger LOG = LoggerFactory.getLogger(MultipathNamespace.class);
    /** While I/O waits for a usable path, how often the waiting ring is retried (besides path events). */
    static final long WAIT_RETRY_MILLIS = 10;

    private final MultipathController mp;
    private final int nsid;
    private final int blockShift;
    private final long blockCount;
    private final byte[] nguid;
    private final java.util.UUID uuid;
    /** This namespace on each path (null where the path does not show it, or not yet). */
    final AtomicReferenceArray<NvmeofNamespace> onPath;
    /** The ANA state of this namespace's group on each path ({@link AnaState}). */
    final AtomicIntegerArray anaState;
    final AtomicInteger roundRobin = new AtomicInteger();
    private final ManyToManyConcurrentArrayQueue<MpIo> free;
    /** I/O with no usable path now: retried on path events and every {@link #WAIT_RETRY_MILLIS}. */
    private final ManyToManyConcurrentArrayQueue<MpIo> waiting;
    private final AtomicBoolean retryScheduled = new AtomicBoolean();
    private final long lossTimeoutNanos;

    /** One multipath I/O, recycled through the pool. */
    static final class MpIo {
        int opcode;
        long lba;
        long blocks;
        int cdw12Flags;
        int cdw11;
        ByteBuffer buffer;
        IoCallback callback;
        Object context;
        int path = -1;
        int lastStatus;
        long startNanos;

        void reset() {
            buffer = null;
            callback = null;
            context = null;
            path = -1;
            lastStatus = 0;
        }
    }

    MultipathNamespace(MultipathController mp, NvmeofNamespace first, int paths, int poolSize) {
        this.mp = mp;
        this.nsid = first.nsid();
        this.blockShift = Integer.numberOfTrailingZeros(first.blockSize());
        this.blockCount = first.blockCount();
        this.nguid = first.nguid();
        this.uuid = first.uuid();
        this.onPath = new AtomicReferenceArray<>(paths);
        this.anaState = new AtomicIntegerArray(paths);
        for (int i = 0; i < paths; i++) {
            anaState.set(i, AnaState.OPTIMIZED);
        }
        this.free = new ManyToManyConcurrentArrayQueue<>(poolSize);
        this.waiting = new ManyToManyConcurrentArrayQueue<>(poolSize);
        for (int i = 0; i < poolSize; i++) {
            free.offer(new MpIo());
        }
        this.lossTimeoutNanos = mp.options().controllerLossTimeout().toNanos();
    }

    @Override
    public int nsid() {
        return nsid;
    }

    @Override
    public int blockSize() {
        return 1 << blockShift;
    }

    @Override
    public long blockCount() {
        return blockCount;
    }

    public MultipathController controller() {
        return mp;
    }

    /** The ANA state ({@link AnaState}) of this namespace on path {@code index}, as last read. */
    public int anaState(int index) {
        return anaState.get(index);
    }

    /**
     * This namespace on a usable path (by the I/O policy), for commands that need no failover, such as the
     * reservation commands (a registration belongs to the host identifier, so one path serves every controller of
     * this host); null when no path is usable.
     */
    public NvmeofNamespace anyPath() {
        int p = mp.select(this, -1);
        return p < 0 ? null : onPath.get(p);
    }

    boolean sameNamespace(NvmeofNamespace other) {
        if (other.blockSize() != blockSize() || other.blockCount() != blockCount) {
            return false;
        }
        byte[] g = other.nguid();
        if (nguid != null && g != null && !Arrays.equals(nguid, g)) {
            return false;
        }
        return uuid == null || other.uuid() == null || uuid.equals(other.uuid());
    }

    // ---- callback API ------------------------------------------------------------------------------------------

    @Override
    public boolean submitRead(long lba, int blocks, ByteBuffer dst, IoCallback callback, Object context) {
        BlockBuffers.checkData(blocks, dst, blockShift);
        if (dst.isReadOnly()) {
            throw new IllegalArgumentException("cannot read into a read-only buffer");
        }
        return submit(NvmOpcode.READ, lba, blocks, 0, dst, callback, context);
    }

    @Override
    public boolean submitWrite(long lba, int blocks, ByteBuffer src, boolean forceUnitAccess, IoCallback callback,
                               Object context) {
        BlockBuffers.checkData(blocks, src, blockShift);
        return submit(NvmOpcode.WRITE, lba, blocks, forceUnitAccess ? 1 << 30 : 0, src, callback, context);
    }

    @Override
    public boolean submitFlush(IoCallback callback, Object context) {
        Objects.requireNonNull(callback, "callback");
        return submit(NvmOpcode.FLUSH, 0, 0, 0, null, callback, context);
    }

    private boolean submit(int opcode, long lba, long blocks, int cdw12Flags, ByteBuffer buffer, IoCallback callback,
                           Object context) {
        MpIo io = free.poll();
        if (io == null) {
            return false;
        }
        io.opcode = opcode;
        io.lba = lba;
        io.blocks = blocks;
        io.cdw12Flags = cdw12Flags;
        io.cdw11 = 0;
        io.buffer = buffer;
        io.callback = callback;
        io.context = context;
        io.startNanos = System.nanoTime();
        int p = mp.select(this, -1);
        if (p < 0) {
            if (mp.isClosed()) {
                io.reset();
                free.offer(io);
                throw new IllegalStateException("multipath controller " + mp.subsystemNqn() + " is closed");
            }
            park(io);
            return true;
        }
        if (!sendOn(io, p)) {
            io.reset();
            free.offer(io); // that path's queue is full: the caller retries, as with one path
            return false;
        }
        return true;
    }

    private boolean sendOn(MpIo io, int p) {
        NvmeofNamespace ns = onPath.get(p);
        if (ns == null) {
            return false;
        }
        MultipathController.Path path = mp.paths[p];
        io.path = p;
        path.inFlight.incrementAndGet();
        if (ns.submitOnPath(io.opcode, io.lba, io.blocks, io.cdw12Flags, io.cdw11, io.buffer, this, io)) {
            path.submitted.incrementAndGet();
            return true;
        }
        path.inFlight.decrementAndGet();
        return false;
    }

    /** Completion of one path I/O (that path's reactor thread). */
    @Override
    public void onComplete(int status, Object context) {
        MpIo io = (MpIo) context;
        MultipathController.Path path = mp.paths[io.path];
        path.inFlight.decrementAndGet();
        if (status == 0) {
            path.completed.incrementAndGet();
            finish(io, 0);
            return;
        }
        if (!isPathError(status)) {
            path.failed.incrementAndGet();
            finish(io, status);
            return;
        }
        path.failedOver.incrementAndGet();
        io.lastStatus = status;
        int ana = anaStateOf(status);
        if (ana != 0) {
            anaState.set(io.path, ana); // stop sending here at once; the ANA log then says what holds
            mp.anaStatusSeen(path);
        }
        if (System.nanoTime() - io.startNanos > lossTimeoutNanos) {
            finish(io, status | NvmeStatus.DNR);
            return;
        }
        int next = mp.select(this, io.path);
        if (next < 0 || !sendOn(io, next)) {
            park(io);
        }
    }

    /**
     * Path-related status (SCT 3h) without DNR: the Linux host's {@code nvme_is_path_error}; the I/O goes to another
     * path. Everything else (LBA out of range, a reservation conflict, a media error) is the namespace's answer.
     */
    static boolean isPathError(int status) {
        return NvmeStatus.sct(status) == NvmeStatus.SCT_PATH && !NvmeStatus.isDnr(status);
    }

    /** The ANA state an ANA status tells of, else 0. */
    static int anaStateOf(int status) {
        switch (status & 0x7FF) {
            case NvmeStatus.ANA_PERSISTENT_LOSS: return AnaState.PERSISTENT_LOSS;
            case NvmeStatus.ANA_INACCESSIBLE: return AnaState.INACCESSIBLE;
            case NvmeStatus.ANA_TRANSITION: return AnaState.CHANGE;
            default: return 0;
        }
    }

    private void finish(MpIo io, int status) {
        IoCallback callback = io.callback;
        Object context = io.context;
        io.reset();
        free.offer(io);
        try {
            callback.onComplete(status, context);
        } catch (Throwable e) {
            LOG.error("I/O callback failed (multipath namespace {} of {})", nsid, mp.subsystemNqn(), e);
        }
    }

    /** No usable path now: wait in the multipath layer (never full: it is as large as the pool). */
    private void park(MpIo io) {
        if (mp.isClosed()) {
            // In-flight I/O coming back after close() drained the waiting ring: nothing will retry it.
            finish(io, (io.lastStatus != 0 ? io.lastStatus : HostStatus.HOST_PATH_ERROR) | NvmeStatus.DNR);
            return;
        }
        waiting.offer(io);
        scheduleRetry();
    }

    private void scheduleRetry() {
        if (retryScheduled.compareAndSet(false, true)) {
            try {
                mp.host().timer().schedule(() -> mp.host().control().execute(() -> {
                    retryScheduled.set(false);
                    kick();
                }), WAIT_RETRY_MILLIS, TimeUnit.MILLISECONDS);
            } catch (java.util.concurrent.RejectedExecutionException e) {
                retryScheduled.set(false);
                failWaiting(); // the host is closing
            }
        }
    }

    /** Sends waiting I/O where a path is usable again (control thread). */
    void kick() {
        int n = waiting.size();
        for (int i = 0; i < n; i++) {
            MpIo io = waiting.poll();
            if (io == null) {
                break;
            }
            if (mp.isClosed()) {
                finish(io, HostStatus.HOST_PATH_ERROR | NvmeStatus.DNR);
            } else if (System.nanoTime() - io.startNanos > lossTimeoutNanos) {
                LOG.warn("multipath {}: namespace {}: an I/O found no usable path within the controller-loss "
                    + "timeout of {} ms; failing it", mp.subsystemNqn(), nsid, lossTimeoutNanos / 1_000_000);
                finish(io, (io.lastStatus != 0 ? io.lastStatus : HostStatus.HOST_PATH_ERROR) | NvmeStatus.DNR);
            } else {
                int p = mp.select(this, -1);
                if (p < 0 || !sendOn(io, p)) {
                    waiting.offer(io);
                }
            }
        }
        if (!waiting.isEmpty()) {
            scheduleRetry();
        }
    }

    void failWaiting() {
        MpIo io;
        while ((io = waiting.poll()) != null) {
            finish(io, HostStatus.HOST_PATH_ERROR | NvmeStatus.DNR);
        }
    }

    // ---- future API ----------------------------------------------------------------------------------------------

    @Override
    public CompletableFuture<Void> read(long lba, ByteBuffer dst) {
        int blocks = BlockBuffers.wholeBlocks(dst, blockShift);
        return future("Read of " + blocks + " blocks at LBA " + lba, (cb, f) -> submitRead(lba, blocks, dst, cb, f));
    }

    @Override
    public CompletableFuture<Void> write(long lba, ByteBuffer src, boolean forceUnitAccess) {
        int blocks = BlockBuffers.wholeBlocks(src, blockShift);
        return future("Write of " + blocks + " blocks at LBA " + lba,
            (cb, f) -> submitWrite(lba, blocks, src, forceUnitAccess, cb, f));
    }

    public CompletableFuture<Void> flush() {
        return future("Flush", this::submitFlush);
    }

    private interface Submitter {
        boolean submit(IoCallback callback, Object context);
    }

    /** Submits, waiting off the reactor threads for a free request up to the command timeout. */
    private CompletableFuture<Void> future(String what, Submitter submitter) {
        CompletableFuture<Void> f = new CompletableFuture<>();
        IoCallback cb = (status, ctx) -> {
            if (status == 0) {
                f.complete(null);
            } else {
                f.completeExceptionally(new NvmeofIoException(what + " on multipath namespace " + nsid + " of "
                    + mp.subsystemNqn() + ": " + IoStatus.describe(status), status));
            }
        };
        long deadline = System.nanoTime() + mp.options().commandTimeout().toNanos();
        while (!submitter.submit(cb, f)) {
            if (mp.host().isReactorThread() || System.nanoTime() - deadline > 0) {
                f.completeExceptionally(new NvmeofIoException(what + " on multipath namespace " + nsid
                    + ": no request slot free", -1));
                break;
            }
            LockSupport.parkNanos(TimeUnit.MICROSECONDS.toNanos(50));
        }
        return f;
    }

    @Override
    public String toString() {
        return "MultipathNamespace[nsid=" + nsid + " blocks=" + blockCount + " x " + blockSize() + " B on "
            + mp.subsystemNqn() + " over " + mp.paths.length + " paths]";
    }
}
