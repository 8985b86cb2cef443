package io.nvmeof4j.tcp;

import io.nvmeof4j.protocol.tcp.H2CDataPdu;
import io.nvmeof4j.protocol.tcp.ICReqPdu;
import io.nvmeof4j.protocol.tcp.PduFlyweight;
import io.nvmeof4j.protocol.tcp.PduType;
import io.nvmeof4j.protocol.tcp.TermReqPdu;
import io.nvmeof4j.tcp.pdu.PduReceiver;
import io.nvmeof4j.tcp.pdu.PduSendQueue;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;

import static io.nvmeof4j.protocol.tcp.PduFlyweight.FLAG_DDGSTF;
import static io.nvmeof4j.protocol.tcp.PduFlyweight.FLAG_HDGSTF;
import static io.nvmeof4j.protocol.tcp.PduFlyweight.FLAG_LAST_PDU;
import static io.nvmeof4j.protocol.tcp.TermReqPdu.FES_DATA_LIMIT_EXCEEDED;
import static io.nvmeof4j.protocol.tcp.TermReqPdu.FES_DATA_OUT_OF_RANGE;
import static io.nvmeof4j.protocol.tcp.TermReqPdu.FES_HEADER_DIGEST_ERROR;
import static io.nvmeof4j.protocol.tcp.TermReqPdu.FES_INVALID_HEADER_FIELD;
import static io.nvmeof4j.protocol.tcp.TermReqPdu.FES_PDU_SEQUENCE_ERROR;
import static io.nvmeof4j.protocol.tcp.TermReqPdu.FES_UNSUPPORTED_PARAMETER;

/**
 * What a controller accepts from the wire (NVMe/TCP Transport Specification 1.0, 3.6 and 7.4; wire reference 5):
 * ICReq first, then CapsuleCmd, H2CData and H2CTermReq, each header checked in wire order (type, flags, HLEN, PDO,
 * PLEN, then the PDU-specific fields) so that the first bad field is the one the C2HTermReq reports, with FES and
 * FEI as the spec has them. A PDU that passes goes to its {@link TcpConnection}: a capsule becomes a command, an
 * H2CData payload lands in the command's buffer. The framing itself is the engine's ({@link PduReceiver}); this
 * class is also the connection's side of the engine's send queue ({@link PduSendQueue.Owner}). Reactor thread only.
 */
final class ControllerPduHandler implements PduReceiver.Handler, PduSendQueue.Owner {
    /** The connection's logger: these lines were always the connection's. */
    private static final Logger LOG = LoggerFactory.getLogger(TcpConnection.class);

    private final TcpConnection connection;
    private final int maxH2CDataSize;
    /** Largest data transfer of one command: the port's MDTS, bounded by the pool's largest buffer. */
    private final int maxTransferSize;
    private final Runnable readAgain;
    /** Set by the connection before the first PDU. */
    PduReceiver receiver;
    /** The command whose in-capsule data or H2CData payload is being received. */
    private TcpRequest payloadRequest;
    private boolean payloadInCapsule;

    ControllerPduHandler(TcpConnection connection, int maxH2CDataSize, int maxTransferSize) {
        this.connection = connection;
        this.maxH2CDataSize = maxH2CDataSize;
        this.maxTransferSize = maxTransferSize;
        this.readAgain = connection::onReadable;
    }

    @Override
    public boolean onPduHeader(int type, int flags, int hlen, int pdo, long plen, int available) {
        if (!connection.initialized()) {
            return receiveICReq(type, flags, hlen, pdo, plen, available);
        }
        switch (type) {
            case PduType.CAPSULE_CMD:
                return receiveCapsuleCmd(flags, hlen, pdo, plen, available);
            case PduType.H2C_DATA:
                return receiveH2CData(flags, hlen, pdo, plen, available);
            case PduType.H2C_TERM_REQ:
                return receiver.receiveTermReq(hlen, plen, available);
            case PduType.IC_REQ:
                connection.terminate(FES_PDU_SEQUENCE_ERROR, 0, type, "ICReq on an initialized connection");
                return false;
            default:
                connection.terminate(FES_INVALID_HEADER_FIELD, PduFlyweight.TYPE_OFFSET, type,
                    "PDU type not accepted by a controller");
                return false;
        }
    }

