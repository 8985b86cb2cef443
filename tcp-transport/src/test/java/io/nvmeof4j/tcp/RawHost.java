package io.nvmeof4j.tcp;

import io.nvmeof4j.protocol.spi.TransportAddress;

import java.io.DataInputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.zip.CRC32C;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * An NVMe/TCP host made of bytes: every PDU is built by hand from the wire reference, so tests check the target
 * against the protocol, not against our own codecs. Blocking socket with a 5 s read timeout.
 */
final class RawHost implements AutoCloseable {
    static final int TIMEOUT_MILLIS = 5_000;

    // PDU types and flags, spelled out again on purpose.
    static final int IC_REQ = 0x00;
    static final int IC_RESP = 0x01;
    static final int H2C_TERM_REQ = 0x02;
    static final int C2H_TERM_REQ = 0x03;
    static final int CAPSULE_CMD = 0x04;
    static final int CAPSULE_RESP = 0x05;
    static final int H2C_DATA = 0x06;
    static final int C2H_DATA = 0x07;
    static final int R2T = 0x09;
    static final int HDGSTF = 0x01;
    static final int DDGSTF = 0x02;
    static final int LAST_PDU = 0x04;
    static final int SUCCESS = 0x08;

    private final Socket socket;
    private final DataInputStream in;
    private final OutputStream out;
    boolean headerDigest;
    boolean dataDigest;

    private RawHost(Socket socket) throws IOException {
        this.socket = socket;
        this.in = new DataInputStream(new java.io.BufferedInputStream(socket.getInputStream(), 1 << 16));
        this.out = socket.getOutputStream();
    }

    static RawHost connect(TransportAddress address) throws IOException {
        Socket socket = new Socket();
        socket.setTcpNoDelay(true);
        socket.setSoTimeout(TIMEOUT_MILLIS);
        socket.connect(new InetSocketAddress(address.traddr(), address.port()), TIMEOUT_MILLIS);
        return new RawHost(socket);
    }

    static ByteBuffer le(byte[] bytes) {
        return ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
    }

    static int crc32c(byte[] bytes, int offset, int length) {
        CRC32C crc = new CRC32C();
        crc.update(bytes, offset, length);
        return (int) crc.getValue();
    }

    // ---- raw I/O ----------------------------------------------------------------------------------------------

    void send(byte[] bytes) throws IOException {
        out.write(bytes);
        out.flush();
    }

    /** Reads exactly {@code into.length} bytes. */
    void readExactly(byte[] into) throws IOException {
        in.readFully(into);
    }

    /** Reads one PDU whole, checking the digests its flags announce. */
    Pdu readPdu() throws IOException {
        byte[] head = new byte[8];
        in.readFully(head);
        long plen = le(head).getInt(4) & 0xFFFF_FFFFL;
        assertThat(plen).as("PLEN").isBetween(8L, 64L << 20);
        byte[] raw = new byte[(int) plen];
        System.arraycopy(head, 0, raw, 0, 8);
        in.readFully(raw, 8, raw.length - 8);
        Pdu pdu = new Pdu(raw);
        if ((pdu.flags() & HDGSTF) != 0) {
            assertThat(pdu.u32(pdu.hlen())).as("header digest of " + pdu)
                .isEqualTo(crc32c(raw, 0, pdu.hlen()) & 0xFFFF_FFFFL);
        }
        if ((pdu.flags() & DDGSTF) != 0) {
            int dataLength = pdu.dataLength();
            assertThat(pdu.u32(pdu.pdo() + dataLength)).as("data digest of " + pdu)
                .isEqualTo(crc32c(raw, pdu.pdo(), dataLength) & 0xFFFF_FFFFL);
        }
        return pdu;
    }

    /** True when the target closed the connection (EOF or reset) within the timeout, after any pending bytes. */
    boolean closedByTarget() throws IOException {
        byte[] sink = new byte[4096];
        long deadline = System.nanoTime() + TIMEOUT_MILLIS * 1_000_000L;
        while (System.nanoTime() < deadline) {
            try {
                if (in.read(sink) < 0) {
                    return true;
                }
            } catch (SocketTimeoutException e) {
                return false;
            } catch (IOException e) {
                return true; // connection reset
            }
        }
        return false;
    }

    /** True when nothing arrives (and nothing is buffered) within {@code millis}: the target has no more to say. */
    boolean silentFor(int millis) throws IOException {
        if (in.available() > 0) {
            return false;
        }
        socket.setSoTimeout(millis);
        try {
            in.read(); // a byte, or the end of the stream: either way not silent
            return false;
        } catch (SocketTimeoutException e) {
            return true;
        } finally {
            socket.setSoTimeout(TIMEOUT_MILLIS);
        }
    }

