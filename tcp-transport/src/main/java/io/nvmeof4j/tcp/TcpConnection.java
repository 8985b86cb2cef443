package io.nvmeof4j.tcp;

import io.nvmeof4j.protocol.command.CompletionQueueEntry;
import io.nvmeof4j.protocol.command.DataDirection;
import io.nvmeof4j.protocol.command.NvmeStatus;
import io.nvmeof4j.protocol.command.SglDescriptor;
import io.nvmeof4j.protocol.command.SubmissionQueueEntry;
import io.nvmeof4j.protocol.log.RateLimitedLog;
import io.nvmeof4j.protocol.spi.ConnectRefusedException;
import io.nvmeof4j.protocol.spi.PendingConnections;
import io.nvmeof4j.protocol.spi.PortOptions;
import io.nvmeof4j.protocol.spi.QueueHandler;
import io.nvmeof4j.protocol.spi.TransportAddress;
import io.nvmeof4j.protocol.spi.TransportType;
import io.nvmeof4j.protocol.spi.transport.AbstractTransportQueue;
import io.nvmeof4j.protocol.tcp.CapsuleCmdPdu;
import io.nvmeof4j.protocol.tcp.ICReqPdu;
import io.nvmeof4j.protocol.tcp.ICRespPdu;
import io.nvmeof4j.protocol.tcp.PduFlyweight;
import io.nvmeof4j.protocol.tcp.PduType;
import io.nvmeof4j.protocol.tcp.TermReqPdu;
import io.nvmeof4j.tcp.pdu.ControlPduJob;
import io.nvmeof4j.tcp.pdu.PduReceiver;
import io.nvmeof4j.tcp.pdu.PduSendQueue;
import io.nvmeof4j.tcp.tls.TcpStream;
import io.nvmeof4j.tcp.tls.TlsStream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.SocketChannel;
import java.util.concurrent.TimeUnit;

import static io.nvmeof4j.protocol.tcp.TermReqPdu.FES_PDU_SEQUENCE_ERROR;

/**
 * One NVMe/TCP connection in the controller role: one NVMe queue (NVMe/TCP Transport Specification 1.0;
 * wire reference 5). Owned by one {@link TcpPollGroup} and touched only by its reactor thread, except for
 * {@link #disconnect} and {@link #execute}, which hand work over to it (the outstanding-command count and the
 * disconnect are the shared {@link AbstractTransportQueue}'s). Framing and sending are the PDU engine's
 * ({@link PduReceiver}, {@link PduSendQueue}, shared with the host role); this class is what a controller makes of
 * the PDUs.
 *
 * <h2>Receive</h2>
 * {@link ControllerPduHandler} checks what arrives; a capsule takes a slot here ({@link #onCapsule}). In-capsule
 * data goes into the slot's own buffer, H2CData into the command's pool buffer. Nothing that arrives on the stream
 * ever waits for the pool, so the stream never stops: an R2T or C2H command that finds the pool dry waits in the poll
 * group's FIFO, and its R2T goes out once it has a buffer. A bad header ends the connection with a C2HTermReq
 * quoting it ({@link #terminate}).
 *
 * <h2>Send</h2>
 * Response capsules, R2Ts, C2HData with their responses ({@link TcpRequest}), ICResp and TermReq
 * ({@link ControlPduJob}) go through the engine's send queue, flushed once per reactor round.
 */
final class TcpConnection extends AbstractTransportQueue implements SocketSelector.ReadableSocket {
    private static final Logger LOG = LoggerFactory.getLogger(TcpConnection.class);
    /**
     * What one peer can make us say over and over (protocol errors, TermReqs, closes of queues that never
     * connected): one line per peer address a second.
     */
    static final RateLimitedLog PEER_LOG = new RateLimitedLog(LOG);

    // Lifecycle.
    /** A TLS port: the first bytes tell a TLS ClientHello from an ICReq, then the handshake runs. */
    private static final int AWAITING_TLS = -1;
    private static final int AWAITING_ICREQ = 0;
    private static final int LIVE = 1;
    private static final int TERMINATING = 2;
    private static final int CLOSED = 3;

