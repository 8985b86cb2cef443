package io.nvmeof4j.it.metrics;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import io.nvmeof4j.target.config.ConfigException;
import io.nvmeof4j.target.config.TargetConfig;
import io.nvmeof4j.target.daemon.TargetDaemon;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.slf4j.LoggerFactory;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The HTTP server against the attacks of issue 18, over real sockets on 127.0.0.1 with the daemon in this JVM:
 * missing, wrong and misplaced tokens, foreign Host headers (DNS rebinding), oversized and slow requests, wrong
 * content types, and 50 slowloris connections plus a reconnecting slow client while {@code /metrics} and the API
 * keep answering. After each attack the subsystems are what they were and the daemon serves.
 * <p>Attackers connect from 127.0.0.2 and 127.0.0.3 (any 127/8 address is this machine on Linux), probes from
 * 127.0.0.1: the per-peer limit is what keeps the probes' address free.
 */
class HttpSecurityIT {
    private static final String NQN = "nqn.2014-08.io.nvmeof4j:http-security";
    private static final String NS = "/api/v1/subsystems/" + NQN + "/namespaces";
    private static final String HOSTS = "/api/v1/subsystems/" + NQN + "/hosts";
    private static final String ADD_NS = "{\"nsid\": 9, \"device\": {\"backend\": \"ram\", \"size\": \"1M\"}}";
    private static final int REQUEST_TIMEOUT_MS = 2_000;
    private static final int PER_PEER = 16;

    @TempDir
    static Path dir;
    private static TargetDaemon daemon;
    private static Http http;
    private static int apiPort;
    private static int metricsPort;
    private static ListAppender<ILoggingEvent> audit;

    @BeforeAll
    static void start() throws Exception {
        audit = new ListAppender<>();
        audit.start();
        ((Logger) LoggerFactory.getLogger("nvmeof4j.audit")).addAppender(audit);
        daemon = TargetDaemon.start(TargetConfig.parse(config(), dir));
        http = new Http(daemon);
        apiPort = daemon.httpAddress().getPort();
        metricsPort = daemon.metricsHttpAddress().getPort();
    }

    private static String config() {
        return """
            {"nvmeof4j": {"http": "127.0.0.1:0", "metrics_http": "127.0.0.1:0", "reactors": 1,
                          "http_request_timeout_ms": %d, "http_max_connections_per_peer": %d},
             "ports": [{"portid": 1, "addr": {"trtype": "tcp", "adrfam": "ipv4", "traddr": "127.0.0.1", "trsvcid": "0"},
                        "subsystems": ["%s"]}],
             "subsystems": [{"nqn": "%s", "attr": {"allow_any_host": "1"},
                             "namespaces": [{"nsid": 1, "device": {"backend": "ram", "size": "4M"}}]}]}
            """.formatted(REQUEST_TIMEOUT_MS, PER_PEER, NQN, NQN);
    }

    @AfterAll
    static void stop() {
        if (daemon != null) {
            daemon.close();
        }
        ((Logger) LoggerFactory.getLogger("nvmeof4j.audit")).detachAppender(audit);
    }

