package io.nvmeof4j.protocol.io;

/**
 * The NVM command set's I/O opcodes (NVM Command Set Specification, Opcodes for NVM Commands), declared once for the
 * target's command entry, the initiator's queues and the tools.
 */
public final class NvmOpcode {
    public static final int FLUSH = 0x00;
    public static final int WRITE = 0x01;
    public static final int READ = 0x02;
    public static final int WRITE_UNCORRECTABLE = 0x04;
    public static final int COMPARE = 0x05;
    public static final int WRITE_ZEROES = 0x08;
    public static final int DATASET_MANAGEMENT = 0x09;
    public static final int VERIFY = 0x0C;
    public static final int RESERVATION_REGISTER = 0x0D;
    public static final int RESERVATION_REPORT = 0x0E;
    public static final int RESERVATION_ACQUIRE = 0x11;
    public static final int RESERVATION_RELEASE = 0x15;
    public static final int COPY = 0x19;

    /**
     * The timed I/O operations both roles meter, as dense indexes into their per-operation meter arrays (Prometheus
     * tag {@code op}): {@link #meteredOp(int)} maps an opcode to one, {@link #meteredOpName(int)} names it.
     */
    public static final int OP_READ = 0;
    public static final int OP_WRITE = 1;
    public static final int OP_FLUSH = 2;
    public static final int OP_WRITE_ZEROES = 3;
    public static final int OP_DEALLOCATE = 4;
    public static final int OP_COMPARE = 5;
    public static final int OP_VERIFY = 6;
    public static final int OP_COPY = 7;
    /** How many metered I/O operations there are; a role may number its own further operations from here. */
    public static final int METERED_OPS = 8;
    private static final String[] OP_NAMES = {"read", "write", "flush", "write_zeroes", "deallocate", "compare",
        "verify", "copy"};

    private NvmOpcode() {
    }

    /** The metered operation of an opcode, or -1 for one that is not metered as I/O. */
    public static int meteredOp(int opcode) {
        switch (opcode) {
            case READ: return OP_READ;
            case WRITE: return OP_WRITE;
            case FLUSH: return OP_FLUSH;
            case WRITE_ZEROES: return OP_WRITE_ZEROES;
            case DATASET_MANAGEMENT: return OP_DEALLOCATE;
            case COMPARE: return OP_COMPARE;
            case VERIFY: return OP_VERIFY;
            case COPY: return OP_COPY;
            default: return -1;
        }
    }

    /** The {@code op} tag value of a metered operation ({@code 0 <= op < METERED_OPS}). */
    public static String meteredOpName(int op) {
        return OP_NAMES[op];
    }
}