    /**
     * Receive buffer before ICReq: the 128-byte ICReq and room to spare. The host sends nothing else before it has
     * ICResp, so more bytes than this before ICReq are a protocol error found in the first header anyway.
     */
    private static final int PRE_ICREQ_BUFFER_SIZE = 256;
    /** How long a C2HTermReq may take to go out before the connection is closed anyway. */
    static final long TERMINATION_LINGER_NANOS = TimeUnit.SECONDS.toNanos(1);

    final TcpPollGroup group;
    final TcpListener listener;
    /** The socket, or TLS records over it once the handshake is done. */
    private TcpStream stream;
    private final TlsStart tlsStart;
    private final TransportAddress localAddress;
    private final String peer;
    /** The peer's address without port: the key of its rate-limited log lines. */
    final Object peerKey;
    /** This connection's place among the port's pending ones, released at Connect or close. */
    private final PendingConnections.Entry pending;
    private final PortOptions portOptions;
    private final int maxH2CDataSize;
    final int c2hDataPduSize;
    /** Largest data transfer of one command: the port's MDTS, bounded by the pool's largest buffer. */
    private final int maxTransferSize;
    /** Full receive buffer size, from ICReq on. */
    private final int receiveBufferSize;
    SelectionKey key;
    private QueueHandler handler;
    private int lifecycle;

    // Negotiated by ICReq (the engine's receiver has them too; TcpRequest reads these when it arms PDUs).
    int headerDigestLength;
    int dataDigestLength;
    /** PDO of the C2HData PDUs we send: header (+ digest) rounded up to the host's HPDA. */
    int c2hDataOffset = PduType.headerLength(PduType.C2H_DATA);

    // What Connect established.
    private volatile int queueId = -1;
    /**
     * {@link #inCapsuleDataSize()}: a field set by Connect rather than a branch on the queue ID, so that the admin
     * queue's capsules (a Keep Alive after an idle stretch, issue 17) do not meet a branch the I/O queues' compiled
     * capsule path has never taken, and deoptimize it.
     */
    private volatile int inCapsuleDataSize = PortOptions.ADMIN_IN_CAPSULE_DATA_SIZE;
    private int sqSize;
    private boolean sqFlowControlDisabled;
    private int sqHead;
    /** Capsules received so far: each command's {@link TcpRequest#sequence()}. */
    private long capsulesReceived;

    // Receive.
    /**
     * Small until ICReq arrives (a socket that never sends one, the bulk of an idle-socket flood, then holds
     * {@link #PRE_ICREQ_BUFFER_SIZE} bytes instead of the full buffer); the full size from ICReq on.
     */
    private final PduReceiver receiver;
    /** What the controller makes of received PDUs, and its hooks into the send queue. */
    private final ControllerPduHandler pdus;

    // Command slots.
    final TcpCommandSlots slots;
    private int commandLimit = TcpCommandSlots.INITIAL_SLOTS;
    /** Before Connect: the command whose data is in the queue's one in-capsule buffer, or null. */
    private TcpRequest preConnectDataOwner;

    // Send.
    private final PduSendQueue sends;
    private boolean readInterest = true;
    boolean inFlushList;
    private final ControlPduJob icRespJob;
    private final ControlPduJob termReqJob;
    private String terminationReason;
    long terminationDeadlineNanos;

    TcpConnection(TcpPollGroup group, TcpListener listener, SocketChannel channel, String peer,
                  PendingConnections.Entry pending) {
        this.group = group;
        this.pending = pending;
        this.peerKey = pending.peer();
        this.listener = listener;
        this.localAddress = connectedAddress(channel, listener.address());
        this.stream = TcpStream.plain(channel);
        this.tlsStart = new TlsStart(channel, listener);
        this.peer = peer;
        this.portOptions = listener.options();
        this.lifecycle = portOptions.tls() ? AWAITING_TLS : AWAITING_ICREQ;
        TcpTransportOptions tcpOptions = group.options;
        this.maxH2CDataSize = tcpOptions.maxH2CDataSize();
        this.c2hDataPduSize = tcpOptions.c2hDataPduSize();
        this.maxTransferSize = Math.min(portOptions.maxDataTransferSize(), group.pool.maxBufferSize());
        this.receiveBufferSize = tcpOptions.receiveBufferSize();
        this.pdus = new ControllerPduHandler(this, maxH2CDataSize, maxTransferSize);
        this.sends = new PduSendQueue(pdus);
        this.receiver = new PduReceiver(pdus, group.crc, stream, PRE_ICREQ_BUFFER_SIZE);
        pdus.receiver = receiver;
        this.icRespJob = new ControlPduJob(ICRespPdu.PDU_LENGTH, null);
        this.termReqJob = new ControlPduJob(TermReqPdu.MAX_PDU_LENGTH, this::onTermReqSent);
        this.slots = new TcpCommandSlots(this, group.transport.queueBufferBudget());
    }

