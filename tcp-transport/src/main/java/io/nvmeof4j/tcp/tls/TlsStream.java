package io.nvmeof4j.tcp.tls;

import org.bouncycastle.tls.AbstractTlsClient;
import org.bouncycastle.tls.AbstractTlsServer;
import org.bouncycastle.tls.AlertDescription;
import org.bouncycastle.tls.AlertLevel;
import org.bouncycastle.tls.BasicTlsPSKExternal;
import org.bouncycastle.tls.CipherSuite;
import org.bouncycastle.tls.ProtocolVersion;
import org.bouncycastle.tls.SecurityParameters;
import org.bouncycastle.tls.TlsAuthentication;
import org.bouncycastle.tls.TlsClientContext;
import org.bouncycastle.tls.TlsContext;
import org.bouncycastle.tls.TlsServerContext;
import org.bouncycastle.tls.TlsClientProtocol;
import org.bouncycastle.tls.TlsCredentials;
import org.bouncycastle.tls.TlsFatalAlert;
import org.bouncycastle.tls.TlsPSK;
import org.bouncycastle.tls.TlsPSKExternal;
import org.bouncycastle.tls.TlsProtocol;
import org.bouncycastle.tls.TlsServerProtocol;
import org.bouncycastle.tls.TlsUtils;
import org.bouncycastle.tls.crypto.TlsCrypto;
import org.bouncycastle.tls.crypto.TlsCryptoUtils;
import org.bouncycastle.tls.crypto.TlsSecret;
import org.bouncycastle.tls.crypto.impl.jcajce.JcaTlsCryptoProvider;

import javax.crypto.Cipher;
import javax.crypto.spec.GCMParameterSpec;
import javax.crypto.spec.SecretKeySpec;
import java.io.EOFException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.SecureRandom;
import java.util.Arrays;
import java.util.Vector;

/**
 * TLS 1.3 with an external PSK over a non-blocking socket, for both roles (NVMe/TCP 1.0c 3.6: the TLS handshake
 * comes first on the socket, ICReq/ICResp and every PDU after it travel as TLS application data).
 * <p><b>Library.</b> The JDK's TLS has no external PSKs; BouncyCastle's {@code bctls} does, through its low-level
 * {@link TlsServerProtocol}/{@link TlsClientProtocol} in non-blocking mode (offerInput/readOutput), which fits a
 * selector reactor without threads or streams. Only TLS 1.3, only TLS_AES_128_GCM_SHA256 and
 * TLS_AES_256_GCM_SHA384, only PSK authentication with (EC)DHE (psk_dhe_ke): no certificates, no resumption.
 * <p><b>Records.</b> BouncyCastle runs the handshake only. Once it is complete this class protects the records
 * itself (RFC 8446 5.2-5.4) with the application traffic keys derived from BouncyCastle's traffic secrets, the way
 * kTLS takes them over from a user-space handshake: BouncyCastle's record layer allocates an output array per
 * record and copies each record three times on the way in (input queue, record buffer, application queue). Here a
 * gathering write becomes one record of up to 16 KiB in one reused buffer, encrypted by the JDK's AES-GCM (AES-NI
 * and CLMUL intrinsics) straight into the socket's output buffer, and a record is decrypted from the socket's input
 * buffer into one reused plaintext buffer. What still allocates per record is inside the JDK: {@code Cipher.init}
 * with a new nonce builds a new GCM engine (about 1 KB per record and direction on JDK 17), which no JCA API
 * avoids. To keep BouncyCastle from reading past its handshake, the handshake is fed one record at a time; the
 * records after the last handshake record are this class's.
 * <p>Post-handshake messages: a peer's KeyUpdate is honoured (and answered when it asks); a NewSessionTicket is
 * ignored (no resumption). This side never starts a KeyUpdate: the Linux kernel's TLS (kTLS, which the Linux host
 * and target use after {@code tlshd}'s handshake) cannot rekey in 6.12 and ends the connection on one.
 */
