package io.nvmeof4j.tcp.tls;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLSocket;
import java.io.IOException;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.HexFormat;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Both roles of {@link TlsStream} over a real loopback socket pair, driven non-blocking from one thread. */
class TlsStreamTest {
    private static final String HOST = "nqn.2014-08.org.nvmexpress:uuid:tls-test-host";
    private static final String SUBSYS = "nqn.2026-11.io.nvmeof4j:tls-test";
    private static final ConfiguredPsk KEY_256 = ConfiguredPsk.parse(
        "NVMeTLSkey-1:01:VRLbtnN9AQb2WXW3c9+wEf/DRLz0QuLdbYvEhwtdWwNf9LrZ:");
    private static final ConfiguredPsk KEY_384 = ConfiguredPsk.parse(
        "NVMeTLSkey-1:02:VRLbtnN9AQb2WXW3c9+wEf/DRLz0QuLdbYvEhwtdWwP/w0S89ELi3W2LxIcLXVsDn8kXZQ==:");
    private static final ConfiguredPsk OTHER_KEY = ConfiguredPsk.of(1, HexFormat.of().parseHex(
        "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"));
    private static final long DEADLINE_NANOS = TimeUnit.SECONDS.toNanos(10);

    private LoopbackPair pair;
    private ServerSocketChannel listener;
    private SocketChannel hostSide;
    private SocketChannel controllerSide;

    @BeforeEach
    void connect() throws IOException {
        pair = LoopbackPair.open();
        listener = pair.listener;
        hostSide = pair.hostSide;
        controllerSide = pair.controllerSide;
    }

    @AfterEach
    void close() throws IOException {
        pair.close();
    }

    /** The controller's store: one host with one key. */
    private static PskResolver store(ConfiguredPsk key) {
        return identity -> identity.hostNqn().equals(HOST)
            ? NvmeTlsKeys.derive(key, identity.hostNqn(), identity.subsystemNqn(), identity.version()) : null;
    }

    /** Runs both handshakes to the end; the first failure is thrown. */
    private static void handshake(TlsStream client, TlsStream server) throws IOException {
        long start = System.nanoTime();
        boolean clientDone = false;
        boolean serverDone = false;
        while (!(clientDone && serverDone)) {
            if (System.nanoTime() - start > DEADLINE_NANOS) {
                throw new IOException("handshake did not finish in 10 s");
            }
            serverDone = server.handshake();
            clientDone = client.handshake();
        }
    }

    @Test
    void shouldMoveDataBothWaysWithEitherCipherSuite() throws IOException {
        for (int version = 0; version <= 1; version++) {
            for (ConfiguredPsk key : new ConfiguredPsk[] {KEY_256, KEY_384}) {
                connect();
                TlsStream client = TlsStream.client(hostSide, NvmeTlsKeys.derive(key, HOST, SUBSYS, version));
                TlsStream server = TlsStream.server(controllerSide, store(key));
                handshake(client, server);
                String suite = key == KEY_256 ? "TLS_AES_128_GCM_SHA256" : "TLS_AES_256_GCM_SHA384";
                assertThat(server.security()).isEqualTo("TLS 1.3 (" + suite + ")");
                assertThat(client.security()).isEqualTo("TLS 1.3 (" + suite + ")");
                assertThat(server.identity().hostNqn()).isEqualTo(HOST);
                assertThat(server.identity().subsystemNqn()).isEqualTo(SUBSYS);
                assertThat(server.identity().version()).isEqualTo(version);
                transfer(client, server, 3 << 20);
                transfer(server, client, 1 << 20);
            }
        }
    }

