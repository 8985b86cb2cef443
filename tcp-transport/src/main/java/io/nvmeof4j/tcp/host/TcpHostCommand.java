package io.nvmeof4j.tcp.host;

import io.nvmeof4j.protocol.command.CompletionQueueEntry;
import io.nvmeof4j.protocol.command.SglDescriptor;
import io.nvmeof4j.protocol.command.SubmissionQueueEntry;
import io.nvmeof4j.protocol.spi.host.HostCommandSlot;
import io.nvmeof4j.protocol.tcp.CapsuleCmdPdu;
import io.nvmeof4j.protocol.tcp.H2CDataPdu;
import io.nvmeof4j.protocol.tcp.PduFlyweight;
import io.nvmeof4j.protocol.tcp.PduType;
import io.nvmeof4j.tcp.pdu.PduSendJob;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

import static io.nvmeof4j.protocol.tcp.PduFlyweight.FLAG_DDGSTF;
import static io.nvmeof4j.protocol.tcp.PduFlyweight.FLAG_HDGSTF;
import static io.nvmeof4j.protocol.tcp.PduFlyweight.FLAG_LAST_PDU;

/**
 * One command slot of a {@link TcpHostQueue} (the common part, CID and data range, is {@link HostCommandSlot}'s). It
 * owns preallocated views of the queue's slot memory: the CapsuleCmd header (with the SQE), the H2CData header, a data
 * digest, and a CQE kept when a completion overtakes the command's own sends. Its PDUs go out as one job of the
 * queue's send queue ({@link #pdus}): the CapsuleCmd (with in-capsule data), then for each R2T the H2CData PDUs of at
 * most MAXH2CDATA each, LAST_PDU on the last. The caller's buffer is the job's shared segment, so that several
 * commands can send disjoint ranges of it. Poll-group thread only.
 */
final class TcpHostCommand extends HostCommandSlot {
    /** The CapsuleCmd is queued or being written. */
    static final int SENDING_CAPSULE = SUBMITTED;
    /** Waiting for the controller: R2T, C2HData or CapsuleResp. */
    static final int IN_FLIGHT = 2;

    static final int SLOT_BYTES = 160;
    private static final int CAPSULE_AT = 0;
    private static final int H2C_AT = 80;
    private static final int DIGEST_AT = 112;
    private static final int CQE_AT = 128;

    private final ByteBuffer capsuleHeader;
    private final CapsuleCmdPdu capsule = new CapsuleCmdPdu();
    private final ByteBuffer h2cHeader;
    private final H2CDataPdu h2c = new H2CDataPdu();
    private final ByteBuffer dataDigest;
    final ByteBuffer deferredCqeBuffer;
    final CompletionQueueEntry deferredCqe = new CompletionQueueEntry();
    /** This command's PDUs as a send job. */
    final Pdus pdus = new Pdus();
    /** The queue the slot belongs to; set once, by the queue. */
    TcpHostQueue queue;

    boolean inCapsule;
    /** C2H: bytes received so far. */
    int c2hReceived;
    /** H2C: bytes sent so far (in-capsule or H2CData): the R2TO the next R2T must carry. */
    int h2cSent;
    private int ttag;
    private int r2tRemaining;
    /** A completion arrived while this command's PDUs were still queued: delivered once they are out. */
    boolean completionDeferred;

    TcpHostCommand(int tag, ByteBuffer slotMemory, int slotOffset) {
        super(tag);
        this.capsuleHeader = view(slotMemory, slotOffset + CAPSULE_AT,
            CapsuleCmdPdu.HEADER_LENGTH + PduFlyweight.DIGEST_LENGTH);
        this.h2cHeader = view(slotMemory, slotOffset + H2C_AT, H2CDataPdu.HEADER_LENGTH + PduFlyweight.DIGEST_LENGTH);
        this.dataDigest = view(slotMemory, slotOffset + DIGEST_AT, PduFlyweight.DIGEST_LENGTH);
        this.deferredCqeBuffer = view(slotMemory, slotOffset + CQE_AT, CompletionQueueEntry.LENGTH);
        capsule.wrap(capsuleHeader, 0);
        h2c.wrap(h2cHeader, 0);
        deferredCqe.wrap(deferredCqeBuffer, 0);
    }

    private static ByteBuffer view(ByteBuffer memory, int offset, int length) {
        return memory.slice(offset, length).order(ByteOrder.LITTLE_ENDIAN);
    }

    /** An R2T for this write: H2CData for {@code length} bytes from {@link #h2cSent}, tagged {@code ttag}. */
    void r2t(int ttag, int length) {
        this.ttag = ttag;
        this.r2tRemaining = length;
        pdus.armNextH2CData();
    }

    /** The rest of an R2T no longer goes out (the controller answered early). */
    void cancelR2T() {
        r2tRemaining = 0;
    }

