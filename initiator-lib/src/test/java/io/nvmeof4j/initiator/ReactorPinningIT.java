package io.nvmeof4j.initiator;

import io.nvmeof4j.jni.cpu.CpuAffinity;
import io.nvmeof4j.jni.cpu.CpuSet;
import io.nvmeof4j.target.config.TargetConfig;
import io.nvmeof4j.target.daemon.TargetDaemon;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The daemon with {@code nvmeof4j.reactor_cpus} "1" in this JVM (TargetDaemonIT's way): its reactor thread runs on
 * CPU 1 alone, every other thread of the process (the JVM's own, the test's, the host's made later) on CPU 0, I/O
 * is served, and closing the daemon gives every thread both CPUs again. Read from /proc/self/task, as an operator
 * would (Cpus_allowed_list), not from the code that set it.
 */
public class ReactorPinningIT {
    private static final String NQN = "nqn.2014-08.io.nvmeof4j:pinning-test";

    @TempDir
    Path dir;

    @BeforeEach
    void needsCpus0And1() throws Exception {
        assertThat(CpuAffinity.isAvailable()).as("%s", CpuAffinity.unavailabilityCause()).isTrue();
        assumeTrue(CpuAffinity.get((int) ProcessHandle.current().pid()).containsAll(CpuSet.of(0, 1)),
            "this JVM may run on CPUs 0 and 1");
    }

    /** Every thread of this process: "comm (tid)" → its Cpus_allowed_list. */
    public static Map<String, String> affinities() throws Exception {
        Map<String, String> all = new LinkedHashMap<>();
        for (CpuAffinity.ThreadInfo t : CpuAffinity.threads()) {
            try {
                for (String line : Files.readAllLines(Path.of("/proc/self/task/" + t.tid() + "/status"))) {
                    if (line.startsWith("Cpus_allowed_list:")) {
                        all.put(t.name() + " (" + t.tid() + ")", line.substring(line.indexOf(':') + 1).trim());
                    }
                }
            } catch (NoSuchFileException ended) {
                // ended meanwhile
            }
        }
        return all;
    }

    /** The comm of a thread named {@code name} (Linux keeps 15 bytes of it). */
    static String comm(String name) {
        return name.length() > 15 ? name.substring(0, 15) : name;
    }

    static Map<String, String> named(Map<String, String> all, String name) {
        Map<String, String> found = new LinkedHashMap<>();
        all.forEach((k, v) -> {
            if (k.startsWith(comm(name) + " (")) {
                found.put(k, v);
            }
        });
        return found;
    }

    @Test
    void shouldPinTheReactorToCpu1AndEveryOtherThreadToCpu0ThenServeIo() throws Exception {
        String json = """
            {"nvmeof4j": {"reactor_cpus": "1", "buffer_pool_mib": 4, "http": "off", "shutdown_timeout_ms": 1000},
             "ports": [{"portid": 1, "addr": {"trtype": "tcp", "adrfam": "ipv4", "traddr": "127.0.0.1",
                        "trsvcid": "0"}, "subsystems": ["%s"]}],
             "subsystems": [{"nqn": "%s", "attr": {"allow_any_host": "1"},
                             "namespaces": [{"nsid": 1, "device": {"backend": "ram", "size": "16M"}}]}]}
            """.formatted(NQN, NQN);
        Map<String, String> before = affinities();
        try (TargetDaemon daemon = TargetDaemon.start(TargetConfig.parse(json, dir))) {
            Map<String, String> pinned = affinities();
            assertThat(named(pinned, "nvmeof-reactor-0")).as("%s", pinned).hasSize(1).containsValue("1");
            assertThat(named(pinned, "VM Thread")).as("%s", pinned).isNotEmpty().allSatisfy((k, v) ->
                assertThat(v).isEqualTo("0"));
            assertThat(named(pinned, "C2 CompilerThread0")).as("%s", pinned).isNotEmpty().allSatisfy((k, v) ->
                assertThat(v).isEqualTo("0"));
            assertThat(CpuAffinity.get(0)).as("this (the test's) thread").isEqualTo(CpuSet.of(0));

            try (NvmeofHost host = NvmeofHost.create(HostIdentity.generate(), 1);
                 NvmeofController ctrl = host.connect(daemon.listenAddresses().get(0), NQN,
                     ConnectOptions.defaults().withIoQueues(1))) {
                NvmeofNamespace ns = ctrl.namespace(1);
                ByteBuffer data = Bytes.random(128 << 10, 17);
                ns.write(64, data).get(20, TimeUnit.SECONDS);
                ByteBuffer back = ns.read(64, (128 << 10) / ns.blockSize()).get(20, TimeUnit.SECONDS);
                assertThat(Bytes.array(back)).isEqualTo(Bytes.array(data));

                // Threads made since (the host's reactor, the keep-alive timer a Connect on the reactor started):
                // on CPU 0 too; only the daemon's reactor is on CPU 1.
                Map<String, String> serving = affinities();
                assertThat(named(serving, "nvmeof-keep-alive")).as("%s", serving).isNotEmpty();
                assertThat(named(serving, "nvmeof-host-reactor-0")).as("%s", serving).isNotEmpty();
                Map<String, String> others = new LinkedHashMap<>(serving);
                others.keySet().removeAll(named(serving, "nvmeof-reactor-0").keySet());
                assertThat(others).as("every thread but the reactor").allSatisfy((k, v) -> assertThat(v).isEqualTo("0"));
                assertThat(named(serving, "nvmeof-reactor-0")).containsValue("1");
            }
        }
        Map<String, String> after = affinities();
        assertThat(named(after, "nvmeof-reactor-0")).as("stopped").isEmpty();
        assertThat(named(after, "VM Thread")).allSatisfy((k, v) -> assertThat(v).isEqualTo(before.get(k)));
        assertThat(CpuAffinity.get(0)).as("restored on close").isEqualTo(CpuSet.of(0, 1));
    }
}
