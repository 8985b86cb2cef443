package io.nvmeof4j.initiator.cli;

import io.nvmeof4j.initiator.MultipathController;
import io.nvmeof4j.initiator.NvmeofHost;
import io.nvmeof4j.protocol.spi.idle.AdaptiveIdleStrategy;
import io.nvmeof4j.tcp.SocketSelector;
import org.junit.jupiter.api.Test;

import java.net.InetAddress;
import java.net.ServerSocket;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** A bad {@code -Dnvmeof4j.*} option of the host is a usage error of {@code nvmeof}, found before any connection. */
class CliJvmOptionsTest {
    @Test
    void shouldExitWithTheUsageStatusNamingTheOptionBeforeConnecting() throws Exception {
        int port;
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            port = s.getLocalPort(); // closed again: a connect would be refused (exit 4), not a usage error
        }
        String[][] bad = {{AdaptiveIdleStrategy.MAX_YIELDS_PROP_NAME, "-1", "must be 0 or more (up to 2147483647)"},
            {MultipathController.ROUND_ROBIN_PER_IO_PROP_NAME, "treu", "must be true or false"},
            {SocketSelector.DIRECT_READ_SOCKETS_PROP_NAME, "-1", "must be 0..64"}};
        for (String[] option : bad) {
            System.setProperty(option[0], option[1]);
            try {
                Cli.Outcome r = Cli.run("identify", "-a", "127.0.0.1", "-s", Integer.toString(port), "-n",
                    "nqn.2014-08.io.nvmeof4j:any");
                assertThat(r.status()).as(r.toString()).isEqualTo(NvmeofCli.EXIT_USAGE);
                assertThat(r.err()).isEqualTo("nvmeof: error: -D" + option[0] + "=" + option[1] + ": " + option[2]
                    + System.lineSeparator());
                assertThat(r.out()).isEmpty();
                assertThatThrownBy(() -> NvmeofHost.create(io.nvmeof4j.initiator.HostIdentity.generate(), 1))
                    .as("the library refuses it when a host is made, on the caller's thread")
                    .isInstanceOf(IllegalArgumentException.class).hasMessage(r.err().strip().substring(
                        "nvmeof: error: ".length()));
            } finally {
                System.clearProperty(option[0]);
            }
        }
    }
}
