package io.nvmeof4j.tcp.host;

import io.nvmeof4j.protocol.command.CompletionQueueEntry;
import io.nvmeof4j.protocol.command.SubmissionQueueEntry;
import io.nvmeof4j.protocol.spi.TransportAddress;
import io.nvmeof4j.protocol.spi.host.AbstractHostQueue;
import io.nvmeof4j.protocol.spi.host.HostCommandCallback;
import io.nvmeof4j.protocol.spi.host.HostPollGroup;
import io.nvmeof4j.protocol.spi.host.HostQueueListener;
import io.nvmeof4j.protocol.spi.host.HostQueueOptions;
import io.nvmeof4j.protocol.spi.host.HostStatus;
import io.nvmeof4j.protocol.tcp.C2HDataPdu;
import io.nvmeof4j.protocol.tcp.CapsuleRespPdu;
import io.nvmeof4j.protocol.tcp.Crc32cDigest;
import io.nvmeof4j.protocol.tcp.PduFlyweight;
import io.nvmeof4j.protocol.tcp.PduType;
import io.nvmeof4j.protocol.tcp.R2TPdu;
import io.nvmeof4j.protocol.tcp.TermReqPdu;
import io.nvmeof4j.tcp.SocketSelector;
import io.nvmeof4j.tcp.pdu.PduReceiver;
import io.nvmeof4j.tcp.pdu.PduSendQueue;
import io.nvmeof4j.tcp.tls.TcpStream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.SelectionKey;
import java.nio.channels.SocketChannel;

import static io.nvmeof4j.protocol.tcp.PduFlyweight.FLAG_DDGSTF;
import static io.nvmeof4j.protocol.tcp.PduFlyweight.FLAG_HDGSTF;
import static io.nvmeof4j.protocol.tcp.PduFlyweight.FLAG_LAST_PDU;
import static io.nvmeof4j.protocol.tcp.PduFlyweight.FLAG_SUCCESS;

/**
 * One NVMe/TCP connection in the host role: one NVMe queue (NVMe/TCP Transport Specification 1.0; wire
 * reference 5). Everything runs on the owning {@link TcpHostPollGroup}'s thread. Framing and sending are the PDU
 * engine's ({@link PduReceiver}, {@link PduSendQueue}, shared with the controller role); this class is what a host
 * makes of the PDUs.
 *
 * <h2>Send</h2>
 * {@link #submit} arms the command's CapsuleCmd in its slot ({@link TcpHostCommand}) and queues the slot's job; an
 * R2T queues it again for its H2CData PDUs.
 *
 * <h2>Receive</h2>
 * Every controller PDU must carry HLEN 24 and the negotiated digest flags (the Linux host's rules). C2HData payloads
 * go into the caller's buffer. A CapsuleResp (or a last C2HData with SUCCESS) completes the command: the slot is freed
 * first, then its callback runs. A C2HTermReq, a protocol error, EOF or an I/O error closes the queue: outstanding
 * commands complete with {@link HostStatus#HOST_PATH_ERROR}, then the listener hears the reason.
 */
