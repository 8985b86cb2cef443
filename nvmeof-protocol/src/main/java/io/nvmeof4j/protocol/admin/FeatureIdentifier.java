package io.nvmeof4j.protocol.admin;

/**
 * Feature identifiers for Set/Get Features, CDW10 bits 7:0 (NVMe Base 2.0, 5.27.1 Figure 317; wire reference 2.9),
 * and the value layouts the controller composes for the ones it implements.
 */
public final class FeatureIdentifier {
    private FeatureIdentifier() {
    }

    public static final int ARBITRATION = 0x01;
    public static final int POWER_MANAGEMENT = 0x02;
    public static final int LBA_RANGE_TYPE = 0x03;
    public static final int TEMPERATURE_THRESHOLD = 0x04;
    public static final int ERROR_RECOVERY = 0x05;
    public static final int VOLATILE_WRITE_CACHE = 0x06;
    public static final int NUMBER_OF_QUEUES = 0x07;
    public static final int INTERRUPT_COALESCING = 0x08;
    public static final int INTERRUPT_VECTOR_CONFIGURATION = 0x09;
    public static final int WRITE_ATOMICITY_NORMAL = 0x0A;
    public static final int ASYNC_EVENT_CONFIGURATION = 0x0B;
    public static final int AUTONOMOUS_POWER_STATE_TRANSITION = 0x0C;
    public static final int HOST_MEMORY_BUFFER = 0x0D;
    public static final int TIMESTAMP = 0x0E;
    public static final int KEEP_ALIVE_TIMER = 0x0F;
    public static final int HOST_CONTROLLED_THERMAL_MANAGEMENT = 0x10;
    public static final int NON_OPERATIONAL_POWER_STATE_CONFIG = 0x11;
    /** I/O Command Set Profile: CDW11 bits 8:0 IOCSCI, an index into the Identify CNS 1Ch vector list. */
    public static final int IO_COMMAND_SET_PROFILE = 0x19;
    public static final int IO_COMMAND_SET_COMBINATION_INDEX_MASK = 0x1FF;
    public static final int HOST_IDENTIFIER = 0x81;
    public static final int RESERVATION_NOTIFICATION_MASK = 0x82;
    public static final int RESERVATION_PERSISTENCE = 0x83;
    public static final int NAMESPACE_WRITE_PROTECTION = 0x84;

    /** Number of Queues: CDW11 NSQR 15:0 / NCQR 31:16, both 0-based; 0xFFFF is invalid. */
    public static final int NUMBER_OF_QUEUES_INVALID = 0xFFFF;

    /** Async Event Configuration bits (match OAES): SMART critical warnings 7:0, notices 8, 9, 11, 31. */
    public static final int AEC_SMART_MASK = 0xFF;
    public static final int AEC_NAMESPACE_ATTRIBUTE = 1 << 8;
    public static final int AEC_FIRMWARE_ACTIVATION = 1 << 9;
    public static final int AEC_ANA_CHANGE = 1 << 11;
    public static final int AEC_DISCOVERY_LOG_CHANGE = 1 << 31;

    /** Host Identifier: CDW11 bit 0 EXHID selects the 128-bit identifier. */
    public static final int HOST_IDENTIFIER_EXTENDED = 1;
    public static final int HOST_IDENTIFIER_LENGTH = 16;

    /** Completion DW0 of Number of Queues: NSQA | NCQA << 16, both 0-based. */
    public static int numberOfQueuesResult(int submissionQueues, int completionQueues) {
        return (submissionQueues - 1) & 0xFFFF | ((completionQueues - 1) & 0xFFFF) << 16;
    }

    public static int requestedSubmissionQueues0Based(int cdw11) {
        return cdw11 & 0xFFFF;
    }

    public static int requestedCompletionQueues0Based(int cdw11) {
        return cdw11 >>> 16;
    }

    public static String name(int fid) {
        switch (fid) {
            case ARBITRATION: return "ARBITRATION";
            case POWER_MANAGEMENT: return "POWER_MANAGEMENT";
            case LBA_RANGE_TYPE: return "LBA_RANGE_TYPE";
            case TEMPERATURE_THRESHOLD: return "TEMPERATURE_THRESHOLD";
            case ERROR_RECOVERY: return "ERROR_RECOVERY";
            case VOLATILE_WRITE_CACHE: return "VOLATILE_WRITE_CACHE";
            case NUMBER_OF_QUEUES: return "NUMBER_OF_QUEUES";
            case INTERRUPT_COALESCING: return "INTERRUPT_COALESCING";
            case INTERRUPT_VECTOR_CONFIGURATION: return "INTERRUPT_VECTOR_CONFIGURATION";
            case WRITE_ATOMICITY_NORMAL: return "WRITE_ATOMICITY_NORMAL";
            case ASYNC_EVENT_CONFIGURATION: return "ASYNC_EVENT_CONFIGURATION";
            case AUTONOMOUS_POWER_STATE_TRANSITION: return "AUTONOMOUS_POWER_STATE_TRANSITION";
            case HOST_MEMORY_BUFFER: return "HOST_MEMORY_BUFFER";
            case TIMESTAMP: return "TIMESTAMP";
            case KEEP_ALIVE_TIMER: return "KEEP_ALIVE_TIMER";
            case IO_COMMAND_SET_PROFILE: return "IO_COMMAND_SET_PROFILE";
            case HOST_IDENTIFIER: return "HOST_IDENTIFIER";
            case RESERVATION_NOTIFICATION_MASK: return "RESERVATION_NOTIFICATION_MASK";
            case RESERVATION_PERSISTENCE: return "RESERVATION_PERSISTENCE";
            case NAMESPACE_WRITE_PROTECTION: return "NAMESPACE_WRITE_PROTECTION";
            default: return String.format("FID 0x%02x", fid);
        }
    }
}
