package io.nvmeof4j.tcp.host;

import io.nvmeof4j.protocol.command.CompletionQueueEntry;
import io.nvmeof4j.protocol.command.SglDescriptor;
import io.nvmeof4j.protocol.command.SubmissionQueueEntry;
import io.nvmeof4j.protocol.spi.TransportAddress;
import io.nvmeof4j.protocol.spi.host.AbstractHostQueue;
import io.nvmeof4j.protocol.spi.host.HostCommandCallback;
import io.nvmeof4j.protocol.spi.host.HostPollGroup;
import io.nvmeof4j.protocol.spi.host.HostQueueListener;
import io.nvmeof4j.protocol.spi.host.HostQueueOptions;
import io.nvmeof4j.protocol.spi.host.HostStatus;
import io.nvmeof4j.protocol.tcp.C2HDataPdu;
import io.nvmeof4j.protocol.tcp.CapsuleCmdPdu;
import io.nvmeof4j.protocol.tcp.CapsuleRespPdu;
import io.nvmeof4j.protocol.tcp.H2CDataPdu;
import io.nvmeof4j.protocol.tcp.PduFlyweight;
import io.nvmeof4j.protocol.tcp.PduType;
import io.nvmeof4j.protocol.tcp.R2TPdu;
import io.nvmeof4j.protocol.tcp.TermReqPdu;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.SelectionKey;
import java.nio.channels.SocketChannel;
import io.nvmeof4j.tcp.tls.TcpStream;
import java.util.Arrays;

import static io.nvmeof4j.protocol.tcp.PduFlyweight.FLAG_DDGSTF;
import static io.nvmeof4j.protocol.tcp.PduFlyweight.FLAG_HDGSTF;
import static io.nvmeof4j.protocol.tcp.PduFlyweight.FLAG_LAST_PDU;
import static io.nvmeof4j.protocol.tcp.PduFlyweight.FLAG_SUCCESS;

/**
 * One NVMe/TCP connection in the host role: one NVMe queue (NVMe/TCP Transport Specification 1.0; wire
 * reference 5). Everything runs on the owning {@link TcpHostPollGroup}'s thread.
 *
 * <h2>Send</h2>
 * {@link #submit} fills the command's slot (CapsuleCmd header with the SQE, SGL 0x01 with in-capsule data or 0x5A
 * with the length, digests) and queues the slot as a send job. An R2T queues the same slot again for its H2CData
 * PDUs, at most MAXH2CDATA each, LAST_PDU on the last. {@link #flush} writes queued jobs with gathering writes; a
 * job whose caller buffer is already in the batch waits for the next write, since a buffer has only one position.
 *
 * <h2>Receive</h2>
 * Into a per-queue receive buffer, parsed in place. Every controller PDU must carry HLEN 24 and the negotiated
 * digest flags (the Linux host's rules). C2HData payloads go into the caller's buffer: copied when they came with
 * the header, read straight from the socket when large. A CapsuleResp (or a last C2HData with SUCCESS) completes the
 * command: the slot is freed first, then its callback runs. A C2HTermReq, a protocol error, EOF or an I/O error
 * closes the queue: outstanding commands complete with {@link HostStatus#HOST_PATH_ERROR}, then the listener hears
 * the reason.
 */
final class TcpHostQueue extends AbstractHostQueue<TcpHostCommand> {
    private static final Logger LOG = LoggerFactory.getLogger(TcpHostQueue.class);

    private static final int RECV_HEADER = 0;
    private static final int RECV_PAYLOAD = 1;
    private static final int RECV_DATA_DIGEST = 2;

    private static final int RECEIVE_BUFFER_SIZE = 64 * 1024;
    /** Payload bytes from which a C2HData payload is read straight into the caller's buffer. */
    private static final int DIRECT_READ_THRESHOLD = 8192;
    private static final int READ_BUDGET = 8;
    private static final int WRITE_BUDGET = 16;
    private static final int HEADER_24 = 24;

