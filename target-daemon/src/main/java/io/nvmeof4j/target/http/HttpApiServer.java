package io.nvmeof4j.target.http;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.nvmeof4j.target.config.HttpSecurity;
import io.nvmeof4j.target.daemon.TargetDaemon;
import io.nvmeof4j.target.management.ManagementApi;
import io.nvmeof4j.target.management.ManagementException;
import io.nvmeof4j.target.metrics.TargetMetrics;
import org.eclipse.jetty.http.HttpField;
import org.eclipse.jetty.http.HttpHeader;
import org.eclipse.jetty.http.HttpURI;
import org.eclipse.jetty.io.Connection;
import org.eclipse.jetty.io.Content;
import org.eclipse.jetty.server.Handler;
import org.eclipse.jetty.server.HttpConfiguration;
import org.eclipse.jetty.server.HttpConnectionFactory;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.eclipse.jetty.util.Callback;
import org.eclipse.jetty.util.Fields;
import org.eclipse.jetty.util.thread.QueuedThreadPool;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.net.BindException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.net.URLDecoder;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.CompletionException;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * The daemon's HTTP server: Prometheus metrics and the JSON management API, on Jetty's core Handler API (no
 * servlets). Jetty parses requests without blocking a thread, so clients that send slowly hold no thread and
 * cannot starve {@code /metrics} (docs/security.md, "Why Jetty"). None of this runs on a reactor.
 *
 * <h2>Endpoints</h2>
 * <pre>
 * GET    /metrics                                         Prometheus text format (version 0.0.4); no token
 * GET    /api/v1/subsystems                               subsystems with namespaces, allowed hosts, controller count
 * GET    /api/v1/subsystems/{nqn}
 * GET    /api/v1/subsystems/{nqn}/namespaces
 * POST   /api/v1/subsystems/{nqn}/namespaces              body: a configuration namespace object → 201
 * GET    /api/v1/subsystems/{nqn}/namespaces/{nsid}
 * DELETE /api/v1/subsystems/{nqn}/namespaces/{nsid}       → 200 with the removed namespace
 * POST   /api/v1/subsystems/{nqn}/namespaces/{nsid}/qos   body: {"rw_ios_per_sec", "rw_mbytes_per_sec",
 *                                                         "r_mbytes_per_sec", "w_mbytes_per_sec"} (any of them; 0
 *                                                         removes one) → 200 with the namespace and its qos
 * GET    /api/v1/subsystems/{nqn}/hosts                   allow_any_host and the allowed host NQNs
 * POST   /api/v1/subsystems/{nqn}/hosts                   body: {"nqn": "..."} → 201
 * DELETE /api/v1/subsystems/{nqn}/hosts/{hostnqn}         → 200
 * GET    /api/v1/ports                                    ports with the ANA state of each group
 * GET    /api/v1/ports/{portid}/ana_groups
 * PUT    /api/v1/ports/{portid}/ana_groups/{grpid}        body: {"state": "inaccessible"} → 200 (ANA change event)
 * GET    /api/v1/hosts                                    every known host: where it is allowed, its controllers,
 *                                                         its DH-HMAC-CHAP hash/dhgroup (never a key)
 * POST   /api/v1/hosts/{hostnqn}/dhchap                   body: {"key", "ctrl_key", "hash", "dhgroup"}: set or rotate
 * DELETE /api/v1/hosts/{hostnqn}/dhchap                   → 200; the host connects without authentication
 * POST   /api/v1/hosts/{hostnqn}/tls_key                  body: {"key", "psk_derivation"}: set or rotate the TLS PSK
 * DELETE /api/v1/hosts/{hostnqn}/tls_key                  → 200; the host's TLS handshakes are refused
 * GET    /api/v1/controllers                              live controllers with their queues
 * GET    /api/v1/controllers/{cntlid}
 * </pre>
 * Every {@code /api/v1} request carries {@code Authorization: Bearer TOKEN} (the token in {@code api_token_file}).
 * NQNs go into the path as they are (':' and '.' are legal there), or percent-encoded. Errors are
 * {@code {"error": "..."}} with 400 (malformed request or field), 401 (no or a wrong token, or a token in the
 * URL), 404 (no such subsystem, namespace, host, controller or path), 405 (method), 409 (already exists),
 * 413 (body over 64 KiB), 415 (POST body not {@code application/json}), 421 (a Host header this server does not
 * answer to: DNS rebinding), 431 (request head over 8 KiB) or 500 (a bug: logged).
 * <p>With {@code metrics_http} a second listener serves {@code GET /metrics} alone (404 for anything else); the
 * API listener keeps serving {@code /metrics} too, which exposes nothing more (it needs no token anywhere) and keeps
 * probes that point at it working.
 */