    // ---- TransportQueue ----------------------------------------------------------------------------------------

    @Override
    public TransportType transportType() {
        return TransportType.TCP;
    }

    @Override
    public TransportAddress localAddress() {
        return localAddress;
    }

    /** The address the host reached (a wildcard listener's real address); the listen address if unknown. */
    private static TransportAddress connectedAddress(SocketChannel channel, TransportAddress listenAddress) {
        try {
            java.net.InetSocketAddress local = (java.net.InetSocketAddress) channel.getLocalAddress();
            if (local == null) {
                return listenAddress;
            }
            String traddr = local.getAddress().getHostAddress();
            int scope = traddr.indexOf('%');
            return TransportAddress.tcp(scope < 0 ? traddr : traddr.substring(0, scope), local.getPort());
        } catch (IOException e) {
            return listenAddress;
        }
    }

    @Override
    public String peer() {
        return peer;
    }

    @Override
    public void connected(int queueId, int sqSize, boolean sqFlowControlDisabled) {
        TcpCommandSlots.checkQueueShape(queueId, sqSize);
        if (!slots.installed(queueId, sqSize)) {
            // The slots and their buffers come from install, charged to the budget; a Connect that skipped it
            // would serve a queue whose memory nobody counted.
            throw new IllegalStateException("NVMe/TCP " + peer + ": connected(" + queueId + ", " + sqSize
                + ") without install for that queue (installed: " + slots.describeInstalled() + ")");
        }
        this.queueId = queueId;
        this.inCapsuleDataSize = inCapsuleDataSize(queueId);
        this.sqSize = sqSize;
        this.sqFlowControlDisabled = sqFlowControlDisabled;
        this.commandLimit = sqSize;
        this.sqHead %= sqSize;
        pending.release();
        LOG.debug("NVMe/TCP {}: queue {} connected, {} entries, SQ flow control {}", peer, queueId, sqSize,
            sqFlowControlDisabled ? "disabled" : "enabled");
    }

    /** Sets the queue's slots and buffers up for its Connect, charged to the budget: {@link TcpCommandSlots#install}. */
    @Override
    public void install(int queueId, int sqSize) throws ConnectRefusedException {
        TcpCommandSlots.checkQueueShape(queueId, sqSize);
        slots.install(queueId, sqSize, inCapsuleDataSize(queueId), receiveBufferSize);
    }

    /** The admin queue's (and Connect's: its data is always in-capsule on TCP) 8 KiB, else the port's setting. */
    private int inCapsuleDataSize(int queueId) {
        return queueId > 0 ? portOptions.inlineDataSize() : PortOptions.ADMIN_IN_CAPSULE_DATA_SIZE;
    }

    @Override
    public int queueId() {
        return queueId;
    }

    @Override
    public int inCapsuleDataSize() {
        return inCapsuleDataSize;
    }

    @Override
    public void execute(Runnable task) {
        group.execute(task);
    }

    @Override
    public String secureChannelHostNqn() {
        return stream instanceof TlsStream tls && tls.identity() != null ? tls.identity().hostNqn() : null;
    }

    @Override
    public String secureChannelPskIdentity() {
        return stream instanceof TlsStream tls && tls.identity() != null ? tls.identity().toString() : null;
    }

    /** "plain" or "TLS 1.3 (suite)". */
    public String security() {
        return stream.security();
    }