    final TcpHostPollGroup group;
    final SocketChannel channel;
    /** The socket, or TLS records over it. */
    private final TcpStream stream;
    private final Runnable readAgain = this::onReadable;
    private final int headerDigestLength;
    private final int dataDigestLength;
    private final int maxH2CDataSize;
    SelectionKey key;
    boolean inFlushList;
    private boolean writeInterest;


    // Receive.
    private final ByteBuffer receiveBuffer = ByteBuffer.allocateDirect(RECEIVE_BUFFER_SIZE).order(ByteOrder.LITTLE_ENDIAN);
    private int readIndex;
    private int writeIndex;
    private int receiveState = RECV_HEADER;
    private TcpHostCommand payloadCommand;
    private int payloadStart;
    private int payloadPosition;
    private int payloadEnd;
    private boolean payloadSuccess;
    private final CompletionQueueEntry receivedCqe = new CompletionQueueEntry();

    // Send queue (intrusive FIFO of slots).
    private TcpHostCommand sendHead;
    private TcpHostCommand sendTail;

    TcpHostQueue(TcpHostPollGroup group, TcpStream stream, TransportAddress address, String peer,
                 HostQueueOptions options, int maxH2CDataSize, HostQueueListener listener) {
        super("NVMe/TCP", address, peer, options.inCapsuleDataSize(), commands(options.depth()), listener);
        this.group = group;
        this.stream = stream;
        this.channel = stream.channel();
        this.headerDigestLength = options.headerDigest() ? PduFlyweight.DIGEST_LENGTH : 0;
        this.dataDigestLength = options.dataDigest() ? PduFlyweight.DIGEST_LENGTH : 0;
        this.maxH2CDataSize = maxH2CDataSize;
    }

    private static TcpHostCommand[] commands(int depth) {
        ByteBuffer memory = ByteBuffer.allocateDirect(depth * TcpHostCommand.SLOT_BYTES).order(ByteOrder.LITTLE_ENDIAN);
        TcpHostCommand[] commands = new TcpHostCommand[depth];
        for (int tag = 0; tag < depth; tag++) {
            commands[tag] = new TcpHostCommand(tag, memory, tag * TcpHostCommand.SLOT_BYTES);
        }
        return commands;
    }

    // ---- HostQueue ---------------------------------------------------------------------------------------------

    @Override
    public HostPollGroup pollGroup() {
        return group;
    }

    /** MAXH2CDATA the controller announced in ICResp. */
    int maxH2CDataSize() {
        return maxH2CDataSize;
    }

    @Override
    public int submit(SubmissionQueueEntry sqe, ByteBuffer data, int dataOffset, int dataLength,
                      HostCommandCallback callback, Object context) {
        TcpHostCommand command = take(sqe, data, dataOffset, dataLength, callback, context);
        if (command == null) {
            return -1;
        }
        command.c2hReceived = 0;
        command.h2cSent = 0;
        command.r2tRemaining = 0;
        command.completionDeferred = false;
        int limit = sqe.isFabrics() ? Math.max(HostQueueOptions.ADMIN_IN_CAPSULE_DATA_SIZE, inCapsuleDataSize())
            : inCapsuleDataSize();
        command.inCapsule = command.hostToController && dataLength > 0 && dataLength <= limit;

        ByteBuffer header = command.capsuleHeader;
        header.clear();
        ByteBuffer source = sqe.buffer();
        int from = sqe.offset();
        for (int i = 0; i < SubmissionQueueEntry.LENGTH; i += 8) {
            header.putLong(CapsuleCmdPdu.SQE_OFFSET + i, source.getLong(from + i));
        }
        SubmissionQueueEntry copy = command.capsule.sqe();
        copy.commandId(command.cid);
        copy.sgl1().address(0).length(dataLength)
            .id(command.inCapsule ? SglDescriptor.ID_IN_CAPSULE : SglDescriptor.ID_TCP_TRANSPORT);
        int headerEnd = CapsuleCmdPdu.HEADER_LENGTH + headerDigestLength;
        int flags = headerDigestLength > 0 ? FLAG_HDGSTF : 0;
        long plen = headerEnd;
        if (command.inCapsule) {
            flags |= dataDigestLength > 0 ? FLAG_DDGSTF : 0;
            plen += dataLength + dataDigestLength;
        }
        command.capsule.pduType(PduType.CAPSULE_CMD).flags(flags).headerLength(CapsuleCmdPdu.HEADER_LENGTH)
            .pduDataOffset(command.inCapsule ? headerEnd : 0).pduLength(plen);
        if (headerDigestLength > 0) {
            header.putInt(CapsuleCmdPdu.HEADER_LENGTH, group.crc.compute(header, 0, CapsuleCmdPdu.HEADER_LENGTH));
        }
        command.clearSegments();
        command.addSegment(header, 0, headerEnd);
        if (command.inCapsule) {
            command.addDataSegment(data, dataOffset, dataOffset + dataLength);
            if (dataDigestLength > 0) {
                command.dataDigest.putInt(0, group.crc.compute(data, dataOffset, dataLength));
                command.addSegment(command.dataDigest, 0, PduFlyweight.DIGEST_LENGTH);
            }
            command.h2cSent = dataLength;
        }
        command.sendKind = TcpHostCommand.SEND_CAPSULE;
        command.state = TcpHostCommand.SENDING_CAPSULE;
        enqueueSend(command);
        return command.cid;
    }

