package io.nvmeof4j.protocol.spi.host;

import io.nvmeof4j.protocol.command.SubmissionQueueEntry;
import io.nvmeof4j.protocol.spi.TransportAddress;

import java.nio.ByteBuffer;

/**
 * One host-side NVMe queue pair over a fabric connection (NVMe/TCP: one TCP connection). Belongs to one
 * {@link HostPollGroup}; everything but {@link #close} and the plain getters runs on that group's thread.
 * <p>Commands occupy preallocated slots, one per CID, so submitting and completing allocate nothing. The transport
 * owns the CID, SGL1 and the data movement: in-capsule data when a write fits the queue's in-capsule size, otherwise
 * the controller pulls it (NVMe/TCP R2T answered by H2CData PDUs of at most MAXH2CDATA); reads land directly in the
 * caller's buffer (C2HData, honouring the SUCCESS flag).
 */
public interface HostQueue {
    /** Where this queue is connected. */
    TransportAddress address();

    /** The peer and local endpoint for messages: {@code "127.0.0.1:4420 from 127.0.0.1:53124"}. */
    String peer();

    HostPollGroup pollGroup();

    /** Command slots: the most commands outstanding at once. */
    int depth();

    /** Largest write sent in-capsule on this queue (0: none). */
    int inCapsuleDataSize();

    /** Commands submitted and not completed yet (poll-group thread for an exact value). */
    int commandsOutstanding();

    boolean isOpen();

    /**
     * Submits a command. Poll-group thread only.
     * <p>The 64 bytes of {@code sqe} are copied; CID and SGL1 are filled by the transport, the rest (opcode, PSDT,
     * NSID, CDWs) is the caller's. The data direction follows the opcode (or FCTYPE) bits 1:0. For a
     * host-to-controller command the transport reads {@code data[dataOffset, dataOffset + dataLength)}; for
     * controller-to-host it writes there. The buffer's position and limit are used by the transport while the
     * command is outstanding: the caller must not touch them (or the range) until the callback ran. Several
     * commands may use disjoint ranges of one buffer at the same time.
     *
     * @param data       the data buffer, or null when {@code dataLength} is 0
     * @param callback   called once with the completion, on this queue's poll-group thread
     * @param context    handed back to the callback
     * @return the CID the command was sent with, or -1 when every slot is busy or the queue is closed
     * @throws IllegalArgumentException when data is given for a command without data, or the range is outside
     *                                  the buffer
     */
    int submit(SubmissionQueueEntry sqe, ByteBuffer data, int dataOffset, int dataLength,
               HostCommandCallback callback, Object context);

    /**
     * Closes the connection. Any thread, idempotent; the work happens on the poll-group thread: outstanding
     * commands complete with {@link HostStatus#HOST_PATH_ERROR}, then the {@link HostQueueListener} is told.
     */
    void close(String reason);
}
