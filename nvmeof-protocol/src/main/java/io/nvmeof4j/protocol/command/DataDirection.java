package io.nvmeof4j.protocol.command;

/** Direction of a command's data transfer, as given by bits 1:0 of its opcode (or FCTYPE). */
public enum DataDirection {
    NONE,
    HOST_TO_CONTROLLER,
    CONTROLLER_TO_HOST,
    /** 11b: bidirectional; no command this project serves uses it. */
    BIDIRECTIONAL;

    /** Indexed by opcode bits 1:0: the constants are declared in that order. */
    private static final DataDirection[] BY_OPCODE_BITS = values();

    /**
     * A table lookup rather than a switch: on a host reactor that sees reads only, C2 compiled the switch with the
     * other cases as traps, and each Keep Alive completion (no data) on the same thread then deoptimised the whole
     * inlined receive path and had it recompiled, on a busy CPU (docs/benchmarks.md, "nvmeof perf").
     */
    public static DataDirection fromOpcodeBits(int opcode) {
        return BY_OPCODE_BITS[opcode & 0x3];
    }
}