    // ---- send --------------------------------------------------------------------------------------------------

    private void enqueueSend(TcpHostCommand command) {
        command.nextSend = null;
        command.inSendQueue = true;
        if (sendTail == null) {
            sendHead = command;
        } else {
            sendTail.nextSend = command;
        }
        sendTail = command;
        if (!inFlushList && !writeInterest) {
            group.requestFlush(this);
        }
    }

    /** Writes queued PDUs until the socket is full, nothing is left, or the budget is spent. */
    int flush() {
        if (!isOpen()) {
            return 0;
        }
        try {
            if (!stream.flushPending()) {
                setWriteInterest(true); // TLS records of an earlier write still wait for the socket
                return 1;
            }
        } catch (IOException e) {
            closeNow("send to " + peer() + " failed: " + e.getMessage());
            return 1;
        }
        ByteBuffer[] iov = group.iov;
        int work = 0;
        for (int round = 0; round < WRITE_BUDGET && sendHead != null; round++) {
            int count = 0;
            long total = 0;
            for (TcpHostCommand job = sendHead; job != null && count + TcpHostCommand.MAX_SEGMENTS <= iov.length;
                 job = job.nextSend) {
                ByteBuffer pendingData = job.pendingDataBuffer();
                if (pendingData != null && contains(iov, count, pendingData)) {
                    break; // one position per buffer: this range goes in the next write
                }
                for (int i = job.segmentIndex; i < job.segmentCount; i++) {
                    ByteBuffer segment = job.segments[i];
                    segment.limit(job.segmentLimit[i]);
                    segment.position(job.segmentPosition[i]);
                    iov[count++] = segment;
                    total += job.segmentLimit[i] - job.segmentPosition[i];
                }
                if (job.hasMorePdus()) {
                    break; // its next PDU reuses the header: armed only after this one is out
                }
            }
            long written;
            try {
                written = stream.write(iov, 0, count);
            } catch (IOException e) {
                Arrays.fill(iov, 0, count, null);
                closeNow("send to " + peer() + " failed: " + e.getMessage());
                return work + 1;
            }
            Arrays.fill(iov, 0, count, null);
            work++;
            // Record how far each segment got, then retire finished PDUs.
            int seen = 0;
            for (TcpHostCommand job = sendHead; job != null && seen < count; job = job.nextSend) {
                for (int i = job.segmentIndex; i < job.segmentCount && seen < count; i++, seen++) {
                    job.segmentPosition[i] = job.segments[i].position();
                }
            }
            while (sendHead != null) {
                TcpHostCommand job = sendHead;
                if (!job.segmentsWritten()) {
                    break;
                }
                if (job.hasMorePdus()) {
                    armNextH2CData(job);
                    break;
                }
                popSendHead();
                onSent(job);
                if (!isOpen()) {
                    return work;
                }
            }
            if (written < total || stream.hasPendingOutput()) {
                setWriteInterest(true);
                return work;
            }
        }
        if (sendHead == null) {
            setWriteInterest(false);
        } else if (!writeInterest && !inFlushList) {
            group.requestFlush(this);
        }
        return work;
    }

