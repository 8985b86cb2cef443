package io.nvmeof4j.it.tcp;

import java.util.Arrays;
import java.util.HexFormat;
import java.util.zip.CRC32C;

/**
 * One NVMe/TCP PDU as read off the socket (wire reference 5), with its digests checked.
 *
 * <pre>
 *  0      1       2      3      4               8                 HLEN    (+4 HDGST)  PDO             PLEN
 * +------+-------+------+------+---------------+-----------------+-------+----------+---------+------+
 * | type | flags | HLEN | PDO  | PLEN          | PDU-specific hdr | HDGST | pad      | data    | DDGST|
 * +------+-------+------+------+---------------+-----------------+-------+----------+---------+------+
 * </pre>
 * flags: bit 0 HDGSTF, 1 DDGSTF, 2 LAST_PDU, 3 SUCCESS. Parsing never throws: what does not fit is reported by
 * {@link #malformation()}, so a test can look at exactly what the controller sent.
 */
public final class Pdu {
    private final byte[] raw;
    private final byte[] data;
    private final boolean headerDigestPresent;
    private final boolean headerDigestOk;
    private final boolean dataDigestPresent;
    private final boolean dataDigestOk;
    private final String malformation;

    private Pdu(byte[] raw) {
        this.raw = raw;
        int type = type();
        int flags = flags();
        int hlen = hlen();
        int pdo = pdo();
        int plen = raw.length;
        String problem = null;
        boolean hd = false;
        boolean hdOk = true;
        boolean dd = false;
        boolean ddOk = true;
        byte[] payload = new byte[0];

        if (hlen < 8 || hlen > plen) {
            problem = "HLEN " + hlen + " outside 8..PLEN " + plen;
        } else if (type == RawNvmeTcpHost.PDU_C2H_TERM_REQ || type == RawNvmeTcpHost.PDU_H2C_TERM_REQ) {
            // TermReq: no digests; the rest of the PDU is the offending header (wire reference 5).
            payload = Arrays.copyOfRange(raw, hlen, plen);
        } else if (type == RawNvmeTcpHost.PDU_ICREQ || type == RawNvmeTcpHost.PDU_ICRESP) {
            if (plen != hlen) {
                problem = "IC PDU with PLEN " + plen + " != HLEN " + hlen;
            }
        } else {
            hd = (flags & RawNvmeTcpHost.FLAG_HDGSTF) != 0;
            int headerEnd = hlen + (hd ? 4 : 0);
            if (headerEnd > plen) {
                problem = "header digest flag set but PLEN " + plen + " < HLEN+4";
                hd = false;
            } else {
                if (hd) {
                    hdOk = crc32c(raw, 0, hlen) == le32(raw, hlen);
                }
                boolean hasData = pdo != 0;
                dd = hasData && (flags & RawNvmeTcpHost.FLAG_DDGSTF) != 0;
                int dataEnd = plen - (dd ? 4 : 0);
                if (hasData && (pdo < headerEnd || pdo > dataEnd)) {
                    problem = "PDO " + pdo + " outside " + headerEnd + ".." + dataEnd;
                    dd = false;
                } else if (!hasData && plen != headerEnd) {
                    problem = "PDO 0 but PLEN " + plen + " != header length " + headerEnd;
                } else if (hasData) {
                    payload = Arrays.copyOfRange(raw, pdo, dataEnd);
                    if (dd) {
                        ddOk = crc32c(raw, pdo, dataEnd - pdo) == le32(raw, dataEnd);
                    }
                }
            }
        }
        this.data = payload;
        this.headerDigestPresent = hd;
        this.headerDigestOk = hdOk;
        this.dataDigestPresent = dd;
        this.dataDigestOk = ddOk;
        this.malformation = problem;
    }

    /** Wraps the complete bytes of one PDU (common header through its last digest). */
    public static Pdu parse(byte[] raw) {
        if (raw.length < 8) {
            throw new IllegalArgumentException("a PDU has at least 8 bytes, got " + raw.length);
        }
        return new Pdu(raw);
    }

    public int type() {
        return raw[0] & 0xFF;
    }

    public int flags() {
        return raw[1] & 0xFF;
    }

    public int hlen() {
        return raw[2] & 0xFF;
    }

    public int pdo() {
        return raw[3] & 0xFF;
    }

    /** PLEN as sent (equals the number of bytes read for this PDU). */
    public long plen() {
        return le32(raw, 4) & 0xFFFF_FFFFL;
    }

    public int u8(int offset) {
        return raw[offset] & 0xFF;
    }

    public int u16(int offset) {
        return (raw[offset] & 0xFF) | (raw[offset + 1] & 0xFF) << 8;
    }

    public long u32(int offset) {
        return le32(raw, offset) & 0xFFFF_FFFFL;
    }

    /** Every byte of the PDU. */
    public byte[] raw() {
        return raw.clone();
    }

    /** The PDU header, bytes [0, HLEN). */
    public byte[] header() {
        return Arrays.copyOfRange(raw, 0, Math.min(hlen(), raw.length));
    }

    /** The data (from PDO, before the data digest); for a TermReq the echoed header bytes. */
    public byte[] data() {
        return data.clone();
    }

    public int dataLength() {
        return data.length;
    }

    public boolean headerDigestPresent() {
        return headerDigestPresent;
    }

    public boolean headerDigestOk() {
        return headerDigestOk;
    }

    public boolean dataDigestPresent() {
        return dataDigestPresent;
    }

    public boolean dataDigestOk() {
        return dataDigestOk;
    }

    /** Why the PDU's framing is inconsistent, or null. */
    public String malformation() {
        return malformation;
    }

    /** The NVMe/TCP data digest / header digest: CRC32C, stored little-endian (wire reference 5). */
    public static int crc32c(byte[] bytes, int offset, int length) {
        CRC32C crc = new CRC32C();
        crc.update(bytes, offset, length);
        return (int) crc.getValue();
    }

    static int le32(byte[] b, int offset) {
        return (b[offset] & 0xFF) | (b[offset + 1] & 0xFF) << 8 | (b[offset + 2] & 0xFF) << 16 | (b[offset + 3] & 0xFF) << 24;
    }

    @Override
    public String toString() {
        int shown = Math.min(raw.length, 32);
        return String.format("PDU[type=0x%02x flags=0x%02x hlen=%d pdo=%d plen=%d data=%d B%s%s%s head=%s]",
            type(), flags(), hlen(), pdo(), plen(), data.length,
            headerDigestPresent ? (headerDigestOk ? " hdgst ok" : " HDGST BAD") : "",
            dataDigestPresent ? (dataDigestOk ? " ddgst ok" : " DDGST BAD") : "",
            malformation == null ? "" : " MALFORMED: " + malformation,
            HexFormat.of().formatHex(raw, 0, shown));
    }
}