    @Override
    public String toString() {
        return "TcpConnection[" + peer + " qid=" + queueId + "]";
    }

    // ---- receive -----------------------------------------------------------------------------------------------

    /**
     * The socket is readable, or may be (a direct read): the TLS handshake first on a TLS port, then PDUs. Returns
     * whether PDU bytes came (the handshake's are not counted: a peer that stalls it must not keep the reactor
     * spinning).
     */
    @Override
    public boolean onReadable() {
        if (lifecycle == AWAITING_TLS && !advanceTls()) {
            return false;
        }
        return receiver.onReadable();
    }

    /** Whether ICReq was answered (PDUs other than ICReq may follow). */
    boolean initialized() {
        return lifecycle != AWAITING_ICREQ;
    }

    /**
     * A valid ICReq asked for the {@code digest} bits (granted as asked) and, by its HPDA, C2HData at
     * {@code c2hDataOffset}: answers with ICResp and opens the queue handler; false when it closed the connection.
     */
    boolean initialize(int digest, int c2hDataOffset) {
        headerDigestLength = (digest & ICReqPdu.DIGEST_HEADER) != 0 ? PduFlyweight.DIGEST_LENGTH : 0;
        dataDigestLength = (digest & ICReqPdu.DIGEST_DATA) != 0 ? PduFlyweight.DIGEST_LENGTH : 0;
        this.c2hDataOffset = c2hDataOffset;
        receiver.digests(headerDigestLength, dataDigestLength);
        icRespJob.armICResp(digest, maxH2CDataSize);
        sends.enqueue(icRespJob);
        lifecycle = LIVE;
        try {
            receiver.resize(receiveBufferSize); // from the small pre-ICReq buffer to the full one, once
            slots.providePreConnectBuffer();
        } catch (OutOfMemoryError e) {
            // Direct memory ran out (thrown by the allocation, not the heap): this connection goes, the reactor stays.
            close("no direct memory for the connection's buffers after ICReq: " + e.getMessage());
            return false;
        }
        try {
            handler = listener.handlers().open(this);
        } catch (RuntimeException e) {
            LOG.warn("NVMe/TCP {}: queue handler factory failed", peer, e);
            close("queue handler factory failed: " + e);
            return false;
        }
        if (handler == null) {
            close("queue handler factory refused the queue");
            return false;
        }
        return true;
    }

    /**
     * A CapsuleCmd whose header checked out: its command takes a slot, its data is mapped and it moves on
     * ({@link #advance}). The SQE is at the PDU's {@link CapsuleCmdPdu#SQE_OFFSET}; {@code dataStart} is PDO (or
     * the header's end without data).
     */
    boolean onCapsule(int dataStart, int inCapsuleBytes) {
        TcpRequest request = slots.inUse() >= commandLimit ? null : slots.take();
        if (request == null) {
            terminate(FES_PDU_SEQUENCE_ERROR, 0, PduType.CAPSULE_CMD,
                "more than " + commandLimit + " commands outstanding (the queue size)");
            return false;
        }
        commandTaken();
        request.begin(receiver.buffer(), receiver.pduStart() + CapsuleCmdPdu.SQE_OFFSET, group.roundNanos(),
            ++capsulesReceived);
        receiver.consume(dataStart);
        if (++sqHead >= commandLimit) {
            sqHead = 0;
        }
        request.completionStatus = mapData(request, inCapsuleBytes);
        if (request.completionStatus != NvmeStatus.SUCCESS && inCapsuleBytes > 0) {
            // The command is refused but its data is on the wire: skip it (and its digest) and carry on.
            receiver.discard((long) inCapsuleBytes + dataDigestLength);
        }
        advance(request);
        return true;
    }