    private static boolean contains(ByteBuffer[] iov, int count, ByteBuffer buffer) {
        for (int i = 0; i < count; i++) {
            if (iov[i] == buffer) {
                return true;
            }
        }
        return false;
    }

    private void popSendHead() {
        TcpHostCommand job = sendHead;
        sendHead = job.nextSend;
        if (sendHead == null) {
            sendTail = null;
        }
        job.nextSend = null;
        job.inSendQueue = false;
    }

    private void onSent(TcpHostCommand command) {
        for (int i = 0; i < TcpHostCommand.MAX_SEGMENTS; i++) {
            command.segments[i] = null;
        }
        if (command.state == TcpHostCommand.SENDING_CAPSULE) {
            command.state = TcpHostCommand.IN_FLIGHT;
        }
        if (command.completionDeferred) {
            slots.complete(command, command.deferredCqe);
        }
    }

    private void setWriteInterest(boolean on) {
        if (writeInterest != on) {
            writeInterest = on;
            if (key != null && key.isValid()) {
                key.interestOps(SelectionKey.OP_READ | (on ? SelectionKey.OP_WRITE : 0));
            }
        }
    }

    private void armNextH2CData(TcpHostCommand command) {
        int chunk = Math.min(command.r2tRemaining, maxH2CDataSize);
        boolean last = chunk == command.r2tRemaining;
        int headerEnd = H2CDataPdu.HEADER_LENGTH + headerDigestLength;
        ByteBuffer header = command.h2cHeader;
        header.clear();
        command.h2c.init((long) headerEnd + chunk + dataDigestLength)
            .flags((headerDigestLength > 0 ? FLAG_HDGSTF : 0) | (dataDigestLength > 0 ? FLAG_DDGSTF : 0)
                | (last ? FLAG_LAST_PDU : 0))
            .pduDataOffset(headerEnd)
            .commandCapsuleCid(command.cid)
            .transferTag(command.ttag)
            .dataOffset(command.h2cSent)
            .dataLength(chunk);
        if (headerDigestLength > 0) {
            header.putInt(H2CDataPdu.HEADER_LENGTH, group.crc.compute(header, 0, H2CDataPdu.HEADER_LENGTH));
        }
        int from = command.dataOffset + command.h2cSent;
        command.clearSegments();
        command.addSegment(header, 0, headerEnd);
        command.addDataSegment(command.data, from, from + chunk);
        if (dataDigestLength > 0) {
            command.dataDigest.putInt(0, group.crc.compute(command.data, from, chunk));
            command.addSegment(command.dataDigest, 0, PduFlyweight.DIGEST_LENGTH);
        }
        command.h2cSent += chunk;
        command.r2tRemaining -= chunk;
    }

    // ---- receive -----------------------------------------------------------------------------------------------

    void onReadable() {
        for (int reads = 0; isOpen(); reads++) {
            if (!processReceived()) {
                return;
            }
            if (reads == READ_BUDGET) {
                if (stream.hasBufferedInput()) {
                    group.execute(readAgain); // decrypted bytes the socket will not signal again
                }
                return;
            }
            int wanted;
            int n;
            try {
                if (receiveState == RECV_PAYLOAD && readIndex == writeIndex
                    && payloadEnd - payloadPosition >= DIRECT_READ_THRESHOLD) {
                    ByteBuffer destination = payloadCommand.data;
                    destination.limit(payloadEnd);
                    destination.position(payloadPosition);
                    wanted = payloadEnd - payloadPosition;
                    n = stream.read(destination);
                    if (n > 0) {
                        payloadPosition += n;
                    }
                } else {
                    prepareReceiveBuffer();
                    wanted = receiveBuffer.capacity() - writeIndex;
                    receiveBuffer.limit(receiveBuffer.capacity());
                    receiveBuffer.position(writeIndex);
                    n = stream.read(receiveBuffer);
                    if (n > 0) {
                        writeIndex += n;
                    }
                }
            } catch (IOException e) {
                closeNow("receive from " + peer() + " failed: " + e.getMessage());
                return;
            }
            if (n < 0) {
                closeNow("controller " + peer() + " closed the connection");
                return;
            }
            if (n == 0) {
                return;
            }
            if (n < wanted) {
                processReceived();
                return;
            }
        }
    }

