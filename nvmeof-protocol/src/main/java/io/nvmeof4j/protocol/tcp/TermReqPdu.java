package io.nvmeof4j.protocol.tcp;

/**
 * H2CTermReq / C2HTermReq: a fatal transport error; the sender closes the connection after it
 * (NVMe/TCP Transport Specification 1.0, 3.6.2.4 and 7.4.7; wire reference 5).
 *
 * <pre>
 *  0            8      10            14                 24                        PLEN (24..152)
 * +------------+------+-------------+-----------------+-------------------------+
 * | CH (8)     | FES  | FEI         | reserved (10)   | error data (0..128)     |
 * +------------+------+-------------+-----------------+-------------------------+
 * </pre>
 * CH: type 0x02 (host) or 0x03 (controller), HLEN 24, PDO 0, no digests. FES: the error, one of the {@code FES_*}
 * constants. FEI: for {@link #FES_INVALID_HEADER_FIELD} and {@link #FES_UNSUPPORTED_PARAMETER} the byte offset of
 * the offending field in the PDU header, else 0. Error data: the offending PDU's header, at most 128 bytes.
 * A TermReq whose PLEN is outside 24..152 is itself not reported: the receiver just drops the connection.
 */
public final class TermReqPdu extends PduFlyweight<TermReqPdu> {
    public static final int HEADER_LENGTH = 24;
    public static final int FES_OFFSET = 8;
    public static final int FEI_OFFSET = 10;
    public static final int ERROR_DATA_OFFSET = HEADER_LENGTH;
    /** Most header bytes a TermReq may quote. */
    public static final int MAX_ERROR_DATA_LENGTH = 128;
    public static final int MAX_PDU_LENGTH = HEADER_LENGTH + MAX_ERROR_DATA_LENGTH;

    /** A PDU header field holds an invalid value; FEI is its byte offset. */
    public static final int FES_INVALID_HEADER_FIELD = 0x01;
    /** A PDU arrived that the protocol state does not allow (ICReq twice, H2CData out of order). */
    public static final int FES_PDU_SEQUENCE_ERROR = 0x02;
    /** A header digest did not match. */
    public static final int FES_HEADER_DIGEST_ERROR = 0x03;
    /** Data outside the range the command (or its R2T) described. */
    public static final int FES_DATA_OUT_OF_RANGE = 0x04;
    /** More data than allowed (H2CData beyond MAXH2CDATA) or more R2Ts than MAXR2T. */
    public static final int FES_DATA_LIMIT_EXCEEDED = 0x05;
    /** A parameter the receiver does not support (an unknown PFV); FEI is its byte offset. */
    public static final int FES_UNSUPPORTED_PARAMETER = 0x06;

    /** Writes a fresh TermReq header of the given type (H2C or C2H) quoting {@code errorDataLength} bytes. */
    public TermReqPdu init(int type, int errorDataLength) {
        if (type != PduType.H2C_TERM_REQ && type != PduType.C2H_TERM_REQ) {
            throw new IllegalArgumentException("not a TermReq PDU type: " + PduType.name(type));
        }
        if (errorDataLength < 0 || errorDataLength > MAX_ERROR_DATA_LENGTH) {
            throw new IllegalArgumentException("TermReq error data " + errorDataLength + " outside 0..128 bytes");
        }
        return initHeader(type, HEADER_LENGTH, HEADER_LENGTH + errorDataLength);
    }

    public int fatalErrorStatus() {
        return buffer.getShort(offset + FES_OFFSET) & 0xFFFF;
    }

    public TermReqPdu fatalErrorStatus(int fes) {
        buffer.putShort(offset + FES_OFFSET, (short) fes);
        return this;
    }

    /** FEI, unsigned 32 bits held in a long. */
    public long fatalErrorInformation() {
        return buffer.getInt(offset + FEI_OFFSET) & 0xFFFF_FFFFL;
    }

    public TermReqPdu fatalErrorInformation(long fei) {
        buffer.putInt(offset + FEI_OFFSET, (int) fei);
        return this;
    }

    /** Bytes of error data this PDU carries (PLEN − HLEN). */
    public int errorDataLength() {
        return (int) (pduLength() - HEADER_LENGTH);
    }

    /** A readable name for an FES code, for logs. */
    public static String fesName(int fes) {
        switch (fes) {
            case FES_INVALID_HEADER_FIELD: return "invalid PDU header field";
            case FES_PDU_SEQUENCE_ERROR: return "PDU sequence error";
            case FES_HEADER_DIGEST_ERROR: return "header digest error";
            case FES_DATA_OUT_OF_RANGE: return "data transfer out of range";
            case FES_DATA_LIMIT_EXCEEDED: return "data transfer limit exceeded";
            case FES_UNSUPPORTED_PARAMETER: return "unsupported parameter";
            default: return "FES " + fes;
        }
    }
}
