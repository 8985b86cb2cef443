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
import org.bouncycastle.tls.crypto.TlsSecret;
import org.bouncycastle.tls.crypto.impl.jcajce.JcaTlsCryptoProvider;

import javax.crypto.Cipher;
import java.io.EOFException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.util.Vector;

import static io.nvmeof4j.tcp.tls.TlsRecordLayer.CONTENT_APPLICATION_DATA;
import static io.nvmeof4j.tcp.tls.TlsRecordLayer.CONTENT_CHANGE_CIPHER_SPEC;
import static io.nvmeof4j.tcp.tls.TlsRecordLayer.HEADER;
import static io.nvmeof4j.tcp.tls.TlsRecordLayer.MAX_RECORD;

/**
 * TLS 1.3 with an external PSK over a non-blocking socket, for both roles (NVMe/TCP 1.0c 3.6: the TLS handshake
 * comes first on the socket, ICReq/ICResp and every PDU after it travel as TLS application data).
 * <p><b>Library.</b> The JDK's TLS has no external PSKs; BouncyCastle's {@code bctls} does, through its low-level
 * {@link TlsServerProtocol}/{@link TlsClientProtocol} in non-blocking mode (offerInput/readOutput), which fits a
 * selector reactor without threads or streams. Only TLS 1.3, only TLS_AES_128_GCM_SHA256 and
 * TLS_AES_256_GCM_SHA384, only PSK authentication with (EC)DHE (psk_dhe_ke): no certificates, no resumption.
 * <p><b>Records.</b> BouncyCastle runs the handshake only. Once it is complete {@link TlsRecordLayer} protects the
 * records itself (RFC 8446 5.2-5.4) with the application traffic keys derived from BouncyCastle's traffic secrets, the way
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
    private static final SecureRandom RANDOM = new SecureRandom();
    /**
     * The JDK's own providers do the handshake crypto: its AES-GCM uses the CPU's AES and carry-less multiply
     * instructions, BouncyCastle's pure-Java engine does not (measured here: about 10x fewer IOPS with it).
     */
    private static final TlsCrypto CRYPTO = new JcaTlsCryptoProvider().create(RANDOM);

    private final TlsProtocol protocol;
    private final boolean server;
    /** Bytes from the socket not yet given to BouncyCastle or to the record layer (two records fit). */
    private final ByteBuffer netIn = ByteBuffer.allocate(2 * MAX_RECORD);
    /** Encrypted bytes the socket has not taken yet, between 0 and position (two full records fit). */
    private final ByteBuffer netOut = ByteBuffer.allocate(2 * MAX_RECORD + 64);
    /** After the handshake: the records, protected with the traffic keys (null during the handshake). */
    private TlsRecordLayer records;
    /** BouncyCastle's view of the connection: the negotiated suite and the traffic secrets. */
    private TlsContext context;
    private PskIdentity identity;
    private String failure;
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

    /** The record layer; refused before the handshake is complete. */
    private TlsRecordLayer established() {
        if (records == null) {
            throw new IllegalStateException("TLS handshake not complete");
        }
        return records;
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
                if (records != null) {
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
                int length = TlsRecordLayer.recordLength(in, at);
                if (TlsRecordLayer.overflow(length) != null) {
                    throw new TlsFatalAlert(AlertDescription.record_overflow, TlsRecordLayer.overflow(length));
                }
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
        records = new TlsRecordLayer(channel, netIn, netOut,
            new TlsRecordLayer.RecordKeys(server ? clientSecret : serverSecret, hash, keyLength),
            new TlsRecordLayer.RecordKeys(server ? serverSecret : clientSecret, hash, keyLength));
    }

    /** Moves what BouncyCastle wants to send (handshake records, alerts) into {@link #netOut}. */
    private void pullHandshakeOutput() throws IOException {
        int available;
        while (records == null && (available = protocol.getAvailableOutputBytes()) > 0) {
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
        return established().read(dst);
    }

    @Override
    public long write(ByteBuffer[] srcs, int offset, int length) throws IOException {
        return established().write(srcs, offset, length);
    }

    /** Moves encrypted output to the socket; true when nothing is left over. */
    private boolean drainOutput() throws IOException {
        return TlsRecordLayer.drain(channel, netOut);
    }

    @Override
    public boolean flushPending() throws IOException {
        return drainOutput();
    }

    @Override
    public boolean hasPendingOutput() {
        return netOut.position() > 0 || records == null && protocol.getAvailableOutputBytes() > 0;
    }

    @Override
    public boolean hasBufferedInput() {
        return records != null && records.hasBufferedInput();
    }

    @Override
    public void close() throws IOException {
        try {
            if (records != null) {
                records.close();
            } else if (!protocol.isClosed()) {
                protocol.close(); // queues close_notify
                sendAlertQuietly();
            }
        } catch (IOException | RuntimeException ignored) {
            // the socket may already be gone: closing it is what matters
        } finally {
            channel.close();
        }
    }

    @Override
    public String security() {
        return suite < 0 ? "TLS 1.3 (handshaking)" : "TLS 1.3 (" + suiteName(suite) + ")";
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