    private void prepareReceiveBuffer() {
        if (readIndex == writeIndex) {
            readIndex = 0;
            writeIndex = 0;
        } else if (readIndex > 0 && receiveBuffer.capacity() - writeIndex < receiveBuffer.capacity() / 2) {
            receiveBuffer.limit(writeIndex);
            receiveBuffer.position(readIndex);
            receiveBuffer.compact();
            writeIndex -= readIndex;
            readIndex = 0;
        }
    }

    /** Parses buffered bytes; false once the queue closed. */
    private boolean processReceived() {
        while (isOpen()) {
            boolean progressed;
            switch (receiveState) {
                case RECV_HEADER:
                    progressed = receivePduHeader();
                    break;
                case RECV_PAYLOAD:
                    progressed = receivePayload();
                    break;
                default:
                    progressed = receiveDataDigest();
                    break;
            }
            if (!progressed) {
                return isOpen();
            }
        }
        return false;
    }

    private int u8(int index) {
        return receiveBuffer.get(index) & 0xFF;
    }

    private int u16(int index) {
        return receiveBuffer.getShort(index) & 0xFFFF;
    }

    private long u32(int index) {
        return receiveBuffer.getInt(index) & 0xFFFF_FFFFL;
    }

    private boolean receivePduHeader() {
        int available = writeIndex - readIndex;
        if (available < PduFlyweight.COMMON_HEADER_LENGTH) {
            return false;
        }
        int base = readIndex;
        int type = u8(base + PduFlyweight.TYPE_OFFSET);
        int flags = u8(base + PduFlyweight.FLAGS_OFFSET);
        int hlen = u8(base + PduFlyweight.HLEN_OFFSET);
        int pdo = u8(base + PduFlyweight.PDO_OFFSET);
        long plen = u32(base + PduFlyweight.PLEN_OFFSET);
        if (type == PduType.C2H_TERM_REQ) {
            return receiveC2HTermReq(base, hlen, plen, available);
        }
        if (type != PduType.CAPSULE_RESP && type != PduType.R2T && type != PduType.C2H_DATA) {
            return protocolError("unexpected PDU " + PduType.name(type) + " from a controller");
        }
        if (hlen != HEADER_24) {
            return protocolError(PduType.name(type) + " with HLEN " + hlen + ", expected 24");
        }
        if (headerDigestLength > 0 && (flags & FLAG_HDGSTF) == 0) {
            return protocolError(PduType.name(type) + " without the negotiated header digest");
        }
        int headerEnd = HEADER_24 + headerDigestLength;
        if (available < headerEnd) {
            return false;
        }
        if (headerDigestLength > 0) {
            int expected = group.crc.compute(receiveBuffer, base, HEADER_24);
            if (receiveBuffer.getInt(base + HEADER_24) != expected) {
                return protocolError(PduType.name(type) + " header digest mismatch");
            }
        }
        switch (type) {
            case PduType.CAPSULE_RESP:
                if (plen != headerEnd) {
                    return protocolError("CapsuleResp with PLEN " + plen + ", expected " + headerEnd);
                }
                readIndex = base + headerEnd;
                return receiveCapsuleResp(base);
            case PduType.R2T:
                if (plen != headerEnd) {
                    return protocolError("R2T with PLEN " + plen + ", expected " + headerEnd);
                }
                readIndex = base + headerEnd;
                return receiveR2T(base);
            default:
                return receiveC2HDataHeader(base, flags, pdo, plen, headerEnd);
        }
    }