    /**
     * Decides how the command's data moves from its SGL (the shared
     * {@link io.nvmeof4j.protocol.spi.transport.DataMapping} rules) and returns SUCCESS, or the status to fail it with
     * before it reaches the handler.
     */
    private int mapData(TcpRequest request, int inCapsuleBytes) {
        // The slot's own buffer bounds in-capsule data too: a host that sends I/O before our Connect response may find
        // the queue's size already raised by a Connect completed on another thread but the buffers not yet.
        ByteBuffer own = request.inCapsuleBuffer;
        int inCapsuleLimit = own == null ? -1 : Math.min(inCapsuleDataSize(), own.capacity());
        io.nvmeof4j.protocol.spi.transport.DataMapping mapping = group.dataMapping;
        int status = mapping.map(request.command(), inCapsuleBytes, inCapsuleLimit, maxTransferSize);
        if (status != NvmeStatus.SUCCESS) {
            return status;
        }
        if (mapping.transfer() == TcpRequest.TRANSFER_IN_CAPSULE && queueId < 0) {
            if (preConnectDataOwner != null) {
                // Connect is a queue's first command and a host waits for its response before sending more;
                // the queue's one pre-Connect buffer holds its data, so a second command with data is refused
                // (and its data skipped).
                return NvmeStatus.COMMAND_SEQUENCE_ERROR;
            }
            preConnectDataOwner = request;
        }
        request.transfer = mapping.transfer();
        request.dataLength = mapping.length();
        return NvmeStatus.SUCCESS;
    }

    /** The wait queue gives a parked R2T or C2H command its pool buffer. */
    void onBufferGranted(TcpRequest request, ByteBuffer buffer) {
        request.data = buffer;
        request.dataPooled = true;
        advance(request);
    }

    /** The stream ended: the host closed it, a read failed, or (terminating) the host closed after our TermReq. */
    void onStreamEnded(IOException error) {
        close(lifecycle == TERMINATING ? terminationReason
            : error == null ? "host closed the connection" : "receive failed: " + error.getMessage());
    }

    // ---- a command's life -------------------------------------------------------------------------------------

    /**
     * The one step function of a command's life (SPDK's {@code nvmf_tcp_req_process}): moves {@code request}
     * through as many {@link TcpRequest.State states} as it can now, and returns where it must wait for something
     * else: a pool buffer, its in-capsule data or H2CData, the command layer, its PDUs on the socket. Whatever ends
     * a wait calls it again ({@link #onBufferGranted}, {@link ControllerPduHandler#onPayloadReceived},
     * {@link TcpRequest#complete}, the end of its {@link TcpRequest.Send}). Reactor thread.
     */
    void advance(TcpRequest request) {
        TcpRequest.State before;
        do {
            before = request.state();
            switch (before) {
                case NEW:
                    if (request.completionStatus != NvmeStatus.SUCCESS) {
                        request.state(TcpRequest.State.EXECUTED);
                    } else if (request.transfer == TcpRequest.TRANSFER_IN_CAPSULE) {
                        // The slot's own buffer, never the pool's: in-capsule data that waited for a pool buffer
                        // would stop this stream, and with it the H2CData that R2T writes holding every pool buffer
                        // wait for.
                        request.data = request.inCapsuleBuffer;
                        request.state(TcpRequest.State.RECEIVING);
                        pdus.receiveInCapsuleData(request, request.dataLength); // TCP: SGL length = data in capsule
                    } else {
                        request.state(request.transfer == TcpRequest.TRANSFER_NONE
                            ? TcpRequest.State.READY_TO_EXECUTE : TcpRequest.State.NEED_BUFFER);
                    }
                    break;
                case NEED_BUFFER:
                    if (request.data == null) {
                        ByteBuffer pooled = group.acquireInOrder(request.dataLength);
                        if (pooled == null) {
                            group.park(request); // the wait queue hands it a buffer and calls this again
                            return;
                        }
                        request.data = pooled;
                        request.dataPooled = true;
                    }
                    if (request.transfer == TcpRequest.TRANSFER_R2T) {
                        request.state(TcpRequest.State.RECEIVING);
                        request.send.armR2T(headerDigestLength);
                        sends.enqueue(request.send);
                    } else {
                        request.state(TcpRequest.State.READY_TO_EXECUTE);
                    }
                    break;
                case READY_TO_EXECUTE:
                    // The completion moves it on from here: at once through complete() when the handler completes
                    // on this thread, else through the poll group's inbox. Looking at the state again here would
                    // race a completion made on another thread (its status may not be written yet, and the inbox
                    // would move it a second time).
                    dispatch(request);
                    return;
                case EXECUTED:
                    if (lifecycle >= TERMINATING) {
                        recycle(request); // completes into nothing; its buffer goes back to the pool
                        return;
                    }
                    sendResponse(request);
                    break;
                case COMPLETED:
                    responseSent(request);
                    recycle(request);
                    return;
                default:
                    // FREE, RECEIVING, EXECUTING, SENDING: waiting for something else
                    return;
            }
        } while (request.state() != before);
    }

