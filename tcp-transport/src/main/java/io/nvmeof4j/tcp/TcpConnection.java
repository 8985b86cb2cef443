package io.nvmeof4j.tcp;

import io.nvmeof4j.protocol.command.CompletionQueueEntry;
import io.nvmeof4j.protocol.command.DataDirection;
import io.nvmeof4j.protocol.command.NvmeStatus;
import io.nvmeof4j.protocol.command.SglDescriptor;
import io.nvmeof4j.protocol.command.SubmissionQueueEntry;
import io.nvmeof4j.protocol.log.RateLimitedLog;
import io.nvmeof4j.protocol.spi.ConnectRefusedException;
import io.nvmeof4j.protocol.spi.MemoryBudget;
import io.nvmeof4j.protocol.spi.PendingConnections;
import io.nvmeof4j.protocol.spi.PortOptions;
import io.nvmeof4j.protocol.spi.QueueHandler;
import io.nvmeof4j.protocol.spi.TransportAddress;
import io.nvmeof4j.protocol.spi.TransportQueue;
import io.nvmeof4j.protocol.spi.TransportType;
import io.nvmeof4j.protocol.tcp.CapsuleCmdPdu;
import io.nvmeof4j.protocol.tcp.H2CDataPdu;
import io.nvmeof4j.protocol.tcp.ICReqPdu;
import io.nvmeof4j.protocol.tcp.ICRespPdu;
import io.nvmeof4j.protocol.tcp.PduFlyweight;
import io.nvmeof4j.protocol.tcp.PduType;
import io.nvmeof4j.protocol.tcp.TermReqPdu;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.SelectionKey;
import java.nio.channels.SocketChannel;
import io.nvmeof4j.tcp.tls.PskResolver;
import io.nvmeof4j.tcp.tls.TcpStream;
import io.nvmeof4j.tcp.tls.TlsStream;
import java.util.Arrays;
import java.util.concurrent.TimeUnit;

import static io.nvmeof4j.protocol.tcp.PduFlyweight.FLAG_DDGSTF;
import static io.nvmeof4j.protocol.tcp.PduFlyweight.FLAG_HDGSTF;
import static io.nvmeof4j.protocol.tcp.PduFlyweight.FLAG_LAST_PDU;
import static io.nvmeof4j.protocol.tcp.TermReqPdu.FES_DATA_LIMIT_EXCEEDED;
import static io.nvmeof4j.protocol.tcp.TermReqPdu.FES_DATA_OUT_OF_RANGE;
import static io.nvmeof4j.protocol.tcp.TermReqPdu.FES_HEADER_DIGEST_ERROR;
import static io.nvmeof4j.protocol.tcp.TermReqPdu.FES_INVALID_HEADER_FIELD;
import static io.nvmeof4j.protocol.tcp.TermReqPdu.FES_PDU_SEQUENCE_ERROR;
import static io.nvmeof4j.protocol.tcp.TermReqPdu.FES_UNSUPPORTED_PARAMETER;

/**
 * One NVMe/TCP connection in the controller role: one NVMe queue (NVMe/TCP Transport Specification 1.0;
 * wire reference 5). Owned by one {@link TcpPollGroup} and touched only by its reactor thread, except for
 * {@link #disconnect} and {@link #execute}, which hand work over to it.
 *
 * <h2>Receive</h2>
 * Bytes are read into a per-connection receive buffer and parsed in place: ICReq first, then CapsuleCmd, H2CData
 * and H2CTermReq. In-capsule data goes into the slot's own buffer, H2CData into the command's pool buffer: copied
 * from the receive buffer when they arrived with the header, read straight from the socket when large. Nothing
 * that arrives on the stream ever waits for the pool, so the stream never stops: an R2T or C2H command that finds
 * the pool dry waits in the poll group's FIFO, and its R2T goes out once it has a buffer. Header fields are checked
 * in wire order so the first bad field is the one reported; a bad header ends the connection with a C2HTermReq
 * (FES and FEI as in the spec) quoting the header.
 *
 * <h2>Send</h2>
 * An intrusive FIFO of {@link SendJob}s (response capsules, R2Ts, C2HData with their responses, ICResp, TermReq)
 * flushed with gathering writes from preallocated headers and the data buffers themselves. When the socket is
 * full the connection waits for OP_WRITE; otherwise it never asks for it.
 */
final class TcpConnection implements TransportQueue {
    private static final Logger LOG = LoggerFactory.getLogger(TcpConnection.class);
    /**
     * What one peer can make us say over and over (protocol errors, TermReqs, closes of queues that never
     * connected): one line per peer address a second.
     */
    private static final RateLimitedLog PEER_LOG = new RateLimitedLog(LOG);
    private static final VarHandle OUTSTANDING;

