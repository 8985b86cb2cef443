package io.nvmeof4j.bench;

import io.nvmeof4j.protocol.HostId;
import io.nvmeof4j.protocol.Nqn;
import io.nvmeof4j.protocol.command.NvmeStatus;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * A small blocking NVMe/TCP host for load generation in benchmarks: one socket per queue, commands pipelined up to
 * a queue depth, no digests. Enough to drive the target; the real initiator is the initiator-lib module's job.
 * Its own allocations don't matter: the benchmarks measure the target's reactor threads.
 */
final class PipelinedTcpHost implements AutoCloseable {
    private static final int CAPSULE_CMD = 0x04;
    private static final int CAPSULE_RESP = 0x05;
    private static final int H2C_DATA = 0x06;
    private static final int C2H_DATA = 0x07;
    private static final int R2T = 0x09;
    private static final int C2H_TERM_REQ = 0x03;

    private final String peer;
    private final Socket socket;
    private final DataInputStream in;
    private final OutputStream out;
    private final byte[] header = new byte[24];
    private int nextCid;

    PipelinedTcpHost(String address, int port, int timeoutMillis) throws IOException {
        this.peer = address + ":" + port;
        socket = new Socket();
        socket.setTcpNoDelay(true);
        socket.setSoTimeout(timeoutMillis);
        socket.connect(new InetSocketAddress(address, port), timeoutMillis);
        in = new DataInputStream(new BufferedInputStream(socket.getInputStream(), 1 << 16));
        out = new BufferedOutputStream(socket.getOutputStream(), 1 << 16);
        initializeConnection();
    }

    private void initializeConnection() throws IOException {
        ByteBuffer icreq = ByteBuffer.allocate(128).order(ByteOrder.LITTLE_ENDIAN);
        icreq.put(0, (byte) 0x00).put(2, (byte) 128).putInt(4, 128);
        out.write(icreq.array());
        out.flush();
        byte[] icresp = new byte[128];
        in.readFully(icresp);
        if (icresp[0] != 0x01) {
            throw new IOException(peer + ": ICReq answered with PDU type " + icresp[0]);
        }
    }

    /** Connects this queue (Fabrics Connect) and returns the CNTLID; fails with the status on error. */
    int connect(int qid, int sqSize, int cntlid, String subNqn, String hostNqn, HostId hostId, int katoMillis)
            throws IOException {
        ByteBuffer data = ByteBuffer.allocate(1024).order(ByteOrder.LITTLE_ENDIAN);
        hostId.write(data, 0);
        data.putShort(16, (short) cntlid);
        Nqn.writeField(data, 256, 256, subNqn);
        Nqn.writeField(data, 512, 256, hostNqn);
        ByteBuffer sqe = newSqe(0x7F);
        sqe.put(4, (byte) 0x01);
        sqe.putShort(42, (short) qid).putShort(44, (short) (sqSize - 1)).putInt(48, katoMillis);
        inCapsule(sqe, 1024);
        sendCapsule(sqe, data.array(), 1024);
        return checkedResponse("connect qid " + qid).getShort(0) & 0xFFFF;
    }

    void propertySet(int offset, long value) throws IOException {
        ByteBuffer sqe = newSqe(0x7F);
        sqe.put(4, (byte) 0x00).putInt(44, offset).putLong(48, value);
        sendCapsule(sqe, null, 0);
        checkedResponse("property set 0x" + Integer.toHexString(offset));
    }

    long propertyGet(int offset, boolean eightBytes) throws IOException {
        ByteBuffer sqe = newSqe(0x7F);
        sqe.put(4, (byte) 0x04).put(40, (byte) (eightBytes ? 1 : 0)).putInt(44, offset);
        sendCapsule(sqe, null, 0);
        return checkedResponse("property get 0x" + Integer.toHexString(offset)).getLong(0);
    }

    /** CC.EN = 1 with IOSQES 6 / IOCQES 4, then waits for CSTS.RDY within {@code timeoutMillis}. */
    void enableController(long timeoutMillis) throws IOException {
        propertySet(0x14, 0x00460001L);
        long deadline = System.nanoTime() + timeoutMillis * 1_000_000L;
        while ((propertyGet(0x1C, false) & 1) == 0) {
            if (System.nanoTime() > deadline) {
                throw new IOException(peer + ": CSTS.RDY not set within " + timeoutMillis + " ms");
            }
        }
    }

