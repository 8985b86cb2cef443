package io.nvmeof4j.protocol.command;

/** Direction of a command's data transfer, as given by bits 1:0 of its opcode (or FCTYPE). */
public enum DataDirection {
    NONE,
    HOST_TO_CONTROLLER,
    CONTROLLER_TO_HOST,
    /** 11b: bidirectional; no command this project serves uses it. */
    BIDIRECTIONAL;

    public static DataDirection fromOpcodeBits(int opcode) {
        switch (opcode & 0x3) {
            case 1:
                return HOST_TO_CONTROLLER;
            case 2:
                return CONTROLLER_TO_HOST;
            case 3:
                return BIDIRECTIONAL;
            default:
                return NONE;
        }
    }
}
