package io.nvmeof4j.it.vm;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.slf4j.LoggerFactory;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The retry decision of {@link VmHarness#runGuestLayer}, with a fake in place of {@code run-guest.sh}: only a guest
 * kernel crash (exit 126) boots the layer once more, a second crash fails with both crash reports, and every other
 * result goes back to the caller after one boot. And the other half of the contract: the report
 * {@code run-guest.sh --crash-report} makes of a saved console log (no guest booted) is the one VmHarness reads.
 */
class GuestCrashRetryTest {
    /** What run-guest.sh prints for the 6.1 crash CI saw (its format; the console lines as the kernel prints them). */
    private static final List<String> CRASH = List.of(
        "[   95.223456] BUG: kernel NULL pointer dereference, address: 0000000000000190",
        "run-guest.sh: GUEST KERNEL CRASHED after 95s (exit 126): BUG: kernel NULL pointer dereference, address: "
            + "0000000000000190",
        "run-guest.sh: crash in: nvme_tcp_recv_skb+0x2a1/0x7c0 [nvme_tcp]",
        "run-guest.sh: the job's last step: PASS ha-two-daemons-one-subsystem",
        "run-guest.sh: | BUG: kernel NULL pointer dereference, address: 0000000000000190",
        "run-guest.sh: | Workqueue: nvme_tcp_wq nvme_tcp_io_work [nvme_tcp]",
        "run-guest.sh: | RIP: 0010:nvme_tcp_recv_skb+0x2a1/0x7c0 [nvme_tcp]",
        "run-guest.sh: | Call Trace:",
        "run-guest.sh: |  nvme_tcp_try_recv+0x65/0xa0 [nvme_tcp]",
        "run-guest.sh: |  nvme_tcp_io_work+0x5e/0xb0 [nvme_tcp]",
        "run-guest.sh: | Kernel panic - not syncing: Fatal exception");
    /** A crash in another function: a panic without RIP line (what the hand check's sysrq crash prints). */
    private static final List<String> PANIC = List.of(
        "run-guest.sh: GUEST KERNEL CRASHED after 9s (exit 126): Kernel panic - not syncing: sysrq triggered crash",
        "run-guest.sh: crash in: sysrq_handle_crash+0x16/0x20",
        "run-guest.sh: the job's last step: INFO crashing the kernel on purpose",
        "run-guest.sh: | Kernel panic - not syncing: sysrq triggered crash");

    private final ListAppender<ILoggingEvent> logged = new ListAppender<>();
    private final Logger harnessLogger = (Logger) LoggerFactory.getLogger(VmHarness.class);

    @BeforeEach
    void captureLog() {
        logged.start();
        harnessLogger.addAppender(logged);
    }

    @AfterEach
    void releaseLog() {
        harnessLogger.detachAppender(logged);
    }

    @Test
    void shouldBootOnceMoreAfterACrashAndReturnTheSecondBootsResult() throws Exception {
        FakeGuest guest = new FakeGuest(result(126, CRASH),
            result(0, List.of("PASS all", "SUMMARY: 1 passed, 0 failed")));

        VmHarness.Result r = VmHarness.runGuestLayer("LinuxKernelHostIT guest 1", guest);

        assertThat(r.exitCode()).isZero();
        assertThat(r.lines()).containsExactly("PASS all", "SUMMARY: 1 passed, 0 failed");
        assertThat(guest.attempts).containsExactly(1, 2);
        assertThat(logged.list).hasSize(1);
        ILoggingEvent warn = logged.list.get(0);
        assertThat(warn.getLevel()).isEqualTo(Level.WARN);
        assertThat(warn.getFormattedMessage()).isEqualTo("LinuxKernelHostIT guest 1: the guest kernel crashed in "
            + "nvme_tcp_recv_skb (BUG: kernel NULL pointer dereference, address: 0000000000000190); this is a retry: "
            + "booting the layer once more");
    }

    @Test
    void shouldFailWithBothCrashReportsWhenTheKernelCrashesTwice() {
        FakeGuest guest = new FakeGuest(result(126, CRASH), result(126, PANIC));

        assertThatThrownBy(() -> VmHarness.runGuestLayer("LinuxKernelHostIT guest 1", guest))
            .isInstanceOf(AssertionError.class)
            .hasMessageStartingWith("LinuxKernelHostIT guest 1: the guest kernel crashed in both boots, in "
                + "nvme_tcp_recv_skb and in sysrq_handle_crash\nfirst boot:\n" + String.join("\n", CRASH.subList(1,
                CRASH.size())) + "\nsecond boot:\n" + String.join("\n", PANIC));
        assertThat(guest.attempts).containsExactly(1, 2);
        assertThat(logged.list).extracting(ILoggingEvent::getLevel).containsExactly(Level.WARN);
    }

    @ParameterizedTest
    @ValueSource(ints = {0, 1, 2, 124, 125, 130, -1})
    void shouldNeverRetryAnythingButACrash(int exitCode) throws Exception {
        VmHarness.Result failed = result(exitCode, List.of("FAIL fio-verify: 3 verify errors"));
        FakeGuest guest = new FakeGuest(failed, result(0, List.of("PASS all")));

        assertThat(VmHarness.runGuestLayer("LinuxKernelHostIT guest 1", guest)).isSameAs(failed);
        assertThat(guest.attempts).containsExactly(1);
        assertThat(logged.list).isEmpty();
    }

    @Test
    void shouldNameTheCrashEvenWhenRunGuestPrintedNoReport() throws Exception {
        FakeGuest guest = new FakeGuest(result(126, List.of("console line")), result(126, List.of("other line")));

        assertThatThrownBy(() -> VmHarness.runGuestLayer("layer", guest))
            .hasMessageContaining("in an unnamed function and in an unnamed function")
            .hasMessageContaining("(no crash report; output tail:)\nconsole line")
            .hasMessageContaining("(no crash report; output tail:)\nother line");
        assertThat(logged.list.get(0).getFormattedMessage())
            .isEqualTo("layer: the guest kernel crashed in an unnamed function (no crash line); this is a retry: "
                + "booting the layer once more");
    }

    @Test
    void shouldKeepTheFirstBootsConsoleLogBesideTheSecond() {
        Path log = Path.of("/work/vm-it-1/guest-1.log");
        assertThat(VmHarness.attemptLog(log, 1)).isEqualTo(log);
        assertThat(VmHarness.attemptLog(log, 2)).isEqualTo(Path.of("/work/vm-it-1/guest-1-boot2.log"));
        assertThat(VmHarness.attemptLog(Path.of("console"), 2)).isEqualTo(Path.of("console-boot2.log"));
    }

    /** A 6.1 guest's console as the serial port gives it (CR stripped): job output, the oops, the replayed log. */
    private static final String OOPS_CONSOLE = """
        PASS ha-two-daemons-one-subsystem
        [   61.000000] watchdog: BUG: soft lockup - CPU#1 stuck for 23s! [fio:402]
        [   62.000000] BUG: workqueue lockup - pool cpus=0 node=0 flags=0x0 nice=0 stuck for 31s!
        INFO fio over both daemons; asking the host to SIGKILL daemon B
        [   95.101000] nvme nvme3: got bad c2hdata.command_id 0x3c1 on queue 2
        [   95.223456] BUG: kernel NULL pointer dereference, address: 0000000000000190
        [   95.223457] #PF: supervisor read access in kernel mode
        [   95.223460] Oops: 0000 [#1] PREEMPT SMP NOPTI
        [   95.223461] CPU: 1 PID: 211 Comm: kworker/1:1H Not tainted 6.1.0-56-amd64 #1  Debian 6.1.192-2
        [   95.223462] Hardware name: QEMU Standard PC (i440FX + PIIX, 1996)
        [   95.223463] Workqueue: nvme_tcp_wq nvme_tcp_io_work [nvme_tcp]
        [   95.223464] RIP: 0010:nvme_tcp_recv_skb+0x399/0xad9 [nvme_tcp]
        [   95.223466] RSP: 0018:ffffb0e0c0a3fd48 EFLAGS: 00010246
        [   95.223468] Call Trace:
        [   95.223469]  <TASK>
        [   95.223470]  ? __die+0x23/0x70
        [   95.223472]  tcp_read_sock+0xa1/0x2b0
        [   95.223473]  nvme_tcp_try_recv+0x65/0xa0 [nvme_tcp]
        [   95.223474]  nvme_tcp_io_work+0x5e/0xb0 [nvme_tcp]
        [   95.223477]  </TASK>
        [   95.223478] Modules linked in: nvme_tcp nvme_fabrics
        [   95.223480] ---[ end trace 0000000000000000 ]---
        [   95.223481] RIP: 0010:nvme_tcp_recv_skb+0x399/0xad9 [nvme_tcp]
        [   95.223482] Kernel panic - not syncing: Fatal exception
        [    0.000000] Linux version 6.1.0-56-amd64 (replayed by panic_print=0x20)
        [   95.223461] CPU: 1 PID: 211 Comm: kworker/1:1H Not tainted 6.1.0-56-amd64 #1  Debian 6.1.192-2
        [   95.223482] Kernel panic - not syncing: Fatal exception
        """;

    @Test
    void shouldReadTheFunctionFromRunGuestsReportOfAnOops(@TempDir Path dir) throws Exception {
        VmHarness.Result report = crashReport(dir, OOPS_CONSOLE);

        assertThat(report.exitCode()).as("output: %s", report.output()).isZero();
        assertThat(report.lines()).containsExactly(
            "run-guest.sh: GUEST KERNEL CRASHED (console log " + dir.resolve("console.log") + "): BUG: kernel NULL "
                + "pointer dereference, address: 0000000000000190",
            "run-guest.sh: crash in: nvme_tcp_recv_skb+0x399/0xad9 [nvme_tcp]",
            "run-guest.sh: the job's last step: INFO fio over both daemons; asking the host to SIGKILL daemon B",
            "run-guest.sh: | BUG: kernel NULL pointer dereference, address: 0000000000000190",
            "run-guest.sh: | Oops: 0000 [#1] PREEMPT SMP NOPTI",
            "run-guest.sh: | CPU: 1 PID: 211 Comm: kworker/1:1H Not tainted 6.1.0-56-amd64 #1  Debian 6.1.192-2",
            "run-guest.sh: | Workqueue: nvme_tcp_wq nvme_tcp_io_work [nvme_tcp]",
            "run-guest.sh: | RIP: 0010:nvme_tcp_recv_skb+0x399/0xad9 [nvme_tcp]",
            "run-guest.sh: | Call Trace:",
            "run-guest.sh: |  <TASK>",
            "run-guest.sh: |  ? __die+0x23/0x70",
            "run-guest.sh: |  tcp_read_sock+0xa1/0x2b0",
            "run-guest.sh: |  nvme_tcp_try_recv+0x65/0xa0 [nvme_tcp]",
            "run-guest.sh: |  nvme_tcp_io_work+0x5e/0xb0 [nvme_tcp]",
            "run-guest.sh: |  </TASK>",
            "run-guest.sh: | Kernel panic - not syncing: Fatal exception");
        assertThat(VmHarness.crashFunction(report)).isEqualTo("nvme_tcp_recv_skb");
        assertThat(VmHarness.crashText(report)).isEqualTo(report.output());
    }

    @Test
    void shouldNameTheFunctionThatPanickedWhenThereIsNoRipLine(@TempDir Path dir) throws Exception {
        VmHarness.Result report = crashReport(dir, """
            INFO crashing the kernel on purpose
            [   12.100000] sysrq: Trigger a crash
            [   12.100001] Kernel panic - not syncing: sysrq triggered crash
            [   12.100002] CPU: 0 PID: 301 Comm: bash Not tainted 6.1.0-56-amd64 #1  Debian 6.1.192-2
            [   12.100004] Call Trace:
            [   12.100005]  <TASK>
            [   12.100006]  dump_stack_lvl+0x44/0x5c
            [   12.100007]  panic+0x118/0x2ed
            [   12.100008]  sysrq_handle_crash+0x16/0x20
            [   12.100011]  </TASK>
            [   12.100012] Kernel Offset: 0x1000000 from 0xffffffff81000000
            [   12.100001] Kernel panic - not syncing: sysrq triggered crash
            """);

        assertThat(report.exitCode()).as("output: %s", report.output()).isZero();
        assertThat(report.lines()).contains("run-guest.sh: crash in: sysrq_handle_crash+0x16/0x20",
            "run-guest.sh: the job's last step: INFO crashing the kernel on purpose");
        assertThat(report.lines()).filteredOn(l -> l.contains("Kernel panic")).hasSize(2); // headline + first line
        assertThat(VmHarness.crashFunction(report)).isEqualTo("sysrq_handle_crash");
    }

    @Test
    void shouldFindNoCrashInAConsoleWithoutOne(@TempDir Path dir) throws Exception {
        VmHarness.Result report = crashReport(dir, "PASS all\nINFO BUG: in the job's own words is no crash\n"
            + "[   61.000000] watchdog: BUG: soft lockup - CPU#1 stuck for 23s! [fio:402]\n"
            + "[   62.000000] BUG: workqueue lockup - pool cpus=0 node=0 flags=0x0 nice=0 stuck for 31s!\n"
            + "NVMEOF4J-GUEST-EXIT=0\n");

        assertThat(report.exitCode()).isEqualTo(1);
        assertThat(report.lines()).isEmpty();
    }

    private static VmHarness.Result crashReport(Path dir, String console) throws Exception {
        Path log = dir.resolve("console.log");
        Files.writeString(log, console);
        return VmHarness.run(List.of(VmHarness.vmDir().resolve("run-guest.sh").toString(), "--crash-report",
            log.toString()), java.util.Map.of(), Duration.ofSeconds(30), "[crash-report] ", null);
    }

    private static VmHarness.Result result(int exitCode, List<String> lines) {
        return new VmHarness.Result(exitCode, lines, exitCode == -1);
    }

    /** Answers each boot with the next prepared result and records the attempt numbers it was given. */
    private static final class FakeGuest implements VmHarness.GuestAttempt {
        private final Deque<VmHarness.Result> results;
        private final List<Integer> attempts = new ArrayList<>();

        FakeGuest(VmHarness.Result... results) {
            this.results = new ArrayDeque<>(List.of(results));
        }

        @Override
        public VmHarness.Result run(int attempt) {
            attempts.add(attempt);
            return results.removeFirst();
        }
    }
}
