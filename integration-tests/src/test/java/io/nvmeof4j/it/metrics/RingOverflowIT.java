package io.nvmeof4j.it.metrics;

import io.nvmeof4j.initiator.ConnectOptions;
import io.nvmeof4j.initiator.HostIdentity;
import io.nvmeof4j.initiator.NvmeofController;
import io.nvmeof4j.initiator.NvmeofHost;
import io.nvmeof4j.initiator.NvmeofNamespace;
import io.nvmeof4j.target.backend.BdevChannels;
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
 * More commands in flight on one reactor than its io_uring holds: four controllers at queue depth 128 (512 commands)
 * writing with FUA to a file namespace on disk, the ring shrunk to 32 entries. Every command succeeds (none is
 * answered Namespace Not Ready), the data reads back, and {@code nvmeof_target_resource_waits_total} counts the
 * commands that waited for a ring slot.
 */
class RingOverflowIT {
    private static final String NQN = "nqn.2014-08.io.nvmeof4j:ring-overflow";
    private static final int CONTROLLERS = 4;
    private static final int DEPTH = 128;
    private static final int ROUNDS = 3;
    private static final int BLOCKS = 4; // 16 KiB writes

    @TempDir
    Path dir;

    @Test
    void shouldCompleteEveryCommandWhenTheRingOverflowsAndCountTheWaits() throws Exception {
        String json = MetricsTarget.oneNamespaceConfig(NQN, 1, """
            "device": {"path": "%s", "size": "64M", "block_size": 4096}\
            """.formatted(dir.resolve("ns1.img")));
        String before = System.getProperty(BdevChannels.ENTRIES_PROP_NAME);
        System.setProperty(BdevChannels.ENTRIES_PROP_NAME, "32");
        TargetDaemon daemon;
        try {
            daemon = TargetDaemon.start(TargetConfig.parse(json, dir));
        } finally {
            if (before == null) {
                System.clearProperty(BdevChannels.ENTRIES_PROP_NAME);
            } else {
                System.setProperty(BdevChannels.ENTRIES_PROP_NAME, before);
            }
        }
        try (daemon; NvmeofHost host = NvmeofHost.create(HostIdentity.generate(), 2)) {
            Http http = new Http(daemon);
            List<NvmeofController> controllers = new ArrayList<>();
            try {
                for (int c = 0; c < CONTROLLERS; c++) {
                    controllers.add(host.connect(daemon.listenAddresses().get(0), NQN,
                        ConnectOptions.defaults().withIoQueues(1).withQueueDepth(DEPTH)));
                }
                int bs = controllers.get(0).namespace(1).blockSize();
                int size = BLOCKS * bs;
                for (int round = 0; round < ROUNDS; round++) {
                    List<CompletableFuture<Void>> writes = new ArrayList<>();
                    // Each controller fills its queue; all four queues are served by the one reactor.
                    for (int c = 0; c < CONTROLLERS; c++) {
                        NvmeofNamespace ns = controllers.get(c).namespace(1);
                        for (int i = 0; i < DEPTH - 1; i++) {
                            writes.add(ns.write(lba(round, c, i), data(round, c, i, size), true));
                        }
                    }
                    for (int w = 0; w < writes.size(); w++) {
                        writes.get(w).get(60, TimeUnit.SECONDS); // a failed command throws here with its status
                    }
                }
                for (int round = 0; round < ROUNDS; round++) {
                    for (int c = 0; c < CONTROLLERS; c++) {
                        NvmeofNamespace ns = controllers.get(c).namespace(1);
                        List<CompletableFuture<ByteBuffer>> reads = new ArrayList<>();
                        for (int i = 0; i < DEPTH - 1; i++) {
                            reads.add(ns.read(lba(round, c, i), BLOCKS));
                        }
                        for (int i = 0; i < DEPTH - 1; i++) {
                            ByteBuffer back = reads.get(i).get(60, TimeUnit.SECONDS);
                            assertThat(back).as("round %d controller %d write %d", round, c, i)
                                .isEqualTo(data(round, c, i, size));
                        }
                    }
                }
            } finally {
                for (NvmeofController c : controllers) {
                    c.close();
                }
            }
            PrometheusText m = new PrometheusText(http.get("/metrics").body());
            double waits = m.value("nvmeof_target_resource_waits_total", Map.of("reactor", "0",
                "resource", "io_uring"));
            System.out.printf("ring overflow: %d commands at %d x QD%d on a 32-entry ring, %.0f waited%n",
                2 * ROUNDS * CONTROLLERS * (DEPTH - 1), CONTROLLERS, DEPTH, waits);
            assertThat(waits).as("commands that waited for one of the ring's 32 slots").isPositive();
            assertThat(m.valueOrZero("nvmeof_target_commands_failed_total", Map.of("subsystem", NQN)))
                .as("failed commands").isZero();
        }
    }

    private static long lba(int round, int controller, int i) {
        return ((long) (round * CONTROLLERS + controller) * DEPTH + i) * BLOCKS;
    }

    private static ByteBuffer data(int round, int controller, int i, int size) {
        byte[] b = new byte[size];
        new Random(((long) round * CONTROLLERS + controller) * DEPTH + i).nextBytes(b);
        ByteBuffer buf = ByteBuffer.allocateDirect(size);
        buf.put(b).flip();
        return buf;
    }
}
