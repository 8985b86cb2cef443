package io.nvmeof4j.target.control;

import io.nvmeof4j.target.config.TargetConfig;
import io.nvmeof4j.target.daemon.TargetDaemon;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The set-up of the JSON-RPC socket tests: a daemon on a config file of its own (one discovery port on an ephemeral
 * loopback port, no subsystems, the socket beside the file's folder), started on demand and closed after each test.
 */
abstract class RpcDaemonFixture {
    static final String NQN = "nqn.2016-06.io.spdk:cnode1";

    @TempDir
    Path dir;
    TargetDaemon daemon;

    @AfterEach
    void stop() {
        if (daemon != null) {
            daemon.close();
        }
    }

    /** The daemon's config file, written on first use. */
    Path config() throws IOException {
        Path file = dir.resolve("conf").resolve("target.json");
        if (!Files.exists(file)) {
            Files.createDirectories(file.getParent());
            Files.writeString(file, """
                // comments are allowed in the file (and not kept when the daemon rewrites it)
                {"nvmeof4j": {"reactors": 1, "buffer_pool_mib": 4, "http": "off", "shutdown_timeout_ms": 1000,
                              "ram_budget_mib": 64, "rpc_socket": "../rpc.sock"},
                 "ports": [{"portid": 1, "addr": {"trtype": "tcp", "adrfam": "ipv4", "traddr": "127.0.0.1",
                            "trsvcid": "0"}, "subsystems": ["nqn.2014-08.org.nvmexpress.discovery"]}],
                 "subsystems": []}
                """);
        }
        return file;
    }

    /** Starts the daemon on {@link #config()} with its RPC socket, and a client on that socket. */
    RpcClient start() throws IOException {
        daemon = TargetDaemon.start(TargetConfig.load(config()));
        daemon.startRpc(daemon.controlPlane().rpcSocketSetting().orElseThrow());
        return new RpcClient(daemon.rpcSocket());
    }

    static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        }
    }
}
