package io.nvmeof4j.target.config;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Objects;

/**
 * Who may use the daemon's HTTP server and how much of it: the HTTP keys of the {@code "nvmeof4j"} object
 * (docs/security.md).
 *
 * @param apiTokenFile          {@code api_token_file}: the file holding the bearer token every {@code /api/v1}
 *                              request must present; created (mode 0600, 256 random bits) at the first start when
 *                              absent. Default: {@value #API_TOKEN_FILE_NAME} next to the configuration file, or
 *                              {@link #stateDirectoryTokenFile()} for the embedded default configuration
 * @param metricsHttp           {@code metrics_http}: {@code "HOST:PORT"} of a second, read-only listener that
 *                              serves only {@code GET /metrics} (Prometheus, probes), or null for none
 * @param allowedHosts          {@code http_allowed_hosts}: names a client may put in the {@code Host} header besides
 *                              the address it connected to (and {@code localhost} on loopback); lower case
 * @param requestTimeout        {@code http_request_timeout_ms}: the longest a connection may take to send a whole
 *                              request (head and body) after it opened or after its previous response; also how long
 *                              an idle keep-alive connection stays open
 * @param maxConnections        {@code http_max_connections}: open connections over all listeners; more are closed
 *                              as they arrive
 * @param maxConnectionsPerPeer {@code http_max_connections_per_peer}: open connections from one IP address
 */
public record HttpSecurity(Path apiTokenFile, String metricsHttp, List<String> allowedHosts, Duration requestTimeout,
                           int maxConnections, int maxConnectionsPerPeer) {
    public static final String API_TOKEN_FILE = "api_token_file";
    public static final String METRICS_HTTP = "metrics_http";
    public static final String HTTP_ALLOWED_HOSTS = "http_allowed_hosts";
    public static final String HTTP_REQUEST_TIMEOUT_MS = "http_request_timeout_ms";
    public static final String HTTP_MAX_CONNECTIONS = "http_max_connections";
    public static final String HTTP_MAX_CONNECTIONS_PER_PEER = "http_max_connections_per_peer";

    /** The token file's name next to the configuration file. */
    public static final String API_TOKEN_FILE_NAME = "api-token";
    /** Ten seconds: a curl, a probe or a scrape sends its request in milliseconds; a slowloris client is cut off. */
    public static final long HTTP_REQUEST_TIMEOUT_MS_DEFAULT = 10_000;
    /** Far below any fd limit, far above what operators, probes and Prometheus open. */
    public static final int HTTP_MAX_CONNECTIONS_DEFAULT = 256;
    /** One address cannot take more than this; probes from another address (or from the node) still get in. */
    public static final int HTTP_MAX_CONNECTIONS_PER_PEER_DEFAULT = 32;

    public HttpSecurity {
        Objects.requireNonNull(apiTokenFile, "apiTokenFile");
        Objects.requireNonNull(requestTimeout, "requestTimeout");
        allowedHosts = allowedHosts.stream().map(h -> h.toLowerCase(Locale.ROOT)).toList();
        if (metricsHttp != null) {
            DaemonSettings.parseHttpAddress(metricsHttp);
        }
        if (requestTimeout.toMillis() < 100) {
            throw new IllegalArgumentException("http request timeout " + requestTimeout.toMillis() + " ms below 100");
        }
        if (maxConnections < 1 || maxConnectionsPerPeer < 1) {
            throw new IllegalArgumentException("connection limits must be at least 1");
        }
    }

    /** The defaults, with the token file at {@code tokenFile}. */
    public static HttpSecurity defaults(Path tokenFile) {
        return new HttpSecurity(tokenFile, null, List.of(), Duration.ofMillis(HTTP_REQUEST_TIMEOUT_MS_DEFAULT),
            HTTP_MAX_CONNECTIONS_DEFAULT, HTTP_MAX_CONNECTIONS_PER_PEER_DEFAULT);
    }

    /**
     * Where the token lives when there is no configuration file to put it next to (the embedded default
     * configuration, a configuration given as a string): {@code $XDG_STATE_HOME/nvmeof4j/api-token}, else
     * {@code ~/.local/state/nvmeof4j/api-token}. A per-user state directory: the daemon can create it without
     * root, it survives restarts (so scripts keep their token) and no other user can read it.
     */
    public static Path stateDirectoryTokenFile() {
        String xdg = System.getenv("XDG_STATE_HOME");
        Path state = xdg != null && !xdg.isBlank() && Path.of(xdg).isAbsolute() ? Path.of(xdg)
            : Path.of(System.getProperty("user.home"), ".local", "state");
        return state.resolve("nvmeof4j").resolve(API_TOKEN_FILE_NAME);
    }

    public HttpSecurity withApiTokenFile(Path file) {
        return new HttpSecurity(file.toAbsolutePath().normalize(), metricsHttp, allowedHosts, requestTimeout,
            maxConnections, maxConnectionsPerPeer);
    }

    /** These settings with the metrics-only listener at {@code address} ("HOST:PORT"), or none for null/"off". */
    public HttpSecurity withMetricsHttp(String address) {
        String a = address == null || DaemonSettings.HTTP_OFF.equalsIgnoreCase(address.trim()) ? null : address.trim();
        return new HttpSecurity(apiTokenFile, a, allowedHosts, requestTimeout, maxConnections, maxConnectionsPerPeer);
    }
}
