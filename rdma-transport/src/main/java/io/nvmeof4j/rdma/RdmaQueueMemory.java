package io.nvmeof4j.rdma;

import io.nvmeof4j.protocol.command.CompletionQueueEntry;
import io.nvmeof4j.protocol.command.SubmissionQueueEntry;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/** The layout of an {@link RdmaControllerQueue}'s registered memory: receives, responses, SQE copies. */
final class RdmaQueueMemory {
    private RdmaQueueMemory() {
    }

    /*
     * Receive layout. A capsule lands as the 64-byte SQE followed by its in-capsule data, and the data is handed to
     * the backend as it lies: an O_DIRECT write straight from the receive buffer. O_DIRECT wants the memory aligned
     * to the device's logical block size on kernels before 6.0 (and on devices with a stricter DMA alignment since),
     * so data at "buffer + 64" would be refused (EINVAL, answered as Internal Error). Each receive therefore starts
     * 64 bytes before a page boundary and takes whole pages:
     *
     *   memory:  [pad][SQE 0|data 0 ........][SQE 1|data 1 ........] ... [responses][SQE copies]
     *                       ^ page-aligned          ^ page-aligned
     *
     * The pad (< 4 KiB) aligns the first one whatever address the memory has. The cost: the receive area grows
     * from RQ x (64 + ICD) to RQ x roundUp(64 + ICD, 4096), e.g. 8,256 -> 12,288 bytes per receive with 8 KiB of
     * in-capsule data; in exchange no capsule is ever copied to an aligned buffer.
     */

    /** In-capsule data starts on this boundary: enough for O_DIRECT on any logical block size up to 4096. */
    static final int DATA_ALIGNMENT = 4096;

    static int receiveStride(QueueSizing sizing) {
        int icd = sizing.inCapsuleDataSize();
        if (icd == 0) {
            return (sizing.receiveBufferSize() + 63) & ~63; // no data to align (admin queues)
        }
        return (SubmissionQueueEntry.LENGTH + icd + DATA_ALIGNMENT - 1) & -DATA_ALIGNMENT;
    }

    /** The offset from {@code address} at which an SQE must start for the data after it to be page-aligned. */
    static int receiveBase(long address) {
        return (int) Math.floorMod(-(address + SubmissionQueueEntry.LENGTH), (long) DATA_ALIGNMENT);
    }

    /** Bytes of registered memory a queue of this sizing needs (the alignment pad included). */
    static int memoryBytes(QueueSizing sizing) {
        return DATA_ALIGNMENT + sizing.receiveQueueSize() * receiveStride(sizing)
            + sizing.contexts() * (CompletionQueueEntry.LENGTH + SubmissionQueueEntry.LENGTH);
    }

    static ByteBuffer view(ByteBuffer memory, int offset, int length) {
        return memory.slice(offset, length).order(ByteOrder.LITTLE_ENDIAN);
    }
}