public final class TlsStream extends TcpStream {
    /** Plaintext per TLS record: the TLS 1.3 maximum, so bulk data needs the fewest records. */
    private static final int RECORD_PLAINTEXT = 16384;
    private static final int HEADER = 5;
    private static final int TAG = 16;
    /** RFC 8446 5.2: TLSCiphertext.length must not exceed 2^14 + 256. */
    private static final int MAX_CIPHERTEXT = RECORD_PLAINTEXT + 256;
    private static final int MAX_RECORD = HEADER + MAX_CIPHERTEXT;
    private static final short CONTENT_ALERT = 21;
    private static final short CONTENT_HANDSHAKE = 22;
    private static final short CONTENT_APPLICATION_DATA = 23;
    private static final short CONTENT_CHANGE_CIPHER_SPEC = 20;
    private static final short HANDSHAKE_NEW_SESSION_TICKET = 4;
    private static final short HANDSHAKE_KEY_UPDATE = 24;
    private static final byte[] NO_CONTEXT = new byte[0];
    private static final SecureRandom RANDOM = new SecureRandom();
    /**
     * The JDK's own providers do the handshake crypto: its AES-GCM uses the CPU's AES and carry-less multiply
     * instructions, BouncyCastle's pure-Java engine does not (measured here: about 10x fewer IOPS with it).
     */
    private static final TlsCrypto CRYPTO = new JcaTlsCryptoProvider().create(RANDOM);

    private final TlsProtocol protocol;
    private final boolean server;
    /** Bytes from the socket not yet decrypted, between {@link #inStart} and position (two records fit). */
    private final ByteBuffer netIn = ByteBuffer.allocate(2 * MAX_RECORD);
    /** After the handshake: where the next record starts in {@link #netIn} (0 during the handshake). */
    private int inStart;
    /** Encrypted bytes the socket has not taken yet, between 0 and position (two full records fit). */
    private final ByteBuffer netOut = ByteBuffer.allocate(2 * MAX_RECORD + 64);
    /** One decrypted record: its unread plaintext is plainIn[plainInStart, plainInEnd). */
    private final byte[] plainIn = new byte[MAX_CIPHERTEXT];
    private int plainInStart;
    private int plainInEnd;
    /** The plaintext of the record being gathered, plus room for the inner content type. */
    private final byte[] plainOut = new byte[RECORD_PLAINTEXT + 1];
    private RecordKeys readKeys;
    private RecordKeys writeKeys;
    /** Post-handshake handshake messages may span records (RFC 8446 5.1): collected here. */
    private byte[] handshakeMessages = NO_CONTEXT;
    /** BouncyCastle's view of the connection: the negotiated suite and the traffic secrets. */
    private TlsContext context;
    private PskIdentity identity;
    private String failure;
    private boolean inputClosed;
    private boolean closeNotifySent;
    private volatile int suite = -1;

    private TlsStream(SocketChannel channel, TlsProtocol protocol, boolean server) {
        super(channel);
        this.protocol = protocol;
        this.server = server;
    }

    /** The controller side: the host's identity is looked up in {@code psks} during the handshake. */
    public static TlsStream server(SocketChannel channel, PskResolver psks) throws IOException {
        TlsServerProtocol protocol = new TlsServerProtocol();
        TlsStream stream = new TlsStream(channel, protocol, true);
        protocol.accept(stream.new Server(psks));
        return stream;
    }

    /** The host side: offers exactly one identity, {@code psk}'s. The ClientHello is queued at once. */
    public static TlsStream client(SocketChannel channel, DerivedPsk psk) throws IOException {
        TlsClientProtocol protocol = new TlsClientProtocol();
        TlsStream stream = new TlsStream(channel, protocol, false);
        stream.identity = psk.identity();
        protocol.connect(stream.new Client(psk));
        return stream;
    }

    private boolean established() {
        return writeKeys != null;
    }

