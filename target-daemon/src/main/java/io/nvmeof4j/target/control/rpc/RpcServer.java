package io.nvmeof4j.target.control.rpc;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.io.JsonEOFException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.nvmeof4j.target.daemon.TargetDaemon;
import jdk.net.ExtendedSocketOptions;
import jdk.net.UnixDomainPrincipal;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Arrays;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * SPDK's JSON-RPC 2.0 server on a Unix socket ({@code nvmf_tgt -r PATH}), framed as SPDK's
 * {@code lib/jsonrpc/jsonrpc_server.c}: requests are JSON values one after another on the stream with no delimiter
 * (whitespace between them is skipped); each is answered by one response object and a newline. An object is one
 * request; an array is a batch answered by one array (an empty one is -32600); anything else is -32600. A request
 * whose {@code jsonrpc} is not "2.0", whose method is not a string, whose id is not a string, number or null, or
 * whose params are not an object, array or null is -32600; text that is not JSON is -32700 and the connection is
 * closed (a stream has no point to resynchronise at), as SPDK does.
 *
 * <h2>Who may connect</h2>
 * The socket is created with mode 0600 in a private (0700) directory next to {@code PATH} and renamed into place,
 * so no other user can connect even in the instant after bind. Every connection's peer credentials
 * ({@code SO_PEERCRED}, {@link ExtendedSocketOptions#SO_PEERCRED}) are checked as well: only the daemon's own user
 * and root are served. Every change is audit-logged (logger {@code nvmeof4j.audit}) with the peer's user and pid.
 *
 * <h2>Limits</h2>
 * {@value #MAX_CONNECTIONS} connections (more are closed at once), {@value #MAX_REQUEST_BYTES} bytes per request
 * (a larger one is answered -32600 and the connection closed), a request must arrive whole within
 * {@value #REQUEST_TIMEOUT_MS} ms of its first byte, and a connection idle for {@value #IDLE_TIMEOUT_MS} ms is
 * closed. Requests are executed one at a time.
 */
public final class RpcServer implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(RpcServer.class);
    private static final Logger AUDIT = LoggerFactory.getLogger("nvmeof4j.audit");
    public static final int MAX_CONNECTIONS = 16;
    public static final int MAX_REQUEST_BYTES = 1 << 20;
    public static final long REQUEST_TIMEOUT_MS = 10_000;
    public static final long IDLE_TIMEOUT_MS = 600_000;
    public static final int MAX_BATCH = 256;

    private final Path path;
    private final ServerSocketChannel server;
    private final SpdkRpcMethods methods;
    private final ObjectMapper mapper = new ObjectMapper();
    private final Set<Connection> connections = ConcurrentHashMap.newKeySet();
    private final AtomicBoolean closed = new AtomicBoolean();
    private final Thread acceptor;
    private final Thread watchdog;
    private final String ownUser = System.getProperty("user.name");

    private RpcServer(Path path, ServerSocketChannel server, SpdkRpcMethods methods) {
        this.path = path;
        this.server = server;
        this.methods = methods;
        this.acceptor = new Thread(this::acceptLoop, "nvmeof-rpc-accept");
        this.acceptor.setDaemon(true);
        this.watchdog = new Thread(this::watchLoop, "nvmeof-rpc-watchdog");
        this.watchdog.setDaemon(true);
    }

    /**
     * Serves the SPDK JSON-RPC methods of the daemon's control plane on a Unix socket at {@code path}. A stale socket there
     * (nobody accepts on it) is replaced; a live one, or any other file, is an error.
     */
    public static RpcServer start(Path path, TargetDaemon daemon) throws IOException {
        Path target = path.toAbsolutePath();
        Path dir = target.getParent();
        if (Files.exists(target, LinkOption.NOFOLLOW_LINKS)) {
            if (!isSocket(target)) {
                throw new IOException("rpc_socket " + target + " exists and is not a socket");
            }
            if (accepts(target)) {
                throw new IOException("rpc_socket " + target + " is in use by another process");
            }
            // Left behind by a daemon that was killed: nobody accepts on it.
            Files.delete(target);
        }
        Path privateDir = Files.createTempDirectory(dir, ".nvmeof4j-rpc-",
            PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
        Path temp = privateDir.resolve("s");
        ServerSocketChannel server = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
        try {
            server.bind(UnixDomainSocketAddress.of(temp), MAX_CONNECTIONS);
            Files.setPosixFilePermissions(temp, PosixFilePermissions.fromString("rw-------"));
            Files.move(temp, target, StandardCopyOption.ATOMIC_MOVE);
        } catch (IOException | RuntimeException e) {
            server.close();
            Files.deleteIfExists(temp);
            throw new IOException("cannot serve JSON-RPC on " + target + ": " + e.getMessage(), e);
        } finally {
            Files.deleteIfExists(privateDir);
        }
        RpcServer rpc = new RpcServer(target, server, SpdkRpcMethods.of(daemon));
        rpc.acceptor.start();
        rpc.watchdog.start();
        LOG.info("SPDK JSON-RPC on {} (mode 0600, user {} and root only)", target, rpc.ownUser);
        return rpc;
    }

    private static boolean accepts(Path socket) {
        try (SocketChannel probe = SocketChannel.open(UnixDomainSocketAddress.of(socket))) {
            return true;
        } catch (IOException e) {
            return false;
        }
    }

    private static boolean isSocket(Path p) {
        try {
            Object mode = Files.getAttribute(p, "unix:mode", LinkOption.NOFOLLOW_LINKS);
            return (((Integer) mode) & 0170000) == 0140000;
        } catch (IOException | UnsupportedOperationException | IllegalArgumentException e) {
            return false;
        }
    }

    public Path path() {
        return path;
    }

    private void acceptLoop() {
        while (!closed.get()) {
            SocketChannel ch;
            try {
                ch = server.accept();
            } catch (IOException e) {
                if (!closed.get()) {
                    LOG.warn("JSON-RPC accept on {} failed: {}", path, e.toString());
                }
                return;
            }
            String who;
            try {
                UnixDomainPrincipal peer = ch.getOption(ExtendedSocketOptions.SO_PEERCRED);
                String user = peer.user().getName();
                who = "user " + user;
                if (!user.equals(ownUser) && !user.equals("root")) {
                    AUDIT.warn("{} on {}: refused (only {} and root may use the socket)", who, path, ownUser);
                    ch.close();
                    continue;
                }
            } catch (IOException | UnsupportedOperationException e) {
                LOG.warn("JSON-RPC on {}: no peer credentials ({}); closing the connection", path, e.toString());
                closeQuietly(ch);
                continue;
            }
            if (connections.size() >= MAX_CONNECTIONS) {
                AUDIT.warn("{} on {}: connection closed: {} connections open already", who, path, MAX_CONNECTIONS);
                closeQuietly(ch);
                continue;
            }
            Connection c = new Connection(ch, who);
            connections.add(c);
            Thread t = new Thread(c, "nvmeof-rpc-" + who);
            t.setDaemon(true);
            t.start();
        }
    }

    /** Closes connections past their deadlines; a blocked read then ends with an exception. */
    private void watchLoop() {
        while (!closed.get()) {
            long now = System.nanoTime();
            for (Connection c : connections) {
                long partial = c.partialSince;
                if ((partial != 0 && now - partial > TimeUnit.MILLISECONDS.toNanos(REQUEST_TIMEOUT_MS))
                    || now - c.lastActivity > TimeUnit.MILLISECONDS.toNanos(IDLE_TIMEOUT_MS)) {
                    AUDIT.warn("{} on {}: connection closed: {}", c.who, path, partial != 0
                        ? "request not complete within " + REQUEST_TIMEOUT_MS + " ms" : "idle");
                    closeQuietly(c.channel);
                }
            }
            try {
                Thread.sleep(200);
            } catch (InterruptedException e) {
                return;
            }
        }
    }

    private final class Connection implements Runnable {
        final SocketChannel channel;
        final String who;
        volatile long lastActivity = System.nanoTime();
        /** When the first byte of an incomplete request arrived; 0 when none is pending. */
        volatile long partialSince;
        private byte[] buf = new byte[4096];
        private int len;

        Connection(SocketChannel channel, String who) {
            this.channel = channel;
            this.who = who;
        }

        @Override
        public void run() {
            try (channel) {
                ByteBuffer in = ByteBuffer.allocate(16384);
                while (!closed.get()) {
                    in.clear();
                    int n = channel.read(in);
                    if (n < 0) {
                        return;
                    }
                    lastActivity = System.nanoTime();
                    if (len + n > MAX_REQUEST_BYTES) {
                        send(error(null, RpcError.INVALID_REQUEST, "Invalid request: larger than "
                            + MAX_REQUEST_BYTES + " bytes"));
                        return;
                    }
                    if (len + n > buf.length) {
                        buf = Arrays.copyOf(buf, Math.min(MAX_REQUEST_BYTES, Math.max(buf.length * 2, len + n)));
                    }
                    in.flip();
                    in.get(buf, len, n);
                    len += n;
                    if (!drain()) {
                        return;
                    }
                }
            } catch (IOException e) {
                LOG.debug("JSON-RPC connection of {} ended: {}", who, e.toString());
            } finally {
                connections.remove(this);
            }
        }

        /** Answers every complete request in the buffer; false when the connection must close. */
        private boolean drain() throws IOException {
            while (true) {
                int start = 0;
                while (start < len && Character.isWhitespace(buf[start])) {
                    start++;
                }
                if (start == len) {
                    len = 0;
                    partialSince = 0;
                    return true;
                }
                JsonNode value;
                int consumed;
                try (JsonParser parser = mapper.getFactory().createParser(buf, start, len - start)) {
                    JsonToken first = parser.nextToken();
                    if (first == null) {
                        return true;
                    }
                    value = mapper.readTree(parser);
                    consumed = start + (int) parser.getCurrentLocation().getByteOffset();
                } catch (JsonProcessingException e) {
                    if (e instanceof JsonEOFException || (e.getOriginalMessage() != null
                        && e.getOriginalMessage().contains("end-of-input"))) {
                        // Not all of it has arrived yet (Jackson's databind reports this as a mismatched input).
                        if (partialSince == 0) {
                            partialSince = System.nanoTime();
                        }
                        return true;
                    }
                    send(error(null, RpcError.PARSE_ERROR, "Parse error"));
                    return false;
                }
                if (value == null || (value.isValueNode() && consumed == len && !value.isTextual()
                    && !value.isBoolean() && !value.isNull() && endsInNumber())) {
                    // A bare number at the end of the buffer may continue in the next read.
                    partialSince = partialSince == 0 ? System.nanoTime() : partialSince;
                    return true;
                }
                System.arraycopy(buf, consumed, buf, 0, len - consumed);
                len -= consumed;
                partialSince = 0;
                JsonNode response = handle(value);
                if (response != null) {
                    send(response);
                }
            }
        }

        private boolean endsInNumber() {
            byte last = buf[len - 1];
            return last >= '0' && last <= '9';
        }

        private void send(JsonNode response) throws IOException {
            byte[] bytes = (mapper.writeValueAsString(response) + "\n").getBytes(StandardCharsets.UTF_8);
            ByteBuffer out = ByteBuffer.wrap(bytes);
            while (out.hasRemaining()) {
                channel.write(out);
            }
        }

        private JsonNode handle(JsonNode value) {
            if (value.isObject()) {
                return single(value);
            }
            if (value.isArray()) {
                if (value.isEmpty() || value.size() > MAX_BATCH) {
                    return error(null, RpcError.INVALID_REQUEST, value.isEmpty() ? "Invalid request"
                        : "Invalid request: more than " + MAX_BATCH + " requests in a batch");
                }
                ArrayNode answers = mapper.createArrayNode();
                for (JsonNode element : value) {
                    answers.add(element.isObject() ? single(element)
                        : error(null, RpcError.INVALID_REQUEST, "Invalid request"));
                }
                return answers;
            }
            return error(null, RpcError.INVALID_REQUEST, "Invalid request");
        }

        private JsonNode single(JsonNode request) {
            JsonNode id = request.get("id");
            JsonNode version = request.get("jsonrpc");
            JsonNode method = request.get("method");
            JsonNode params = request.get("params");
            boolean validId = id == null || id.isTextual() || id.isNumber() || id.isNull();
            if (!validId || (version != null && !(version.isTextual() && version.asText().equals("2.0")))
                || method == null || !method.isTextual()
                || (params != null && !params.isNull() && !params.isObject() && !params.isArray())) {
                return error(validId ? id : null, RpcError.INVALID_REQUEST, "Invalid request");
            }
            String name = method.asText();
            SpdkRpcMethods.Method m = methods.method(name);
            if (m == null) {
                return error(id, RpcError.METHOD_NOT_FOUND, "Method not found");
            }
            JsonNode result;
            try {
                synchronized (methods) {
                    result = m.call(who + " (JSON-RPC " + name + ")", params);
                }
            } catch (RpcError e) {
                if (SpdkRpcMethods.changes(name)) {
                    AUDIT.info("{} on {}: {} -> error {} ({})", who, path, name, e.code(), e.getMessage());
                }
                return error(id, e.code(), e.getMessage());
            } catch (RuntimeException e) {
                LOG.error("JSON-RPC {} from {} failed", name, who, e);
                return error(id, RpcError.INTERNAL_ERROR, "Internal error: " + e);
            }
            if (SpdkRpcMethods.changes(name)) {
                AUDIT.info("{} on {}: {} -> ok", who, path, name);
            }
            ObjectNode o = mapper.createObjectNode();
            o.put("jsonrpc", "2.0");
            o.set("id", id == null ? mapper.nullNode() : id);
            o.set("result", result);
            return o;
        }
    }

    private ObjectNode error(JsonNode id, int code, String message) {
        ObjectNode o = mapper.createObjectNode();
        o.put("jsonrpc", "2.0");
        o.set("id", id == null ? mapper.nullNode() : id);
        ObjectNode e = o.putObject("error");
        e.put("code", code);
        e.put("message", message);
        return o;
    }

    private static void closeQuietly(SocketChannel ch) {
        try {
            ch.close();
        } catch (IOException e) {
            // closing a connection we give up on
        }
    }

    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        closeQuietly0(server);
        for (Connection c : connections) {
            closeQuietly(c.channel);
        }
        watchdog.interrupt();
        try {
            acceptor.join(2_000);
            Files.deleteIfExists(path);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (IOException e) {
            LOG.warn("cannot remove the JSON-RPC socket {}: {}", path, e.toString());
        }
    }

    private static void closeQuietly0(ServerSocketChannel ch) {
        try {
            ch.close();
        } catch (IOException e) {
            // shutting down
        }
    }
}
