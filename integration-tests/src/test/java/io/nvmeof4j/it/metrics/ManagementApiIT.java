package io.nvmeof4j.it.metrics;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.nvmeof4j.protocol.spi.TransportAddress;
import io.nvmeof4j.initiator.ConnectOptions;
import io.nvmeof4j.initiator.HostIdentity;
import io.nvmeof4j.initiator.NvmeofController;
import io.nvmeof4j.initiator.NvmeofException;
import io.nvmeof4j.initiator.NvmeofHost;
import io.nvmeof4j.initiator.NvmeofIoException;
import io.nvmeof4j.initiator.NvmeofNamespace;
import io.nvmeof4j.protocol.command.NvmeStatus;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The management API against a running daemon, with our initiator connected: listing, adding and removing
 * namespaces (hosts rescan through the namespace-attribute-changed event, removal under I/O is safe), adding and
 * removing allowed hosts (the next Connect follows the list), and bad requests answered 4xx with a message and
 * nothing changed.
 */
class ManagementApiIT {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String NS = "/api/v1/subsystems/" + MetricsTarget.OPEN + "/namespaces";
    private static final String HOSTS = "/api/v1/subsystems/" + MetricsTarget.CLOSED + "/hosts";

    @TempDir
    Path dir;

    record Change(List<Integer> changed, List<Integer> nsids) {
    }

    @Test
    void shouldListTheTarget() throws Exception {
        try (MetricsTarget target = MetricsTarget.start(dir);
             NvmeofHost host = NvmeofHost.create(HostIdentity.generate(), 1);
             NvmeofController ctrl = host.connect(target.ioAddress(), MetricsTarget.OPEN,
                 ConnectOptions.defaults().withIoQueues(2))) {
            JsonNode subsystems = json(target.http.get("/api/v1/subsystems"), 200);
            assertThat(subsystems).hasSize(2);
            JsonNode open = find(subsystems, "nqn", MetricsTarget.OPEN);
            assertThat(open.get("allow_any_host").asBoolean()).isTrue();
            assertThat(open.get("controllers").asInt()).isEqualTo(1);
            assertThat(nsids(open.get("namespaces"))).containsExactly(1, 2);
            JsonNode ns1 = open.get("namespaces").get(0);
            assertThat(ns1.get("block_size").asInt()).isEqualTo(4096);
            assertThat(ns1.get("blocks").asLong()).isEqualTo(4096);
            assertThat(ns1.get("uuid").asText()).isEqualTo(ctrl.namespace(1).uuid().toString());

            JsonNode ports = json(target.http.get("/api/v1/ports"), 200);
            assertThat(ports).hasSize(1);
            assertThat(ports.get(0).get("trsvcid").asText()).isEqualTo(target.ioAddress().trsvcid());
            assertThat(ports.get(0).get("trtype").asText()).isEqualTo("tcp");

            JsonNode controllers = json(target.http.get("/api/v1/controllers"), 200);
            assertThat(controllers).hasSize(1);
            JsonNode c = controllers.get(0);
            assertThat(c.get("cntlid").asInt()).isEqualTo(ctrl.controllerId());
            assertThat(c.get("host_nqn").asText()).isEqualTo(host.identity().hostNqn().value());
            assertThat(c.get("subsystem").asText()).isEqualTo(MetricsTarget.OPEN);
            List<Integer> qids = new ArrayList<>();
            c.get("queues").forEach(q -> qids.add(q.get("qid").asInt()));
            assertThat(qids).containsExactly(0, 1, 2);
            assertThat(json(target.http.get("/api/v1/controllers/" + ctrl.controllerId()), 200).get("cntlid").asInt())
                .isEqualTo(ctrl.controllerId());

            JsonNode hosts = json(target.http.get("/api/v1/hosts"), 200);
            assertThat(find(hosts, "nqn", MetricsTarget.ALLOWED_HOST).get("allowed_on").get(0).asText())
                .isEqualTo(MetricsTarget.CLOSED);
            assertThat(find(hosts, "nqn", host.identity().hostNqn().value()).get("controllers").get(0).asInt())
                .isEqualTo(ctrl.controllerId());

            assertError(target.http.get("/api/v1/subsystems/nqn.2014-08.io.nvmeof4j:nope"), 404, "no subsystem");
            assertError(target.http.get("/api/v1/controllers/4242"), 404, "no live controller");
            assertError(target.http.get("/api/v1/nothing"), 404, "no such path");
            assertError(target.http.put(NS, "{}"), 405, "not allowed");
        }
    }

