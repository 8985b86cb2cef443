package io.nvmeof4j.initiator;

import io.nvmeof4j.protocol.command.NvmeStatus;

/** A completion copied out of the transport's flyweight (control path only). */
record Cqe(int cid, int status, int dw0, int dw1) {
    boolean ok() {
        return NvmeStatus.isSuccess(status);
    }

    long result64() {
        return (dw0 & 0xFFFF_FFFFL) | (long) dw1 << 32;
    }
}
