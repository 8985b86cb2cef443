package io.nvmeof4j.protocol.reservation;

import io.nvmeof4j.protocol.io.NvmOpcode;
import java.nio.ByteBuffer;

/**
 * The four reservation commands of the NVM command set (NVMe Base 2.0, 7.2-7.5; NVM Command Set 1.0, 3.2):
 * opcodes, their CDW10/CDW11 fields, and the layout of the keys they carry as data (host to controller).
 *
 * <pre>
 * CDW10 of Register / Acquire / Release
 *  31    30 29         16 15        8 7    4  3     2       0
 * +--------+-------------+-----------+------+-----+---------+
 * | CPTPL  |  reserved   |  RTYPE    | rsvd |IEKEY| action  |
 * +--------+-------------+-----------+------+-----+---------+
 *   (CPTPL: Register only; RTYPE: Acquire and Release only)
 *
 * data: Register 16 bytes  CRKEY(8) NRKEY(8)
 *       Acquire  16 bytes  CRKEY(8) PRKEY(8)
 *       Release   8 bytes  CRKEY(8)
 * Report: CDW10 NUMD (0-based dwords), CDW11 bit 0 EDS (extended data structure, 128-bit host ids)
 * </pre>
 */
public final class ReservationCommand {
    private ReservationCommand() {
    }

    public static final int OPC_REGISTER = NvmOpcode.RESERVATION_REGISTER;
    public static final int OPC_REPORT = NvmOpcode.RESERVATION_REPORT;
    public static final int OPC_ACQUIRE = NvmOpcode.RESERVATION_ACQUIRE;
    public static final int OPC_RELEASE = NvmOpcode.RESERVATION_RELEASE;

    /** Register actions (RREGA). */
    public static final int REGISTER = 0;
    public static final int UNREGISTER = 1;
    public static final int REPLACE = 2;

    /** Acquire actions (RACQA). */
    public static final int ACQUIRE = 0;
    public static final int PREEMPT = 1;
    public static final int PREEMPT_AND_ABORT = 2;

    /** Release actions (RRELA). */
    public static final int RELEASE = 0;
    public static final int CLEAR = 1;

    /** Register CPTPL: change Persist Through Power Loss state. */
    public static final int CPTPL_NO_CHANGE = 0;
    public static final int CPTPL_CLEAR = 2;
    public static final int CPTPL_SET = 3;

    public static final int CRKEY_OFFSET = 0;
    /** NRKEY for Register, PRKEY for Acquire. */
    public static final int SECOND_KEY_OFFSET = 8;
    public static final int REGISTER_DATA_LENGTH = 16;
    public static final int ACQUIRE_DATA_LENGTH = 16;
    public static final int RELEASE_DATA_LENGTH = 8;

    /** Report CDW11 bit 0: extended data structure. */
    public static final int REPORT_EDS = 1;

    public static int action(int cdw10) {
        return cdw10 & 0x7;
    }

    public static boolean ignoreExistingKey(int cdw10) {
        return (cdw10 & 0x8) != 0;
    }

    public static int type(int cdw10) {
        return (cdw10 >>> 8) & 0xFF;
    }

    public static int changePtpl(int cdw10) {
        return cdw10 >>> 30;
    }

    public static int cdw10(int action, boolean iekey, int type, int cptpl) {
        return (action & 0x7) | (iekey ? 0x8 : 0) | (type & 0xFF) << 8 | (cptpl & 0x3) << 30;
    }

    public static long currentKey(ByteBuffer data, int offset) {
        return data.getLong(offset + CRKEY_OFFSET);
    }

    /** NRKEY (Register) or PRKEY (Acquire). */
    public static long secondKey(ByteBuffer data, int offset) {
        return data.getLong(offset + SECOND_KEY_OFFSET);
    }

    /** Data length of each reservation command that carries data, -1 for others (Report's is controller to host). */
    public static int dataLength(int opcode) {
        switch (opcode) {
            case OPC_REGISTER: return REGISTER_DATA_LENGTH;
            case OPC_ACQUIRE: return ACQUIRE_DATA_LENGTH;
            case OPC_RELEASE: return RELEASE_DATA_LENGTH;
            default: return -1;
        }
    }
}
