package io.nvmeof4j.it.control;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.nvmeof4j.it.tcp.DaemonProcess;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * SIGKILL the daemon ({@code bin/nvmeof-target}, a real process) at random moments while live changes arrive over
 * the SPDK JSON-RPC socket: after every restart it serves exactly the acknowledged changes, plus at most the one
 * change that was in flight when it died (sent, never answered), never anything half-applied. {@value #ROUNDS}
 * changes, about one in {@value #KILL_ONE_IN} followed by a kill a random 0..{@value #KILL_DELAY_MAX_MS} ms after
 * the request was sent.
 */
class ControlPlaneCrashIT {
    private static final int ROUNDS = 200;
    private static final int KILL_ONE_IN = 12;
    private static final int KILL_DELAY_MAX_MS = 40;
    private static final ObjectMapper MAPPER = new ObjectMapper();

    @TempDir
    Path dir;

    /**
     * The state the test expects: subsystem NQN to its NSIDs, and each discovery referral as a key
     * {@code referral:TRADDR:TRSVCID} (with no NSIDs).
     */
    private Map<String, TreeSet<Integer>> acked = new TreeMap<>();

    @Test
    void shouldServeExactlyTheAcknowledgedStateAfterEverySigkill() throws Exception {
        int port;
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            port = s.getLocalPort();
        }
        Path socket = dir.resolve("rpc.sock");
        Path config = dir.resolve("target.json");
        Files.writeString(config, "{\"nvmeof4j\": {\"reactors\": 1, \"buffer_pool_mib\": 4, \"http\": \"off\", "
            + "\"rpc_socket\": \"" + socket + "\"}, \"ports\": [{\"portid\": 1, \"addr\": {\"trtype\": \"tcp\", "
            + "\"adrfam\": \"ipv4\", \"traddr\": \"127.0.0.1\", \"trsvcid\": \"" + port + "\"}, \"subsystems\": "
            + "[\"nqn.2014-08.org.nvmexpress.discovery\"]}], \"subsystems\": []}\n");
        Random random = new Random(Long.getLong("crash.seed", System.nanoTime()));
        ScheduledExecutorService killer = Executors.newSingleThreadScheduledExecutor();
        int kills = 0;
        int restarts = 0;
        int inFlightSurvived = 0;
        int next = 0;
        DaemonProcess daemon = start(config, port, restarts++);
        try {
            RpcConnection rpc = new RpcConnection(socket);
            for (int round = 0; round < ROUNDS; round++) {
                Change change = nextChange(random, next++);
                boolean kill = random.nextInt(KILL_ONE_IN) == 0;
                DaemonProcess victim = daemon;
                CompletableFuture<?> killed = null;
                if (kill) {
                    killed = new CompletableFuture<>();
                    CompletableFuture<?> done = killed;
                    killer.schedule(() -> {
                        try {
                            victim.kill();
                            done.complete(null);
                        } catch (Throwable t) {
                            done.completeExceptionally(t);
                        }
                    }, random.nextInt(KILL_DELAY_MAX_MS + 1), TimeUnit.MILLISECONDS);
                }
                JsonNode answer = null;
                for (String[] call : change.calls) {
                    answer = rpc.call(call[0], call[1]);
                    if (answer == null || answer.has("error")) {
                        break;
                    }
                }
                boolean answered = answer != null && answer.has("result");
                if (answer != null && answer.has("error")) {
                    throw new AssertionError(change + " refused: " + answer);
                }
                if (answered) {
                    change.apply(acked);
                }
                if (kill) {
                    killed.get(30, TimeUnit.SECONDS);
                    kills++;
                    rpc.close();
                    daemon = start(config, port, restarts++);
                    rpc = new RpcConnection(socket);
                    try (var left = Files.newDirectoryStream(dir, ".target.json.tmp-*")) {
                        assertThat(left).as("temporary files of an interrupted write, after the restart").isEmpty();
                    }
                    Map<String, TreeSet<Integer>> served = served(rpc);
                    if (!served.equals(acked)) {
                        // Only the change in flight (never answered) may have made it to the file.
                        Map<String, TreeSet<Integer>> withPending = copy(acked);
                        change.apply(withPending);
                        assertThat(answered).as("an answered change is in the file").isFalse();
                        assertThat(served).as("after kill %d (round %d, %s)", kills, round, change)
                            .isEqualTo(withPending);
                        acked = withPending;
                        inFlightSurvived++;
                    }
                } else if (!answered) {
                    throw new AssertionError(change + " not answered without a kill");
                }
            }
            assertThat(served(rpc)).isEqualTo(acked);
            rpc.close();
            daemon.kill();
            daemon = start(config, port, restarts++);
            try (RpcConnection last = new RpcConnection(socket)) {
                assertThat(served(last)).isEqualTo(acked);
            }
        } finally {
            daemon.close();
            killer.shutdownNow();
        }
        System.out.printf("ControlPlaneCrashIT: %d changes, %d SIGKILLs, %d restarts, %d in-flight changes "
            + "persisted, final state %d subsystems%n", ROUNDS, kills, restarts, inFlightSurvived, acked.size());
        assertThat(kills).isGreaterThan(0);
    }

    private DaemonProcess start(Path config, int port, int n) throws Exception {
        return DaemonProcess.start(List.of(DaemonProcess.launcher().toString(), "--config", config.toString()),
            dir.resolve("daemon" + n + ".log"), port);
    }

    private static Map<String, TreeSet<Integer>> copy(Map<String, TreeSet<Integer>> m) {
        Map<String, TreeSet<Integer>> c = new TreeMap<>();
        m.forEach((k, v) -> c.put(k, new TreeSet<>(v)));
        return c;
    }

    private static Map<String, TreeSet<Integer>> served(RpcConnection rpc) throws Exception {
        JsonNode r = rpc.call("nvmf_get_subsystems", null);
        Map<String, TreeSet<Integer>> served = new TreeMap<>();
        for (JsonNode ref : rpc.call("nvmf_discovery_get_referrals", null).get("result")) {
            served.put(REFERRAL + ref.at("/address/traddr").asText() + ":" + ref.at("/address/trsvcid").asText(),
                new TreeSet<>());
        }
        for (JsonNode s : r.get("result")) {
            if (s.get("subtype").asText().equals("NVMe")) {
                TreeSet<Integer> nsids = new TreeSet<>();
                s.get("namespaces").forEach(n -> nsids.add(n.get("nsid").asInt()));
                served.put(s.get("nqn").asText(), nsids);
            }
        }
        return served;
    }

    /** One change: the RPC calls making it (a bdev first for a namespace), and its effect on the expected state. */
    private record Change(String what, List<String[]> calls, java.util.function.Consumer<Map<String, TreeSet<Integer>>> effect) {
        void apply(Map<String, TreeSet<Integer>> state) {
            effect.accept(state);
        }

        @Override
        public String toString() {
            return what;
        }
    }

    private static final String REFERRAL = "referral:";

    private Change nextChange(Random random, int n) {
        List<String> nqns = new ArrayList<>(acked.keySet());
        List<String> referrals = new ArrayList<>(nqns);
        nqns.removeIf(k -> k.startsWith(REFERRAL));
        referrals.removeIf(k -> !k.startsWith(REFERRAL));
        int pick = random.nextInt(11);
        if (pick == 10) {
            // A discovery referral: removed (one of those there) or added (a new address).
            if (!referrals.isEmpty() && random.nextBoolean()) {
                String key = referrals.get(random.nextInt(referrals.size()));
                String[] a = key.substring(REFERRAL.length()).split(":");
                return new Change("remove " + key, List.<String[]>of(new String[] {"nvmf_discovery_remove_referral",
                    "{\"address\": {\"trtype\": \"tcp\", \"adrfam\": \"ipv4\", \"traddr\": \"" + a[0]
                        + "\", \"trsvcid\": \"" + a[1] + "\"}}"}), st -> st.remove(key));
            }
            String traddr = "127.0." + (n / 250) + "." + (1 + n % 250);
            String key = REFERRAL + traddr + ":8009";
            return new Change("add " + key, List.<String[]>of(new String[] {"nvmf_discovery_add_referral",
                "{\"address\": {\"trtype\": \"tcp\", \"adrfam\": \"ipv4\", \"traddr\": \"" + traddr
                    + "\", \"trsvcid\": \"8009\"}}"}), st -> st.put(key, new TreeSet<>()));
        }
        if (nqns.isEmpty() || pick < 2 && nqns.size() < 12) {
            String nqn = "nqn.2016-06.io.spdk:crash" + n;
            return new Change("create " + nqn, List.<String[]>of(new String[] {"nvmf_create_subsystem",
                "{\"nqn\": \"" + nqn + "\", \"allow_any_host\": true, \"max_namespaces\": 64}"}),
                s -> s.put(nqn, new TreeSet<>()));
        }
        String nqn = nqns.get(random.nextInt(nqns.size()));
        TreeSet<Integer> nsids = acked.get(nqn);
        if (pick == 2) {
            return new Change("delete " + nqn, List.<String[]>of(new String[] {"nvmf_delete_subsystem",
                "{\"nqn\": \"" + nqn + "\"}"}), s -> s.remove(nqn));
        }
        if (pick < 5 && !nsids.isEmpty()) {
            int nsid = new ArrayList<>(nsids).get(random.nextInt(nsids.size()));
            return new Change("remove " + nqn + " ns " + nsid, List.<String[]>of(new String[] {
                "nvmf_subsystem_remove_ns", "{\"nqn\": \"" + nqn + "\", \"nsid\": " + nsid + "}"}),
                s -> s.get(nqn).remove(nsid));
        }
        int nsid = 1 + random.nextInt(64);
        while (nsids.contains(nsid)) {
            nsid = 1 + random.nextInt(64);
        }
        int chosen = nsid;
        String bdev = "Null" + n;
        return new Change("add " + nqn + " ns " + nsid, List.of(
            new String[] {"bdev_null_create", "{\"name\": \"" + bdev + "\", \"num_blocks\": 2048, \"block_size\": 512}"},
            new String[] {"nvmf_subsystem_add_ns", "{\"nqn\": \"" + nqn + "\", \"namespace\": {\"bdev_name\": \""
                + bdev + "\", \"nsid\": " + nsid + "}}"}), s -> s.get(nqn).add(chosen));
    }
}
