package io.nvmeof4j.tcp.pdu;

import io.nvmeof4j.protocol.tcp.Crc32cDigest;
import io.nvmeof4j.protocol.tcp.PduFlyweight;
import io.nvmeof4j.protocol.tcp.TermReqPdu;
import io.nvmeof4j.tcp.tls.TcpStream;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.ReadableByteChannel;

/**
 * The receive side of one NVMe/TCP connection, either role: bytes are read into a receive buffer and framed in
 * place, across as many reads (and reactor rounds) as they take. For each PDU the {@link Handler} (the role) sees
 * the common header as soon as its 8 bytes are in, checks the fields it accepts in wire order, takes the header
 * ({@link #consume}) and says what follows: nothing, a payload at PDO into a buffer of its own ({@link #receivePayload}:
 * copied from the receive buffer when it came with the header, read straight from the socket when large, then its
 * data digest checked; the read behind a large payload takes only a header, so that the next one goes straight
 * too), or bytes to skip ({@link #discard}). Header digests are checked on the role's call
 * ({@link #headerDigestMatches}), since the role decides when a header is whole. TermReqs are framed here
 * ({@link #receiveTermReq}). After the role stops receiving ({@link #stop}) nothing is parsed; {@link #drain} reads
 * and drops what the peer still sends until it closes. Reactor thread only; nothing allocates per PDU.
 */
public final class PduReceiver {
    /** What the role does with received PDUs. Every callback runs on the reactor thread, inside {@link #onReadable}. */
    public interface Handler {
        /**
         * A PDU's common header is buffered at {@link #pduStart()}: check it and take the PDU in ({@link #consume},
         * then {@link #receivePayload} or {@link #discard} for what follows the header), or stop receiving.
         *
         * @param available bytes buffered from the start of the PDU (at least 8)
         * @return false to wait for more bytes of the header (nothing taken), true otherwise
         */
        boolean onPduHeader(int type, int flags, int hlen, int pdo, long plen, int available);

        /** The payload asked for by {@link #receivePayload} is in its buffer and its data digest (if any) matched. */
        void onPayloadReceived(int length);

        /** The payload's data digest did not match: the role ends the connection. */
        void onDataDigestError(int received, int computed);

        /** The peer sent a well-formed TermReq: it is closing the connection. */
        void onTermReq(int fes, long fei);

        /** The peer sent a TermReq with a bad HLEN or PLEN, which is not answered (NVMe/TCP 7.4.7): close. */
        void onMalformedTermReq(int hlen, long plen);

        /** The stream ended: the peer closed it ({@code error} null) or a read failed. */
        void onStreamEnded(IOException error);

        /** Decrypted bytes are buffered that the socket will not signal again: call {@link #onReadable} next round. */
        void readLater();
    }

    /** Payload bytes from which a read goes straight into the payload's buffer instead of the receive buffer. */
    static final int DIRECT_READ_THRESHOLD = 8192;
    /**
     * The read that follows a payload read straight into its buffer takes at most this many bytes: the next PDU's
     * header with its digest (C2HData/H2CData 28, CapsuleCmd 76) and the last payload's data digest, not the first
     * tens of KiB of the next large payload, which would be copied out of the receive buffer again.
     */
    static final int HEADER_READ_BYTES = 128;
    /** Socket reads per readiness event before other connections get their turn. */
    static final int READ_BUDGET = 8;

    private static final int HEADER = 0;
    private static final int PAYLOAD = 1;
    private static final int DATA_DIGEST = 2;
    private static final int DISCARD = 3;
    /** The role ended the connection: read and drop whatever the peer still sends until it closes. */
    private static final int DRAIN = 4;
    private static final int STOPPED = 5;

    private final Handler handler;
    private final Crc32cDigest crc;
    private TcpStream stream;
    private ByteBuffer buffer;
    private int readIndex;
    private int writeIndex;
    private int state = HEADER;
    /** Where the PDU whose header the handler is looking at starts. */
    private int pduStart;
    private int headerDigestLength;
    private int dataDigestLength;

    private ByteBuffer payloadBuffer;
    private int payloadStart;
    private int payloadPosition;
    private int payloadEnd;
    private long discardRemaining;
    /**
     * The current or last payload was read straight into its buffer: the rest of it is too, and the read after it
     * takes {@link #HEADER_READ_BYTES}. Cleared by the next PDU's header.
     */
    private boolean boundNextRead;
    /** Payload bytes copied out of the receive buffer so far (the rest went straight into their buffers). */
    private long stagedPayloadBytes;

