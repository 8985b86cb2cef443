package io.nvmeof4j.rdma.host;

import io.nvmeof4j.protocol.command.CompletionQueueEntry;
import io.nvmeof4j.protocol.command.SglDescriptor;
import io.nvmeof4j.protocol.command.SubmissionQueueEntry;
import io.nvmeof4j.protocol.spi.TransportAddress;
import io.nvmeof4j.protocol.spi.host.AbstractHostQueue;
import io.nvmeof4j.protocol.spi.host.HostCommandCallback;
import io.nvmeof4j.protocol.spi.host.HostCommandSlot;
import io.nvmeof4j.protocol.spi.host.HostPollGroup;
import io.nvmeof4j.protocol.spi.host.HostQueueListener;
import io.nvmeof4j.protocol.spi.host.HostStatus;
import io.nvmeof4j.rdma.MemoryKeys;
import io.nvmeof4j.rdma.PolledQueues;
import io.nvmeof4j.rdma.QueuePairVerbs;
import io.nvmeof4j.rdma.WorkCompletions;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.concurrent.TimeUnit;

/**
 * One host-side NVMe queue over one RC queue pair (NVMe over Fabrics RDMA binding; wire reference 4). Everything
 * runs on the owning {@link RdmaHostPollGroup}'s thread.
 *
 * <h2>Send</h2>
 * {@link #submit} writes the SQE into the slot's capsule buffer (registered queue memory) and sends it with one
 * signalled SEND. Data: a write that fits the queue's in-capsule size (I/O queues only: the Linux host never puts
 * data in an admin capsule, and nvmet's admin receive buffers hold just the SQE) is copied behind the SQE with SGL
 * 0x01; any other transfer gets a keyed SGL 0x40 (never 0x4F: the memory stays registered) on the caller's own
 * buffer, registered once through the {@link RegistrationCache}, or on a registered bounce buffer when the buffer
 * cannot be registered (a heap buffer). Commands without data carry an all-zero keyed SGL, as the Linux host's do.
 *
 * <h2>Receive</h2>
 * HRQSIZE receives of 16 bytes, each a response capsule. A command completes once its response and its own SEND's
 * completion are both in; then its slot is freed and its callback runs. A work-completion error, a response for no
 * outstanding command, or a CM DISCONNECTED closes the queue: the queue pair goes to error (no more DMA into host
 * memory), outstanding commands complete with {@link HostStatus#HOST_PATH_ERROR}, the listener hears why, and the
 * queue is polled until its flushed work requests are back, then destroyed.
 */
final class RdmaHostQueue extends AbstractHostQueue<RdmaHostCommand> implements PolledQueues.Polled {
    private static final Logger LOG = LoggerFactory.getLogger(RdmaHostQueue.class);

    static final long WR_RECV = 1L << 32;
    static final long WR_SEND = 2L << 32;
    private static final long WR_KIND_MASK = 0xFFL << 32;
    static final long DRAIN_TIMEOUT_NANOS = TimeUnit.SECONDS.toNanos(2);

    final RdmaHostPollGroup group;
    private final HostMemory memory;
    private final QueuePairVerbs verbs;
    private final int receiveCount;
    private final ByteBuffer queueMemory;
    private final MemoryKeys queueKeys;
    private final Runnable onDestroyed;
    private final int receivesAt;

    private boolean closing;
    private boolean destroyed;
    private int postedReceives;
    private int postedSends;
    private long drainDeadline;
    boolean registered;
    /** On the group's flush list (capsules staged). */
    boolean flushQueued;

    static int stride(int inCapsuleDataSize) {
        return (SubmissionQueueEntry.LENGTH + inCapsuleDataSize + 63) & ~63;
    }

    /** Bytes of registered memory a queue of {@code depth} slots and {@code receives} receives needs. */
    static int memoryBytes(int depth, int inCapsuleDataSize, int receives) {
        return depth * stride(inCapsuleDataSize) + receives * CompletionQueueEntry.LENGTH
            + depth * CompletionQueueEntry.LENGTH;
    }

    RdmaHostQueue(RdmaHostPollGroup group, HostMemory memory, QueuePairVerbs verbs, TransportAddress address,
                  String peer, int depth, int inCapsuleDataSize, int receiveCount, ByteBuffer queueMemory,
                  MemoryKeys queueKeys, HostQueueListener listener, Runnable onDestroyed) {
        super("NVMe/RDMA", address, peer, inCapsuleDataSize,
            commands(memory, depth, inCapsuleDataSize, receiveCount, queueMemory, queueKeys), listener);
        this.group = group;
        this.memory = memory;
        this.verbs = verbs;
        this.receiveCount = receiveCount;
        this.queueMemory = queueMemory.order(ByteOrder.LITTLE_ENDIAN);
        this.queueKeys = queueKeys;
        this.onDestroyed = onDestroyed;
        this.receivesAt = depth * stride(inCapsuleDataSize());
    }

