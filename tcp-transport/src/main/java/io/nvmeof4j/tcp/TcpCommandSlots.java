package io.nvmeof4j.tcp;

import io.nvmeof4j.protocol.command.NvmeStatus;
import io.nvmeof4j.protocol.spi.ConnectRefusedException;
import io.nvmeof4j.protocol.spi.MemoryBudget;
import io.nvmeof4j.protocol.spi.PendingConnections;
import io.nvmeof4j.protocol.spi.PortOptions;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;

/**
 * The command slots of one controller queue ({@link TcpRequest}s, indexed by tag, with a free list) and the memory
 * they hold: each slot's PDU memory and in-capsule buffer, sized by the queue's Connect and charged to the
 * transport's queue buffer budget ({@link #install}) until the queue closes ({@link #releaseCharge}). Reactor thread
 * only, except what {@link TcpConnection#install} runs on the thread completing Connect.
 */
final class TcpCommandSlots {
    /** Linux admin queue depth (NVME_AQ_DEPTH); also the command limit before Connect tells us the queue size. */
    static final int INITIAL_SLOTS = 32;
    /**
     * Each slot's in-capsule buffer starts on a page and takes whole pages, so a backend opened O_DIRECT writes
     * straight from it (the pool's buffers are page-sized and aligned the same way).
     */
    private static final int IN_CAPSULE_ALIGNMENT = 4096;
    /** The one in-capsule buffer before Connect (Connect's 1024 bytes fit the admin size), with room to align it. */
    private static final int PRE_CONNECT_BUFFER_ALLOCATION = PortOptions.ADMIN_IN_CAPSULE_DATA_SIZE + IN_CAPSULE_ALIGNMENT;

    private final TcpConnection connection;
    private final MemoryBudget budget;
    private TcpRequest[] slots = new TcpRequest[0];
    private int[] freeSlots = new int[0];
    private int freeCount;
    /** The queue id and size {@link #install} set the queue up for (-1: not yet), which Connect then confirms. */
    private int installedQueueId = -1;
    private int installedSqSize;
    /**
     * What {@link #install} charged to the transport's queue buffer budget for the memory the queue holds from
     * Connect on (receive buffer, slots, in-capsule buffers); given back once, when the queue closes.
     */
    private long budgetCharge;

    TcpCommandSlots(TcpConnection connection, MemoryBudget budget) {
        this.connection = connection;
        this.budget = budget;
        ensureSlots(INITIAL_SLOTS, ByteBuffer.allocateDirect(INITIAL_SLOTS * TcpRequest.SLOT_BYTES)
            .order(ByteOrder.LITTLE_ENDIAN));
    }

    /** Slots in use (reactor thread). */
    int inUse() {
        return slots.length - freeCount;
    }

    /** A free slot (its connection counts it outstanding), or null when all are in use. */
    TcpRequest take() {
        if (freeCount == 0) {
            return null;
        }
        return slots[freeSlots[--freeCount]];
    }

    /**
     * The slot is FREE again, and back on the free list unless the queue is closed; true the first time (the
     * connection's outstanding count drops then), false when it already was.
     */
    boolean free(TcpRequest request, boolean reuse) {
        if (request.state() == TcpRequest.State.FREE) {
            return false;
        }
        request.state(TcpRequest.State.FREE);
        if (reuse) {
            freeSlots[freeCount++] = request.tag;
        }
        return true;
    }

    /** The slot with tag {@code tag} (an R2T's TTAG), or null. */
    TcpRequest byTag(int tag) {
        return tag < slots.length ? slots[tag] : null;
    }

    TcpRequest[] all() {
        return slots;
    }

    boolean installed(int queueId, int sqSize) {
        return installedQueueId == queueId && installedSqSize == sqSize;
    }

    String describeInstalled() {
        return installedQueueId + ", " + installedSqSize;
    }

    /**
     * Allocates the queue's memory for the size its Connect asks (slots and an in-capsule buffer per slot) and charges
     * everything the queue then holds to the transport's queue buffer budget, before the Connect takes effect: an
     * allowed host opening queue after queue gets Controller Busy once the budget is spent, instead of taking direct
     * memory until an allocation fails somewhere on a reactor. The charge is given back when the queue closes
     * ({@link #releaseCharge}: disconnect, error, keep-alive expiry, shutdown). A second install (a second Connect after one
     * refused later on) charges the new shape first and gives the earlier charge back only once that succeeded, so
     * a refusal leaves the earlier set-up charged as it was.
     */
    void install(int queueId, int sqSize, int inCapsuleSize, int receiveBufferSize) throws ConnectRefusedException {
        int count = Math.max(slots.length, sqSize);
        int size = inCapsuleSize;
        long stride = inCapsuleStride(size);
        long inCapsuleBytes = inCapsuleAllocation(count, size);
        long charge = queueCharge(receiveBufferSize, count, size);
        String what = (queueId == 0 ? "admin queue" : "I/O queue " + queueId) + " of " + sqSize + " entries ("
            + count + " slots with " + kib(stride) + " for in-capsule data each)";
        if (inCapsuleBytes > Integer.MAX_VALUE) {
            throw new ConnectRefusedException(NvmeStatus.FABRICS_CONTROLLER_BUSY | NvmeStatus.DNR,
                PendingConnections.Refusal.DIRECT_MEMORY, "NVMe/TCP Connect, setting up the " + what + ": "
                + kib(inCapsuleBytes) + " of in-capsule buffers, more than one direct buffer holds; lower the port's "
                + "inline_data_size or max_queue_size");
        }
        if (!budget.tryReserve(charge)) {
            throw new ConnectRefusedException(NvmeStatus.FABRICS_CONTROLLER_BUSY,
                PendingConnections.Refusal.QUEUE_BUFFER_BUDGET, "NVMe/TCP Connect, setting up the " + what
                + ": its buffers need " + kib(charge) + ", more than the " + kib(Math.max(0, budget.availableBytes()))
                + " left of the " + budget.describe());
        }
        ByteBuffer slotMemory;
        ByteBuffer inCapsuleMemory;
        try {
            slotMemory = count == slots.length ? null
                : ByteBuffer.allocateDirect((count - slots.length) * TcpRequest.SLOT_BYTES).order(ByteOrder.LITTLE_ENDIAN);
            inCapsuleMemory = size == 0 ? null
                : ByteBuffer.allocateDirect((int) inCapsuleBytes).alignedSlice(IN_CAPSULE_ALIGNMENT);
        } catch (OutOfMemoryError e) {
            // Thrown by the allocation (the direct-memory limit, or malloc), not by the VM's heap: this Connect is
            // refused and the reactor goes on serving its other queues.
            budget.release(charge);
            throw new ConnectRefusedException(NvmeStatus.FABRICS_CONTROLLER_BUSY,
                PendingConnections.Refusal.DIRECT_MEMORY, "NVMe/TCP Connect, allocating the buffers of the " + what
                + " (" + kib(charge) + ", within the " + budget.describe() + "): " + e.getMessage());
        }
        long previous = budgetCharge;
        budgetCharge = charge;
        if (previous != 0) {
            budget.release(previous);
        }
        ensureSlots(count, slotMemory);
        provideInCapsuleBuffers(inCapsuleMemory, size, (int) stride, false);
        installedQueueId = queueId;
        installedSqSize = sqSize;
    }