    /**
     * @param crc      the reactor's digest calculator
     * @param capacity receive buffer bytes; at least twice the largest header the role accepts (see {@link #compact})
     */
    public PduReceiver(Handler handler, Crc32cDigest crc, TcpStream stream, int capacity) {
        this.handler = handler;
        this.crc = crc;
        this.stream = stream;
        this.buffer = ByteBuffer.allocateDirect(capacity).order(ByteOrder.LITTLE_ENDIAN);
    }

    /** The stream PDUs are read from from now on (TLS records once the handshake is done). */
    public void stream(TcpStream stream) {
        this.stream = stream;
    }

    /** The digests ICReq/ICResp negotiated: each 0 or {@link PduFlyweight#DIGEST_LENGTH}. */
    public void digests(int headerDigestLength, int dataDigestLength) {
        this.headerDigestLength = headerDigestLength;
        this.dataDigestLength = dataDigestLength;
    }

    /** A new receive buffer of {@code capacity} bytes, keeping the unparsed bytes (a small buffer grown once). */
    public void resize(int capacity) {
        ByteBuffer bigger = ByteBuffer.allocateDirect(capacity).order(ByteOrder.LITTLE_ENDIAN);
        int unparsed = writeIndex - readIndex;
        bigger.put(0, buffer, readIndex, unparsed);
        buffer = bigger;
        readIndex = 0;
        writeIndex = unparsed;
    }

    // ---- reading -----------------------------------------------------------------------------------------------

    /**
     * The socket is readable (or may be: a direct read finds out): read and parse within a budget. Returns whether
     * any bytes came.
     */
    public boolean onReadable() {
        if (state == DRAIN) {
            return drainInput();
        }
        boolean received = false;
        for (int reads = 0; ; reads++) {
            if (!process()) {
                return received; // stopped
            }
            if (reads == READ_BUDGET) {
                if (stream.hasBufferedInput()) {
                    handler.readLater();
                }
                return received; // budget spent (the selector is level-triggered and will call again)
            }
            int wanted;
            int n;
            if (state == PAYLOAD && readIndex == writeIndex
                && (payloadEnd - payloadPosition >= DIRECT_READ_THRESHOLD || boundNextRead)) {
                // A large payload (or the rest of one) and nothing buffered: read it straight into its buffer.
                ByteBuffer destination = payloadBuffer;
                destination.limit(payloadEnd);
                destination.position(payloadPosition);
                wanted = payloadEnd - payloadPosition;
                n = read(destination);
                if (n > 0) {
                    payloadPosition += n;
                    boundNextRead = true;
                }
            } else {
                wanted = prepareRead();
                n = read(buffer);
                buffer.limit(buffer.capacity()); // after a bounded read: absolute reads of parsing check the limit
                if (n > 0) {
                    writeIndex += n;
                }
            }
            if (n <= 0) {
                return received; // nothing more for now, or the stream ended
            }
            received = true;
            if (n < wanted) {
                // The socket is drained: parse what came and save the read that would only say EAGAIN.
                process();
                return true;
            }
        }
    }

    /**
     * Reads what {@code channel} has into the receive buffer, bypassing the stream: the first bytes of a connection
     * that may turn out to be a TLS ClientHello. Returns the bytes read, or -1 at end of stream.
     */
    public int readRaw(ReadableByteChannel channel) throws IOException {
        prepareRead();
        int n = channel.read(buffer);
        writeIndex += Math.max(n, 0);
        return n;
    }

    /** Payload bytes copied out of the receive buffer so far; the others were read straight into their buffers. */
    public long stagedPayloadBytes() {
        return stagedPayloadBytes;
    }

    /** Buffered, unparsed bytes. */
    public int buffered() {
        return writeIndex - readIndex;
    }

    /** The first buffered byte (a TLS record type, or a PDU type); only when {@link #buffered()} is not 0. */
    public int firstBufferedByte() {
        return buffer.get(readIndex) & 0xFF;
    }

    /** Hands the buffered bytes over (to a TLS handshake that reads them as records) and forgets them. */
    public ByteBuffer takeBuffered() {
        ByteBuffer taken = buffer.duplicate().order(ByteOrder.LITTLE_ENDIAN);
        taken.limit(writeIndex).position(readIndex);
        readIndex = 0;
        writeIndex = 0;
        return taken;
    }

