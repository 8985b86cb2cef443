package io.nvmeof4j.initiator;

import io.nvmeof4j.protocol.spi.TransportAddress;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A TCP proxy on 127.0.0.1 in front of a target. {@link #freeze()} makes it stop forwarding in both directions
 * without closing anything: to the host the controller just goes silent (what a hung target looks like), and
 * commands sent meanwhile stay in flight. {@link #close()} drops what it holds, so those never reach the target.
 */
public final class FreezableProxy implements AutoCloseable {
    private final ServerSocket server;
    private final TransportAddress target;
    private final List<Socket> sockets = new CopyOnWriteArrayList<>();
    private final Object gate = new Object();
    private volatile boolean frozen;
    private volatile boolean closed;

    public FreezableProxy(TransportAddress target) throws IOException {
        this(target, 0);
    }

    /** On {@code port} (0: any free one): a closed proxy's port taken again is "the port came back". */
    public FreezableProxy(TransportAddress target, int port) throws IOException {
        this.target = target;
        this.server = new ServerSocket();
        server.setReuseAddress(true);
        server.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 50);
        Thread acceptor = new Thread(this::accept, "proxy-acceptor");
        acceptor.setDaemon(true);
        acceptor.start();
    }

    public TransportAddress address() {
        return TransportAddress.tcp("127.0.0.1", server.getLocalPort());
    }

    public void freeze() {
        frozen = true;
    }

    public void thaw() {
        synchronized (gate) {
            frozen = false;
            gate.notifyAll();
        }
    }

    private void accept() {
        while (!closed) {
            try {
                Socket client = server.accept();
                Socket upstream = new Socket();
                upstream.connect(new InetSocketAddress(target.traddr(), target.port()), 5_000);
                client.setTcpNoDelay(true);
                upstream.setTcpNoDelay(true);
                sockets.add(client);
                sockets.add(upstream);
                pump(client, upstream);
                pump(upstream, client);
            } catch (IOException e) {
                if (closed) {
                    return;
                }
            }
        }
    }

    private void pump(Socket from, Socket to) {
        Thread t = new Thread(() -> {
            byte[] buffer = new byte[64 * 1024];
            try (InputStream in = from.getInputStream(); OutputStream out = to.getOutputStream()) {
                int n;
                while ((n = in.read(buffer)) >= 0) {
                    synchronized (gate) {
                        long deadline = System.currentTimeMillis() + 60_000;
                        while (frozen && !closed && System.currentTimeMillis() < deadline) {
                            gate.wait(100);
                        }
                    }
                    if (closed) {
                        break; // closed while frozen: what was held is lost with the connection, as in a crash
                    }
                    out.write(buffer, 0, n);
                }
            } catch (IOException | InterruptedException e) {
                // connection over
            } finally {
                closeQuietly(from);
                closeQuietly(to);
            }
        }, "proxy-pump");
        t.setDaemon(true);
        t.start();
    }

    /** Drops every proxied connection (the host sees its queues close). */
    void dropConnections() {
        for (Socket s : sockets) {
            closeQuietly(s);
        }
        sockets.clear();
    }

    private static void closeQuietly(Socket s) {
        try {
            s.close();
        } catch (IOException ignored) {
            // closing anyway
        }
    }

    @Override
    public void close() {
        closed = true;
        thaw();
        closeQuietly2(server);
        dropConnections();
    }

    private static void closeQuietly2(ServerSocket s) {
        try {
            s.close();
        } catch (IOException ignored) {
            // closing anyway
        }
    }
}
