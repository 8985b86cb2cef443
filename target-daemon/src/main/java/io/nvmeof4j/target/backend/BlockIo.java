package io.nvmeof4j.target.backend;

import io.nvmeof4j.target.reactor.Reactor;

import java.nio.ByteBuffer;

/**
 * One block I/O handed to a {@link BlockDevice}: a reusable, caller-owned descriptor (one per queue slot), so
 * submitting allocates nothing. Offsets and lengths are in bytes and block-aligned.
 */
public abstract class BlockIo {
    public enum Op { READ, WRITE, FLUSH, WRITE_ZEROES, DEALLOCATE }

    private Op op;
    private long offset;
    private long length;
    private ByteBuffer buffer;
    private boolean forceUnitAccess;
    private boolean lendable;
    private ByteBuffer lent;
    private int lentOffset;

    // Owned by the device while the I/O waits on a reactor (ring full, a namespace's QoS budget spent, or a
    // synchronous operation handed to a worker): intrusive links ({@link BlockIoFifo}), so waiting allocates nothing
    // and needs no bound beyond the commands in flight.
    BlockIo waitingNext;
    UringBlockDevice waitingDevice;
    BlockDevice qosDevice;
    Reactor completingReactor;
    int deferredStatus;
    Runnable deferredCompletion;

    // What this descriptor's I/O runs on: its reactor's ring and QoS waits, set when its queue connected on that
    // reactor (ReactorBackends; SPDK resolves a qpair's I/O channels when the qpair joins its poll group), and the
    // device's channel on that ring, kept from the descriptor's last I/O. A queue slot stays on one reactor, so no I/O
    // looks these up; a descriptor no queue bound (tools, tests) resolves them at its first submission instead.
    BdevChannels boundRing;
    UringBlockDevice boundDevice;
    io.nvmeof4j.jni.bdev.BdevIoChannel boundChannel;
    QosWaits boundQos;

    /** Sets up the descriptor for the next submission; returns this. */
    public BlockIo prepare(Op op, long offset, long length, ByteBuffer buffer, boolean forceUnitAccess) {
        this.op = op;
        this.offset = offset;
        this.length = length;
        this.buffer = buffer;
        this.forceUnitAccess = forceUnitAccess;
        this.lendable = false;
        this.lent = null;
        return this;
    }

    /**
     * READ: the device may lend its own memory instead of filling {@link #buffer()} ({@link #lend}); the caller
     * then sends from the lent memory. Set after {@link #prepare}, on a reactor thread. Returns this.
     */
    public BlockIo lendable(boolean mayLend) {
        this.lendable = mayLend;
        return this;
    }

    /** Whether the device may {@link #lend} instead of filling the buffer. */
    public boolean mayLend() {
        return lendable;
    }

    /**
     * A device's answer to a {@link #mayLend lendable} READ, before it completes: the data is {@code memory}'s
     * {@link #length()} bytes from {@code offset}, a view only the calling reactor moves; {@link #buffer()} is left
     * untouched.
     */
    public void lend(ByteBuffer memory, int offset) {
        this.lent = memory;
        this.lentOffset = offset;
    }

    /** What the device lent for this READ, or null when it filled {@link #buffer()}. */
    public ByteBuffer lent() {
        return lent;
    }

    /** Where the lent data starts in {@link #lent()}. */
    public int lentOffset() {
        return lentOffset;
    }

    public Op op() {
        return op;
    }

    /** Byte offset on the device. */
    public long offset() {
        return offset;
    }

    /** Byte count (READ/WRITE: equals buffer.remaining()). */
    public long length() {
        return length;
    }

    /**
     * READ: {@link #length()} bytes filled from position; WRITE: {@link #length()} bytes written from position;
     * null otherwise. Devices use absolute access or restore position and limit before completing: the caller
     * finds the buffer as it handed it over (the transport sends a read's data from position 0 to limit).
     */
    public ByteBuffer buffer() {
        return buffer;
    }

    /** WRITE/WRITE_ZEROES: durable before completion (NVMe FUA). */
    public boolean forceUnitAccess() {
        return forceUnitAccess;
    }

    /** Called by the device exactly once, from any thread, with an NVMe status code. */
    public abstract void complete(int nvmeStatus);
}