    /** Writes {@code size} random bytes in uneven gathering writes and checks every byte arrives in order. */
    private static void transfer(TcpStream from, TcpStream to, int size) throws IOException {
        byte[] data = new byte[size];
        new Random(size).nextBytes(data);
        ByteBuffer source = ByteBuffer.wrap(data);
        ByteBuffer sink = ByteBuffer.allocateDirect(size);
        ByteBuffer chunk = ByteBuffer.allocateDirect(24);
        long start = System.nanoTime();
        while (sink.hasRemaining()) {
            assertThat(System.nanoTime() - start).as("transfer within 10 s").isLessThan(DEADLINE_NANOS);
            if (source.hasRemaining() && from.flushPending()) {
                int n = Math.min(source.remaining(), 24);
                chunk.clear();
                chunk.put(source.array(), source.position(), n).flip();
                ByteBuffer rest = source.slice().position(n).limit(Math.min(source.remaining(), n + 70_000));
                int restStart = rest.position();
                long taken = from.write(new ByteBuffer[] {chunk, rest}, 0, 2);
                assertThat(taken).isEqualTo(n - chunk.remaining() + rest.position() - restStart);
                source.position(source.position() + (int) taken);
            } else if (from.hasPendingOutput()) {
                from.flushPending();
            }
            int before = sink.position();
            int read = to.read(sink);
            assertThat(read).isGreaterThanOrEqualTo(0);
            assertThat(sink.position() - before).isEqualTo(read);
        }
        sink.flip();
        assertThat(sink).isEqualTo(ByteBuffer.wrap(data));
        assertThat(to.hasBufferedInput()).isFalse();
    }

    @Test
    void shouldRefuseAWrongPskOnBothSidesWithoutNamingTheKey() throws IOException {
        TlsStream client = TlsStream.client(hostSide, NvmeTlsKeys.derive(OTHER_KEY, HOST, SUBSYS, 0));
        TlsStream server = TlsStream.server(controllerSide, store(KEY_256));
        assertThatThrownBy(() -> handshake(client, server))
            .isInstanceOf(IOException.class)
            .hasMessageContaining("TLS 1.3 handshake failed")
            .hasMessageContaining("decrypt_error")
            .satisfies(e -> assertThat(e.getMessage()).doesNotContain("VRLb").doesNotContainIgnoringCase("5512db"));
        // The client reads the server's alert and fails too, naming the identity it offered.
        assertThatThrownBy(() -> {
            for (int i = 0; i < 100; i++) {
                client.handshake();
            }
        }).hasMessageContaining("NVMe0R01 " + HOST);
    }

    @Test
    void shouldRefuseAVersion1IdentityWhoseDigestIsOfAnotherKey() throws IOException {
        TlsStream client = TlsStream.client(hostSide, NvmeTlsKeys.derive(OTHER_KEY, HOST, SUBSYS, 1));
        TlsStream server = TlsStream.server(controllerSide, store(KEY_256));
        assertThatThrownBy(() -> handshake(client, server))
            .hasMessageContaining("does not match the configured PSK of " + HOST);
    }

    @Test
    void shouldRefuseAnUnknownHostAndASuiteTheKeyCannotUse() throws IOException {
        TlsStream client = TlsStream.client(hostSide,
            NvmeTlsKeys.derive(KEY_256, "nqn.2014-08.org.nvmexpress:uuid:stranger", SUBSYS, 1));
        TlsStream server = TlsStream.server(controllerSide, store(KEY_256));
        assertThatThrownBy(() -> handshake(client, server))
            .hasMessageContaining("no configured PSK for nqn.2014-08.org.nvmexpress:uuid:stranger");
    }

    @Test
    void shouldRefuseAClientHelloThatIsNotTls13OrOffersNoPsk() throws Exception {
        for (String protocol : new String[] {"TLSv1.2", "TLSv1.3"}) {
            connect();
            // The JDK's client: TLS 1.2 only, or TLS 1.3 without any external PSK.
            SocketChannel raw = SocketChannel.open(listener.getLocalAddress());
            SocketChannel accepted = listener.accept();
            accepted.configureBlocking(false);
            CompletableFuture<String> clientResult = CompletableFuture.supplyAsync(() -> {
                try (SSLSocket socket = (SSLSocket) SSLContext.getDefault().getSocketFactory()
                    .createSocket(raw.socket(), "localhost", raw.socket().getPort(), true)) {
                    socket.setEnabledProtocols(new String[] {protocol});
                    socket.setSoTimeout(10_000);
                    socket.startHandshake();
                    return "handshake succeeded";
                } catch (IOException | java.security.GeneralSecurityException e) {
                    return e.getMessage();
                }
            });
            TlsStream server = TlsStream.server(accepted, store(KEY_256));
            String expected = protocol.equals("TLSv1.2") ? "protocol_version" : "no PSK identity";
            assertThatThrownBy(() -> {
                long start = System.nanoTime();
                while (!server.handshake()) {
                    if (System.nanoTime() - start > DEADLINE_NANOS) {
                        throw new AssertionError("no verdict in 10 s");
                    }
                    Thread.onSpinWait();
                }
            }).isInstanceOf(IOException.class).hasMessageContaining(expected);
            assertThat(clientResult.get(10, TimeUnit.SECONDS)).isNotEqualTo("handshake succeeded");
            accepted.close();
            raw.close();
        }
    }