    /** The slots over the queue memory: capsule buffers first, then the receives, then each slot's CQE copy. */
    private static RdmaHostCommand[] commands(HostMemory memory, int depth, int inCapsuleDataSize, int receiveCount,
                                              ByteBuffer queueMemory, MemoryKeys queueKeys) {
        if (queueMemory.capacity() < memoryBytes(depth, inCapsuleDataSize, receiveCount)) {
            throw new IllegalArgumentException("queue memory too small");
        }
        int stride = stride(inCapsuleDataSize);
        int cqesAt = depth * stride + receiveCount * CompletionQueueEntry.LENGTH;
        RdmaHostCommand[] commands = new RdmaHostCommand[depth];
        for (int tag = 0; tag < depth; tag++) {
            commands[tag] = new RdmaHostCommand(tag, memory,
                queueMemory.slice(tag * stride, stride).order(ByteOrder.LITTLE_ENDIAN),
                queueKeys.address() + (long) tag * stride,
                queueMemory.slice(cqesAt + tag * CompletionQueueEntry.LENGTH, CompletionQueueEntry.LENGTH)
                    .order(ByteOrder.LITTLE_ENDIAN));
        }
        return commands;
    }

    // ---- HostQueue ---------------------------------------------------------------------------------------------

    @Override
    public HostPollGroup pollGroup() {
        return group;
    }

    /** Posts every receive; before the CM connect, so the first response always finds one. */
    int postInitialReceives() {
        for (int i = 0; i < receiveCount; i++) {
            int rc = postReceive(i);
            if (rc < 0) {
                return rc;
            }
        }
        return verbs.flush();
    }

    private int postReceive(int index) {
        int rc = verbs.postReceive(WR_RECV | index, queueKeys.address() + receivesAt
            + (long) index * CompletionQueueEntry.LENGTH, CompletionQueueEntry.LENGTH, queueKeys.lkey());
        if (rc == 0) {
            postedReceives++;
        }
        return rc;
    }

    @Override
    public int submit(SubmissionQueueEntry sqe, ByteBuffer data, int dataOffset, int dataLength,
                      HostCommandCallback callback, Object context) {
        RdmaHostCommand command = take(sqe, data, dataOffset, dataLength, callback, context);
        if (command == null) {
            return -1;
        }
        if (dataLength > SglDescriptor.MAX_KEYED_LENGTH) {
            slots.untake(command);
            throw new IllegalArgumentException(dataLength + " bytes exceed a keyed SGL's 24-bit length");
        }
        ByteBuffer capsule = command.capsule;
        ByteBuffer source = sqe.buffer();
        int from = sqe.offset();
        for (int i = 0; i < SubmissionQueueEntry.LENGTH; i += 8) {
            capsule.putLong(i, source.getLong(from + i));
        }
        int sendLength = SubmissionQueueEntry.LENGTH;
        SglDescriptor sgl = command.sqe.sgl1();
        command.cacheEntry = -1;
        command.bounce = null;
        if (dataLength == 0) {
            sgl.address(0).keyedLength(0).key(0).id(SglDescriptor.ID_KEYED_ADDRESS);
        } else if (command.hostToController && dataLength <= inCapsuleDataSize()) {
            capsule.put(SubmissionQueueEntry.LENGTH, data, dataOffset, dataLength);
            sgl.address(0).length(dataLength).id(SglDescriptor.ID_IN_CAPSULE);
            sendLength += dataLength;
        } else {
            long dataAddress;
            int rkey;
            int entry = memory.cache().acquire(data);
            if (entry >= 0) {
                MemoryKeys keys = memory.cache().keys(entry);
                dataAddress = keys.address() + dataOffset;
                rkey = keys.rkey();
                command.cacheEntry = entry;
            } else {
                ByteBuffer bounce = memory.bounce().acquire(dataLength);
                if (bounce == null) {
                    slots.untake(command);
                    return -1; // retried when a command completes and returns its bounce buffer
                }
                if (command.hostToController) {
                    bounce.put(0, data, dataOffset, dataLength);
                }
                dataAddress = memory.bounceKeys().address() + memory.bounce().regionOffset(bounce);
                rkey = memory.bounceKeys().rkey();
                command.bounce = bounce;
            }
            sgl.address(dataAddress).keyedLength(dataLength).key(rkey).id(SglDescriptor.ID_KEYED_ADDRESS);
        }
        command.sqe.commandId(command.cid);
        // Staged: the poll group posts every capsule of the round in one chained post (flush).
        int rc = verbs.postSend(WR_SEND | command.tag, command.capsuleAddress, sendLength, queueKeys.lkey(), 0);
        if (rc < 0) {
            command.releaseData();
            slots.untake(command); // submit fails: its callback must not run as well
            closeNow("posting command capsules to " + peer() + " failed: errno " + -rc);
            return -1;
        }
        requestFlush();
        postedSends++;
        command.sendDone = false;
        command.responseReceived = false;
        return command.cid;
    }

    // ---- completions ---------------------------------------------------------------------------------------------

