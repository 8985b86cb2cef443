package io.nvmeof4j.protocol.tcp;

/**
 * Ready to Transfer: the controller asks the host for a range of a write-type command's data
 * (NVMe/TCP Transport Specification 1.0, 3.6.2.9; wire reference 5).
 *
 * <pre>
 *  0            8       10      12        16        20        24      28
 * +------------+-------+-------+---------+---------+---------+-------+
 * | CH (8)     | CCCID | TTAG  | R2TO    | R2TL    | rsvd    | HDGST |
 * +------------+-------+-------+---------+---------+---------+-------+
 * </pre>
 * CH: type 0x09, HLEN 24, PDO 0, PLEN 24 (+4). TTAG is the controller's tag, echoed in the H2CData PDUs that
 * answer; R2TO the offset and R2TL the length wanted. The host answers with H2CData PDUs of at most MAXH2CDATA.
 */
public final class R2TPdu extends PduFlyweight<R2TPdu> {
    public static final int HEADER_LENGTH = 24;

    public static final int CCCID_OFFSET = 8;
    public static final int TTAG_OFFSET = 10;
    public static final int R2TO_OFFSET = 12;
    public static final int R2TL_OFFSET = 16;

    /** Writes a fresh R2T header (PLEN = 24 + {@code headerDigestLength}, fields 0). */
    public R2TPdu init(int headerDigestLength) {
        return initHeader(PduType.R2T, HEADER_LENGTH, HEADER_LENGTH + headerDigestLength);
    }

    public int commandCapsuleCid() {
        return buffer.getShort(offset + CCCID_OFFSET) & 0xFFFF;
    }

    public R2TPdu commandCapsuleCid(int cccid) {
        buffer.putShort(offset + CCCID_OFFSET, (short) cccid);
        return this;
    }

    public int transferTag() {
        return buffer.getShort(offset + TTAG_OFFSET) & 0xFFFF;
    }

    public R2TPdu transferTag(int ttag) {
        buffer.putShort(offset + TTAG_OFFSET, (short) ttag);
        return this;
    }

    /** R2TO, unsigned 32 bits held in a long. */
    public long r2tOffset() {
        return buffer.getInt(offset + R2TO_OFFSET) & 0xFFFF_FFFFL;
    }

    public R2TPdu r2tOffset(long r2to) {
        buffer.putInt(offset + R2TO_OFFSET, (int) r2to);
        return this;
    }

    /** R2TL, unsigned 32 bits held in a long. */
    public long r2tLength() {
        return buffer.getInt(offset + R2TL_OFFSET) & 0xFFFF_FFFFL;
    }

    public R2TPdu r2tLength(long r2tl) {
        buffer.putInt(offset + R2TL_OFFSET, (int) r2tl);
        return this;
    }
}