    private boolean receiveICReq(int type, int flags, int hlen, int pdo, long plen, int available) {
        if (type != PduType.IC_REQ) {
            connection.terminate(FES_PDU_SEQUENCE_ERROR, 0, type, "expected ICReq first");
            return false;
        }
        if (flags != 0) {
            connection.terminate(FES_INVALID_HEADER_FIELD, PduFlyweight.FLAGS_OFFSET, type, "flags must be 0");
            return false;
        }
        if (hlen != ICReqPdu.HEADER_LENGTH) {
            connection.terminate(FES_INVALID_HEADER_FIELD, PduFlyweight.HLEN_OFFSET, type,
                "HLEN " + hlen + ", expected 128");
            return false;
        }
        if (pdo != 0) {
            connection.terminate(FES_INVALID_HEADER_FIELD, PduFlyweight.PDO_OFFSET, type, "PDO " + pdo + ", expected 0");
            return false;
        }
        if (plen != ICReqPdu.PDU_LENGTH) {
            connection.terminate(FES_INVALID_HEADER_FIELD, PduFlyweight.PLEN_OFFSET, type,
                "PLEN " + plen + ", expected 128");
            return false;
        }
        if (available < ICReqPdu.PDU_LENGTH) {
            return false;
        }
        int pfv = receiver.u16(ICReqPdu.PFV_OFFSET);
        int hpda = receiver.u8(ICReqPdu.HPDA_OFFSET);
        int digest = receiver.u8(ICReqPdu.DGST_OFFSET);
        if (pfv != ICReqPdu.PFV_1_0) {
            connection.terminate(FES_UNSUPPORTED_PARAMETER, ICReqPdu.PFV_OFFSET, type, "PFV " + pfv + " (only 0 exists)");
            return false;
        }
        if (hpda > ICReqPdu.MAX_PDA) {
            connection.terminate(FES_INVALID_HEADER_FIELD, ICReqPdu.HPDA_OFFSET, type, "HPDA " + hpda + " above 31");
            return false;
        }
        long maxR2T = receiver.u32(ICReqPdu.MAXR2T_OFFSET) + 1;
        receiver.consume(ICReqPdu.PDU_LENGTH);
        // We support both digests, so the answer is exactly what the host asked for (the host checks the echo).
        int negotiated = digest & (ICReqPdu.DIGEST_HEADER | ICReqPdu.DIGEST_DATA);
        boolean headerDigest = (negotiated & ICReqPdu.DIGEST_HEADER) != 0;
        int alignment = (hpda + 1) * 4;
        int header = PduType.headerLength(PduType.C2H_DATA) + (headerDigest ? PduFlyweight.DIGEST_LENGTH : 0);
        LOG.debug("NVMe/TCP {}: connection initialized (header digest {}, data digest {}, HPDA {}, MAXR2T {})",
            connection.peer(), headerDigest, (negotiated & ICReqPdu.DIGEST_DATA) != 0, hpda, maxR2T);
        return connection.initialize(negotiated, (header + alignment - 1) / alignment * alignment);
    }

    /**
     * Checks the common header of a CapsuleCmd or H2CData in wire order (type was checked already; then flags,
     * HLEN, PDO, PLEN), so the lowest bad field is the one reported.
     *
     * @return the PDU's data length without digest, or -1 after terminating the connection
     */
    private long checkDataPduHeader(int type, int flags, int hlen, int pdo, long plen, int validFlags) {
        int dataDigestLength = connection.dataDigestLength;
        int fullHeader = hlen + ((flags & FLAG_HDGSTF) != 0 ? PduFlyweight.DIGEST_LENGTH : 0);
        long dataAndDigest = plen > fullHeader ? plen - pdo : 0;
        if ((flags & ~validFlags) != 0) {
            connection.terminate(FES_INVALID_HEADER_FIELD, PduFlyweight.FLAGS_OFFSET, type,
                String.format("flags 0x%02x carry undefined bits", flags));
            return -1;
        }
        int expectedDigestFlags = (connection.headerDigestLength > 0 ? FLAG_HDGSTF : 0)
            | (dataDigestLength > 0 && dataAndDigest != 0 ? FLAG_DDGSTF : 0);
        if ((flags & (FLAG_HDGSTF | FLAG_DDGSTF)) != expectedDigestFlags) {
            connection.terminate(FES_INVALID_HEADER_FIELD, PduFlyweight.FLAGS_OFFSET, type,
                String.format("digest flags 0x%02x do not match the negotiated digests", flags));
            return -1;
        }
        int expectedHlen = PduType.headerLength(type);
        if (hlen != expectedHlen) {
            connection.terminate(FES_INVALID_HEADER_FIELD, PduFlyweight.HLEN_OFFSET, type,
                "HLEN " + hlen + ", expected " + expectedHlen);
            return -1;
        }
        // CPDA 0: data at any dword-aligned offset after the header. PDO may be 0 when there is no data.
        if ((dataAndDigest != 0 || pdo != 0) && (pdo < fullHeader || pdo > plen || (pdo & 3) != 0)) {
            connection.terminate(FES_INVALID_HEADER_FIELD, PduFlyweight.PDO_OFFSET, type,
                "PDO " + pdo + " with HLEN " + hlen + " and PLEN " + plen);
            return -1;
        }
        if (plen < fullHeader || (dataDigestLength > 0 && dataAndDigest != 0 && dataAndDigest <= dataDigestLength)) {
            connection.terminate(FES_INVALID_HEADER_FIELD, PduFlyweight.PLEN_OFFSET, type,
                "PLEN " + plen + " with HLEN " + hlen + " and PDO " + pdo);
            return -1;
        }
        return dataAndDigest == 0 ? 0 : dataAndDigest - dataDigestLength;
    }

