package io.nvmeof4j.target.io;

import io.nvmeof4j.protocol.command.NvmeStatus;
import io.nvmeof4j.protocol.spi.Request;
import io.nvmeof4j.target.model.Namespace;

/**
 * Executes NVM command set I/O commands (Read, Write, Flush, Write Zeroes, Dataset Management, Compare) on a
 * namespace. The controller layer calls it on the queue's reactor thread after checking the controller is ready
 * and resolving the NSID; this layer checks everything else (opcode, LBA range, SGL length) and completes the
 * request with the NVMe status. Never blocks, never throws on bad input, allocates nothing per command.
 */
public interface NvmCommandExecutor {
    /**
     * @param io the I/O context of the request's queue slot: the same object for every command of that slot, used
     *           by one command at a time
     */
    void execute(Request request, Namespace namespace, IoContext io);

    /**
     * Executes a fused Compare and Write whose halves the controller layer has paired (adjacent on one submission
     * queue, same NSID): atomically against every other write to the range, completing both requests. An executor
     * without fused operations refuses both halves with Invalid Field in Command, what the spec asks of a
     * controller whose FUSES is 0.
     *
     * @param io the I/O context of the Compare half's slot (the pair runs in it)
     */
    default void executeFused(Request compare, Request write, Namespace namespace, IoContext io) {
        compare.complete(NvmeStatus.INVALID_FIELD | NvmeStatus.DNR);
        write.complete(NvmeStatus.INVALID_FIELD | NvmeStatus.DNR);
    }
}
