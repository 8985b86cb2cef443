package io.nvmeof4j.protocol.tcp;

/**
 * NVMe/TCP PDU types (NVMe/TCP Transport Specification 1.0, 3.6; wire reference 5) and the header length each
 * type must carry. Bit 0 of a type is its direction: even types flow host to controller, odd types controller to host.
 */
public final class PduType {
    private PduType() {
    }

    public static final int IC_REQ = 0x00;
    public static final int IC_RESP = 0x01;
    public static final int H2C_TERM_REQ = 0x02;
    public static final int C2H_TERM_REQ = 0x03;
    public static final int CAPSULE_CMD = 0x04;
    public static final int CAPSULE_RESP = 0x05;
    public static final int H2C_DATA = 0x06;
    public static final int C2H_DATA = 0x07;
    public static final int R2T = 0x09;

    /**
     * The HLEN a PDU of {@code type} must carry, or -1 for an unknown type. Every controller-to-host PDU after
     * ICResp has HLEN 24; the Linux host rejects anything else.
     */
    public static int headerLength(int type) {
        switch (type) {
            case IC_REQ:
            case IC_RESP:
                return ICReqPdu.HEADER_LENGTH;
            case CAPSULE_CMD:
                return CapsuleCmdPdu.HEADER_LENGTH;
            case H2C_TERM_REQ:
            case C2H_TERM_REQ:
            case CAPSULE_RESP:
            case H2C_DATA:
            case C2H_DATA:
            case R2T:
                return 24;
            default:
                return -1;
        }
    }

    /** Whether a PDU of this type carries a header digest when header digests were negotiated. */
    public static boolean hasHeaderDigest(int type) {
        return type >= CAPSULE_CMD && type <= R2T && type != 0x08;
    }

    /** A readable name for logs: {@code "CapsuleCmd"}, or {@code "type 0x0b"} for an unknown type. */
    public static String name(int type) {
        switch (type) {
            case IC_REQ: return "ICReq";
            case IC_RESP: return "ICResp";
            case H2C_TERM_REQ: return "H2CTermReq";
            case C2H_TERM_REQ: return "C2HTermReq";
            case CAPSULE_CMD: return "CapsuleCmd";
            case CAPSULE_RESP: return "CapsuleResp";
            case H2C_DATA: return "H2CData";
            case C2H_DATA: return "C2HData";
            case R2T: return "R2T";
            default: return String.format("type 0x%02x", type);
        }
    }
}