    /**
     * Advances the handshake as far as the socket allows.
     *
     * @return true once it is complete; false when it waits for the socket ({@link #hasPendingOutput()} says
     *         whether for OP_WRITE, otherwise OP_READ)
     * @throws IOException the handshake failed (a TLS alert has been queued and sent if the socket took it);
     *                     the message names the step, never a key
     */
    public boolean handshake() throws IOException {
        try {
            for (;;) {
                if (established()) {
                    return drainOutput();
                }
                pullHandshakeOutput();
                if (!protocol.isHandshaking()) {
                    if (protocol.isClosed()) {
                        throw new IOException("TLS handshake ended without a connection");
                    }
                    if (protocol.getAvailableOutputBytes() > 0) {
                        // BouncyCastle's last records (the client's Finished) go out before any record of ours.
                        if (!drainOutput()) {
                            return false;
                        }
                        continue;
                    }
                    takeOverRecords();
                    continue;
                }
                if (!drainOutput()) {
                    return false;
                }
                if (offerHandshakeRecords()) {
                    continue;
                }
                int n = channel.read(netIn);
                if (n < 0) {
                    throw new EOFException("peer closed the connection during the TLS handshake");
                }
                if (n == 0) {
                    return false;
                }
            }
        } catch (IOException e) {
            sendAlertQuietly();
            String why = failure != null ? failure : describe(e);
            throw new IOException("TLS 1.3 handshake failed: " + why, e);
        }
    }

    /**
     * Gives BouncyCastle the complete records in {@link #netIn}, one at a time, and stops as soon as its handshake
     * is over: what follows is application data under keys this class now holds.
     *
     * @return whether at least one record was offered
     */
    private boolean offerHandshakeRecords() throws IOException {
        netIn.flip();
        boolean offered = false;
        try {
            while (protocol.isHandshaking() && netIn.remaining() >= HEADER) {
                int at = netIn.position();
                byte[] in = netIn.array();
                // Decided on the header alone: a plain PDU (an ICReq starts 0x00) must not wait for 133 bytes.
                if (in[at] < CONTENT_CHANGE_CIPHER_SPEC || in[at] > CONTENT_APPLICATION_DATA || in[at + 1] != 3) {
                    throw new TlsFatalAlert(AlertDescription.unexpected_message, String.format(
                        "not a TLS record (first bytes %02x %02x)", in[at] & 0xFF, in[at + 1] & 0xFF));
                }
                int length = recordLength(at);
                if (netIn.remaining() < HEADER + length) {
                    break;
                }
                protocol.offerInput(netIn.array(), at, HEADER + length);
                netIn.position(at + HEADER + length);
                offered = true;
            }
        } finally {
            netIn.compact();
        }
        return offered;
    }

    /** The length field of the record header at {@code at} in {@link #netIn}, refused beyond 2^14 + 256. */
    private int recordLength(int at) throws IOException {
        byte[] in = netIn.array();
        int length = (in[at + 3] & 0xFF) << 8 | in[at + 4] & 0xFF;
        if (length > MAX_CIPHERTEXT) {
            throw fatal(AlertDescription.record_overflow, "a TLS record of " + length + " bytes (the limit is "
                + MAX_CIPHERTEXT + ")");
        }
        return length;
    }

    /** BouncyCastle's handshake is complete: from here on the records are protected with the traffic keys. */
    private void takeOverRecords() throws IOException {
        if (protocol.getAvailableInputBytes() > 0) {
            throw new IOException("application data inside the TLS handshake");
        }
        SecurityParameters parameters = context.getSecurityParametersConnection();
        int hash = parameters.getPRFCryptoHashAlgorithm();
        int keyLength = parameters.getCipherSuite() == CipherSuite.TLS_AES_256_GCM_SHA384 ? 32 : 16;
        TlsSecret clientSecret = parameters.getTrafficSecretClient();
        TlsSecret serverSecret = parameters.getTrafficSecretServer();
        readKeys = new RecordKeys(server ? clientSecret : serverSecret, hash, keyLength);
        writeKeys = new RecordKeys(server ? serverSecret : clientSecret, hash, keyLength);
    }

    /** Moves what BouncyCastle wants to send (handshake records, alerts) into {@link #netOut}. */
    private void pullHandshakeOutput() throws IOException {
        int available;
        while (!established() && (available = protocol.getAvailableOutputBytes()) > 0) {
            int n = Math.min(available, netOut.remaining());
            if (n == 0) {
                if (!drainOutput()) {
                    return;
                }
                continue;
            }
            protocol.readOutput(netOut.array(), netOut.position(), n);
            netOut.position(netOut.position() + n);
        }
    }

