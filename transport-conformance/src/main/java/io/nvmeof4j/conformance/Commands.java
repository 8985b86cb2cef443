package io.nvmeof4j.conformance;

import io.nvmeof4j.protocol.admin.AdminOpcode;
import io.nvmeof4j.protocol.admin.GetLogPageCommand;
import io.nvmeof4j.protocol.command.SubmissionQueueEntry;
import io.nvmeof4j.protocol.fabrics.ConnectCommand;
import io.nvmeof4j.protocol.fabrics.FabricsCommandType;
import io.nvmeof4j.protocol.fabrics.PropertyCommand;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * SQEs the suite submits, built with the protocol module's codecs. A new 64-byte SQE each (the host transport
 * copies it at submit; allocation does not matter in tests). CID and SGL1 are the transport's to fill.
 */
final class Commands {
    private Commands() {
    }

    static SubmissionQueueEntry sqe(int opcode) {
        return new SubmissionQueueEntry().wrap(ByteBuffer.allocate(SubmissionQueueEntry.LENGTH)
            .order(ByteOrder.LITTLE_ENDIAN), 0).clear().opcode(opcode).flags(SubmissionQueueEntry.FLAGS_PSDT_SGL);
    }

    static SubmissionQueueEntry connect(int queueId, int zeroBasedSqSize) {
        SubmissionQueueEntry sqe = sqe(SubmissionQueueEntry.OPCODE_FABRICS);
        new ConnectCommand().wrap(sqe).init(0, 0).queueId(queueId).submissionQueueSize(zeroBasedSqSize)
            .keepAliveTimeoutMillis(queueId == 0 ? 120_000 : 0);
        return sqe;
    }

    static SubmissionQueueEntry propertyGet(int offset, boolean eightBytes) {
        SubmissionQueueEntry sqe = sqe(SubmissionQueueEntry.OPCODE_FABRICS);
        new PropertyCommand().wrap(sqe).init(0, FabricsCommandType.PROPERTY_GET)
            .attributes(eightBytes ? PropertyCommand.SIZE_8_BYTES : PropertyCommand.SIZE_4_BYTES)
            .propertyOffset(offset);
        return sqe;
    }

    static SubmissionQueueEntry propertySet(int offset, int value) {
        SubmissionQueueEntry sqe = sqe(SubmissionQueueEntry.OPCODE_FABRICS);
        new PropertyCommand().wrap(sqe).init(0, FabricsCommandType.PROPERTY_SET)
            .attributes(PropertyCommand.SIZE_4_BYTES).propertyOffset(offset).value(value & 0xFFFF_FFFFL);
        return sqe;
    }

    static SubmissionQueueEntry identify(int cns, int nsid) {
        SubmissionQueueEntry sqe = sqe(AdminOpcode.IDENTIFY).nsid(nsid);
        sqe.cdw(10, cns);
        return sqe;
    }

    static SubmissionQueueEntry getLogPage(int lid, int lengthBytes, long offset) {
        SubmissionQueueEntry sqe = sqe(AdminOpcode.GET_LOG_PAGE);
        new GetLogPageCommand().wrap(sqe).init(0, 0xFFFF_FFFF, lid, lengthBytes, offset);
        return sqe;
    }

    static SubmissionQueueEntry getFeatures(int fid) {
        SubmissionQueueEntry sqe = sqe(AdminOpcode.GET_FEATURES);
        sqe.cdw(10, fid);
        return sqe;
    }

    static SubmissionQueueEntry setFeatures(int fid, int dw11) {
        SubmissionQueueEntry sqe = sqe(AdminOpcode.SET_FEATURES);
        sqe.cdw(10, fid).cdw(11, dw11);
        return sqe;
    }

    /** An NVM command on {@code nsid}: SLBA in CDW10-11, NLB (0-based) in CDW12. */
    static SubmissionQueueEntry io(int opcode, int nsid, long slba, int blocks) {
        SubmissionQueueEntry sqe = sqe(opcode).nsid(nsid).cdw10And11(slba);
        sqe.cdw(12, Math.max(0, blocks - 1));
        return sqe;
    }
}
