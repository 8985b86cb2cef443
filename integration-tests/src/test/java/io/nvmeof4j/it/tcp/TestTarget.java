package io.nvmeof4j.it.tcp;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.nvmeof4j.protocol.spi.TransportAddress;
import io.nvmeof4j.target.config.TargetConfig;
import io.nvmeof4j.target.daemon.TargetDaemon;
import io.nvmeof4j.target.model.Port;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.UUID;

/**
 * The daemon the end-to-end tests run against, started in this JVM from an nvmetcli-shaped JSON file on
 * 127.0.0.1 with any free ports:
 * <ul>
 *   <li>port 1 (I/O, inline_data_size 16384) exporting subsystem a (any host; ns 1 RAM 64 MiB / 512 B,
 *       ns 2 RAM 16 MiB / 4 KiB) and subsystem b (only {@link #ALLOWED_HOST_B}; ns 1 a 32 MiB file with the
 *       daemon's default block size, which tests read from Identify Namespace);</li>
 *   <li>port 2 exporting the discovery subsystem.</li>
 * </ul>
 */
final class TestTarget implements AutoCloseable {
    static final String NQN_A = "nqn.2014-08.io.nvmeof4j:a";
    static final String NQN_B = "nqn.2014-08.io.nvmeof4j:b";
    static final String DISCOVERY_NQN = "nqn.2014-08.org.nvmexpress.discovery";
    static final HostIdentity ALLOWED_HOST_B =
        HostIdentity.ofUuid(UUID.fromString("11111111-2222-3333-4444-555555555555"));

    static final String SERIAL_A = "SERIALA";
    static final String MODEL_A = "nvmeof4j-test";
    static final int INLINE_DATA_SIZE = 16384;
    static final int IO_PORT_ID = 1;
    static final int DISCOVERY_PORT_ID = 2;

    /** Subsystem a, namespace 1: 64 MiB of 512-byte blocks. */
    static final Namespace A1 = new Namespace(NQN_A, 1, 512, 64L << 20);
    /** Subsystem a, namespace 2: 16 MiB of 4096-byte blocks. */
    static final Namespace A2 = new Namespace(NQN_A, 2, 4096, 16L << 20);
    /** Subsystem b, namespace 1: a 32 MiB file; no block_size in the configuration, as in the brief's example. */
    static final long B1_BYTES = 32L << 20;

    record Namespace(String subnqn, int nsid, int blockSize, long bytes) {
        long blocks() {
            return bytes / blockSize;
        }

        int lbads() {
            return Integer.numberOfTrailingZeros(blockSize);
        }
    }

    private final TargetDaemon daemon;
    private final java.util.concurrent.atomic.AtomicBoolean closed = new java.util.concurrent.atomic.AtomicBoolean();
    private final Path configFile;
    private final Path fileNamespace;
    private final InetSocketAddress ioPort;
    private final InetSocketAddress discoveryPort;

    private TestTarget(TargetDaemon daemon, Path configFile, Path fileNamespace) {
        this.daemon = daemon;
        this.configFile = configFile;
        this.fileNamespace = fileNamespace;
        this.ioPort = boundPort(daemon, IO_PORT_ID);
        this.discoveryPort = boundPort(daemon, DISCOVERY_PORT_ID);
    }

    /** Writes the configuration (and a 32 MiB file for subsystem b) into {@code dir}, then starts a daemon. */
    static TestTarget start(Path dir) throws Exception {
        return startFrom(writeConfig(dir));
    }

    /** Starts a daemon on an existing configuration file (a restart on the same data). */
    static TestTarget startFrom(Path configFile) throws Exception {
        TargetConfig config = TargetConfig.load(configFile);
        TargetDaemon daemon = TargetDaemon.start(config);
        try {
            return new TestTarget(daemon, configFile, configFile.resolveSibling("b1.img"));
        } catch (RuntimeException e) {
            daemon.close();
            throw e;
        }
    }

