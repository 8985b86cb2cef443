package io.nvmeof4j.jni.cpu;

import io.nvmeof4j.jni.Errno;
import io.nvmeof4j.jni.NativeIoException;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/** Real affinity calls on this machine (2 CPUs or more), read back through the kernel and /proc. */
class CpuAffinityTest {
    @BeforeEach
    void needsTwoCpus() throws Exception {
        assertThat(CpuAffinity.isAvailable()).as("%s", CpuAffinity.unavailabilityCause()).isTrue();
        assumeTrue(CpuAffinity.get(0).containsAll(CpuSet.of(0, 1)), "this process may run on CPUs 0 and 1");
    }

    static String cpusAllowedList(int tid) throws Exception {
        for (String line : Files.readAllLines(Path.of("/proc/self/task/" + tid + "/status"))) {
            if (line.startsWith("Cpus_allowed_list:")) {
                return line.substring("Cpus_allowed_list:".length()).trim();
            }
        }
        throw new AssertionError("no Cpus_allowed_list for thread " + tid);
    }

    @Test
    void shouldPinTheCallingThreadToCpu1AndReadItBack() throws Exception {
        AtomicReference<Object> seen = new AtomicReference<>();
        Thread t = new Thread(() -> {
            try {
                int tid = CpuAffinity.currentTid();
                CpuAffinity.set(0, CpuSet.of(1));
                seen.set(new Object[] {CpuAffinity.get(0), CpuAffinity.get(tid), cpusAllowedList(tid)});
            } catch (Throwable e) {
                seen.set(e);
            }
        }, "pin-me");
        t.start();
        t.join(10_000);
        assertThat(seen.get()).isInstanceOf(Object[].class);
        Object[] r = (Object[]) seen.get();
        assertThat(r[0]).isEqualTo(CpuSet.of(1));
        assertThat(r[1]).isEqualTo(CpuSet.of(1));
        assertThat(r[2]).isEqualTo("1");
    }

    @Test
    void shouldMoveAnotherThreadByTidAndFindItInTheThreadList() throws Exception {
        AtomicInteger tid = new AtomicInteger();
        CountDownLatch started = new CountDownLatch(1);
        CountDownLatch done = new CountDownLatch(1);
        Thread t = new Thread(() -> {
            tid.set(CpuAffinity.currentTid());
            started.countDown();
            try {
                done.await(10, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }, "move-me");
        t.start();
        try {
            assertThat(started.await(10, TimeUnit.SECONDS)).isTrue();
            assertThat(CpuAffinity.threads()).contains(new CpuAffinity.ThreadInfo(tid.get(), "move-me"));
            CpuAffinity.set(tid.get(), CpuSet.of(0));
            assertThat(CpuAffinity.get(tid.get())).isEqualTo(CpuSet.of(0));
            assertThat(cpusAllowedList(tid.get())).isEqualTo("0");
            CpuAffinity.set(tid.get(), CpuSet.parse("0-1", CpuAffinity.possibleCpus()));
            assertThat(cpusAllowedList(tid.get())).isEqualTo("0-1");
        } finally {
            done.countDown();
            t.join(10_000);
        }
    }

    @Test
    void shouldNameTheThreadAndErrnoWhenItHasEnded() throws Exception {
        AtomicInteger tid = new AtomicInteger();
        Thread t = new Thread(() -> tid.set(CpuAffinity.currentTid()), "gone");
        t.start();
        t.join(10_000);
        // A tid is not reused at once (pids cycle through pid_max first).
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        while (Files.exists(Path.of("/proc/self/task/" + tid.get())) && System.nanoTime() < deadline) {
            Thread.sleep(1);
        }
        assertThatThrownBy(() -> CpuAffinity.set(tid.get(), CpuSet.of(0)))
            .isInstanceOfSatisfying(NativeIoException.class, e -> assertThat(e.errno()).isEqualTo(Errno.ESRCH))
            .hasMessage("sched_setaffinity of thread " + tid.get() + " to CPUs 0 failed: ESRCH (errno 3)");
        assertThatThrownBy(() -> CpuAffinity.set(0, CpuSet.empty())).isInstanceOf(NativeIoException.class)
            .hasMessage("sched_setaffinity of thread 0 failed: EINVAL (errno 22) (no CPU given)");
    }

    @Test
    void shouldSizeMasksForTheMachine() throws Exception {
        assertThat(CpuAffinity.possibleCpus()).isGreaterThanOrEqualTo(2).isLessThanOrEqualTo(CpuSet.MAX_CPUS);
        int[] cpus = CpuAffinity.get(0).toArray();
        assertThat(cpus[cpus.length - 1]).isLessThan(CpuAffinity.possibleCpus());
    }
}
