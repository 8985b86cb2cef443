package io.nvmeof4j.tcp.tls;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;

/**
 * The byte stream under the PDUs of one NVMe/TCP queue, the same for the controller ({@code TcpConnection}) and
 * the host ({@code TcpHostQueue}) roles: the socket itself ({@link #plain}) or TLS 1.3 records over it
 * ({@link TlsStream}). Non-blocking: the owner registers {@link #channel()} with its selector as before.
 * <p>Two things differ from a bare socket and both owners honour them: a TLS stream may hold decrypted bytes
 * the socket no longer signals ({@link #hasBufferedInput()}: poll again without waiting for OP_READ), and it may
 * hold encrypted bytes the socket did not take ({@link #hasPendingOutput()}: keep OP_WRITE armed and call
 * {@link #flushPending()} when it fires).
 */
public abstract sealed class TcpStream permits TcpStream.Plain, TlsStream {
    protected final SocketChannel channel;

    TcpStream(SocketChannel channel) {
        this.channel = channel;
    }

    public static TcpStream plain(SocketChannel channel) {
        return new Plain(channel);
    }

    public final SocketChannel channel() {
        return channel;
    }

    /** Reads into {@code dst}; -1 at end of stream; fewer bytes than asked means nothing more is buffered. */
    public abstract int read(ByteBuffer dst) throws IOException;

    /** Gathering write; returns the bytes taken from {@code srcs}. */
    public abstract long write(ByteBuffer[] srcs, int offset, int length) throws IOException;

    /** Sends bytes an earlier write left behind; true when none are left. */
    public abstract boolean flushPending() throws IOException;

    public abstract boolean hasPendingOutput();

    public abstract boolean hasBufferedInput();

    public void shutdownOutput() throws IOException {
        channel.shutdownOutput();
    }

    public void close() throws IOException {
        channel.close();
    }

    /** "TLS 1.3 (TLS_AES_128_GCM_SHA256)" or "plain": for logs and the management API. */
    public abstract String security();

    static final class Plain extends TcpStream {
        Plain(SocketChannel channel) {
            super(channel);
        }

        @Override
        public int read(ByteBuffer dst) throws IOException {
            return channel.read(dst);
        }

        @Override
        public long write(ByteBuffer[] srcs, int offset, int length) throws IOException {
            return channel.write(srcs, offset, length);
        }

        @Override
        public boolean flushPending() {
            return true;
        }

        @Override
        public boolean hasPendingOutput() {
            return false;
        }

        @Override
        public boolean hasBufferedInput() {
            return false;
        }

        @Override
        public String security() {
            return "plain";
        }
    }
}