    /** Sends a Read (0x02) or Write (0x01) of {@code blocks} blocks; does not wait for the response. */
    void submitIo(int opcode, int nsid, long slba, int blocks, byte[] writeData, int length) throws IOException {
        ByteBuffer sqe = newSqe(opcode);
        sqe.putInt(4, nsid).putLong(40, slba).putInt(48, blocks - 1);
        if (opcode == 0x01) {
            inCapsule(sqe, length);
            sendCapsule(sqe, writeData, length);
        } else {
            sqe.put(39, (byte) 0x5A).putInt(32, length);
            sendCapsule(sqe, null, 0);
        }
    }

    void flush() throws IOException {
        out.flush();
    }

    /** Reads PDUs until one command completes; returns its status. Answers R2Ts from {@code writeData}. */
    int awaitCompletion(byte[] writeData) throws IOException {
        while (true) {
            in.readFully(header, 0, 8);
            int type = header[0] & 0xFF;
            int flags = header[1] & 0xFF;
            int hlen = header[2] & 0xFF;
            int plen = (header[4] & 0xFF) | (header[5] & 0xFF) << 8 | (header[6] & 0xFF) << 16 | (header[7] & 0xFF) << 24;
            in.readFully(header, 8, hlen - 8);
            ByteBuffer h = ByteBuffer.wrap(header).order(ByteOrder.LITTLE_ENDIAN);
            switch (type) {
                case CAPSULE_RESP:
                    return NvmeStatus.fromStatusField(h.getShort(8 + 14) & 0xFFFF);
                case C2H_DATA:
                    in.skipNBytes(plen - hlen);
                    if ((flags & 0x08) != 0) {
                        return NvmeStatus.SUCCESS;
                    }
                    break;
                case R2T:
                    answerR2t(h, writeData);
                    break;
                case C2H_TERM_REQ:
                    throw new IOException(peer + ": target terminated the connection, FES " + (h.getShort(8) & 0xFFFF));
                default:
                    throw new IOException(peer + ": unexpected PDU type " + type);
            }
        }
    }

    private void answerR2t(ByteBuffer r2t, byte[] writeData) throws IOException {
        int cccid = r2t.getShort(8) & 0xFFFF;
        int ttag = r2t.getShort(10) & 0xFFFF;
        int offset = r2t.getInt(12);
        int length = r2t.getInt(16);
        byte[] h2c = new byte[24];
        ByteBuffer b = ByteBuffer.wrap(h2c).order(ByteOrder.LITTLE_ENDIAN);
        b.put(0, (byte) H2C_DATA).put(1, (byte) 0x04).put(2, (byte) 24).put(3, (byte) 24).putInt(4, 24 + length);
        b.putShort(8, (short) cccid).putShort(10, (short) ttag).putInt(12, offset).putInt(16, length);
        out.write(h2c);
        out.write(writeData, offset, length);
        out.flush();
    }

    private ByteBuffer newSqe(int opcode) {
        ByteBuffer sqe = ByteBuffer.allocate(64).order(ByteOrder.LITTLE_ENDIAN);
        sqe.put(0, (byte) opcode).put(1, (byte) 0x40).putShort(2, (short) (nextCid++ & 0xFFFF));
        return sqe;
    }

    private static void inCapsule(ByteBuffer sqe, int length) {
        sqe.putLong(24, 0).putInt(32, length).put(39, (byte) 0x01);
    }

    private void sendCapsule(ByteBuffer sqe, byte[] data, int length) throws IOException {
        byte[] head = new byte[8];
        ByteBuffer h = ByteBuffer.wrap(head).order(ByteOrder.LITTLE_ENDIAN);
        h.put(0, (byte) CAPSULE_CMD).put(2, (byte) 72).put(3, (byte) (length > 0 ? 72 : 0)).putInt(4, 72 + length);
        out.write(head);
        out.write(sqe.array());
        if (length > 0) {
            out.write(data, 0, length);
        }
    }

    private ByteBuffer checkedResponse(String step) throws IOException {
        out.flush();
        while (true) {
            in.readFully(header, 0, 8);
            int type = header[0] & 0xFF;
            int hlen = header[2] & 0xFF;
            in.readFully(header, 8, hlen - 8);
            ByteBuffer h = ByteBuffer.wrap(header).order(ByteOrder.LITTLE_ENDIAN);
            if (type != CAPSULE_RESP) {
                throw new IOException(peer + ": " + step + ": expected a CapsuleResp, got PDU type " + type);
            }
            int status = NvmeStatus.fromStatusField(h.getShort(8 + 14) & 0xFFFF);
            if (!NvmeStatus.isSuccess(status)) {
                throw new IOException(peer + ": " + step + " failed with status " + NvmeStatus.describe(status));
            }
            return ByteBuffer.wrap(header, 8, 8).slice().order(ByteOrder.LITTLE_ENDIAN);
        }
    }

    @Override
    public void close() throws IOException {
        socket.close();
    }
}
