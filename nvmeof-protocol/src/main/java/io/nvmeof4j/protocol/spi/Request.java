package io.nvmeof4j.protocol.spi;

import io.nvmeof4j.protocol.command.CompletionQueueEntry;
import io.nvmeof4j.protocol.command.SubmissionQueueEntry;

import java.nio.ByteBuffer;

/**
 * One command received by a controller-role transport, handed to the {@link QueueHandler} once every byte the
 * host sends for it has arrived (in-capsule data, or data pulled by R2T/RDMA READ).
 * <p>Request objects are preallocated per queue slot and reused: nothing here allocates. A request is valid from
 * {@link QueueHandler#onCommand} until {@link #complete(int)}; the handler must not touch it afterwards.
 */
public interface Request {
    /** The queue this command arrived on. */
    TransportQueue queue();

    /** The 64-byte submission queue entry, as received. */
    SubmissionQueueEntry command();

    /**
     * The response being built. The handler may set DW0/DW1; the transport fills SQHD, SQID, CID and the
     * status given to {@link #complete(int)}. DW0/DW1 start at zero.
     */
    CompletionQueueEntry response();

    /**
     * The data buffer, or {@code null} when the command transfers no data. Position 0, limit = the transfer
     * length given by the command's SGL, little-endian. Host-to-controller: holds the host's data.
     * Controller-to-host: contents undefined on entry; the handler fills all {@code limit()} bytes on success,
     * and the transport sends them before the response. On an error status no data is sent.
     */
    ByteBuffer data();

    /** Transfer length from the SGL (0 when there is no data). */
    int dataLength();

    /**
     * Whether this controller-to-host command may have its data lent instead of copied into {@link #data()}
     * ({@link #lendData}): the transport can send from any memory (NVMe/TCP without data digest; not RDMA, whose
     * sends need registered memory). Asked on the thread that would lend, which must be the queue's reactor thread.
     */
    default boolean takesLentData() {
        return false;
    }

    /**
     * The command's {@link #dataLength()} bytes are {@code memory}'s from {@code offset}: the transport sends them
     * from there and gives {@link #data()} back (a RAM namespace's chunk, SPDK's zero-copy bdev read). Only when
     * {@link #takesLentData()} said so, before {@link #complete}, on the queue's reactor thread. {@code memory} is a
     * view only this reactor moves (position and limit), kept reachable until the bytes are sent; they are read
     * when the socket takes them, so a write racing this read may show in it (as with any read racing a write).
     */
    default void lendData(ByteBuffer memory, int offset) {
        throw new UnsupportedOperationException("this transport sends data from its own buffers only");
    }

    /**
     * {@link System#nanoTime()} by when the command capsule was received (the start of its latency): the poll
     * round's stamp ({@link io.nvmeof4j.protocol.spi.transport.RoundClock}), read when the round's first capsule was
     * taken, so at most the round's work earlier than the capsule itself.
     */
    long receivedNanos();

    /**
     * The command's place in its submission queue: 1 for the first capsule received on the queue, one more for each
     * capsule after it, counted when the capsule arrives (before any of its data). Commands reach the handler once
     * their data is in, so a command pulling its data (R2T, RDMA READ) can reach it after a later one; this number
     * still says which commands the host put next to each other (a fused pair: NVMe Base 2.0, 3.4.2).
     */
    long sequence();

    /**
     * Finishes the command with an {@link io.nvmeof4j.protocol.command.NvmeStatus} code. Callable from any
     * thread (a backend worker, a timer); the transport moves the completion to the queue's reactor thread.
     * Exactly once per command. If the queue was closed meanwhile, the request is just released.
     */
    void complete(int nvmeStatus);

    /**
     * This request's slot in its queue: a small index (0 for the first slot, below the number of slots the
     * transport made for the queue), fixed for the life of the object and never shared by two commands in flight.
     * The command layer keeps its typed per-slot context in an array of its own indexed by it (nvmet embeds its
     * {@code nvmet_req} in the transport's per-slot structure; here the command layer's context is found from the
     * slot instead), so nothing is allocated per command and no context is stored here.
     */
    int slot();
}