    @Test
    void shouldAddAndRemoveANamespaceLiveAndTellConnectedHosts() throws Exception {
        try (MetricsTarget target = MetricsTarget.start(dir);
             NvmeofHost host = NvmeofHost.create(HostIdentity.generate(), 1);
             NvmeofController ctrl = host.connect(target.ioAddress(), MetricsTarget.OPEN,
                 ConnectOptions.defaults().withIoQueues(1))) {
            LinkedBlockingQueue<Change> heard = new LinkedBlockingQueue<>();
            ctrl.addNamespaceListener((c, changed, now) ->
                heard.add(new Change(changed, now.stream().map(NvmeofNamespace::nsid).toList())));

            UUID uuid = UUID.randomUUID();
            JsonNode added = json(target.http.post(NS, """
                {"nsid": 3, "device": {"backend": "ram", "size": "4M", "block_size": 4096, "uuid": "%s"}}
                """.formatted(uuid)), 201);
            assertThat(added.get("nsid").asInt()).isEqualTo(3);
            assertThat(added.get("blocks").asLong()).isEqualTo(1024);

            Change change = heard.poll(10, TimeUnit.SECONDS);
            assertThat(change).as("namespace change heard through the async event").isNotNull();
            assertThat(change.changed()).containsExactly(3);
            assertThat(change.nsids()).containsExactly(1, 2, 3);
            NvmeofNamespace ns3 = ctrl.namespace(3);
            assertThat(ns3.uuid()).isEqualTo(uuid);
            ByteBuffer data = ByteBuffer.allocateDirect(4096);
            data.putLong(0, 0x1122334455667788L).putLong(4088, 42);
            ns3.write(7, data.duplicate()).get(10, TimeUnit.SECONDS);
            ByteBuffer back = ns3.read(7, 1).get(10, TimeUnit.SECONDS);
            assertThat(back.getLong(0)).isEqualTo(0x1122334455667788L);
            assertThat(back.getLong(4088)).isEqualTo(42);
            assertThat(nsids(json(target.http.get(NS), 200))).containsExactly(1, 2, 3);
            PrometheusText m = new PrometheusText(target.http.get("/metrics").body());
            assertThat(m.value("nvmeof_target_io_seconds_count", Map.of("subsystem", MetricsTarget.OPEN,
                "nsid", "3", "op", "write"))).isEqualTo(1);

            // Bad requests: a 4xx with a message, and nothing changed.
            assertError(target.http.post(NS, "{\"nsid\": 1, \"device\": {\"backend\": \"ram\", \"size\": \"1M\"}}"),
                409, "already has namespace 1");
            assertError(target.http.post(NS, "{\"nsid\": 4, \"device\": {\"backend\": \"ram\"}}"), 400, "size");
            assertError(target.http.post(NS, "text/plain", "{\"nsid\": 4, \"device\": {\"backend\": \"ram\", "
                + "\"size\": \"1M\"}}"), 415, "application/json");
            assertError(target.http.post(NS, "{\"nsid\": 4, \"device\": {\"backend\": \"tape\", \"size\": \"1M\"}}"),
                400, "backend");
            assertError(target.http.post(NS, "{\"nsid\": 0, \"device\": {\"backend\": \"ram\", \"size\": \"1M\"}}"),
                400, "nsid");
            assertError(target.http.post(NS, "{\"nsid\": 4, \"enable\": 0, \"device\": {\"backend\": \"ram\", "
                + "\"size\": \"1M\"}}"), 400, "disabled");
            assertError(target.http.post(NS, "{\"nsid\": 4, \"device\": "), 400, "not valid JSON");
            assertError(target.http.post(NS, "[1, 2]"), 400, "namespace object");
            Path missingDir = dir.resolve("no-such-dir").resolve("ns4.img");
            assertError(target.http.post(NS, "{\"nsid\": 4, \"device\": {\"path\": " + JSON.writeValueAsString(
                missingDir.toString()) + ", \"size\": \"1M\"}}"), 400, "does not exist");
            assertThat(Files.exists(missingDir)).isFalse();
            assertError(target.http.post("/api/v1/subsystems/nqn.2014-08.io.nvmeof4j:nope/namespaces",
                "{\"nsid\": 4, \"device\": {\"backend\": \"ram\", \"size\": \"1M\"}}"), 404, "no subsystem");
            assertError(target.http.delete(NS + "/99"), 404, "no namespace 99");
            assertError(target.http.delete(NS + "/abc"), 400, "not a number");
            assertThat(nsids(json(target.http.get(NS), 200))).containsExactly(1, 2, 3);
            assertThat(heard).as("no event for requests that changed nothing").isEmpty();

            // A file namespace added through the API: the file is created, I/O reaches it.
            Path file = dir.resolve("ns5.img");
            json(target.http.post(NS, "{\"nsid\": 5, \"device\": {\"path\": " + JSON.writeValueAsString(
                file.toString()) + ", \"size\": \"2M\"}}"), 201);
            assertThat(heard.poll(10, TimeUnit.SECONDS).nsids()).containsExactly(1, 2, 3, 5);
            assertThat(Files.size(file)).isEqualTo(2L << 20);
            ctrl.namespace(5).write(1, data.duplicate()).get(10, TimeUnit.SECONDS);

            // Removal while I/O runs on it, for a RAM namespace and for a file namespace (io_uring channels on the
            // reactors): in-flight commands finish or fail cleanly, nothing hangs or crashes.
            removeUnderLoad(target, ctrl, heard, 3, data, List.of(1, 2, 5));
            removeUnderLoad(target, ctrl, heard, 5, data, List.of(1, 2));
            assertThat(ctrl.namespace(3)).isNull();
            assertThat(ctrl.namespace(5)).isNull();
            // The rest of the target is unaffected.
            ctrl.namespace(1).write(0, data.duplicate()).get(10, TimeUnit.SECONDS);
            ByteBuffer check = ctrl.namespace(1).read(0, 1).get(10, TimeUnit.SECONDS);
            assertThat(check.getLong(0)).isEqualTo(0x1122334455667788L);
            assertThat(nsids(json(target.http.get(NS), 200))).containsExactly(1, 2);
            PrometheusText after = new PrometheusText(target.http.get("/metrics").body());
            assertThat(after.has("nvmeof_target_io_seconds_count", Map.of("subsystem", MetricsTarget.OPEN, "nsid", "3")))
                .as("meters of a removed namespace are gone").isFalse();
            assertThat(after.value("nvmeof_target_commands_failed_total", Map.of("subsystem", MetricsTarget.OPEN,
                "op", "write", "status", "0x00b"))).as("writes that found no namespace 3")
                .isGreaterThan(0);
        }
    }

