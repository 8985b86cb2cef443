package io.nvmeof4j.protocol.spi.host;

import io.nvmeof4j.protocol.command.CompletionQueueEntry;

import java.nio.ByteBuffer;

/**
 * One command slot of a host queue, reused for every command with its tag (CID bits 11:0; bits 15:12 count the
 * slot's reuses, so that a late completion for an earlier command on the same tag is told apart, as the Linux host
 * does with its genctr). A transport extends it with what its binding needs per command (PDU headers, RDMA capsule
 * buffers); {@link HostCommandSlots} owns the common part. The fields are read directly by the transport on its data
 * path and written only by {@link HostCommandSlots}. Poll-group thread only.
 */
public abstract class HostCommandSlot {
    /** Not in use. Transports number their own states from {@link #SUBMITTED}. */
    public static final int FREE = 0;
    /** Taken by a submit; a transport may move it on to its own states (any value but {@link #FREE}). */
    public static final int SUBMITTED = 1;

    public final int tag;
    public int state = FREE;
    int generation;
    public int cid;
    public boolean hostToController;
    /** The caller's buffer, or null for a command without data. */
    public ByteBuffer data;
    public int dataOffset;
    public int dataLength;
    HostCommandCallback callback;
    Object context;

    protected HostCommandSlot(int tag) {
        this.tag = tag;
    }

    /**
     * Called when the command ends (its completion, or the queue's failure), before the slot is freed and the
     * callback runs: the transport lets go of what it holds for the command and may still use {@link #data}.
     */
    protected abstract void onEnd(CompletionQueueEntry cqe);

    @Override
    public String toString() {
        return getClass().getSimpleName() + "[tag=" + tag + " cid=" + cid + " state=" + state + " length="
            + dataLength + "]";
    }
}