    private boolean receiveCapsuleResp(int base) {
        receivedCqe.wrap(receiveBuffer, base + CapsuleRespPdu.CQE_OFFSET);
        int cid = receivedCqe.commandId();
        TcpHostCommand command = slots.outstanding(cid);
        if (command == null) {
            return protocolError("CapsuleResp for CID " + cid + ", which is not outstanding");
        }
        if (command.inSendQueue) {
            // The controller answered before all our PDUs of the command went out (an early error): keep the CQE
            // and complete once the slot leaves the send queue, which still references it.
            ByteBuffer target = command.deferredCqeBuffer;
            for (int i = 0; i < CompletionQueueEntry.LENGTH; i += 8) {
                target.putLong(i, receiveBuffer.getLong(base + CapsuleRespPdu.CQE_OFFSET + i));
            }
            command.completionDeferred = true;
            command.r2tRemaining = 0;
            return true;
        }
        slots.complete(command, receivedCqe);
        return true;
    }

    private boolean receiveR2T(int base) {
        int cid = u16(base + R2TPdu.CCCID_OFFSET);
        int ttag = u16(base + R2TPdu.TTAG_OFFSET);
        long r2to = u32(base + R2TPdu.R2TO_OFFSET);
        long r2tl = u32(base + R2TPdu.R2TL_OFFSET);
        TcpHostCommand command = slots.outstanding(cid);
        if (command == null || !command.hostToController || command.inCapsule) {
            return protocolError("R2T for CID " + cid + ", which is no outstanding write waiting for R2T");
        }
        if (command.inSendQueue || command.state != TcpHostCommand.IN_FLIGHT) {
            return protocolError("R2T for CID " + cid + " while an earlier transfer is still being sent (MAXR2T 0)");
        }
        if (r2to != command.h2cSent || r2tl == 0 || r2to + r2tl > command.dataLength) {
            return protocolError("R2T for CID " + cid + " with R2TO " + r2to + " R2TL " + r2tl + ": "
                + command.h2cSent + " of " + command.dataLength + " bytes sent so far");
        }
        command.ttag = ttag;
        command.r2tRemaining = (int) r2tl;
        command.sendKind = TcpHostCommand.SEND_H2C;
        armNextH2CData(command);
        enqueueSend(command);
        return true;
    }

    private boolean receiveC2HDataHeader(int base, int flags, int pdo, long plen, int headerEnd) {
        int cid = u16(base + C2HDataPdu.CCCID_OFFSET);
        long datao = u32(base + C2HDataPdu.DATAO_OFFSET);
        long datal = u32(base + C2HDataPdu.DATAL_OFFSET);
        if ((flags & ~(FLAG_HDGSTF | FLAG_DDGSTF | FLAG_LAST_PDU | FLAG_SUCCESS)) != 0) {
            return protocolError(String.format("C2HData with undefined flags 0x%02x", flags));
        }
        if (dataDigestLength > 0 && (flags & FLAG_DDGSTF) == 0) {
            return protocolError("C2HData without the negotiated data digest");
        }
        if ((flags & FLAG_SUCCESS) != 0 && (flags & FLAG_LAST_PDU) == 0) {
            return protocolError("C2HData with SUCCESS but not LAST_PDU");
        }
        // We sent HPDA 0: data may start at any dword after the header.
        if (pdo < headerEnd || (pdo & 3) != 0 || plen != pdo + datal + dataDigestLength) {
            return protocolError("C2HData with PDO " + pdo + ", PLEN " + plen + " and DATAL " + datal);
        }
        if (writeIndex - readIndex < pdo) {
            return false;
        }
        TcpHostCommand command = slots.outstanding(cid);
        if (command == null || command.hostToController || command.state != TcpHostCommand.IN_FLIGHT) {
            return protocolError("C2HData for CID " + cid + ", which is no outstanding read");
        }
        if (datal == 0 || datao != command.c2hReceived || datao + datal > command.dataLength) {
            return protocolError("C2HData for CID " + cid + " with DATAO " + datao + " DATAL " + datal + ": "
                + command.c2hReceived + " of " + command.dataLength + " bytes received so far");
        }
        readIndex = base + pdo;
        payloadCommand = command;
        payloadStart = command.dataOffset + (int) datao;
        payloadPosition = payloadStart;
        payloadEnd = payloadStart + (int) datal;
        payloadSuccess = (flags & FLAG_SUCCESS) != 0;
        receiveState = RECV_PAYLOAD;
        return true;
    }

