package io.nvmeof4j.it.metrics;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.nvmeof4j.initiator.ConnectOptions;
import io.nvmeof4j.initiator.HostIdentity;
import io.nvmeof4j.initiator.NvmeofController;
import io.nvmeof4j.initiator.NvmeofHost;
import io.nvmeof4j.initiator.NvmeofNamespace;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The management API's limits against a running daemon, with our initiator connected and doing I/O throughout:
 * RAM namespaces beyond the RAM budget (alone, or on top of the others), NSIDs outside 1..NN, unknown fields and
 * malformed NQNs, and file namespaces outside {@code allowed_paths} (secret files, symlinks and hard links out,
 * {@code ..}, NUL bytes, FIFOs, a size that would create or extend a file outside). Every refusal is a 4xx with a
 * message, the files are untouched (existence, size, mtime, content) and the host sees no new namespace; the daemon
 * keeps serving.
 */
class ManagementLimitsIT {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String NS = "/api/v1/subsystems/" + MetricsTarget.OPEN + "/namespaces";
    private static final long MIB = 1L << 20;

    @TempDir
    Path dir;

    @Test
    void shouldRefuseRamBeyondTheBudgetAndKeepServing() throws Exception {
        // The configured RAM namespaces (16 + 8 + 8 MiB) reserve 32 of the 64 MiB.
        try (MetricsTarget target = MetricsTarget.start(dir, "\"ram_budget_mib\": 64");
             NvmeofHost host = NvmeofHost.create(HostIdentity.generate(), 1);
             NvmeofController ctrl = host.connect(target.ioAddress(), MetricsTarget.OPEN,
                 ConnectOptions.defaults().withIoQueues(1))) {
            ByteBuffer data = pattern(4096, 7);
            ctrl.namespace(1).write(3, data.duplicate()).get(10, TimeUnit.SECONDS);

            assertError(target.http.post(NS, ram(3, "64T")), 400, "more than the daemon may use for RAM namespaces");
            assertError(target.http.post(NS, ram(3, "1T")), 400, "RAM budget of 64 MiB (nvmeof4j.ram_budget_mib)");
            assertError(target.http.post(NS, ram(3, "65M")), 400, "more than the daemon may use");
            assertThat(nsids(target)).containsExactly(1, 2);

            json(target.http.post(NS, ram(3, "16M")), 201);
            json(target.http.post(NS, ram(4, "16M")), 201);
            assertError(target.http.post(NS, ram(5, "1M")), 409,
                "1 MiB of RAM does not fit: RAM namespaces hold 64 MiB of the RAM budget of 64 MiB");
            assertThat(nsids(target)).containsExactly(1, 2, 3, 4);
            PrometheusText full = new PrometheusText(target.http.get("/metrics").body());
            assertThat(full.value("nvmeof_target_ram_reserved_bytes", Map.of())).isEqualTo(64 * MIB);
            assertThat(full.value("nvmeof_target_ram_budget_bytes", Map.of())).isEqualTo(64 * MIB);

            // Removing one gives its share back.
            json(target.http.delete(NS + "/3"), 200);
            json(target.http.post(NS, ram(5, "16M")), 201);
            assertThat(nsids(target)).containsExactly(1, 2, 4, 5);

            // The host's data and I/O were never disturbed, and the new namespace serves.
            assertThat(ctrl.namespace(1).read(3, 1).get(10, TimeUnit.SECONDS)).isEqualTo(data);
            NvmeofNamespace ns5 = awaitNamespace(ctrl, 5);
            ns5.write(0, pattern(ns5.blockSize(), 9)).get(10, TimeUnit.SECONDS);
            assertThat(ns5.read(0, 1).get(10, TimeUnit.SECONDS)).isEqualTo(pattern(ns5.blockSize(), 9));
        }
    }

