package io.nvmeof4j.it.metrics;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.nvmeof4j.protocol.spi.TransportAddress;
import io.nvmeof4j.target.config.TargetConfig;
import io.nvmeof4j.target.daemon.TargetDaemon;

import java.nio.file.Path;

/**
 * A daemon in this JVM for the metrics and management tests: NVMe/TCP on 127.0.0.1 (any free port), HTTP on
 * 127.0.0.1 (any free port); subsystem {@link #OPEN} (any host; ns 1 RAM 16 MiB of 4 KiB blocks, ns 2 RAM 8 MiB of
 * 512-byte blocks) and subsystem {@link #CLOSED} (allow list only: {@link #ALLOWED_HOST}; ns 1 RAM 8 MiB).
 * File namespaces may be added live inside the directory given to {@link #start(Path)} ({@code allowed_paths}).
 */
final class MetricsTarget implements AutoCloseable {
    static final String OPEN = "nqn.2014-08.io.nvmeof4j:metrics-open";
    static final String CLOSED = "nqn.2014-08.io.nvmeof4j:metrics-closed";
    static final String ALLOWED_HOST = "nqn.2014-08.io.nvmeof4j:metrics-host-allowed";

    private static final ObjectMapper JSON = new ObjectMapper();

    final TargetDaemon daemon;
    final Http http;

    private MetricsTarget(TargetDaemon daemon) {
        this.daemon = daemon;
        this.http = new Http(daemon);
    }

    static MetricsTarget start(Path dir) throws Exception {
        return start(dir, "\"allowed_paths\": [" + JSON.writeValueAsString(dir.toAbsolutePath().toString()) + "]");
    }

    /**
     * As {@link #start(Path)}, with {@code settings} (JSON members such as {@code "ram_budget_mib": 64}, or nothing)
     * in the {@code "nvmeof4j"} object instead of the allowed path.
     */
    static MetricsTarget start(Path dir, String settings) throws Exception {
        String json = """
            {
              "nvmeof4j": {"http": "127.0.0.1:0", "reactors": 1 %4$s},
              "ports": [
                {"portid": 1, "addr": {"trtype": "tcp", "adrfam": "ipv4", "traddr": "127.0.0.1", "trsvcid": "0"},
                 "subsystems": ["%1$s", "%2$s"]}
              ],
              "subsystems": [
                {"nqn": "%1$s", "attr": {"allow_any_host": "1"},
                 "namespaces": [
                   {"nsid": 1, "device": {"backend": "ram", "size": "16M", "block_size": 4096}},
                   {"nsid": 2, "device": {"backend": "ram", "size": "8M", "block_size": 512}}
                 ]},
                {"nqn": "%2$s", "attr": {"allow_any_host": "0"}, "allowed_hosts": ["%3$s"],
                 "namespaces": [ {"nsid": 1, "device": {"backend": "ram", "size": "8M"}} ]}
              ]
            }
            """.formatted(OPEN, CLOSED, ALLOWED_HOST, settings.isEmpty() ? "" : ", " + settings);
        return new MetricsTarget(TargetDaemon.start(TargetConfig.parse(json, dir)));
    }

    /**
     * A configuration of one subsystem {@code nqn} (any host) whose namespace 1 is {@code namespace} (the members
     * after {@code "nsid": 1,}), on NVMe/TCP and HTTP on 127.0.0.1 (any free ports), with {@code reactors} reactors.
     */
    static String oneNamespaceConfig(String nqn, int reactors, String namespace) {
        return """
            {
              "nvmeof4j": {"http": "127.0.0.1:0", "reactors": %2$d},
              "ports": [
                {"portid": 1, "addr": {"trtype": "tcp", "adrfam": "ipv4", "traddr": "127.0.0.1", "trsvcid": "0"},
                 "subsystems": ["%1$s"]}
              ],
              "subsystems": [
                {"nqn": "%1$s", "attr": {"allow_any_host": "1"},
                 "namespaces": [ {"nsid": 1, %3$s} ]}
              ]
            }
            """.formatted(nqn, reactors, namespace);
    }

    TransportAddress ioAddress() {
        return daemon.listenAddresses().get(0);
    }

    @Override
    public void close() {
        daemon.close();
    }
}