    @Test
    void shouldRefuseAPlainIcReqOnATlsSocket() throws IOException {
        TlsStream server = TlsStream.server(controllerSide, store(KEY_256));
        ByteBuffer icreq = ByteBuffer.allocate(128);
        icreq.put(0, (byte) 0x00).put(2, (byte) 128).putInt(4, Integer.reverseBytes(128));
        hostSide.write(icreq);
        assertThatThrownBy(() -> {
            for (int i = 0; i < 1000 && !server.handshake(); i++) {
                Thread.onSpinWait();
            }
        }).isInstanceOf(IOException.class).hasMessageContaining("TLS 1.3 handshake failed");
    }

    /**
     * The records after the handshake are protected by {@link TlsStream} itself: checked against an independent
     * implementation, BouncyCastle's own record layer (a blocking BouncyCastle client on a thread), in both
     * directions, across records of every size and across KeyUpdates (RFC 8446 4.6.3) the client starts and asks
     * the controller to answer, with a close_notify at the end.
     */
    @Test
    void shouldInteroperateWithBouncyCastlesRecordLayerAcrossKeyUpdates() throws Exception {
        for (ConfiguredPsk key : new ConfiguredPsk[] {KEY_256, KEY_384}) {
            connect();
            DerivedPsk psk = NvmeTlsKeys.derive(key, HOST, SUBSYS, 1);
            TlsStream server = TlsStream.server(controllerSide, store(key));
            hostSide.configureBlocking(true);
            Socket socket = hostSide.socket();
            socket.setSoTimeout(10_000);
            byte[] up = new byte[200_000];
            new Random(1).nextBytes(up);
            CompletableFuture<byte[]> echoed = CompletableFuture.supplyAsync(() -> {
                try {
                    org.bouncycastle.tls.TlsClientProtocol bc = new org.bouncycastle.tls.TlsClientProtocol(
                        socket.getInputStream(), socket.getOutputStream());
                    bc.connect(new BouncyCastleClient(psk));
                    java.lang.reflect.Method keyUpdate = org.bouncycastle.tls.TlsProtocol.class
                        .getDeclaredMethod("send13KeyUpdate", boolean.class);
                    keyUpdate.setAccessible(true);
                    byte[] back = new byte[up.length];
                    int sent = 0;
                    int received = 0;
                    for (int size = 1; sent < up.length; size = size * 3 + 7) {
                        int n = Math.min(size, up.length - sent);
                        bc.getOutputStream().write(up, sent, n);
                        sent += n;
                        if (sent > up.length / 2 && sent - n <= up.length / 2) {
                            keyUpdate.invoke(bc, true); // and the controller must answer with its own
                        }
                        while (received < sent) {
                            received += bc.getInputStream().read(back, received, sent - received);
                        }
                    }
                    bc.close(); // close_notify
                    return back;
                } catch (Exception e) {
                    throw new java.util.concurrent.CompletionException(e);
                }
            });
            long start = System.nanoTime();
            while (!server.handshake()) {
                assertThat(System.nanoTime() - start).as("handshake within 10 s").isLessThan(DEADLINE_NANOS);
                Thread.onSpinWait();
            }
            // Echo everything until the client's close_notify ends the stream.
            ByteBuffer buffer = ByteBuffer.allocateDirect(70_000);
            ByteBuffer[] iov = {buffer};
            long total = 0;
            for (int n = 0; n >= 0; ) {
                assertThat(System.nanoTime() - start).as("echo within 10 s").isLessThan(DEADLINE_NANOS);
                buffer.clear();
                n = server.read(buffer);
                buffer.flip();
                while (buffer.hasRemaining() || !server.flushPending()) {
                    server.write(iov, 0, 1);
                }
                total += Math.max(n, 0);
            }
            assertThat(echoed.get(10, TimeUnit.SECONDS)).isEqualTo(up);
            assertThat(total).isEqualTo(up.length);
            server.close();
        }
    }