    private static String describe(IOException e) {
        if (e instanceof TlsFatalAlert alert) {
            return "alert " + AlertDescription.getText(alert.getAlertDescription())
                + (alert.getMessage() != null ? " (" + alert.getMessage() + ")" : "");
        }
        return e.getMessage() != null ? e.getMessage() : e.getClass().getSimpleName();
    }

    private void sendAlertQuietly() {
        try {
            pullHandshakeOutput();
            drainOutput();
        } catch (IOException | RuntimeException ignored) {
            // best effort: the connection is being closed anyway
        }
    }

    /**
     * Hands the stream bytes already read from the socket (a controller on a port where TLS is optional reads the
     * first bytes to tell a TLS record, 0x16, from an ICReq, 0x00). Call before {@link #handshake()}.
     */
    public void offerEarlyInput(ByteBuffer src) throws IOException {
        if (src.remaining() > netIn.remaining()) {
            throw new IOException("TLS 1.3 handshake failed: " + src.remaining() + " early bytes do not fit");
        }
        netIn.put(src);
        try {
            offerHandshakeRecords();
        } catch (IOException e) {
            sendAlertQuietly();
            throw new IOException("TLS 1.3 handshake failed: " + (failure != null ? failure : describe(e)), e);
        }
    }

    /** The identity the handshake settled on (the controller side: the host's; null before the handshake). */
    public PskIdentity identity() {
        return identity;
    }

    @Override
    public int read(ByteBuffer dst) throws IOException {
        if (!established()) {
            throw new IllegalStateException("TLS handshake not complete");
        }
        int total = 0;
        for (;;) {
            int buffered = plainInEnd - plainInStart;
            if (buffered > 0) {
                int n = Math.min(buffered, dst.remaining());
                dst.put(plainIn, plainInStart, n);
                plainInStart += n;
                total += n;
                if (!dst.hasRemaining()) {
                    return total;
                }
                continue;
            }
            if (inputClosed) {
                return total > 0 ? total : -1;
            }
            if (openRecord()) {
                continue;
            }
            if (netIn.remaining() < MAX_RECORD) {
                // Make room for a whole record: move the partial one to the front (rare: records are consumed
                // where they lie, and an empty buffer starts over at 0).
                byte[] in = netIn.array();
                int pending = netIn.position() - inStart;
                System.arraycopy(in, inStart, in, 0, pending);
                netIn.position(pending);
                inStart = 0;
            }
            int n = channel.read(netIn);
            if (n < 0) {
                inputClosed = true; // without close_notify: NVMe/TCP sees the end of the stream either way
                continue;
            }
            if (n == 0) {
                return total;
            }
        }
    }

    /**
     * Decrypts the first complete record in {@link #netIn} (RFC 8446 5.2): application data into
     * {@link #plainIn}, alerts and post-handshake messages acted upon.
     *
     * @return false when no complete record is buffered
     */
    private boolean openRecord() throws IOException {
        int at = inStart;
        int buffered = netIn.position() - at;
        if (buffered < HEADER) {
            return false;
        }
        byte[] in = netIn.array();
        int length = recordLength(at);
        if (buffered < HEADER + length) {
            return false;
        }
        if (in[at] != CONTENT_APPLICATION_DATA) {
            throw fatal(AlertDescription.unexpected_message, "a TLS record of outer type " + (in[at] & 0xFF)
                + " after the handshake");
        }
        if (length < TAG + 1) {
            throw fatal(AlertDescription.decode_error, "a TLS record of " + length + " bytes cannot be protected");
        }
        int plain;
        try {
            plain = readKeys.open(in, at, length, plainIn);
        } catch (GeneralSecurityException e) {
            throw fatal(AlertDescription.bad_record_mac, "a TLS record failed authentication");
        }
        inStart = at + HEADER + length;
        if (inStart == netIn.position()) {
            inStart = 0;
            netIn.clear();
        }
        // TLSInnerPlaintext: content, the content type, then zero padding.
        int type = 0;
        while (plain > 0 && (type = plainIn[--plain]) == 0) {
            // padding
        }
        if (type == 0) {
            throw fatal(AlertDescription.unexpected_message, "a TLS record with no content type");
        }
        switch (type) {
            case CONTENT_APPLICATION_DATA -> {
                plainInStart = 0;
                plainInEnd = plain;
            }
            case CONTENT_ALERT -> onAlert(plain);
            case CONTENT_HANDSHAKE -> onHandshakeMessages(plain);
            default -> throw fatal(AlertDescription.unexpected_message, "a TLS record of inner type " + type
                + " after the handshake");
        }
        return true;
    }

