package io.nvmeof4j.target.control;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/** A JSON-RPC client speaking the bytes SPDK's scripts/rpc.py sends, for tests. Every read is bounded. */
final class RpcClient implements AutoCloseable {
    static final ObjectMapper MAPPER = new ObjectMapper();
    private final SocketChannel channel;
    private final StringBuilder pending = new StringBuilder();
    private int nextId = 1;

    RpcClient(Path socket) throws IOException {
        channel = SocketChannel.open(StandardProtocolFamily.UNIX);
        channel.connect(UnixDomainSocketAddress.of(socket));
    }

    /** Calls a method as rpc.py does; returns the whole response object. */
    JsonNode call(String method, String paramsJson) throws IOException {
        ObjectNode request = MAPPER.createObjectNode();
        request.put("jsonrpc", "2.0");
        request.put("method", method);
        request.put("id", nextId++);
        if (paramsJson != null) {
            request.set("params", MAPPER.readTree(paramsJson));
        }
        send(MAPPER.writeValueAsString(request));
        return read();
    }

    /** The result of a call that must succeed. */
    JsonNode result(String method, String paramsJson) throws IOException {
        JsonNode response = call(method, paramsJson);
        if (!response.has("result")) {
            throw new AssertionError(method + " " + paramsJson + " failed: " + response);
        }
        return response.get("result");
    }

    /** The error code of a call that must fail. */
    int error(String method, String paramsJson) throws IOException {
        JsonNode response = call(method, paramsJson);
        if (!response.has("error")) {
            throw new AssertionError(method + " " + paramsJson + " succeeded: " + response);
        }
        return response.at("/error/code").asInt();
    }

    void send(String raw) throws IOException {
        ByteBuffer b = ByteBuffer.wrap(raw.getBytes(StandardCharsets.UTF_8));
        while (b.hasRemaining()) {
            channel.write(b);
        }
    }

    /** The next response (one line), or null when the server closed the connection. Bounded by 10 s. */
    JsonNode read() throws IOException {
        CompletableFuture<String> line = CompletableFuture.supplyAsync(() -> {
            try {
                while (pending.indexOf("\n") < 0) {
                    ByteBuffer b = ByteBuffer.allocate(65536);
                    int n = channel.read(b);
                    if (n < 0) {
                        return null;
                    }
                    pending.append(new String(b.array(), 0, n, StandardCharsets.UTF_8));
                }
                int nl = pending.indexOf("\n");
                String text = pending.substring(0, nl);
                pending.delete(0, nl + 1);
                return text;
            } catch (IOException e) {
                return null;
            }
        });
        try {
            String text = line.get(10, TimeUnit.SECONDS);
            return text == null ? null : MAPPER.readTree(text);
        } catch (InterruptedException | ExecutionException | TimeoutException e) {
            channel.close();
            throw new IOException("no JSON-RPC response within 10 s", e);
        }
    }

    @Override
    public void close() throws IOException {
        channel.close();
    }
}
