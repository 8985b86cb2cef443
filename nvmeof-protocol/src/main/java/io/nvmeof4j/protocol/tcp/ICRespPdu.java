package io.nvmeof4j.protocol.tcp;

/**
 * Initialize Connection Response, the controller's answer to {@link ICReqPdu}
 * (NVMe/TCP Transport Specification 1.0, 3.6.2.3; wire reference 5).
 *
 * <pre>
 *  0            8      10     11     12            16                         128
 * +------------+------+------+------+-------------+-------------------------+
 * | CH (8)     | PFV  | CPDA | DGST | MAXH2CDATA  | reserved (112)          |
 * +------------+------+------+------+-------------+-------------------------+
 * </pre>
 * CH: type 0x01, HLEN 128, PDO 0, PLEN 128. The Linux host checks PLEN 128, PFV 0, CPDA 0, DGST exactly the bits
 * it asked for, and MAXH2CDATA at least 4096 and a multiple of 4 (nvmet sends 0x400000).
 */
public final class ICRespPdu extends PduFlyweight<ICRespPdu> {
    public static final int HEADER_LENGTH = 128;
    public static final int PDU_LENGTH = 128;

    public static final int PFV_OFFSET = 8;
    public static final int CPDA_OFFSET = 10;
    public static final int DGST_OFFSET = 11;
    public static final int MAXH2CDATA_OFFSET = 12;

    /** Smallest MAXH2CDATA a host accepts. */
    public static final int MIN_MAX_H2C_DATA = 4096;

    /** Writes a fresh ICResp header (type, HLEN, PLEN 128, all fields 0). */
    public ICRespPdu init() {
        return initHeader(PduType.IC_RESP, HEADER_LENGTH, PDU_LENGTH);
    }

    public int pduFormatVersion() {
        return buffer.getShort(offset + PFV_OFFSET) & 0xFFFF;
    }

    public ICRespPdu pduFormatVersion(int pfv) {
        buffer.putShort(offset + PFV_OFFSET, (short) pfv);
        return this;
    }

    /** CPDA, 0-based dwords. */
    public int controllerPduDataAlignment() {
        return buffer.get(offset + CPDA_OFFSET) & 0xFF;
    }

    public ICRespPdu controllerPduDataAlignment(int cpda) {
        buffer.put(offset + CPDA_OFFSET, (byte) cpda);
        return this;
    }

    public int digest() {
        return buffer.get(offset + DGST_OFFSET) & 0xFF;
    }

    public ICRespPdu digest(int dgst) {
        buffer.put(offset + DGST_OFFSET, (byte) dgst);
        return this;
    }

    /** Largest DATAL of one H2CData PDU, in bytes, unsigned 32 bits held in a long. */
    public long maxH2CDataLength() {
        return buffer.getInt(offset + MAXH2CDATA_OFFSET) & 0xFFFF_FFFFL;
    }

    public ICRespPdu maxH2CDataLength(long bytes) {
        buffer.putInt(offset + MAXH2CDATA_OFFSET, (int) bytes);
        return this;
    }
}
