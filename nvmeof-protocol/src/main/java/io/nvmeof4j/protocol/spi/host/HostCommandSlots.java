package io.nvmeof4j.protocol.spi.host;

import io.nvmeof4j.protocol.command.CompletionQueueEntry;
import io.nvmeof4j.protocol.command.DataDirection;
import io.nvmeof4j.protocol.command.SubmissionQueueEntry;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * The command slots of one host queue, the part every transport binding shares: a free-tag stack, CID generation,
 * the submit argument checks, CID lookup for what the controller sends, and completion (the slot is freed before
 * its callback runs, so the callback may submit into it). {@link #failAll} ends every outstanding command with a
 * status the host synthesizes ({@link HostStatus#HOST_PATH_ERROR} when a queue fails). Everything is preallocated:
 * nothing here allocates per command. Poll-group thread only.
 *
 * @param <S> the transport's slot type
 */
public final class HostCommandSlots<S extends HostCommandSlot> {
    private static final Logger LOG = LoggerFactory.getLogger(HostCommandSlots.class);

    private final String owner;
    private final S[] slots;
    private final int[] freeTags;
    private int freeCount;
    private int outstanding;
    private final CompletionQueueEntry syntheticCqe = new CompletionQueueEntry()
        .wrap(ByteBuffer.allocateDirect(CompletionQueueEntry.LENGTH).order(ByteOrder.LITTLE_ENDIAN), 0);

    /**
     * @param owner names the queue in log lines, e.g. "NVMe/TCP host 127.0.0.1:4420"
     * @param slots one slot per tag, {@code slots[t].tag == t}
     */
    public HostCommandSlots(String owner, S[] slots) {
        if (slots.length == 0 || slots.length > 4096) {
            throw new IllegalArgumentException("queue depth " + slots.length + " outside 1..4096 (12-bit tags)");
        }
        this.owner = owner;
        this.slots = slots;
        this.freeTags = new int[slots.length];
        for (int tag = slots.length - 1; tag >= 0; tag--) {
            if (slots[tag].tag != tag) {
                throw new IllegalArgumentException("slot " + tag + " carries tag " + slots[tag].tag);
            }
            freeTags[freeCount++] = tag;
        }
    }

    /**
     * Takes a free slot for a command with a new CID and the given data range and callback; null when every slot
     * is in use (the caller returns -1 from submit). The SQE is only read for its data direction.
     *
     * @throws IllegalArgumentException for a data range outside the buffer, or data on a command that moves none
     */
    public S take(SubmissionQueueEntry sqe, ByteBuffer data, int dataOffset, int dataLength,
                  HostCommandCallback callback, Object context) {
        if (freeCount == 0) {
            return null;
        }
        DataDirection direction = sqe.dataDirection();
        if (dataLength > 0) {
            if (data == null || dataOffset < 0 || dataOffset > data.capacity() - dataLength) {
                throw new IllegalArgumentException("data range [" + dataOffset + ", +" + dataLength
                    + ") outside the buffer " + data);
            }
            if (direction != DataDirection.HOST_TO_CONTROLLER && direction != DataDirection.CONTROLLER_TO_HOST) {
                throw new IllegalArgumentException("command " + sqe + " moves no data (direction " + direction
                    + ") but " + dataLength + " bytes were given");
            }
        } else if (dataLength < 0) {
            throw new IllegalArgumentException("negative data length " + dataLength);
        }
        S slot = slots[freeTags[--freeCount]];
        outstanding++;
        slot.generation = (slot.generation + 1) & 0xF;
        slot.cid = slot.generation << 12 | slot.tag;
        slot.state = HostCommandSlot.SUBMITTED;
        slot.hostToController = direction == DataDirection.HOST_TO_CONTROLLER;
        slot.data = dataLength > 0 ? data : null;
        slot.dataOffset = dataOffset;
        slot.dataLength = dataLength;
        slot.callback = callback;
        slot.context = context;
        return slot;
    }

    /**
     * Gives back a slot whose command never reached the wire (its submit returns -1): no callback runs. The
     * transport has already let go of what it took for it.
     */
    public void untake(S slot) {
        free(slot);
    }

    /** The outstanding command with this CID, or null (none on its tag, or an earlier use of the tag). */
    public S outstanding(int cid) {
        int tag = cid & 0xFFF;
        if (tag >= slots.length) {
            return null;
        }
        S slot = slots[tag];
        return slot.state != HostCommandSlot.FREE && slot.cid == cid ? slot : null;
    }

    /** The slot of this tag, free or not; null outside the queue's depth. */
    public S at(int tag) {
        return tag >= 0 && tag < slots.length ? slots[tag] : null;
    }

    public int depth() {
        return slots.length;
    }

    public int outstandingCount() {
        return outstanding;
    }

    /**
     * A CQE the host makes up for a command that ends without the controller's (SUCCESS on the last C2HData, a
     * failed queue): zeroed but for the CID. Valid until the next call.
     */
    public CompletionQueueEntry syntheticCqe(int cid) {
        return syntheticCqe.clear().commandId(cid);
    }

    /** Ends the command: the transport lets go of it, the slot is freed, then the callback runs with the CQE. */
    public void complete(S slot, CompletionQueueEntry cqe) {
        slot.onEnd(cqe);
        HostCommandCallback callback = slot.callback;
        Object context = slot.context;
        free(slot);
        try {
            callback.onCompletion(cqe, context);
        } catch (Throwable e) {
            // A callback's failure (an Error too) must not end the poll-group thread that serves every queue on it.
            LOG.error("{}: completion callback failed for CID {}", owner, cqe.commandId(), e);
        }
    }

    /** Completes every outstanding command with the given host-synthesized status (the queue has failed). */
    public void failAll(int status) {
        for (S slot : slots) {
            if (slot.state != HostCommandSlot.FREE) {
                complete(slot, syntheticCqe(slot.cid).status(status));
            }
        }
    }

    private void free(S slot) {
        slot.state = HostCommandSlot.FREE;
        slot.data = null;
        slot.callback = null;
        slot.context = null;
        freeTags[freeCount++] = slot.tag;
        outstanding--;
    }
}