final class TcpHostQueue extends AbstractHostQueue<TcpHostCommand>
    implements PduReceiver.Handler, PduSendQueue.Owner, SocketSelector.ReadableSocket {
    private static final Logger LOG = LoggerFactory.getLogger(TcpHostQueue.class);

    private static final int RECEIVE_BUFFER_SIZE = 64 * 1024;
    private static final int HEADER_24 = 24;

    final TcpHostPollGroup group;
    final SocketChannel channel;
    /** The socket, or TLS records over it. */
    private final TcpStream stream;
    private final Runnable readAgain = this::onReadable;
    final int headerDigestLength;
    final int dataDigestLength;
    private final int maxH2CDataSize;
    SelectionKey key;
    boolean inFlushList;

    private final PduReceiver receiver;
    private final PduSendQueue sends = new PduSendQueue(this);
    /** The read whose C2HData payload is being received, and whether that PDU carried SUCCESS. */
    private TcpHostCommand payloadCommand;
    private boolean payloadSuccess;
    private final CompletionQueueEntry receivedCqe = new CompletionQueueEntry();

    TcpHostQueue(TcpHostPollGroup group, TcpStream stream, TransportAddress address, String peer,
                 HostQueueOptions options, int maxH2CDataSize, HostQueueListener listener) {
        super("NVMe/TCP", address, peer, options.inCapsuleDataSize(), commands(options.depth()), listener);
        this.group = group;
        this.stream = stream;
        this.channel = stream.channel();
        this.headerDigestLength = options.headerDigest() ? PduFlyweight.DIGEST_LENGTH : 0;
        this.dataDigestLength = options.dataDigest() ? PduFlyweight.DIGEST_LENGTH : 0;
        this.maxH2CDataSize = maxH2CDataSize;
        this.receiver = new PduReceiver(this, group.crc, stream, RECEIVE_BUFFER_SIZE);
        receiver.digests(headerDigestLength, dataDigestLength);
        for (int tag = 0; tag < depth(); tag++) {
            slots.at(tag).queue = this;
        }
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

    /** The poll group's digest calculator (poll-group thread). */
    Crc32cDigest crc() {
        return group.crc;
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
        command.cancelR2T();
        command.completionDeferred = false;
        int limit = sqe.isFabrics() ? Math.max(HostQueueOptions.ADMIN_IN_CAPSULE_DATA_SIZE, inCapsuleDataSize())
            : inCapsuleDataSize();
        command.inCapsule = command.hostToController && dataLength > 0 && dataLength <= limit;
        command.pdus.armCapsule(sqe);
        command.state = TcpHostCommand.SENDING_CAPSULE;
        sends.enqueue(command.pdus);
        return command.cid;
    }

    // ---- send --------------------------------------------------------------------------------------------------

    /** Writes queued PDUs (the engine's gathering flush). */
    int flush() {
        if (!isOpen()) {
            return 0;
        }
        return sends.flush(stream, group.iov);
    }

    /** All of the command's PDUs are out. */
    void onSent(TcpHostCommand command) {
        if (command.state == TcpHostCommand.SENDING_CAPSULE) {
            command.state = TcpHostCommand.IN_FLIGHT;
        }
        if (command.completionDeferred) {
            slots.complete(command, command.deferredCqe);
        }
    }

    @Override
    public void requestFlush() {
        if (!inFlushList) {
            group.requestFlush(this);
        }
    }

    @Override
    public void writeInterestChanged() {
        if (key != null && key.isValid()) {
            key.interestOps(SelectionKey.OP_READ | (sends.writeInterest() ? SelectionKey.OP_WRITE : 0));
        }
    }

    @Override
    public void sendFailed(IOException e) {
        closeNow("send to " + peer() + " failed: " + e.getMessage());
    }

    // ---- receive -----------------------------------------------------------------------------------------------

    @Override
    public boolean onReadable() {
        return isOpen() && receiver.onReadable();
    }

    @Override
    public boolean onPduHeader(int type, int flags, int hlen, int pdo, long plen, int available) {
        if (type == PduType.C2H_TERM_REQ) {
            return receiver.receiveTermReq(hlen, plen, available);
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
        if (!receiver.headerDigestMatches(HEADER_24)) {
            return protocolError(PduType.name(type) + " header digest mismatch");
        }
        switch (type) {
            case PduType.CAPSULE_RESP:
                if (plen != headerEnd) {
                    return protocolError("CapsuleResp with PLEN " + plen + ", expected " + headerEnd);
                }
                receiver.consume(headerEnd);
                return receiveCapsuleResp();
            case PduType.R2T:
                if (plen != headerEnd) {
                    return protocolError("R2T with PLEN " + plen + ", expected " + headerEnd);
                }
                receiver.consume(headerEnd);
                return receiveR2T();
            default:
                return receiveC2HDataHeader(flags, pdo, plen, headerEnd, available);
        }
    }

    private boolean receiveCapsuleResp() {
        int cqeAt = receiver.pduStart() + CapsuleRespPdu.CQE_OFFSET;
        receivedCqe.wrap(receiver.buffer(), cqeAt);
        int cid = receivedCqe.commandId();
        TcpHostCommand command = slots.outstanding(cid);
        if (command == null) {
            return protocolError("CapsuleResp for CID " + cid + ", which is not outstanding");
        }
        if (command.pdus.isQueued()) {
            // The controller answered before all our PDUs of the command went out (an early error): keep the CQE
            // and complete once the slot leaves the send queue, which still references it.
            ByteBuffer target = command.deferredCqeBuffer;
            ByteBuffer source = receiver.buffer();
            for (int i = 0; i < CompletionQueueEntry.LENGTH; i += 8) {
                target.putLong(i, source.getLong(cqeAt + i));
            }
            command.completionDeferred = true;
            command.cancelR2T();
            return true;
        }
        slots.complete(command, receivedCqe);
        return true;
    }

    private boolean receiveR2T() {
        int cid = receiver.u16(R2TPdu.CCCID_OFFSET);
        int ttag = receiver.u16(R2TPdu.TTAG_OFFSET);
        long r2to = receiver.u32(R2TPdu.R2TO_OFFSET);
        long r2tl = receiver.u32(R2TPdu.R2TL_OFFSET);
        TcpHostCommand command = slots.outstanding(cid);
        if (command == null || !command.hostToController || command.inCapsule) {
            return protocolError("R2T for CID " + cid + ", which is no outstanding write waiting for R2T");
        }
        if (command.pdus.isQueued() || command.state != TcpHostCommand.IN_FLIGHT) {
            return protocolError("R2T for CID " + cid + " while an earlier transfer is still being sent (MAXR2T 0)");
        }
        if (r2to != command.h2cSent || r2tl == 0 || r2to + r2tl > command.dataLength) {
            return protocolError("R2T for CID " + cid + " with R2TO " + r2to + " R2TL " + r2tl + ": "
                + command.h2cSent + " of " + command.dataLength + " bytes sent so far");
        }
        command.r2t(ttag, (int) r2tl);
        sends.enqueue(command.pdus);
        return true;
    }

    private boolean receiveC2HDataHeader(int flags, int pdo, long plen, int headerEnd, int available) {
        int cid = receiver.u16(C2HDataPdu.CCCID_OFFSET);
        long datao = receiver.u32(C2HDataPdu.DATAO_OFFSET);
        long datal = receiver.u32(C2HDataPdu.DATAL_OFFSET);
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
        if (available < pdo) {
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
        receiver.consume(pdo);
        payloadCommand = command;
        payloadSuccess = (flags & FLAG_SUCCESS) != 0;
        receiver.receivePayload(command.data, command.dataOffset + (int) datao, (int) datal);
        return true;
    }

    @Override
    public void onPayloadReceived(int length) {
        TcpHostCommand command = payloadCommand;
        command.c2hReceived += length;
        payloadCommand = null;
        if (payloadSuccess) {
            // SUCCESS on the last C2HData stands for a CapsuleResp with status 0 (SQ flow control disabled).
            slots.complete(command,
                slots.syntheticCqe(command.cid).sqHead(CompletionQueueEntry.SQHD_FLOW_CONTROL_DISABLED));
        }
    }

    @Override
    public void onDataDigestError(int received, int computed) {
        protocolError(String.format("C2HData data digest mismatch for CID %d (received 0x%08x, computed 0x%08x)",
            payloadCommand.cid, received, computed));
    }

    @Override
    public void onTermReq(int fes, long fei) {
        closeNow("controller " + peer() + " terminated the connection with C2HTermReq: " + TermReqPdu.fesName(fes)
            + " (FES " + fes + ", FEI " + fei + ")");
    }

    @Override
    public void onMalformedTermReq(int hlen, long plen) {
        closeNow("controller " + peer() + " sent a malformed C2HTermReq (HLEN " + hlen + ", PLEN " + plen + ")");
    }

    @Override
    public void onStreamEnded(IOException error) {
        closeNow(error == null ? "controller " + peer() + " closed the connection"
            : "receive from " + peer() + " failed: " + error.getMessage());
    }

    @Override
    public void readLater() {
        group.execute(readAgain);
    }

    private boolean protocolError(String what) {
        LOG.warn("NVMe/TCP host {}: protocol error: {}; closing the queue", peer(), what);
        closeNow("protocol error from " + peer() + ": " + what);
        return false;
    }

    // ---- close -------------------------------------------------------------------------------------------------

    @Override
    protected void stopIo(String reason) {
        receiver.stop();
        if (key != null) {
            key.cancel();
        }
        try {
            stream.close();
        } catch (IOException e) {
            LOG.debug("NVMe/TCP host {}: error closing the socket", peer(), e);
        }
        sends.close();
        payloadCommand = null;
        group.unregister(this);
    }
}