    private void dispatch(TcpRequest request) {
        ByteBuffer data = request.data;
        if (data != null) {
            data.clear();
            data.limit(request.dataLength);
        }
        request.state(TcpRequest.State.EXECUTING);
        request.reachedHandler = true;
        try {
            handler.onCommand(request);
        } catch (RuntimeException e) {
            LOG.error("NVMe/TCP {}: queue handler failed on CID {}", peer, request.commandId, e);
            if (request.abandon()) {
                recycle(request); // the handler never took the command: reclaim its slot and buffer
            }
            disconnect("queue handler failed: " + e);
        }
    }

    /** Queues the command's data (a successful read) and its response: the command is SENDING. */
    private void sendResponse(TcpRequest request) {
        int status = request.completionStatus;
        int sqHeadField = sqFlowControlDisabled ? CompletionQueueEntry.SQHD_FLOW_CONTROL_DISABLED : sqHead;
        request.fillCompletion(status, Math.max(queueId, 0), sqHeadField);
        request.state(TcpRequest.State.SENDING);
        if (NvmeStatus.isSuccess(status) && request.transfer == TcpRequest.TRANSFER_C2H) {
            // With SQ flow control disabled the last C2HData can carry SUCCESS instead of a response capsule
            // (wire reference 5). Only when DW0/DW1 are zero: the flag cannot carry them.
            CompletionQueueEntry cqe = request.response();
            boolean successFlag = sqFlowControlDisabled && cqe.result64() == 0L;
            request.send.armReadData(successFlag);
        } else {
            releaseData(request);
            request.send.armResponse(headerDigestLength);
        }
        sends.enqueue(request.send);
    }

    /** The request's response is on the socket: tell the handler that took the command (metrics end here). */
    private void responseSent(TcpRequest request) {
        QueueHandler h = handler;
        if (h != null && request.reachedHandler) {
            try {
                h.onResponseSent(request, group.sentNanos());
            } catch (RuntimeException e) {
                LOG.warn("NVMe/TCP {}: queue handler failed after sending CID {}", peer, request.commandId, e);
            }
        }
    }

    /** The slot is done: its pool buffer back to the pool, the slot back on the free list. */
    void recycle(TcpRequest request) {
        releaseData(request);
        if (slots.free(request, lifecycle != CLOSED)) {
            commandDone();
        }
    }

    /** The request's data buffer goes: back to the pool if it is the pool's; lent memory is just let go. */
    void releaseData(TcpRequest request) {
        ByteBuffer data = request.data;
        request.data = null;
        request.dataLent = false;
        if (request == preConnectDataOwner) {
            preConnectDataOwner = null;
        }
        if (request.dataPooled) {
            request.dataPooled = false;
            group.release(data);
        }
    }

    boolean isGone() {
        return lifecycle >= TERMINATING;
    }

    /** A TLS port's start ({@link TlsStart}); true once PDUs may follow. */
    private boolean advanceTls() {
        try {
            TcpStream started = tlsStart.advance(receiver, stream);
            sends.writeInterest(tlsStart.hasPendingOutput());
            if (started == null) {
                return false;
            }
            if (started != stream) {
                stream = started;
                receiver.stream(stream);
                LOG.info("NVMe/TCP {}: {} with PSK identity {}", peer, stream.security(),
                    ((TlsStream) stream).identity());
            }
            lifecycle = AWAITING_ICREQ;
            return true;
        } catch (IOException e) {
            close(e.getMessage() != null ? e.getMessage() : e.toString());
            return false;
        }
    }

    // ---- send --------------------------------------------------------------------------------------------------

