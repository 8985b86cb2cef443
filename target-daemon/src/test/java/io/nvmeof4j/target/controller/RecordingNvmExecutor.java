package io.nvmeof4j.target.controller;

import io.nvmeof4j.protocol.command.NvmeStatus;
import io.nvmeof4j.protocol.command.SubmissionQueueEntry;
import io.nvmeof4j.protocol.spi.Request;
import io.nvmeof4j.target.backend.BlockIo;
import io.nvmeof4j.target.io.IoContext;
import io.nvmeof4j.target.io.NvmCommandExecutor;
import io.nvmeof4j.target.model.Namespace;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * Fake NVM executor: records which namespace each command was sent to and does Read/Write against the device
 * (SLBA in CDW10-11, NLB in CDW12), enough to see bytes travel; other opcodes just succeed. Can hold commands
 * instead of completing them, to test draining.
 */
public final class RecordingNvmExecutor implements NvmCommandExecutor {
    private final List<Integer> nsids = Collections.synchronizedList(new ArrayList<>());
    private final List<Request> held = Collections.synchronizedList(new ArrayList<>());
    private volatile boolean hold;

    /** Fused pairs as the handler paired them: [compare, write], in order. */
    final List<Request[]> fusedPairs = Collections.synchronizedList(new ArrayList<>());

    @Override
    public void executeFused(Request compare, Request write, Namespace namespace, IoContext io) {
        nsids.add(namespace.nsid());
        fusedPairs.add(new Request[] {transportRequest(compare), transportRequest(write)});
        compare.complete(NvmeStatus.SUCCESS);
        write.complete(NvmeStatus.SUCCESS);
    }

    @Override
    public void execute(Request request, Namespace namespace, IoContext context) {
        nsids.add(namespace.nsid());
        if (hold) {
            held.add(request);
            return;
        }
        SubmissionQueueEntry sqe = request.command();
        int opcode = sqe.opcode();
        if (opcode != 0x01 && opcode != 0x02) {
            request.complete(NvmeStatus.SUCCESS);
            return;
        }
        long bytes = ((sqe.cdw12() & 0xFFFF) + 1L) << namespace.blockSizeShift();
        if (request.dataLength() != bytes) {
            request.complete(NvmeStatus.SGL_DATA_LENGTH_INVALID | NvmeStatus.DNR);
            return;
        }
        BlockIo io = new BlockIo() {
            @Override
            public void complete(int nvmeStatus) {
                request.complete(nvmeStatus);
            }
        };
        io.prepare(opcode == 0x01 ? BlockIo.Op.WRITE : BlockIo.Op.READ, sqe.cdw10And11() << namespace.blockSizeShift(),
            bytes, request.data(), false);
        namespace.device().submit(io);
    }

    /** The request the transport made, behind the command layer's in-flight count. */
    private static Request transportRequest(Request request) {
        return request instanceof InFlightRequest counted ? counted.transportRequest() : request;
    }

    public List<Integer> nsids() {
        return nsids;
    }

    public void hold(boolean hold) {
        this.hold = hold;
    }

    /** Commands held now. */
    public int heldCount() {
        return held.size();
    }

    /** Completes the oldest held command with SUCCESS; false when none is held. */
    public boolean releaseOldest() {
        Request r;
        synchronized (held) {
            if (held.isEmpty()) {
                return false;
            }
            r = held.remove(0);
        }
        r.complete(NvmeStatus.SUCCESS);
        return true;
    }

    /** Completes every held command with SUCCESS. */
    public void release() {
        List<Request> copy;
        synchronized (held) {
            copy = new ArrayList<>(held);
            held.clear();
        }
        for (Request r : copy) {
            r.complete(NvmeStatus.SUCCESS);
        }
    }
}
