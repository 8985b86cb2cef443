package io.nvmeof4j.it.tcp;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.nvmeof4j.protocol.command.NvmeStatus;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The daemon as a real process ({@code bin/nvmeof-target}) with io_uring file namespaces:
 * <ul>
 *   <li>killed with SIGKILL right after an acknowledged FUA write, and right after a Flush, then restarted: the
 *       data is read back (O_DIRECT: acknowledged means handed to the file system, nothing held in the daemon);</li>
 *   <li>a file namespace on a full tmpfs answers the write that does not fit with Capacity Exceeded (what nvmet
 *       answers for ENOSPC), and the daemon keeps serving its other namespace and the rest of that one.</li>
 * </ul>
 * The tmpfs is mounted in a private mount namespace of the daemon process ({@code unshare -m}): the host's mount
 * table is never touched and the mount disappears with the process. This needs root, which CI has.
 */
class UringNamespaceProcessIT {
    private static final String NQN = "nqn.2014-08.io.nvmeof4j:uring";
    private static final HostIdentity HOST = HostIdentity.ofUuid(java.util.UUID.fromString(
        "22222222-3333-4444-5555-666666666666"));

    @TempDir
    Path dir;

    @Test
    void shouldKeepFuaAndFlushedWritesAcrossSigkill() throws Exception {
        Path image = dir.resolve("durable.img");
        int port = freePort();
        Path config = writeConfig(port, "{\"nsid\": 1, \"device\": {\"path\": " + json(image) + ", \"size\": \"64M\"}}");
        byte[] fuaData = Bytes.random(31, 131072);
        byte[] flushedData = Bytes.random(32, 65536);
        long fuaOffset = 3L << 20;
        long flushedOffset = 9L << 20;

        try (DaemonProcess daemon = DaemonProcess.start(List.of(DaemonProcess.launcher().toString(), "--config", config.toString()),
                dir.resolve("daemon1.log"), port)) {
            try (Session s = new Session(port)) {
                Completion fua = s.io.write(1, fuaOffset / s.bs, fuaData.length / s.bs, fuaData, true);
                assertThat(fua.status()).as("FUA write %s", fua).isEqualTo(NvmeStatus.SUCCESS);
                daemon.kill();
            }
        }
        try (DaemonProcess daemon = DaemonProcess.start(List.of(DaemonProcess.launcher().toString(), "--config", config.toString()),
                dir.resolve("daemon2.log"), port)) {
            try (Session s = new Session(port)) {
                Completion back = s.io.read(1, fuaOffset / s.bs, fuaData.length / s.bs, s.bs);
                assertThat(back.status()).isEqualTo(NvmeStatus.SUCCESS);
                assertThat(back.data()).as("FUA-written data after SIGKILL and restart").isEqualTo(fuaData);
                Completion plain = s.io.write(1, flushedOffset / s.bs, flushedData.length / s.bs, flushedData, false);
                assertThat(plain.status()).isEqualTo(NvmeStatus.SUCCESS);
                Completion flush = s.io.flush(1);
                assertThat(flush.status()).as("Flush %s", flush).isEqualTo(NvmeStatus.SUCCESS);
                daemon.kill();
            }
        }
        try (DaemonProcess daemon = DaemonProcess.start(List.of(DaemonProcess.launcher().toString(), "--config", config.toString()),
                dir.resolve("daemon3.log"), port);
             Session s = new Session(port)) {
            Completion back = s.io.read(1, flushedOffset / s.bs, flushedData.length / s.bs, s.bs);
            assertThat(back.status()).isEqualTo(NvmeStatus.SUCCESS);
            assertThat(back.data()).as("flushed data after SIGKILL and restart").isEqualTo(flushedData);
            assertThat(s.io.read(1, fuaOffset / s.bs, fuaData.length / s.bs, s.bs).data()).isEqualTo(fuaData);
        }
        assertThat(fileBytes(image, flushedOffset, flushedData.length)).isEqualTo(flushedData);
    }

