package io.nvmeof4j.protocol.fabrics;

/**
 * Fabrics command types: the FCTYPE byte (SQE byte 4) of a command with opcode 0x7F
 * (NVMe-oF 1.1, 3.1 and 6; wire reference 2.1). Bits 1:0 give the data direction like an opcode's.
 */
public final class FabricsCommandType {
    private FabricsCommandType() {
    }

    public static final int PROPERTY_SET = 0x00;
    public static final int CONNECT = 0x01;
    public static final int PROPERTY_GET = 0x04;
    public static final int AUTHENTICATION_SEND = 0x05;
    public static final int AUTHENTICATION_RECEIVE = 0x06;
    /** Optional (OFCS bit 0); the Linux host never sends it. */
    public static final int DISCONNECT = 0x08;

    /** A readable name for logs: {@code "CONNECT"}, or {@code "FCTYPE 0x42"}. */
    public static String name(int fctype) {
        switch (fctype) {
            case PROPERTY_SET: return "PROPERTY_SET";
            case CONNECT: return "CONNECT";
            case PROPERTY_GET: return "PROPERTY_GET";
            case AUTHENTICATION_SEND: return "AUTHENTICATION_SEND";
            case AUTHENTICATION_RECEIVE: return "AUTHENTICATION_RECEIVE";
            case DISCONNECT: return "DISCONNECT";
            default: return String.format("FCTYPE 0x%02x", fctype);
        }
    }
}
