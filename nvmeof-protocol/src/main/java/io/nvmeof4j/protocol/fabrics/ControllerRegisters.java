package io.nvmeof4j.protocol.fabrics;

/**
 * Controller properties reached through Property Get/Set on fabrics (NVMe Base 2.0, 3.1.3; NVMe-oF 1.1, 3.4;
 * wire reference 2.3 and 6): offsets and bit fields of CAP, VS, CC and CSTS.
 *
 * <pre>
 * CAP (8 bytes, offset 0x00)
 *  63  59    56 55 52 51 48 47 45 44   37 36 35 32 31  24 23  17 16 15         0
 * +---+-----+----+-----+-----+-----+-------+--+-----+------+------+--+-----------+
 * |   |CRWMS| .. |MPSMX|MPSMN| ..  | CSS   |..|DSTRD| TO   | rsvd |CQR| MQES     |
 * +---+-----+----+-----+-----+-----+-------+--+-----+------+------+--+-----------+
 * CC (4 bytes, offset 0x14)            CSTS (4 bytes, offset 0x1C)
 *  23  20 19  16 15 14 13 11 10  7 6  4  0      3   2   1   0
 * +------+------+-----+-----+-----+----+--+    +-------+---+---+
 * |IOCQES|IOSQES| SHN | AMS | MPS |CSS |EN|    | SHST  |CFS|RDY|
 * +------+------+-----+-----+-----+----+--+    +-------+---+---+
 * </pre>
 */
public final class ControllerRegisters {
    private ControllerRegisters() {
    }

    public static final int CAP = 0x00;
    public static final int VS = 0x08;
    public static final int INTMS = 0x0C;
    public static final int INTMC = 0x10;
    public static final int CC = 0x14;
    public static final int CSTS = 0x1C;
    public static final int NSSR = 0x20;
    public static final int CRTO = 0x68;

    // CAP
    public static final long CAP_MQES_MASK = 0xFFFFL;
    public static final long CAP_CQR = 1L << 16;
    public static final int CAP_TO_SHIFT = 24;
    public static final int CAP_DSTRD_SHIFT = 32;
    /** CAP.CSS bit 37: NVM command set. */
    public static final long CAP_CSS_NVM = 1L << 37;
    /** CAP.CSS bit 43: one or more I/O command sets (CC.CSS 110b and CSI descriptors). */
    public static final long CAP_CSS_IO_COMMAND_SETS = 1L << 43;
    public static final int CAP_MPSMIN_SHIFT = 48;
    public static final int CAP_MPSMAX_SHIFT = 52;
    public static final long CAP_CRWMS = 1L << 59;

    // CC
    public static final int CC_EN = 1;
    public static final int CC_CSS_SHIFT = 4;
    public static final int CC_MPS_SHIFT = 7;
    public static final int CC_AMS_SHIFT = 11;
    public static final int CC_SHN_SHIFT = 14;
    public static final int CC_IOSQES_SHIFT = 16;
    public static final int CC_IOCQES_SHIFT = 20;
    public static final int CC_SHN_NONE = 0;
    public static final int CC_SHN_NORMAL = 1;
    public static final int CC_SHN_ABRUPT = 2;
    /** CC.CSS 000b: NVM command set. */
    public static final int CC_CSS_NVM = 0;
    /** CC.CSS 110b: all I/O command sets the controller supports (only valid with CAP.CSS bit 43). */
    public static final int CC_CSS_ALL_IO_COMMAND_SETS = 6;
    /** log2 of the 64-byte SQE: the only IOSQES a fabrics NVM controller accepts. */
    public static final int NVM_IOSQES = 6;
    /** log2 of the 16-byte CQE. */
    public static final int NVM_IOCQES = 4;

    // CSTS
    public static final int CSTS_RDY = 1;
    public static final int CSTS_CFS = 1 << 1;
    public static final int CSTS_SHST_SHIFT = 2;
    public static final int CSTS_SHST_MASK = 0x3 << CSTS_SHST_SHIFT;
    public static final int SHST_NORMAL = 0;
    public static final int SHST_OCCURRING = 1;
    public static final int SHST_COMPLETE = 2;
    public static final int CSTS_SHST_COMPLETE = SHST_COMPLETE << CSTS_SHST_SHIFT;

