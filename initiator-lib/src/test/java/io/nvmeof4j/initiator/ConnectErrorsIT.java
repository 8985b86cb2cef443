package io.nvmeof4j.initiator;

import io.nvmeof4j.protocol.spi.TransportAddress;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;

import java.io.InputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The errors a user can act on: each names the peer, the step and (when the controller answered) the status. */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class ConnectErrorsIT {
    private InJvmTarget target;
    private NvmeofHost host;

    @BeforeAll
    void start(@TempDir Path dir) throws Exception {
        target = new InJvmTarget(dir);
        host = NvmeofHost.create(HostIdentity.generate(), 1);
    }

    @AfterAll
    void stop() {
        host.close();
        target.close();
    }

    @Test
    void shouldNameAnUnknownSubsystem() {
        String nqn = "nqn.2014-08.io.nvmeof4j:no-such-subsystem";
        assertThatThrownBy(() -> host.connect(target.ioAddress(), nqn))
            .isInstanceOf(NvmeofException.class)
            .hasMessageContaining(target.ioAddress().toString())
            .hasMessageContaining(nqn)
            .hasMessageContaining("Connect (admin queue)")
            .hasMessageContaining("0x182 CONNECT_INVALID_PARAMETERS")
            .hasMessageContaining("SUBNQN, Connect data offset 256")
            .satisfies(e -> {
                NvmeofException n = (NvmeofException) e;
                assertThat(n.status() & 0x7FF).isEqualTo(0x182);
                assertThat(n.step()).isEqualTo("Connect (admin queue)");
            });
    }

    @Test
    void shouldNameAHostThatIsNotAllowed() {
        assertThatThrownBy(() -> host.connect(target.ioAddress(), InJvmTarget.NQN_B))
            .isInstanceOf(NvmeofException.class)
            .hasMessageContaining("Connect (admin queue)")
            .hasMessageContaining("0x184 CONNECT_INVALID_HOST")
            .hasMessageContaining(host.identity().hostNqn().value())
            .hasMessageContaining("is not allowed to connect to '" + InJvmTarget.NQN_B + "'");
        assertThat(host.controllers()).isEmpty();
    }

    @Test
    void shouldConnectAnAllowedHost() throws Exception {
        try (NvmeofHost allowed = NvmeofHost.create(InJvmTarget.HOST_B, 1);
             NvmeofController controller = allowed.connect(target.ioAddress(), InJvmTarget.NQN_B,
                 ConnectOptions.defaults().withIoQueues(1))) {
            assertThat(controller.namespaces()).hasSize(1);
            assertThat(target.daemon().registry().controller(controller.controllerId()).hostId().uuid())
                .isEqualTo(InJvmTarget.HOST_B.hostId().uuid());
        }
    }

    @Test
    void shouldNameARefusedConnection() throws Exception {
        int port;
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            port = s.getLocalPort();
        }
        TransportAddress address = TransportAddress.tcp("127.0.0.1", port);
        assertThatThrownBy(() -> host.connect(address, InJvmTarget.NQN_A))
            .isInstanceOf(NvmeofException.class)
            .hasMessageStartingWith(address + " (" + InJvmTarget.NQN_A + "): TCP connect: ")
            .hasMessageContaining("refused")
            .satisfies(e -> assertThat(((NvmeofException) e).status()).isEqualTo(NvmeofException.NO_STATUS));
    }

    @Test
    void shouldNameAWrongAddress() {
        TransportAddress address = TransportAddress.tcp("no-such-host.invalid", 4420);
        assertThatThrownBy(() -> host.connect(address, InJvmTarget.NQN_A))
            .isInstanceOf(NvmeofException.class)
            .hasMessageContaining("no-such-host.invalid")
            .hasMessageContaining("resolve address");
    }

    @Test
    void shouldTimeOutAgainstAControllerThatNeverAnswers() throws Exception {
        // Accepts, answers ICReq, then stays silent: the admin Connect never completes.
        try (ServerSocket server = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            Thread peer = new Thread(() -> {
                try (Socket s = server.accept()) {
                    InputStream in = s.getInputStream();
                    in.readNBytes(128);
                    ByteBuffer icresp = ByteBuffer.allocate(128).order(ByteOrder.LITTLE_ENDIAN);
                    icresp.put(0, (byte) 0x01).put(2, (byte) 128).putInt(4, 128).putInt(12, 0x40000);
                    s.getOutputStream().write(icresp.array());
                    while (in.read() >= 0) {
                        // swallow the Connect capsule and say nothing
                    }
                } catch (Exception ignored) {
                    // host hung up
                }
            });
            peer.setDaemon(true);
            peer.start();
            TransportAddress address = TransportAddress.tcp("127.0.0.1", server.getLocalPort());
            long start = System.nanoTime();
            assertThatThrownBy(() -> host.connect(address, InJvmTarget.NQN_A,
                ConnectOptions.defaults().withConnectTimeout(Duration.ofMillis(500))))
                .isInstanceOf(NvmeofException.class)
                .hasMessageContaining(address.toString())
                .hasMessageContaining("Connect (admin queue)")
                .hasMessageContaining("no completion within 500 ms");
            assertThat(System.nanoTime() - start).isLessThan(TimeUnit.SECONDS.toNanos(5));
            peer.join(5_000);
        }
    }

    @Test
    void shouldRefuseToUseTheDiscoveryControllerForIo() {
        assertThatThrownBy(() -> host.connect(target.discoveryAddress(), NvmeofHost.DISCOVERY_NQN))
            .isInstanceOf(NvmeofException.class)
            .hasMessageContaining("discovery controller");
    }
}
