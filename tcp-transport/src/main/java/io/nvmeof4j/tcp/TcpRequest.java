package io.nvmeof4j.tcp;

import io.nvmeof4j.protocol.command.SubmissionQueueEntry;
import io.nvmeof4j.protocol.spi.TransportQueue;
import io.nvmeof4j.protocol.spi.transport.BufferWaitQueue;
import io.nvmeof4j.protocol.spi.transport.CompletionInbox;
import io.nvmeof4j.protocol.spi.transport.DataMapping;
import io.nvmeof4j.protocol.spi.transport.TransportRequest;
import io.nvmeof4j.protocol.tcp.C2HDataPdu;
import io.nvmeof4j.protocol.tcp.CapsuleRespPdu;
import io.nvmeof4j.protocol.tcp.PduFlyweight;
import io.nvmeof4j.protocol.tcp.PduType;
import io.nvmeof4j.protocol.tcp.R2TPdu;
import io.nvmeof4j.tcp.pdu.PduSendJob;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * One command slot of a connection, reused for every command that lands in it; its index is the TTAG of the R2Ts
 * it sends. The shared {@link TransportRequest} (the received SQE in the slot's memory, the CQE inside the slot's
 * CapsuleResp PDU, which the handler fills in place) plus what NVMe/TCP adds: the header of the R2T or C2HData PDU
 * being sent, a data digest, the H2C progress, and the slot's own buffer for in-capsule data
 * ({@link #inCapsuleBuffer}); R2T and C2H data go through a pool buffer. Its PDUs go out as one job of the
 * connection's send queue ({@link Send}).
 * <p>Its life is {@link State}, moved by its connection's {@link TcpConnection#advance}; everything but
 * {@link #complete} runs on the reactor thread. Between states it may wait in its poll group's
 * {@link BufferWaitQueue} (NEED_BUFFER) or, when completed on another thread, in its {@link CompletionInbox}
 * (EXECUTED).
 */
final class TcpRequest extends TransportRequest<TcpRequest.State, TcpRequest> {
    /**
     * A slot's states (SPDK's {@code spdk_nvmf_tcp_req_state}, reduced to what this target does). Only
     * {@link TcpConnection#advance} moves a slot from one to the next, except {@link #complete} (EXECUTING to
     * EXECUTED, any thread) and the waits' ends that set the state advance continues from (all data received:
     * READY_TO_EXECUTE; PDUs written: COMPLETED).
     */
    enum State {
        /** On the connection's free list. */
        FREE,
        /** Its capsule arrived and its data was mapped ({@link #completionStatus} holds a refusal, if any). */
        NEW,
        /** An R2T or C2H command waiting for a pool buffer (in the group's buffer wait queue while the pool is dry). */
        NEED_BUFFER,
        /** Its in-capsule data, or (after the R2T) its H2CData, is arriving. */
        RECEIVING,
        /** Every byte the command needs is here. */
        READY_TO_EXECUTE,
        /** With the command layer, which will call {@link #complete}. */
        EXECUTING,
        /** Completed (maybe on another thread, then through the completion inbox): its PDUs are queued next. */
        EXECUTED,
        /** Its C2HData and CapsuleResp PDUs are queued or being written. */
        SENDING,
        /** Its PDUs are on the socket: the handler is told, and the slot goes FREE. */
        COMPLETED
    }

    /** How the command's data moves: the shared kinds ({@link DataMapping}) under their NVMe/TCP names. */
    static final int TRANSFER_NONE = DataMapping.TRANSFER_NONE;
    static final int TRANSFER_IN_CAPSULE = DataMapping.TRANSFER_IN_CAPSULE;
    static final int TRANSFER_R2T = DataMapping.TRANSFER_FROM_HOST;
    static final int TRANSFER_C2H = DataMapping.TRANSFER_TO_HOST;

    /** Slot memory per request: SQE 64 @0, CapsuleResp 24+4 @64, data PDU header up to 128 @96, digest 4 @224. */
    static final int SLOT_BYTES = 256;
    private static final int SQE_AT = 0;
    private static final int RESPONSE_AT = 64;
    private static final int DATA_HEADER_AT = 96;
    /** C2HData header + digest + HPDA padding: PDO is at most 128 (HPDA 31). */
    private static final int DATA_HEADER_BYTES = 128;
    private static final int DATA_DIGEST_AT = 224;

    final TcpConnection connection;
    /** Slot index, sent as TTAG. */
    final int tag;
    /** This slot's PDUs as one job of the connection's send queue. */
    final Send send;

    /**
     * This slot's buffer for in-capsule data (before Connect, the queue's one buffer for Connect's data), null when
     * the queue takes none: in-capsule data never waits for the pool. Set by the connection at ICReq and Connect.
     */
    ByteBuffer inCapsuleBuffer;

    /** Where the command's data starts in {@link #data}: 0, or where a device lent it ({@link #lendData}). */
    int dataBase;
    /** {@link #data} is memory a device lent (a RAM chunk's view): shared by other slots, so sent a range at a time. */
    boolean dataLent;

    /** H2C: bytes received so far (the DATAO the next H2CData must carry). */
    int h2cReceived;
    /** H2C: the R2T has been written, H2CData for this TTAG is now legal. */
    boolean r2tSent;

    TcpRequest(TcpConnection connection, int tag, ByteBuffer slotMemory, int slotOffset) {
        this(connection, tag, slotMemory, slotOffset, new CapsuleRespPdu(),
            view(slotMemory, slotOffset + RESPONSE_AT, CapsuleRespPdu.HEADER_LENGTH + PduFlyweight.DIGEST_LENGTH));
    }

    private TcpRequest(TcpConnection connection, int tag, ByteBuffer slotMemory, int slotOffset,
                       CapsuleRespPdu response, ByteBuffer responsePdu) {
        super(view(slotMemory, slotOffset + SQE_AT, SubmissionQueueEntry.LENGTH), response.wrap(responsePdu, 0).cqe(),
            State.FREE, State.EXECUTING, State.EXECUTED);
        this.connection = connection;
        this.tag = tag;
        this.send = new Send(response, responsePdu, view(slotMemory, slotOffset + DATA_HEADER_AT, DATA_HEADER_BYTES),
            view(slotMemory, slotOffset + DATA_DIGEST_AT, PduFlyweight.DIGEST_LENGTH));
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
    protected void completed() {
        if (connection.group.inReactorThread()) {
            connection.advance(this);
        } else {
            connection.group.enqueueCompletion(this);
        }
    }

    @Override
    public int slot() {
        return tag;
    }

    /** A read's data can come from any memory unless a data digest must be computed over bytes that cannot change. */
    @Override
    public boolean takesLentData() {
        return transfer == TRANSFER_C2H && connection.dataDigestLength == 0 && connection.group.inReactorThread();
    }

    @Override
    public void lendData(ByteBuffer memory, int offset) {
        if (!takesLentData()) {
            throw new IllegalStateException(this + ": lent data it cannot take");
        }
        connection.releaseData(this); // the pool buffer it waited for goes back unused
        data = memory;
        dataBase = offset;
        dataLent = true;
    }

    // ---- slot lifecycle (reactor thread) -----------------------------------------------------------------------

    /** Takes a freshly received SQE (64 bytes at {@code sqeOffset} of {@code source}) into this slot: NEW. */
    void begin(ByteBuffer source, int sqeOffset, long nowNanos, long sequence) {
        beginCommand(source, sqeOffset, nowNanos, sequence);
        h2cReceived = 0;
        r2tSent = false;
        dataBase = 0;
        dataLent = false;
        state(State.NEW);
    }

    /**
     * The slot's PDUs as one job of the connection's send queue (the PDU engine's {@link PduSendJob}): a CapsuleResp,
     * an R2T, or a read's C2HData PDUs with the response after the last one, each armed in the slot's own memory (the
     * CQE the handler filled in place, the data PDU header, the data digest) around the command's data buffer.
     */
    final class Send extends PduSendJob {
        private static final int RESPONSE = 0;
        private static final int R2T = 1;
        private static final int C2H_DATA = 2;

        private final CapsuleRespPdu response;
        private final ByteBuffer responsePdu;
        private final ByteBuffer dataHeader;
        private final C2HDataPdu c2hData = new C2HDataPdu();
        private final R2TPdu r2t = new R2TPdu();
        private final ByteBuffer dataDigest;
        private int kind;
        /** C2H: bytes of the data armed so far. */
        private int offset;
        private boolean successFlag;

        private Send(CapsuleRespPdu response, ByteBuffer responsePdu, ByteBuffer dataHeader, ByteBuffer dataDigest) {
            this.response = response;
            this.responsePdu = responsePdu;
            this.dataHeader = dataHeader;
            this.dataDigest = dataDigest;
            c2hData.wrap(dataHeader, 0);
            r2t.wrap(dataHeader, 0);
        }

        /** Arms a CapsuleResp as the only PDU of this job. */
        void armResponse(int headerDigestLength) {
            kind = RESPONSE;
            segments[0] = prepareResponsePdu(headerDigestLength);
            armSegments(1);
        }

        /** Arms one R2T for the whole transfer (as nvmet does: the host splits its answer at MAXH2CDATA). */
        void armR2T(int headerDigestLength) {
            kind = R2T;
            dataHeader.clear(); // the last send left position/limit anywhere; absolute writes need the whole view
            r2t.init(headerDigestLength)
                .flags(headerDigestLength > 0 ? PduFlyweight.FLAG_HDGSTF : 0)
                .commandCapsuleCid(commandId)
                .transferTag(tag)
                .r2tOffset(0)
                .r2tLength(dataLength);
            if (headerDigestLength > 0) {
                dataHeader.putInt(R2TPdu.HEADER_LENGTH,
                    connection.group.crc.compute(dataHeader, 0, R2TPdu.HEADER_LENGTH));
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
            kind = C2H_DATA;
            offset = 0;
            successFlag = withSuccessFlag;
            armNextC2HDataPdu();
        }

        private void armNextC2HDataPdu() {
            TcpConnection c = connection;
            int remaining = dataLength - offset;
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
                .dataOffset(offset)
                .dataLength(chunk);
            if (hdgst > 0) {
                dataHeader.putInt(C2HDataPdu.HEADER_LENGTH,
                    c.group.crc.compute(dataHeader, 0, C2HDataPdu.HEADER_LENGTH));
            }
            // Bytes between the digest and PDO (HPDA padding) stay zero: nothing else writes that part of the slot.
            dataHeader.position(0);
            dataHeader.limit(pdo);
            int n = 0;
            segments[n++] = dataHeader;
            int start = dataBase + offset;
            data.limit(start + chunk);
            data.position(start);
            segments[n++] = data;
            if (ddgst > 0) {
                dataDigest.putInt(0, c.group.crc.compute(data, start, chunk));
                dataDigest.clear();
                segments[n++] = dataDigest;
            }
            if (last && !successFlag) {
                segments[n++] = prepareResponsePdu(hdgst);
            }
            offset += chunk;
            armSegments(n, dataLent ? 1 : -1); // a lent chunk view may carry other slots' reads too
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
        protected boolean hasNextPdu() {
            return kind == C2H_DATA && offset < dataLength;
        }

        @Override
        protected boolean armNext() {
            if (hasNextPdu()) {
                armNextC2HDataPdu();
                return true;
            }
            return false;
        }

        @Override
        protected void sent() {
            if (kind == R2T) {
                r2tSent = true; // still RECEIVING: H2CData for this TTAG may now arrive
            } else {
                state(State.COMPLETED);
                connection.advance(TcpRequest.this);
            }
        }

        @Override
        protected void dropped() {
            connection.recycle(TcpRequest.this);
        }

        @Override
        public String toString() {
            return TcpRequest.this.toString();
        }
    }

    // ---- waiting in the poll group -------------------------------------------------------------------------------

    @Override
    public void finishCompletion() {
        connection.advance(this);
    }

    @Override
    public boolean waitAbandoned() {
        return connection.isGone();
    }

    @Override
    public void bufferGranted(ByteBuffer buffer) {
        connection.onBufferGranted(this, buffer);
    }

    @Override
    public void dropWaiting() {
        connection.recycle(this);
    }

    @Override
    public String toString() {
        return "TcpRequest[tag=" + tag + " cid=" + commandId + " state=" + state() + " transfer=" + transfer
            + " length=" + dataLength + "]";
    }
}
