package io.nvmeof4j.protocol.tcp;

/**
 * Controller to host data for a read-type command (NVMe/TCP Transport Specification 1.0, 3.6.2.8;
 * wire reference 5).
 *
 * <pre>
 *  0            8       10      12        16        20        24      (28)   PDO          PLEN
 * +------------+-------+-------+---------+---------+---------+-------+-----+------+-------+
 * | CH (8)     | CCCID | rsvd  | DATAO   | DATAL   | rsvd    | HDGST | pad | data | DDGST |
 * +------------+-------+-------+---------+---------+---------+-------+-----+------+-------+
 * </pre>
 * CH: type 0x07, HLEN 24, flags LAST_PDU on the command's last data PDU, and SUCCESS with it when the command
 * succeeded and SQ flow control is disabled (then no CapsuleResp follows). PDO honours the host's HPDA:
 * 24 (+4) rounded up to a multiple of (HPDA + 1) × 4, the gap zero-filled. The Linux host ignores DATAO and
 * fills the buffer sequentially, so PDUs of one command go out in order.
 */
public final class C2HDataPdu extends PduFlyweight<C2HDataPdu> {
    public static final int HEADER_LENGTH = 24;

    public static final int CCCID_OFFSET = 8;
    public static final int DATAO_OFFSET = 12;
    public static final int DATAL_OFFSET = 16;

    /** Writes a fresh C2HData header with the given PLEN (fields 0, PDO 0). */
    public C2HDataPdu init(long plen) {
        return initHeader(PduType.C2H_DATA, HEADER_LENGTH, plen);
    }

    public int commandCapsuleCid() {
        return buffer.getShort(offset + CCCID_OFFSET) & 0xFFFF;
    }

    public C2HDataPdu commandCapsuleCid(int cccid) {
        buffer.putShort(offset + CCCID_OFFSET, (short) cccid);
        return this;
    }

    /** DATAO, unsigned 32 bits held in a long. */
    public long dataOffset() {
        return buffer.getInt(offset + DATAO_OFFSET) & 0xFFFF_FFFFL;
    }

    public C2HDataPdu dataOffset(long datao) {
        buffer.putInt(offset + DATAO_OFFSET, (int) datao);
        return this;
    }

    /** DATAL, unsigned 32 bits held in a long. */
    public long dataLength() {
        return buffer.getInt(offset + DATAL_OFFSET) & 0xFFFF_FFFFL;
    }

    public C2HDataPdu dataLength(long datal) {
        buffer.putInt(offset + DATAL_OFFSET, (int) datal);
        return this;
    }
}
