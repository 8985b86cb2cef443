package io.nvmeof4j.protocol.command;

/**
 * NVMe status codes as plain ints (NVMe Base 2.0, 4.2.3; NVMe-oF 1.1, 3.5; wire reference 1.2 and 2.1).
 * <p>A code is {@code SCT << 8 | SC} in bits 10:0; {@link #DNR} (bit 15) and {@link #MORE} (bit 14) may be or-ed in.
 * The same value is what the wire reference tables show (0x285 compare failure, 0x182 connect invalid parameters).
 * The data path passes these ints around instead of throwing.
 */
public final class NvmeStatus {
    private NvmeStatus() {
    }

    /** Do Not Retry: the same command would fail again. */
    public static final int DNR = 0x8000;
    /** More information in the error log page. */
    public static final int MORE = 0x4000;

    public static final int SCT_GENERIC = 0x0;
    public static final int SCT_COMMAND_SPECIFIC = 0x1;
    public static final int SCT_MEDIA = 0x2;
    public static final int SCT_PATH = 0x3;

    // Generic command status (SCT 0)
    public static final int SUCCESS = 0x000;
    public static final int INVALID_OPCODE = 0x001;
    public static final int INVALID_FIELD = 0x002;
    public static final int COMMAND_ID_CONFLICT = 0x003;
    public static final int DATA_TRANSFER_ERROR = 0x004;
    public static final int ABORTED_POWER_LOSS = 0x005;
    public static final int INTERNAL_ERROR = 0x006;
    public static final int ABORTED_BY_REQUEST = 0x007;
    public static final int ABORTED_SQ_DELETION = 0x008;
    /** The other command of a fused operation failed (a miscompare aborts the Write of a Compare and Write). */
    public static final int ABORTED_FAILED_FUSED = 0x009;
    /** A fused command whose partner is not next to it in the submission queue, or never came. */
    public static final int ABORTED_MISSING_FUSED = 0x00A;
    public static final int INVALID_NAMESPACE = 0x00B;
    public static final int COMMAND_SEQUENCE_ERROR = 0x00C;
    public static final int INVALID_SGL_SEGMENT_DESCRIPTOR = 0x00D;
    public static final int INVALID_SGL_DESCRIPTOR_COUNT = 0x00E;
    public static final int SGL_DATA_LENGTH_INVALID = 0x00F;
    public static final int SGL_METADATA_LENGTH_INVALID = 0x010;
    public static final int SGL_DESCRIPTOR_TYPE_INVALID = 0x011;
    public static final int SGL_OFFSET_INVALID = 0x016;
    public static final int KEEP_ALIVE_EXPIRED = 0x019;
    public static final int KEEP_ALIVE_INVALID = 0x01A;
    /**
     * A command of a host whose registration a Reservation Acquire with RACQA 010b (Preempt and Abort) removed, ended
     * before it reached the media (NVMe Base 2.0, 8.19.8).
     */
    public static final int ABORTED_PREEMPT_AND_ABORT = 0x01B;
    /** The command was interrupted and may succeed if sent again (no DNR). */
    public static final int COMMAND_INTERRUPTED = 0x021;
    /** Reservation Report in the regular format asked by a host with a 128-bit host identifier (NVMe Base 2.0, 7.4). */
    public static final int HOST_IDENTIFIER_INCONSISTENT_FORMAT = 0x018;
    /** Set Features I/O Command Set Profile naming a combination the controller does not offer (NVMe Base 2.0). */
    public static final int IO_COMMAND_SET_COMBINATION_REJECTED = 0x02B;
    public static final int LBA_OUT_OF_RANGE = 0x080;
    public static final int CAPACITY_EXCEEDED = 0x081;
    public static final int NAMESPACE_NOT_READY = 0x082;
    /** The command conflicts with a reservation held on the namespace (NVMe Base 2.0, 8.19.1). */
    public static final int RESERVATION_CONFLICT = 0x083;