    @Test
    void shouldCreateAndDeleteASubsystemAndItsListenerLive() throws Exception {
        String nqn = "nqn.2014-08.io.nvmeof4j:metrics-live";
        String base = "/api/v1/subsystems/" + nqn;
        try (MetricsTarget target = MetricsTarget.start(dir);
             NvmeofHost host = NvmeofHost.create(HostIdentity.generate(), 1)) {
            JsonNode created = json(target.http.post("/api/v1/subsystems", "{\"nqn\": \"" + nqn + "\", \"attr\": "
                + "{\"allow_any_host\": \"1\", \"serial\": \"LIVE1\"}}"), 201);
            assertThat(created.get("serial").asText()).isEqualTo("LIVE1");
            assertError(target.http.post("/api/v1/subsystems", "{\"nqn\": \"" + nqn + "\"}"), 409, "exists already");
            assertError(target.http.post("/api/v1/subsystems", "{\"nqn\": \"nqn.2014-08.io.nvmeof4j:x\", \"attr\": "
                + "{\"cntlid_min\": 9, \"cntlid_max\": 3}}"), 400, "cntlid_min");
            JsonNode listener = json(target.http.post(base + "/listeners", "{\"trtype\": \"tcp\", \"adrfam\": \"ipv4\", "
                + "\"traddr\": \"127.0.0.1\", \"trsvcid\": \"0\"}"), 201);
            int port = Integer.parseInt(listener.get("trsvcid").asText());
            assertThat(port).isPositive();
            json(target.http.post(base + "/namespaces", "{\"nsid\": 1, \"device\": {\"backend\": \"ram\", "
                + "\"size\": \"1M\"}}"), 201);
            TransportAddress address = TransportAddress.tcp("127.0.0.1", port);
            try (NvmeofController c = host.connect(address, nqn, ConnectOptions.defaults().withIoQueues(1))) {
                assertThat(c.namespaces()).hasSize(1);
                c.namespace(1).write(0, ByteBuffer.allocateDirect(512)).get(10, TimeUnit.SECONDS);
            }
            json(target.http.delete(base + "/listeners/" + listener.get("portid").asInt()), 200);
            assertThatThrownBy(() -> host.connect(address, nqn, ConnectOptions.defaults().withIoQueues(1)).close())
                .isInstanceOf(Exception.class);
            assertError(target.http.delete(base + "/listeners/" + listener.get("portid").asInt()), 404, "not exported");
            json(target.http.delete(base), 200);
            assertError(target.http.get(base), 404, "no subsystem");
            assertError(target.http.delete(base), 404, "no subsystem");
        }
    }

