package io.nvmeof4j.protocol.tcp;

/**
 * Host to controller data, sent in answer to an {@link R2TPdu} (NVMe/TCP Transport Specification 1.0, 3.6.2.7;
 * wire reference 5).
 *
 * <pre>
 *  0            8       10      12        16        20        24      (28)   PDO          PLEN
 * +------------+-------+-------+---------+---------+---------+-------+-----+------+-------+
 * | CH (8)     | CCCID | TTAG  | DATAO   | DATAL   | rsvd    | HDGST | pad | data | DDGST |
 * +------------+-------+-------+---------+---------+---------+-------+-----+------+-------+
 * </pre>
 * CH: type 0x06, HLEN 24, flags LAST_PDU on the last PDU of an R2T. CCCID: the command's CID. TTAG: the tag the
 * controller put in the R2T. DATAO: offset of this data within the command's transfer; consecutive PDUs are
 * contiguous. DATAL at most the controller's MAXH2CDATA; PLEN = PDO + DATAL (+ DDGST).
 */
public final class H2CDataPdu extends PduFlyweight<H2CDataPdu> {
    public static final int HEADER_LENGTH = 24;

    public static final int CCCID_OFFSET = 8;
    public static final int TTAG_OFFSET = 10;
    public static final int DATAO_OFFSET = 12;
    public static final int DATAL_OFFSET = 16;

    /** Writes a fresh H2CData header with the given PLEN (fields 0, PDO 0). */
    public H2CDataPdu init(long plen) {
        return initHeader(PduType.H2C_DATA, HEADER_LENGTH, plen);
    }

    public int commandCapsuleCid() {
        return buffer.getShort(offset + CCCID_OFFSET) & 0xFFFF;
    }

    public H2CDataPdu commandCapsuleCid(int cccid) {
        buffer.putShort(offset + CCCID_OFFSET, (short) cccid);
        return this;
    }

    public int transferTag() {
        return buffer.getShort(offset + TTAG_OFFSET) & 0xFFFF;
    }

    public H2CDataPdu transferTag(int ttag) {
        buffer.putShort(offset + TTAG_OFFSET, (short) ttag);
        return this;
    }

    /** DATAO, unsigned 32 bits held in a long. */
    public long dataOffset() {
        return buffer.getInt(offset + DATAO_OFFSET) & 0xFFFF_FFFFL;
    }

    public H2CDataPdu dataOffset(long datao) {
        buffer.putInt(offset + DATAO_OFFSET, (int) datao);
        return this;
    }

    /** DATAL, unsigned 32 bits held in a long. */
    public long dataLength() {
        return buffer.getInt(offset + DATAL_OFFSET) & 0xFFFF_FFFFL;
    }

    public H2CDataPdu dataLength(long datal) {
        buffer.putInt(offset + DATAL_OFFSET, (int) datal);
        return this;
    }
}