    private void onAlert(int length) throws IOException {
        if (length != 2) {
            throw fatal(AlertDescription.decode_error, "a TLS alert of " + length + " bytes");
        }
        short description = (short) (plainIn[1] & 0xFF);
        if (description == AlertDescription.close_notify) {
            inputClosed = true; // what came before it has been delivered
        } else if (description != AlertDescription.user_canceled) {
            throw new IOException("peer sent TLS alert " + AlertDescription.getText(description));
        }
    }

    private void onHandshakeMessages(int length) throws IOException {
        int have = handshakeMessages.length;
        byte[] all = Arrays.copyOf(handshakeMessages, have + length); // rare: not the data path
        System.arraycopy(plainIn, 0, all, have, length);
        int at = 0;
        while (all.length - at >= 4) {
            int type = all[at] & 0xFF;
            int size = (all[at + 1] & 0xFF) << 16 | (all[at + 2] & 0xFF) << 8 | all[at + 3] & 0xFF;
            if (size > MAX_CIPHERTEXT) {
                throw fatal(AlertDescription.decode_error, "a post-handshake message of " + size + " bytes");
            }
            if (all.length - at < 4 + size) {
                break;
            }
            if (type == HANDSHAKE_KEY_UPDATE) {
                if (size != 1 || (all[at + 4] & 0xFE) != 0) {
                    throw fatal(AlertDescription.decode_error, "a malformed KeyUpdate");
                }
                readKeys = readKeys.next();
                if (all[at + 4] == 1) { // update_requested: answer under the old key, then switch
                    byte[] answer = {(byte) HANDSHAKE_KEY_UPDATE, 0, 0, 1, 0};
                    sealControl(CONTENT_HANDSHAKE, answer);
                    writeKeys = writeKeys.next();
                }
            } else if (type != HANDSHAKE_NEW_SESSION_TICKET) {
                throw fatal(AlertDescription.unexpected_message, "TLS handshake message " + type
                    + " after the handshake");
            }
            at += 4 + size;
        }
        handshakeMessages = Arrays.copyOfRange(all, at, all.length);
    }

    /** Queues an alert (when the keys allow) and returns the exception that ends the connection. */
    private IOException fatal(short description, String why) {
        if (established() && !closeNotifySent) {
            closeNotifySent = true;
            try {
                sealControl(CONTENT_ALERT, new byte[] {AlertLevel.fatal, (byte) description});
                drainOutput();
            } catch (IOException | RuntimeException ignored) {
                // best effort: the connection is being closed anyway
            }
        }
        return new TlsFatalAlert(description, why);
    }

    /** A record of a few bytes that is not application data (alert, KeyUpdate): rare, allocation is fine. */
    private void sealControl(short type, byte[] content) throws IOException {
        if (netOut.remaining() < HEADER + content.length + 1 + TAG) {
            throw new IOException("no room for a TLS " + (type == CONTENT_ALERT ? "alert" : "KeyUpdate"));
        }
        byte[] inner = Arrays.copyOf(content, content.length + 1);
        inner[content.length] = (byte) type;
        seal(inner, inner.length);
    }

