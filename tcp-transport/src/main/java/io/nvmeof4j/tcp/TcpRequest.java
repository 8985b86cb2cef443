package io.nvmeof4j.tcp;

import io.nvmeof4j.protocol.command.CompletionQueueEntry;
import io.nvmeof4j.protocol.command.DataDirection;
import io.nvmeof4j.protocol.command.SubmissionQueueEntry;
import io.nvmeof4j.protocol.spi.Request;
import io.nvmeof4j.protocol.spi.TransportQueue;
import io.nvmeof4j.protocol.tcp.C2HDataPdu;
import io.nvmeof4j.protocol.tcp.CapsuleRespPdu;
import io.nvmeof4j.protocol.tcp.PduFlyweight;
import io.nvmeof4j.protocol.tcp.PduType;
import io.nvmeof4j.protocol.tcp.R2TPdu;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * One command slot of a connection, reused for every command that lands in it; its index is the TTAG of the R2Ts
 * it sends. It owns preallocated views of the connection's slot memory: the received SQE, the CapsuleResp PDU
 * (whose CQE the handler fills in place), the header of the R2T or C2HData PDU being sent, and a data digest.
 * Its in-capsule data lands in a buffer of its own ({@link #inCapsuleBuffer}); R2T and C2H data in a pool buffer.
 * <p>Life of a slot: FREE → RECEIVING (in-capsule data or R2T/H2CData) or PARKED (an R2T or C2H command waiting
 * for a pool buffer) →
 * EXECUTING (with the handler) → COMPLETING (complete() called, maybe handed over from another thread) →
 * SENDING → FREE. Everything but {@link #complete} runs on the reactor thread.
 */
final class TcpRequest extends SendJob implements Request {
    static final int FREE = 0;
    static final int RECEIVING = 1;
    static final int PARKED = 2;
    static final int EXECUTING = 3;
    static final int COMPLETING = 4;
    static final int SENDING = 5;

    /** How the command's data moves. */
    static final int TRANSFER_NONE = 0;
    static final int TRANSFER_IN_CAPSULE = 1;
    static final int TRANSFER_R2T = 2;
    static final int TRANSFER_C2H = 3;

    private static final int SEND_RESPONSE = 0;
    private static final int SEND_R2T = 1;
    private static final int SEND_C2H_DATA = 2;

    /** Slot memory per request: SQE 64 @0, CapsuleResp 24+4 @64, data PDU header up to 128 @96, digest 4 @224. */
    static final int SLOT_BYTES = 256;
    private static final int SQE_AT = 0;
    private static final int RESPONSE_AT = 64;
    private static final int DATA_HEADER_AT = 96;
    /** C2HData header + digest + HPDA padding: PDO is at most 128 (HPDA 31). */
    private static final int DATA_HEADER_BYTES = 128;
    private static final int DATA_DIGEST_AT = 224;

    private static final VarHandle STATE;

    static {
        try {
            STATE = MethodHandles.lookup().findVarHandle(TcpRequest.class, "state", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    final TcpConnection connection;
    /** Slot index, sent as TTAG. */
    final int tag;

    private final SubmissionQueueEntry sqe = new SubmissionQueueEntry();
    private final ByteBuffer sqeBuffer;
    private final ByteBuffer responsePdu;
    private final CapsuleRespPdu response = new CapsuleRespPdu();
    private final CompletionQueueEntry cqe;
    private final ByteBuffer dataHeader;
    private final C2HDataPdu c2hData = new C2HDataPdu();
    private final R2TPdu r2t = new R2TPdu();
    private final ByteBuffer dataDigest;

    @SuppressWarnings("unused") // accessed through STATE
    private volatile int state;
    int commandId;
    DataDirection direction = DataDirection.NONE;
    int transfer;
    int dataLength;
    ByteBuffer data;
    /** {@link #data} is a buffer of the poll group's pool, to be given back when the slot is done. */
    boolean dataPooled;
    /**
     * This slot's buffer for in-capsule data (before Connect, the queue's one buffer for Connect's data), null when
     * the queue takes none: in-capsule data never waits for the pool. Set by the connection at ICReq and Connect.
     */
    ByteBuffer inCapsuleBuffer;
    long receivedNanos;
    long sequence;

    /** H2C: bytes received so far (the DATAO the next H2CData must carry). */
    int h2cReceived;
    /** H2C: the R2T has been written, H2CData for this TTAG is now legal. */
    boolean r2tSent;
    /** The handler took this command (so it hears when the response is sent). */
    boolean reachedHandler;

    private int sendKind;
    private int sendOffset;
    private boolean successFlag;

    /** Status handed over by a completion from another thread. */
    int completionStatus;
    /** Intrusive links: the poll group's completion stack and its FIFO of commands waiting for a buffer. */
    TcpRequest completedNext;
    TcpRequest parkedNext;

    TcpRequest(TcpConnection connection, int tag, ByteBuffer slotMemory, int slotOffset) {
        this.connection = connection;
        this.tag = tag;
        this.sqeBuffer = view(slotMemory, slotOffset + SQE_AT, SubmissionQueueEntry.LENGTH);
        this.responsePdu = view(slotMemory, slotOffset + RESPONSE_AT,
            CapsuleRespPdu.HEADER_LENGTH + PduFlyweight.DIGEST_LENGTH);
        this.dataHeader = view(slotMemory, slotOffset + DATA_HEADER_AT, DATA_HEADER_BYTES);
        this.dataDigest = view(slotMemory, slotOffset + DATA_DIGEST_AT, PduFlyweight.DIGEST_LENGTH);
        sqe.wrap(sqeBuffer, 0);
        response.wrap(responsePdu, 0);
        cqe = response.cqe();
        c2hData.wrap(dataHeader, 0);
        r2t.wrap(dataHeader, 0);
    }

    private static ByteBuffer view(ByteBuffer memory, int offset, int length) {
        memory.limit(offset + length).position(offset);
        ByteBuffer view = memory.slice().order(ByteOrder.LITTLE_ENDIAN);
        memory.clear();
        return view;
    }

    // ---- Request ---------------------------------------------------------------------------------------------

    @Override
    public TransportQueue queue() {
        return connection;
    }

    @Override
    public SubmissionQueueEntry command() {
        return sqe;
    }

    @Override
    public CompletionQueueEntry response() {
        return cqe;
    }

    @Override
    public ByteBuffer data() {
        return data;
    }

    @Override
    public int dataLength() {
        return dataLength;
    }

    @Override
    public long receivedNanos() {
        return receivedNanos;
    }

    @Override
    public long sequence() {
        return sequence;
    }

    @Override
    public void complete(int nvmeStatus) {
        if (!STATE.compareAndSet(this, EXECUTING, COMPLETING)) {
            throw new IllegalStateException("command " + commandId + " on " + connection.peer()
                + " completed twice, or completed while not executing");
        }
        TcpPollGroup group = connection.group;
        if (Thread.currentThread() == group.reactorThread()) {
            connection.onCompleted(this, nvmeStatus);
        } else {
            completionStatus = nvmeStatus;
            group.enqueueCompletion(this); // its CAS publishes the status and the handler's data writes
        }
    }

    /** Takes back a command the handler failed on, unless it was completed meanwhile. */
    boolean abandon() {
        return STATE.compareAndSet(this, EXECUTING, COMPLETING);
    }

    @Override
    public int slot() {
        return tag;
    }

    // ---- slot lifecycle (reactor thread) -----------------------------------------------------------------------

    int state() {
        return (int) STATE.getOpaque(this);
    }

    void state(int newState) {
        STATE.setRelease(this, newState);
    }

    /** Takes a freshly received SQE (64 bytes at {@code sqeOffset} of {@code source}) into this slot. */
    void begin(ByteBuffer source, int sqeOffset, long nowNanos, long sequence) {
        for (int i = 0; i < SubmissionQueueEntry.LENGTH; i += 8) {
            sqeBuffer.putLong(i, source.getLong(sqeOffset + i));
        }
        cqe.clear();
        commandId = sqe.commandId();
        direction = sqe.dataDirection();
        receivedNanos = nowNanos;
        this.sequence = sequence;
        transfer = TRANSFER_NONE;
        dataLength = 0;
        data = null;
        h2cReceived = 0;
        r2tSent = false;
        reachedHandler = false;
        state(RECEIVING);
    }

    /** Fills the CQE fields the transport owns. */
    void fillCompletion(int status, int sqId, int sqHead) {
        cqe.commandId(commandId).sqId(sqId).sqHead(sqHead).status(status);
    }

    /** Arms a CapsuleResp as the only PDU of this job. */
    void armResponse(int headerDigestLength) {
        sendKind = SEND_RESPONSE;
        segments[0] = prepareResponsePdu(headerDigestLength);
        armSegments(1);
    }

    /** Arms one R2T for the whole transfer (as nvmet does: the host splits its answer at MAXH2CDATA). */
    void armR2T(int headerDigestLength) {
        sendKind = SEND_R2T;
        dataHeader.clear(); // the last send left position/limit anywhere; absolute writes need the whole view
        r2t.init(headerDigestLength)
            .flags(headerDigestLength > 0 ? PduFlyweight.FLAG_HDGSTF : 0)
            .commandCapsuleCid(commandId)
            .transferTag(tag)
            .r2tOffset(0)
            .r2tLength(dataLength);
        if (headerDigestLength > 0) {
            dataHeader.putInt(R2TPdu.HEADER_LENGTH, connection.group.crc.compute(dataHeader, 0, R2TPdu.HEADER_LENGTH));
        }
        dataHeader.position(0);
        dataHeader.limit(R2TPdu.HEADER_LENGTH + headerDigestLength);
        segments[0] = dataHeader;
        armSegments(1);
    }

    /**
     * Arms the data of a successful read: C2HData PDUs of at most the connection's C2H PDU size, the last one
     * followed by the CapsuleResp, or carrying SUCCESS instead of it.
     */
    void armReadData(boolean withSuccessFlag) {
        sendKind = SEND_C2H_DATA;
        sendOffset = 0;
        successFlag = withSuccessFlag;
        armNextC2HDataPdu();
    }

    private void armNextC2HDataPdu() {
        TcpConnection c = connection;
        int remaining = dataLength - sendOffset;
        int chunk = Math.min(remaining, c.c2hDataPduSize);
        boolean last = chunk == remaining;
        int hdgst = c.headerDigestLength;
        int ddgst = c.dataDigestLength;
        int pdo = c.c2hDataOffset;
        int flags = (hdgst > 0 ? PduFlyweight.FLAG_HDGSTF : 0)
            | (ddgst > 0 ? PduFlyweight.FLAG_DDGSTF : 0)
            | (last ? PduFlyweight.FLAG_LAST_PDU : 0)
            | (last && successFlag ? PduFlyweight.FLAG_SUCCESS : 0);
        dataHeader.clear();
        c2hData.init((long) pdo + chunk + ddgst)
            .flags(flags)
            .pduDataOffset(pdo)
            .commandCapsuleCid(commandId)
            .dataOffset(sendOffset)
            .dataLength(chunk);
        if (hdgst > 0) {
            dataHeader.putInt(C2HDataPdu.HEADER_LENGTH, c.group.crc.compute(dataHeader, 0, C2HDataPdu.HEADER_LENGTH));
        }
        // Bytes between the digest and PDO (HPDA padding) stay zero: nothing else writes that part of the slot.
        dataHeader.position(0);
        dataHeader.limit(pdo);
        int n = 0;
        segments[n++] = dataHeader;
        data.limit(sendOffset + chunk);
        data.position(sendOffset);
        segments[n++] = data;
        if (ddgst > 0) {
            dataDigest.putInt(0, c.group.crc.compute(data, sendOffset, chunk));
            dataDigest.clear();
            segments[n++] = dataDigest;
        }
        if (last && !successFlag) {
            segments[n++] = prepareResponsePdu(hdgst);
        }
        sendOffset += chunk;
        armSegments(n);
    }

    private ByteBuffer prepareResponsePdu(int headerDigestLength) {
        // Only the common header: the CQE after it was filled by the handler and fillCompletion.
        responsePdu.clear();
        response.pduType(PduType.CAPSULE_RESP)
            .flags(headerDigestLength > 0 ? PduFlyweight.FLAG_HDGSTF : 0)
            .headerLength(CapsuleRespPdu.HEADER_LENGTH)
            .pduDataOffset(0)
            .pduLength(CapsuleRespPdu.HEADER_LENGTH + headerDigestLength);
        if (headerDigestLength > 0) {
            responsePdu.putInt(CapsuleRespPdu.HEADER_LENGTH,
                connection.group.crc.compute(responsePdu, 0, CapsuleRespPdu.HEADER_LENGTH));
        }
        responsePdu.position(0);
        responsePdu.limit(CapsuleRespPdu.HEADER_LENGTH + headerDigestLength);
        return responsePdu;
    }

    @Override
    boolean hasMorePdus() {
        return sendKind == SEND_C2H_DATA && sendOffset < dataLength;
    }

    @Override
    boolean armNextPdu() {
        if (hasMorePdus()) {
            armNextC2HDataPdu();
            return true;
        }
        return false;
    }

    @Override
    void onSent() {
        if (sendKind == SEND_R2T) {
            r2tSent = true; // still RECEIVING: H2CData for this TTAG may now arrive
        } else {
            connection.responseSent(this);
            connection.recycle(this);
        }
    }

    @Override
    void onDropped() {
        connection.recycle(this);
    }

    @Override
    public String toString() {
        return "TcpRequest[tag=" + tag + " cid=" + commandId + " state=" + state() + " transfer=" + transfer
            + " length=" + dataLength + "]";
    }
}
