package io.nvmeof4j.tcp.tls;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;

/** Two connected non-blocking socket channels over the loopback address, a host's and a controller's, and the listener. */
final class LoopbackPair implements AutoCloseable {
    final ServerSocketChannel listener;
    final SocketChannel hostSide;
    final SocketChannel controllerSide;

    private LoopbackPair(ServerSocketChannel listener, SocketChannel hostSide, SocketChannel controllerSide) {
        this.listener = listener;
        this.hostSide = hostSide;
        this.controllerSide = controllerSide;
    }

    static LoopbackPair open() throws IOException {
        ServerSocketChannel listener = ServerSocketChannel.open()
            .bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
        SocketChannel hostSide = SocketChannel.open(listener.getLocalAddress());
        SocketChannel controllerSide = listener.accept();
        hostSide.configureBlocking(false);
        controllerSide.configureBlocking(false);
        return new LoopbackPair(listener, hostSide, controllerSide);
    }

    @Override
    public void close() throws IOException {
        hostSide.close();
        controllerSide.close();
        listener.close();
    }
}