public final class HttpApiServer implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(HttpApiServer.class);
    public static final String API_PREFIX = "/api/v1/";
    public static final String METRICS_PATH = "/metrics";
    /** Request bodies larger than this are refused (a namespace object is a few hundred bytes). */
    public static final int MAX_BODY_BYTES = 64 * 1024;
    /** Request line and headers larger than this are refused with 431 (a curl request is ~200 bytes). */
    public static final int MAX_REQUEST_HEAD_BYTES = 8 * 1024;
    static final String JSON_CONTENT_TYPE = "application/json; charset=utf-8";
    private static final String PROMETHEUS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";
    static final String JSON_MEDIA_TYPE = "application/json";
    /** RFC 6750 §2.3 puts the token in a query parameter; we refuse it there (URLs end up in logs and histories). */
    private static final Set<String> TOKEN_PARAMETERS = Set.of("access_token", "token", "api_token", "bearer");
    /**
     * Threads for handlers (and Jetty's acceptor and selector per listener). Reading requests holds none, so these
     * are only busy while a request is served: a management call, a scrape.
     */
    static final int MAX_THREADS = 24;

    private final Server server;
    private final ServerConnector apiConnector;
    private final ServerConnector metricsConnector;
    private final ScheduledExecutorService sweeper;
    private final ConnectionGuard guard;
    private final AuditLog audit;
    private final HostCheck hostCheck;
    private final ApiToken token;
    private final TargetMetrics metrics;
    private final ManagementApi api;
    private final ObjectMapper mapper;

    private HttpApiServer(Server server, ServerConnector apiConnector, ServerConnector metricsConnector,
                          ScheduledExecutorService sweeper, ConnectionGuard guard, AuditLog audit, HostCheck hostCheck,
                          ApiToken token, TargetDaemon daemon) {
        this.server = server;
        this.apiConnector = apiConnector;
        this.metricsConnector = metricsConnector;
        this.sweeper = sweeper;
        this.guard = guard;
        this.audit = audit;
        this.hostCheck = hostCheck;
        this.token = token;
        this.metrics = daemon.metrics();
        this.mapper = JsonMapper.builder().enable(SerializationFeature.INDENT_OUTPUT).build();
        this.api = new ManagementApi(daemon, mapper);
    }

    /**
     * Binds {@code address} (port 0: any free port) and, when given, {@code metricsAddress}, and starts serving,
     * with {@code token} ({@link ApiToken#loadOrCreate}) guarding the API.
     *
     * @throws BindException when an address is taken
     */
    public static HttpApiServer start(InetSocketAddress address, InetSocketAddress metricsAddress,
                                      HttpSecurity security, ApiToken token, TargetDaemon daemon) throws IOException {
        QueuedThreadPool threads = new QueuedThreadPool(MAX_THREADS, 4);
        threads.setName("nvmeof-http");
        threads.setDaemon(true);
        // No reserved threads: they exist for latency under load, which two dozen requests a minute do not have.
        threads.setReservedThreads(0);
        Server server = new Server(threads);
        server.setErrorHandler(new JsonErrorHandler());
        AuditLog audit = new AuditLog();
        ConnectionGuard guard = new ConnectionGuard(security.maxConnections(), security.maxConnectionsPerPeer(),
            security.requestTimeout(), audit);
        ServerConnector api = connector(server, address, security, guard, "api");
        ServerConnector metricsOnly = metricsAddress == null ? null
            : connector(server, metricsAddress, security, guard, "metrics");
        ScheduledExecutorService sweeper = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "nvmeof-http-deadline");
            t.setDaemon(true);
            return t;
        });
        HttpApiServer s = new HttpApiServer(server, api, metricsOnly, sweeper, guard, audit,
            new HostCheck(security.allowedHosts()), token, daemon);
        server.setHandler(s.new Dispatch());
        try {
            server.start();
        } catch (Exception e) {
            s.close();
            BindException bind = bindCause(e);
            if (bind != null) {
                throw bind;
            }
            throw e instanceof IOException io ? io : new IOException("cannot start the HTTP server: " + e, e);
        }
        long period = Math.max(50, Math.min(1000, security.requestTimeout().toMillis() / 4));
        sweeper.scheduleWithFixedDelay(guard::sweep, period, period, TimeUnit.MILLISECONDS);
        LOG.info("HTTP server on {}: GET /metrics, management API under {} (token: {}{}){}", s.url(), API_PREFIX,
            token.file(), token.created() ? ", created now" : "",
            metricsOnly == null ? "" : "; metrics only on " + s.metricsUrl());
        return s;
    }

    private static ServerConnector connector(Server server, InetSocketAddress address, HttpSecurity security,
                                             ConnectionGuard guard, String name) {
        HttpConfiguration http = new HttpConfiguration();
        http.setRequestHeaderSize(MAX_REQUEST_HEAD_BYTES);
        http.setSendServerVersion(false);
        http.setSendXPoweredBy(false);
        // One acceptor and one selector: a handful of clients; the selector multiplexes all their reads.
        ServerConnector c = new ServerConnector(server, 1, 1, new HttpConnectionFactory(http));
        c.setName(name);
        c.setHost(address.getAddress().getHostAddress());
        c.setPort(address.getPort());
        c.setIdleTimeout(security.requestTimeout().toMillis());
        c.setAcceptQueueSize(64);
        c.addBean(guard);
        server.addConnector(c);
        return c;
    }

    private static BindException bindCause(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof BindException b) {
                return b;
            }
        }
        return null;
    }

    /** The bound address of the API listener (the real port when 0 was asked for). */
    public InetSocketAddress address() {
        return bound(apiConnector);
    }

    /** The bound address of the metrics-only listener, or null when there is none. */
    public InetSocketAddress metricsAddress() {
        return metricsConnector == null ? null : bound(metricsConnector);
    }

    /** The file holding the API token. */
    public java.nio.file.Path tokenFile() {
        return token.file();
    }

    private static InetSocketAddress bound(ServerConnector c) {
        try {
            return new InetSocketAddress(InetAddress.getByName(c.getHost()), c.getLocalPort());
        } catch (java.net.UnknownHostException e) {
            throw new IllegalStateException("the listener's own address is not an address: " + c.getHost(), e);
        }
    }

    /** {@code http://127.0.0.1:9480} */
    public String url() {
        return url(address());
    }

    /** The metrics-only listener's {@code http://HOST:PORT}, or null. */
    public String metricsUrl() {
        InetSocketAddress a = metricsAddress();
        return a == null ? null : url(a);
    }

    static String url(InetSocketAddress a) {
        return "http://" + HostCheck.literal(a.getAddress()) + ":" + a.getPort();
    }

    /** Stops accepting, closes the connections and stops the threads (a change in progress still completes). */
    @Override
    public void close() {
        sweeper.shutdownNow();
        try {
            server.setStopTimeout(2_000);
            server.stop();
        } catch (Exception e) {
            LOG.warn("stopping the HTTP server: {}", e.toString());
        }
    }

    /** The one handler: checks, then routes. Runs on a pool thread (Jetty's default for a blocking handler). */
    private final class Dispatch extends Handler.Abstract {
        @Override
        public boolean handle(Request request, org.eclipse.jetty.server.Response response, Callback callback) {
            Connection connection = request.getConnectionMetaData().getConnection();
            Callback done = Callback.from(callback, () -> guard.answered(connection));
            Exchange x = new Exchange(request, response, done);
            try {
                serve(x, connection);
            } catch (RuntimeException e) {
                LOG.error("HTTP {} {} from {} failed", x.method, x.path, AuditLog.text(x.peer), e);
                x.error(500, "internal error: " + e);
            }
            return true;
        }
    }

    /** One request and its response. */
    private final class Exchange {
        final Request request;
        final org.eclipse.jetty.server.Response response;
        final Callback callback;
        final String method;
        final String path;
        final SocketAddress peer;
        /** The token id once authenticated; null before. */
        String who;

        Exchange(Request request, org.eclipse.jetty.server.Response response, Callback callback) {
            this.request = request;
            this.response = response;
            this.callback = callback;
            this.method = request.getMethod();
            this.path = request.getHttpURI().getPath();
            this.peer = request.getConnectionMetaData().getRemoteSocketAddress();
        }

        boolean isChange() {
            return "POST".equals(method) || "PUT".equals(method) || "DELETE".equals(method);
        }

        void json(int status, JsonNode body) {
            try {
                send(status, JSON_CONTENT_TYPE, mapper.writeValueAsString(body) + "\n");
            } catch (JsonProcessingException e) {
                throw new IllegalStateException("a response body cannot be written as JSON", e);
            }
        }

        void error(int status, String message) {
            ObjectNode o = mapper.createObjectNode();
            o.put("error", message);
            json(status, o);
        }

        void send(int status, String contentType, String text) {
            if (who != null && isChange()) {
                audit.change(who, peer, method, path, status);
            }
            byte[] bytes = text.getBytes(StandardCharsets.UTF_8);
            response.setStatus(status);
            response.getHeaders().put(HttpHeader.CONTENT_TYPE, contentType);
            response.getHeaders().put(HttpHeader.CONTENT_LENGTH, bytes.length);
            // Never cached by a browser or proxy: answers change with every live change.
            response.getHeaders().put(HttpHeader.CACHE_CONTROL, "no-store");
            response.write(true, "HEAD".equals(method) ? ByteBuffer.allocate(0) : ByteBuffer.wrap(bytes), callback);
        }

        /** A refusal before authentication: audited (rate-limited), then answered. */
        void refuse(int status, String message) {
            audit.refused(peer, method, path, status, message);
            error(status, message);
        }
    }

    private void serve(Exchange x, Connection connection) {
        boolean metricsListener = x.request.getConnectionMetaData().getConnector() == metricsConnector
            && metricsConnector != null;
        String hostRefusal = hostRefusal(x.request);
        if (hostRefusal != null) {
            guard.serving(connection);
            x.refuse(421, hostRefusal);
            return;
        }
        if (METRICS_PATH.equals(x.path)) {
            guard.serving(connection);
            if (!"GET".equals(x.method) && !"HEAD".equals(x.method)) {
                x.error(405, "method " + x.method + " not allowed here (allowed: GET)");
                return;
            }
            String text = metrics == null ? "" : metrics.scrape();
            x.send(200, PROMETHEUS_CONTENT_TYPE, text == null ? "" : text);
            return;
        }
        if (metricsListener || x.path == null || !x.path.startsWith(API_PREFIX)) {
            guard.serving(connection);
            x.error(404, "no such path " + x.path + " (try " + METRICS_PATH
                + (metricsListener ? ": this listener serves metrics only)" : " or " + API_PREFIX + "subsystems)"));
            return;
        }
        String authRefusal = authenticate(x);
        if (authRefusal != null) {
            guard.serving(connection);
            x.response.getHeaders().put(HttpHeader.WWW_AUTHENTICATE, authRefusal);
            // The token file's path is not told to a client that has not authenticated; nvmeof-target prints it.
            x.refuse(401, "Authorization: Bearer TOKEN required (the token is in the daemon's api_token_file)"
                + (authRefusal.contains("invalid_request") ? "; a token in the URL is refused" : ""));
            return;
        }
        x.who = token.id();
        String type = x.request.getHeaders().get(HttpHeader.CONTENT_TYPE);
        // A PUT's body is read only when it is JSON: a browser cannot send PUT cross-site without a CORS preflight,
        // so the check below is not needed for it, and a PUT elsewhere still gets its 405.
        if (!"POST".equals(x.method) && !("PUT".equals(x.method) && isJsonMediaType(type))) {
            guard.serving(connection);
            execute(x, null);
            return;
        }
        // A web page can make a browser POST text/plain or a form to localhost without asking; it cannot send
        // application/json without a CORS preflight, which this server never grants.
        if (!isJsonMediaType(type)) {
            guard.serving(connection);
            x.error(415, "Content-Type must be application/json (was " + (type == null ? "none" : type) + ")");
            return;
        }
        long length = x.request.getLength();
        if (length > MAX_BODY_BYTES) {
            guard.serving(connection);
            x.error(413, "request body over " + MAX_BODY_BYTES + " bytes");
            return;
        }
        // The body arrives without holding a thread; the request deadline (ConnectionGuard) bounds how long.
        Content.Source.asByteArrayAsync(x.request, MAX_BODY_BYTES).whenComplete((body, failure) ->
            server.getThreadPool().execute(() -> {
                guard.serving(connection);
                if (failure == null) {
                    execute(x, body);
                } else if (tooLarge(failure)) {
                    x.error(413, "request body over " + MAX_BODY_BYTES + " bytes");
                } else {
                    // The client went away or was cut off by the deadline: nobody to answer.
                    audit.refused(x.peer, x.method, x.path, 408, "request body incomplete: " + rootMessage(failure));
                    x.callback.failed(failure);
                }
            }));
    }

    private void execute(Exchange x, byte[] body) {
        try {
            Response r = route(x.method, segments(x.path.substring(API_PREFIX.length())), body);
            x.json(r.status, r.body);
        } catch (ManagementException e) {
            x.error(e.httpStatus(), e.getMessage());
        } catch (RuntimeException e) {
            LOG.error("HTTP {} {} from {} failed", x.method, x.path, AuditLog.text(x.peer), e);
            x.error(500, "internal error: " + e);
        }
    }

    private String hostRefusal(Request request) {
        SocketAddress local = request.getConnectionMetaData().getLocalSocketAddress();
        InetAddress localAddress = local instanceof InetSocketAddress i ? i.getAddress() : null;
        if (localAddress == null) {
            return "no local address";
        }
        List<String> hosts = request.getHeaders().getValuesList(HttpHeader.HOST);
        if (hosts.size() > 1) {
            return "more than one Host header";
        }
        String refusal = hostCheck.refusal(hosts.isEmpty() ? null : hosts.get(0), localAddress);
        HttpURI uri = request.getHttpURI();
        if (refusal == null && uri.isAbsolute() && uri.hasAuthority()) {
            // An absolute request target (GET http://name/...) names the host too; it must pass as well.
            refusal = hostCheck.refusal(uri.getAuthority(), localAddress);
        }
        return refusal;
    }

    /** Null when the request carries the token in its Authorization header (only there), else the challenge. */
    private String authenticate(Exchange x) {
        String query = x.request.getHttpURI().getQuery();
        if (query != null && !query.isEmpty()) {
            Fields params = Request.extractQueryParameters(x.request);
            for (String name : params.getNames()) {
                if (TOKEN_PARAMETERS.contains(name.toLowerCase(Locale.ROOT))) {
                    return "Bearer realm=\"nvmeof4j\", error=\"invalid_request\"";
                }
            }
        }
        List<HttpField> fields = x.request.getHeaders().getFields(HttpHeader.AUTHORIZATION);
        if (fields.size() != 1) {
            return "Bearer realm=\"nvmeof4j\"";
        }
        String value = fields.get(0).getValue().trim();
        int space = value.indexOf(' ');
        if (space < 0 || !value.substring(0, space).equalsIgnoreCase("Bearer")) {
            return "Bearer realm=\"nvmeof4j\"";
        }
        if (!token.matches(value.substring(space + 1).trim())) {
            return "Bearer realm=\"nvmeof4j\", error=\"invalid_token\"";
        }
        return null;
    }

    /** {@code application/json}, any case, optionally with parameters ({@code ; charset=utf-8}); nothing else. */
    static boolean isJsonMediaType(String contentType) {
        if (contentType == null) {
            return false;
        }
        int semicolon = contentType.indexOf(';');
        String type = (semicolon < 0 ? contentType : contentType.substring(0, semicolon)).trim();
        return type.equalsIgnoreCase(JSON_MEDIA_TYPE);
    }

    /**
     * Jetty's {@code asByteArrayAsync} fails with "Max size (N) exceeded" when a chunked body grows past the cap
     * (a body with a larger Content-Length is refused before it is read).
     */
    private static boolean tooLarge(Throwable failure) {
        for (Throwable t = failure; t != null; t = t.getCause()) {
            String m = t.getMessage() == null ? "" : t.getMessage().toLowerCase(Locale.ROOT);
            if ((t instanceof IllegalStateException || t instanceof IllegalArgumentException)
                && (m.contains("max size") || m.contains("too large"))) {
                return true;
            }
        }
        return false;
    }

    private static String rootMessage(Throwable failure) {
        Throwable t = failure instanceof CompletionException && failure.getCause() != null ? failure.getCause()
            : failure;
        return t.toString();
    }

    private record Response(int status, JsonNode body) {
    }

    private Response route(String method, List<String> p, byte[] body) throws ManagementException {
        int n = p.size();
        if (n >= 1 && p.get(0).equals("subsystems")) {
            if (n == 1) {
                if ("POST".equals(method)) {
                    return new Response(ManagementApi.CREATED, api.createSubsystem(json(body)));
                }
                requireMethod(method, "GET", "POST");
                return ok(api.subsystems());
            }
            String nqn = p.get(1);
            if (n == 2) {
                if ("DELETE".equals(method)) {
                    return ok(api.deleteSubsystem(nqn));
                }
                requireMethod(method, "GET", "DELETE");
                return ok(api.subsystem(nqn));
            }
            if (p.get(2).equals("listeners")) {
                if (n == 3) {
                    requireMethod(method, "POST");
                    return new Response(ManagementApi.CREATED, api.addListener(nqn, json(body)));
                }
                if (n == 4) {
                    requireMethod(method, "DELETE");
                    return ok(api.removeListener(nqn, p.get(3)));
                }
            }
            if (p.get(2).equals("namespaces")) {
                if (n == 3) {
                    if ("POST".equals(method)) {
                        return new Response(ManagementApi.CREATED, api.addNamespace(nqn, json(body)));
                    }
                    requireMethod(method, "GET", "POST");
                    return ok(api.namespaces(nqn));
                }
                if (n == 5 && p.get(4).equals("resize")) {
                    requireMethod(method, "POST");
                    return ok(api.resizeNamespace(nqn, p.get(3), body == null || body.length == 0 ? null : json(body)));
                }
                if (n == 4) {
                    if ("DELETE".equals(method)) {
                        return ok(api.removeNamespace(nqn, p.get(3)));
                    }
                    requireMethod(method, "GET", "DELETE");
                    return ok(api.namespace(nqn, p.get(3)));
                }
                if (n == 5 && p.get(4).equals("qos")) {
                    requireMethod(method, "POST");
                    return ok(api.setQos(nqn, p.get(3), json(body)));
                }
            }
            if (p.get(2).equals("hosts")) {
                if (n == 3) {
                    if ("POST".equals(method)) {
                        return new Response(ManagementApi.CREATED, api.addHost(nqn, json(body)));
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
        } else if (n == 3 && p.get(0).equals("ports") && p.get(2).equals("referrals")) {
            if ("POST".equals(method)) {
                return new Response(ManagementApi.CREATED, api.addReferral(p.get(1), json(body)));
            }
            requireMethod(method, "GET", "POST");
            return ok(api.referrals(p.get(1)));
        } else if (n == 4 && p.get(0).equals("ports") && p.get(2).equals("referrals")) {
            requireMethod(method, "DELETE");
            return ok(api.removeReferral(p.get(1), p.get(3)));
        } else if (n >= 3 && n <= 4 && p.get(0).equals("ports") && p.get(2).equals("ana_groups")) {
            if (n == 3) {
                requireMethod(method, "GET");
                return ok(api.anaGroups(p.get(1)));
            }
            requireMethod(method, "PUT");
            return ok(api.setAnaState(p.get(1), p.get(3), json(body)));
        } else if (n == 1 && p.get(0).equals("hosts")) {
            requireMethod(method, "GET");
            return ok(api.allHosts());
        } else if (n == 3 && p.get(0).equals("hosts") && p.get(2).equals("dhchap")) {
            if ("DELETE".equals(method)) {
                return ok(api.removeDhchap(p.get(1)));
            }
            requireMethod(method, "POST", "DELETE");
            return ok(api.setDhchap(p.get(1), json(body)));
        } else if (n == 3 && p.get(0).equals("hosts") && p.get(2).equals("tls_key")) {
            if ("DELETE".equals(method)) {
                return ok(api.removeTlsKey(p.get(1)));
            }
            requireMethod(method, "POST", "DELETE");
            return ok(api.setTlsKey(p.get(1), json(body)));
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

    private JsonNode json(byte[] bytes) throws ManagementException {
        if (bytes == null || bytes.length == 0) {
            throw new ManagementException(400, "a JSON body is required");
        }
        try {
            return mapper.readTree(bytes);
        } catch (IOException e) {
            throw new ManagementException(400, "not valid JSON: " + (e instanceof JsonProcessingException j
                ? j.getOriginalMessage() : e.getMessage()));
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

    @Override
    public String toString() {
        return "HttpApiServer[" + url() + "]";
    }
}
