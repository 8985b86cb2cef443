package io.nvmeof4j.initiator;

import io.nvmeof4j.protocol.spi.TransportAddress;
import io.nvmeof4j.target.config.TargetConfig;
import io.nvmeof4j.target.daemon.TargetDaemon;
import io.nvmeof4j.target.model.Port;

import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.UUID;

/**
 * Our target, started in this JVM on 127.0.0.1 (port 0 the first time; {@link #restart()} binds the same ports
 * again):
 * <ul>
 *   <li>I/O port (inline_data_size 16384): subsystem {@link #NQN_A} (any host; ns 1 RAM 64 MiB of 512-byte blocks,
 *       ns 2 RAM 16 MiB of 4096-byte blocks) and subsystem {@link #NQN_B} (only {@link #HOST_B}; ns 1 a 32 MiB file
 *       with the daemon's default file block size, 4096);</li>
 *   <li>discovery port.</li>
 * </ul>
 */
final class InJvmTarget implements AutoCloseable {
    static final String NQN_A = "nqn.2014-08.io.nvmeof4j:initiator-test-a";
    static final String NQN_B = "nqn.2014-08.io.nvmeof4j:initiator-test-b";
    static final HostIdentity HOST_B = HostIdentity.of("nqn.2014-08.io.nvmeof4j:host-b",
        UUID.fromString("11111111-2222-3333-4444-555555555555"));
    static final String SERIAL_A = "INITTESTA";
    static final String MODEL_A = "nvmeof4j-initiator-test";
    static final long A1_BYTES = 64L << 20;
    static final long A2_BYTES = 16L << 20;
    static final long B1_BYTES = 32L << 20;

    private final Path dir;
    private TargetDaemon daemon;
    private int ioPort;
    private int discoveryPort;

    InJvmTarget(Path dir) throws Exception {
        this.dir = dir;
        Path image = dir.resolve("b1.img");
        try (RandomAccessFile f = new RandomAccessFile(image.toFile(), "rw")) {
            f.setLength(B1_BYTES);
        }
        start(0, 0);
    }

    private void start(int io, int discovery) throws Exception {
        String json = """
            {
              "ports": [
                {"portid": 1, "addr": {"trtype": "tcp", "adrfam": "ipv4", "traddr": "127.0.0.1", "trsvcid": "%1$d"},
                 "param": {"inline_data_size": "16384"},
                 "subsystems": ["%3$s", "%4$s"]},
                {"portid": 2, "addr": {"trtype": "tcp", "adrfam": "ipv4", "traddr": "127.0.0.1", "trsvcid": "%2$d"},
                 "subsystems": ["nqn.2014-08.org.nvmexpress.discovery"]}
              ],
              "subsystems": [
                {"nqn": "%3$s",
                 "attr": {"allow_any_host": "1", "serial": "%5$s", "model": "%6$s"},
                 "allowed_hosts": [],
                 "namespaces": [
                   {"nsid": 1, "enable": 1, "device": {"backend": "ram", "size": "64M", "block_size": 512}},
                   {"nsid": 2, "enable": 1, "device": {"backend": "ram", "size": "16M", "block_size": 4096}}
                 ]},
                {"nqn": "%4$s",
                 "attr": {"allow_any_host": "0"},
                 "allowed_hosts": ["%7$s"],
                 "namespaces": [
                   {"nsid": 1, "enable": 1, "device": {"path": "%8$s", "size": "32M"}}
                 ]}
              ]
            }
            """.formatted(io, discovery, NQN_A, NQN_B, SERIAL_A, MODEL_A, HOST_B.hostNqn(),
            dir.resolve("b1.img").toAbsolutePath().toString().replace("\\", "\\\\"));
        Files.writeString(dir.resolve("target.json"), json);
        daemon = TargetDaemon.start(TargetConfig.load(dir.resolve("target.json")));
        for (Port port : daemon.model().ports()) {
            if (port.portId() == 1) {
                ioPort = port.address().port();
            } else if (port.portId() == 2) {
                discoveryPort = port.address().port();
            }
        }
    }

    TransportAddress ioAddress() {
        return TransportAddress.tcp("127.0.0.1", ioPort);
    }

    TransportAddress discoveryAddress() {
        return TransportAddress.tcp("127.0.0.1", discoveryPort);
    }

    TargetDaemon daemon() {
        return daemon;
    }

    /** Stops the daemon (its listeners and connections go away). */
    void stop() {
        if (daemon != null) {
            daemon.close();
            daemon = null;
        }
    }

    /** Starts the daemon again on the same ports and the same file. */
    void restart() throws Exception {
        stop();
        start(ioPort, discoveryPort);
    }

    @Override
    public void close() {
        stop();
    }
}
