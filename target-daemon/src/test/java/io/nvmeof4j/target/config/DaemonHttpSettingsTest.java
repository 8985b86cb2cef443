package io.nvmeof4j.target.config;

import org.junit.jupiter.api.Test;

import java.net.InetSocketAddress;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** {@code "nvmeof4j": {"http": ..., "metrics": ...}}: defaults, off, explicit addresses, and what is refused. */
class DaemonHttpSettingsTest {
    private static final String PORT_AND_SUBSYSTEM = """
             "ports": [{"portid": 1, "addr": {"trtype": "tcp", "adrfam": "ipv4", "traddr": "127.0.0.1", "trsvcid": "0"},
                        "subsystems": ["nqn.2014-08.io.nvmeof4j:x"]}],
             "subsystems": [{"nqn": "nqn.2014-08.io.nvmeof4j:x", "attr": {"allow_any_host": "1"},
                             "namespaces": [{"nsid": 1, "device": {"backend": "ram", "size": "1M"}}]}]}
            """;

    private static TargetConfig parse(String nvmeof4j) throws ConfigException {
        return TargetConfig.parse("""
            {"nvmeof4j": %s,
             "ports": [{"portid": 1, "addr": {"trtype": "tcp", "adrfam": "ipv4", "traddr": "127.0.0.1", "trsvcid": "0"},
                        "subsystems": ["nqn.2014-08.io.nvmeof4j:x"]}],
             "subsystems": [{"nqn": "nqn.2014-08.io.nvmeof4j:x", "attr": {"allow_any_host": "1"},
                             "namespaces": [{"nsid": 1, "device": {"backend": "ram", "size": "1M"}}]}]}
            """.formatted(nvmeof4j));
    }

    @Test
    void shouldDefaultToLoopback9480WithMetricsOn() throws Exception {
        DaemonSettings d = parse("{}").daemon();
        assertThat(d.http()).isEqualTo("127.0.0.1:9480").isEqualTo(DaemonSettings.HTTP_DEFAULT);
        assertThat(d.httpExplicit()).isFalse();
        assertThat(d.metrics()).isTrue();
    }

    @Test
    void shouldTakeAnAddressOrOff() throws Exception {
        DaemonSettings d = parse("{\"http\": \"0.0.0.0:9100\", \"metrics\": false}").daemon();
        assertThat(d.http()).isEqualTo("0.0.0.0:9100");
        assertThat(d.httpExplicit()).isTrue();
        assertThat(d.metrics()).isFalse();
        assertThat(parse("{\"http\": \"off\"}").daemon().http()).isNull();
        assertThat(parse("{\"http\": false}").daemon().http()).isNull();
        assertThat(parse("{\"http\": \"[::1]:9480\"}").daemon().http()).isEqualTo("[::1]:9480");
        InetSocketAddress a = DaemonSettings.parseHttpAddress("localhost:0");
        assertThat(a.getAddress().getHostAddress()).isEqualTo("127.0.0.1");
        assertThat(a.getPort()).isZero();
    }

    @Test
    void shouldRefuseWhatIsNotAnAddressNamingTheField() {
        assertThatThrownBy(() -> parse("{\"http\": \"9480\"}")).isInstanceOf(ConfigException.class)
            .hasMessageContaining("nvmeof4j.http").hasMessageContaining("HOST:PORT");
        assertThatThrownBy(() -> parse("{\"http\": \"127.0.0.1:70000\"}")).hasMessageContaining("outside 0..65535");
        assertThatThrownBy(() -> parse("{\"http\": \"example.com:9480\"}")).hasMessageContaining("not an IP address");
        assertThatThrownBy(() -> parse("{\"http\": 9480}")).hasMessageContaining("nvmeof4j.http");
        assertThatThrownBy(() -> parse("{\"metrics\": \"maybe\"}")).hasMessageContaining("nvmeof4j.metrics");
    }

