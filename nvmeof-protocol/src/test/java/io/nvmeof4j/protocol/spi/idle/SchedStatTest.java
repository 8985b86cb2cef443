package io.nvmeof4j.protocol.spi.idle;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

class SchedStatTest {
    @Test
    void shouldReadAnotherThreadsRunDelayThroughItsFile() throws Exception {
        Path[] file = new Path[1];
        Thread t = new Thread(() -> file[0] = SchedStat.threadFile());
        t.start();
        t.join(5000);
        Assumptions.assumeTrue(file[0] != null, "no /proc/thread-self/schedstat on this kernel");
        assertThat(file[0].toString()).startsWith("/proc/" + ProcessHandle.current().pid() + "/task/")
            .endsWith("/schedstat");
        assertThat(SchedStat.runDelayNanosOf(file[0])).as("the ended thread's file is gone").isEqualTo(-1);
        Path own = SchedStat.threadFile();
        assertThat(SchedStat.runDelayNanosOf(own)).isNotNegative();
        Path malformed = Files.createTempFile("schedstat", "");
        try {
            Files.writeString(malformed, "12345\n");
            assertThat(SchedStat.runDelayNanosOf(malformed)).as("one field").isEqualTo(-1);
            Files.writeString(malformed, "1 2 3\n");
            assertThat(SchedStat.runDelayNanosOf(malformed)).isEqualTo(2);
        } finally {
            Files.delete(malformed);
        }
    }

    @Test
    void shouldReadItsThreadsRunDelayWithoutAllocating() throws Exception {
        SchedStat stat = SchedStat.open();
        Assumptions.assumeTrue(stat != null, "no /proc/thread-self/schedstat on this kernel");
        try (stat) {
            long first = stat.runDelayNanos();
            assertThat(first).isNotNegative();
            // Make this thread wait for a CPU at least a little: more runnable threads than CPUs, briefly.
            int cpus = Runtime.getRuntime().availableProcessors();
            List<Thread> hogs = new ArrayList<>();
            long until = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(200);
            for (int i = 0; i < cpus * 2; i++) {
                Thread t = new Thread(() -> {
                    while (System.nanoTime() - until < 0) {
                        Thread.onSpinWait();
                    }
                });
                t.start();
                hogs.add(t);
            }
            while (System.nanoTime() - until < 0) {
                Thread.onSpinWait();
            }
            for (Thread t : hogs) {
                t.join(5000);
            }
            assertThat(stat.read()).isTrue();
            assertThat(stat.runDelayNanos()).as("run delay after competing for the CPUs").isGreaterThan(first);
        }
    }
}