    /** Writes queued PDUs (the engine's gathering flush); during a TLS handshake, its records. */
    int flush() {
        if (lifecycle == CLOSED) {
            return 0;
        }
        if (lifecycle == AWAITING_TLS) {
            advanceTls(); // OP_WRITE during the handshake: its records go out first
            return 1;
        }
        group.beginSendBatch();
        return sends.flush(stream, group.iov);
    }

    private void setReadInterest(boolean on) {
        if (readInterest != on) {
            readInterest = on;
            updateInterestOps();
        }
    }

    void updateInterestOps() {
        if (key != null && key.isValid()) {
            key.interestOps((readInterest ? SelectionKey.OP_READ : 0)
                | (sends.writeInterest() ? SelectionKey.OP_WRITE : 0));
        }
    }

    // ---- errors and closing ------------------------------------------------------------------------------------

    /**
     * Ends the connection for a protocol error: a C2HTermReq quoting the offending header, then close (NVMe/TCP
     * 7.4.7). A PDU partly written keeps going out whole first; queued ones are dropped.
     */
    void terminate(int fes, long fei, int pduType, String what) {
        if (lifecycle >= TERMINATING) {
            return;
        }
        PEER_LOG.warnFrom(peerKey, "NVMe/TCP {}: protocol error in {} PDU: {} ({}, FEI {}); terminating the "
            + "connection", peer, PduType.name(pduType), what, TermReqPdu.fesName(fes), fei);
        termReqJob.armTermReq(PduType.C2H_TERM_REQ, fes, fei, receiver);
        lifecycle = TERMINATING;
        receiver.stop();
        terminationReason = "protocol error in " + PduType.name(pduType) + ": " + what;
        setReadInterest(false);
        sends.terminateWith(termReqJob); // the host gets nothing else before the TermReq
        terminationDeadlineNanos = group.roundNanos() + TERMINATION_LINGER_NANOS;
        group.addTerminating(this);
    }

    /** The C2HTermReq is out: FIN, then read until the host closes or the linger deadline passes. */
    private void onTermReqSent() {
        try {
            stream.shutdownOutput();
        } catch (IOException e) {
            close(terminationReason);
            return;
        }
        terminationDeadlineNanos = group.roundNanos() + TERMINATION_LINGER_NANOS;
        setReadInterest(true);
        receiver.drain();
    }

    /** The C2HTermReq linger deadline passed. */
    void onDeadline() {
        close("C2HTermReq not sent within " + TERMINATION_LINGER_NANOS / 1_000_000 + " ms");
    }

    /** Closes the connection now (reactor thread). Idempotent. */
    @Override
    protected void close(String reason) {
        if (lifecycle == CLOSED) {
            return;
        }
        lifecycle = CLOSED;
        receiver.stop();
        if (key != null) {
            key.cancel();
        }
        try {
            tlsStart.closing(stream).close();
        } catch (IOException e) {
            LOG.debug("NVMe/TCP {}: error closing the socket", peer, e);
        }
        sends.close();
        for (TcpRequest request : slots.all()) {
            TcpRequest.State state = request.state();
            // Executing commands release their buffers when they complete; parked ones when the group drops them.
            if (state == TcpRequest.State.RECEIVING || state == TcpRequest.State.SENDING) {
                recycle(request);
            }
        }
        group.unregister(this);
        pending.release();
        // Every way a queue ends comes here (disconnect, protocol error, keep-alive expiry, poll group close at
        // shutdown).
        slots.releaseCharge();
        if (queueId >= 0) {
            LOG.info("NVMe/TCP {}: queue {} closed: {}", peer, queueId, reason);
        } else if (pending.refusal() == null) {
            // Never connected: a scanner, a flood, a host that gave up. One line per address a second is plenty.
            // (A refusal by the pre-Connect limits was logged by the listener already.)
            PEER_LOG.infoFrom(peerKey, "NVMe/TCP {}: connection closed before Connect: {}", peer, reason);
        }
        if (handler != null) {
            try {
                handler.onClosed(reason);
            } catch (RuntimeException e) {
                LOG.warn("NVMe/TCP {}: queue handler failed in onClosed", peer, e);
            }
        }
    }
}
