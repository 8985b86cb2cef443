package io.nvmeof4j.tcp;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** {@link TcpTransportOptions#defaults()} with its system properties: taken when valid, refused by name when not. */
class TcpTransportOptionsTest {
    private static final String[] PROPS = {TcpTransportOptions.MAX_H2C_DATA_SIZE_PROP_NAME,
        TcpTransportOptions.C2H_DATA_PDU_SIZE_PROP_NAME, TcpTransportOptions.RECEIVE_BUFFER_SIZE_PROP_NAME,
        TcpTransportOptions.SOCKET_BUFFER_SIZE_PROP_NAME};

    @AfterEach
    void clear() {
        for (String p : PROPS) {
            System.clearProperty(p);
        }
    }

    @Test
    void shouldTakeEachPropertyAtItsBound() {
        System.setProperty(TcpTransportOptions.MAX_H2C_DATA_SIZE_PROP_NAME, "4096");
        System.setProperty(TcpTransportOptions.C2H_DATA_PDU_SIZE_PROP_NAME, "4096");
        System.setProperty(TcpTransportOptions.RECEIVE_BUFFER_SIZE_PROP_NAME, "4096");
        System.setProperty(TcpTransportOptions.SOCKET_BUFFER_SIZE_PROP_NAME, "2097152");
        assertThat(TcpTransportOptions.defaults()).isEqualTo(new TcpTransportOptions(4096, 4096, 4096, 2097152));
        clear();
        assertThat(TcpTransportOptions.defaults()).isEqualTo(new TcpTransportOptions(
            TcpTransportOptions.MAX_H2C_DATA_SIZE_DEFAULT, TcpTransportOptions.C2H_DATA_PDU_SIZE_DEFAULT,
            TcpTransportOptions.RECEIVE_BUFFER_SIZE_DEFAULT, 0));
    }

    @Test
    void shouldRefuseABadPropertyNamingItInsteadOfTakingTheDefault() {
        assertRefused(TcpTransportOptions.SOCKET_BUFFER_SIZE_PROP_NAME, "-1",
            "-Dnvmeof4j.tcp.socket.buffer.size=-1: must be 0 or more (up to 2147483647)");
        assertRefused(TcpTransportOptions.MAX_H2C_DATA_SIZE_PROP_NAME, "1",
            "-Dnvmeof4j.tcp.max.h2c.data.size=1: must be 4096 or more (up to 2147483647)");
        assertRefused(TcpTransportOptions.MAX_H2C_DATA_SIZE_PROP_NAME, "4098",
            "-Dnvmeof4j.tcp.max.h2c.data.size=4098: MAXH2CDATA 4098 must be at least 4096 and a multiple of 4 "
                + "(the Linux host rejects anything else)");
        assertRefused(TcpTransportOptions.C2H_DATA_PDU_SIZE_PROP_NAME, "4095",
            "-Dnvmeof4j.tcp.c2h.data.pdu.size=4095: must be 4096 or more (up to 2147483647)");
        assertRefused(TcpTransportOptions.RECEIVE_BUFFER_SIZE_PROP_NAME, "64k",
            "-Dnvmeof4j.tcp.receive.buffer.size=64k: not a whole number; must be 4096 or more (up to 2147483647)");
    }

    @Test
    void shouldKeepTheRecordsOwnChecksForCodeThatBuildsIt() {
        assertThatThrownBy(() -> TcpTransportOptions.defaults().withSocketBufferSize(-1))
            .isInstanceOf(IllegalArgumentException.class)
            .hasMessage("socket buffer size -1 must be 0 (kernel autotuning) or more");
    }

    private void assertRefused(String name, String value, String message) {
        System.setProperty(name, value);
        try {
            assertThatThrownBy(TcpTransportOptions::defaults).isInstanceOf(IllegalArgumentException.class)
                .hasMessage(message);
        } finally {
            System.clearProperty(name);
        }
    }
}