    @Test
    void shouldCreateTheTokenFileOwnerOnlyAndKeepItAcrossRestarts() throws Exception {
        Path file = dir.resolve("api-token");
        assertThat(daemon.apiTokenFile()).isEqualTo(file);
        assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(file))).isEqualTo("rw-------");
        String text = Files.readString(file);
        assertThat(text).matches("[A-Za-z0-9_-]{43}\n");
        assertThat(Base64.getUrlDecoder().decode(text.strip())).hasSize(32);
        assertThat(http.token()).isEqualTo(text.strip());

        // A second daemon on the same configuration directory uses the same token.
        Path second = Files.createDirectory(dir.resolve("second"));
        Files.copy(file, second.resolve("api-token"));
        try (TargetDaemon other = TargetDaemon.start(TargetConfig.parse(config(), second))) {
            assertThat(new Http(other).get("/api/v1/subsystems").status()).isEqualTo(200);
            assertThat(Files.readString(second.resolve("api-token"))).isEqualTo(text);
        }
        // A malformed or world-readable token file fails the start, naming the file; nothing stays bound.
        Path bad = Files.createDirectory(dir.resolve("bad"));
        Files.writeString(bad.resolve("api-token"), "too-short\n");
        Files.setPosixFilePermissions(bad.resolve("api-token"), PosixFilePermissions.fromString("rw-------"));
        assertThatThrownBy(() -> TargetDaemon.start(TargetConfig.parse(config(), bad))).isInstanceOf(ConfigException.class)
            .hasMessageContaining(bad.resolve("api-token").toString()).hasMessageContaining("does not hold a token");
        Files.writeString(bad.resolve("api-token"), text);
        Files.setPosixFilePermissions(bad.resolve("api-token"), PosixFilePermissions.fromString("rw-r--r--"));
        assertThatThrownBy(() -> TargetDaemon.start(TargetConfig.parse(config(), bad)))
            .hasMessageContaining("readable or writable by every user");
    }

    @Test
    void shouldRefuseRequestsWithoutTheRightTokenInTheRightPlaceAndChangeNothing() throws Exception {
        String before = snapshot();
        String token = http.token();
        Http stranger = http.withoutToken();
        List<Http.Response> refused = new ArrayList<>();
        refused.add(stranger.get("/api/v1/subsystems"));
        refused.add(stranger.post(NS, ADD_NS));
        refused.add(stranger.delete(NS + "/1"));
        refused.add(stranger.post(HOSTS, "{\"nqn\": \"nqn.2014-08.io.nvmeof4j:intruder\"}"));
        refused.add(http.withToken(token.substring(1)).post(NS, ADD_NS));
        refused.add(http.withToken(token + "A").post(NS, ADD_NS));
        refused.add(http.withToken("x".repeat(43)).delete(NS + "/1"));
        // The token in the URL, alone or even next to a right header: URLs land in logs and shell histories.
        refused.add(stranger.post(NS + "?access_token=" + token, ADD_NS));
        refused.add(http.post(NS + "?access_token=" + token, ADD_NS));
        refused.add(stranger.delete(NS + "/1?token=" + token));
        // The token in another header, or without the Bearer scheme.
        refused.add(stranger.send(stranger.request(NS).header("X-Api-Token", token)
            .header("Content-Type", "application/json").POST(java.net.http.HttpRequest.BodyPublishers.ofString(ADD_NS))));
        refused.add(stranger.send(stranger.request(NS + "/1").header("Authorization", token).DELETE()));
        refused.add(stranger.send(stranger.request(NS + "/1").header("Authorization", "Basic "
            + Base64.getEncoder().encodeToString(("admin:" + token).getBytes(StandardCharsets.UTF_8))).DELETE()));
        for (Http.Response r : refused) {
            assertThat(r.status()).as("%s %s -> %s", r.raw().request().method(), r.raw().uri(), r.body())
                .isEqualTo(401);
            assertThat(r.raw().headers().firstValue("WWW-Authenticate")).get(org.assertj.core.api.InstanceOfAssertFactories.STRING)
                .startsWith("Bearer");
            assertThat(r.body()).contains("\"error\"").doesNotContain(token);
        }
        assertThat(refused.get(4).raw().headers().firstValue("WWW-Authenticate").orElseThrow())
            .contains("error=\"invalid_token\"");
        assertThat(snapshot()).isEqualTo(before);
        assertThat(daemon.model().subsystem(NQN).namespaces()).extracting(ns -> ns.nsid()).containsExactly(1);
        // The scheme's name is case-insensitive (RFC 9110 §11.1); the right token works.
        assertThat(stranger.send(stranger.request("/api/v1/subsystems").header("Authorization", "bearer " + token)
            .GET()).status()).isEqualTo(200);
    }

    @Test
    void shouldAuditChangesWithTheTokenIdAndRefusalsRateLimited() throws Exception {
        audit.list.clear();
        String id = java.util.HexFormat.of().formatHex(java.security.MessageDigest.getInstance("SHA-256")
            .digest(http.token().getBytes(StandardCharsets.UTF_8))).substring(0, 8);
        assertThat(http.post(NS, "{\"nsid\": 5, \"device\": {\"backend\": \"ram\", \"size\": \"1M\"}}").status())
            .isEqualTo(201);
        assertThat(http.post(NS, "{\"nsid\": 5, \"device\": {\"backend\": \"ram\", \"size\": \"1M\"}}").status())
            .isEqualTo(409);
        assertThat(http.delete(NS + "/5").status()).isEqualTo(200);
        assertThat(http.get(NS).status()).isEqualTo(200);
        List<String> lines = audit.list.stream().map(ILoggingEvent::getFormattedMessage).toList();
        assertThat(lines).containsExactly(
            "token " + id + " from 127.0.0.1:" + port(lines.get(0)) + ": POST " + NS + " -> 201",
            "token " + id + " from 127.0.0.1:" + port(lines.get(1)) + ": POST " + NS + " -> 409",
            "token " + id + " from 127.0.0.1:" + port(lines.get(2)) + ": DELETE " + NS + "/5 -> 200");

        audit.list.clear();
        Thread.sleep(1_100);
        Http stranger = http.withoutToken();
        for (int i = 0; i < 30; i++) {
            assertThat(stranger.delete(NS + "/1").status()).isEqualTo(401);
        }
        List<ILoggingEvent> refusals = List.copyOf(audit.list);
        assertThat(refusals).as("30 refusals within a second or two are logged at most once a second")
            .hasSizeBetween(1, 3);
        assertThat(refusals.get(0).getFormattedMessage()).startsWith("unauthenticated from 127.0.0.1:")
            .contains("DELETE " + NS + "/1 -> 401");
        assertThat(refusals).allSatisfy(e -> {
            assertThat(e.getThrowableProxy()).isNull();
            assertThat(e.getFormattedMessage()).doesNotContain(http.token());
        });
        Thread.sleep(1_100);
        assertThat(stranger.delete(NS + "/1").status()).isEqualTo(401);
        assertThat(audit.list.get(audit.list.size() - 1).getFormattedMessage())
            .containsPattern("\\[\\d+ similar suppressed\\]");
    }

    private static String port(String line) {
        return line.replaceAll("^.* from 127\\.0\\.0\\.1:(\\d+):.*$", "$1");
    }

    @Test
    void shouldAnswerOnlyToItsOwnAddressLocalhostAndConfiguredNames() throws Exception {
        String before = snapshot();
        String auth = "Authorization: Bearer " + http.token() + "\r\n";
        String post = "POST " + NS + " HTTP/1.1\r\n" + auth + "Content-Type: application/json\r\nContent-Length: "
            + ADD_NS.length() + "\r\nConnection: close\r\n";
        // DNS rebinding: the browser sends the attacker's name; it must not pass, token or not.
        for (String host : new String[] {"rebound.example", "rebound.example:" + apiPort, "127.0.0.1.rebound.example",
            "localhost.rebound.example", "127.0.0.2"}) {
            Raw r = raw(apiPort, post + "Host: " + host + "\r\n\r\n" + ADD_NS);
            assertThat(r.status).as("Host %s: %s", host, r.text).isEqualTo(421);
            assertThat(r.body).contains("\"error\"").contains("not served here");
        }
        // An absolute request target names the host too.
        Raw absolute = raw(apiPort, post.replace("POST " + NS, "POST http://rebound.example" + NS)
            + "Host: 127.0.0.1\r\n\r\n" + ADD_NS);
        assertThat(absolute.status).as(absolute.text).isIn(400, 421);
        // No Host at all: HTTP/1.1 requires one (Jetty answers 400), HTTP/1.0 gets our 421.
        assertThat(raw(apiPort, post + "\r\n" + ADD_NS).status).isEqualTo(400);
        assertThat(raw(apiPort, post.replace("HTTP/1.1", "HTTP/1.0") + "\r\n" + ADD_NS).status).isEqualTo(421);
        // Two Host headers.
        assertThat(raw(apiPort, post + "Host: 127.0.0.1\r\nHost: rebound.example\r\n\r\n" + ADD_NS).status)
            .isIn(400, 421);
        // The metrics listener checks Host the same way (metrics name subsystems and hosts).
        assertThat(raw(metricsPort, "GET /metrics HTTP/1.1\r\nHost: rebound.example\r\nConnection: close\r\n\r\n")
            .status).isEqualTo(421);
        assertThat(snapshot()).isEqualTo(before);

        String get = "GET /api/v1/subsystems HTTP/1.1\r\n" + auth + "Connection: close\r\n";
        for (String host : new String[] {"127.0.0.1", "127.0.0.1:" + apiPort, "localhost", "LocalHost:" + apiPort}) {
            assertThat(raw(apiPort, get + "Host: " + host + "\r\n\r\n").status).as("Host %s", host).isEqualTo(200);
        }
        assertThat(raw(metricsPort, "GET /metrics HTTP/1.1\r\nHost: localhost:" + metricsPort
            + "\r\nConnection: close\r\n\r\n").status).isEqualTo(200);
    }

    @Test
    void shouldRefuseOversizedMistypedAndUnknownRequestsAndChangeNothing() throws Exception {
        String before = snapshot();
        String head = "POST " + NS + " HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + http.token()
            + "\r\nConnection: close\r\n";
        Raw bigHead = raw(apiPort, head + "X-Padding: " + "a".repeat(10_000) + "\r\nContent-Type: application/json\r\n"
            + "Content-Length: " + ADD_NS.length() + "\r\n\r\n" + ADD_NS);
        assertThat(bigHead.status).as(bigHead.text).isEqualTo(431);
        assertThat(bigHead.body).startsWith("{\"error\": ");
        String big = "{\"nsid\": 9, \"pad\": \"" + "b".repeat(70 * 1024) + "\"}";
        Raw bigBody = raw(apiPort, head + "Content-Type: application/json\r\nContent-Length: " + big.length()
            + "\r\n\r\n" + big);
        assertThat(bigBody.status).as(bigBody.text).isEqualTo(413);
        String chunked = Integer.toHexString(big.length()) + "\r\n" + big + "\r\n0\r\n\r\n";
        Raw bigChunked = raw(apiPort, head + "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
            + chunked);
        assertThat(bigChunked.status).as(bigChunked.text).isEqualTo(413);

        for (String type : new String[] {"application/jsonx", "text/plain", "application/x-www-form-urlencoded",
            "application/json-patch+json"}) {
            Http.Response r = http.post(NS, type, ADD_NS);
            assertThat(r.status()).as("Content-Type %s: %s", type, r.body()).isEqualTo(415);
        }
        Raw noType = raw(apiPort, head + "Content-Length: " + ADD_NS.length() + "\r\n\r\n" + ADD_NS);
        assertThat(noType.status).as(noType.text).isEqualTo(415);
        assertThat(http.post(NS, "application/json; charset=utf-8", ADD_NS.replace("9", "8")).status()).isEqualTo(201);
        assertThat(http.delete(NS + "/8").status()).isEqualTo(200);

        assertThat(http.get("/api/v1/nothing").status()).isEqualTo(404);
        assertThat(http.get("/admin").status()).isEqualTo(404);
        assertThat(http.send(http.request(NS).method("PATCH", java.net.http.HttpRequest.BodyPublishers.ofString(
            ADD_NS))).status()).isEqualTo(405);
        assertThat(http.put(NS + "/1", ADD_NS).status()).isEqualTo(405);
        assertThat(http.delete("/metrics").status()).isEqualTo(405);
        // The metrics listener is read-only: the API is not there, token or not.
        Raw onMetrics = raw(metricsPort, head.replace("Host: 127.0.0.1", "Host: 127.0.0.1:" + metricsPort)
            + "Content-Type: application/json\r\nContent-Length: " + ADD_NS.length() + "\r\n\r\n" + ADD_NS);
        assertThat(onMetrics.status).as(onMetrics.text).isEqualTo(404);
        assertThat(snapshot()).isEqualTo(before);
    }

    @Test
    void shouldDropAClientThatSendsItsRequestTooSlowly() throws Exception {
        String before = snapshot();
        // Slow head: a header byte every 200 ms is never idle, but the whole request must come within 2 s.
        long headClosed = trickleUntilClosed("GET /api/v1/subsystems HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ", "a");
        // Slow body: the head is complete and authenticated, the body drips.
        long bodyClosed = trickleUntilClosed("POST " + NS + " HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer "
            + http.token() + "\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{", " ");
        assertThat(headClosed).as("ms until a slow head was cut off").isBetween(1_500L, 4_000L);
        assertThat(bodyClosed).as("ms until a slow body was cut off").isBetween(1_500L, 4_000L);
        assertThat(snapshot()).isEqualTo(before);
    }

    /** Sends {@code head}, then {@code drip} every 200 ms until the server closes; returns the ms that took. */
    private static long trickleUntilClosed(String head, String drip) throws Exception {
        long start = System.nanoTime();
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress("127.0.0.1", apiPort), 2_000);
            s.setSoTimeout(200);
            OutputStream out = s.getOutputStream();
            InputStream in = s.getInputStream();
            out.write(head.getBytes(StandardCharsets.US_ASCII));
            for (int i = 0; i < 50; i++) {
                try {
                    out.write(drip.getBytes(StandardCharsets.US_ASCII));
                    out.flush();
                } catch (IOException closed) {
                    break;
                }
                try {
                    if (in.read() < 0) {
                        break;
                    }
                } catch (SocketTimeoutException stillOpen) {
                    continue;
                } catch (IOException reset) {
                    break;
                }
            }
        }
        return TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
    }

    @Test
    void shouldKeepMetricsAndTheApiAnsweringUnderSlowlorisAndAReconnectingSlowClient() throws Exception {
        String before = snapshot();
        InetAddress attacker = InetAddress.getByName("127.0.0.2");
        InetAddress reconnecter = InetAddress.getByName("127.0.0.3");
        List<Socket> slow = new ArrayList<>();
        AtomicBoolean stop = new AtomicBoolean();
        AtomicInteger reconnects = new AtomicInteger();
        Thread again = null;
        long attackEnd = System.nanoTime() + TimeUnit.SECONDS.toNanos(6);
        try {
            for (int i = 0; i < 50; i++) {
                Socket s = new Socket();
                s.bind(new InetSocketAddress(attacker, 0));
                s.connect(new InetSocketAddress("127.0.0.1", apiPort), 2_000);
                s.getOutputStream().write("GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n".getBytes(StandardCharsets.US_ASCII));
                slow.add(s);
            }
            // The per-peer limit closes all but 16 of them at once.
            Thread.sleep(300);
            int closedAtOnce = 0;
            for (Socket s : slow) {
                s.setSoTimeout(50);
                try {
                    if (s.getInputStream().read() < 0) {
                        closedAtOnce++;
                    }
                } catch (SocketTimeoutException open) {
                    // still open
                } catch (IOException reset) {
                    closedAtOnce++;
                }
            }
            assertThat(closedAtOnce).as("connections from 127.0.0.2 closed by the per-peer limit")
                .isEqualTo(50 - PER_PEER);

            again = new Thread(() -> {
                while (!stop.get() && System.nanoTime() - attackEnd < 0) {
                    try (Socket s = new Socket()) {
                        s.bind(new InetSocketAddress(reconnecter, 0));
                        s.connect(new InetSocketAddress("127.0.0.1", apiPort), 2_000);
                        reconnects.incrementAndGet();
                        s.setSoTimeout(200);
                        OutputStream out = s.getOutputStream();
                        out.write("POST /api/v1/subsystems HTTP/1.1\r\nHost: 127.0.0.1\r\n".getBytes(StandardCharsets.US_ASCII));
                        while (!stop.get() && System.nanoTime() - attackEnd < 0) {
                            out.write("X-A: b\r\n".getBytes(StandardCharsets.US_ASCII));
                            try {
                                if (s.getInputStream().read() < 0) {
                                    break;
                                }
                            } catch (SocketTimeoutException open) {
                                // still open: drip on
                            }
                        }
                    } catch (IOException closedByServer) {
                        // reconnect
                    }
                }
            }, "reconnecting-slow-client");
            again.start();

            long worstMetrics = 0;
            long worstApi = 0;
            long worstMetricsOnly = 0;
            int rounds = 0;
            String get = "GET /api/v1/subsystems HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + http.token()
                + "\r\nConnection: close\r\n\r\n";
            while (System.nanoTime() - attackEnd < 0 && rounds < 200) {
                for (Socket s : slow) {
                    try {
                        s.getOutputStream().write("X-Slow: a\r\n".getBytes(StandardCharsets.US_ASCII));
                    } catch (IOException closed) {
                        // cut off by a limit or the deadline
                    }
                }
                worstMetrics = Math.max(worstMetrics, timed(apiPort, "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                    + "Connection: close\r\n\r\n"));
                worstApi = Math.max(worstApi, timed(apiPort, get));
                worstMetricsOnly = Math.max(worstMetricsOnly, timed(metricsPort, "GET /metrics HTTP/1.1\r\n"
                    + "Host: 127.0.0.1\r\nConnection: close\r\n\r\n"));
                rounds++;
                Thread.sleep(100);
            }
            System.out.printf("slowloris: %d rounds, worst ms: /metrics %d, API %d, metrics listener %d; "
                + "%d reconnects of the slow client%n", rounds, worstMetrics, worstApi, worstMetricsOnly, reconnects.get());
            assertThat(rounds).as("rounds of answered requests during the attack").isGreaterThanOrEqualTo(3);
            assertThat(worstMetrics).as("worst /metrics answer under attack, ms").isLessThan(1_000);
            assertThat(worstApi).as("worst authenticated GET under attack, ms").isLessThan(1_000);
            assertThat(worstMetricsOnly).as("worst metrics-listener answer under attack, ms").isLessThan(1_000);
            assertThat(reconnects.get()).as("the slow client was cut off and reconnected").isGreaterThan(1);
        } finally {
            stop.set(true);
            if (again != null) {
                again.join(5_000);
            }
            for (Socket s : slow) {
                s.close();
            }
        }
        assertThat(snapshot()).isEqualTo(before);
        assertThat(daemon.isClosed()).isFalse();
    }

    /** One request on a fresh connection from 127.0.0.1; its status must be 200; returns the ms it took. */
    private static long timed(int port, String request) throws IOException {
        long start = System.nanoTime();
        Raw r = raw(port, request);
        long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
        assertThat(r.status).as("under attack: %s", r.text).isEqualTo(200);
        return ms;
    }

    /** The subsystems as the API lists them: equal before and after an attack means nothing changed. */
    private static String snapshot() throws Exception {
        Http.Response r = http.get("/api/v1/subsystems");
        assertThat(r.status()).isEqualTo(200);
        return r.body();
    }

    private record Raw(int status, String text, String body) {
    }

    /** Sends {@code request} as bytes on a new connection and reads the response until the server closes. */
    private static Raw raw(int port, String request) throws IOException {
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress("127.0.0.1", port), 2_000);
            s.setSoTimeout(5_000);
            try {
                s.getOutputStream().write(request.getBytes(StandardCharsets.ISO_8859_1));
            } catch (IOException refusedMidWay) {
                // the server answered and closed before taking everything (431, 413): read what it said
            }
            ByteArrayOutputStream got = new ByteArrayOutputStream();
            byte[] buf = new byte[8192];
            try {
                for (int n; (n = s.getInputStream().read(buf)) > 0; ) {
                    got.write(buf, 0, n);
                }
            } catch (IOException resetAfterAnswer) {
                // a reset after the response (unread request bytes): keep what arrived
            }
            String text = got.toString(StandardCharsets.ISO_8859_1);
            int status = text.startsWith("HTTP/1.") && text.length() >= 12 ? Integer.parseInt(text.substring(9, 12)) : -1;
            int split = text.indexOf("\r\n\r\n");
            return new Raw(status, text, split < 0 ? "" : text.substring(split + 4));
        }
    }
}
