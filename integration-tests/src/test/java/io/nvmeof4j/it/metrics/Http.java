package io.nvmeof4j.it.metrics;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;

/** A small client for the daemon's HTTP server (every call bounded by a timeout). */
final class Http {
    record Response(int status, String body) {
    }

    private static final Duration TIMEOUT = Duration.ofSeconds(20);
    private final HttpClient client = HttpClient.newBuilder().connectTimeout(TIMEOUT).build();
    private final String base;

    Http(InetSocketAddress address) {
        this.base = "http://" + address.getAddress().getHostAddress() + ":" + address.getPort();
    }

    Response get(String path) throws IOException, InterruptedException {
        return send(HttpRequest.newBuilder(URI.create(base + path)).GET());
    }

    Response post(String path, String json) throws IOException, InterruptedException {
        return post(path, "application/json", json);
    }

    /** A POST with another content type (what a cross-site form or fetch without preflight can send). */
    Response post(String path, String contentType, String body) throws IOException, InterruptedException {
        return send(HttpRequest.newBuilder(URI.create(base + path)).header("Content-Type", contentType)
            .POST(HttpRequest.BodyPublishers.ofString(body)));
    }

    Response delete(String path) throws IOException, InterruptedException {
        return send(HttpRequest.newBuilder(URI.create(base + path)).DELETE());
    }

    Response put(String path, String json) throws IOException, InterruptedException {
        return send(HttpRequest.newBuilder(URI.create(base + path)).PUT(HttpRequest.BodyPublishers.ofString(json)));
    }

    private Response send(HttpRequest.Builder request) throws IOException, InterruptedException {
        HttpResponse<String> r = client.send(request.timeout(TIMEOUT).build(), HttpResponse.BodyHandlers.ofString());
        return new Response(r.statusCode(), r.body());
    }
}
