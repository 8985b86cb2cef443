package io.nvmeof4j.tcp.pdu;

import io.nvmeof4j.protocol.tcp.ICReqPdu;
import io.nvmeof4j.protocol.tcp.ICRespPdu;
import io.nvmeof4j.protocol.tcp.TermReqPdu;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * A connection-level PDU held in its own preallocated buffer: the ICResp, or the TermReq that precedes a
 * protocol-error close.
 */
public final class ControlPduJob extends PduSendJob {
    public final ByteBuffer pdu;
    private final Runnable onSent;
    private final TermReqPdu termReq = new TermReqPdu();
    private final ICRespPdu icResp = new ICRespPdu();

    /** @param onSent what to do once the PDU is out, or null */
    public ControlPduJob(int capacity, Runnable onSent) {
        this.pdu = ByteBuffer.allocateDirect(capacity).order(ByteOrder.LITTLE_ENDIAN);
        this.onSent = onSent;
    }

    /** Arms the first {@code length} bytes of {@link #pdu}. */
    public void arm(int length) {
        pdu.limit(length).position(0);
        segments[0] = pdu;
        armSegments(1);
    }

    /**
     * Arms an ICResp echoing the {@code digest} bits the host asked for, with CPDA 0: we take data at any dword
     * offset, which is also the only value the Linux host accepts. Needs 128 bytes of capacity.
     */
    public void armICResp(int digest, int maxH2CData) {
        pdu.clear();
        icResp.wrap(pdu, 0).init()
            .pduFormatVersion(ICReqPdu.PFV_1_0)
            .controllerPduDataAlignment(0)
            .digest(digest)
            .maxH2CDataLength(maxH2CData);
        arm(ICRespPdu.PDU_LENGTH);
    }

    /**
     * Arms a TermReq of {@code type} (H2C or C2H) quoting the header of the PDU {@code offending} stands at
     * (NVMe/TCP 7.4.7: FES, FEI, then up to 128 bytes of the offending header). Needs {@link TermReqPdu#MAX_PDU_LENGTH}
     * bytes of capacity.
     */
    public void armTermReq(int type, int fes, long fei, PduReceiver offending) {
        pdu.clear();
        int quoted = offending.quoteHeader(pdu, TermReqPdu.ERROR_DATA_OFFSET);
        termReq.wrap(pdu, 0).init(type, quoted).fatalErrorStatus(fes).fatalErrorInformation(fei);
        arm(TermReqPdu.HEADER_LENGTH + quoted);
    }

    @Override
    protected boolean hasNextPdu() {
        return false;
    }

    @Override
    protected boolean armNext() {
        return false;
    }

    @Override
    protected void sent() {
        if (onSent != null) {
            onSent.run();
        }
    }

    @Override
    protected void dropped() {
    }
}