    static {
        try {
            OUTSTANDING = MethodHandles.lookup().findVarHandle(TcpConnection.class, "outstanding", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    // Lifecycle.
    /** A TLS port: the first bytes tell a TLS ClientHello from an ICReq, then the handshake runs. */
    private static final int AWAITING_TLS = -1;
    private static final int AWAITING_ICREQ = 0;
    private static final int LIVE = 1;
    private static final int TERMINATING = 2;
    private static final int CLOSED = 3;

    // Receive states.
    private static final int RECV_HEADER = 0;
    private static final int RECV_PAYLOAD = 1;
    private static final int RECV_DATA_DIGEST = 2;
    private static final int RECV_DISCARD = 3;
    /** After our C2HTermReq went out: read and drop whatever the host still sends until it closes. */
    private static final int RECV_DRAIN = 4;
    private static final int RECV_STOPPED = 5;

    /** Linux admin queue depth (NVME_AQ_DEPTH); also the command limit before Connect tells us the queue size. */
    static final int INITIAL_SLOTS = 32;
    /**
     * Receive buffer before ICReq: the 128-byte ICReq and room to spare. The host sends nothing else before it has
     * ICResp, so more bytes than this before ICReq are a protocol error found in the first header anyway.
     */
    private static final int PRE_ICREQ_BUFFER_SIZE = 256;
    /**
     * Each slot's in-capsule buffer starts on a page and takes whole pages, so a backend opened O_DIRECT writes
     * straight from it (the pool's buffers are page-sized and aligned the same way).
     */
    private static final int IN_CAPSULE_ALIGNMENT = 4096;
    /** The one in-capsule buffer before Connect (Connect's 1024 bytes fit the admin size), with room to align it. */
    private static final int PRE_CONNECT_BUFFER_ALLOCATION = PortOptions.ADMIN_IN_CAPSULE_DATA_SIZE + IN_CAPSULE_ALIGNMENT;
    /** Payload bytes from which a read goes straight into the command buffer instead of the receive buffer. */
    private static final int DIRECT_READ_THRESHOLD = 8192;
    /** Socket reads per readiness event before other connections get their turn. */
    private static final int READ_BUDGET = 8;
    /** Gathering writes per flush before other connections get their turn. */
    private static final int WRITE_BUDGET = 16;
    /** How long a C2HTermReq may take to go out before the connection is closed anyway. */
    static final long TERMINATION_LINGER_NANOS = TimeUnit.SECONDS.toNanos(1);
    private static final byte TLS_HANDSHAKE_RECORD = 0x16;

    final TcpPollGroup group;
    final TcpListener listener;
    private final SocketChannel channel;
    /** The socket, or TLS records over it once the handshake is done. */
    private TcpStream stream;
    private TlsStream handshake;
    private final TransportAddress localAddress;
    private final String peer;
    /** The peer's address without port: the key of its rate-limited log lines. */
    private final Object peerKey;
    /** This connection's place among the port's pending ones, released at Connect or close. */
    private final PendingConnections.Entry pending;
    private final PortOptions portOptions;
    private final int maxH2CDataSize;
    final int c2hDataPduSize;
    /** Largest data transfer of one command: the port's MDTS, bounded by the pool's largest buffer. */
    private final int maxTransferSize;
    SelectionKey key;
    private QueueHandler handler;
    private int lifecycle;
    private final Runnable readAgain = this::onReadable;

    // Negotiated by ICReq.
    int headerDigestLength;
    int dataDigestLength;
    /** PDO of the C2HData PDUs we send: header (+ digest) rounded up to the host's HPDA. */
    int c2hDataOffset = PduType.headerLength(PduType.C2H_DATA);

    // What Connect established.
    private volatile int queueId = -1;
    private int sqSize;
    private boolean sqFlowControlDisabled;
    private int sqHead;
    /** Capsules received so far: each command's {@link TcpRequest#sequence()}. */
    private long capsulesReceived;
    /** Slots not FREE. Written by the reactor thread with release semantics, read by any thread with acquire. */
    @SuppressWarnings("unused")
    private int outstanding;

    // Receive.
    /**
     * Small until ICReq arrives (a socket that never sends one, the bulk of an idle-socket flood, then holds
     * {@link #PRE_ICREQ_BUFFER_SIZE} bytes instead of the full buffer); the full size from ICReq on.
     */
    private ByteBuffer receiveBuffer;
    private final int receiveBufferSize;
    private int readIndex;
    private int writeIndex;
    private int receiveState = RECV_HEADER;
    private TcpRequest payloadRequest;
    private ByteBuffer payloadBuffer;
    private int payloadStart;
    private int payloadPosition;
    private int payloadEnd;
    private boolean payloadInCapsule;
    private long discardRemaining;

    // Command slots.
    private TcpRequest[] slots = new TcpRequest[0];
    private int[] freeSlots = new int[0];
    private int freeSlotCount;
    private int commandLimit = INITIAL_SLOTS;
    /** The queue id and size {@link #install} set the queue up for (-1: not yet), which Connect then confirms. */
    private int installedQueueId = -1;
    private int installedSqSize;
    /**
     * What {@link #install} charged to the transport's queue buffer budget for the memory the queue holds from
     * Connect on (receive buffer, slots, in-capsule buffers); given back once, when the queue closes.
     */
    private long budgetCharge;
    /** Before Connect: the command whose data is in the queue's one in-capsule buffer, or null. */
    private TcpRequest preConnectDataOwner;

    // Send.
    private SendJob sendHead;
    private SendJob sendTail;
    private boolean readInterest = true;
    private boolean writeInterest;
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
        this.channel = channel;
        this.stream = TcpStream.plain(channel);
        this.peer = peer;
        this.portOptions = listener.options();
        this.lifecycle = portOptions.tls() ? AWAITING_TLS : AWAITING_ICREQ;
        TcpTransportOptions tcpOptions = group.options;
        this.maxH2CDataSize = tcpOptions.maxH2CDataSize();
        this.c2hDataPduSize = tcpOptions.c2hDataPduSize();
        this.maxTransferSize = Math.min(portOptions.maxDataTransferSize(), group.pool.maxBufferSize());
        this.receiveBufferSize = tcpOptions.receiveBufferSize();
        this.receiveBuffer = ByteBuffer.allocateDirect(PRE_ICREQ_BUFFER_SIZE).order(ByteOrder.LITTLE_ENDIAN);
        this.icRespJob = new ControlPduJob(ICRespPdu.PDU_LENGTH, null);
        this.termReqJob = new ControlPduJob(TermReqPdu.MAX_PDU_LENGTH, this::onTermReqSent);
        ensureSlots(INITIAL_SLOTS, ByteBuffer.allocateDirect(INITIAL_SLOTS * TcpRequest.SLOT_BYTES)
            .order(ByteOrder.LITTLE_ENDIAN));
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
        checkQueueShape(queueId, sqSize);
        if (installedQueueId != queueId || installedSqSize != sqSize) {
            // The slots and their buffers come from install, charged to the budget; a Connect that skipped it
            // would serve a queue whose memory nobody counted.
            throw new IllegalStateException("NVMe/TCP " + peer + ": connected(" + queueId + ", " + sqSize
                + ") without install for that queue (installed: " + installedQueueId + ", " + installedSqSize + ")");
        }
        this.queueId = queueId;
        this.sqSize = sqSize;
        this.sqFlowControlDisabled = sqFlowControlDisabled;
        this.commandLimit = sqSize;
        this.sqHead %= sqSize;
        pending.release();
        LOG.debug("NVMe/TCP {}: queue {} connected, {} entries, SQ flow control {}", peer, queueId, sqSize,
            sqFlowControlDisabled ? "disabled" : "enabled");
    }

    /**
     * Allocates the queue's memory for the size its Connect asks (slots and an in-capsule buffer per slot) and charges
     * everything the queue then holds to the transport's queue buffer budget, before the Connect takes effect: an
     * allowed host opening queue after queue gets Controller Busy once the budget is spent, instead of taking direct
     * memory until an allocation fails somewhere on a reactor. The charge is given back when the queue closes
     * ({@link #close}: disconnect, error, keep-alive expiry, shutdown). A second install (a second Connect after one
     * refused later on) charges the new shape first and gives the earlier charge back only once that succeeded, so
     * a refusal leaves the earlier set-up charged as it was.
     */
    @Override
    public void install(int queueId, int sqSize) throws ConnectRefusedException {
        checkQueueShape(queueId, sqSize);
        int count = Math.max(slots.length, sqSize);
        int size = queueId > 0 ? portOptions.inlineDataSize() : PortOptions.ADMIN_IN_CAPSULE_DATA_SIZE;
        long stride = inCapsuleStride(size);
        long inCapsuleBytes = inCapsuleAllocation(count, size);
        long charge = queueCharge(receiveBufferSize, count, size);
        String what = (queueId == 0 ? "admin queue" : "I/O queue " + queueId) + " of " + sqSize + " entries ("
            + count + " slots with " + kib(stride) + " for in-capsule data each)";
        if (inCapsuleBytes > Integer.MAX_VALUE) {
            throw new ConnectRefusedException(NvmeStatus.FABRICS_CONTROLLER_BUSY | NvmeStatus.DNR,
                PendingConnections.Refusal.DIRECT_MEMORY, "NVMe/TCP Connect, setting up the " + what + ": "
                + kib(inCapsuleBytes) + " of in-capsule buffers, more than one direct buffer holds; lower the port's "
                + "inline_data_size or max_queue_size");
        }
        MemoryBudget budget = group.transport.queueBufferBudget();
        if (!budget.tryReserve(charge)) {
            throw new ConnectRefusedException(NvmeStatus.FABRICS_CONTROLLER_BUSY,
                PendingConnections.Refusal.QUEUE_BUFFER_BUDGET, "NVMe/TCP Connect, setting up the " + what
                + ": its buffers need " + kib(charge) + ", more than the " + kib(Math.max(0, budget.availableBytes()))
                + " left of the " + budget.describe());
        }
        ByteBuffer slotMemory;
        ByteBuffer inCapsuleMemory;
        try {
            slotMemory = count == slots.length ? null
                : ByteBuffer.allocateDirect((count - slots.length) * TcpRequest.SLOT_BYTES).order(ByteOrder.LITTLE_ENDIAN);
            inCapsuleMemory = size == 0 ? null
                : ByteBuffer.allocateDirect((int) inCapsuleBytes).alignedSlice(IN_CAPSULE_ALIGNMENT);
        } catch (OutOfMemoryError e) {
            // Thrown by the allocation (the direct-memory limit, or malloc), not by the VM's heap: this Connect is
            // refused and the reactor goes on serving its other queues.
            budget.release(charge);
            throw new ConnectRefusedException(NvmeStatus.FABRICS_CONTROLLER_BUSY,
                PendingConnections.Refusal.DIRECT_MEMORY, "NVMe/TCP Connect, allocating the buffers of the " + what
                + " (" + kib(charge) + ", within the " + budget.describe() + "): " + e.getMessage());
        }
        long previous = budgetCharge;
        budgetCharge = charge;
        if (previous != 0) {
            budget.release(previous);
        }
        ensureSlots(count, slotMemory);
        provideInCapsuleBuffers(inCapsuleMemory, size, (int) stride, false);
        installedQueueId = queueId;
        installedSqSize = sqSize;
    }

    private static void checkQueueShape(int queueId, int sqSize) {
        if (queueId < 0 || queueId > 0xFFFF) {
            throw new IllegalArgumentException("queue id " + queueId + " outside 0..65535");
        }
        if (sqSize < 1 || sqSize > 65536) {
            throw new IllegalArgumentException("SQ size " + sqSize + " outside 1..65536");
        }
    }

    /** "16 KiB", "2148 KiB": sizes in messages (rounded up). */
    private static String kib(long bytes) {
        return (bytes + 1023) / 1024 + " KiB";
    }

    @Override
    public int queueId() {
        return queueId;
    }

    @Override
    public int inCapsuleDataSize() {
        // Admin queue, and any queue before its Connect (Connect data is always in-capsule on TCP): 8 KiB.
        return queueId > 0 ? portOptions.inlineDataSize() : PortOptions.ADMIN_IN_CAPSULE_DATA_SIZE;
    }

    @Override
    public int commandsOutstanding() {
        return (int) OUTSTANDING.getAcquire(this);
    }

    @Override
    public void disconnect(String reason) {
        String why = reason == null ? "disconnected" : reason;
        group.execute(() -> close(why));
    }

    @Override
    public void execute(Runnable task) {
        group.execute(task);
    }

    @Override
    public String toString() {
        return "TcpConnection[" + peer + " qid=" + queueId + "]";
    }

    // ---- receive -----------------------------------------------------------------------------------------------

    /** The socket is readable: read and parse within a budget. */
    void onReadable() {
        if (receiveState == RECV_DRAIN) {
            drainAfterTermReq();
            return;
        }
        if (lifecycle == AWAITING_TLS && !advanceTls()) {
            return;
        }
        for (int reads = 0; ; reads++) {
            if (!processReceived()) {
                return; // stopped
            }
            if (reads == READ_BUDGET) {
                if (stream.hasBufferedInput()) {
                    // Decrypted bytes the socket will not signal again: come back in the next poll.
                    group.execute(readAgain);
                }
                return; // budget spent (the selector is level-triggered and will call again)
            }
            int wanted;
            int n;
            try {
                if (receiveState == RECV_PAYLOAD && readIndex == writeIndex
                    && payloadEnd - payloadPosition >= DIRECT_READ_THRESHOLD) {
                    // A large payload and nothing buffered: read it straight into the command's buffer.
                    ByteBuffer destination = payloadBuffer;
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
                close("receive failed: " + e.getMessage());
                return;
            }
            if (n < 0) {
                close("host closed the connection");
                return;
            }
            if (n == 0) {
                return;
            }
            if (n < wanted) {
                // The socket is drained: parse what came and save the read that would only say EAGAIN.
                processReceived();
                return;
            }
        }
    }

    /**
     * Keeps room for a whole header after the unparsed bytes. Between reads at most one partial header is left
     * unparsed (PDO is one byte, so under 260 bytes with a digest): compacting copies little, and half of a
     * receive buffer of at least 4 KiB always holds the largest header.
     */
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

    /** Parses buffered bytes; false once the connection stops receiving (closed or terminating). */
    private boolean processReceived() {
        while (true) {
            boolean progressed;
            switch (receiveState) {
                case RECV_HEADER:
                    progressed = receivePduHeader();
                    break;
                case RECV_PAYLOAD:
                    progressed = receivePayload();
                    break;
                case RECV_DATA_DIGEST:
                    progressed = receiveDataDigest();
                    break;
                case RECV_DISCARD:
                    progressed = discardPayload();
                    break;
                default:
                    return false;
            }
            if (lifecycle >= TERMINATING || receiveState >= RECV_DRAIN) {
                return false;
            }
            if (!progressed) {
                return true;
            }
        }
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
        if (lifecycle == AWAITING_ICREQ) {
            return receiveICReq(base, type, flags, hlen, pdo, plen, available);
        }
        switch (type) {
            case PduType.CAPSULE_CMD:
                return receiveCapsuleCmd(base, flags, hlen, pdo, plen, available);
            case PduType.H2C_DATA:
                return receiveH2CData(base, flags, hlen, pdo, plen, available);
            case PduType.H2C_TERM_REQ:
                return receiveH2CTermReq(base, hlen, plen, available);
            case PduType.IC_REQ:
                terminate(FES_PDU_SEQUENCE_ERROR, 0, type, "ICReq on an initialized connection");
                return false;
            default:
                terminate(FES_INVALID_HEADER_FIELD, PduFlyweight.TYPE_OFFSET, type,
                    "PDU type not accepted by a controller");
                return false;
        }
    }

    private boolean receiveICReq(int base, int type, int flags, int hlen, int pdo, long plen, int available) {
        if (type != PduType.IC_REQ) {
            terminate(FES_PDU_SEQUENCE_ERROR, 0, type, "expected ICReq first");
            return false;
        }
        if (flags != 0) {
            terminate(FES_INVALID_HEADER_FIELD, PduFlyweight.FLAGS_OFFSET, type, "flags must be 0");
            return false;
        }
        if (hlen != ICReqPdu.HEADER_LENGTH) {
            terminate(FES_INVALID_HEADER_FIELD, PduFlyweight.HLEN_OFFSET, type, "HLEN " + hlen + ", expected 128");
            return false;
        }
        if (pdo != 0) {
            terminate(FES_INVALID_HEADER_FIELD, PduFlyweight.PDO_OFFSET, type, "PDO " + pdo + ", expected 0");
            return false;
        }
        if (plen != ICReqPdu.PDU_LENGTH) {
            terminate(FES_INVALID_HEADER_FIELD, PduFlyweight.PLEN_OFFSET, type, "PLEN " + plen + ", expected 128");
            return false;
        }
        if (available < ICReqPdu.PDU_LENGTH) {
            return false;
        }
        int pfv = u16(base + ICReqPdu.PFV_OFFSET);
        int hpda = u8(base + ICReqPdu.HPDA_OFFSET);
        int digest = u8(base + ICReqPdu.DGST_OFFSET);
        if (pfv != ICReqPdu.PFV_1_0) {
            terminate(FES_UNSUPPORTED_PARAMETER, ICReqPdu.PFV_OFFSET, type, "PFV " + pfv + " (only 0 exists)");
            return false;
        }
        if (hpda > ICReqPdu.MAX_PDA) {
            terminate(FES_INVALID_HEADER_FIELD, ICReqPdu.HPDA_OFFSET, type, "HPDA " + hpda + " above 31");
            return false;
        }
        // We support both digests, so the answer is exactly what the host asked for (the host checks the echo).
        int negotiated = digest & (ICReqPdu.DIGEST_HEADER | ICReqPdu.DIGEST_DATA);
        headerDigestLength = (negotiated & ICReqPdu.DIGEST_HEADER) != 0 ? PduFlyweight.DIGEST_LENGTH : 0;
        dataDigestLength = (negotiated & ICReqPdu.DIGEST_DATA) != 0 ? PduFlyweight.DIGEST_LENGTH : 0;
        int alignment = (hpda + 1) * 4;
        int header = PduType.headerLength(PduType.C2H_DATA) + headerDigestLength;
        c2hDataOffset = (header + alignment - 1) / alignment * alignment;
        readIndex = base + ICReqPdu.PDU_LENGTH;

        // CPDA 0: we take data at any dword offset, which is also the only value the Linux host accepts.
        new ICRespPdu().wrap(icRespJob.pdu, 0).init()
            .pduFormatVersion(ICReqPdu.PFV_1_0)
            .controllerPduDataAlignment(0)
            .digest(negotiated)
            .maxH2CDataLength(maxH2CDataSize);
        icRespJob.arm(ICRespPdu.PDU_LENGTH);
        enqueueSend(icRespJob);
        lifecycle = LIVE;
        LOG.debug("NVMe/TCP {}: connection initialized (header digest {}, data digest {}, HPDA {}, MAXR2T {})",
            peer, headerDigestLength > 0, dataDigestLength > 0, hpda, u32(base + ICReqPdu.MAXR2T_OFFSET) + 1);
        try {
            growReceiveBuffer();
            provideInCapsuleBuffers(ByteBuffer.allocateDirect(PRE_CONNECT_BUFFER_ALLOCATION)
                .alignedSlice(IN_CAPSULE_ALIGNMENT), PortOptions.ADMIN_IN_CAPSULE_DATA_SIZE, 0, true);
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

    /** From the small pre-ICReq buffer to the full one, keeping whatever followed the ICReq. Once per connection. */
    private void growReceiveBuffer() {
        ByteBuffer full = ByteBuffer.allocateDirect(receiveBufferSize).order(ByteOrder.LITTLE_ENDIAN);
        int unparsed = writeIndex - readIndex;
        for (int i = 0; i < unparsed; i++) {
            full.put(i, receiveBuffer.get(readIndex + i));
        }
        receiveBuffer = full;
        readIndex = 0;
        writeIndex = unparsed;
    }

    /**
     * Checks the common header of a CapsuleCmd or H2CData in wire order (type was checked already; then flags,
     * HLEN, PDO, PLEN), so the lowest bad field is the one reported.
     *
     * @return the PDU's data length without digest, or -1 after terminating the connection
     */
    private long checkDataPduHeader(int type, int flags, int hlen, int pdo, long plen, int validFlags) {
        int fullHeader = hlen + ((flags & FLAG_HDGSTF) != 0 ? PduFlyweight.DIGEST_LENGTH : 0);
        long dataAndDigest = plen > fullHeader ? plen - pdo : 0;
        if ((flags & ~validFlags) != 0) {
            terminate(FES_INVALID_HEADER_FIELD, PduFlyweight.FLAGS_OFFSET, type,
                String.format("flags 0x%02x carry undefined bits", flags));
            return -1;
        }
        int expectedDigestFlags = (headerDigestLength > 0 ? FLAG_HDGSTF : 0)
            | (dataDigestLength > 0 && dataAndDigest != 0 ? FLAG_DDGSTF : 0);
        if ((flags & (FLAG_HDGSTF | FLAG_DDGSTF)) != expectedDigestFlags) {
            terminate(FES_INVALID_HEADER_FIELD, PduFlyweight.FLAGS_OFFSET, type,
                String.format("digest flags 0x%02x do not match the negotiated digests", flags));
            return -1;
        }
        int expectedHlen = PduType.headerLength(type);
        if (hlen != expectedHlen) {
            terminate(FES_INVALID_HEADER_FIELD, PduFlyweight.HLEN_OFFSET, type,
                "HLEN " + hlen + ", expected " + expectedHlen);
            return -1;
        }
        // CPDA 0: data at any dword-aligned offset after the header. PDO may be 0 when there is no data.
        if ((dataAndDigest != 0 || pdo != 0) && (pdo < fullHeader || pdo > plen || (pdo & 3) != 0)) {
            terminate(FES_INVALID_HEADER_FIELD, PduFlyweight.PDO_OFFSET, type,
                "PDO " + pdo + " with HLEN " + hlen + " and PLEN " + plen);
            return -1;
        }
        if (plen < fullHeader || (dataDigestLength > 0 && dataAndDigest != 0 && dataAndDigest <= dataDigestLength)) {
            terminate(FES_INVALID_HEADER_FIELD, PduFlyweight.PLEN_OFFSET, type,
                "PLEN " + plen + " with HLEN " + hlen + " and PDO " + pdo);
            return -1;
        }
        return dataAndDigest == 0 ? 0 : dataAndDigest - dataDigestLength;
    }

    private boolean headerDigestMatches(int base, int hlen) {
        if (headerDigestLength == 0) {
            return true;
        }
        int expected = group.crc.compute(receiveBuffer, base, hlen);
        return receiveBuffer.getInt(base + hlen) == expected;
    }

    private boolean receiveCapsuleCmd(int base, int flags, int hlen, int pdo, long plen, int available) {
        long dataLength = checkDataPduHeader(PduType.CAPSULE_CMD, flags, hlen, pdo, plen, FLAG_HDGSTF | FLAG_DDGSTF);
        if (dataLength < 0) {
            return false;
        }
        if (dataLength > Math.max(inCapsuleDataSize(), maxTransferSize)) {
            terminate(FES_DATA_LIMIT_EXCEEDED, 0, PduType.CAPSULE_CMD,
                dataLength + " bytes of in-capsule data, the queue takes " + inCapsuleDataSize());
            return false;
        }
        int dataStart = dataLength > 0 ? pdo : hlen + headerDigestLength;
        if (available < dataStart) {
            return false;
        }
        if (!headerDigestMatches(base, hlen)) {
            terminate(FES_HEADER_DIGEST_ERROR, 0, PduType.CAPSULE_CMD, "header digest mismatch");
            return false;
        }
        if (freeSlotCount == 0 || slots.length - freeSlotCount >= commandLimit) {
            terminate(FES_PDU_SEQUENCE_ERROR, 0, PduType.CAPSULE_CMD,
                "more than " + commandLimit + " commands outstanding (the queue size)");
            return false;
        }
        TcpRequest request = slots[freeSlots[--freeSlotCount]];
        OUTSTANDING.setRelease(this, (int) OUTSTANDING.get(this) + 1);
        request.begin(receiveBuffer, base + CapsuleCmdPdu.SQE_OFFSET, System.nanoTime(), ++capsulesReceived);
        readIndex = base + dataStart;
        if (++sqHead >= commandLimit) {
            sqHead = 0;
        }
        int inCapsuleBytes = (int) dataLength;
        int status = mapData(request, inCapsuleBytes);
        if (status != NvmeStatus.SUCCESS) {
            if (inCapsuleBytes > 0) {
                // The command is refused but its data is on the wire: skip it (and its digest) and carry on.
                discardRemaining = (long) inCapsuleBytes + dataDigestLength;
                receiveState = RECV_DISCARD;
            }
            request.state(TcpRequest.State.COMPLETING);
            onCompleted(request, status);
            return true;
        }
        switch (request.transfer) {
            case TcpRequest.TRANSFER_IN_CAPSULE:
                // The slot's own buffer, never the pool's: in-capsule data that waited for a pool buffer would stop
                // this stream, and with it the H2CData that R2T writes holding every pool buffer wait for.
                request.data = request.inCapsuleBuffer;
                startPayload(request, 0, inCapsuleBytes, true);
                return true;
            case TcpRequest.TRANSFER_R2T:
            case TcpRequest.TRANSFER_C2H:
                ByteBuffer pooled = group.acquireInOrder(request.dataLength);
                if (pooled == null) {
                    request.state(TcpRequest.State.PARKED);
                    group.park(request);
                } else {
                    onBufferGranted(request, pooled);
                }
                return true;
            default:
                dispatch(request);
                return true;
        }
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

    /** An R2T or C2H command parked for a pool buffer got it (or got one at once): move it on. */
    void onBufferGranted(TcpRequest request, ByteBuffer buffer) {
        request.data = buffer;
        request.dataPooled = true;
        switch (request.transfer) {
            case TcpRequest.TRANSFER_R2T:
                request.state(TcpRequest.State.RECEIVING);
                request.armR2T(headerDigestLength);
                enqueueSend(request.send);
                break;
            default:
                dispatch(request);
                break;
        }
    }

    private void startPayload(TcpRequest request, int start, int length, boolean inCapsule) {
        payloadRequest = request;
        payloadBuffer = request.data;
        payloadStart = start;
        payloadPosition = start;
        payloadEnd = start + length;
        payloadInCapsule = inCapsule;
        receiveState = RECV_PAYLOAD;
    }

    private boolean receiveH2CData(int base, int flags, int hlen, int pdo, long plen, int available) {
        int type = PduType.H2C_DATA;
        long pduDataLength = checkDataPduHeader(type, flags, hlen, pdo, plen, FLAG_HDGSTF | FLAG_DDGSTF | FLAG_LAST_PDU);
        if (pduDataLength < 0) {
            return false;
        }
        if (pduDataLength == 0) {
            terminate(FES_INVALID_HEADER_FIELD, PduFlyweight.PLEN_OFFSET, type, "H2CData without data");
            return false;
        }
        if (available < pdo) {
            return false;
        }
        if (!headerDigestMatches(base, hlen)) {
            terminate(FES_HEADER_DIGEST_ERROR, 0, type, "header digest mismatch");
            return false;
        }
        int cccid = u16(base + H2CDataPdu.CCCID_OFFSET);
        int ttag = u16(base + H2CDataPdu.TTAG_OFFSET);
        long datao = u32(base + H2CDataPdu.DATAO_OFFSET);
        long datal = u32(base + H2CDataPdu.DATAL_OFFSET);
        TcpRequest request = ttag < slots.length ? slots[ttag] : null;
        if (request == null || request.state() != TcpRequest.State.RECEIVING || !request.r2tSent) {
            terminate(FES_INVALID_HEADER_FIELD, H2CDataPdu.TTAG_OFFSET, type, "no R2T outstanding for TTAG " + ttag);
            return false;
        }
        if (cccid != request.commandId) {
            terminate(FES_INVALID_HEADER_FIELD, H2CDataPdu.CCCID_OFFSET, type,
                "CCCID " + cccid + " but TTAG " + ttag + " belongs to CID " + request.commandId);
            return false;
        }
        if (datal != pduDataLength) {
            terminate(FES_INVALID_HEADER_FIELD, H2CDataPdu.DATAL_OFFSET, type,
                "DATAL " + datal + " but the PDU carries " + pduDataLength + " bytes");
            return false;
        }
        if (datal > maxH2CDataSize) {
            terminate(FES_DATA_LIMIT_EXCEEDED, 0, type, "DATAL " + datal + " above MAXH2CDATA " + maxH2CDataSize);
            return false;
        }
        if (datao + datal > request.dataLength) {
            terminate(FES_DATA_OUT_OF_RANGE, 0, type, "DATAO " + datao + " + DATAL " + datal
                + " beyond the R2T's " + request.dataLength + " bytes");
            return false;
        }
        if (datao != request.h2cReceived) {
            terminate(FES_PDU_SEQUENCE_ERROR, 0, type, "DATAO " + datao + ", expected " + request.h2cReceived);
            return false;
        }
        boolean last = datao + datal == request.dataLength;
        if (last != ((flags & FLAG_LAST_PDU) != 0)) {
            terminate(FES_PDU_SEQUENCE_ERROR, 0, type, last ? "LAST_PDU missing on the last H2CData"
                : "LAST_PDU set before the end of the R2T");
            return false;
        }
        readIndex = base + pdo;
        startPayload(request, (int) datao, (int) datal, false);
        return true;
    }

    private boolean receiveH2CTermReq(int base, int hlen, long plen, int available) {
        // NVMe/TCP 7.4.7: a TermReq with a bad length is not answered; the connection just ends.
        if (hlen != TermReqPdu.HEADER_LENGTH || plen < TermReqPdu.HEADER_LENGTH || plen > TermReqPdu.MAX_PDU_LENGTH) {
            PEER_LOG.warnFrom(peerKey, "NVMe/TCP {}: malformed H2CTermReq (HLEN {}, PLEN {}); closing", peer, hlen,
                plen);
            close("malformed H2CTermReq");
            return false;
        }
        if (available < TermReqPdu.HEADER_LENGTH) {
            return false;
        }
        int fes = u16(base + TermReqPdu.FES_OFFSET);
        long fei = u32(base + TermReqPdu.FEI_OFFSET);
        PEER_LOG.warnFrom(peerKey, "NVMe/TCP {}: host terminated the connection with H2CTermReq: {} (FEI {})", peer,
            TermReqPdu.fesName(fes), fei);
        close("host sent H2CTermReq: " + TermReqPdu.fesName(fes) + ", FEI " + fei);
        return false;
    }

    private boolean receivePayload() {
        int remaining = payloadEnd - payloadPosition;
        if (remaining > 0) {
            int available = writeIndex - readIndex;
            if (available == 0) {
                return false;
            }
            int n = Math.min(available, remaining);
            receiveBuffer.limit(readIndex + n);
            receiveBuffer.position(readIndex);
            ByteBuffer destination = payloadBuffer;
            destination.limit(payloadPosition + n);
            destination.position(payloadPosition);
            destination.put(receiveBuffer);
            receiveBuffer.limit(receiveBuffer.capacity()); // parsing reads by absolute index up to capacity
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
        int expected = group.crc.compute(payloadBuffer, payloadStart, payloadEnd - payloadStart);
        if (received != expected) {
            // nvmet (nvmet_tcp_try_recv_ddgst) fails the whole connection on a data digest error and sends no
            // response for the command; the host sees the queue drop and reconnects. We do the same.
            TcpRequest request = payloadRequest;
            PEER_LOG.warnFrom(peerKey, "NVMe/TCP {}: data digest error in {} for CID {} (received 0x{}, computed "
                + "0x{}); closing", peer, payloadInCapsule ? "CapsuleCmd" : "H2CData", request.commandId,
                Integer.toHexString(received), Integer.toHexString(expected));
            close("data digest error on CID " + request.commandId);
            return false;
        }
        return finishPayload();
    }

    private boolean finishPayload() {
        TcpRequest request = payloadRequest;
        int length = payloadEnd - payloadStart;
        payloadRequest = null;
        payloadBuffer = null;
        receiveState = RECV_HEADER;
        if (payloadInCapsule) {
            dispatch(request);
        } else {
            request.h2cReceived += length;
            if (request.h2cReceived == request.dataLength) {
                dispatch(request);
            }
        }
        return true;
    }

    private boolean discardPayload() {
        int available = writeIndex - readIndex;
        if (available == 0) {
            return false;
        }
        int n = (int) Math.min(available, discardRemaining);
        readIndex += n;
        discardRemaining -= n;
        if (discardRemaining == 0) {
            receiveState = RECV_HEADER;
            return true;
        }
        return false;
    }

    // ---- execution and completion ------------------------------------------------------------------------------

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

    /** A command finished (reactor thread): queue its data and response, or just drop it if the queue is gone. */
    void onCompleted(TcpRequest request, int status) {
        if (lifecycle >= TERMINATING) {
            recycle(request); // completes into nothing; its buffer goes back to the pool
            return;
        }
        int sqHeadField = sqFlowControlDisabled ? CompletionQueueEntry.SQHD_FLOW_CONTROL_DISABLED : sqHead;
        request.fillCompletion(status, Math.max(queueId, 0), sqHeadField);
        request.state(TcpRequest.State.SENDING);
        if (NvmeStatus.isSuccess(status) && request.transfer == TcpRequest.TRANSFER_C2H) {
            // With SQ flow control disabled the last C2HData can carry SUCCESS instead of a response capsule
            // (wire reference 5). Only when DW0/DW1 are zero: the flag cannot carry them.
            CompletionQueueEntry cqe = request.response();
            boolean successFlag = sqFlowControlDisabled && cqe.result64() == 0L;
            request.armReadData(successFlag);
        } else {
            releaseData(request);
            request.armResponse(headerDigestLength);
        }
        enqueueSend(request.send);
    }

    /** The request's response is on the socket: tell the handler that took the command (metrics end here). */
    void responseSent(TcpRequest request) {
        QueueHandler h = handler;
        if (h != null && request.reachedHandler) {
            try {
                h.onResponseSent(request);
            } catch (RuntimeException e) {
                LOG.warn("NVMe/TCP {}: queue handler failed after sending CID {}", peer, request.commandId, e);
            }
        }
    }

    /** The slot is done: its pool buffer back to the pool, the slot back on the free list. */
    void recycle(TcpRequest request) {
        releaseData(request);
        if (request.state() != TcpRequest.State.FREE) {
            request.state(TcpRequest.State.FREE);
            OUTSTANDING.setRelease(this, (int) OUTSTANDING.get(this) - 1);
            if (lifecycle != CLOSED) {
                freeSlots[freeSlotCount++] = request.tag;
            }
        }
    }

    private void releaseData(TcpRequest request) {
        ByteBuffer data = request.data;
        request.data = null;
        if (request == preConnectDataOwner) {
            preConnectDataOwner = null;
        }
        if (request.dataPooled) {
            request.dataPooled = false;
            group.release(data);
        }
    }

    /** A parked command whose connection went away meanwhile. */
    void dropParked(TcpRequest request) {
        recycle(request);
    }

    boolean isGone() {
        return lifecycle >= TERMINATING;
    }

    /** Grows the slots to {@code count}, their PDU memory from {@code memory} (null when none are added). */
    private void ensureSlots(int count, ByteBuffer memory) {
        int old = slots.length;
        if (count <= old) {
            return;
        }
        slots = Arrays.copyOf(slots, count);
        freeSlots = Arrays.copyOf(freeSlots, count);
        // Push new slots so the lowest tags are handed out first (easier to read in traces).
        for (int tag = count - 1; tag >= old; tag--) {
            slots[tag] = new TcpRequest(this, tag, memory, (tag - old) * TcpRequest.SLOT_BYTES);
            freeSlots[freeSlotCount++] = tag;
        }
    }

    /** In-capsule buffers start on a page and take whole pages. */
    private static long inCapsuleStride(int size) {
        return ((long) size + IN_CAPSULE_ALIGNMENT - 1) / IN_CAPSULE_ALIGNMENT * IN_CAPSULE_ALIGNMENT;
    }

    /** The one allocation of {@code count} in-capsule buffers of {@code size} bytes, with room to align it. */
    private static long inCapsuleAllocation(int count, int size) {
        return size == 0 ? 0 : count * inCapsuleStride(size) + IN_CAPSULE_ALIGNMENT;
    }

    /**
     * What a connected queue of {@code slotCount} slots holds, charged to the queue buffer budget at Connect: the
     * receive buffer, the slots' PDU memory and the in-capsule buffers.
     */
    static long queueCharge(int receiveBufferSize, int slotCount, int inCapsuleSize) {
        return receiveBufferSize + (long) slotCount * TcpRequest.SLOT_BYTES + inCapsuleAllocation(slotCount, inCapsuleSize);
    }

    /**
     * Gives every slot its own buffer for in-capsule data, sized by the queue's in-capsule data size (8 KiB on the
     * admin queue, the port's inline_data_size on I/O queues), as SPDK gives each request its in-capsule buffer:
     * one direct allocation per queue at Connect ({@link #install}), never per I/O. Before Connect (from ICReq on)
     * the queue has one 8 KiB buffer, shared by every slot, for the Connect command's data, so a socket that never
     * connects holds no more than that (nvmet likewise keeps one command for Connect). A command still holding a
     * buffer of the memory replaced (the Connect command itself) keeps that memory reachable until it is done.
     *
     * @param memory page-aligned, {@code stride} bytes per slot (one buffer when {@code shared}); null when
     *               {@code size} is 0 (inline_data_size 0: mapData refuses any in-capsule data)
     */
    private void provideInCapsuleBuffers(ByteBuffer memory, int size, int stride, boolean shared) {
        for (int tag = 0; tag < slots.length; tag++) {
            slots[tag].inCapsuleBuffer = memory == null ? null
                : memory.slice(shared ? 0 : tag * stride, size).order(ByteOrder.LITTLE_ENDIAN);
        }
    }

    // ---- TLS (NVMe/TCP 1.0c 3.6) ----------------------------------------------------------------------------------

    /**
     * Drives the TLS handshake of a TLS port; true once it is done and PDUs may follow (decrypted bytes may
     * already be buffered). On a port where TLS is not required, a connection that starts with anything other
     * than a TLS handshake record (0x16) is served in plain text, as nvmet does. The handshake is bounded by the
     * port's pre-Connect timeout ({@code ConnectionLimits}), like everything before Connect.
     */
    private boolean advanceTls() {
        try {
            if (handshake == null) {
                prepareReceiveBuffer();
                receiveBuffer.limit(receiveBuffer.capacity());
                receiveBuffer.position(writeIndex);
                int n = channel.read(receiveBuffer);
                if (n < 0) {
                    close("host closed the connection before the TLS handshake");
                    return false;
                }
                writeIndex += Math.max(n, 0);
                if (writeIndex == readIndex) {
                    return false;
                }
                if (receiveBuffer.get(readIndex) != TLS_HANDSHAKE_RECORD) {
                    if (portOptions.tlsRequired()) {
                        close("TLS is required on this port, but the host sent a plain PDU (type 0x"
                            + Integer.toHexString(receiveBuffer.get(readIndex) & 0xFF) + ")");
                        return false;
                    }
                    lifecycle = AWAITING_ICREQ;
                    return true;
                }
                PskResolver psks = listener.pskResolver();
                if (psks == null) {
                    close("TLS handshake from the host, but no PSKs are configured (hosts[].tls_key)");
                    return false;
                }
                handshake = TlsStream.server(channel, psks);
                ByteBuffer early = receiveBuffer.duplicate();
                early.limit(writeIndex).position(readIndex);
                readIndex = 0;
                writeIndex = 0;
                handshake.offerEarlyInput(early);
            }
            boolean done = handshake.handshake();
            setWriteInterest(handshake.hasPendingOutput());
            if (!done) {
                return false;
            }
            stream = handshake;
            handshake = null;
            lifecycle = AWAITING_ICREQ;
            LOG.info("NVMe/TCP {}: {} with PSK identity {}", peer, stream.security(),
                ((TlsStream) stream).identity());
            return true;
        } catch (IOException e) {
            close(e.getMessage() != null ? e.getMessage() : e.toString());
            return false;
        }
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

    /** The C2HTermReq linger deadline passed. */
    void onDeadline() {
        close("C2HTermReq not sent within " + TERMINATION_LINGER_NANOS / 1_000_000 + " ms");
    }

    // ---- send --------------------------------------------------------------------------------------------------

    private void enqueueSend(SendJob job) {
        job.nextJob = null;
        if (sendTail == null) {
            sendHead = job;
        } else {
            sendTail.nextJob = job;
        }
        sendTail = job;
        if (!inFlushList && !writeInterest) {
            group.requestFlush(this); // with OP_WRITE armed the socket is full: the selector will call flush
        }
    }

    private SendJob popSendHead() {
        SendJob job = sendHead;
        sendHead = job.nextJob;
        if (sendHead == null) {
            sendTail = null;
        }
        job.nextJob = null;
        return job;
    }

    /** Writes queued PDUs until the socket is full, the queue is empty, or the budget is spent. */
    int flush() {
        if (lifecycle == CLOSED) {
            return 0;
        }
        if (lifecycle == AWAITING_TLS) {
            advanceTls(); // OP_WRITE during the handshake: its records go out first
            return 1;
        }
        try {
            if (!stream.flushPending()) {
                setWriteInterest(true); // TLS records of an earlier write still wait for the socket
                return 1;
            }
        } catch (IOException e) {
            close("send failed: " + e.getMessage());
            return 1;
        }
        ByteBuffer[] iov = group.iov;
        int work = 0;
        for (int round = 0; round < WRITE_BUDGET && sendHead != null; round++) {
            int count = 0;
            long total = 0;
            for (SendJob job = sendHead; job != null && count + SendJob.MAX_SEGMENTS <= iov.length; job = job.nextJob) {
                for (int i = job.segmentIndex; i < job.segmentCount; i++) {
                    ByteBuffer segment = job.segments[i];
                    iov[count++] = segment;
                    total += segment.remaining();
                }
                if (job.hasMorePdus()) {
                    break; // its next PDU is armed only after this one is out
                }
            }
            long written;
            try {
                written = stream.write(iov, 0, count);
            } catch (IOException e) {
                close("send failed: " + e.getMessage());
                return work + 1;
            }
            work++;
            while (sendHead != null) {
                SendJob job = sendHead;
                if (!job.armedSegmentsWritten()) {
                    break;
                }
                if (lifecycle == TERMINATING && job != termReqJob) {
                    popSendHead().onDropped(); // a PDU that had started went out whole; nothing more follows it
                    continue;
                }
                if (job.armNextPdu()) {
                    break;
                }
                popSendHead().onSent();
                if (lifecycle == CLOSED) {
                    return work;
                }
            }
            if (written < total || stream.hasPendingOutput()) {
                setWriteInterest(true); // the socket is full: wait for OP_WRITE
                return work;
            }
        }
        if (sendHead == null) {
            setWriteInterest(false);
        } else if (!writeInterest && !inFlushList) {
            group.requestFlush(this); // budget spent with the socket still writable: continue next poll
        }
        return work;
    }

    private void setReadInterest(boolean on) {
        if (readInterest != on) {
            readInterest = on;
            updateInterestOps();
        }
    }

    private void setWriteInterest(boolean on) {
        if (writeInterest != on) {
            writeInterest = on;
            updateInterestOps();
        }
    }

    private void updateInterestOps() {
        if (key != null && key.isValid()) {
            key.interestOps((readInterest ? SelectionKey.OP_READ : 0) | (writeInterest ? SelectionKey.OP_WRITE : 0));
        }
    }

    // ---- errors and closing ------------------------------------------------------------------------------------

    /**
     * Ends the connection for a protocol error: a C2HTermReq quoting the offending header (which starts at
     * {@link #readIndex}), then close (NVMe/TCP 7.4.7). A PDU partly written keeps going out whole first; queued
     * ones are dropped.
     */
    private void terminate(int fes, long fei, int pduType, String what) {
        if (lifecycle >= TERMINATING) {
            return;
        }
        PEER_LOG.warnFrom(peerKey, "NVMe/TCP {}: protocol error in {} PDU: {} ({}, FEI {}); terminating the "
            + "connection", peer, PduType.name(pduType), what, TermReqPdu.fesName(fes), fei);
        int available = writeIndex - readIndex;
        int hlen = available > PduFlyweight.HLEN_OFFSET ? u8(readIndex + PduFlyweight.HLEN_OFFSET) : 0;
        int quoted = Math.min(available, Math.min(TermReqPdu.MAX_ERROR_DATA_LENGTH,
            Math.max(PduFlyweight.COMMON_HEADER_LENGTH, hlen + headerDigestLength)));
        ByteBuffer pdu = termReqJob.pdu;
        new TermReqPdu().wrap(pdu, 0).init(PduType.C2H_TERM_REQ, quoted).fatalErrorStatus(fes).fatalErrorInformation(fei);
        for (int i = 0; i < quoted; i++) {
            pdu.put(TermReqPdu.ERROR_DATA_OFFSET + i, receiveBuffer.get(readIndex + i));
        }
        termReqJob.arm(TermReqPdu.HEADER_LENGTH + quoted);

        lifecycle = TERMINATING;
        receiveState = RECV_STOPPED;
        terminationReason = "protocol error in " + PduType.name(pduType) + ": " + what;
        setReadInterest(false);
        // Keep only a PDU that is partly on the wire; the host gets nothing else before the TermReq.
        SendJob keep = sendHead != null && sendHead.armedSegmentsStarted() ? sendHead : null;
        SendJob job = keep != null ? keep.nextJob : sendHead;
        while (job != null) {
            SendJob next = job.nextJob;
            job.nextJob = null;
            job.onDropped();
            job = next;
        }
        sendHead = keep;
        sendTail = keep;
        if (keep != null) {
            keep.nextJob = null;
        }
        enqueueSend(termReqJob);
        terminationDeadlineNanos = System.nanoTime() + TERMINATION_LINGER_NANOS;
        group.addTerminating(this);
    }

    /**
     * The C2HTermReq is out. Closing now while the host's bytes sit unread would make the kernel answer with a
     * reset, which can destroy the TermReq before the host reads it; so send FIN and read until the host closes
     * (the Linux host does at once) or the linger deadline passes.
     */
    private void onTermReqSent() {
        try {
            stream.shutdownOutput();
        } catch (IOException e) {
            close(terminationReason);
            return;
        }
        receiveState = RECV_DRAIN;
        terminationDeadlineNanos = System.nanoTime() + TERMINATION_LINGER_NANOS;
        setReadInterest(true);
        drainAfterTermReq();
    }

    private void drainAfterTermReq() {
        for (int reads = 0; reads < READ_BUDGET; reads++) {
            int n;
            try {
                receiveBuffer.clear();
                n = stream.read(receiveBuffer);
            } catch (IOException e) {
                n = -1;
            }
            if (n < 0) {
                close(terminationReason);
                return;
            }
            if (n == 0) {
                return;
            }
        }
    }

    /** Closes the connection now (reactor thread). Idempotent. */
    void close(String reason) {
        if (lifecycle == CLOSED) {
            return;
        }
        lifecycle = CLOSED;
        receiveState = RECV_STOPPED;
        if (key != null) {
            key.cancel();
        }
        try {
            (handshake != null ? handshake : stream).close();
        } catch (IOException e) {
            LOG.debug("NVMe/TCP {}: error closing the socket", peer, e);
        }
        SendJob job = sendHead;
        sendHead = null;
        sendTail = null;
        while (job != null) {
            SendJob next = job.nextJob;
            job.nextJob = null;
            job.onDropped();
            job = next;
        }
        for (TcpRequest request : slots) {
            TcpRequest.State state = request.state();
            // Executing commands release their buffers when they complete; parked ones when the group drops them.
            if (state == TcpRequest.State.RECEIVING || state == TcpRequest.State.SENDING) {
                recycle(request);
            }
        }
        payloadRequest = null;
        payloadBuffer = null;
        group.unregister(this);
        pending.release();
        if (budgetCharge != 0) {
            // Every way a queue ends comes here (disconnect, protocol error, keep-alive expiry, poll group close at
            // shutdown). Commands still at the backend keep their slot's buffer reachable until they finish; the
            // memory goes with the last of them.
            group.transport.queueBufferBudget().release(budgetCharge);
            budgetCharge = 0;
        }
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
