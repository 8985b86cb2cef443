package io.nvmeof4j.it.metrics;

import io.nvmeof4j.initiator.ConnectOptions;
import io.nvmeof4j.initiator.HostIdentity;
import io.nvmeof4j.initiator.NvmeofController;
import io.nvmeof4j.initiator.NvmeofHost;
import io.nvmeof4j.initiator.NvmeofNamespace;
import io.nvmeof4j.target.config.TargetConfig;
import io.nvmeof4j.target.daemon.TargetDaemon;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The pool-exhaustion stall (issue 12 item 5), with the daemon and our initiator over NVMe/TCP on 127.0.0.1: one
 * reactor whose 2 MiB buffer pool has room for eight 256 KiB buffers (four while its 4 KiB class holds the other
 * MiB; the pool re-carves that MiB once all its 4 KiB buffers are free), four controllers each writing 256 KiB by
 * R2T and 4 KiB in-capsule, interleaved, at queue depth 32. When in-capsule data took pool buffers too, this
 * stalled: the writes did not complete within the bound (a capsule that found the pool dry, or other commands
 * already waiting, stopped its queue's reads while that queue's R2T writes held buffers). Every command completes
 * within the bound, none fails, the data reads back, and
 * {@code nvmeof_target_resource_waits_total{resource="buffer_pool"}} shows that commands did wait for the pool.
 */
class BufferPoolExhaustionIT {
    private static final String NQN = "nqn.2014-08.io.nvmeof4j:pool-exhaustion";
    private static final int CONTROLLERS = 4;
    private static final int DEPTH = 32;
    private static final int PAIRS = 15; // a 256 KiB and a 4 KiB write each: 30 of the queue's 31 commands
    private static final int ROUNDS = 3;
    private static final int LARGE = 256 << 10;
    private static final int SMALL = 4096;
    /** Generous: the whole run takes well under a second when nothing stalls. */
    private static final long BOUND_SECONDS = 10;

    @TempDir
    Path dir;

    @Test
    void shouldCompleteEveryWriteWhileR2TWritesHoldEveryPoolBuffer() throws Exception {
        String json = """
            {
              "nvmeof4j": {"http": "127.0.0.1:0", "reactors": 1, "buffer_pool_mib": 2, "max_data_transfer_kib": 1024},
              "ports": [
                {"portid": 1, "addr": {"trtype": "tcp", "adrfam": "ipv4", "traddr": "127.0.0.1", "trsvcid": "0"},
                 "subsystems": ["%1$s"]}
              ],
              "subsystems": [
                {"nqn": "%1$s", "attr": {"allow_any_host": "1"},
                 "namespaces": [ {"nsid": 1, "device": {"backend": "ram", "size": "64M", "block_size": 512}} ]}
              ]
            }
            """.formatted(NQN);
        try (TargetDaemon daemon = TargetDaemon.start(TargetConfig.parse(json, dir));
             NvmeofHost host = NvmeofHost.create(HostIdentity.generate(), 2)) {
            Http http = new Http(daemon);
            List<NvmeofController> controllers = new ArrayList<>();
            try {
                for (int c = 0; c < CONTROLLERS; c++) {
                    controllers.add(host.connect(daemon.listenAddresses().get(0), NQN,
                        ConnectOptions.defaults().withIoQueues(1).withQueueDepth(DEPTH)));
                }
                long start = System.nanoTime();
                for (int round = 0; round < ROUNDS; round++) {
                    // The data first, so the commands go out back to back and pile up at the target.
                    ByteBuffer[][] large = new ByteBuffer[CONTROLLERS][PAIRS];
                    ByteBuffer[][] small = new ByteBuffer[CONTROLLERS][PAIRS];
                    for (int c = 0; c < CONTROLLERS; c++) {
                        for (int i = 0; i < PAIRS; i++) {
                            large[c][i] = data(round, c, i, LARGE);
                            small[c][i] = data(round, c, -1 - i, SMALL);
                        }
                    }
                    List<CompletableFuture<Void>> writes = new ArrayList<>();
                    for (int c = 0; c < CONTROLLERS; c++) {
                        NvmeofNamespace ns = controllers.get(c).namespace(1);
                        for (int i = 0; i < PAIRS; i++) {
                            writes.add(ns.write(largeLba(round, c, i), large[c][i], false));
                            writes.add(ns.write(smallLba(round, c, i), small[c][i], false));
                        }
                    }
                    for (CompletableFuture<Void> write : writes) {
                        // A stalled queue times out here; a failed command throws with its status.
                        write.get(BOUND_SECONDS, TimeUnit.SECONDS);
                    }
                }
                long writeNanos = System.nanoTime() - start;
                for (int round = 0; round < ROUNDS; round++) {
                    for (int c = 0; c < CONTROLLERS; c++) {
                        NvmeofNamespace ns = controllers.get(c).namespace(1);
                        for (int i = 0; i < PAIRS; i++) {
                            assertThat(ns.read(largeLba(round, c, i), LARGE / 512).get(BOUND_SECONDS, TimeUnit.SECONDS))
                                .as("round %d controller %d large write %d", round, c, i)
                                .isEqualTo(data(round, c, i, LARGE));
                            assertThat(ns.read(smallLba(round, c, i), SMALL / 512).get(BOUND_SECONDS, TimeUnit.SECONDS))
                                .as("round %d controller %d small write %d", round, c, i)
                                .isEqualTo(data(round, c, -1 - i, SMALL));
                        }
                    }
                }
                PrometheusText m = new PrometheusText(http.get("/metrics").body());
                double waits = m.value("nvmeof_target_resource_waits_total", Map.of("reactor", "0",
                    "resource", "buffer_pool"));
                System.out.printf("pool exhaustion: %d writes (half 256 KiB by R2T, half 4 KiB in-capsule) at %d x "
                    + "QD%d on a 2 MiB pool in %d ms, %.0f waited for a buffer%n",
                    2 * ROUNDS * CONTROLLERS * PAIRS, CONTROLLERS, DEPTH, writeNanos / 1_000_000, waits);
                assertThat(waits).as("commands that waited for a pool buffer").isPositive();
                assertThat(m.valueOrZero("nvmeof_target_commands_failed_total", Map.of("subsystem", NQN)))
                    .as("failed commands").isZero();
            } finally {
                for (NvmeofController c : controllers) {
                    c.close();
                }
            }
        }
    }

    /** Each controller's writes of a round in their own 4 MiB: large ones first, then the small ones. */
    private static long largeLba(int round, int controller, int i) {
        return ((long) (round * CONTROLLERS + controller) * (4 << 20) + (long) i * LARGE) / 512;
    }

    private static long smallLba(int round, int controller, int i) {
        return ((long) (round * CONTROLLERS + controller) * (4 << 20) + (long) PAIRS * LARGE + (long) i * SMALL) / 512;
    }

    private static ByteBuffer data(int round, int controller, int i, int size) {
        byte[] b = new byte[size];
        new Random(((long) round * CONTROLLERS + controller) * 1000 + i).nextBytes(b);
        ByteBuffer buf = ByteBuffer.allocateDirect(size);
        buf.put(b).flip();
        return buf;
    }
}
