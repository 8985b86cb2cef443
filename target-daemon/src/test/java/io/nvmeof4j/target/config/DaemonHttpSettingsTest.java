package io.nvmeof4j.target.config;

import org.junit.jupiter.api.Test;

import java.net.InetSocketAddress;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** {@code "nvmeof4j": {"http": ..., "metrics": ...}}: defaults, off, explicit addresses, and what is refused. */
class DaemonHttpSettingsTest {
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
}
