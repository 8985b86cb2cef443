package io.nvmeof4j.tcp;

import io.nvmeof4j.tcp.pdu.PduReceiver;
import io.nvmeof4j.tcp.tls.PskResolver;
import io.nvmeof4j.tcp.tls.TcpStream;
import io.nvmeof4j.tcp.tls.TlsStream;

import java.io.IOException;
import java.nio.channels.SocketChannel;

/**
 * The start of a controller connection on a TLS port (NVMe/TCP 1.0c 3.6): the first byte tells a TLS handshake
 * record (0x16, a ClientHello) from a plain ICReq, then the handshake runs over the socket, fed the bytes already
 * read. On a port where TLS is not required, a connection that starts with anything else is served in plain text,
 * as nvmet does. The handshake is bounded by the port's pre-Connect timeout ({@code ConnectionLimits}), like
 * everything before Connect. Reactor thread only.
 */
final class TlsStart {
    private static final int TLS_HANDSHAKE_RECORD = 0x16;

    private final SocketChannel channel;
    private final TcpListener listener;
    private TlsStream handshake;

    TlsStart(SocketChannel channel, TcpListener listener) {
        this.channel = channel;
        this.listener = listener;
    }

    /**
     * Reads and handshakes as far as the socket allows. Returns the stream PDUs come on once that is known (the
     * plain one, or TLS records after the handshake; decrypted bytes may already be buffered), null while the
     * handshake goes on.
     *
     * @throws IOException naming why the connection must close
     */
    TcpStream advance(PduReceiver receiver, TcpStream plain) throws IOException {
        if (handshake == null) {
            if (receiver.readRaw(channel) < 0) {
                throw new IOException("host closed the connection before the TLS handshake");
            }
            if (receiver.buffered() == 0) {
                return null;
            }
            int first = receiver.firstBufferedByte();
            if (first != TLS_HANDSHAKE_RECORD) {
                if (listener.options().tlsRequired()) {
                    throw new IOException("TLS is required on this port, but the host sent a plain PDU (type 0x"
                        + Integer.toHexString(first) + ")");
                }
                return plain;
            }
            PskResolver psks = listener.pskResolver();
            if (psks == null) {
                throw new IOException("TLS handshake from the host, but no PSKs are configured (hosts[].tls_key)");
            }
            handshake = TlsStream.server(channel, psks);
            handshake.offerEarlyInput(receiver.takeBuffered());
        }
        // Done: the handshake's stream carries the PDUs (it may still hold its last flight for the socket).
        return handshake.handshake() ? handshake : null;
    }

    /** Handshake records the socket has not taken yet: keep OP_WRITE armed. */
    boolean hasPendingOutput() {
        return handshake != null && handshake.hasPendingOutput();
    }

    /** The stream to close: the TLS stream once a handshake started, else {@code current}. */
    TcpStream closing(TcpStream current) {
        return handshake != null ? handshake : current;
    }
}