    /**
     * Positions the buffer for a read into its free space and returns that space: all of it (small PDUs come many to
     * a read), or just a header's worth after a large payload went straight into its buffer. Behind a large payload
     * usually comes another (sequential reads or writes at a queue depth): a full read would take its header and
     * the next tens of KiB of its payload into the receive buffer, to be copied again; a bounded one leaves that
     * payload in the socket to be read straight into its buffer, for one read more per PDU at most. Measured with
     * SPDK's target, 128 KiB reads QD8: a 64 KiB copy per I/O gone (docs/benchmarks.md).
     */
    private int prepareRead() {
        compact();
        int limit = buffer.capacity();
        if (boundNextRead && readIndex == writeIndex) {
            limit = Math.min(limit, writeIndex + HEADER_READ_BYTES);
        }
        buffer.limit(limit);
        buffer.position(writeIndex);
        return limit - writeIndex;
    }

    /**
     * Keeps room for a whole header after the unparsed bytes. Between reads at most one partial header is left
     * unparsed (PDO is one byte, so under 260 bytes with a digest): compacting copies little, and half of a
     * receive buffer of at least 4 KiB always holds the largest header.
     */
    private void compact() {
        if (readIndex == writeIndex) {
            readIndex = 0;
            writeIndex = 0;
        } else if (readIndex > 0 && buffer.capacity() - writeIndex < buffer.capacity() / 2) {
            buffer.limit(writeIndex);
            buffer.position(readIndex);
            buffer.compact(); // leaves the limit at the capacity, where the absolute reads of parsing need it
            writeIndex -= readIndex;
            readIndex = 0;
        }
    }

    /** Parses buffered bytes; false once receiving stopped. */
    private boolean process() {
        while (true) {
            boolean progressed;
            switch (state) {
                case HEADER:
                    progressed = receiveHeader();
                    break;
                case PAYLOAD:
                    progressed = receivePayloadBytes();
                    break;
                case DATA_DIGEST:
                    progressed = receiveDataDigest();
                    break;
                case DISCARD:
                    progressed = discardBytes();
                    break;
                default:
                    return false;
            }
            if (state >= DRAIN) {
                return false;
            }
            if (!progressed) {
                return true;
            }
        }
    }

    private boolean receiveHeader() {
        int available = writeIndex - readIndex;
        if (available < PduFlyweight.COMMON_HEADER_LENGTH) {
            return false;
        }
        pduStart = readIndex;
        boundNextRead = false; // the next PDU is here: read as usual until a payload goes straight again
        return handler.onPduHeader(u8(PduFlyweight.TYPE_OFFSET), u8(PduFlyweight.FLAGS_OFFSET),
            u8(PduFlyweight.HLEN_OFFSET), u8(PduFlyweight.PDO_OFFSET), u32(PduFlyweight.PLEN_OFFSET), available);
    }

    // ---- what the role calls from onPduHeader ------------------------------------------------------------------

    /** The receive buffer (little-endian), to wrap a flyweight at {@link #pduStart()} plus an offset. */
    public ByteBuffer buffer() {
        return buffer;
    }

    /** Absolute index of the current PDU in {@link #buffer()}. */
    public int pduStart() {
        return pduStart;
    }

    /** Unsigned byte at {@code offset} of the current PDU. */
    public int u8(int offset) {
        return buffer.get(pduStart + offset) & 0xFF;
    }

    /** Unsigned 16-bit field at {@code offset} of the current PDU. */
    public int u16(int offset) {
        return buffer.getShort(pduStart + offset) & 0xFFFF;
    }

    /** Unsigned 32-bit field at {@code offset} of the current PDU, in a long. */
    public long u32(int offset) {
        return buffer.getInt(pduStart + offset) & 0xFFFF_FFFFL;
    }

    /** Whether the header digest after the {@code hlen}-byte header matches (true when none was negotiated). */
    public boolean headerDigestMatches(int hlen) {
        if (headerDigestLength == 0) {
            return true;
        }
        return buffer.getInt(pduStart + hlen) == crc.compute(buffer, pduStart, hlen);
    }

    /** The current PDU's first {@code length} bytes are taken; parsing goes on after them. */
    public void consume(int length) {
        readIndex = pduStart + length;
    }

    /**
     * After {@link #consume} up to PDO: receives {@code length} payload bytes into {@code destination} from absolute
     * index {@code start}, then their data digest if one was negotiated; {@link Handler#onPayloadReceived} follows.
     */
    public void receivePayload(ByteBuffer destination, int start, int length) {
        payloadBuffer = destination;
        payloadStart = start;
        payloadPosition = start;
        payloadEnd = start + length;
        state = PAYLOAD;
    }

    /** After {@link #consume}: skips {@code bytes} (refused in-capsule data and its digest). */
    public void discard(long bytes) {
        discardRemaining = bytes;
        state = bytes > 0 ? DISCARD : HEADER;
    }

