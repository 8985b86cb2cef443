package io.nvmeof4j.target.http;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import io.nvmeof4j.target.daemon.TargetDaemon;
import io.nvmeof4j.target.management.ManagementApi;
import io.nvmeof4j.target.management.ManagementException;
import io.nvmeof4j.target.metrics.TargetMetrics;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

/**
 * The daemon's HTTP server (the JDK's {@code com.sun.net.httpserver}: no dependency, and two dozen requests a
 * minute need nothing more): Prometheus metrics and the JSON management API. One thread serves requests in
 * order, so changes apply one at a time; none of this runs on a reactor.
 *
 * <h2>Endpoints</h2>
 * <pre>
 * GET    /metrics                                         Prometheus text format (version 0.0.4)
 * GET    /api/v1/subsystems                               subsystems with namespaces, allowed hosts, controller count
 * GET    /api/v1/subsystems/{nqn}
 * GET    /api/v1/subsystems/{nqn}/namespaces
 * POST   /api/v1/subsystems/{nqn}/namespaces              body: a configuration namespace object → 201
 * GET    /api/v1/subsystems/{nqn}/namespaces/{nsid}
 * DELETE /api/v1/subsystems/{nqn}/namespaces/{nsid}       → 200 with the removed namespace
 * GET    /api/v1/subsystems/{nqn}/hosts                   allow_any_host and the allowed host NQNs
 * POST   /api/v1/subsystems/{nqn}/hosts                   body: {"nqn": "..."} → 201
 * DELETE /api/v1/subsystems/{nqn}/hosts/{hostnqn}         → 200
 * GET    /api/v1/ports
 * GET    /api/v1/hosts                                    every known host: where it is allowed, its controllers
 * GET    /api/v1/controllers                              live controllers with their queues
 * GET    /api/v1/controllers/{cntlid}
 * </pre>
 * NQNs go into the path as they are (':' and '.' are legal there), or percent-encoded. Errors are
 * {@code {"error": "..."}} with 400 (malformed request or field), 404 (no such subsystem, namespace, host,
 * controller or path), 405 (method), 409 (already exists), 413 (body over 64 KiB) or 500 (a bug: logged).
 */