    // Command specific status (SCT 1)
    public static final int INVALID_QUEUE_IDENTIFIER = 0x101;
    public static final int INVALID_QUEUE_SIZE = 0x102;
    public static final int ABORT_COMMAND_LIMIT_EXCEEDED = 0x103;
    public static final int ASYNC_EVENT_REQUEST_LIMIT_EXCEEDED = 0x105;
    public static final int INVALID_LOG_PAGE = 0x109;
    public static final int FEATURE_NOT_SAVEABLE = 0x10D;
    public static final int FEATURE_NOT_CHANGEABLE = 0x10E;
    public static final int CONFLICTING_ATTRIBUTES = 0x180;
    public static final int ATTEMPTED_WRITE_TO_READ_ONLY_RANGE = 0x182;
    /** Copy: more source ranges than MSRC + 1, a range above MSSRL or a total above MCL (NVM Command Set 1.0, 3.3.1). */
    public static final int COMMAND_SIZE_LIMIT_EXCEEDED = 0x183;

    // Fabrics command specific status (SCT 1, only in answer to Fabrics commands)
    public static final int FABRICS_INCOMPATIBLE_FORMAT = 0x180;
    public static final int FABRICS_CONTROLLER_BUSY = 0x181;
    public static final int FABRICS_CONNECT_INVALID_PARAMETERS = 0x182;
    public static final int FABRICS_CONNECT_RESTART_DISCOVERY = 0x183;
    public static final int FABRICS_CONNECT_INVALID_HOST = 0x184;
    public static final int FABRICS_INVALID_QUEUE_TYPE = 0x185;
    public static final int FABRICS_DISCOVER_RESTART = 0x190;
    public static final int FABRICS_AUTHENTICATION_REQUIRED = 0x191;

    // Media and data integrity errors (SCT 2)
    public static final int WRITE_FAULT = 0x280;
    public static final int UNRECOVERED_READ_ERROR = 0x281;
    public static final int COMPARE_FAILURE = 0x285;
    public static final int ACCESS_DENIED = 0x286;

    // Path related status (SCT 3)
    /** ANA: the path is in Persistent Loss state; the host fails over and does not expect it back. */
    public static final int ANA_PERSISTENT_LOSS = 0x301;
    public static final int ANA_INACCESSIBLE = 0x302;
    /** ANA: the group is changing state (ANA Change); the host retries after re-reading log 0Ch, within ANATT. */
    public static final int ANA_TRANSITION = 0x303;
    public static final int HOST_PATH_ERROR = 0x370;

    public static int sct(int status) {
        return (status >>> 8) & 0x7;
    }

    public static int sc(int status) {
        return status & 0xFF;
    }

    public static boolean isSuccess(int status) {
        return (status & 0x7FF) == 0;
    }

    public static boolean isDnr(int status) {
        return (status & DNR) != 0;
    }

    /** The code without its DNR/M flags. */
    public static int code(int status) {
        return status & 0x7FF;
    }

    /** CQE status field (bits 15:0 of DW3's upper half, phase bit 0) from a status code. */
    public static int toStatusField(int status) {
        return ((status & 0x7FF) << 1) | (status & (DNR | MORE));
    }

    /** Status code (with flags) from a CQE status field. */
    public static int fromStatusField(int field) {
        return ((field >>> 1) & 0x7FF) | (field & (DNR | MORE));
    }

    /** A readable name, for logs and error messages: {@code "0x285 COMPARE_FAILURE, DNR"}. */
    public static String describe(int status) {
        String name = name(status & 0x7FF);
        StringBuilder sb = new StringBuilder(String.format("0x%03x", status & 0x7FF));
        if (name != null) {
            sb.append(' ').append(name);
        }
        if (isDnr(status)) {
            sb.append(", DNR");
        }
        if ((status & MORE) != 0) {
            sb.append(", M");
        }
        return sb.toString();
    }