    @Override
    protected void onEnd(CompletionQueueEntry cqe) {
        completionDeferred = false; // the send queue let go of the caller's buffer when the job left it
    }

    /** The PDUs of this command, as one job of the queue's send queue. */
    final class Pdus extends PduSendJob {
        private boolean h2cData;

        /**
         * Arms the CapsuleCmd for {@code sqe} with this slot's CID and an SGL for the data (0x01 with in-capsule data,
         * 0x5A with the length), its digests, and the in-capsule data itself when {@link #inCapsule}.
         */
        void armCapsule(SubmissionQueueEntry sqe) {
            int headerDigestLength = queue.headerDigestLength;
            int dataDigestLength = queue.dataDigestLength;
            ByteBuffer header = capsuleHeader;
            header.clear();
            ByteBuffer source = sqe.buffer();
            int from = sqe.offset();
            for (int i = 0; i < SubmissionQueueEntry.LENGTH; i += 8) {
                header.putLong(CapsuleCmdPdu.SQE_OFFSET + i, source.getLong(from + i));
            }
            SubmissionQueueEntry copy = capsule.sqe();
            copy.commandId(cid);
            copy.sgl1().address(0).length(dataLength)
                .id(inCapsule ? SglDescriptor.ID_IN_CAPSULE : SglDescriptor.ID_TCP_TRANSPORT);
            int headerEnd = CapsuleCmdPdu.HEADER_LENGTH + headerDigestLength;
            int flags = headerDigestLength > 0 ? FLAG_HDGSTF : 0;
            long plen = headerEnd;
            if (inCapsule) {
                flags |= dataDigestLength > 0 ? FLAG_DDGSTF : 0;
                plen += dataLength + dataDigestLength;
            }
            capsule.pduType(PduType.CAPSULE_CMD).flags(flags).headerLength(CapsuleCmdPdu.HEADER_LENGTH)
                .pduDataOffset(inCapsule ? headerEnd : 0).pduLength(plen);
            if (headerDigestLength > 0) {
                header.putInt(CapsuleCmdPdu.HEADER_LENGTH, queue.crc().compute(header, 0, CapsuleCmdPdu.HEADER_LENGTH));
            }
            h2cData = false;
            header.limit(headerEnd).position(0);
            segments[0] = header;
            if (!inCapsule) {
                armSegments(1);
                return;
            }
            armWithData(1, dataOffset, dataLength);
            h2cSent = dataLength;
        }

        /** Arms the next H2CData PDU of the current R2T: at most MAXH2CDATA bytes, LAST_PDU on the R2T's last. */
        void armNextH2CData() {
            int headerDigestLength = queue.headerDigestLength;
            int chunk = Math.min(r2tRemaining, queue.maxH2CDataSize());
            boolean last = chunk == r2tRemaining;
            int headerEnd = H2CDataPdu.HEADER_LENGTH + headerDigestLength;
            ByteBuffer header = h2cHeader;
            header.clear();
            h2c.init((long) headerEnd + chunk + queue.dataDigestLength)
                .flags((headerDigestLength > 0 ? FLAG_HDGSTF : 0) | (queue.dataDigestLength > 0 ? FLAG_DDGSTF : 0)
                    | (last ? FLAG_LAST_PDU : 0))
                .pduDataOffset(headerEnd)
                .commandCapsuleCid(cid)
                .transferTag(ttag)
                .dataOffset(h2cSent)
                .dataLength(chunk);
            if (headerDigestLength > 0) {
                header.putInt(H2CDataPdu.HEADER_LENGTH, queue.crc().compute(header, 0, H2CDataPdu.HEADER_LENGTH));
            }
            h2cData = true;
            header.limit(headerEnd).position(0);
            segments[0] = header;
            armWithData(1, dataOffset + h2cSent, chunk);
            h2cSent += chunk;
            r2tRemaining -= chunk;
        }

        /** Adds {@code length} bytes of the caller's buffer (a shared segment) and their data digest, then arms. */
        private void armWithData(int count, int from, int length) {
            int shared = count;
            data.limit(data.capacity()); // the range must fit before the position moves into it
            data.position(from);
            data.limit(from + length);
            segments[count++] = data;
            if (queue.dataDigestLength > 0) {
                dataDigest.putInt(0, queue.crc().compute(data, from, length));
                dataDigest.clear();
                segments[count++] = dataDigest;
            }
            armSegments(count, shared);
        }

        @Override
        protected boolean hasNextPdu() {
            return h2cData && r2tRemaining > 0;
        }

        @Override
        protected boolean armNext() {
            if (!hasNextPdu()) {
                return false;
            }
            armNextH2CData();
            return true;
        }

        @Override
        protected void sent() {
            queue.onSent(TcpHostCommand.this);
        }

        @Override
        protected void dropped() {
            // The queue is closing: its commands end with a path error, which lets go of their buffers.
        }
    }
}
