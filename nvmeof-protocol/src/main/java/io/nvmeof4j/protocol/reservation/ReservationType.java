package io.nvmeof4j.protocol.reservation;

/**
 * Reservation types (RTYPE; NVMe Base 2.0, 8.19 Figure 452 and 7.2-7.5), with the access rules of the
 * Command Behavior in the Presence of a Reservation table (8.19.1 Figure 453) for the two command classes that
 * matter: reads (Read, Compare, Verify, and the admin/read-class commands the table names "read") and writes
 * (Write, Write Zeroes, Dataset Management, Write Uncorrectable, Copy, Flush...).
 */
public final class ReservationType {
    private ReservationType() {
    }

    /** No reservation held (RTYPE 0 in the Reservation Report). */
    public static final int NONE = 0;
    public static final int WRITE_EXCLUSIVE = 1;
    public static final int EXCLUSIVE_ACCESS = 2;
    public static final int WRITE_EXCLUSIVE_REGISTRANTS_ONLY = 3;
    public static final int EXCLUSIVE_ACCESS_REGISTRANTS_ONLY = 4;
    public static final int WRITE_EXCLUSIVE_ALL_REGISTRANTS = 5;
    public static final int EXCLUSIVE_ACCESS_ALL_REGISTRANTS = 6;

    /** RESCAP (Identify Namespace byte 31) bit 0: Persist Through Power Loss supported. */
    public static final int RESCAP_PTPL = 1;
    /** RESCAP bit 7: IEKEY is ignored by Register's replace and Acquire/Release (NVMe 1.3 behaviour). */
    public static final int RESCAP_IGNORE_EXISTING_KEY = 0x80;
    /** RESCAP bits 6:1, one per type. */
    public static final int RESCAP_ALL_TYPES = 0x7E;

    /** RESCAP bit for one type. */
    public static int rescapBit(int type) {
        return 1 << type;
    }

    public static boolean isValid(int type) {
        return type >= WRITE_EXCLUSIVE && type <= EXCLUSIVE_ACCESS_ALL_REGISTRANTS;
    }

    /** Registrants-only and all-registrants types: every registrant may access as if it held the reservation. */
    public static boolean isRegistrantsType(int type) {
        return type >= WRITE_EXCLUSIVE_REGISTRANTS_ONLY;
    }

    /**
     * All-registrants types: every registrant is a holder, the reservation ends only when the last registrant goes
     * (8.19.7) and the Report marks every registrant as holding it.
     */
    public static boolean isAllRegistrantsType(int type) {
        return type == WRITE_EXCLUSIVE_ALL_REGISTRANTS || type == EXCLUSIVE_ACCESS_ALL_REGISTRANTS;
    }

    /** Exclusive Access types also refuse reads from those without access. */
    public static boolean isExclusiveAccess(int type) {
        return type == EXCLUSIVE_ACCESS || type == EXCLUSIVE_ACCESS_REGISTRANTS_ONLY
            || type == EXCLUSIVE_ACCESS_ALL_REGISTRANTS;
    }

    /**
     * Whether a host may run a command of this class under a reservation of {@code type} (Figure 453).
     *
     * @param holder the host holds the reservation (for the registrants types: is a registrant)
     * @param registrant the host is registered on the namespace
     * @param write the command modifies the medium (write class); false for read class
     */
    public static boolean permits(int type, boolean holder, boolean registrant, boolean write) {
        if (type == NONE || holder) {
            return true;
        }
        if (isRegistrantsType(type) && registrant) {
            return true;
        }
        // Write Exclusive types leave reads open to everyone; Exclusive Access types close both.
        return !write && !isExclusiveAccess(type);
    }

    public static String name(int type) {
        switch (type) {
            case NONE: return "none";
            case WRITE_EXCLUSIVE: return "write-exclusive";
            case EXCLUSIVE_ACCESS: return "exclusive-access";
            case WRITE_EXCLUSIVE_REGISTRANTS_ONLY: return "write-exclusive-registrants-only";
            case EXCLUSIVE_ACCESS_REGISTRANTS_ONLY: return "exclusive-access-registrants-only";
            case WRITE_EXCLUSIVE_ALL_REGISTRANTS: return "write-exclusive-all-registrants";
            case EXCLUSIVE_ACCESS_ALL_REGISTRANTS: return "exclusive-access-all-registrants";
            default: return "rtype " + type;
        }
    }
}
