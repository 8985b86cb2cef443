package io.nvmeof4j.it.control;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

/** A JSON-RPC client as rpc.py: one request, then the response line; null when the daemon died. */
public final class RpcConnection implements AutoCloseable {
    private final SocketChannel channel;
    private final StringBuilder pending = new StringBuilder();
    private int id;

    /** Connects, waiting (bounded) for the socket: the daemon opens it right after its ports. */
    public RpcConnection(Path socket) throws IOException, InterruptedException {
        channel = connect(socket);
    }

    private static SocketChannel connect(Path socket) throws IOException, InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (true) {
            SocketChannel ch = SocketChannel.open(StandardProtocolFamily.UNIX);
            try {
                ch.connect(UnixDomainSocketAddress.of(socket));
                return ch;
            } catch (IOException notYet) {
                ch.close();
                if (System.nanoTime() - deadline > 0) {
                    throw new IOException("no JSON-RPC socket at " + socket + " within 30 s", notYet);
                }
                Thread.sleep(50);
            }
        }
    }

    public JsonNode call(String method, String params) throws IOException {
        String request = "{\"jsonrpc\": \"2.0\", \"method\": \"" + method + "\", \"id\": " + (++id)
            + (params == null ? "" : ", \"params\": " + params) + "}";
        try {
            ByteBuffer b = ByteBuffer.wrap(request.getBytes(StandardCharsets.UTF_8));
            while (b.hasRemaining()) {
                channel.write(b);
            }
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (pending.indexOf("\n") < 0) {
                if (System.nanoTime() - deadline > 0) {
                    throw new AssertionError(method + ": no answer within 30 s");
                }
                ByteBuffer in = ByteBuffer.allocate(65536);
                int n = channel.read(in);
                if (n < 0) {
                    return null;
                }
                pending.append(new String(in.array(), 0, n, StandardCharsets.UTF_8));
            }
        } catch (IOException daemonDied) {
            return null;
        }
        int nl = pending.indexOf("\n");
        String line = pending.substring(0, nl);
        pending.delete(0, nl + 1);
        return new ObjectMapper().readTree(line);
    }

    @Override
    public void close() throws IOException {
        channel.close();
    }
}