    /** NSSR value that requests an NVM subsystem reset ("NVMe"). */
    public static final int NSSR_RESET_VALUE = 0x4E564D65;

    /**
     * Builds CAP.
     *
     * @param maxQueueEntries largest queue in entries (MQES + 1), 2..65536
     * @param timeout500ms    CAP.TO: worst-case time to RDY in 500 ms units
     */
    public static long capabilities(int maxQueueEntries, int timeout500ms, boolean contiguousQueuesRequired) {
        if (maxQueueEntries < 2 || maxQueueEntries > 65536) {
            throw new IllegalArgumentException("queue entries " + maxQueueEntries + " outside 2..65536");
        }
        long cap = (maxQueueEntries - 1) & CAP_MQES_MASK;
        if (contiguousQueuesRequired) {
            cap |= CAP_CQR;
        }
        cap |= (long) (timeout500ms & 0xFF) << CAP_TO_SHIFT;
        // NVM, and "one or more I/O command sets" as nvmet sets it (nvmet_init_cap): hosts then choose CC.CSS 110b.
        cap |= CAP_CSS_NVM | CAP_CSS_IO_COMMAND_SETS;
        // DSTRD 0, MPSMIN 0 (4 KiB), MPSMAX 0: fabrics has no doorbells or PRPs, 4 KiB is what hosts use.
        return cap;
    }

    public static int capMaxQueueEntries(long cap) {
        return (int) (cap & CAP_MQES_MASK) + 1;
    }

    public static int capTimeout(long cap) {
        return (int) (cap >>> CAP_TO_SHIFT) & 0xFF;
    }

    public static int capMpsMin(long cap) {
        return (int) (cap >>> CAP_MPSMIN_SHIFT) & 0xF;
    }

    public static int capDoorbellStride(long cap) {
        return (int) (cap >>> CAP_DSTRD_SHIFT) & 0xF;
    }

    /** VS value: major 31:16, minor 15:8, tertiary 7:0. */
    public static int version(int major, int minor, int tertiary) {
        return (major & 0xFFFF) << 16 | (minor & 0xFF) << 8 | (tertiary & 0xFF);
    }

    public static final int VERSION_1_3 = version(1, 3, 0);
    public static final int VERSION_1_4 = version(1, 4, 0);

    public static boolean ccEnabled(int cc) {
        return (cc & CC_EN) != 0;
    }

    public static int ccCommandSet(int cc) {
        return (cc >>> CC_CSS_SHIFT) & 0x7;
    }

    public static int ccMemoryPageSize(int cc) {
        return (cc >>> CC_MPS_SHIFT) & 0xF;
    }

    public static int ccArbitration(int cc) {
        return (cc >>> CC_AMS_SHIFT) & 0x7;
    }

    public static int ccShutdownNotification(int cc) {
        return (cc >>> CC_SHN_SHIFT) & 0x3;
    }

    public static int ccIoSqEntrySize(int cc) {
        return (cc >>> CC_IOSQES_SHIFT) & 0xF;
    }

    public static int ccIoCqEntrySize(int cc) {
        return (cc >>> CC_IOCQES_SHIFT) & 0xF;
    }

    /** CC with the given fields (what a host writes). */
    public static int cc(boolean enable, int css, int mps, int ams, int shn, int iosqes, int iocqes) {
        return (enable ? CC_EN : 0) | (css & 0x7) << CC_CSS_SHIFT | (mps & 0xF) << CC_MPS_SHIFT
            | (ams & 0x7) << CC_AMS_SHIFT | (shn & 0x3) << CC_SHN_SHIFT | (iosqes & 0xF) << CC_IOSQES_SHIFT
            | (iocqes & 0xF) << CC_IOCQES_SHIFT;
    }

    public static boolean cstsReady(int csts) {
        return (csts & CSTS_RDY) != 0;
    }

    public static boolean cstsFatal(int csts) {
        return (csts & CSTS_CFS) != 0;
    }

    public static int cstsShutdownStatus(int csts) {
        return (csts & CSTS_SHST_MASK) >>> CSTS_SHST_SHIFT;
    }
}