    private void requestFlush() {
        if (!flushQueued) {
            flushQueued = true;
            group.requestFlush(this);
        }
    }

    /**
     * Posts the receives and capsules staged since the last flush: the receives in one chained post, then the
     * capsules in another, one JNI crossing. Poll-group thread.
     */
    int flush() {
        flushQueued = false;
        if (destroyed || !isOpen() || verbs.staged() == 0) {
            return 0;
        }
        int n = verbs.staged();
        int rc = verbs.flush();
        if (rc < 0) {
            closeNow("posting " + n + " receives and command capsules to " + peer() + " failed: errno " + -rc);
        }
        return 1;
    }

    @Override
    public int armNotification() {
        return destroyed ? 0 : verbs.armNotification();
    }

    @Override
    public int poll(WorkCompletions wc) {
        if (destroyed) {
            return 0;
        }
        int n = verbs.poll(wc);
        if (n < 0) {
            closeNow("polling the completion queue failed: errno " + -n);
            return 1;
        }
        for (int i = 0; i < n; i++) {
            onWorkCompletion(wc.wrId[i], wc.status[i], wc.byteLength[i], wc.vendorError[i]);
        }
        if (closing) {
            checkDrained();
        }
        return n;
    }

    private void onWorkCompletion(long wrId, int status, int byteLength, int vendorError) {
        long kind = wrId & WR_KIND_MASK;
        int index = (int) wrId;
        if (kind == WR_RECV) {
            postedReceives--;
            if (status != WorkCompletions.STATUS_SUCCESS) {
                onError("receive", status, vendorError);
                return;
            }
            if (!closing) {
                onResponse(index, byteLength);
            }
            return;
        }
        postedSends--;
        if (status != WorkCompletions.STATUS_SUCCESS) {
            onError("command SEND", status, vendorError);
            return;
        }
        RdmaHostCommand command = slots.at(index);
        if (closing || command == null || command.state == HostCommandSlot.FREE) {
            return;
        }
        command.sendDone = true;
        if (command.responseReceived) {
            slots.complete(command, command.cqe);
        }
    }

    private void onError(String what, int status, int vendorError) {
        if (status == WorkCompletions.STATUS_WR_FLUSH_ERROR && closing) {
            return;
        }
        closeNow(what + " failed: " + WorkCompletions.statusName(status) + " (vendor error 0x"
            + Integer.toHexString(vendorError) + ")");
    }

    private void onResponse(int receive, int byteLength) {
        int at = receivesAt + receive * CompletionQueueEntry.LENGTH;
        if (byteLength < CompletionQueueEntry.LENGTH) {
            closeNow("response capsule of " + byteLength + " bytes from " + peer());
            return;
        }
        int cid = queueMemory.getShort(at + CompletionQueueEntry.CID_OFFSET) & 0xFFFF;
        RdmaHostCommand command = slots.outstanding(cid);
        if (command == null || command.responseReceived) {
            closeNow("response for CID " + cid + ", which is not outstanding");
            return;
        }
        ByteBuffer copy = command.cqeBuffer;
        copy.putLong(0, queueMemory.getLong(at));
        copy.putLong(8, queueMemory.getLong(at + 8));
        int rc = postReceive(receive);
        if (rc < 0) {
            closeNow("posting a receive failed: errno " + -rc);
            return;
        }
        requestFlush(); // the receive goes out with the round's flush, before the capsules staged in it
        command.responseReceived = true;
        if (command.sendDone) {
            slots.complete(command, command.cqe);
        }
    }

    // ---- closing -------------------------------------------------------------------------------------------------

    /** The queue pair to error, so that no more DMA reaches host memory before the commands are failed. */
    @Override
    protected void stopIo(String reason) {
        closing = true;
        drainDeadline = System.nanoTime() + DRAIN_TIMEOUT_NANOS;
        postedSends -= verbs.discardStagedSends(); // never posted: nothing will complete them
        postedReceives -= verbs.discardStagedReceives();
        verbs.disconnect(); // the queue pair is in error when this returns: no more DMA into host memory
        if (!registered) {
            group.register(this); // polled until its flushed work requests are back
        }
    }

    @Override
    protected void closed() {
        checkDrained();
    }

    private void checkDrained() {
        if (destroyed) {
            return;
        }
        boolean drained = postedReceives <= 0 && postedSends <= 0;
        if (!drained && System.nanoTime() - drainDeadline < 0 && !group.isClosed()) {
            return;
        }
        destroyNow();
    }

    /** Destroys the queue pair and deregisters the queue's memory. */
    void destroyNow() {
        if (destroyed) {
            return;
        }
        if (isOpen()) {
            closeNow("poll group closed");
            if (destroyed) {
                return;
            }
        }
        destroyed = true;
        verbs.destroy();
        group.unregister(this);
        try {
            onDestroyed.run();
        } catch (RuntimeException e) {
            LOG.warn("NVMe/RDMA host {}: releasing the queue's resources failed", peer(), e);
        }
    }

    boolean isDestroyed() {
        return destroyed;
    }
}