    @Test
    void shouldResizeNamespacesAndManageReferralsLive() throws Exception {
        Path image = dir.resolve("grow.img");
        try (java.io.RandomAccessFile f = new java.io.RandomAccessFile(image.toFile(), "rw")) {
            f.setLength(4L << 20);
        }
        try (MetricsTarget target = MetricsTarget.start(dir);
             NvmeofHost host = NvmeofHost.create(HostIdentity.generate(), 1)) {
            json(target.http.post(NS, "{\"nsid\": 5, \"device\": {\"backend\": \"null\", \"size\": \"4M\"}}"), 201);
            json(target.http.post(NS, "{\"nsid\": 6, \"device\": {\"path\": " + JSON.writeValueAsString(image.toString())
                + "}}"), 201);
            try (NvmeofController c = host.connect(target.ioAddress(), MetricsTarget.OPEN,
                    ConnectOptions.defaults().withIoQueues(1))) {
                LinkedBlockingQueue<List<Integer>> heard = new LinkedBlockingQueue<>();
                c.addNamespaceListener((ctrl, changed, namespaces) -> heard.add(changed));
                JsonNode grown = json(target.http.post(NS + "/5/resize", "{\"size\": \"8M\"}"), 200);
                assertThat(grown.get("size_bytes").asLong()).isEqualTo(8L << 20);
                assertThat(heard.poll(10, TimeUnit.SECONDS)).containsExactly(5);
                assertThat(c.namespace(5).sizeBytes()).isEqualTo(8L << 20);
                // Refused, nothing changed: shrinking, RAM, no such namespace, a bad size.
                assertError(target.http.post(NS + "/5/resize", "{\"size\": \"2M\"}"), 400, "shrinking");
                assertError(target.http.post(NS + "/1/resize", "{\"size\": \"32M\"}"), 400, "cannot be resized");
                assertError(target.http.post(NS + "/9/resize", "{\"size\": \"32M\"}"), 404, "no namespace");
                assertError(target.http.post(NS + "/5/resize", "{\"size\": \"lots\"}"), 400, "size");
                assertThat(target.daemon.model().subsystem(MetricsTarget.OPEN).namespace(5).blockCount() * 512)
                    .isEqualTo(8L << 20);
                // A file grown outside, then rescanned ({}: its size now); then shrunk under it: 409.
                try (java.io.RandomAccessFile f = new java.io.RandomAccessFile(image.toFile(), "rw")) {
                    f.setLength(12L << 20);
                }
                assertThat(json(target.http.post(NS + "/6/resize", "{}"), 200).get("size_bytes").asLong())
                    .isEqualTo(12L << 20);
                assertThat(heard.poll(10, TimeUnit.SECONDS)).containsExactly(6);
                assertThat(c.namespace(6).sizeBytes()).isEqualTo(12L << 20);
                try (java.io.RandomAccessFile f = new java.io.RandomAccessFile(image.toFile(), "rw")) {
                    f.setLength(2L << 20);
                }
                assertError(target.http.post(NS + "/6/resize", "{}"), 409, "shrinking is refused");
                assertThat(heard.poll(300, TimeUnit.MILLISECONDS)).as("no event for refused resizes").isNull();
                try (java.io.RandomAccessFile f = new java.io.RandomAccessFile(image.toFile(), "rw")) {
                    f.setLength(12L << 20);
                }
            }

            String referrals = "/api/v1/ports/1/referrals";
            assertThat(json(target.http.get(referrals), 200).size()).isZero();
            String body = "{\"addr\": {\"trtype\": \"tcp\", \"adrfam\": \"ipv4\", \"traddr\": \"127.0.0.9\", "
                + "\"trsvcid\": \"8009\"}}";
            JsonNode added = json(target.http.post(referrals, body), 201);
            assertThat(added.get("name").asText()).isEqualTo("tcp-127.0.0.9-8009");
            assertThat(added.at("/addr/traddr").asText()).isEqualTo("127.0.0.9");
            assertError(target.http.post(referrals, body), 409, "already refers");
            assertError(target.http.post("/api/v1/ports/9/referrals", body), 404, "no port 9");
            assertError(target.http.post(referrals, "{\"addr\": {\"traddr\": \"127.0.0.9\"}}"), 400, "expected");
            assertError(target.http.post(referrals, "{\"addr\": {\"trtype\": \"tcp\", \"traddr\": \"a.name\", "
                + "\"trsvcid\": \"8009\"}}"), 400, "not an IP address");
            assertThat(target.daemon.model().referrals(1)).singleElement()
                .satisfies(r -> assertThat(r.address().traddr()).isEqualTo("127.0.0.9"));
            assertError(target.http.delete(referrals + "/nope"), 404, "no referral");
            assertThat(json(target.http.delete(referrals + "/tcp-127.0.0.9-8009"), 200).size()).isZero();
            assertThat(target.daemon.model().referrals(1)).isEmpty();

            // attr.max_namespaces: NSIDs above it are refused.
            String limited = "/api/v1/subsystems/nqn.2014-08.io.nvmeof4j:limited";
            json(target.http.post("/api/v1/subsystems", "{\"nqn\": \"nqn.2014-08.io.nvmeof4j:limited\", "
                + "\"attr\": {\"allow_any_host\": \"1\", \"max_namespaces\": 1}}"), 201);
            assertError(target.http.post(limited + "/namespaces", "{\"nsid\": 2, \"device\": {\"backend\": \"null\", "
                + "\"size\": \"1M\"}}"), 400, "max_namespaces");
            json(target.http.post(limited + "/namespaces", "{\"nsid\": 1, \"device\": {\"backend\": \"null\", "
                + "\"size\": \"1M\"}}"), 201);
            assertError(target.http.post("/api/v1/subsystems", "{\"nqn\": \"nqn.2014-08.io.nvmeof4j:bad\", "
                + "\"attr\": {\"max_namespaces\": 5000}}"), 400, "max_namespaces");
        }
    }

