package io.nvmeof4j.protocol.tcp;

/**
 * Initialize Connection Request, the first PDU a host sends on a new connection
 * (NVMe/TCP Transport Specification 1.0, 3.6.2.2; wire reference 5).
 *
 * <pre>
 *  0            8      10     11     12            16                         128
 * +------------+------+------+------+-------------+-------------------------+
 * | CH (8)     | PFV  | HPDA | DGST | MAXR2T      | reserved (112)          |
 * +------------+------+------+------+-------------+-------------------------+
 * </pre>
 * CH: type 0x00, HLEN 128, PDO 0, PLEN 128, no digests. PFV 0 (version 1.0). HPDA: the data alignment the host
 * wants in the PDUs it receives, 0-based dwords (0..31). DGST: bit 0 header digest, bit 1 data digest.
 * MAXR2T: outstanding R2Ts per command the host accepts, 0-based.
 */
public final class ICReqPdu extends PduFlyweight<ICReqPdu> {
    public static final int HEADER_LENGTH = 128;
    public static final int PDU_LENGTH = 128;

    public static final int PFV_OFFSET = 8;
    public static final int HPDA_OFFSET = 10;
    public static final int DGST_OFFSET = 11;
    public static final int MAXR2T_OFFSET = 12;

    /** The only PDU format version: NVMe/TCP 1.0. */
    public static final int PFV_1_0 = 0;
    /** Largest HPDA/CPDA value (128-byte alignment). */
    public static final int MAX_PDA = 31;
    /** DGST bit 0: header digests on every PDU type that has one. */
    public static final int DIGEST_HEADER = 0x01;
    /** DGST bit 1: data digests on every PDU that carries data. */
    public static final int DIGEST_DATA = 0x02;

    /** Writes a fresh ICReq header (type, HLEN, PLEN 128, all fields 0). */
    public ICReqPdu init() {
        return initHeader(PduType.IC_REQ, HEADER_LENGTH, PDU_LENGTH);
    }

    public int pduFormatVersion() {
        return buffer.getShort(offset + PFV_OFFSET) & 0xFFFF;
    }

    public ICReqPdu pduFormatVersion(int pfv) {
        buffer.putShort(offset + PFV_OFFSET, (short) pfv);
        return this;
    }

    /** HPDA, 0-based dwords. */
    public int hostPduDataAlignment() {
        return buffer.get(offset + HPDA_OFFSET) & 0xFF;
    }

    public ICReqPdu hostPduDataAlignment(int hpda) {
        buffer.put(offset + HPDA_OFFSET, (byte) hpda);
        return this;
    }

    public int digest() {
        return buffer.get(offset + DGST_OFFSET) & 0xFF;
    }

    public ICReqPdu digest(int dgst) {
        buffer.put(offset + DGST_OFFSET, (byte) dgst);
        return this;
    }

    /** MAXR2T as on the wire (0-based), unsigned 32 bits held in a long. */
    public long maxR2T() {
        return buffer.getInt(offset + MAXR2T_OFFSET) & 0xFFFF_FFFFL;
    }

    public ICReqPdu maxR2T(long maxR2T) {
        buffer.putInt(offset + MAXR2T_OFFSET, (int) maxR2T);
        return this;
    }
}