    private boolean receivePayload() {
        int remaining = payloadEnd - payloadPosition;
        if (remaining > 0) {
            int available = writeIndex - readIndex;
            if (available == 0) {
                return false;
            }
            int n = Math.min(available, remaining);
            ByteBuffer destination = payloadCommand.data;
            destination.limit(destination.capacity()); // absolute puts are checked against the limit
            destination.put(payloadPosition, receiveBuffer, readIndex, n);
            readIndex += n;
            payloadPosition += n;
            if (n < remaining) {
                return false;
            }
        }
        if (dataDigestLength > 0) {
            receiveState = RECV_DATA_DIGEST;
            return true;
        }
        return finishPayload();
    }

    private boolean receiveDataDigest() {
        if (writeIndex - readIndex < PduFlyweight.DIGEST_LENGTH) {
            return false;
        }
        int received = receiveBuffer.getInt(readIndex);
        readIndex += PduFlyweight.DIGEST_LENGTH;
        int expected = group.crc.compute(payloadCommand.data, payloadStart, payloadEnd - payloadStart);
        if (received != expected) {
            return protocolError(String.format("C2HData data digest mismatch for CID %d (received 0x%08x, "
                + "computed 0x%08x)", payloadCommand.cid, received, expected));
        }
        return finishPayload();
    }

    private boolean finishPayload() {
        TcpHostCommand command = payloadCommand;
        command.c2hReceived += payloadEnd - payloadStart;
        payloadCommand = null;
        receiveState = RECV_HEADER;
        if (payloadSuccess) {
            // SUCCESS on the last C2HData stands for a CapsuleResp with status 0 (SQ flow control disabled).
            slots.complete(command,
                slots.syntheticCqe(command.cid).sqHead(CompletionQueueEntry.SQHD_FLOW_CONTROL_DISABLED));
        }
        return true;
    }

    private boolean receiveC2HTermReq(int base, int hlen, long plen, int available) {
        if (hlen != TermReqPdu.HEADER_LENGTH || plen < TermReqPdu.HEADER_LENGTH || plen > TermReqPdu.MAX_PDU_LENGTH) {
            closeNow("controller " + peer() + " sent a malformed C2HTermReq (HLEN " + hlen + ", PLEN " + plen + ")");
            return false;
        }
        if (available < TermReqPdu.HEADER_LENGTH) {
            return false;
        }
        int fes = u16(base + TermReqPdu.FES_OFFSET);
        long fei = u32(base + TermReqPdu.FEI_OFFSET);
        closeNow("controller " + peer() + " terminated the connection with C2HTermReq: " + TermReqPdu.fesName(fes)
            + " (FES " + fes + ", FEI " + fei + ")");
        return false;
    }

    private boolean protocolError(String what) {
        LOG.warn("NVMe/TCP host {}: protocol error: {}; closing the queue", peer(), what);
        closeNow("protocol error from " + peer() + ": " + what);
        return false;
    }

    // ---- completion and close ----------------------------------------------------------------------------------

    @Override
    protected void stopIo(String reason) {
        if (key != null) {
            key.cancel();
        }
        try {
            stream.close();
        } catch (IOException e) {
            LOG.debug("NVMe/TCP host {}: error closing the socket", peer(), e);
        }
        TcpHostCommand job = sendHead;
        sendHead = null;
        sendTail = null;
        while (job != null) {
            TcpHostCommand next = job.nextSend;
            job.nextSend = null;
            job.inSendQueue = false;
            job = next;
        }
        payloadCommand = null;
        group.unregister(this);
    }
}