    @Test
    void shouldLetOnlyAllowedHostsConnect() throws Exception {
        try (MetricsTarget target = MetricsTarget.start(dir);
             NvmeofHost newcomer = NvmeofHost.create(HostIdentity.generate(), 1);
             NvmeofHost allowed = NvmeofHost.create(HostIdentity.of(MetricsTarget.ALLOWED_HOST, UUID.randomUUID()), 1)) {
            String newcomerNqn = newcomer.identity().hostNqn().value();
            assertConnectRefused(newcomer, target);

            JsonNode afterAdd = json(target.http.post(HOSTS, "{\"nqn\": \"" + newcomerNqn + "\"}"), 201);
            assertThat(afterAdd.get("allowed_hosts")).extracting(JsonNode::asText)
                .containsExactlyInAnyOrder(MetricsTarget.ALLOWED_HOST, newcomerNqn);
            try (NvmeofController c = newcomer.connect(target.ioAddress(), MetricsTarget.CLOSED,
                ConnectOptions.defaults().withIoQueues(1))) {
                c.namespace(1).write(0, ByteBuffer.allocateDirect(512)).get(10, TimeUnit.SECONDS);
            }

            // Bad requests change nothing.
            assertError(target.http.post(HOSTS, "{\"nqn\": \"" + newcomerNqn + "\"}"), 409, "already allowed");
            assertError(target.http.post(HOSTS, "{\"nqn\": \"not-an-nqn\"}"), 400, "not a valid NQN");
            assertError(target.http.post(HOSTS, "{\"host\": \"x\"}"), 400, "expected");
            assertError(target.http.post(HOSTS, "{\"nqn\": \"" + newcomerNqn + "\", \"key\": 1}"), 400, "unknown field");
            assertError(target.http.delete(HOSTS + "/nqn.2014-08.io.nvmeof4j:stranger"), 404, "not on the allowed list");
            assertThat(json(target.http.get(HOSTS), 200).get("allowed_hosts")).extracting(JsonNode::asText)
                .containsExactlyInAnyOrder(MetricsTarget.ALLOWED_HOST, newcomerNqn);

            json(target.http.delete(HOSTS + "/" + newcomerNqn), 200);
            assertConnectRefused(newcomer, target);
            // The host that was configured is unaffected, until it is removed too.
            try (NvmeofController c = allowed.connect(target.ioAddress(), MetricsTarget.CLOSED,
                ConnectOptions.defaults().withIoQueues(1))) {
                assertThat(c.namespaces()).hasSize(1);
            }
            JsonNode emptied = json(target.http.delete(HOSTS + "/" + MetricsTarget.ALLOWED_HOST), 200);
            assertThat(emptied.get("allowed_hosts")).isEmpty();
            assertConnectRefused(allowed, target);
        }
    }

