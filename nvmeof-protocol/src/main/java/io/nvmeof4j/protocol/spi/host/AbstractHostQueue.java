package io.nvmeof4j.protocol.spi.host;

import io.nvmeof4j.protocol.command.SubmissionQueueEntry;
import io.nvmeof4j.protocol.spi.TransportAddress;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.nio.ByteBuffer;

/**
 * What every transport's {@link HostQueue} does the same way: its {@link HostCommandSlots}, the getters, and the
 * close sequence (stop the transport's I/O, end every outstanding command with {@link HostStatus#HOST_PATH_ERROR},
 * tell the listener). A transport binding adds only its own wire work: {@link #submit} after {@link #take}, its
 * receive path, and {@link #stopIo}.
 *
 * @param <S> the transport's command slot type
 */
public abstract class AbstractHostQueue<S extends HostCommandSlot> implements HostQueue {
    private static final Logger LOG = LoggerFactory.getLogger(AbstractHostQueue.class);

    private final TransportAddress address;
    private final String peer;
    private final String owner;
    private final int inCapsuleDataSize;
    private final HostQueueListener listener;
    protected final HostCommandSlots<S> slots;
    private volatile boolean open = true;

    /**
     * @param transport names the binding in log lines and messages, e.g. "NVMe/TCP"
     * @param slots     one slot per tag, {@code slots[t].tag == t}; their count is the queue's depth
     */
    protected AbstractHostQueue(String transport, TransportAddress address, String peer, int inCapsuleDataSize,
                                S[] slots, HostQueueListener listener) {
        this.address = address;
        this.peer = peer;
        this.owner = transport + " host " + peer;
        this.inCapsuleDataSize = inCapsuleDataSize;
        this.listener = listener;
        this.slots = new HostCommandSlots<>(owner, slots);
    }

    @Override
    public final TransportAddress address() {
        return address;
    }

    @Override
    public final String peer() {
        return peer;
    }

    @Override
    public final int depth() {
        return slots.depth();
    }

    @Override
    public final int inCapsuleDataSize() {
        return inCapsuleDataSize;
    }

    @Override
    public final int commandsOutstanding() {
        return slots.outstandingCount();
    }

    @Override
    public final boolean isOpen() {
        return open;
    }

    /**
     * The first step of {@link #submit}: a slot with a new CID for the command, or null when the queue is closed or
     * every slot is in use (submit returns -1).
     */
    protected final S take(SubmissionQueueEntry sqe, ByteBuffer data, int dataOffset, int dataLength,
                           HostCommandCallback callback, Object context) {
        return open ? slots.take(sqe, data, dataOffset, dataLength, callback, context) : null;
    }

    @Override
    public final void close(String reason) {
        if (pollGroup().inPollGroupThread()) {
            closeNow(reason);
            return;
        }
        try {
            pollGroup().execute(() -> closeNow(reason));
        } catch (IllegalStateException e) {
            closeNow(reason); // the group is closed: nobody polls it any more
        }
    }

    /**
     * Closes the queue now; idempotent. On the poll-group thread, or once nobody polls the group any more. The
     * transport stops its I/O first, so that nothing moves into a caller's buffer after its command ended.
     */
    public final void closeNow(String reason) {
        if (!open) {
            return;
        }
        open = false;
        stopIo(reason);
        LOG.debug("{} queue closed: {}", owner, reason);
        slots.failAll(HostStatus.HOST_PATH_ERROR);
        if (listener != null) {
            try {
                listener.onClosed(this, reason);
            } catch (RuntimeException e) {
                LOG.warn("{}: queue listener failed", owner, e);
            }
        }
        closed();
    }

    /**
     * Stops the transport's I/O for good (the socket closed, the queue pair in error) before the outstanding
     * commands are failed.
     */
    protected abstract void stopIo(String reason);

    /** After the commands were failed and the listener told: what the transport still has to tear down. */
    protected void closed() {
    }

    @Override
    public String toString() {
        return getClass().getSimpleName() + "[" + peer + "]";
    }
}