public final class HttpApiServer implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(HttpApiServer.class);
    public static final String API_PREFIX = "/api/v1/";
    public static final String METRICS_PATH = "/metrics";
    /** Request bodies larger than this are refused (a namespace object is a few hundred bytes). */
    public static final int MAX_BODY_BYTES = 64 * 1024;
    private static final String PROMETHEUS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

    private final HttpServer server;
    private final ExecutorService executor;
    private final TargetMetrics metrics;
    private final ManagementApi api;
    private final ObjectMapper mapper;

    static final String MAX_REQUEST_SECONDS_PROP = "sun.net.httpserver.maxReqTime";
    static final String MAX_RESPONSE_SECONDS_PROP = "sun.net.httpserver.maxRspTime";
    static final String JSON_CONTENT_TYPE_BASE = "application/json";
    static final int HTTP_THREADS = 4;

    private HttpApiServer(HttpServer server, ExecutorService executor, TargetDaemon daemon) {
        this.server = server;
        this.executor = executor;
        this.metrics = daemon.metrics();
        this.mapper = JsonMapper.builder().enable(SerializationFeature.INDENT_OUTPUT).build();
        this.api = new ManagementApi(daemon, mapper);
    }

    /** Binds {@code address} (port 0: any free port) and starts serving. */
    public static HttpApiServer start(InetSocketAddress address, TargetDaemon daemon) throws IOException {
        // The JDK server reads a request on an executor thread with no time limit by default: a client that connects
        // and stalls would hold a thread (and /metrics, which liveness probes use) forever. Bound both directions
        // unless the operator chose other limits; read once, when the JVM's first server is made.
        if (System.getProperty(MAX_REQUEST_SECONDS_PROP) == null) {
            System.setProperty(MAX_REQUEST_SECONDS_PROP, "10");
        }
        if (System.getProperty(MAX_RESPONSE_SECONDS_PROP) == null) {
            System.setProperty(MAX_RESPONSE_SECONDS_PROP, "30");
        }
        HttpServer server = HttpServer.create(address, 16);
        // A few threads, so one slow client does not block scrapes; live changes are serialised by the daemon.
        java.util.concurrent.atomic.AtomicInteger threads = new java.util.concurrent.atomic.AtomicInteger();
        ExecutorService executor = Executors.newFixedThreadPool(HTTP_THREADS, r -> {
            Thread t = new Thread(r, "nvmeof-http-" + threads.getAndIncrement());
            t.setDaemon(true);
            return t;
        });
        HttpApiServer s = new HttpApiServer(server, executor, daemon);
        server.createContext("/", s::handle);
        server.setExecutor(executor);
        server.start();
        LOG.info("HTTP server on {}: GET /metrics, management API under {}", s.url(), API_PREFIX);
        return s;
    }

    /** The bound address (the real port when 0 was asked for). */
    public InetSocketAddress address() {
        return server.getAddress();
    }

    /** {@code http://127.0.0.1:9480} */
    public String url() {
        InetSocketAddress a = address();
        String host = a.getAddress().getHostAddress();
        return "http://" + (host.contains(":") ? "[" + host + "]" : host) + ":" + a.getPort();
    }

    /** Stops accepting and stops the thread (a change in progress still completes: the daemon waits for it). */
    @Override
    public void close() {
        server.stop(0);
        executor.shutdown();
        try {
            executor.awaitTermination(2, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private void handle(HttpExchange exchange) throws IOException {
        try (exchange) {
            String method = exchange.getRequestMethod();
            String path = exchange.getRequestURI().getRawPath();
            try {
                if (METRICS_PATH.equals(path)) {
                    requireMethod(method, "GET");
                    String text = metrics == null ? "" : metrics.scrape();
                    send(exchange, 200, PROMETHEUS_CONTENT_TYPE, text == null ? "" : text);
                    return;
                }
                if (!path.startsWith(API_PREFIX)) {
                    throw new ManagementException(404, "no such path " + path + " (try " + METRICS_PATH + " or "
                        + API_PREFIX + "subsystems)");
                }
                if ("POST".equals(method)) {
                    // A web page can make a browser POST text/plain or a form to localhost without asking; it cannot
                    // set application/json without a CORS preflight, which this server never grants.
                    String type = exchange.getRequestHeaders().getFirst("Content-Type");
                    if (type == null || !type.toLowerCase(java.util.Locale.ROOT).startsWith(JSON_CONTENT_TYPE_BASE)) {
                        throw new ManagementException(415, "Content-Type must be application/json (was "
                            + (type == null ? "none" : type) + ")");
                    }
                }
                List<String> parts = segments(path.substring(API_PREFIX.length()));
                Response r = route(method, parts, exchange);
                sendJson(exchange, r.status, mapper.writeValueAsString(r.body));
            } catch (ManagementException e) {
                error(exchange, e.httpStatus(), e.getMessage());
            } catch (RuntimeException e) {
                LOG.error("HTTP {} {} failed", method, path, e);
                error(exchange, 500, "internal error: " + e);
            }
        }
    }

    private record Response(int status, JsonNode body) {
    }

    private Response route(String method, List<String> p, HttpExchange exchange) throws ManagementException,
        IOException {
        int n = p.size();
        if (n >= 1 && p.get(0).equals("subsystems")) {
            if (n == 1) {
                requireMethod(method, "GET");
                return ok(api.subsystems());
            }
            String nqn = p.get(1);
            if (n == 2) {
                requireMethod(method, "GET");
                return ok(api.subsystem(nqn));
            }
            if (p.get(2).equals("namespaces")) {
                if (n == 3) {
                    if ("POST".equals(method)) {
                        return new Response(ManagementApi.CREATED, api.addNamespace(nqn, body(exchange)));
                    }
                    requireMethod(method, "GET", "POST");
                    return ok(api.namespaces(nqn));
                }
                if (n == 4) {
                    if ("DELETE".equals(method)) {
                        return ok(api.removeNamespace(nqn, p.get(3)));
                    }
                    requireMethod(method, "GET", "DELETE");
                    return ok(api.namespace(nqn, p.get(3)));
                }
            }
            if (p.get(2).equals("hosts")) {
                if (n == 3) {
                    if ("POST".equals(method)) {
                        return new Response(ManagementApi.CREATED, api.addHost(nqn, body(exchange)));
                    }
                    requireMethod(method, "GET", "POST");
                    return ok(api.hosts(nqn));
                }
                if (n == 4) {
                    requireMethod(method, "DELETE");
                    return ok(api.removeHost(nqn, p.get(3)));
                }
            }
        } else if (n == 1 && p.get(0).equals("ports")) {
            requireMethod(method, "GET");
            return ok(api.ports());
        } else if (n == 1 && p.get(0).equals("hosts")) {
            requireMethod(method, "GET");
            return ok(api.allHosts());
        } else if (n >= 1 && n <= 2 && p.get(0).equals("controllers")) {
            requireMethod(method, "GET");
            return ok(n == 1 ? api.controllers() : api.controller(p.get(1)));
        }
        throw new ManagementException(404, "no such path " + API_PREFIX + String.join("/", p));
    }

    private static Response ok(JsonNode body) {
        return new Response(ManagementApi.OK, body);
    }

    private static void requireMethod(String method, String... allowed) throws ManagementException {
        for (String a : allowed) {
            if (a.equals(method)) {
                return;
            }
        }
        throw new ManagementException(405, "method " + method + " not allowed here (allowed: "
            + String.join(", ", allowed) + ")");
    }

    private JsonNode body(HttpExchange exchange) throws IOException, ManagementException {
        byte[] bytes;
        try (InputStream in = exchange.getRequestBody()) {
            bytes = in.readNBytes(MAX_BODY_BYTES + 1);
        }
        if (bytes.length > MAX_BODY_BYTES) {
            throw new ManagementException(413, "request body over " + MAX_BODY_BYTES + " bytes");
        }
        if (bytes.length == 0) {
            throw new ManagementException(400, "a JSON body is required");
        }
        try {
            return mapper.readTree(bytes);
        } catch (JsonProcessingException e) {
            throw new ManagementException(400, "not valid JSON: " + e.getOriginalMessage());
        }
    }

    private static List<String> segments(String rest) throws ManagementException {
        List<String> parts = new ArrayList<>();
        for (String s : rest.split("/")) {
            if (!s.isEmpty()) {
                try {
                    parts.add(URLDecoder.decode(s.replace("+", "%2B"), StandardCharsets.UTF_8));
                } catch (IllegalArgumentException e) {
                    throw new ManagementException(400, "malformed percent-encoding in '" + s + "'");
                }
            }
        }
        return parts;
    }

    private void error(HttpExchange exchange, int status, String message) throws IOException {
        ObjectNode o = mapper.createObjectNode();
        o.put("error", message);
        sendJson(exchange, status, mapper.writeValueAsString(o));
    }

    private static void sendJson(HttpExchange exchange, int status, String json) throws IOException {
        send(exchange, status, "application/json; charset=utf-8", json + "\n");
    }

    private static void send(HttpExchange exchange, int status, String contentType, String text) throws IOException {
        byte[] bytes = text.getBytes(StandardCharsets.UTF_8);
        exchange.getResponseHeaders().set("Content-Type", contentType);
        if ("HEAD".equals(exchange.getRequestMethod())) {
            exchange.sendResponseHeaders(status, -1);
            return;
        }
        exchange.sendResponseHeaders(status, bytes.length == 0 ? -1 : bytes.length);
        if (bytes.length > 0) {
            try (OutputStream out = exchange.getResponseBody()) {
                out.write(bytes);
            }
        }
    }

    @Override
    public String toString() {
        return "HttpApiServer[" + url() + "]";
    }
}