    /** Encrypts {@code inner} (content + content type) into one record at the end of {@link #netOut}. */
    private void seal(byte[] inner, int innerLength) throws IOException {
        int at = netOut.position();
        try {
            int n = writeKeys.seal(inner, innerLength, netOut.array(), at);
            netOut.position(at + n);
        } catch (GeneralSecurityException e) {
            throw new IOException("TLS record encryption failed: " + e.getMessage(), e);
        }
    }

    @Override
    public long write(ByteBuffer[] srcs, int offset, int length) throws IOException {
        if (!established()) {
            throw new IllegalStateException("TLS handshake not complete");
        }
        long taken = 0;
        int i = offset;
        int end = offset + length;
        // One record per gathered write, up to 16 KiB: a 24-byte CapsuleResp shares a record with its neighbours
        // rather than paying 22 bytes, an AES-GCM setup and a syscall each.
        while (i < end) {
            if (netOut.remaining() < MAX_RECORD && !drainOutput() && netOut.remaining() < MAX_RECORD) {
                return taken;
            }
            int fill = 0;
            for (; i < end && fill < RECORD_PLAINTEXT; ) {
                ByteBuffer src = srcs[i];
                int n = Math.min(src.remaining(), RECORD_PLAINTEXT - fill);
                src.get(plainOut, fill, n);
                fill += n;
                if (!src.hasRemaining()) {
                    i++;
                }
            }
            if (fill == 0) {
                break;
            }
            plainOut[fill] = CONTENT_APPLICATION_DATA;
            seal(plainOut, fill + 1);
            taken += fill;
        }
        drainOutput();
        return taken;
    }

    /** Moves encrypted output to the socket; true when nothing is left over. */
    private boolean drainOutput() throws IOException {
        if (netOut.position() == 0) {
            return true;
        }
        netOut.flip();
        try {
            channel.write(netOut);
        } finally {
            netOut.compact();
        }
        return netOut.position() == 0;
    }

    @Override
    public boolean flushPending() throws IOException {
        return drainOutput();
    }

    @Override
    public boolean hasPendingOutput() {
        return netOut.position() > 0 || !established() && protocol.getAvailableOutputBytes() > 0;
    }

    @Override
    public boolean hasBufferedInput() {
        if (plainInEnd > plainInStart) {
            return true;
        }
        int buffered = netIn.position() - inStart;
        if (!established() || buffered < HEADER) {
            return false;
        }
        byte[] in = netIn.array();
        return buffered >= HEADER + ((in[inStart + 3] & 0xFF) << 8 | in[inStart + 4] & 0xFF);
    }

    @Override
    public void close() throws IOException {
        try {
            if (established()) {
                if (!closeNotifySent) {
                    closeNotifySent = true;
                    sealControl(CONTENT_ALERT, new byte[] {AlertLevel.warning, AlertDescription.close_notify});
                }
                drainOutput();
            } else if (!protocol.isClosed()) {
                protocol.close(); // queues close_notify
                sendAlertQuietly();
            }
        } catch (IOException | RuntimeException ignored) {
            // the socket may already be gone: closing it is what matters
        } finally {
            readKeys = null;
            channel.close();
        }
    }

    @Override
    public String security() {
        return suite < 0 ? "TLS 1.3 (handshaking)" : "TLS 1.3 (" + suiteName(suite) + ")";
    }

    /**
     * One direction's record protection (RFC 8446 5.3): the AEAD key and IV derived from the traffic secret, and
     * the record sequence number that, XORed into the IV, makes each record's nonce.
     */
    private static final class RecordKeys {
        private final TlsSecret trafficSecret;
        private final int hash;
        private final int keyLength;
        private final SecretKeySpec key;
        private final byte[] iv;
        private final byte[] nonce = new byte[12];
        private final Cipher cipher;
        private long sequence;

        RecordKeys(TlsSecret trafficSecret, int hash, int keyLength) throws IOException {
            this.trafficSecret = trafficSecret;
            this.hash = hash;
            this.keyLength = keyLength;
            byte[] k = TlsCryptoUtils.hkdfExpandLabel(trafficSecret, hash, "key", NO_CONTEXT, keyLength).extract();
            this.key = new SecretKeySpec(k, "AES");
            Arrays.fill(k, (byte) 0);
            this.iv = TlsCryptoUtils.hkdfExpandLabel(trafficSecret, hash, "iv", NO_CONTEXT, 12).extract();
            try {
                this.cipher = Cipher.getInstance("AES/GCM/NoPadding");
            } catch (GeneralSecurityException e) {
                throw new IOException("AES-GCM is not available: " + e.getMessage(), e);
            }
        }