    // ---- connection set-up ------------------------------------------------------------------------------------

    static byte[] icReq(int pfv, int hpda, int digest, int maxR2T) {
        byte[] pdu = new byte[128];
        le(pdu).put(0, (byte) IC_REQ).put(1, (byte) 0).put(2, (byte) 128).put(3, (byte) 0).putInt(4, 128)
            .putShort(8, (short) pfv).put(10, (byte) hpda).put(11, (byte) digest).putInt(12, maxR2T);
        return pdu;
    }

    /** ICReq/ICResp; remembers the digests the target granted. */
    Pdu initialize(int hpda, int digest) throws IOException {
        send(icReq(0, hpda, digest, 0));
        Pdu icResp = readPdu();
        assertThat(icResp.type()).isEqualTo(IC_RESP);
        headerDigest = (icResp.u8(11) & 1) != 0;
        dataDigest = (icResp.u8(11) & 2) != 0;
        return icResp;
    }

    /** ICReq, then Fabrics Connect for {@code qid} with {@code sqSize} entries (1-based); asserts success. */
    Pdu initializeAndConnect(int digest, int qid, int sqSize, boolean disableSqFlowControl) throws IOException {
        initialize(0, digest);
        sendCapsule(connectSqe(0x7000 | qid, qid, sqSize, disableSqFlowControl), new byte[1024]);
        Pdu response = readPdu();
        assertThat(response.type()).isEqualTo(CAPSULE_RESP);
        assertThat(response.cqeStatus()).as("Connect status").isZero();
        assertThat(response.cqeDw0()).isEqualTo(RamQueueHandlerFactory.CNTLID);
        return response;
    }

    // ---- commands ---------------------------------------------------------------------------------------------

    static byte[] sqe(int opcode, int cid, int nsid, int sglId, long sglLength) {
        byte[] sqe = new byte[64];
        le(sqe).put(0, (byte) opcode).put(1, (byte) 0x40).putShort(2, (short) cid).putInt(4, nsid)
            .putLong(24, 0L).putInt(32, (int) sglLength).put(39, (byte) sglId);
        return sqe;
    }

    static byte[] connectSqe(int cid, int qid, int sqSize, boolean disableSqFlowControl) {
        byte[] sqe = sqe(0x7F, cid, 0, 0x01, 1024);
        le(sqe).put(4, (byte) 0x01) // FCTYPE Connect
            .putShort(40, (short) 0).putShort(42, (short) qid).putShort(44, (short) (sqSize - 1))
            .put(46, (byte) (disableSqFlowControl ? 0x04 : 0));
        return sqe;
    }

    /** NVM Read/Write of {@code length} bytes at {@code slba} (512-byte LBAs), SGL given. */
    static byte[] ioSqe(int opcode, int cid, long slba, int length, int sglId) {
        byte[] sqe = sqe(opcode, cid, 1, sglId, length);
        le(sqe).putLong(40, slba).putInt(48, length / RamQueueHandlerFactory.LBA_SIZE - 1);
        return sqe;
    }

    static byte[] readSqe(int cid, long slba, int length) {
        return ioSqe(0x02, cid, slba, length, 0x5A);
    }

    /** The bytes of a CapsuleCmd as a host with the negotiated digests sends it. */
    byte[] capsule(byte[] sqe, byte[] data) {
        int hdgst = headerDigest ? 4 : 0;
        int dataLength = data == null ? 0 : data.length;
        int ddgst = dataDigest && dataLength > 0 ? 4 : 0;
        int pdo = dataLength > 0 ? 72 + hdgst : 0;
        int plen = 72 + hdgst + dataLength + ddgst;
        byte[] pdu = new byte[plen];
        ByteBuffer b = le(pdu);
        b.put(0, (byte) CAPSULE_CMD).put(1, (byte) ((hdgst > 0 ? HDGSTF : 0) | (ddgst > 0 ? DDGSTF : 0)))
            .put(2, (byte) 72).put(3, (byte) pdo).putInt(4, plen);
        System.arraycopy(sqe, 0, pdu, 8, 64);
        if (hdgst > 0) {
            b.putInt(72, crc32c(pdu, 0, 72));
        }
        if (dataLength > 0) {
            System.arraycopy(data, 0, pdu, pdo, dataLength);
            if (ddgst > 0) {
                b.putInt(pdo + dataLength, crc32c(pdu, pdo, dataLength));
            }
        }
        return pdu;
    }

    void sendCapsule(byte[] sqe, byte[] data) throws IOException {
        send(capsule(sqe, data));
    }