    private static String name(int code) {
        switch (code) {
            case SUCCESS: return "SUCCESS";
            case INVALID_OPCODE: return "INVALID_OPCODE";
            case INVALID_FIELD: return "INVALID_FIELD";
            case COMMAND_ID_CONFLICT: return "COMMAND_ID_CONFLICT";
            case DATA_TRANSFER_ERROR: return "DATA_TRANSFER_ERROR";
            case ABORTED_POWER_LOSS: return "ABORTED_POWER_LOSS";
            case INTERNAL_ERROR: return "INTERNAL_ERROR";
            case ABORTED_BY_REQUEST: return "ABORTED_BY_REQUEST";
            case ABORTED_SQ_DELETION: return "ABORTED_SQ_DELETION";
            case ABORTED_FAILED_FUSED: return "ABORTED_FAILED_FUSED";
            case ABORTED_MISSING_FUSED: return "ABORTED_MISSING_FUSED";
            case INVALID_NAMESPACE: return "INVALID_NAMESPACE";
            case COMMAND_SEQUENCE_ERROR: return "COMMAND_SEQUENCE_ERROR";
            case INVALID_SGL_SEGMENT_DESCRIPTOR: return "INVALID_SGL_SEGMENT_DESCRIPTOR";
            case INVALID_SGL_DESCRIPTOR_COUNT: return "INVALID_SGL_DESCRIPTOR_COUNT";
            case SGL_DATA_LENGTH_INVALID: return "SGL_DATA_LENGTH_INVALID";
            case SGL_METADATA_LENGTH_INVALID: return "SGL_METADATA_LENGTH_INVALID";
            case SGL_DESCRIPTOR_TYPE_INVALID: return "SGL_DESCRIPTOR_TYPE_INVALID";
            case SGL_OFFSET_INVALID: return "SGL_OFFSET_INVALID";
            case KEEP_ALIVE_EXPIRED: return "KEEP_ALIVE_EXPIRED";
            case KEEP_ALIVE_INVALID: return "KEEP_ALIVE_INVALID";
            case ABORTED_PREEMPT_AND_ABORT: return "ABORTED_PREEMPT_AND_ABORT";
            case COMMAND_INTERRUPTED: return "COMMAND_INTERRUPTED";
            case HOST_IDENTIFIER_INCONSISTENT_FORMAT: return "HOST_IDENTIFIER_INCONSISTENT_FORMAT";
            case IO_COMMAND_SET_COMBINATION_REJECTED: return "IO_COMMAND_SET_COMBINATION_REJECTED";
            case LBA_OUT_OF_RANGE: return "LBA_OUT_OF_RANGE";
            case CAPACITY_EXCEEDED: return "CAPACITY_EXCEEDED";
            case NAMESPACE_NOT_READY: return "NAMESPACE_NOT_READY";
            case RESERVATION_CONFLICT: return "RESERVATION_CONFLICT";
            case INVALID_QUEUE_IDENTIFIER: return "INVALID_QUEUE_IDENTIFIER";
            case INVALID_QUEUE_SIZE: return "INVALID_QUEUE_SIZE";
            case ABORT_COMMAND_LIMIT_EXCEEDED: return "ABORT_COMMAND_LIMIT_EXCEEDED";
            case ASYNC_EVENT_REQUEST_LIMIT_EXCEEDED: return "ASYNC_EVENT_REQUEST_LIMIT_EXCEEDED";
            case INVALID_LOG_PAGE: return "INVALID_LOG_PAGE";
            case FEATURE_NOT_SAVEABLE: return "FEATURE_NOT_SAVEABLE";
            case FEATURE_NOT_CHANGEABLE: return "FEATURE_NOT_CHANGEABLE";
            case FABRICS_INCOMPATIBLE_FORMAT: return "INCOMPATIBLE_FORMAT/CONFLICTING_ATTRIBUTES";
            case FABRICS_CONTROLLER_BUSY: return "CONTROLLER_BUSY";
            case FABRICS_CONNECT_INVALID_PARAMETERS: return "CONNECT_INVALID_PARAMETERS";
            case FABRICS_CONNECT_RESTART_DISCOVERY: return "CONNECT_RESTART_DISCOVERY/COMMAND_SIZE_LIMIT_EXCEEDED";
            case FABRICS_CONNECT_INVALID_HOST: return "CONNECT_INVALID_HOST";
            case FABRICS_INVALID_QUEUE_TYPE: return "INVALID_QUEUE_TYPE";
            case FABRICS_DISCOVER_RESTART: return "DISCOVER_RESTART";
            case FABRICS_AUTHENTICATION_REQUIRED: return "AUTHENTICATION_REQUIRED";
            case WRITE_FAULT: return "WRITE_FAULT";
            case UNRECOVERED_READ_ERROR: return "UNRECOVERED_READ_ERROR";
            case COMPARE_FAILURE: return "COMPARE_FAILURE";
            case ACCESS_DENIED: return "ACCESS_DENIED";
            case ANA_PERSISTENT_LOSS: return "ANA_PERSISTENT_LOSS";
            case ANA_INACCESSIBLE: return "ANA_INACCESSIBLE";
            case ANA_TRANSITION: return "ANA_TRANSITION";
            case HOST_PATH_ERROR: return "HOST_PATH_ERROR";
            default: return null;
        }
    }
}