    /**
     * Writes to namespace {@code nsid} from another thread (bounded: stops on a flag or after 60 s) and removes it
     * through the API once 200 writes are done: the host hears the change, and every write that did not succeed
     * failed with Invalid Namespace or Namespace Not Ready.
     */
    private static void removeUnderLoad(MetricsTarget target, NvmeofController ctrl, LinkedBlockingQueue<Change> heard,
                                        int nsid, ByteBuffer data, List<Integer> remaining) throws Exception {
        NvmeofNamespace ns = ctrl.namespace(nsid);
        long blocks = ns.blockCount();
        AtomicBoolean stop = new AtomicBoolean();
        AtomicLong ok = new AtomicLong();
        List<Integer> failures = java.util.Collections.synchronizedList(new ArrayList<>());
        long loadDeadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        CompletableFuture<Void> load = CompletableFuture.runAsync(() -> {
            List<CompletableFuture<Void>> inFlight = new ArrayList<>();
            long lba = 0;
            while (!stop.get() && System.nanoTime() < loadDeadline) {
                for (int i = 0; i < 8; i++) {
                    inFlight.add(ns.write(lba++ % blocks, data.duplicate()));
                }
                for (CompletableFuture<Void> f : inFlight) {
                    try {
                        f.get(10, TimeUnit.SECONDS);
                        ok.incrementAndGet();
                    } catch (ExecutionException e) {
                        failures.add(e.getCause() instanceof NvmeofIoException io ? io.status() : -1);
                    } catch (Exception e) {
                        failures.add(-2);
                    }
                }
                inFlight.clear();
            }
        });
        try {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (ok.get() < 200 && System.nanoTime() < deadline) {
                Thread.sleep(5);
            }
            assertThat(ok.get()).as("writes to namespace %d done before the removal", nsid).isGreaterThanOrEqualTo(200);
            JsonNode removed = json(target.http.delete(NS + "/" + nsid), 200);
            assertThat(removed.get("nsid").asInt()).isEqualTo(nsid);
            Change removal = heard.poll(10, TimeUnit.SECONDS);
            assertThat(removal).as("removal of namespace %d heard", nsid).isNotNull();
            assertThat(removal.changed()).containsExactly(nsid);
            assertThat(removal.nsids()).containsExactlyElementsOf(remaining);
            Thread.sleep(100);
        } finally {
            stop.set(true);
            load.get(30, TimeUnit.SECONDS);
        }
        assertThat(failures).as("I/O to the removed namespace %d fails with Invalid Namespace or Namespace Not Ready",
                nsid)
            .isNotEmpty()
            .allSatisfy(st -> assertThat(NvmeStatus.code(st)).isIn(NvmeStatus.INVALID_NAMESPACE,
                NvmeStatus.NAMESPACE_NOT_READY));
    }

    private static void assertConnectRefused(NvmeofHost host, MetricsTarget target) {
        assertThatThrownBy(() -> host.connect(target.ioAddress(), MetricsTarget.CLOSED,
            ConnectOptions.defaults().withIoQueues(1)).close())
            .isInstanceOf(NvmeofException.class)
            .satisfies(e -> assertThat(NvmeStatus.code(((NvmeofException) e).status()))
                .isEqualTo(NvmeStatus.FABRICS_CONNECT_INVALID_HOST));
    }

    private static JsonNode json(Http.Response r, int expectedStatus) throws Exception {
        assertThat(r.status()).as("HTTP status; body: %s", r.body()).isEqualTo(expectedStatus);
        return JSON.readTree(r.body());
    }

    private static void assertError(Http.Response r, int status, String messagePart) throws Exception {
        assertThat(r.status()).as("HTTP status; body: %s", r.body()).isEqualTo(status);
        JsonNode body = JSON.readTree(r.body());
        assertThat(body.get("error").asText()).contains(messagePart);
    }

    private static JsonNode find(JsonNode array, String field, String value) {
        for (JsonNode n : array) {
            if (value.equals(n.get(field).asText())) {
                return n;
            }
        }
        throw new AssertionError("no element with " + field + " = " + value + " in " + array);
    }

    private static List<Integer> nsids(JsonNode namespaces) {
        List<Integer> list = new ArrayList<>();
        namespaces.forEach(n -> list.add(n.get("nsid").asInt()));
        return list;
    }
}
