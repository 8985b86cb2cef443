package io.nvmeof4j.target.config;

import io.nvmeof4j.protocol.spi.JvmOptions;
import io.nvmeof4j.protocol.spi.idle.AdaptiveIdleStrategy;
import io.nvmeof4j.rdma.RdmaPollGroup;
import io.nvmeof4j.target.backend.BdevChannels;
import io.nvmeof4j.target.backend.UringBlockDevice;
import io.nvmeof4j.target.controller.PreemptAndAbort;
import io.nvmeof4j.tcp.SocketSelector;
import io.nvmeof4j.tcp.TcpTransportOptions;

/**
 * The daemon's JVM options ({@code -Dnvmeof4j.*} in {@code NVMEOF4J_JAVA_OPTS}), checked with the configuration: each
 * is read here through the same method its user reads it with ({@link JvmOptions}), so a
 * malformed or out-of-range one ends the start with a {@link ConfigException} (exit status 2, one line naming it)
 * before anything is opened or listens, instead of a stack trace from a reactor, a port or a device.
 */
final class DaemonJvmOptions {
    /**
     * The daemon's log level, read by Logback in {@code logback.xml}; Logback takes a level it does not know for DEBUG
     * without a word, so it is checked here.
     */
    static final String LOG_LEVEL_PROP_NAME = "nvmeof4j.log.level";

    private DaemonJvmOptions() {
    }

    static void check() throws ConfigException {
        try {
            TcpTransportOptions.defaults();
            SocketSelector.directReadSocketsFromProperty();
            AdaptiveIdleStrategy.checkJvmOptions();
            BdevChannels.entriesFromProperty();
            BdevChannels.wakeSelectorFromProperty();
            UringBlockDevice.discardCommandFromProperty();
            UringBlockDevice.finalSyncTimeoutMillisFromProperty();
            PreemptAndAbort.timeoutMillis();
            RdmaPollGroup.wakeSelectorFromProperty();
            JvmOptions.choiceOption(LOG_LEVEL_PROP_NAME, "INFO", "TRACE", "DEBUG", "INFO", "WARN", "ERROR", "OFF",
                "ALL");
        } catch (IllegalArgumentException e) {
            throw new ConfigException("", e.getMessage(), e);
        }
    }
}
