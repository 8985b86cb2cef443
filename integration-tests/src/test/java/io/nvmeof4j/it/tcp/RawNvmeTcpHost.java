package io.nvmeof4j.it.tcp;

import io.nvmeof4j.protocol.command.NvmeStatus;

import java.io.BufferedInputStream;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A deliberately simple, blocking NVMe/TCP host: one {@link Socket} per queue, every PDU built and parsed by hand
 * from the wire reference (sections 1, 2 and 5), sharing no code with the project's transport so that the two
 * cross-check each other. Only the protocol's status constants are reused.
 *
 * <p>Every read has a timeout (SO_TIMEOUT), every write a watchdog that closes the socket when the peer stops
 * reading, and every loop a deadline. Anything the controller sends that the Linux host would reject (wire
 * reference 5, "Host receive rules") raises {@link NvmeTcpProtocolException}; a C2HTermReq raises
 * {@link C2HTermReqException}.
 *
 * <p>Use: {@link #open}, {@link #initialize} (ICReq/ICResp), {@link #connectAdmin} or {@link #connectIo}, then
 * commands either one at a time ({@link #execute}) or pipelined ({@link #submit} many, then {@link #await}).
 * Not thread-safe: one test thread drives one host.
 */
public final class RawNvmeTcpHost implements AutoCloseable {
    // PDU types (wire reference 5)
    public static final int PDU_ICREQ = 0x00;
    public static final int PDU_ICRESP = 0x01;
    public static final int PDU_H2C_TERM_REQ = 0x02;
    public static final int PDU_C2H_TERM_REQ = 0x03;
    public static final int PDU_CAPSULE_CMD = 0x04;
    public static final int PDU_CAPSULE_RESP = 0x05;
    public static final int PDU_H2C_DATA = 0x06;
    public static final int PDU_C2H_DATA = 0x07;
    public static final int PDU_R2T = 0x09;

    public static final int FLAG_HDGSTF = 0x01;
    public static final int FLAG_DDGSTF = 0x02;
    public static final int FLAG_LAST_PDU = 0x04;
    public static final int FLAG_SUCCESS = 0x08;

    public static final int ICREQ_LENGTH = 128;
    public static final int CAPSULE_CMD_HLEN = 72;
    public static final int CONTROLLER_PDU_HLEN = 24;

    // Fabrics (wire reference 2.1)
    public static final int OPC_FABRICS = 0x7F;
    public static final int FCTYPE_PROPERTY_SET = 0x00;
    public static final int FCTYPE_CONNECT = 0x01;
    public static final int FCTYPE_PROPERTY_GET = 0x04;
    public static final int CONNECT_DATA_LENGTH = 1024;
    public static final int CNTLID_DYNAMIC = 0xFFFF;
    public static final int CATTR_DISABLE_SQ_FLOW_CONTROL = 0x04;

    // Admin opcodes
    public static final int OPC_GET_LOG_PAGE = 0x02;
    public static final int OPC_IDENTIFY = 0x06;
    public static final int OPC_ABORT = 0x08;
    public static final int OPC_SET_FEATURES = 0x09;
    public static final int OPC_GET_FEATURES = 0x0A;
    public static final int OPC_ASYNC_EVENT_REQUEST = 0x0C;
    public static final int OPC_KEEP_ALIVE = 0x18;

    // NVM opcodes (wire reference 3)
    public static final int OPC_FLUSH = 0x00;
    public static final int OPC_WRITE = 0x01;
    public static final int OPC_READ = 0x02;
    public static final int OPC_COMPARE = 0x05;
    public static final int OPC_WRITE_ZEROES = 0x08;
    public static final int OPC_DSM = 0x09;

    // Properties (wire reference 2.3)
    public static final int PROP_CAP = 0x00;
    public static final int PROP_VS = 0x08;
    public static final int PROP_CC = 0x14;
    public static final int PROP_CSTS = 0x1C;
    public static final int PROP_CRTO = 0x68;
    /** CC as the Linux host writes it before enabling: IOSQES 6, IOCQES 4, CSS 0, MPS 0, EN 0 (wire reference 2.5). */
    public static final int CC_LINUX_DISABLED = 0x0046_0000;
    public static final int CC_LINUX_ENABLED = 0x0046_0001;
    /** CC.SHN = 01b, normal shutdown. */
    public static final int CC_SHN_NORMAL = 0x0000_4000;

    /** Bound on PLEN before allocating: larger than any transfer a test asks for (1 MiB) plus headers. */
    private static final long MAX_PDU_BYTES = 64L << 20;

    private static final ScheduledExecutorService WRITE_WATCHDOG = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "raw-nvme-tcp-host-write-watchdog");
        t.setDaemon(true);
        return t;
    });

    /** How a command with host-to-controller data carries it. */
    public enum DataMode {
        /** In-capsule when the data fits {@link #inCapsuleDataSize()}, else by R2T (what the Linux host does). */
        AUTO,
        /** SGL 0x01, data in the CapsuleCmd PDU. */
        IN_CAPSULE,
        /** SGL 0x5A, data sent in H2CData PDUs when the controller asks with R2T. */
        R2T
    }

    /** The controller's ICResp (wire reference 5). */
    public record IcResp(int pfv, int cpda, int dgst, long maxH2CData, Pdu pdu) {
        public boolean headerDigest() {
            return (dgst & 1) != 0;
        }

        public boolean dataDigest() {
            return (dgst & 2) != 0;
        }
    }

    /** What {@link #awaitPeerClose} saw. */
    public record PeerClose(boolean closed, long elapsedMillis, String how, byte[] bytesBeforeClose) {
    }

    private final Socket socket;
    private final DataInputStream in;
    private final OutputStream out;
    private final String peer;
    private final AtomicBoolean closed = new AtomicBoolean();
    private int readTimeoutMillis;
    private Duration commandTimeout = Duration.ofSeconds(30);
    private Duration writeTimeout = Duration.ofSeconds(30);

    private IcResp icResp;
    private int hostPduDataAlignment;
    private long c2hDataPdus;
    private boolean headerDigest;
    private boolean dataDigest;
    private long maxH2CData;
    private int h2cChunkLimit = Integer.MAX_VALUE;
    private int inCapsuleDataSize;

    private int qid = -1;
    private int cntlid = -1;
    private boolean sqFlowControlDisabled;
    private int nextCid;

    private boolean deferR2Ts;
    private final List<Pdu> deferredR2Ts = new ArrayList<>();

    private final Map<Integer, Outstanding> outstanding = new LinkedHashMap<>();
    private final Map<Integer, Completion> completed = new HashMap<>();
    private final List<Integer> completionOrder = new ArrayList<>();

    private RawNvmeTcpHost(Socket socket, int readTimeoutMillis) throws IOException {
        this.socket = socket;
        this.readTimeoutMillis = readTimeoutMillis;
        this.in = new DataInputStream(new BufferedInputStream(socket.getInputStream(), 1 << 16));
        this.out = socket.getOutputStream();
        this.peer = socket.getRemoteSocketAddress().toString();
    }

    /** Opens a TCP connection (TCP_NODELAY, as the Linux host sets it) with a 10 s read timeout. */
    public static RawNvmeTcpHost open(InetSocketAddress address) throws IOException {
        return open(address, Duration.ofSeconds(10));
    }

    public static RawNvmeTcpHost open(InetSocketAddress address, Duration readTimeout) throws IOException {
        Socket s = new Socket();
        try {
            s.setTcpNoDelay(true);
            s.setSoTimeout((int) readTimeout.toMillis());
            s.connect(address, 5_000);
            return new RawNvmeTcpHost(s, (int) readTimeout.toMillis());
        } catch (IOException e) {
            s.close();
            throw new IOException("TCP connect to " + address + " failed: " + e.getMessage(), e);
        }
    }

    /** Opens, then runs ICReq/ICResp asking for the given digests. */
    public static RawNvmeTcpHost connect(InetSocketAddress address, boolean headerDigest, boolean dataDigest)
            throws IOException {
        RawNvmeTcpHost host = open(address);
        try {
            host.initialize(headerDigest, dataDigest);
            return host;
        } catch (IOException | RuntimeException e) {
            host.close();
            throw e;
        }
    }

    // ------------------------------------------------------------------------------------------------------------
    // Connection setup

    /**
     * Sends ICReq (PFV 0, HPDA 0, MAXR2T 0 i.e. one outstanding R2T, DGST as asked) and reads ICResp. The digests
     * then in force are those the ICResp grants; a test checks that they echo the request.
     */
    public IcResp initialize(boolean wantHeaderDigest, boolean wantDataDigest) throws IOException {
        return initialize(wantHeaderDigest, wantDataDigest, 0);
    }

    /**
     * ICReq with HPDA {@code hpda} (0..31: controller data at multiples of (HPDA + 1) × 4 bytes), as hosts other than
     * Linux send; every C2HData PDU is then checked to start its data at that alignment.
     */
    public IcResp initialize(boolean wantHeaderDigest, boolean wantDataDigest, int hpda) throws IOException {
        ByteBuffer b = ByteBuffer.allocate(ICREQ_LENGTH).order(ByteOrder.LITTLE_ENDIAN);
        b.put(0, (byte) PDU_ICREQ).put(1, (byte) 0).put(2, (byte) ICREQ_LENGTH).put(3, (byte) 0).putInt(4, ICREQ_LENGTH);
        b.putShort(8, (short) 0);                                         // PFV
        b.put(10, (byte) hpda);                                           // HPDA
        this.hostPduDataAlignment = hpda;
        b.put(11, (byte) ((wantHeaderDigest ? 1 : 0) | (wantDataDigest ? 2 : 0)));
        b.putInt(12, 0);                                                  // MAXR2T, 0-based
        sendRaw(b.array());
        Pdu p = readRawPdu();
        if (p.type() == PDU_C2H_TERM_REQ) {
            throw new C2HTermReqException(p);
        }
        if (p.type() != PDU_ICRESP || p.hlen() != ICREQ_LENGTH || p.plen() != ICREQ_LENGTH) {
            throw new NvmeTcpProtocolException(peer + ": expected ICResp (type 1, HLEN 128, PLEN 128), got " + p);
        }
        icResp = new IcResp(p.u16(8), p.u8(10), p.u8(11), p.u32(12), p);
        headerDigest = icResp.headerDigest();
        dataDigest = icResp.dataDigest();
        maxH2CData = icResp.maxH2CData();
        return icResp;
    }

    /** Connect on the admin queue: QID 0, SQSIZE 31, CNTLID 0xFFFF (wire reference 2.5 step 2). */
    public Completion connectAdmin(String subnqn, HostIdentity host, int katoMillis) throws IOException {
        return connect(0, 31, 0, katoMillis, CNTLID_DYNAMIC, subnqn, host);
    }

    /** Connect of an I/O queue on this socket, KATO 0 (wire reference 2.2). */
    public Completion connectIo(String subnqn, HostIdentity host, int qid, int cntlid, int sqsize, int cattr)
            throws IOException {
        return connect(qid, sqsize, cattr, 0, cntlid, subnqn, host);
    }

    /** The Connect command with every field explicit (wire reference 2.2); data always in-capsule on TCP. */
    public Completion connect(int qid, int sqsize, int cattr, int katoMillis, int cntlid, String subnqn,
                              HostIdentity host) throws IOException {
        return connect(connectCommand(qid, sqsize, cattr, katoMillis, connectData(host, cntlid, subnqn)), qid, cntlid,
            cattr);
    }

    /**
     * Runs a Connect built by the caller (another data mode, odd fields) and, when it succeeds, records the queue's
     * QID, CNTLID and CATTR as {@link #connect(int, int, int, int, int, String, HostIdentity)} does.
     */
    public Completion connect(Command connect, int qid, int cntlid, int cattr) throws IOException {
        Completion c = execute(connect);
        if (c.isSuccess()) {
            this.qid = qid;
            this.cntlid = qid == 0 ? c.dw0() & 0xFFFF : cntlid;
            this.sqFlowControlDisabled = (cattr & CATTR_DISABLE_SQ_FLOW_CONTROL) != 0;
            if (qid == 0 && inCapsuleDataSize == 0) {
                // The Linux host's admin capsule carries up to 8 KiB (wire reference 5, "In-capsule").
                inCapsuleDataSize = 8192;
            }
        }
        return c;
    }

    public static Command connectCommand(int qid, int sqsize, int cattr, int katoMillis, byte[] data) {
        return Command.fabrics(FCTYPE_CONNECT)
            .cdw(10, (qid & 0xFFFF) << 16)                  // RECFMT 0 | QID
            .cdw(11, (sqsize & 0xFFFF) | (cattr & 0xFF) << 16)
            .cdw(12, katoMillis)
            .dataOut(data).mode(DataMode.IN_CAPSULE);
    }

    /** The 1024-byte Connect data: HOSTID @0, CNTLID @16, SUBNQN @256, HOSTNQN @512. */
    public static byte[] connectData(HostIdentity host, int cntlid, String subnqn) {
        ByteBuffer d = ByteBuffer.allocate(CONNECT_DATA_LENGTH).order(ByteOrder.LITTLE_ENDIAN);
        UUID id = host.hostid();
        // uuid_t is the UUID's 16 bytes in text order, as the Linux host copies it.
        d.order(ByteOrder.BIG_ENDIAN).putLong(0, id.getMostSignificantBits()).putLong(8, id.getLeastSignificantBits());
        d.order(ByteOrder.LITTLE_ENDIAN).putShort(16, (short) cntlid);
        putAscii(d.array(), 256, 256, subnqn);
        putAscii(d.array(), 512, 256, host.hostnqn());
        return d.array();
    }

    // ------------------------------------------------------------------------------------------------------------
    // Fabrics and admin helpers

    public Completion propertyGet(int offset, int size) throws IOException {
        return execute(Command.fabrics(FCTYPE_PROPERTY_GET).cdw(10, size == 8 ? 1 : 0).cdw(11, offset));
    }

    /** Property value; fails unless the Property Get succeeds. */
    public long getProperty(int offset, int size) throws IOException {
        Completion c = propertyGet(offset, size);
        requireSuccess(c, "Property Get 0x" + Integer.toHexString(offset));
        return size == 8 ? c.result64() : c.dw0() & 0xFFFF_FFFFL;
    }

    public Completion propertySet(int offset, int size, long value) throws IOException {
        return execute(Command.fabrics(FCTYPE_PROPERTY_SET).cdw(10, size == 8 ? 1 : 0).cdw(11, offset)
            .cdw(12, (int) value).cdw(13, (int) (value >>> 32)));
    }

    /**
     * Sets CC = 0x00460001 and polls CSTS every 10 ms until RDY = 1 (returns CSTS), CFS = 1 or the timeout
     * (both fail). Wire reference 2.5 step 3.
     */
    public int enableController(Duration timeout) throws IOException {
        requireSuccess(propertySet(PROP_CC, 4, CC_LINUX_ENABLED), "Property Set CC.EN=1");
        return pollCsts(1, 1, timeout, "CSTS.RDY=1 after CC.EN=1");
    }

    /** Polls CSTS until {@code (csts & mask) == value}; returns CSTS; fails on CFS or the timeout. */
    public int pollCsts(int mask, int value, Duration timeout, String what) throws IOException {
        long deadline = System.nanoTime() + timeout.toNanos();
        int csts;
        do {
            csts = (int) getProperty(PROP_CSTS, 4);
            if ((csts & mask) == value) {
                return csts;
            }
            if ((csts & 0x2) != 0) {
                throw new IOException(peer + ": controller fatal status (CSTS.CFS) while waiting for " + what
                    + ", CSTS=0x" + Integer.toHexString(csts));
            }
            sleep(10);
        } while (System.nanoTime() < deadline);
        throw new SocketTimeoutException(peer + ": " + what + " not reached within " + timeout.toMillis()
            + " ms, last CSTS=0x" + Integer.toHexString(csts));
    }

    public Completion identify(int cns, int nsid) throws IOException {
        return identify(cns, 0, nsid, 0, 0);
    }

    /** Identify (wire reference 2.7): CDW10 CNS | CNTID << 16, CDW11 CNSSID | CSI << 24, 4096 bytes. */
    public Completion identify(int cns, int cntid, int nsid, int cnsSpecificId, int csi) throws IOException {
        return execute(Command.of(OPC_IDENTIFY).nsid(nsid)
            .cdw(10, (cns & 0xFF) | (cntid & 0xFFFF) << 16)
            .cdw(11, (cnsSpecificId & 0xFFFF) | (csi & 0xFF) << 24)
            .dataIn(4096));
    }

    /** Get Log Page of {@code lengthBytes} at byte offset {@code lpo}, NSID 0xFFFFFFFF, RAE 0, LSP 0. */
    public Completion getLogPage(int lid, long lpo, int lengthBytes) throws IOException {
        return execute(logPageCommand(lid, 0xFFFF_FFFF, lpo, lengthBytes, false, 0));
    }

    /**
     * Get Log Page (wire reference 2.8): CDW10 LID | LSP << 8 | RAE << 15 | NUMDL << 16, CDW11 NUMDU, CDW12/13 LPO;
     * NUMD = lengthBytes / 4 - 1.
     */
    public static Command logPageCommand(int lid, int nsid, long lpo, int lengthBytes, boolean rae, int lsp) {
        if (lengthBytes <= 0 || lengthBytes % 4 != 0) {
            throw new IllegalArgumentException("log page length must be a positive multiple of 4: " + lengthBytes);
        }
        int numd = lengthBytes / 4 - 1;
        return Command.of(OPC_GET_LOG_PAGE).nsid(nsid)
            .cdw(10, (lid & 0xFF) | (lsp & 0x7F) << 8 | (rae ? 1 << 15 : 0) | (numd & 0xFFFF) << 16)
            .cdw(11, numd >>> 16)
            .cdw(12, (int) lpo).cdw(13, (int) (lpo >>> 32))
            .dataIn(lengthBytes);
    }

    public Completion setFeatures(int fid, int cdw11) throws IOException {
        return execute(Command.of(OPC_SET_FEATURES).cdw(10, fid & 0xFF).cdw(11, cdw11));
    }

    /** Get Features, SEL 0 (current). */
    public Completion getFeatures(int fid) throws IOException {
        return getFeatures(fid, 0, 0);
    }

    public Completion getFeatures(int fid, int sel, int cdw11) throws IOException {
        return execute(Command.of(OPC_GET_FEATURES).cdw(10, (fid & 0xFF) | (sel & 0x7) << 8).cdw(11, cdw11));
    }

    public Completion keepAlive() throws IOException {
        return execute(Command.of(OPC_KEEP_ALIVE));
    }

    /** Submits an Async Event Request, which the controller parks until an event; returns its CID. */
    public int submitAsyncEventRequest() throws IOException {
        return submit(Command.of(OPC_ASYNC_EVENT_REQUEST));
    }

    /** Abort (admin 0x08): CDW10 SQID | CID << 16. */
    public Completion abort(int sqid, int cid) throws IOException {
        return execute(Command.of(OPC_ABORT).cdw(10, (sqid & 0xFFFF) | (cid & 0xFFFF) << 16));
    }

    // ------------------------------------------------------------------------------------------------------------
    // NVM I/O helpers (wire reference 3); block counts are 1-based here and converted to NLB on the wire

    public static Command readCommand(int nsid, long slba, int blocks, int blockSize, boolean fua) {
        return Command.of(OPC_READ).nsid(nsid).slba(slba).cdw(12, nlb(blocks) | (fua ? 1 << 30 : 0))
            .dataIn(blocks * blockSize);
    }

    public static Command writeCommand(int nsid, long slba, int blocks, byte[] data, boolean fua) {
        return Command.of(OPC_WRITE).nsid(nsid).slba(slba).cdw(12, nlb(blocks) | (fua ? 1 << 30 : 0)).dataOut(data);
    }

    public Completion read(int nsid, long slba, int blocks, int blockSize) throws IOException {
        return execute(readCommand(nsid, slba, blocks, blockSize, false));
    }

    public Completion write(int nsid, long slba, int blocks, byte[] data, boolean fua) throws IOException {
        return execute(writeCommand(nsid, slba, blocks, data, fua));
    }

    public Completion write(int nsid, long slba, int blocks, byte[] data, boolean fua, DataMode mode)
            throws IOException {
        return execute(writeCommand(nsid, slba, blocks, data, fua).mode(mode));
    }

    public Completion compare(int nsid, long slba, int blocks, byte[] data) throws IOException {
        return execute(Command.of(OPC_COMPARE).nsid(nsid).slba(slba).cdw(12, nlb(blocks)).dataOut(data));
    }

    public Completion flush(int nsid) throws IOException {
        return execute(Command.of(OPC_FLUSH).nsid(nsid));
    }

    /** Write Zeroes: CDW12 NLB | DEAC bit 25 | FUA bit 30. */
    public Completion writeZeroes(int nsid, long slba, int blocks, boolean deallocate, boolean fua) throws IOException {
        return execute(Command.of(OPC_WRITE_ZEROES).nsid(nsid).slba(slba)
            .cdw(12, nlb(blocks) | (deallocate ? 1 << 25 : 0) | (fua ? 1 << 30 : 0)));
    }

    /**
     * Dataset Management with the given 16-byte ranges {slba, blocks}: CDW10 NR (0-based), CDW11 attributes
     * (bit 2 AD = deallocate).
     */
    public Completion datasetManagement(int nsid, int attributes, long[][] ranges) throws IOException {
        ByteBuffer d = ByteBuffer.allocate(16 * ranges.length).order(ByteOrder.LITTLE_ENDIAN);
        for (int i = 0; i < ranges.length; i++) {
            d.putInt(i * 16, 0).putInt(i * 16 + 4, (int) ranges[i][1]).putLong(i * 16 + 8, ranges[i][0]);
        }
        return execute(Command.of(OPC_DSM).nsid(nsid).cdw(10, ranges.length - 1).cdw(11, attributes).dataOut(d.array()));
    }

    private static int nlb(int blocks) {
        if (blocks < 1 || blocks > 0x10000) {
            throw new IllegalArgumentException("block count " + blocks + " outside 1..65536");
        }
        return (blocks - 1) & 0xFFFF;
    }

    // ------------------------------------------------------------------------------------------------------------
    // Command engine

    /** Submits and waits for the completion. */
    public Completion execute(Command command) throws IOException {
        return await(submit(command));
    }

    /** Sends the command capsule (with in-capsule data when the mode says so); returns the CID. */
    public int submit(Command command) throws IOException {
        int cid = command.cid >= 0 ? command.cid : allocateCid();
        if (outstanding.containsKey(cid) || completed.containsKey(cid)) {
            throw new IllegalStateException("CID " + cid + " is still in use on " + peer);
        }
        boolean inCapsule = command.dataOut != null && command.dataOut.length > 0
            && (command.mode == DataMode.IN_CAPSULE
                || (command.mode == DataMode.AUTO && command.dataOut.length <= inCapsuleDataSize));
        byte[] sqe = sqeBytes(command, cid, inCapsule);
        outstanding.put(cid, new Outstanding(cid, command, inCapsule));
        sendRaw(buildCapsuleCmdPdu(sqe, inCapsule ? command.dataOut : null));
        return cid;
    }

    /** The 64-byte SQE this host would send for {@code command} (PSDT 01b, SGL per data mode, overrides applied). */
    public static byte[] sqeBytes(Command command, int cid, boolean inCapsule) {
        ByteBuffer s = ByteBuffer.wrap(command.sqe.array().clone()).order(ByteOrder.LITTLE_ENDIAN);
        s.put(1, (byte) (command.flags >= 0 ? command.flags : 0x40));     // PSDT 01b: SGL (wire reference 1.1)
        s.putShort(2, (short) cid);
        long length;
        int id;
        if (command.dataOut != null && command.dataOut.length > 0) {
            length = command.dataOut.length;
            id = inCapsule ? 0x01 : 0x5A;
        } else {
            length = command.dataInLength;
            id = 0x5A;                                                    // also for no data: length 0, as Linux
        }
        if (command.sglId >= 0) {
            id = command.sglId;
        }
        if (command.sglLength >= 0) {
            length = command.sglLength;
        }
        s.putLong(24, 0L);                                                // address / ICDOFF 0
        s.putInt(32, (int) length);
        s.put(36, (byte) 0).put(37, (byte) 0).put(38, (byte) 0);
        s.put(39, (byte) id);
        return s.array();
    }

    /** Waits for the completion of {@code cid}, answering R2Ts and collecting C2HData meanwhile. */
    public Completion await(int cid) throws IOException {
        long deadline = System.nanoTime() + commandTimeout.toNanos();
        while (!completed.containsKey(cid)) {
            if (!outstanding.containsKey(cid)) {
                throw new IllegalStateException("CID " + cid + " was never submitted on " + peer);
            }
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                throw new SocketTimeoutException(peer + ": no completion for CID " + cid + " within "
                    + commandTimeout.toMillis() + " ms (outstanding " + outstanding.keySet() + ")");
            }
            processNextPdu(Duration.ofNanos(Math.min(left, TimeUnit.MILLISECONDS.toNanos(readTimeoutMillis))));
        }
        completionOrder.remove(Integer.valueOf(cid));
        return completed.remove(cid);
    }

    /** Waits for every CID, in any arrival order; returns the completions in the order of {@code cids}. */
    public List<Completion> awaitAll(List<Integer> cids) throws IOException {
        List<Completion> result = new ArrayList<>(cids.size());
        for (int cid : cids) {
            result.add(await(cid));
        }
        return result;
    }

    /**
     * Processes whatever the controller sends during {@code duration} and returns the completions that arrived
     * (removed from the pending set), in arrival order. Used to check that something stays parked.
     */
    public List<Completion> drainFor(Duration duration) throws IOException {
        long deadline = System.nanoTime() + duration.toNanos();
        for (long left = duration.toNanos(); left > 0; left = deadline - System.nanoTime()) {
            processNextPdu(Duration.ofNanos(left));
        }
        List<Completion> arrived = new ArrayList<>();
        for (int cid : completionOrder) {
            arrived.add(completed.remove(cid));
        }
        completionOrder.clear();
        return arrived;
    }

    /** A completion that already arrived for {@code cid} (removed), or null; reads nothing from the socket. */
    public Completion takeCompletion(int cid) {
        completionOrder.remove(Integer.valueOf(cid));
        return completed.remove(cid);
    }

    /** The unanswered commands and how far their data got, for failure messages. */
    public String describeOutstanding() {
        StringBuilder sb = new StringBuilder("[");
        for (Outstanding o : outstanding.values()) {
            if (sb.length() > 1) {
                sb.append(", ");
            }
            sb.append(String.format("CID %d opcode 0x%02x", o.cid, o.command.opcode()));
            if (o.command.dataOut != null) {
                long held = deferredR2Ts.stream().filter(p -> p.u16(8) == o.cid).count();
                sb.append(String.format(" %d B out %s, %d R2T(s) answered, %d held, %d B sent",
                    o.command.dataOut.length, o.inCapsule ? "in-capsule" : "by R2T", o.r2tCount, held, o.sent));
            }
            if (o.dataIn != null) {
                sb.append(String.format(" %d of %d B in", o.received, o.dataIn.length));
            }
        }
        return sb.append(']').toString();
    }

    /**
     * While on, R2Ts are kept unanswered (the commands stay in flight at the controller, waiting for data) until
     * {@link #releaseDeferredR2Ts()}.
     */
    public RawNvmeTcpHost deferR2Ts(boolean defer) {
        this.deferR2Ts = defer;
        return this;
    }

    public int deferredR2TCount() {
        return deferredR2Ts.size();
    }

    /** Stops deferring and answers the R2Ts kept so far with their H2CData. */
    public void releaseDeferredR2Ts() throws IOException {
        deferR2Ts = false;
        List<Pdu> kept = new ArrayList<>(deferredR2Ts);
        deferredR2Ts.clear();
        for (Pdu p : kept) {
            onR2T(p);
        }
    }

    /** True while {@code cid} has been submitted and not yet answered. */
    public boolean isOutstanding(int cid) {
        return outstanding.containsKey(cid);
    }

    /**
     * Reads one PDU (waiting at most {@code firstByteWait} for it to start) and acts on it. Returns false when
     * nothing arrived in time.
     */
    private boolean processNextPdu(Duration firstByteWait) throws IOException {
        Pdu p = readPdu(firstByteWait);
        if (p == null) {
            return false;
        }
        switch (p.type()) {
            case PDU_CAPSULE_RESP -> onCapsuleResp(p);
            case PDU_C2H_DATA -> onC2HData(p);
            case PDU_R2T -> {
                if (deferR2Ts) {
                    deferredR2Ts.add(p);
                } else {
                    onR2T(p);
                }
            }
            case PDU_C2H_TERM_REQ -> throw new C2HTermReqException(p);
            default -> throw new NvmeTcpProtocolException(peer + ": unexpected PDU " + p);
        }
        return true;
    }

    private void onCapsuleResp(Pdu p) throws IOException {
        int dw0 = (int) p.u32(8);
        int dw1 = (int) p.u32(12);
        int sqhd = p.u16(16);
        int sqid = p.u16(18);
        int cid = p.u16(20);
        int status = p.u16(22);
        Outstanding o = outstanding.remove(cid);
        if (o == null) {
            throw new NvmeTcpProtocolException(peer + ": CapsuleResp for CID " + cid + " which is not outstanding"
                + " (outstanding " + outstanding.keySet() + "): " + p);
        }
        byte[] data = o.dataIn == null ? new byte[0]
            : o.received == o.dataIn.length ? o.dataIn : java.util.Arrays.copyOf(o.dataIn, o.received);
        if (o.dataIn != null && o.received > 0 && o.received != o.dataIn.length) {
            throw new NvmeTcpProtocolException(peer + ": CID " + cid + " completed ("
                + NvmeStatus.describe(NvmeStatus.fromStatusField(status)) + ") after " + o.received + " of "
                + o.dataIn.length + " data bytes");
        }
        complete(new Completion(cid, sqid, sqhd, dw0, dw1, status, data, false, o.r2tCount, o.h2cPdus));
    }

    private void onC2HData(Pdu p) throws IOException {
        int cccid = p.u16(8);
        long datao = p.u32(12);
        long datal = p.u32(16);
        Outstanding o = outstanding.get(cccid);
        if (o == null || o.dataIn == null) {
            throw new NvmeTcpProtocolException(peer + ": C2HData for CID " + cccid
                + (o == null ? " which is not outstanding" : " which has no controller-to-host data") + ": " + p);
        }
        if (datal != p.dataLength()) {
            throw new NvmeTcpProtocolException(peer + ": C2HData DATAL " + datal + " but " + p.dataLength()
                + " data bytes in the PDU: " + p);
        }
        // The Linux host ignores DATAO and fills sequentially, so data must come in order (wire reference 5).
        if (datao != o.received) {
            throw new NvmeTcpProtocolException(peer + ": C2HData for CID " + cccid + " at DATAO " + datao
                + ", expected " + o.received + " (in order)");
        }
        if (datao + datal > o.dataIn.length) {
            throw new NvmeTcpProtocolException(peer + ": C2HData for CID " + cccid + " DATAO " + datao + " + DATAL "
                + datal + " beyond the " + o.dataIn.length + "-byte transfer");
        }
        System.arraycopy(p.data(), 0, o.dataIn, (int) datao, (int) datal);
        o.received += (int) datal;
        boolean last = (p.flags() & FLAG_LAST_PDU) != 0;
        boolean success = (p.flags() & FLAG_SUCCESS) != 0;
        if (last && o.received != o.dataIn.length) {
            throw new NvmeTcpProtocolException(peer + ": LAST_PDU C2HData for CID " + cccid + " after " + o.received
                + " of " + o.dataIn.length + " bytes");
        }
        if (success) {
            if (!last) {
                throw new NvmeTcpProtocolException(peer + ": C2HData SUCCESS without LAST_PDU: " + p);
            }
            if (!sqFlowControlDisabled) {
                throw new NvmeTcpProtocolException(peer + ": C2HData SUCCESS on a queue connected without CATTR "
                    + "bit 2 (SQ flow control still on): " + p);
            }
            outstanding.remove(cccid);
            complete(new Completion(cccid, Math.max(qid, 0), 0xFFFF, 0, 0, 0, o.dataIn, true, o.r2tCount, o.h2cPdus));
        }
    }

    private void onR2T(Pdu p) throws IOException {
        int cccid = p.u16(8);
        int ttag = p.u16(10);
        long r2to = p.u32(12);
        long r2tl = p.u32(16);
        Outstanding o = outstanding.get(cccid);
        if (o == null || o.command.dataOut == null || o.inCapsule) {
            throw new NvmeTcpProtocolException(peer + ": R2T for CID " + cccid
                + (o == null ? " which is not outstanding" : " which has no data left to send") + ": " + p);
        }
        int total = o.command.dataOut.length;
        // The checks the Linux host makes on an R2T (nvme_tcp_handle_r2t).
        if (r2tl == 0 || r2to < o.sent || r2to + r2tl > total) {
            throw new NvmeTcpProtocolException(peer + ": R2T for CID " + cccid + " asks R2TO " + r2to + " R2TL "
                + r2tl + " with " + o.sent + " of " + total + " bytes sent");
        }
        o.r2tCount++;
        long chunk = Math.min(maxH2CData > 0 ? maxH2CData : Long.MAX_VALUE, h2cChunkLimit);
        long end = r2to + r2tl;
        for (long off = r2to; off < end; off += chunk) {
            int len = (int) Math.min(chunk, end - off);
            sendRaw(buildH2CDataPdu(cccid, ttag, (int) off, o.command.dataOut, (int) off, len, off + len == end));
            o.h2cPdus++;
        }
        o.sent = end;
    }

    private void complete(Completion c) {
        completed.put(c.cid(), c);
        completionOrder.add(c.cid());
    }

    private int allocateCid() {
        for (int i = 0; i < 0x10000; i++) {
            int cid = nextCid;
            nextCid = (nextCid + 1) & 0xFFFF;
            if (!outstanding.containsKey(cid) && !completed.containsKey(cid)) {
                return cid;
            }
        }
        throw new IllegalStateException("no free CID on " + peer);
    }

    // ------------------------------------------------------------------------------------------------------------
    // PDU building

    /**
     * CapsuleCmd (wire reference 5): HLEN 72, the SQE at 8, HDGST when negotiated, in-capsule data at PDO =
     * 72 (+4) with DDGST when negotiated; PDO 0 without data.
     */
    public byte[] buildCapsuleCmdPdu(byte[] sqe, byte[] data) {
        boolean hasData = data != null && data.length > 0;
        int hd = headerDigest ? 4 : 0;
        int dd = hasData && dataDigest ? 4 : 0;
        int pdo = hasData ? CAPSULE_CMD_HLEN + hd : 0;
        int plen = CAPSULE_CMD_HLEN + hd + (hasData ? data.length + dd : 0);
        byte[] b = new byte[plen];
        b[0] = (byte) PDU_CAPSULE_CMD;
        b[1] = (byte) ((headerDigest ? FLAG_HDGSTF : 0) | (dd != 0 ? FLAG_DDGSTF : 0));
        b[2] = (byte) CAPSULE_CMD_HLEN;
        b[3] = (byte) pdo;
        putLe32(b, 4, plen);
        System.arraycopy(sqe, 0, b, 8, 64);
        if (headerDigest) {
            putLe32(b, CAPSULE_CMD_HLEN, Pdu.crc32c(b, 0, CAPSULE_CMD_HLEN));
        }
        if (hasData) {
            System.arraycopy(data, 0, b, pdo, data.length);
            if (dd != 0) {
                putLe32(b, pdo + data.length, Pdu.crc32c(data, 0, data.length));
            }
        }
        return b;
    }

    /** H2CData (wire reference 5): @8 CCCID, @10 TTAG, @12 DATAO, @16 DATAL; LAST_PDU on the last of an R2T. */
    public byte[] buildH2CDataPdu(int cccid, int ttag, int datao, byte[] src, int srcOffset, int length, boolean last) {
        int hd = headerDigest ? 4 : 0;
        int dd = dataDigest ? 4 : 0;
        int pdo = CONTROLLER_PDU_HLEN + hd;
        int plen = pdo + length + dd;
        byte[] b = new byte[plen];
        b[0] = (byte) PDU_H2C_DATA;
        b[1] = (byte) ((headerDigest ? FLAG_HDGSTF : 0) | (dataDigest ? FLAG_DDGSTF : 0) | (last ? FLAG_LAST_PDU : 0));
        b[2] = (byte) CONTROLLER_PDU_HLEN;
        b[3] = (byte) pdo;
        putLe32(b, 4, plen);
        putLe16(b, 8, cccid);
        putLe16(b, 10, ttag);
        putLe32(b, 12, datao);
        putLe32(b, 16, length);
        if (headerDigest) {
            putLe32(b, CONTROLLER_PDU_HLEN, Pdu.crc32c(b, 0, CONTROLLER_PDU_HLEN));
        }
        System.arraycopy(src, srcOffset, b, pdo, length);
        if (dataDigest) {
            putLe32(b, pdo + length, Pdu.crc32c(b, pdo, length));
        }
        return b;
    }

    // ------------------------------------------------------------------------------------------------------------
    // Raw access

    /** Writes bytes as they are; the write is abandoned (socket closed) when it blocks past the write timeout. */
    public void sendRaw(byte[] bytes) throws IOException {
        AtomicBoolean fired = new AtomicBoolean();
        ScheduledFuture<?> watchdog = WRITE_WATCHDOG.schedule(() -> {
            fired.set(true);
            closeQuietly();
        }, writeTimeout.toMillis(), TimeUnit.MILLISECONDS);
        try {
            out.write(bytes);
            out.flush();
        } catch (IOException e) {
            if (fired.get()) {
                throw new SocketTimeoutException(peer + ": write of " + bytes.length + " bytes blocked longer than "
                    + writeTimeout.toMillis() + " ms (peer not reading)");
            }
            throw e;
        } finally {
            watchdog.cancel(false);
        }
    }

    /** Reads the next PDU as it is, with only framing (PLEN) applied; waits at most the read timeout. */
    public Pdu readRawPdu() throws IOException {
        return readRawPdu(Duration.ofMillis(readTimeoutMillis));
    }

    /** Like {@link #readRawPdu()} but waits at most {@code firstByteWait} for the PDU to start; null if none did. */
    public Pdu readRawPdu(Duration firstByteWait) throws IOException {
        int first;
        socket.setSoTimeout((int) Math.max(1, firstByteWait.toMillis()));
        try {
            first = in.read();
        } catch (SocketTimeoutException e) {
            return null;
        } finally {
            socket.setSoTimeout(readTimeoutMillis);
        }
        if (first < 0) {
            throw new EOFException(peer + ": connection closed by the controller, outstanding "
                + describeOutstanding());
        }
        byte[] ch = new byte[8];
        ch[0] = (byte) first;
        readFully(ch, 1, 7);
        long plen = Pdu.le32(ch, 4) & 0xFFFF_FFFFL;
        if (plen < 8 || plen > MAX_PDU_BYTES) {
            throw new NvmeTcpProtocolException(peer + ": PDU with PLEN " + plen + ", header "
                + java.util.HexFormat.of().formatHex(ch));
        }
        byte[] raw = new byte[(int) plen];
        System.arraycopy(ch, 0, raw, 0, 8);
        readFully(raw, 8, (int) plen - 8);
        return Pdu.parse(raw);
    }

    /**
     * Reads the next PDU and checks what the Linux host checks on every controller PDU after ICResp (wire reference
     * 5): an allowed type, HLEN 24, digests exactly as negotiated and correct, CPDA-0 data offset. A C2HTermReq is
     * returned as is. Null when nothing started within {@code firstByteWait}.
     */
    public Pdu readPdu(Duration firstByteWait) throws IOException {
        Pdu p = readRawPdu(firstByteWait);
        if (p == null || p.type() == PDU_C2H_TERM_REQ) {
            return p;
        }
        String problem = null;
        int type = p.type();
        if (type != PDU_CAPSULE_RESP && type != PDU_C2H_DATA && type != PDU_R2T) {
            problem = "PDU type 0x" + Integer.toHexString(type) + " is not one a controller may send";
        } else if (p.malformation() != null) {
            problem = p.malformation();
        } else if (p.hlen() != CONTROLLER_PDU_HLEN) {
            problem = "HLEN " + p.hlen() + " (must be 24)";
        } else if (p.headerDigestPresent() != headerDigest) {
            problem = "HDGSTF " + p.headerDigestPresent() + " but header digest negotiated " + headerDigest;
        } else if (!p.headerDigestOk()) {
            problem = "header digest mismatch";
        } else if (type == PDU_C2H_DATA) {
            // Header (+ digest), padded up to the HPDA we asked for (NVMe/TCP 3.6.2.3: the padding is not data).
            int alignment = (hostPduDataAlignment + 1) * 4;
            int expectedPdo = (CONTROLLER_PDU_HLEN + (headerDigest ? 4 : 0) + alignment - 1) / alignment * alignment;
            c2hDataPdus++;
            if (p.pdo() != expectedPdo) {
                problem = "C2HData PDO " + p.pdo() + " (HPDA " + hostPduDataAlignment + " means " + expectedPdo + ")";
            } else if (p.dataDigestPresent() != dataDigest) {
                problem = "DDGSTF " + p.dataDigestPresent() + " but data digest negotiated " + dataDigest;
            } else if (!p.dataDigestOk()) {
                problem = "data digest mismatch";
            }
        } else if (p.pdo() != 0 || p.plen() != CONTROLLER_PDU_HLEN + (headerDigest ? 4 : 0)) {
            problem = "PDO " + p.pdo() + " / PLEN " + p.plen() + " on a PDU without data";
        }
        if (problem != null) {
            throw new NvmeTcpProtocolException(peer + ": " + problem + ": " + p);
        }
        return p;
    }

    /**
     * Waits up to {@code within} for the controller to close the connection (EOF or reset), discarding whatever
     * it sends meanwhile (kept in the result).
     */
    public PeerClose awaitPeerClose(Duration within) throws IOException {
        long start = System.nanoTime();
        long deadline = start + within.toNanos();
        java.io.ByteArrayOutputStream seen = new java.io.ByteArrayOutputStream();
        byte[] buf = new byte[8192];
        try {
            while (true) {
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    return new PeerClose(false, elapsedMillis(start), "still open", seen.toByteArray());
                }
                socket.setSoTimeout((int) Math.max(1, TimeUnit.NANOSECONDS.toMillis(left)));
                int n;
                try {
                    n = in.read(buf);
                } catch (SocketTimeoutException e) {
                    continue;
                }
                if (n < 0) {
                    return new PeerClose(true, elapsedMillis(start), "EOF", seen.toByteArray());
                }
                if (seen.size() < (1 << 20)) {
                    seen.write(buf, 0, n);
                }
            }
        } catch (SocketException e) {
            if (closed.get()) {
                throw e;
            }
            return new PeerClose(true, elapsedMillis(start), "reset: " + e.getMessage(), seen.toByteArray());
        } finally {
            if (!socket.isClosed()) {
                socket.setSoTimeout(readTimeoutMillis);
            }
        }
    }

    private void readFully(byte[] b, int off, int len) throws IOException {
        try {
            in.readFully(b, off, len);
        } catch (SocketTimeoutException e) {
            throw new SocketTimeoutException(peer + ": PDU stalled: " + len + " bytes not received within "
                + readTimeoutMillis + " ms");
        } catch (EOFException e) {
            throw new EOFException(peer + ": connection closed in the middle of a PDU");
        }
    }

    // ------------------------------------------------------------------------------------------------------------
    // Accessors and settings

    /** C2HData PDUs received and checked so far (PDO alignment included). */
    public long c2hDataPduCount() {
        return c2hDataPdus;
    }

    public IcResp icResp() {
        return icResp;
    }

    public boolean headerDigest() {
        return headerDigest;
    }

    public boolean dataDigest() {
        return dataDigest;
    }

    public long maxH2CData() {
        return maxH2CData;
    }

    /** Controller ID from the admin Connect (or the one given for an I/O Connect); -1 before. */
    public int cntlid() {
        return cntlid;
    }

    public int qid() {
        return qid;
    }

    /** Largest write sent in-capsule in {@link DataMode#AUTO}; 8192 on an admin queue, 0 (always R2T) otherwise. */
    public int inCapsuleDataSize() {
        return inCapsuleDataSize;
    }

    public RawNvmeTcpHost inCapsuleDataSize(int bytes) {
        this.inCapsuleDataSize = bytes;
        return this;
    }

    /** Splits H2CData below MAXH2CDATA too, to exercise several PDUs per R2T. */
    public RawNvmeTcpHost h2cChunkLimit(int bytes) {
        this.h2cChunkLimit = bytes;
        return this;
    }

    public RawNvmeTcpHost commandTimeout(Duration timeout) {
        this.commandTimeout = timeout;
        return this;
    }

    public RawNvmeTcpHost readTimeout(Duration timeout) throws SocketException {
        this.readTimeoutMillis = (int) timeout.toMillis();
        socket.setSoTimeout(readTimeoutMillis);
        return this;
    }

    public String peer() {
        return peer;
    }

    public boolean isClosed() {
        return socket.isClosed();
    }

    @Override
    public void close() {
        closeQuietly();
    }

    private void closeQuietly() {
        if (closed.compareAndSet(false, true)) {
            try {
                socket.close();
            } catch (IOException ignored) {
                // closing a socket we own; nothing to do
            }
        }
    }

    // ------------------------------------------------------------------------------------------------------------
    // Little helpers

    public static void requireSuccess(Completion c, String what) throws IOException {
        if (!c.isSuccess()) {
            throw new IOException(what + " failed: " + c);
        }
    }

    public static void putAscii(byte[] b, int offset, int fieldLength, String text) {
        byte[] t = text.getBytes(StandardCharsets.UTF_8);
        if (t.length >= fieldLength) {
            throw new IllegalArgumentException("'" + text + "' does not fit " + fieldLength + " bytes");
        }
        System.arraycopy(t, 0, b, offset, t.length);
    }

    static void putLe16(byte[] b, int offset, int v) {
        b[offset] = (byte) v;
        b[offset + 1] = (byte) (v >>> 8);
    }

    static void putLe32(byte[] b, int offset, int v) {
        b[offset] = (byte) v;
        b[offset + 1] = (byte) (v >>> 8);
        b[offset + 2] = (byte) (v >>> 16);
        b[offset + 3] = (byte) (v >>> 24);
    }

    private static long elapsedMillis(long startNanos) {
        return TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - startNanos);
    }

    private static void sleep(long millis) throws IOException {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new java.io.InterruptedIOException("interrupted");
        }
    }

    @Override
    public String toString() {
        return "RawNvmeTcpHost[" + peer + " qid=" + qid + " cntlid=" + cntlid + "]";
    }

    // ------------------------------------------------------------------------------------------------------------

    /** One command to send: an SQE image plus its data and, for malformed-input tests, overrides. */
    public static final class Command {
        private final ByteBuffer sqe = ByteBuffer.allocate(64).order(ByteOrder.LITTLE_ENDIAN);
        private byte[] dataOut;
        private int dataInLength;
        private DataMode mode = DataMode.AUTO;
        private int cid = -1;
        private int flags = -1;
        private int sglId = -1;
        private long sglLength = -1;

        private Command() {
        }

        public static Command of(int opcode) {
            Command c = new Command();
            c.sqe.put(0, (byte) opcode);
            return c;
        }

        /** A Fabrics command: opcode 0x7F, FCTYPE at byte 4. */
        public static Command fabrics(int fctype) {
            Command c = of(OPC_FABRICS);
            c.sqe.put(4, (byte) fctype);
            return c;
        }

        public int opcode() {
            return sqe.get(0) & 0xFF;
        }

        public Command nsid(int nsid) {
            sqe.putInt(4, nsid);
            return this;
        }

        /** Command dword 2, 3 or 10..15. */
        public Command cdw(int n, int value) {
            int offset = n == 2 || n == 3 ? 8 + (n - 2) * 4 : 40 + (n - 10) * 4;
            if (!(n == 2 || n == 3 || (n >= 10 && n <= 15))) {
                throw new IllegalArgumentException("CDW" + n);
            }
            sqe.putInt(offset, value);
            return this;
        }

        /** SLBA in CDW10-11. */
        public Command slba(long slba) {
            sqe.putLong(40, slba);
            return this;
        }

        /** Any byte of the SQE (bytes 1-3 and the SGL are overwritten by submit unless overridden). */
        public Command sqeByte(int offset, int value) {
            sqe.put(offset, (byte) value);
            return this;
        }

        public Command dataOut(byte[] data) {
            this.dataOut = data;
            return this;
        }

        public Command dataIn(int length) {
            this.dataInLength = length;
            return this;
        }

        public Command mode(DataMode mode) {
            this.mode = mode;
            return this;
        }

        public Command cid(int cid) {
            this.cid = cid & 0xFFFF;
            return this;
        }

        /** SQE byte 1 (FUSE/PSDT) instead of 0x40. */
        public Command flags(int flags) {
            this.flags = flags & 0xFF;
            return this;
        }

        /** SGL1 identifier instead of 0x01/0x5A. */
        public Command sglId(int id) {
            this.sglId = id & 0xFF;
            return this;
        }

        /** SGL1 length instead of the data length. */
        public Command sglLength(long length) {
            this.sglLength = length;
            return this;
        }
    }

    private static final class Outstanding {
        final int cid;
        final Command command;
        final boolean inCapsule;
        final byte[] dataIn;
        int received;
        long sent;
        int r2tCount;
        int h2cPdus;

        Outstanding(int cid, Command command, boolean inCapsule) {
            this.cid = cid;
            this.command = command;
            this.inCapsule = inCapsule;
            this.dataIn = command.dataInLength > 0 ? new byte[command.dataInLength] : null;
        }
    }

}