        /** RFC 8446 7.2: the next generation after a KeyUpdate, sequence numbers from 0 again. */
        RecordKeys next() throws IOException {
            TlsSecret updated = TlsCryptoUtils.hkdfExpandLabel(trafficSecret, hash, "traffic upd", NO_CONTEXT,
                TlsCryptoUtils.getHashOutputSize(hash));
            trafficSecret.destroy();
            return new RecordKeys(updated, hash, keyLength);
        }

        private GCMParameterSpec nextNonce() throws IOException {
            if (sequence == -1L) {
                throw new IOException("TLS record sequence number exhausted");
            }
            System.arraycopy(iv, 0, nonce, 0, 12);
            long s = sequence++;
            for (int i = 11; i >= 4; i--) {
                nonce[i] ^= (byte) s;
                s >>>= 8;
            }
            return new GCMParameterSpec(TAG * 8, nonce);
        }

        /** Writes header + ciphertext of {@code inner[0, length)} at {@code out[at]}; returns the record size. */
        int seal(byte[] inner, int length, byte[] out, int at) throws IOException, GeneralSecurityException {
            int ciphertext = length + TAG;
            out[at] = CONTENT_APPLICATION_DATA;
            out[at + 1] = 3;
            out[at + 2] = 3;
            out[at + 3] = (byte) (ciphertext >>> 8);
            out[at + 4] = (byte) ciphertext;
            cipher.init(Cipher.ENCRYPT_MODE, key, nextNonce());
            cipher.updateAAD(out, at, HEADER);
            return HEADER + cipher.doFinal(inner, 0, length, out, at + HEADER);
        }

        /** Decrypts the record whose header is at {@code in[at]}; returns the inner plaintext length. */
        int open(byte[] in, int at, int length, byte[] out) throws IOException, GeneralSecurityException {
            cipher.init(Cipher.DECRYPT_MODE, key, nextNonce());
            cipher.updateAAD(in, at, HEADER);
            return cipher.doFinal(in, at + HEADER, length, out, 0);
        }
    }

    static String suiteName(int suite) {
        return switch (suite) {
            case CipherSuite.TLS_AES_128_GCM_SHA256 -> "TLS_AES_128_GCM_SHA256";
            case CipherSuite.TLS_AES_256_GCM_SHA384 -> "TLS_AES_256_GCM_SHA384";
            default -> String.format("0x%04x", suite);
        };
    }

    private static final int[] SUITES = {CipherSuite.TLS_AES_256_GCM_SHA384, CipherSuite.TLS_AES_128_GCM_SHA256};

    private final class Server extends AbstractTlsServer {
        private final PskResolver psks;

        Server(PskResolver psks) {
            super(CRYPTO);
            this.psks = psks;
        }

        @Override
        public void init(TlsServerContext serverContext) {
            super.init(serverContext);
            TlsStream.this.context = serverContext;
        }

        @Override
        protected ProtocolVersion[] getSupportedVersions() {
            return ProtocolVersion.TLSv13.only();
        }

        @Override
        protected int[] getSupportedCipherSuites() {
            return TlsUtils.getSupportedCipherSuites(getCrypto(), SUITES);
        }

        @Override
        public int getSelectedCipherSuite() throws IOException {
            int selected = super.getSelectedCipherSuite();
            suite = selected;
            return selected;
        }

        @Override
        public TlsCredentials getCredentials() throws IOException {
            // Asked only when no PSK was selected. No certificates here: the handshake fails.
            if (failure == null) {
                failure = "the host offered no PSK identity (certificate authentication is not offered)";
            }
            throw new TlsFatalAlert(AlertDescription.handshake_failure);
        }

