package io.nvmeof4j.tcp.tls;

import org.bouncycastle.tls.AbstractTlsClient;
import org.bouncycastle.tls.AbstractTlsServer;
import org.bouncycastle.tls.AlertDescription;
import org.bouncycastle.tls.AlertLevel;
import org.bouncycastle.tls.BasicTlsPSKExternal;
import org.bouncycastle.tls.CipherSuite;
import org.bouncycastle.tls.ProtocolVersion;
import org.bouncycastle.tls.TlsAuthentication;
import org.bouncycastle.tls.TlsClientProtocol;
import org.bouncycastle.tls.TlsCredentials;
import org.bouncycastle.tls.TlsFatalAlert;
import org.bouncycastle.tls.TlsPSK;
import org.bouncycastle.tls.TlsPSKExternal;
import org.bouncycastle.tls.TlsProtocol;
import org.bouncycastle.tls.TlsServerProtocol;
import org.bouncycastle.tls.TlsUtils;
import org.bouncycastle.tls.crypto.TlsCrypto;
import org.bouncycastle.tls.crypto.impl.jcajce.JcaTlsCryptoProvider;

import java.io.EOFException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.util.Vector;

/**
 * TLS 1.3 with an external PSK over a non-blocking socket, for both roles (NVMe/TCP 1.0c 3.6: the TLS handshake
 * comes first on the socket, ICReq/ICResp and every PDU after it travel as TLS application data).
 * <p><b>Library.</b> The JDK's TLS has no external PSKs; BouncyCastle's {@code bctls} does, through its low-level
 * {@link TlsServerProtocol}/{@link TlsClientProtocol} in non-blocking mode (offerInput/readOutput), which fits a
 * selector reactor without threads or streams. Only TLS 1.3, only TLS_AES_128_GCM_SHA256 and
 * TLS_AES_256_GCM_SHA384, only PSK authentication with (EC)DHE (psk_dhe_ke): no certificates, no resumption.
 * <p><b>Cost.</b> Records are encrypted and decrypted in user space: one copy each way between the PDU buffers and
 * the record buffers, and BouncyCastle allocates per record. This is the price of TLS here (the host kernel has no
 * {@code tls} ULP to hand the keys to); plain NVMe/TCP queues keep the zero-copy path, since they use
 * {@link TcpStream#plain}.
 */
public final class TlsStream extends TcpStream {
    /** Plaintext per TLS record: the TLS 1.3 maximum, so bulk data needs the fewest records. */
    private static final int RECORD_PLAINTEXT = 16384;
    private static final int NET_BUFFER = 4 * (RECORD_PLAINTEXT + 256);
    private static final SecureRandom RANDOM = new SecureRandom();
    /**
     * The JDK's own providers do the record crypto: its AES-GCM uses the CPU's AES and carry-less multiply
     * instructions, BouncyCastle's pure-Java engine does not (measured here: about 10x fewer IOPS with it).
     */
    private static final TlsCrypto CRYPTO = new JcaTlsCryptoProvider().create(RANDOM);

    private final TlsProtocol protocol;
    private final boolean server;
    private final ByteBuffer netIn = ByteBuffer.allocate(NET_BUFFER);
    /** Encrypted bytes the socket has not taken yet, between position and limit. */
    private final ByteBuffer netOut = ByteBuffer.allocateDirect(NET_BUFFER);
    private final byte[] plain = new byte[RECORD_PLAINTEXT];
    private PskIdentity identity;
    private String failure;
    private boolean inputClosed;
    private volatile int suite = -1;

    private TlsStream(SocketChannel channel, TlsProtocol protocol, boolean server) {
        super(channel);
        this.protocol = protocol;
        this.server = server;
        netOut.flip();
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
                if (!drainOutput()) {
                    return false;
                }
                if (!protocol.isHandshaking()) {
                    if (protocol.isClosed()) {
                        throw new IOException("TLS handshake ended without a connection");
                    }
                    return true;
                }
                netIn.clear();
                int n = channel.read(netIn);
                if (n < 0) {
                    throw new EOFException("peer closed the connection during the TLS handshake");
                }
                if (n == 0) {
                    return false;
                }
                protocol.offerInput(netIn.array(), 0, n);
            }
        } catch (IOException e) {
            sendAlertQuietly();
            String why = failure != null ? failure : describe(e);
            throw new IOException("TLS 1.3 handshake failed: " + why, e);
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
        byte[] bytes = new byte[src.remaining()];
        src.get(bytes);
        try {
            protocol.offerInput(bytes);
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
        int total = 0;
        for (;;) {
            int available = protocol.getAvailableInputBytes();
            if (available > 0) {
                total += protocol.readInput(dst, Math.min(available, dst.remaining()));
                if (!dst.hasRemaining()) {
                    return total;
                }
                continue;
            }
            if (inputClosed) {
                return total > 0 ? total : -1;
            }
            netIn.clear();
            int n = channel.read(netIn);
            if (n < 0) {
                inputClosed = true;
                continue;
            }
            if (n == 0) {
                return total;
            }
            protocol.offerInput(netIn.array(), 0, n);
            if (protocol.isClosed()) {
                inputClosed = true; // close_notify: what came before it is still delivered
            }
            drainOutput(); // post-handshake messages (KeyUpdate) may need an answer
        }
    }

    @Override
    public long write(ByteBuffer[] srcs, int offset, int length) throws IOException {
        if (!drainOutput()) {
            return 0;
        }
        long taken = 0;
        int fill = 0;
        // Small PDUs (a 24-byte CapsuleResp) share one record rather than paying 22 bytes and a syscall each.
        for (int i = offset; i < offset + length; i++) {
            ByteBuffer src = srcs[i];
            while (src.hasRemaining()) {
                int n = Math.min(src.remaining(), plain.length - fill);
                src.get(plain, fill, n);
                fill += n;
                taken += n;
                if (fill == plain.length) {
                    protocol.writeApplicationData(plain, 0, fill);
                    fill = 0;
                    if (!drainOutput()) {
                        return taken;
                    }
                }
            }
        }
        if (fill > 0) {
            protocol.writeApplicationData(plain, 0, fill);
            drainOutput();
        }
        return taken;
    }

    /** Moves encrypted output to the socket; true when nothing is left over. */
    private boolean drainOutput() throws IOException {
        for (;;) {
            if (netOut.hasRemaining()) {
                channel.write(netOut);
                if (netOut.hasRemaining()) {
                    return false;
                }
            }
            int available = protocol.getAvailableOutputBytes();
            if (available == 0) {
                return true;
            }
            netOut.clear();
            protocol.readOutput(netOut, Math.min(available, netOut.capacity()));
            netOut.flip();
        }
    }

    @Override
    public boolean flushPending() throws IOException {
        return drainOutput();
    }

    @Override
    public boolean hasPendingOutput() {
        return netOut.hasRemaining() || protocol.getAvailableOutputBytes() > 0;
    }

    @Override
    public boolean hasBufferedInput() {
        return protocol.getAvailableInputBytes() > 0;
    }

    @Override
    public void close() throws IOException {
        try {
            if (!protocol.isClosed()) {
                protocol.close(); // queues close_notify
                drainOutput();
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
                    refused.append(refused.length() == 0 ? "" : "; ").append("no configured PSK for ")
                        .append(parsed.hostNqn()).append(" to ").append(parsed.subsystemNqn());
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