    /**
     * Frames a TermReq from the peer (NVMe/TCP 3.6.2.4, 7.4.7) and tells the handler: a well-formed one gives
     * FES and FEI, a bad HLEN or PLEN is reported as malformed. Returns false (the connection ends either way,
     * or more bytes are needed).
     */
    public boolean receiveTermReq(int hlen, long plen, int available) {
        if (hlen != TermReqPdu.HEADER_LENGTH || plen < TermReqPdu.HEADER_LENGTH || plen > TermReqPdu.MAX_PDU_LENGTH) {
            handler.onMalformedTermReq(hlen, plen);
            return false;
        }
        if (available < TermReqPdu.HEADER_LENGTH) {
            return false;
        }
        handler.onTermReq(u16(TermReqPdu.FES_OFFSET), u32(TermReqPdu.FEI_OFFSET));
        return false;
    }

    /**
     * Copies the current PDU's header (with its digest, at least the common header, at most what a TermReq quotes
     * and what is buffered) to {@code destination} at {@code offset}, for a TermReq; returns the bytes copied.
     */
    public int quoteHeader(ByteBuffer destination, int offset) {
        int available = writeIndex - pduStart;
        int hlen = available > PduFlyweight.HLEN_OFFSET ? u8(PduFlyweight.HLEN_OFFSET) : 0;
        int quoted = Math.min(available, Math.min(TermReqPdu.MAX_ERROR_DATA_LENGTH,
            Math.max(PduFlyweight.COMMON_HEADER_LENGTH, hlen + headerDigestLength)));
        destination.put(offset, buffer, pduStart, quoted);
        return quoted;
    }

    // ---- payloads ----------------------------------------------------------------------------------------------

    private boolean receivePayloadBytes() {
        int remaining = payloadEnd - payloadPosition;
        if (remaining > 0) {
            int available = writeIndex - readIndex;
            if (available == 0) {
                return false;
            }
            int n = Math.min(available, remaining);
            ByteBuffer destination = payloadBuffer;
            destination.limit(destination.capacity()); // absolute puts are checked against the limit
            destination.put(payloadPosition, buffer, readIndex, n);
            stagedPayloadBytes += n;
            readIndex += n;
            payloadPosition += n;
            if (n < remaining) {
                return false;
            }
        }
        if (dataDigestLength > 0) {
            state = DATA_DIGEST;
            return true;
        }
        return finishPayload();
    }

    private boolean receiveDataDigest() {
        if (writeIndex - readIndex < PduFlyweight.DIGEST_LENGTH) {
            return false;
        }
        int received = buffer.getInt(readIndex);
        readIndex += PduFlyweight.DIGEST_LENGTH;
        int computed = crc.compute(payloadBuffer, payloadStart, payloadEnd - payloadStart);
        if (received != computed) {
            handler.onDataDigestError(received, computed);
            return false;
        }
        return finishPayload();
    }

    private boolean finishPayload() {
        int length = payloadEnd - payloadStart;
        payloadBuffer = null;
        state = HEADER; // before the handler, which may stop receiving
        handler.onPayloadReceived(length);
        return true;
    }

    private boolean discardBytes() {
        int available = writeIndex - readIndex;
        if (available == 0) {
            return false;
        }
        int n = (int) Math.min(available, discardRemaining);
        readIndex += n;
        discardRemaining -= n;
        if (discardRemaining == 0) {
            state = HEADER;
            return true;
        }
        return false;
    }

    // ---- stopping ----------------------------------------------------------------------------------------------

    /** Nothing more is parsed (the connection is terminating or closed). */
    public void stop() {
        state = STOPPED;
        payloadBuffer = null;
    }

    /**
     * Our TermReq is out. Closing now while the peer's bytes sit unread would make the kernel answer with a reset,
     * which can destroy the TermReq before the peer reads it; so read and drop until the peer closes
     * ({@link Handler#onStreamEnded}).
     */
    public void drain() {
        state = DRAIN;
        drainInput();
    }

    private boolean drainInput() {
        boolean received = false;
        for (int reads = 0; reads < READ_BUDGET; reads++) {
            buffer.clear();
            if (read(buffer) <= 0) {
                return received;
            }
            received = true;
        }
        return received;
    }

    /** One read from the stream; -1 once the handler has heard that the stream ended. */
    private int read(ByteBuffer into) {
        try {
            int n = stream.read(into);
            if (n < 0) {
                handler.onStreamEnded(null);
            }
            return n;
        } catch (IOException e) {
            handler.onStreamEnded(e);
            return -1;
        }
    }
}