    private boolean receiveCapsuleCmd(int flags, int hlen, int pdo, long plen, int available) {
        long dataLength = checkDataPduHeader(PduType.CAPSULE_CMD, flags, hlen, pdo, plen, FLAG_HDGSTF | FLAG_DDGSTF);
        if (dataLength < 0) {
            return false;
        }
        if (dataLength > Math.max(connection.inCapsuleDataSize(), maxTransferSize)) {
            connection.terminate(FES_DATA_LIMIT_EXCEEDED, 0, PduType.CAPSULE_CMD,
                dataLength + " bytes of in-capsule data, the queue takes " + connection.inCapsuleDataSize());
            return false;
        }
        int dataStart = dataLength > 0 ? pdo : hlen + connection.headerDigestLength;
        if (available < dataStart) {
            return false;
        }
        if (!receiver.headerDigestMatches(hlen)) {
            connection.terminate(FES_HEADER_DIGEST_ERROR, 0, PduType.CAPSULE_CMD, "header digest mismatch");
            return false;
        }
        return connection.onCapsule(dataStart, (int) dataLength);
    }

    /** In-capsule data of {@code request} follows (after {@link PduReceiver#consume} up to PDO). */
    void receiveInCapsuleData(TcpRequest request, int length) {
        receivePayload(request, 0, length, true);
    }

    private void receivePayload(TcpRequest request, int start, int length, boolean inCapsule) {
        payloadRequest = request;
        payloadInCapsule = inCapsule;
        receiver.receivePayload(request.data, start, length);
    }

