package io.nvmeof4j.target.io;

import io.nvmeof4j.protocol.spi.Request;
import io.nvmeof4j.target.model.Namespace;

/**
 * Executes NVM command set I/O commands (Read, Write, Flush, Write Zeroes, Dataset Management, Compare) on a
 * namespace. The controller layer calls it on the queue's reactor thread after checking the controller is ready
 * and resolving the NSID; this layer checks everything else (opcode, LBA range, SGL length) and completes the
 * request with the NVMe status. Never blocks, never throws on bad input, allocates nothing per command.
 */
public interface NvmCommandExecutor {
    void execute(Request request, Namespace namespace);
}
