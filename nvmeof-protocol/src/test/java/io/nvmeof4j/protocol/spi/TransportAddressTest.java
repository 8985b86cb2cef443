package io.nvmeof4j.protocol.spi;

import org.junit.jupiter.api.Test;

import java.net.Inet6Address;
import java.net.UnknownHostException;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class TransportAddressTest {
    @Test
    void shouldTakeIpLiteralsWithoutALookup() throws Exception {
        assertThat(TransportAddress.tcp("10.0.2.15", 4420).inetAddress().getHostAddress()).isEqualTo("10.0.2.15");
        assertThat(TransportAddress.tcp("::1", 4420).inetAddress()).isInstanceOf(Inet6Address.class);
    }

    @Test
    void shouldRefuseNamesAndOutOfRangeOctets() {
        // A name would need a resolver (unbounded by the connect timeout); 300.1.2.3 would be taken as one.
        for (String traddr : new String[] {"localhost", "target.example", "300.1.2.3", "1.2.3"}) {
            assertThatThrownBy(() -> TransportAddress.tcp(traddr, 4420).inetAddress()).as(traddr)
                .isInstanceOf(UnknownHostException.class).hasMessageContaining(traddr);
        }
    }
}