    @Test
    void shouldLetTheCommandLineOverride() throws Exception {
        DaemonSettings d = parse("{}").daemon().withHttp("off");
        assertThat(d.http()).isNull();
        assertThat(d.httpExplicit()).isTrue();
        assertThat(parse("{}").daemon().withHttp("127.0.0.1:0").http()).isEqualTo("127.0.0.1:0");
        assertThatThrownBy(() -> parse("{}").daemon().withHttp("nonsense")).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void shouldReadTheHttpSecuritySettingsWithTheirDefaults() throws Exception {
        HttpSecurity d = parse("{}").daemon().httpSecurity();
        assertThat(d.apiTokenFile()).isEqualTo(HttpSecurity.stateDirectoryTokenFile());
        assertThat(d.metricsHttp()).isNull();
        assertThat(d.allowedHosts()).isEmpty();
        assertThat(d.requestTimeout()).isEqualTo(java.time.Duration.ofSeconds(10));
        assertThat(d.maxConnections()).isEqualTo(256);
        assertThat(d.maxConnectionsPerPeer()).isEqualTo(32);
        HttpSecurity s = parse("""
            {"api_token_file": "/etc/nvmeof4j/../nvmeof4j/token", "metrics_http": "0.0.0.0:9481",
             "http_allowed_hosts": ["Storage-1.Example.NET", "[fd00::1]"], "http_request_timeout_ms": 2500,
             "http_max_connections": 10, "http_max_connections_per_peer": 3}""").daemon().httpSecurity();
        assertThat(s.apiTokenFile()).isEqualTo(java.nio.file.Path.of("/etc/nvmeof4j/token"));
        assertThat(s.metricsHttp()).isEqualTo("0.0.0.0:9481");
        assertThat(s.allowedHosts()).containsExactly("storage-1.example.net", "[fd00::1]");
        assertThat(s.requestTimeout()).isEqualTo(java.time.Duration.ofMillis(2500));
        assertThat(s.maxConnections()).isEqualTo(10);
        assertThat(s.maxConnectionsPerPeer()).isEqualTo(3);
    }

    @Test
    void shouldPutTheTokenNextToTheConfigurationFile(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir)
        throws Exception {
        java.nio.file.Path file = dir.resolve("target.json");
        java.nio.file.Files.writeString(file, """
            {"nvmeof4j": {"http": "off"}, %s""".formatted(PORT_AND_SUBSYSTEM));
        assertThat(TargetConfig.load(file).daemon().httpSecurity().apiTokenFile()).isEqualTo(dir.resolve("api-token"));
        java.nio.file.Files.writeString(file, """
            {"nvmeof4j": {"api_token_file": "secrets/token"}, %s""".formatted(PORT_AND_SUBSYSTEM));
        assertThat(TargetConfig.load(file).daemon().httpSecurity().apiTokenFile())
            .isEqualTo(dir.resolve("secrets/token"));
    }

    @Test
    void shouldRefuseBadHttpSecuritySettingsNamingTheField() {
        assertThatThrownBy(() -> parse("{\"api_token_file\": \"\"}")).hasMessageContaining("nvmeof4j.api_token_file");
        assertThatThrownBy(() -> parse("{\"api_token_file\": 7}")).hasMessageContaining("nvmeof4j.api_token_file");
        assertThatThrownBy(() -> parse("{\"metrics_http\": \"somewhere\"}"))
            .hasMessageContaining("nvmeof4j.metrics_http").hasMessageContaining("HOST:PORT");
        assertThatThrownBy(() -> parse("{\"http_allowed_hosts\": \"a.example\"}"))
            .hasMessageContaining("nvmeof4j.http_allowed_hosts");
        assertThatThrownBy(() -> parse("{\"http_allowed_hosts\": [\"a.example:80\"]}"))
            .hasMessageContaining("nvmeof4j.http_allowed_hosts[0]").hasMessageContaining("no port");
        assertThatThrownBy(() -> parse("{\"http_request_timeout_ms\": 5}"))
            .hasMessageContaining("nvmeof4j.http_request_timeout_ms");
        assertThatThrownBy(() -> parse("{\"http_max_connections_per_peer\": 0}"))
            .hasMessageContaining("nvmeof4j.http_max_connections_per_peer");
    }
}