    /** As {@link #start(Path)}, with {@code daemonSettings} (JSON members, no braces) as the "nvmeof4j" object. */
    static TestTarget start(Path dir, String daemonSettings) throws Exception {
        return startFrom(writeConfig(dir, daemonSettings));
    }

    static Path writeConfig(Path dir) throws IOException {
        return writeConfig(dir, "");
    }

    static Path writeConfig(Path dir, String daemonSettings) throws IOException {
        Path image = dir.resolve("b1.img");
        if (!Files.exists(image)) {
            try (RandomAccessFile f = new RandomAccessFile(image.toFile(), "rw")) {
                f.setLength(B1_BYTES);
            }
        }
        String imagePath = new ObjectMapper().writeValueAsString(image.toAbsolutePath().toString());
        String json = """
            {
              "nvmeof4j": {%8$s},
              "ports": [
                {"portid": 1, "addr": {"trtype": "tcp", "adrfam": "ipv4", "traddr": "127.0.0.1", "trsvcid": "0"},
                 "param": {"inline_data_size": "16384"},
                 "subsystems": ["%1$s", "%2$s"]},
                {"portid": 2, "addr": {"trtype": "tcp", "adrfam": "ipv4", "traddr": "127.0.0.1", "trsvcid": "0"},
                 "subsystems": ["%3$s"]}
              ],
              "subsystems": [
                {"nqn": "%1$s",
                 "attr": {"allow_any_host": "1", "serial": "%4$s", "model": "%5$s"},
                 "allowed_hosts": [],
                 "namespaces": [
                   {"nsid": 1, "enable": 1, "device": {"backend": "ram", "size": "64M", "block_size": 512}},
                   {"nsid": 2, "enable": 1, "device": {"backend": "ram", "size": "16M", "block_size": 4096}}
                 ]},
                {"nqn": "%2$s",
                 "attr": {"allow_any_host": "0"},
                 "allowed_hosts": ["%6$s"],
                 "namespaces": [
                   {"nsid": 1, "enable": 1, "device": {"path": %7$s, "size": "32M"}}
                 ]}
              ]
            }
            """.formatted(NQN_A, NQN_B, DISCOVERY_NQN, SERIAL_A, MODEL_A, ALLOWED_HOST_B.hostnqn(), imagePath,
                daemonSettings);
        Path config = dir.resolve("nvmeof4j-target.json");
        Files.writeString(config, json, StandardCharsets.UTF_8);
        return config;
    }

    /** Where port {@code portId} listens, from the daemon's model (trsvcid "0" resolved to the bound port). */
    private static InetSocketAddress boundPort(TargetDaemon daemon, int portId) {
        for (Port port : daemon.model().ports()) {
            if (port.portId() == portId) {
                TransportAddress a = port.address();
                if (a.port() == 0) {
                    throw new IllegalStateException("port " + portId + " still shows trsvcid 0 after start: " + a);
                }
                return new InetSocketAddress(a.traddr(), a.port());
            }
        }
        throw new IllegalStateException("daemon has no port " + portId + "; ports " + daemon.model().ports()
            + ", listening on " + daemon.listenAddresses());
    }

    InetSocketAddress ioPort() {
        return ioPort;
    }

    InetSocketAddress discoveryPort() {
        return discoveryPort;
    }

    Path configFile() {
        return configFile;
    }

    Path fileNamespace() {
        return fileNamespace;
    }

    TargetDaemon daemon() {
        return daemon;
    }

    /** The device behind {@code ns}, as the daemon serves it. */
    io.nvmeof4j.target.backend.BlockDevice device(Namespace ns) {
        return daemon.model().subsystem(ns.subnqn()).namespace(ns.nsid()).device();
    }

    /** Closes the daemon once; later calls do nothing. */
    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            try {
                daemon.close();
            } catch (RuntimeException e) {
                throw e;
            } catch (Exception e) {
                throw new IllegalStateException("TargetDaemon.close() failed", e);
            }
        }
    }
}
