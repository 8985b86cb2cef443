package io.nvmeof4j.target.http;

import org.junit.jupiter.api.Test;

import java.net.InetAddress;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/** The Host header check: the connected address, localhost on loopback, configured names; nothing else. */
class HostCheckTest {
    private final HostCheck check = new HostCheck(List.of("storage-1.example.net"));

    @Test
    void shouldServeTheConnectedAddressWithOrWithoutPortAndLocalhostOnLoopback() throws Exception {
        InetAddress v4 = InetAddress.getByName("127.0.0.1");
        for (String ok : new String[] {"127.0.0.1", "127.0.0.1:9480", "localhost", "LOCALHOST:9480", "localhost.",
            "storage-1.example.net", "Storage-1.Example.Net:80"}) {
            assertThat(check.refusal(ok, v4)).as(ok).isNull();
        }
        InetAddress v6 = InetAddress.getByName("::1");
        assertThat(check.refusal("[::1]:9480", v6)).isNull();
        assertThat(check.refusal("[::1]", v6)).isNull();
        assertThat(check.refusal("localhost:9480", v6)).isNull();
    }

    @Test
    void shouldRefuseOtherNamesMissingAndMalformedHosts() throws Exception {
        InetAddress v4 = InetAddress.getByName("127.0.0.1");
        for (String bad : new String[] {"evil.example", "evil.example:9480", "127.0.0.1.evil.example",
            "localhost.evil.example", "127.0.0.2", "127.0.0.1:abc", "127.0.0.1:", "[::1", "storage-1.example.net.evil"}) {
            assertThat(check.refusal(bad, v4)).as(bad).isNotNull();
        }
        assertThat(check.refusal(null, v4)).contains("Host header is required");
        assertThat(check.refusal("", v4)).contains("Host header is required");
        // localhost is only a name for this machine when the listener is on loopback.
        InetAddress external = InetAddress.getByName("192.0.2.10");
        assertThat(check.refusal("localhost", external)).contains("not served here");
        assertThat(check.refusal("192.0.2.10:9480", external)).isNull();
        assertThat(check.refusal("evil.example", v4)).contains("http_allowed_hosts");
    }

    @Test
    void shouldWriteIpv6LiteralsTheWayBrowsersDo() throws Exception {
        assertThat(HostCheck.literal(InetAddress.getByName("0:0:0:0:0:0:0:1"))).isEqualTo("[::1]");
        assertThat(HostCheck.literal(InetAddress.getByName("fd00:0:0:0:1:0:0:2"))).isEqualTo("[fd00::1:0:0:2]");
        assertThat(HostCheck.literal(InetAddress.getByName("2001:db8:1:2:3:4:5:6"))).isEqualTo("[2001:db8:1:2:3:4:5:6]");
    }
}
