package io.nvmeof4j.target.config;

import io.nvmeof4j.protocol.spi.idle.AdaptiveIdleStrategy;
import io.nvmeof4j.rdma.RdmaPollGroup;
import io.nvmeof4j.target.backend.BdevChannels;
import io.nvmeof4j.target.backend.UringBlockDevice;
import io.nvmeof4j.target.controller.PreemptAndAbort;
import io.nvmeof4j.tcp.SocketSelector;
import io.nvmeof4j.tcp.TcpTransportOptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Every JVM option the daemon reads is checked with its configuration, and a bad one is a configuration error. */
class DaemonJvmOptionsTest {
    private static final String CONFIG = "{\"subsystems\": [], \"nvmeof4j\": {\"http\": \"off\"}}";

    /** Each option the daemon reads, a value it refuses, the rule the refusal states, and a value it takes. */
    private static final String[][] OPTIONS = {
        {TcpTransportOptions.MAX_H2C_DATA_SIZE_PROP_NAME, "1", "must be 4096 or more", "1048576"},
        {TcpTransportOptions.C2H_DATA_PDU_SIZE_PROP_NAME, "128K", "not a whole number", "65536"},
        {TcpTransportOptions.RECEIVE_BUFFER_SIZE_PROP_NAME, "64k", "not a whole number", "131072"},
        {TcpTransportOptions.SOCKET_BUFFER_SIZE_PROP_NAME, "-1", "must be 0 or more", "2097152"},
        {SocketSelector.DIRECT_READ_SOCKETS_PROP_NAME, "65", "must be 0..64", "0"},
        {AdaptiveIdleStrategy.MAX_SPIN_US_PROP_NAME, "-5", "must be 0..1000000", "0"},
        {AdaptiveIdleStrategy.MAX_YIELDS_PROP_NAME, "two", "not a whole number", "2"},
        {AdaptiveIdleStrategy.ADAPT_TO_CONTENTION_PROP_NAME, "treu", "must be true or false", "FALSE"},
        {BdevChannels.ENTRIES_PROP_NAME, "abc", "not a whole number; must be 1..32768", "32"},
        {BdevChannels.ENTRIES_PROP_NAME, "0", "must be 1..32768", "32768"},
        {BdevChannels.WAKE_SELECTOR_PROP_NAME, "no", "must be true or false", "false"},
        {UringBlockDevice.DISCARD_COMMAND_PROP_NAME, "0", "must be true or false", "true"},
        {UringBlockDevice.FINAL_SYNC_TIMEOUT_PROP_NAME, "10s", "not a whole number; must be 0..3600000", "0"},
        {PreemptAndAbort.TIMEOUT_PROP_NAME, "0", "must be 1..3600000", "500"},
        {RdmaPollGroup.WAKE_SELECTOR_PROP_NAME, "off", "must be true or false", "false"},
        {DaemonJvmOptions.LOG_LEVEL_PROP_NAME, "inf", "must be one of TRACE, DEBUG, INFO, WARN, ERROR, OFF, ALL",
            "debug"},
    };

    @TempDir
    Path dir;

    @Test
    void shouldRefuseEachBadOptionAsAConfigurationErrorNamingIt() {
        for (String[] option : OPTIONS) {
            String name = option[0];
            System.setProperty(name, option[1]);
            try {
                assertThatThrownBy(() -> TargetConfig.parse(CONFIG, dir)).as(name)
                    .isInstanceOf(ConfigException.class)
                    .hasMessageStartingWith("-D" + name + "=" + option[1] + ": " + option[2]);
            } finally {
                System.clearProperty(name);
            }
        }
    }

    @Test
    void shouldTakeGoodValuesOfEveryOption() throws Exception {
        try {
            for (String[] option : OPTIONS) {
                System.setProperty(option[0], option[3]);
            }
            assertThat(TargetConfig.parse(CONFIG, dir).subsystems()).isEmpty();
            assertThat(BdevChannels.entriesFromProperty()).isEqualTo(32768);
            assertThat(UringBlockDevice.finalSyncTimeoutMillisFromProperty()).isZero();
            assertThat(PreemptAndAbort.timeoutMillis()).isEqualTo(500);
            assertThat(UringBlockDevice.discardCommandFromProperty()).isTrue();
            assertThat(RdmaPollGroup.wakeSelectorFromProperty()).isFalse();
            assertThat(SocketSelector.directReadSocketsFromProperty()).isZero();
            assertThat(TcpTransportOptions.defaults()).isEqualTo(new TcpTransportOptions(1048576, 65536, 131072,
                2097152));
        } finally {
            for (String[] option : OPTIONS) {
                System.clearProperty(option[0]);
            }
        }
    }
}