    byte[] h2cData(int cccid, int ttag, int datao, byte[] data, int offset, int length, boolean last) {
        int hdgst = headerDigest ? 4 : 0;
        int ddgst = dataDigest ? 4 : 0;
        int pdo = 24 + hdgst;
        byte[] pdu = new byte[pdo + length + ddgst];
        ByteBuffer b = le(pdu);
        b.put(0, (byte) H2C_DATA)
            .put(1, (byte) ((hdgst > 0 ? HDGSTF : 0) | (ddgst > 0 ? DDGSTF : 0) | (last ? LAST_PDU : 0)))
            .put(2, (byte) 24).put(3, (byte) pdo).putInt(4, pdu.length)
            .putShort(8, (short) cccid).putShort(10, (short) ttag).putInt(12, datao).putInt(16, length);
        if (hdgst > 0) {
            b.putInt(24, crc32c(pdu, 0, 24));
        }
        System.arraycopy(data, offset, pdu, pdo, length);
        if (ddgst > 0) {
            b.putInt(pdo + length, crc32c(pdu, pdo, length));
        }
        return pdu;
    }

    /** Answers an R2T with H2CData PDUs of at most {@code maxH2CData} bytes. */
    void answerR2T(Pdu r2t, byte[] data, int maxH2CData) throws IOException {
        int cccid = r2t.u16(8);
        int ttag = r2t.u16(10);
        int offset = (int) r2t.u32(12);
        int length = (int) r2t.u32(16);
        int end = offset + length;
        for (int o = offset; o < end; o += maxH2CData) {
            int n = Math.min(maxH2CData, end - o);
            send(h2cData(cccid, ttag, o, data, o, n, o + n == end));
        }
    }

    /** Reads the C2HData PDUs of one read into a buffer of {@code length} bytes; returns the PDUs' count. */
    int readData(int cid, byte[] into, boolean expectSuccessFlag) throws IOException {
        int received = 0;
        int pdus = 0;
        while (received < into.length) {
            Pdu pdu = readPdu();
            assertThat(pdu.type()).as("PDU " + pdu).isEqualTo(C2H_DATA);
            assertThat(pdu.hlen()).isEqualTo(24);
            assertThat(pdu.u16(8)).as("CCCID").isEqualTo(cid);
            assertThat(pdu.u32(12)).as("DATAO").isEqualTo(received);
            int datal = (int) pdu.u32(16);
            System.arraycopy(pdu.raw(), pdu.pdo(), into, received, datal);
            received += datal;
            pdus++;
            boolean last = received == into.length;
            assertThat((pdu.flags() & LAST_PDU) != 0).as("LAST_PDU on PDU " + pdus).isEqualTo(last);
            assertThat((pdu.flags() & SUCCESS) != 0).as("SUCCESS on PDU " + pdus).isEqualTo(last && expectSuccessFlag);
        }
        return pdus;
    }

    @Override
    public void close() throws IOException {
        socket.close();
    }

    /** One received PDU, with accessors by byte offset. */
    record Pdu(byte[] raw) {
        int u8(int offset) {
            return raw[offset] & 0xFF;
        }

        int u16(int offset) {
            return le(raw).getShort(offset) & 0xFFFF;
        }

        long u32(int offset) {
            return le(raw).getInt(offset) & 0xFFFF_FFFFL;
        }

        int type() {
            return u8(0);
        }

        int flags() {
            return u8(1);
        }

        int hlen() {
            return u8(2);
        }

        int pdo() {
            return u8(3);
        }

        long plen() {
            return u32(4);
        }

        /** Data bytes of a data PDU (PLEN − PDO − data digest). */
        int dataLength() {
            return (int) (plen() - pdo() - ((flags() & DDGSTF) != 0 ? 4 : 0));
        }

        // CapsuleResp: CQE at 8.
        int cqeDw0() {
            return (int) u32(8);
        }

        int cqeSqHead() {
            return u16(16);
        }

        int cqeSqId() {
            return u16(18);
        }

        int cqeCid() {
            return u16(20);
        }

        /** Status as SCT<<8|SC plus DNR (bit 15), like NvmeStatus codes. */
        int cqeStatus() {
            int field = u16(22);
            return ((field >>> 1) & 0x7FF) | (field & 0xC000);
        }

        // TermReq: FES at 8, FEI at 10.
        int fes() {
            return u16(8);
        }

        long fei() {
            return u32(10);
        }

        @Override
        public String toString() {
            return String.format("PDU[type=0x%02x flags=0x%02x hlen=%d pdo=%d plen=%d]", type(), flags(), hlen(),
                pdo(), plen());
        }
    }
}
