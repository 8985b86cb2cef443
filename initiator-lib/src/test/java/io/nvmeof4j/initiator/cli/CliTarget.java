package io.nvmeof4j.initiator.cli;

import io.nvmeof4j.target.config.TargetConfig;
import io.nvmeof4j.target.daemon.TargetDaemon;
import io.nvmeof4j.target.model.Port;

import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Our target in this JVM on 127.0.0.1 (free ports): an I/O port with subsystem {@link #NQN_A} (any host; ns 1 RAM
 * 64 MiB of 512-byte blocks, ns 2 RAM 16 MiB of 4096-byte blocks) and {@link #NQN_B} (only {@link #HOST_B}; ns 1
 * RAM 8 MiB), and a discovery port.
 */
final class CliTarget implements AutoCloseable {
    static final String NQN_A = "nqn.2014-08.io.nvmeof4j:cli-test-a";
    static final String NQN_B = "nqn.2014-08.io.nvmeof4j:cli-test-b";
    static final String HOST_B = "nqn.2014-08.io.nvmeof4j:cli-host-b";
    static final String HOST_B_ID = "11111111-2222-3333-4444-555555555555";
    /** A host the tests use by default (never the persisted identity of the machine). */
    static final String HOST_A = "nqn.2014-08.org.nvmexpress:uuid:aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee";
    static final String SERIAL_A = "CLITESTA";
    static final String MODEL_A = "nvmeof4j-cli-test";

    final TargetDaemon daemon;
    final int ioPort;
    final int discoveryPort;

    CliTarget(Path dir) throws Exception {
        String json = """
            {
              "ports": [
                {"portid": 1, "addr": {"trtype": "tcp", "adrfam": "ipv4", "traddr": "127.0.0.1", "trsvcid": "0"},
                 "subsystems": ["%1$s", "%2$s"]},
                {"portid": 2, "addr": {"trtype": "tcp", "adrfam": "ipv4", "traddr": "127.0.0.1", "trsvcid": "0"},
                 "subsystems": ["nqn.2014-08.org.nvmexpress.discovery"]}
              ],
              "subsystems": [
                {"nqn": "%1$s",
                 "attr": {"allow_any_host": "1", "serial": "%3$s", "model": "%4$s"},
                 "allowed_hosts": [],
                 "namespaces": [
                   {"nsid": 1, "enable": 1, "device": {"backend": "ram", "size": "64M", "block_size": 512}},
                   {"nsid": 2, "enable": 1, "device": {"backend": "ram", "size": "16M", "block_size": 4096}}
                 ]},
                {"nqn": "%2$s",
                 "attr": {"allow_any_host": "0"},
                 "allowed_hosts": ["%5$s"],
                 "namespaces": [
                   {"nsid": 1, "enable": 1, "device": {"backend": "ram", "size": "8M", "block_size": 512}}
                 ]}
              ]
            }
            """.formatted(NQN_A, NQN_B, SERIAL_A, MODEL_A, HOST_B);
        Files.writeString(dir.resolve("target.json"), json);
        daemon = TargetDaemon.start(TargetConfig.load(dir.resolve("target.json")));
        int io = -1;
        int discovery = -1;
        for (Port port : daemon.model().ports()) {
            if (port.portId() == 1) {
                io = port.address().port();
            } else if (port.portId() == 2) {
                discovery = port.address().port();
            }
        }
        ioPort = io;
        discoveryPort = discovery;
    }

    @Override
    public void close() {
        daemon.close();
    }
}
