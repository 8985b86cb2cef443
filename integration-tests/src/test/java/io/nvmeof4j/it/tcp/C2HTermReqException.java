package io.nvmeof4j.it.tcp;

import java.io.IOException;

/** The controller ended the connection with a C2HTermReq PDU (wire reference 5, TermReq). */
public final class C2HTermReqException extends IOException {
    private final transient Pdu pdu;

    public C2HTermReqException(Pdu pdu) {
        super(String.format("controller sent C2HTermReq FES %d FEI %d (PLEN %d)", pdu.u16(8), pdu.u32(10), pdu.plen()));
        this.pdu = pdu;
    }

    public Pdu pdu() {
        return pdu;
    }

    /** Fatal Error Status: 1 invalid header field, 2 PDU sequence, 3 header digest, 4 data out of range, 5 limit, 6 parameter. */
    public int fes() {
        return pdu.u16(8);
    }

    /** Fatal Error Information: for FES 1 the byte offset of the bad header field. */
    public long fei() {
        return pdu.u32(10);
    }
}