    private boolean receiveH2CData(int flags, int hlen, int pdo, long plen, int available) {
        int type = PduType.H2C_DATA;
        long pduDataLength = checkDataPduHeader(type, flags, hlen, pdo, plen, FLAG_HDGSTF | FLAG_DDGSTF | FLAG_LAST_PDU);
        if (pduDataLength < 0) {
            return false;
        }
        if (pduDataLength == 0) {
            connection.terminate(FES_INVALID_HEADER_FIELD, PduFlyweight.PLEN_OFFSET, type, "H2CData without data");
            return false;
        }
        if (available < pdo) {
            return false;
        }
        if (!receiver.headerDigestMatches(hlen)) {
            connection.terminate(FES_HEADER_DIGEST_ERROR, 0, type, "header digest mismatch");
            return false;
        }
        int cccid = receiver.u16(H2CDataPdu.CCCID_OFFSET);
        int ttag = receiver.u16(H2CDataPdu.TTAG_OFFSET);
        long datao = receiver.u32(H2CDataPdu.DATAO_OFFSET);
        long datal = receiver.u32(H2CDataPdu.DATAL_OFFSET);
        TcpRequest request = connection.slots.byTag(ttag);
        if (request == null || request.state() != TcpRequest.State.RECEIVING || !request.r2tSent) {
            connection.terminate(FES_INVALID_HEADER_FIELD, H2CDataPdu.TTAG_OFFSET, type,
                "no R2T outstanding for TTAG " + ttag);
            return false;
        }
        if (cccid != request.commandId) {
            connection.terminate(FES_INVALID_HEADER_FIELD, H2CDataPdu.CCCID_OFFSET, type,
                "CCCID " + cccid + " but TTAG " + ttag + " belongs to CID " + request.commandId);
            return false;
        }
        if (datal != pduDataLength) {
            connection.terminate(FES_INVALID_HEADER_FIELD, H2CDataPdu.DATAL_OFFSET, type,
                "DATAL " + datal + " but the PDU carries " + pduDataLength + " bytes");
            return false;
        }
        if (datal > maxH2CDataSize) {
            connection.terminate(FES_DATA_LIMIT_EXCEEDED, 0, type,
                "DATAL " + datal + " above MAXH2CDATA " + maxH2CDataSize);
            return false;
        }
        if (datao + datal > request.dataLength) {
            connection.terminate(FES_DATA_OUT_OF_RANGE, 0, type, "DATAO " + datao + " + DATAL " + datal
                + " beyond the R2T's " + request.dataLength + " bytes");
            return false;
        }
        if (datao != request.h2cReceived) {
            connection.terminate(FES_PDU_SEQUENCE_ERROR, 0, type,
                "DATAO " + datao + ", expected " + request.h2cReceived);
            return false;
        }
        boolean last = datao + datal == request.dataLength;
        if (last != ((flags & FLAG_LAST_PDU) != 0)) {
            connection.terminate(FES_PDU_SEQUENCE_ERROR, 0, type, last ? "LAST_PDU missing on the last H2CData"
                : "LAST_PDU set before the end of the R2T");
            return false;
        }
        receiver.consume(pdo);
        receivePayload(request, (int) datao, (int) datal, false);
        return true;
    }

    @Override
    public void onPayloadReceived(int length) {
        TcpRequest request = payloadRequest;
        payloadRequest = null;
        if (!payloadInCapsule) {
            request.h2cReceived += length;
            if (request.h2cReceived != request.dataLength) {
                return; // more H2CData for this R2T
            }
        }
        request.state(TcpRequest.State.READY_TO_EXECUTE);
        connection.advance(request);
    }

    @Override
    public void onDataDigestError(int received, int computed) {
        // nvmet (nvmet_tcp_try_recv_ddgst) fails the whole connection on a data digest error and sends no
        // response for the command; the host sees the queue drop and reconnects. We do the same.
        TcpRequest request = payloadRequest;
        TcpConnection.PEER_LOG.warnFrom(connection.peerKey, "NVMe/TCP {}: data digest error in {} for CID {} "
            + "(received 0x{}, computed 0x{}); closing", connection.peer(), payloadInCapsule ? "CapsuleCmd" : "H2CData",
            request.commandId, Integer.toHexString(received), Integer.toHexString(computed));
        connection.close("data digest error on CID " + request.commandId);
    }

    @Override
    public void onTermReq(int fes, long fei) {
        TcpConnection.PEER_LOG.warnFrom(connection.peerKey, "NVMe/TCP {}: host terminated the connection with "
            + "H2CTermReq: {} (FEI {})", connection.peer(), TermReqPdu.fesName(fes), fei);
        connection.close("host sent H2CTermReq: " + TermReqPdu.fesName(fes) + ", FEI " + fei);
    }

    @Override
    public void onMalformedTermReq(int hlen, long plen) {
        // NVMe/TCP 7.4.7: a TermReq with a bad length is not answered; the connection just ends.
        TcpConnection.PEER_LOG.warnFrom(connection.peerKey, "NVMe/TCP {}: malformed H2CTermReq (HLEN {}, PLEN {}); "
            + "closing", connection.peer(), hlen, plen);
        connection.close("malformed H2CTermReq");
    }

    @Override
    public void onStreamEnded(IOException error) {
        connection.onStreamEnded(error);
    }

    @Override
    public void readLater() {
        connection.group.execute(readAgain);
    }

    // ---- PduSendQueue.Owner ------------------------------------------------------------------------------------

    @Override
    public void requestFlush() {
        if (!connection.inFlushList) {
            connection.group.requestFlush(connection);
        }
    }

    @Override
    public void writeInterestChanged() {
        connection.updateInterestOps();
    }

    @Override
    public void sendFailed(IOException e) {
        connection.close("send failed: " + e.getMessage());
    }
}
