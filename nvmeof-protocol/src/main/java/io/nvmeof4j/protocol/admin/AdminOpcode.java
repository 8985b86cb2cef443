package io.nvmeof4j.protocol.admin;

/**
 * Admin command opcodes (NVMe Base 2.0, 5 Figure 139). Bits 1:0 give the data direction
 * (01b host to controller, 10b controller to host).
 */
public final class AdminOpcode {
    private AdminOpcode() {
    }

    public static final int DELETE_IO_SQ = 0x00;
    public static final int CREATE_IO_SQ = 0x01;
    public static final int GET_LOG_PAGE = 0x02;
    public static final int DELETE_IO_CQ = 0x04;
    public static final int CREATE_IO_CQ = 0x05;
    public static final int IDENTIFY = 0x06;
    public static final int ABORT = 0x08;
    public static final int SET_FEATURES = 0x09;
    public static final int GET_FEATURES = 0x0A;
    public static final int ASYNC_EVENT_REQUEST = 0x0C;
    public static final int NAMESPACE_MANAGEMENT = 0x0D;
    public static final int FIRMWARE_COMMIT = 0x10;
    public static final int FIRMWARE_IMAGE_DOWNLOAD = 0x11;
    public static final int DEVICE_SELF_TEST = 0x14;
    public static final int NAMESPACE_ATTACHMENT = 0x15;
    public static final int KEEP_ALIVE = 0x18;
    public static final int DIRECTIVE_SEND = 0x19;
    public static final int DIRECTIVE_RECEIVE = 0x1A;
    public static final int VIRTUALIZATION_MANAGEMENT = 0x1C;
    public static final int NVME_MI_SEND = 0x1D;
    public static final int NVME_MI_RECEIVE = 0x1E;
    public static final int DOORBELL_BUFFER_CONFIG = 0x7C;
    /** Fabrics commands share the admin (and I/O) opcode space through 0x7F + FCTYPE. */
    public static final int FABRICS = 0x7F;
    public static final int FORMAT_NVM = 0x80;
    public static final int SECURITY_SEND = 0x81;
    public static final int SECURITY_RECEIVE = 0x82;
    public static final int SANITIZE = 0x84;
    public static final int GET_LBA_STATUS = 0x86;

    /** A readable name for logs. */
    public static String name(int opcode) {
        switch (opcode) {
            case DELETE_IO_SQ: return "DELETE_IO_SQ";
            case CREATE_IO_SQ: return "CREATE_IO_SQ";
            case GET_LOG_PAGE: return "GET_LOG_PAGE";
            case DELETE_IO_CQ: return "DELETE_IO_CQ";
            case CREATE_IO_CQ: return "CREATE_IO_CQ";
            case IDENTIFY: return "IDENTIFY";
            case ABORT: return "ABORT";
            case SET_FEATURES: return "SET_FEATURES";
            case GET_FEATURES: return "GET_FEATURES";
            case ASYNC_EVENT_REQUEST: return "ASYNC_EVENT_REQUEST";
            case NAMESPACE_MANAGEMENT: return "NAMESPACE_MANAGEMENT";
            case FIRMWARE_COMMIT: return "FIRMWARE_COMMIT";
            case FIRMWARE_IMAGE_DOWNLOAD: return "FIRMWARE_IMAGE_DOWNLOAD";
            case DEVICE_SELF_TEST: return "DEVICE_SELF_TEST";
            case NAMESPACE_ATTACHMENT: return "NAMESPACE_ATTACHMENT";
            case KEEP_ALIVE: return "KEEP_ALIVE";
            case DIRECTIVE_SEND: return "DIRECTIVE_SEND";
            case DIRECTIVE_RECEIVE: return "DIRECTIVE_RECEIVE";
            case VIRTUALIZATION_MANAGEMENT: return "VIRTUALIZATION_MANAGEMENT";
            case NVME_MI_SEND: return "NVME_MI_SEND";
            case NVME_MI_RECEIVE: return "NVME_MI_RECEIVE";
            case DOORBELL_BUFFER_CONFIG: return "DOORBELL_BUFFER_CONFIG";
            case FABRICS: return "FABRICS";
            case FORMAT_NVM: return "FORMAT_NVM";
            case SECURITY_SEND: return "SECURITY_SEND";
            case SECURITY_RECEIVE: return "SECURITY_RECEIVE";
            case SANITIZE: return "SANITIZE";
            case GET_LBA_STATUS: return "GET_LBA_STATUS";
            default: return String.format("OPCODE 0x%02x", opcode);
        }
    }
}
