package io.nvmeof4j.it.tcp;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.nvmeof4j.protocol.command.NvmeStatus;
import io.nvmeof4j.protocol.reservation.ReservationCommand;
import io.nvmeof4j.protocol.reservation.ReservationType;
import io.nvmeof4j.target.config.TargetConfig;
import io.nvmeof4j.target.daemon.TargetDaemon;
import io.nvmeof4j.target.model.Port;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * High availability end to end, over NVMe/TCP on 127.0.0.1: two daemons serving one subsystem from one shared file
 * (disjoint CNTLIDs, the same namespace identity, each seeing the other's writes), reservations between two hosts
 * that survive a daemon restart, and an ANA state changed through the authenticated management API.
 */
class HighAvailabilityIT {
    private static final String NQN = "nqn.2014-08.io.nvmeof4j:ha";
    private static final HostIdentity HOST_1 = HostIdentity.ofUuid(UUID.fromString("aaaaaaaa-1111-4111-8111-000000000001"));
    private static final HostIdentity HOST_2 = HostIdentity.ofUuid(UUID.fromString("bbbbbbbb-2222-4222-8222-000000000002"));
    private static final long KEY_1 = 0x1111L;
    private static final long KEY_2 = 0x2222L;
    private static final int CONFLICT = NvmeStatus.RESERVATION_CONFLICT | NvmeStatus.DNR;

    @TempDir
    Path dir;

    @Test
    void shouldServeOneSharedFileFromTwoDaemonsAsOneSubsystem() throws Exception {
        Path image = image(dir.resolve("shared.img"));
        Path configA = config(dir.resolve("a"), image, true, 1, 99, "optimized");
        Path configB = config(dir.resolve("b"), image, true, 100, 199, "non-optimized");
        try (TargetDaemon a = TargetDaemon.start(TargetConfig.load(configA));
             TargetDaemon b = TargetDaemon.start(TargetConfig.load(configB));
             RawNvmeTcpHost adminA = Sessions.enabledAdmin(ioPort(a), NQN, HOST_1, Sessions.KATO_MS);
             RawNvmeTcpHost adminB = Sessions.enabledAdmin(ioPort(b), NQN, HOST_1, Sessions.KATO_MS)) {
            assertThat(adminA.cntlid()).as("daemon A's CNTLID").isBetween(1, 99);
            assertThat(adminB.cntlid()).as("daemon B's CNTLID").isBetween(100, 199);
            // One namespace identity on both paths: the host joins them into one multipath namespace.
            byte[] nsA = adminA.identify(0, 1).data();
            byte[] nsB = adminB.identify(0, 1).data();
            assertThat(Arrays.copyOfRange(nsA, 104, 120)).as("NGUID").isEqualTo(Arrays.copyOfRange(nsB, 104, 120));
            assertThat(adminA.identify(3, 1).data()).as("descriptor list (UUID, NGUID, CSI)")
                .isEqualTo(adminB.identify(3, 1).data());
            assertThat(nsA[30] & 1).as("NMIC shared").isEqualTo(1);
            byte[] ctrlA = adminA.identify(1, 0).data();
            assertThat(ctrlA[76] & 0x0B).as("CMIC multi-port, multi-controller, ANA").isEqualTo(0x0B);
            assertThat(Arrays.copyOfRange(ctrlA, 768, 1024)).as("SUBNQN")
                .isEqualTo(Arrays.copyOfRange(adminB.identify(1, 0).data(), 768, 1024));
            // Each daemon reports its own port's ANA state for group 1.
            assertThat(adminA.getLogPage(0x0C, 0, 4096).data()[32] & 0xF).isEqualTo(1);
            assertThat(adminB.getLogPage(0x0C, 0, 4096).data()[32] & 0xF).isEqualTo(2);

            Sessions.requestIoQueues(adminA, 1);
            Sessions.requestIoQueues(adminB, 1);
            int bs = Sessions.blockSize(adminA, 1);
            try (RawNvmeTcpHost ioA = Sessions.ioQueue(ioPort(a), NQN, HOST_1, 1, adminA.cntlid());
                 RawNvmeTcpHost ioB = Sessions.ioQueue(ioPort(b), NQN, HOST_1, 1, adminB.cntlid())) {
                byte[] data = Bytes.random(77, 8192);
                assertThat(ioA.write(1, 100, data.length / bs, data, true).status()).isEqualTo(NvmeStatus.SUCCESS);
                assertThat(ioB.read(1, 100, data.length / bs, bs).data()).as("B reads A's FUA write").isEqualTo(data);
                byte[] other = Bytes.random(78, 4096);
                assertThat(ioB.write(1, 300, other.length / bs, other, true).status()).isEqualTo(NvmeStatus.SUCCESS);
                assertThat(ioA.read(1, 300, other.length / bs, bs).data()).as("A reads B's FUA write").isEqualTo(other);
            }
            // A third daemon opening the file exclusively is refused while the shared ones hold it.
            Path exclusive = config(dir.resolve("c"), image, false, 200, 299, "optimized");
            assertThatThrownBy(() -> TargetDaemon.start(TargetConfig.load(exclusive)).close())
                .isInstanceOf(IOException.class).hasMessageContaining("shared.img");
        }
    }

    @Test
    void shouldEnforceReservationsBetweenTwoHostsAcrossARestart() throws Exception {
        Path image = image(dir.resolve("resv.img"));
        Path config = config(dir.resolve("r"), image, false, 1, 0xFFEF, "optimized");
        byte[] block;
        try (TargetDaemon daemon = TargetDaemon.start(TargetConfig.load(config));
             Pair one = new Pair(daemon, HOST_1);
             Pair two = new Pair(daemon, HOST_2)) {
            block = new byte[one.bs];
            // Host 1 registers with PTPL set (CPTPL 11b) and takes Write Exclusive; host 2 registers too.
            assertThat(one.register(ReservationCommand.REGISTER, ReservationCommand.CPTPL_SET, 0, KEY_1))
                .isEqualTo(NvmeStatus.SUCCESS);
            assertThat(two.register(ReservationCommand.REGISTER, 0, 0, KEY_2)).isEqualTo(NvmeStatus.SUCCESS);
            assertThat(one.acquire(ReservationCommand.ACQUIRE, ReservationType.WRITE_EXCLUSIVE, KEY_1, 0))
                .isEqualTo(NvmeStatus.SUCCESS);
            assertThat(one.io.write(1, 0, 1, block, false).status()).isEqualTo(NvmeStatus.SUCCESS);
            Completion denied = two.io.write(1, 0, 1, block, false);
            assertThat(denied.status()).as("non-holder write %s", denied).isEqualTo(CONFLICT);
            assertThat(two.io.read(1, 0, 1, two.bs).status()).as("reads stay open under Write Exclusive")
                .isEqualTo(NvmeStatus.SUCCESS);
            assertThat(two.acquire(ReservationCommand.ACQUIRE, ReservationType.WRITE_EXCLUSIVE, KEY_2, 0))
                .isEqualTo(CONFLICT);
        }
        assertThat(config.resolveSibling(config.getFileName() + ".reservations")).isDirectory();

        try (TargetDaemon daemon = TargetDaemon.start(TargetConfig.load(config));
             Pair one = new Pair(daemon, HOST_1);
             Pair two = new Pair(daemon, HOST_2)) {
            assertThat(two.io.write(1, 0, 1, block, false).status()).as("still fenced after the restart")
                .isEqualTo(CONFLICT);
            assertThat(one.io.write(1, 0, 1, block, false).status()).isEqualTo(NvmeStatus.SUCCESS);
            Completion report = two.io.execute(RawNvmeTcpHost.Command.of(ReservationCommand.OPC_REPORT).nsid(1)
                .cdw(10, 4096 / 4 - 1).cdw(11, ReservationCommand.REPORT_EDS).dataIn(4096));
            assertThat(report.status()).isEqualTo(NvmeStatus.SUCCESS);
            ByteBuffer r = ByteBuffer.wrap(report.data()).order(ByteOrder.LITTLE_ENDIAN);
            assertThat(r.get(4)).as("RTYPE").isEqualTo((byte) ReservationType.WRITE_EXCLUSIVE);
            assertThat(r.getShort(5)).as("REGCTL").isEqualTo((short) 2);
            assertThat(r.get(9)).as("PTPLS").isEqualTo((byte) 1);
            assertThat(r.get(64 + 2) & 1).as("host 1 holds").isEqualTo(1);
            assertThat(r.getLong(64 + 8)).isEqualTo(KEY_1);
            assertThat(one.release(ReservationCommand.RELEASE, ReservationType.WRITE_EXCLUSIVE, KEY_1))
                .isEqualTo(NvmeStatus.SUCCESS);
            assertThat(two.io.write(1, 0, 1, block, false).status()).as("released").isEqualTo(NvmeStatus.SUCCESS);
        }
    }

    @Test
    void shouldApplyEveryReservationTypeToHolderRegistrantAndStrangerOverTcp() throws Exception {
        Path image = image(dir.resolve("types.img"));
        Path config = config(dir.resolve("t"), image, false, 1, 0xFFEF, "optimized");
        HostIdentity stranger = HostIdentity.ofUuid(UUID.fromString("cccccccc-3333-4333-8333-000000000003"));
        try (TargetDaemon daemon = TargetDaemon.start(TargetConfig.load(config));
             Pair holder = new Pair(daemon, HOST_1);
             Pair registrant = new Pair(daemon, HOST_2);
             Pair other = new Pair(daemon, stranger)) {
            byte[] block = new byte[holder.bs];
            for (int type = 1; type <= 6; type++) {
                String t = ReservationType.name(type);
                assertThat(holder.register(ReservationCommand.REGISTER, 0, 0, KEY_1)).isEqualTo(NvmeStatus.SUCCESS);
                assertThat(registrant.register(ReservationCommand.REGISTER, 0, 0, KEY_2)).isEqualTo(NvmeStatus.SUCCESS);
                assertThat(holder.acquire(ReservationCommand.ACQUIRE, type, KEY_1, 0)).as(t).isEqualTo(NvmeStatus.SUCCESS);
                boolean registrants = ReservationType.isRegistrantsType(type);
                boolean exclusiveAccess = ReservationType.isExclusiveAccess(type);
                assertThat(holder.io.write(1, 8, 1, block, false).status()).as(t + " holder write")
                    .isEqualTo(NvmeStatus.SUCCESS);
                assertThat(registrant.io.write(1, 8, 1, block, false).status()).as(t + " registrant write")
                    .isEqualTo(registrants ? NvmeStatus.SUCCESS : CONFLICT);
                assertThat(registrant.io.read(1, 8, 1, registrant.bs).status()).as(t + " registrant read")
                    .isEqualTo(registrants || !exclusiveAccess ? NvmeStatus.SUCCESS : CONFLICT);
                assertThat(other.io.write(1, 8, 1, block, false).status()).as(t + " stranger write").isEqualTo(CONFLICT);
                assertThat(other.io.read(1, 8, 1, other.bs).status()).as(t + " stranger read")
                    .isEqualTo(exclusiveAccess ? CONFLICT : NvmeStatus.SUCCESS);
                assertThat(other.io.flush(1).status()).as(t + " stranger flush").isEqualTo(CONFLICT);
                assertThat(holder.release(ReservationCommand.CLEAR, 0, KEY_1)).isEqualTo(NvmeStatus.SUCCESS);
                assertThat(other.io.write(1, 8, 1, block, false).status()).as(t + " cleared").isEqualTo(NvmeStatus.SUCCESS);
            }
        }
    }

    @Test
    void shouldChangeAnaStateLiveThroughTheManagementApi() throws Exception {
        Path image = image(dir.resolve("ana.img"));
        Path config = config(dir.resolve("m"), image, false, 1, 0xFFEF, "optimized");
        try (TargetDaemon daemon = TargetDaemon.start(TargetConfig.load(config));
             Pair host = new Pair(daemon, HOST_1)) {
            int aer = host.admin.submitAsyncEventRequest();
            String token = Files.readString(daemon.apiTokenFile()).strip();
            HttpResponse<String> put = put(daemon, token, "/api/v1/ports/1/ana_groups/1", "{\"state\": \"inaccessible\"}");
            assertThat(put.statusCode()).as(put.body()).isEqualTo(200);
            JsonNode answer = new ObjectMapper().readTree(put.body());
            assertThat(answer.path("previous_state").asText()).isEqualTo("optimized");
            Completion event = host.admin.await(aer);
            assertThat(event.dw0()).as("ANA change event").isEqualTo(0x0C0302);
            Completion w = host.io.write(1, 0, 1, new byte[host.bs], false);
            assertThat(w.status()).as("I/O on an inaccessible path %s", w).isEqualTo(NvmeStatus.ANA_INACCESSIBLE);
            assertThat(w.dnr()).isFalse();
            assertThat(host.admin.getLogPage(0x0C, 0, 4096).data()[32] & 0xF).isEqualTo(3);

            assertThat(put(daemon, token, "/api/v1/ports/1/ana_groups/1", "{\"state\": \"sideways\"}").statusCode())
                .isEqualTo(400);
            assertThat(put(daemon, token, "/api/v1/ports/9/ana_groups/1", "{\"state\": \"optimized\"}").statusCode())
                .isEqualTo(404);
            HttpResponse<String> notJson = send(daemon, token, HttpRequest.newBuilder(uri(daemon,
                "/api/v1/ports/1/ana_groups/1")).header("Content-Type", "text/plain")
                .PUT(HttpRequest.BodyPublishers.ofString("{\"state\": \"inaccessible\"}")));
            assertThat(notJson.statusCode()).as("a PUT body is read only as JSON: %s", notJson.body()).isEqualTo(400);
            assertThat(put(daemon, "wrong-token", "/api/v1/ports/1/ana_groups/1", "{\"state\": \"optimized\"}")
                .statusCode()).isEqualTo(401);
            assertThat(put(daemon, token, "/api/v1/ports/1/ana_groups/1", "{\"state\": \"optimized\"}").statusCode())
                .isEqualTo(200);
            assertThat(host.io.write(1, 0, 1, new byte[host.bs], false).status()).isEqualTo(NvmeStatus.SUCCESS);
            HttpResponse<String> ports = send(daemon, token, HttpRequest.newBuilder(uri(daemon, "/api/v1/ports")).GET());
            assertThat(new ObjectMapper().readTree(ports.body()).get(0).path("ana_groups").get(0).path("ana")
                .path("state").asText()).isEqualTo("optimized");
        }
    }

    /** One host's admin and I/O queue on a daemon's port 1. */
    private static final class Pair implements AutoCloseable {
        final RawNvmeTcpHost admin;
        final RawNvmeTcpHost io;
        final int bs;

        Pair(TargetDaemon daemon, HostIdentity host) throws IOException {
            admin = Sessions.enabledAdmin(ioPort(daemon), NQN, host, Sessions.KATO_MS);
            Sessions.requestIoQueues(admin, 1);
            bs = Sessions.blockSize(admin, 1);
            io = Sessions.ioQueue(ioPort(daemon), NQN, host, 1, admin.cntlid());
        }

        int register(int action, int cptpl, long crkey, long nrkey) throws IOException {
            return keys(ReservationCommand.OPC_REGISTER, ReservationCommand.cdw10(action, false, 0, cptpl), crkey, nrkey);
        }

        int acquire(int action, int type, long crkey, long prkey) throws IOException {
            return keys(ReservationCommand.OPC_ACQUIRE, ReservationCommand.cdw10(action, false, type, 0), crkey, prkey);
        }

        int release(int action, int type, long crkey) throws IOException {
            byte[] data = new byte[8];
            ByteBuffer.wrap(data).order(ByteOrder.LITTLE_ENDIAN).putLong(0, crkey);
            return io.execute(RawNvmeTcpHost.Command.of(ReservationCommand.OPC_RELEASE).nsid(1)
                .cdw(10, ReservationCommand.cdw10(action, false, type, 0)).dataOut(data)).status();
        }

        private int keys(int opcode, int cdw10, long k1, long k2) throws IOException {
            byte[] data = new byte[16];
            ByteBuffer.wrap(data).order(ByteOrder.LITTLE_ENDIAN).putLong(0, k1).putLong(8, k2);
            return io.execute(RawNvmeTcpHost.Command.of(opcode).nsid(1).cdw(10, cdw10).dataOut(data)).status();
        }

        @Override
        public void close() {
            io.close();
            admin.close();
        }
    }

    private static Path image(Path file) throws IOException {
        try (RandomAccessFile f = new RandomAccessFile(file.toFile(), "rw")) {
            f.setLength(16L << 20);
        }
        return file;
    }

    /** A configuration in its own directory: one TCP port with an HTTP API, subsystem {@link #NQN} on {@code image}. */
    private static Path config(Path directory, Path image, boolean shared, int cntlidMin, int cntlidMax,
                               String anaState) throws IOException {
        Files.createDirectories(directory);
        String json = """
            {
              "nvmeof4j": {"http": "127.0.0.1:0", "reactors": 1},
              "ports": [
                {"portid": 1, "addr": {"trtype": "tcp", "adrfam": "ipv4", "traddr": "127.0.0.1", "trsvcid": "0"},
                 "param": {"inline_data_size": "16384"},
                 "ana_groups": [{"grpid": 1, "ana": {"state": "%5$s"}}],
                 "subsystems": ["%1$s"]}
              ],
              "subsystems": [
                {"nqn": "%1$s", "attr": {"allow_any_host": "1", "cntlid_min": %3$d, "cntlid_max": %4$d},
                 "namespaces": [{"nsid": 1, "ana_grpid": 1, "device": {"path": %2$s, "shared": %6$s}}]}
              ]
            }
            """.formatted(NQN, new ObjectMapper().writeValueAsString(image.toString()), cntlidMin, cntlidMax, anaState,
            shared);
        Path file = directory.resolve("target.json");
        Files.writeString(file, json, StandardCharsets.UTF_8);
        return file;
    }

    private static InetSocketAddress ioPort(TargetDaemon daemon) {
        for (Port p : daemon.model().ports()) {
            if (p.portId() == 1) {
                return new InetSocketAddress(p.address().traddr(), p.address().port());
            }
        }
        throw new IllegalStateException("no port 1 in " + daemon.model().ports());
    }

    private static URI uri(TargetDaemon daemon, String path) {
        InetSocketAddress a = daemon.httpAddress();
        return URI.create("http://" + a.getAddress().getHostAddress() + ":" + a.getPort() + path);
    }

    private static HttpResponse<String> put(TargetDaemon daemon, String token, String path, String json)
        throws IOException, InterruptedException {
        return send(daemon, token, HttpRequest.newBuilder(uri(daemon, path)).header("Content-Type", "application/json")
            .PUT(HttpRequest.BodyPublishers.ofString(json)));
    }

    private static HttpResponse<String> send(TargetDaemon daemon, String token, HttpRequest.Builder b)
        throws IOException, InterruptedException {
        HttpClient client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();
        return client.send(b.timeout(Duration.ofSeconds(20)).header("Authorization", "Bearer " + token).build(),
            HttpResponse.BodyHandlers.ofString());
    }
}
