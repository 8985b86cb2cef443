package io.nvmeof4j.it.metrics;

import io.nvmeof4j.target.daemon.TargetDaemon;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;

/**
 * A small client for the daemon's HTTP server (every call bounded by a timeout). The one place the tests add the
 * API token: every request carries {@code Authorization: Bearer TOKEN} unless made through {@link #withoutToken()}.
 */
final class Http {
    record Response(int status, String body, HttpResponse<String> raw) {
        Response(int status, String body) {
            this(status, body, null);
        }
    }

    private static final Duration TIMEOUT = Duration.ofSeconds(20);
    private final HttpClient client = HttpClient.newBuilder().connectTimeout(TIMEOUT).build();
    private final String base;
    private final String token;

    /** A client of {@code daemon}'s API listener with the token from its {@code api_token_file}. */
    Http(TargetDaemon daemon) {
        this(daemon.httpAddress(), readToken(daemon.apiTokenFile()));
    }

    Http(InetSocketAddress address, String token) {
        this.base = "http://" + address.getAddress().getHostAddress() + ":" + address.getPort();
        this.token = token;
    }

    /** The same listener without a token (what a stranger sends). */
    Http withoutToken() {
        return new Http(URI.create(base), null);
    }

    /** The same listener with another token. */
    Http withToken(String other) {
        return new Http(URI.create(base), other);
    }

    private Http(URI base, String token) {
        this.base = base.toString();
        this.token = token;
    }

    static String readToken(Path file) {
        try {
            return Files.readString(file).strip();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read the API token file " + file, e);
        }
    }

    String token() {
        return token;
    }

    Response get(String path) throws IOException, InterruptedException {
        return send(request(path).GET());
    }

    Response post(String path, String json) throws IOException, InterruptedException {
        return post(path, "application/json", json);
    }

    /** A POST with another content type (what a cross-site form or fetch without preflight can send). */
    Response post(String path, String contentType, String body) throws IOException, InterruptedException {
        return send(request(path).header("Content-Type", contentType)
            .POST(HttpRequest.BodyPublishers.ofString(body)));
    }

    Response delete(String path) throws IOException, InterruptedException {
        return send(request(path).DELETE());
    }

    Response put(String path, String json) throws IOException, InterruptedException {
        return send(request(path).PUT(HttpRequest.BodyPublishers.ofString(json)));
    }

    /** A request to {@code path} with the token (if this client has one); add headers, a method, then {@link #send}. */
    HttpRequest.Builder request(String path) {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(base + path)).timeout(TIMEOUT);
        if (token != null) {
            b.header("Authorization", "Bearer " + token);
        }
        return b;
    }

    Response send(HttpRequest.Builder request) throws IOException, InterruptedException {
        HttpResponse<String> r = client.send(request.build(), HttpResponse.BodyHandlers.ofString());
        return new Response(r.statusCode(), r.body(), r);
    }
}