        @Override
        public TlsPSKExternal getExternalPSK(Vector identities) {
            StringBuilder refused = new StringBuilder();
            for (Object element : identities) {
                byte[] offered = ((org.bouncycastle.tls.PskIdentity) element).getIdentity();
                String text = new String(offered, StandardCharsets.UTF_8);
                PskIdentity parsed;
                try {
                    parsed = PskIdentity.parse(text);
                } catch (IllegalArgumentException e) {
                    refused.append(refused.length() == 0 ? "" : "; ").append(e.getMessage());
                    continue;
                }
                DerivedPsk derived = psks.resolve(parsed);
                if (derived == null) {
                    refused.append(refused.length() == 0 ? "" : "; ").append(parsed.generated()
                        ? "no generated PSK (secure channel concatenation; never generated, unused too long, or its "
                            + "controller is gone) named " + parsed
                        : "no configured PSK for " + parsed.hostNqn() + " to " + parsed.subsystemNqn());
                    continue;
                }
                try {
                    // A version-1 identity carries a digest of the host's key: a different one is a different key.
                    if (!derived.identity().toString().equals(text)) {
                        refused.append(refused.length() == 0 ? "" : "; ").append("identity ").append(parsed)
                            .append(" does not match the configured PSK of ").append(parsed.hostNqn());
                        continue;
                    }
                    identity = parsed;
                    return new BasicTlsPSKExternal(offered, getCrypto().createSecret(derived.tlsPskUnsafe()),
                        parsed.hash().prfAlgorithm);
                } finally {
                    derived.clear();
                }
            }
            failure = identities.isEmpty() ? "the host offered no PSK identity"
                : "no acceptable PSK identity: " + refused;
            return null;
        }

        @Override
        public void notifyAlertReceived(short level, short description) {
            if (level == AlertLevel.fatal && failure == null) {
                failure = "peer sent alert " + AlertDescription.getText(description);
            }
        }
    }

    private final class Client extends AbstractTlsClient {
        private final DerivedPsk psk;

        Client(DerivedPsk psk) {
            super(CRYPTO);
            this.psk = psk;
        }

        @Override
        public void init(TlsClientContext clientContext) {
            super.init(clientContext);
            TlsStream.this.context = clientContext;
        }

        @Override
        protected ProtocolVersion[] getSupportedVersions() {
            return ProtocolVersion.TLSv13.only();
        }

        @Override
        protected int[] getSupportedCipherSuites() {
            // The PSK's hash fixes the suite (RFC 8446 4.2.11: a PSK goes only with suites of its hash).
            return TlsUtils.getSupportedCipherSuites(getCrypto(), new int[] {psk.identity().hash().cipherSuite});
        }

        @Override
        public Vector getExternalPSKs() {
            Vector<Object> list = new Vector<>(1);
            list.add(new BasicTlsPSKExternal(psk.identity().toString().getBytes(StandardCharsets.UTF_8),
                getCrypto().createSecret(psk.tlsPskUnsafe()), psk.identity().hash().prfAlgorithm));
            return list;
        }

        @Override
        public void notifySelectedCipherSuite(int selected) {
            super.notifySelectedCipherSuite(selected);
            suite = selected;
        }

        @Override
        public void notifySelectedPSK(TlsPSK selected) throws IOException {
            if (selected == null) {
                failure = "the controller did not accept PSK identity " + psk.identity();
                throw new TlsFatalAlert(AlertDescription.handshake_failure);
            }
        }

        @Override
        public TlsAuthentication getAuthentication() throws IOException {
            failure = "the controller wants certificate authentication, not PSK identity " + psk.identity();
            throw new TlsFatalAlert(AlertDescription.handshake_failure);
        }

        @Override
        public void notifyAlertReceived(short level, short description) {
            if (level == AlertLevel.fatal && failure == null) {
                failure = "controller sent alert " + AlertDescription.getText(description)
                    + (description == AlertDescription.decrypt_error || description == AlertDescription.handshake_failure
                    ? " (wrong PSK or no common cipher suite for identity " + psk.identity() + ")" : "");
            }
        }
    }
}