    @Test
    void shouldRefuseMoreRamThanThisJvmMayUseByDefault() throws Exception {
        long machine = ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean())
            .getTotalMemorySize();
        assertThat(machine).as("this test asks for 1 TiB on a machine with less").isLessThan(1L << 40);
        try (MetricsTarget target = MetricsTarget.start(dir, "");
             NvmeofHost host = NvmeofHost.create(HostIdentity.generate(), 1);
             NvmeofController ctrl = host.connect(target.ioAddress(), MetricsTarget.OPEN,
                 ConnectOptions.defaults().withIoQueues(1))) {
            // 64 TiB is the request that made the daemon exit (its chunk table alone was 256 MiB of a 256 MiB heap).
            assertError(target.http.post(NS, ram(3, "64T")), 400, "more than the daemon may use for RAM namespaces");
            assertError(target.http.post(NS, ram(3, "1T")), 400, "more than the daemon may use for RAM namespaces");
            assertError(target.http.post(NS, ram(3, "16E")), 400, "namespace.device.size");
            assertError(target.http.post(NS, "{\"nsid\": 3, \"device\": {\"backend\": \"ram\", \"size\": "
                + "9223372036854775807}}"), 400, "namespace.device.size");
            assertThat(nsids(target)).containsExactly(1, 2);
            assertThat(target.http.get("/metrics").status()).isEqualTo(200);
            ByteBuffer data = pattern(4096, 3);
            ctrl.namespace(1).write(0, data.duplicate()).get(10, TimeUnit.SECONDS);
            assertThat(ctrl.namespace(1).read(0, 1).get(10, TimeUnit.SECONDS)).isEqualTo(data);

            // Without allowed_paths no file namespace can be added, and the answer says which setting enables them.
            Path file = dir.resolve("ns.img");
            assertError(target.http.post(NS, file(3, file, "1M")), 403, "nvmeof4j.allowed_paths lists no");
            assertThat(Files.exists(file)).isFalse();
        }
    }

    @Test
    void shouldRefuseNsidsOutsideOneToNnAndUnknownFields() throws Exception {
        try (MetricsTarget target = MetricsTarget.start(dir, "")) {
            for (String nsid : new String[] {"0", "1025", "4294967295", "4294967294", "-1", "99999999999999999999",
                "\"0x401\"", "1.5"}) {
                assertError(target.http.post(NS, "{\"nsid\": " + nsid + ", \"device\": {\"backend\": \"ram\", "
                    + "\"size\": \"1M\"}}"), 400, "namespace.nsid");
            }
            json(target.http.post(NS, ram(1024, "1M")), 201);
            assertError(target.http.get(NS + "/1025"), 400, "outside 1..1024");
            assertError(target.http.delete(NS + "/0"), 400, "outside 1..1024");
            assertError(target.http.delete(NS + "/4294967295"), 400, "outside 1..1024");
            assertError(target.http.post(NS, "{\"nsid\": 3, \"size\": \"1M\", \"device\": {\"backend\": \"ram\", "
                + "\"size\": \"1M\"}}"), 400, "namespace.size: unknown field");
            assertError(target.http.post(NS, "{\"nsid\": 3, \"device\": {\"backend\": \"ram\", \"size\": \"1M\", "
                + "\"block_sise\": 4096}}"), 400, "namespace.device.block_sise: unknown field");
            assertError(target.http.post(NS, "{\"nsid\": 3, \"device\": {\"backend\": \"ram\", \"size\": \"1M\", "
                + "\"block_size\": 1000}}"), 400, "namespace.device.block_size");
            String hosts = "/api/v1/subsystems/" + MetricsTarget.CLOSED + "/hosts";
            for (String nqn : new String[] {"nqn.2014-08.io.x:a\\u0000b", "nqn.2014-08.io.x:a/../b",
                "nqn.2014-08.io.x:a\\nb", "nqn.2014-08.io.x:" + "y".repeat(210), "nqn.x"}) {
                assertError(target.http.post(hosts, "{\"nqn\": \"" + nqn + "\"}"), 400, "host.nqn");
            }
            assertThat(JSON.readTree(target.http.get(hosts).body()).get("allowed_hosts")).hasSize(1);
            assertThat(nsids(target)).containsExactly(1, 2, 1024);
        }
    }

    @Test
    void shouldConfineFileNamespacesToAllowedPaths() throws Exception {
        Path allowed = Files.createDirectories(dir.resolve("allowed"));
        Path outside = Files.createDirectories(dir.resolve("outside"));
        Path secret = Files.write(outside.resolve("secret.img"), bytes(1 << 20, 5));
        Files.setPosixFilePermissions(secret, PosixFilePermissions.fromString("rw-------"));
        Path small = Files.write(outside.resolve("small.img"), bytes(4096, 6));
        Path rootDir = Files.createDirectories(Path.of("/root", "nvmeof4j-limits-" + UUID.randomUUID()));
        Path rootSecret = Files.write(rootDir.resolve("secret.img"), bytes(64 * 1024, 8));
        Files.setPosixFilePermissions(rootSecret, PosixFilePermissions.fromString("rw-------"));
        try {
            Files.createSymbolicLink(allowed.resolve("link.img"), secret);
            Files.createSymbolicLink(allowed.resolve("grow.img"), small);
            Files.createSymbolicLink(allowed.resolve("out"), outside);
            Files.createLink(allowed.resolve("hard.img"), secret);
            Path fifo = allowed.resolve("fifo");
            Process mkfifo = new ProcessBuilder("mkfifo", fifo.toString()).inheritIO().start();
            assertThat(mkfifo.waitFor(10, TimeUnit.SECONDS)).isTrue();
            assertThat(mkfifo.exitValue()).isZero();
            List<Watched> watched = new ArrayList<>();
            for (Path p : List.of(Path.of("/etc/shadow"), secret, small, rootSecret, fifo)) {
                watched.add(Watched.of(p));
            }

            try (MetricsTarget target = MetricsTarget.start(dir, "\"allowed_paths\": ["
                    + JSON.writeValueAsString(allowed.toString()) + "]");
                 NvmeofHost host = NvmeofHost.create(HostIdentity.generate(), 1);
                 NvmeofController ctrl = host.connect(target.ioAddress(), MetricsTarget.OPEN,
                     ConnectOptions.defaults().withIoQueues(1))) {
                assertError(target.http.post(NS, file(3, Path.of("/etc/shadow"), null)), 403, "is not inside");
                assertError(target.http.post(NS, file(3, Path.of("/etc/shadow"), "1M")), 403, "is not inside");
                assertError(target.http.post(NS, file(3, rootSecret, null)), 403, "is not inside");
                assertError(target.http.post(NS, file(3, secret, null)), 403, "is not inside");
                assertError(target.http.post(NS, file(3, allowed.resolve("link.img"), null)), 403, "is not inside");
                assertError(target.http.post(NS, file(3, allowed.resolve("out/secret.img"), null)), 403,
                    "is not inside");
                assertError(target.http.post(NS, file(3, allowed.resolve("hard.img"), null)), 403, "hard links");
                assertError(target.http.post(NS, file(3, fifo, "1M")), 403, "is a FIFO");
                assertError(target.http.post(NS, file(3, Path.of("/proc/self/mem"), null)), 403, "is not inside");
                assertError(target.http.post(NS, file(3, Path.of("/dev/vda"), null)), 403, "is not inside");
                // A size that would extend or create a file outside: through a symlink, a symlinked directory, '..'.
                assertError(target.http.post(NS, file(3, allowed.resolve("grow.img"), "1M")), 403, "is not inside");
                assertError(target.http.post(NS, file(3, allowed.resolve("out/new.img"), "1M")), 403,
                    "is not inside");
                assertError(target.http.post(NS, file(3, outside.resolve("new.img"), "1M")), 403, "is not inside");
                assertError(target.http.post(NS, "{\"nsid\": 3, \"device\": {\"path\": "
                    + JSON.writeValueAsString(allowed + "/../outside/secret.img") + "}}"), 400, "'..' component");
                assertError(target.http.post(NS, "{\"nsid\": 3, \"device\": {\"path\": "
                    + JSON.writeValueAsString(allowed + "/../outside/new.img") + ", \"size\": \"1M\"}}"), 400,
                    "'..' component");
                assertError(target.http.post(NS, "{\"nsid\": 3, \"device\": {\"path\": \"" + allowed
                    + "/x.img\\u0000/etc/shadow\", \"size\": \"1M\"}}"), 400, "control character U+0000");
                assertError(target.http.post(NS, "{\"nsid\": 3, \"device\": {\"path\": \"../outside/secret.img\"}}"),
                    400, "'..' component");

                for (Watched w : watched) {
                    w.assertUnchanged();
                }
                assertThat(Files.exists(outside.resolve("new.img"), LinkOption.NOFOLLOW_LINKS)).isFalse();
                assertThat(Files.exists(allowed.resolve("x.img"), LinkOption.NOFOLLOW_LINKS)).isFalse();
                assertThat(nsids(target)).containsExactly(1, 2);
                assertThat(ctrl.rescanNamespaces()).extracting(NvmeofNamespace::nsid).containsExactly(1, 2);

                // An allowed file (created by the request's size) works, and the host reads and writes it.
                Path image = allowed.resolve("images").resolve("ns3.img");
                Files.createDirectories(image.getParent());
                json(target.http.post(NS, file(3, image, "4M")), 201);
                assertThat(Files.size(image)).isEqualTo(4 * MIB);
                NvmeofNamespace ns3 = awaitNamespace(ctrl, 3);
                int bs = ns3.blockSize();
                ByteBuffer data = pattern(bs * 2, 11);
                ns3.write(10, data.duplicate()).get(10, TimeUnit.SECONDS);
                assertThat(ns3.read(10, 2).get(10, TimeUnit.SECONDS)).isEqualTo(data);
                assertThat(ByteBuffer.wrap(fileBytes(image, 10L * bs, bs * 2))).isEqualTo(data);
                // An existing allowed file reached through a symlink that stays inside works too.
                Path existing = Files.write(allowed.resolve("existing.img"), bytes(2 << 20, 12));
                Files.createSymbolicLink(allowed.resolve("alias.img"), existing);
                json(target.http.post(NS, file(4, allowed.resolve("alias.img"), null)), 201);
                NvmeofNamespace ns4 = awaitNamespace(ctrl, 4);
                assertThat(ns4.read(0, 1).get(10, TimeUnit.SECONDS))
                    .isEqualTo(ByteBuffer.wrap(bytes(2 << 20, 12), 0, ns4.blockSize()));
                assertThat(nsids(target)).containsExactly(1, 2, 3, 4);
                for (Watched w : watched) {
                    w.assertUnchanged();
                }
            }
        } finally {
            Files.deleteIfExists(rootSecret);
            Files.deleteIfExists(rootDir);
        }
    }

    /** A file's existence, size, mtime and content, to show a refused request left it alone. */
    private record Watched(Path path, boolean exists, long size, FileTime mtime, String digest) {
        static Watched of(Path p) throws Exception {
            boolean exists = Files.exists(p, LinkOption.NOFOLLOW_LINKS);
            return new Watched(p, exists, exists ? Files.size(p) : -1,
                exists ? Files.getLastModifiedTime(p, LinkOption.NOFOLLOW_LINKS) : null, digest(p));
        }

        void assertUnchanged() throws Exception {
            assertThat(of(path)).as("%s after the refused requests", path).isEqualTo(this);
        }

        private static String digest(Path p) throws Exception {
            if (!Files.isRegularFile(p, LinkOption.NOFOLLOW_LINKS)) {
                return "";
            }
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(Files.readAllBytes(p)));
        }
    }

    private static NvmeofNamespace awaitNamespace(NvmeofController ctrl, int nsid) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (System.nanoTime() - deadline < 0) {
            NvmeofNamespace ns = ctrl.namespace(nsid);
            if (ns != null) {
                return ns;
            }
            Thread.sleep(50);
        }
        throw new AssertionError("the host did not see namespace " + nsid + " within 10 s");
    }

    private static String ram(int nsid, String size) {
        return "{\"nsid\": " + nsid + ", \"device\": {\"backend\": \"ram\", \"size\": \"" + size + "\"}}";
    }

    private static String file(int nsid, Path path, String size) throws IOException {
        return "{\"nsid\": " + nsid + ", \"device\": {\"path\": " + JSON.writeValueAsString(path.toString())
            + (size == null ? "" : ", \"size\": \"" + size + "\"") + "}}";
    }

    private static byte[] bytes(int length, int seed) {
        byte[] b = new byte[length];
        for (int i = 0; i < length; i++) {
            b[i] = (byte) (i * 31 + seed * 17 + (i >> 9));
        }
        return b;
    }

    /** {@link #bytes} in a direct buffer (what the initiator sends from). */
    private static ByteBuffer pattern(int length, int seed) {
        return ByteBuffer.allocateDirect(length).put(bytes(length, seed)).flip();
    }

    private static byte[] fileBytes(Path file, long offset, int length) throws IOException {
        byte[] b = new byte[length];
        try (RandomAccessFile f = new RandomAccessFile(file.toFile(), "r")) {
            f.seek(offset);
            f.readFully(b);
        }
        return b;
    }

    private static List<Integer> nsids(MetricsTarget target) throws Exception {
        List<Integer> list = new ArrayList<>();
        json(target.http.get(NS), 200).forEach(n -> list.add(n.get("nsid").asInt()));
        return list;
    }

    private static JsonNode json(Http.Response r, int expectedStatus) throws Exception {
        assertThat(r.status()).as("HTTP status; body: %s", r.body()).isEqualTo(expectedStatus);
        return JSON.readTree(r.body());
    }

    private static void assertError(Http.Response r, int status, String messagePart) throws Exception {
        assertThat(r.status()).as("HTTP status; body: %s", r.body()).isEqualTo(status);
        assertThat(JSON.readTree(r.body()).get("error").asText()).contains(messagePart);
    }
}
