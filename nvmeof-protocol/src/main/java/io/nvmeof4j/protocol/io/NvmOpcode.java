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

    private NvmOpcode() {
    }
}