    /**
     * From ICReq on, before Connect: one 8 KiB buffer, shared by every slot, for the Connect command's data, so a
     * socket that never connects holds no more than that (nvmet likewise keeps one command for Connect).
     */
    void providePreConnectBuffer() {
        provideInCapsuleBuffers(ByteBuffer.allocateDirect(PRE_CONNECT_BUFFER_ALLOCATION)
            .alignedSlice(IN_CAPSULE_ALIGNMENT), PortOptions.ADMIN_IN_CAPSULE_DATA_SIZE, 0, true);
    }

    /**
     * Gives the budget back (once). Commands still at the backend keep their slot's buffer reachable until they
     * finish; the memory goes with the last of them.
     */
    void releaseCharge() {
        if (budgetCharge != 0) {
            budget.release(budgetCharge);
            budgetCharge = 0;
        }
    }

    static void checkQueueShape(int queueId, int sqSize) {
        if (queueId < 0 || queueId > 0xFFFF) {
            throw new IllegalArgumentException("queue id " + queueId + " outside 0..65535");
        }
        if (sqSize < 1 || sqSize > 65536) {
            throw new IllegalArgumentException("SQ size " + sqSize + " outside 1..65536");
        }
    }

    /** "16 KiB", "2148 KiB": sizes in messages (rounded up). */
    private static String kib(long bytes) {
        return (bytes + 1023) / 1024 + " KiB";
    }

    /** Grows the slots to {@code count}, their PDU memory from {@code memory} (null when none are added). */
    private void ensureSlots(int count, ByteBuffer memory) {
        int old = slots.length;
        if (count <= old) {
            return;
        }
        slots = Arrays.copyOf(slots, count);
        freeSlots = Arrays.copyOf(freeSlots, count);
        // Push new slots so the lowest tags are handed out first (easier to read in traces).
        for (int tag = count - 1; tag >= old; tag--) {
            slots[tag] = new TcpRequest(connection, tag, memory, (tag - old) * TcpRequest.SLOT_BYTES);
            freeSlots[freeCount++] = tag;
        }
    }

    /** In-capsule buffers start on a page and take whole pages. */
    private static long inCapsuleStride(int size) {
        return ((long) size + IN_CAPSULE_ALIGNMENT - 1) / IN_CAPSULE_ALIGNMENT * IN_CAPSULE_ALIGNMENT;
    }

    /** The one allocation of {@code count} in-capsule buffers of {@code size} bytes, with room to align it. */
    private static long inCapsuleAllocation(int count, int size) {
        return size == 0 ? 0 : count * inCapsuleStride(size) + IN_CAPSULE_ALIGNMENT;
    }

    /**
     * What a connected queue of {@code slotCount} slots holds, charged to the queue buffer budget at Connect: the
     * receive buffer, the slots' PDU memory and the in-capsule buffers.
     */
    static long queueCharge(int receiveBufferSize, int slotCount, int inCapsuleSize) {
        return receiveBufferSize + (long) slotCount * TcpRequest.SLOT_BYTES + inCapsuleAllocation(slotCount, inCapsuleSize);
    }

    /**
     * Gives every slot its own buffer for in-capsule data, sized by the queue's in-capsule data size (8 KiB on the
     * admin queue, the port's inline_data_size on I/O queues), as SPDK gives each request its in-capsule buffer:
     * one direct allocation per queue at Connect ({@link #install}), never per I/O. Before Connect the slots share
     * one buffer ({@link #providePreConnectBuffer}). A command still holding a buffer of the memory replaced (the
     * Connect command itself) keeps that memory reachable until it is done.
     *
     * @param memory page-aligned, {@code stride} bytes per slot (one buffer when {@code shared}); null when
     *               {@code size} is 0 (inline_data_size 0: mapData refuses any in-capsule data)
     */
    private void provideInCapsuleBuffers(ByteBuffer memory, int size, int stride, boolean shared) {
        for (int tag = 0; tag < slots.length; tag++) {
            slots[tag].inCapsuleBuffer = memory == null ? null
                : memory.slice(shared ? 0 : tag * stride, size).order(ByteOrder.LITTLE_ENDIAN);
        }
    }
}
