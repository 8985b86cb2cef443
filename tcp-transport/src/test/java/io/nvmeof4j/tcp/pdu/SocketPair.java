package io.nvmeof4j.tcp.pdu;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;

/**
 * A connected loopback socket pair: {@code near} is the engine's side (non-blocking), {@code far} the peer's
 * (blocking, driven by the test). {@link #awaitReadable} waits, bounded, until the near side has bytes or EOF.
 */
final class SocketPair implements AutoCloseable {
    final SocketChannel near;
    final SocketChannel far;
    private final Selector selector;

    SocketPair() throws IOException {
        try (ServerSocketChannel listener = ServerSocketChannel.open()
            .bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0))) {
            far = SocketChannel.open(listener.getLocalAddress());
            near = listener.accept();
        }
        near.configureBlocking(false);
        selector = Selector.open();
        near.register(selector, SelectionKey.OP_READ);
    }

    void send(byte[] bytes, int offset, int length) throws IOException {
        ByteBuffer src = ByteBuffer.wrap(bytes, offset, length);
        while (src.hasRemaining()) {
            far.write(src);
        }
    }

    /** Waits up to {@code millis} for the near side to be readable (bytes or EOF); false on timeout. */
    boolean awaitReadable(long millis) throws IOException {
        boolean ready = selector.select(millis) > 0;
        selector.selectedKeys().clear();
        return ready;
    }

    @Override
    public void close() throws IOException {
        selector.close();
        near.close();
        far.close();
    }
}