    /**
     * Bad records after the handshake: one that fails authentication (bad_record_mac), one longer than TLS allows
     * (record_overflow), one of a type that has no place there (unexpected_message). Each ends the stream with
     * the alert sent to the peer, which reads it as the reason.
     */
    @Test
    void shouldRefuseTamperedOversizedAndMistypedRecordsWithTheirAlerts() throws Exception {
        byte[][] bad = {
            record(23, 40), // ciphertext the client never sealed: the tag cannot match
            record(23, 16_384 + 256 + 1), // beyond 2^14 + 256
            record(22, 40), // a plaintext handshake record after the handshake
        };
        String[] expected = {"bad_record_mac", "record_overflow", "unexpected_message"};
        for (int i = 0; i < bad.length; i++) {
            connect();
            TlsStream client = TlsStream.client(hostSide, NvmeTlsKeys.derive(KEY_256, HOST, SUBSYS, 1));
            TlsStream server = TlsStream.server(controllerSide, store(KEY_256));
            handshake(client, server);
            transfer(client, server, 1000);
            ByteBuffer raw = ByteBuffer.wrap(bad[i]);
            while (raw.hasRemaining()) {
                hostSide.write(raw); // under the client's TLS: the bytes the controller gets are not its records
            }
            ByteBuffer sink = ByteBuffer.allocate(64);
            String why = expected[i];
            assertThatThrownBy(() -> {
                long start = System.nanoTime();
                while (System.nanoTime() - start < DEADLINE_NANOS) {
                    server.read(sink.clear());
                }
            }).isInstanceOf(IOException.class).hasMessageContaining(why);
            assertThatThrownBy(() -> {
                long start = System.nanoTime();
                while (System.nanoTime() - start < DEADLINE_NANOS) {
                    if (client.read(sink.clear()) < 0) {
                        return;
                    }
                }
            }).as("the host learns why").isInstanceOf(IOException.class).hasMessageContaining("alert " + why);
        }
    }

    private static byte[] record(int type, int length) {
        byte[] r = new byte[5 + length];
        new Random(length).nextBytes(r);
        r[0] = (byte) type;
        r[1] = 3;
        r[2] = 3;
        r[3] = (byte) (length >>> 8);
        r[4] = (byte) length;
        return r;
    }

    /** A TLS 1.3 PSK client that uses BouncyCastle's record layer (nothing of {@link TlsStream}). */
    private static final class BouncyCastleClient extends org.bouncycastle.tls.AbstractTlsClient {
        private final DerivedPsk psk;

        BouncyCastleClient(DerivedPsk psk) {
            super(new org.bouncycastle.tls.crypto.impl.jcajce.JcaTlsCryptoProvider()
                .create(new java.security.SecureRandom()));
            this.psk = psk;
        }

        @Override
        protected org.bouncycastle.tls.ProtocolVersion[] getSupportedVersions() {
            return org.bouncycastle.tls.ProtocolVersion.TLSv13.only();
        }

        @Override
        protected int[] getSupportedCipherSuites() {
            return new int[] {psk.identity().hash().cipherSuite};
        }

        @Override
        public java.util.Vector getExternalPSKs() {
            java.util.Vector<Object> list = new java.util.Vector<>(1);
            list.add(new org.bouncycastle.tls.BasicTlsPSKExternal(
                psk.identity().toString().getBytes(java.nio.charset.StandardCharsets.UTF_8),
                getCrypto().createSecret(psk.tlsPskUnsafe()), psk.identity().hash().prfAlgorithm));
            return list;
        }

        @Override
        public org.bouncycastle.tls.TlsAuthentication getAuthentication() {
            throw new IllegalStateException("PSK only");
        }
    }
}
