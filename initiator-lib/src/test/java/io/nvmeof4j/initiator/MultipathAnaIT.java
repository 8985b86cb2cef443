package io.nvmeof4j.initiator;

import io.nvmeof4j.protocol.ana.AnaState;
import io.nvmeof4j.protocol.spi.TransportAddress;
import io.nvmeof4j.target.config.TargetConfig;
import io.nvmeof4j.target.daemon.TargetDaemon;
import io.nvmeof4j.target.model.Port;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * ANA over two ports of our daemon in this JVM (one subsystem, namespace 1 in ANA group 1): the states come from the
 * ANA log at connect; a live change to inaccessible on port 1 (the management API's operation, with its ANA change
 * event) moves in-flight and new writes to port 2 with no error; back to optimized, port 1 is used again.
 */
class MultipathAnaIT {
    private static final String NQN = "nqn.2014-08.io.nvmeof4j:multipath-ana";

    @TempDir
    Path dir;

    @Test
    void shouldMoveIoOffAPathThatGoesInaccessibleAndBackWhenOptimized() throws Exception {
        String json = """
            {
              "nvmeof4j": {"http": "off", "reactors": 1},
              "ports": [
                {"portid": 1, "addr": {"trtype": "tcp", "adrfam": "ipv4", "traddr": "127.0.0.1", "trsvcid": "0"},
                 "ana_groups": [{"grpid": 1, "ana": {"state": "optimized"}}], "subsystems": ["%1$s"]},
                {"portid": 2, "addr": {"trtype": "tcp", "adrfam": "ipv4", "traddr": "127.0.0.1", "trsvcid": "0"},
                 "ana_groups": [{"grpid": 1, "ana": {"state": "non-optimized"}}], "subsystems": ["%1$s"]}
              ],
              "subsystems": [
                {"nqn": "%1$s", "attr": {"allow_any_host": "1"},
                 "namespaces": [{"nsid": 1, "ana_grpid": 1,
                                 "device": {"backend": "ram", "size": "16M", "block_size": 4096}}]}
              ]
            }
            """.formatted(NQN);
        Files.writeString(dir.resolve("target.json"), json);
        ConnectOptions options = ConnectOptions.defaults().withIoQueues(1).withKeepAliveTimeout(Duration.ofSeconds(1))
            .withCommandTimeout(Duration.ofSeconds(5));
        try (TargetDaemon daemon = TargetDaemon.start(TargetConfig.load(dir.resolve("target.json")));
             NvmeofHost host = NvmeofHost.create(HostIdentity.generate(), 1);
             MultipathController mp = host.connectMultipath(List.of(address(daemon, 1), address(daemon, 2)), NQN,
                 options, IoPolicy.QUEUE_DEPTH)) {
            MultipathNamespace ns = mp.namespace(1);
            assertThat(ns.anaState(0)).isEqualTo(AnaState.OPTIMIZED);
            assertThat(ns.anaState(1)).isEqualTo(AnaState.NON_OPTIMIZED);

            AtomicReference<Throwable> failure = new AtomicReference<>();
            Semaphore window = new Semaphore(16);
            List<CompletableFuture<Void>> all = new ArrayList<>();
            int total = 3000;
            long[] onPath0AtChange = new long[1];
            for (int i = 0; i < total; i++) {
                assertThat(window.tryAcquire(30, TimeUnit.SECONDS)).as("a write completed within 30 s").isTrue();
                if (i == 1000) {
                    onPath0AtChange[0] = mp.pathStats().get(0).submitted();
                    daemon.setAnaState(1, 1, AnaState.INACCESSIBLE);
                }
                long lba = i % ns.blockCount();
                all.add(ns.write(lba, MultipathIT.pattern(lba, 5), false).whenComplete((v, e) -> {
                    window.release();
                    if (e != null) {
                        failure.compareAndSet(null, e);
                    }
                }));
            }
            CompletableFuture.allOf(all.toArray(new CompletableFuture[0])).handle((v, e) -> null)
                .get(30, TimeUnit.SECONDS);
            assertThat(failure.get()).as("no write failed: %s", mp.pathStats()).isNull();
            assertThat(ns.anaState(0)).as("the ANA change event and log").isEqualTo(AnaState.INACCESSIBLE);
            List<PathStats> s = mp.pathStats();
            assertThat(s.get(1).completed()).as("port 2 carried the writes after the change: %s", s)
                .isGreaterThanOrEqualTo(total - 1000);
            assertThat(s.get(0).submitted() - onPath0AtChange[0]).as("at most the window went to port 1 after: %s", s)
                .isLessThanOrEqualTo(16 + s.get(0).failedOver());
            ByteBuffer back = ByteBuffer.allocateDirect(ns.blockSize());
            for (long lba = 0; lba < Math.min(total, ns.blockCount()); lba++) {
                back.clear();
                ns.read(lba, back).get(30, TimeUnit.SECONDS);
                back.clear();
                assertThat(back).as("block %d", lba).isEqualTo(MultipathIT.pattern(lba, 5));
            }

            daemon.setAnaState(1, 1, AnaState.OPTIMIZED);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (ns.anaState(0) != AnaState.OPTIMIZED && System.nanoTime() < deadline) {
                Thread.sleep(10);
            }
            assertThat(ns.anaState(0)).as("optimized again (ANA change event)").isEqualTo(AnaState.OPTIMIZED);
            long before1 = mp.pathStats().get(1).submitted();
            for (long lba = 0; lba < 20; lba++) {
                ns.write(lba, MultipathIT.pattern(lba, 6), false).get(30, TimeUnit.SECONDS);
            }
            assertThat(mp.pathStats().get(1).submitted()).as("optimized port 1 preferred again")
                .isEqualTo(before1);
        }
    }

    private static TransportAddress address(TargetDaemon daemon, int portId) {
        for (Port p : daemon.model().ports()) {
            if (p.portId() == portId) {
                return TransportAddress.tcp("127.0.0.1", p.address().port());
            }
        }
        throw new IllegalStateException("no port " + portId);
    }
}