    @Test
    void shouldAnswerCapacityExceededOnAFullTmpfsAndKeepServing() throws Exception {
        Path mount = Files.createDirectory(dir.resolve("small-tmpfs"));
        Path image = mount.resolve("thin.img");
        int port = freePort();
        Path config = writeConfig(port,
            "{\"nsid\": 1, \"device\": {\"path\": " + json(image) + ", \"size\": \"16M\"}}, "
                + "{\"nsid\": 2, \"device\": {\"backend\": \"ram\", \"size\": \"16M\", \"block_size\": 4096}}");
        String script = "mount -t tmpfs -o size=1m nvmeof4j-enospc " + mount + " && exec " + DaemonProcess.launcher()
            + " --config " + config;
        try (DaemonProcess daemon = DaemonProcess.start(
                List.of("unshare", "--mount", "--propagation", "private", "sh", "-c", script),
                dir.resolve("daemon.log"), port);
             Session s = new Session(port)) {
            byte[] small = Bytes.random(41, 65536);
            assertThat(s.io.write(1, 0, small.length / s.bs, small, false).status()).isEqualTo(NvmeStatus.SUCCESS);
            byte[] big = Bytes.random(42, 2 << 20);
            // 2 MiB does not fit in what is left of the 1 MiB tmpfs (sent in 128 KiB commands).
            int firstFailure = -1;
            for (int i = 0; i < 16 && firstFailure < 0; i++) {
                byte[] chunk = java.util.Arrays.copyOfRange(big, i * 131072, (i + 1) * 131072);
                Completion c = s.io.write(1, (1L << 20) / s.bs + (long) i * 131072 / s.bs, 131072 / s.bs, chunk, false);
                if (c.status() != NvmeStatus.SUCCESS) {
                    firstFailure = c.status();
                }
            }
            assertThat(firstFailure).as("the write that did not fit")
                .isEqualTo(NvmeStatus.CAPACITY_EXCEEDED | NvmeStatus.DNR);

            Completion back = s.io.read(1, 0, small.length / s.bs, s.bs);
            assertThat(back.status()).isEqualTo(NvmeStatus.SUCCESS);
            assertThat(back.data()).as("earlier data of the full namespace").isEqualTo(small);
            byte[] other = Bytes.random(43, 65536);
            assertThat(s.io.write(2, 16, other.length / 4096, other, true).status()).isEqualTo(NvmeStatus.SUCCESS);
            assertThat(s.io.read(2, 16, other.length / 4096, 4096).data()).as("the other namespace").isEqualTo(other);
        }
    }

    /** An admin and an I/O queue to subsystem {@link #NQN}. */
    static final class Session implements AutoCloseable {
        final RawNvmeTcpHost admin;
        final RawNvmeTcpHost io;
        final int bs;

        Session(int port) throws IOException {
            InetSocketAddress address = new InetSocketAddress("127.0.0.1", port);
            admin = Sessions.enabledAdmin(address, NQN, HOST, Sessions.KATO_MS);
            Sessions.requestIoQueues(admin, 1);
            bs = Sessions.blockSize(admin, 1);
            io = Sessions.ioQueue(address, NQN, HOST, 1, admin.cntlid());
        }

        @Override
        public void close() throws IOException {
            try {
                io.close();
            } finally {
                admin.close();
            }
        }
    }

    private Path writeConfig(int port, String namespaces) throws IOException {
        String text = """
            {
              "ports": [{"portid": 1, "addr": {"trtype": "tcp", "adrfam": "ipv4", "traddr": "127.0.0.1",
                         "trsvcid": "%d"}, "subsystems": ["%s"]}],
              "subsystems": [{"nqn": "%s", "attr": {"allow_any_host": "1"}, "allowed_hosts": [],
                              "namespaces": [%s]}],
              "nvmeof4j": {"reactors": 1, "buffer_pool_mib": 16}
            }
            """.formatted(port, NQN, NQN, namespaces);
        Path config = dir.resolve("target-" + port + ".json");
        Files.writeString(config, text, StandardCharsets.UTF_8);
        return config;
    }

    private static String json(Path p) throws IOException {
        return new ObjectMapper().writeValueAsString(p.toAbsolutePath().toString());
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    private static byte[] fileBytes(Path file, long offset, int length) throws IOException {
        byte[] b = new byte[length];
        try (RandomAccessFile f = new RandomAccessFile(file.toFile(), "r")) {
            f.seek(offset);
            f.readFully(b);
        }
        return b;
    }
}
