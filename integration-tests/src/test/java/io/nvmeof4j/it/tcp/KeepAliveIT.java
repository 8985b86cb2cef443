package io.nvmeof4j.it.tcp;

import io.nvmeof4j.protocol.command.NvmeStatus;
import org.junit.jupiter.api.Test;

import java.time.Duration;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Keep-alive (wire reference 2.9): missing traffic for KATO tears the controller down, all its queues with it;
 * Keep Alive more often than KATO keeps it.
 */
class KeepAliveIT extends SharedTestTarget {
    static final int KATO_MS = 1000;
    /** How long after KATO expiry the teardown may take (timer granularity, reactor latency). */
    static final Duration TEARDOWN_SLACK = Duration.ofSeconds(4);

    @Test
    void shouldTearDownASilentControllerWithAllItsQueues() throws Exception {
        HostIdentity host = HostIdentity.random();
        long connectSent = System.nanoTime();
        try (RawNvmeTcpHost admin = Sessions.enabledAdmin(target.ioPort(), TestTarget.NQN_A, host, KATO_MS)) {
            Sessions.requestIoQueues(admin, 1);
            try (RawNvmeTcpHost io = Sessions.ioQueue(target.ioPort(), TestTarget.NQN_A, host, 1, admin.cntlid())) {
                long lastCommand = System.nanoTime();
                RawNvmeTcpHost.PeerClose adminClose = admin.awaitPeerClose(Duration.ofMillis(KATO_MS).plus(TEARDOWN_SLACK));
                long closedAt = System.nanoTime();
                assertThat(adminClose.closed()).as("admin connection closed by the target within KATO + %d ms (%s)",
                    TEARDOWN_SLACK.toMillis(), adminClose.how()).isTrue();
                assertThat((closedAt - connectSent) / 1_000_000).as("ms from the admin Connect to the teardown")
                    .isGreaterThanOrEqualTo(KATO_MS - 100);
                assertThat((closedAt - lastCommand) / 1_000_000).as("ms from the last command to the teardown")
                    .isLessThanOrEqualTo(KATO_MS + TEARDOWN_SLACK.toMillis());
                RawNvmeTcpHost.PeerClose ioClose = io.awaitPeerClose(Duration.ofSeconds(3));
                assertThat(ioClose.closed()).as("I/O queue of the expired controller closed (%s)", ioClose.how()).isTrue();
            }
        }
        Sessions.assertServing(target);
    }

    /**
     * CTRATT bit 6 (TBKAS): any command restarts the keep-alive timer, and the Linux host then skips Keep Alive
     * while commands complete. A controller advertising it must not expire one that only does I/O.
     */
    @Test
    void shouldKeepABusyControllerWithoutKeepAliveWhenAdvertisingTbkas() throws Exception {
        HostIdentity host = HostIdentity.random();
        try (RawNvmeTcpHost admin = Sessions.enabledAdmin(target.ioPort(), TestTarget.NQN_A, host, KATO_MS)) {
            Completion id = admin.identify(1, 0);
            assertThat(id.status()).isEqualTo(NvmeStatus.SUCCESS);
            long ctratt = Bytes.u32(id.data(), 96);
            assertThat(ctratt & (1 << 6)).as("CTRATT bit 6 (TBKAS) advertised").isNotZero();
            Sessions.requestIoQueues(admin, 1);
            try (RawNvmeTcpHost io = Sessions.ioQueue(target.ioPort(), TestTarget.NQN_A, host, 1, admin.cntlid())) {
                long end = System.nanoTime() + Duration.ofMillis(3 * KATO_MS + 500).toNanos();
                int reads = 0;
                while (System.nanoTime() < end && reads < 40) {
                    Completion r = io.read(1, 0, 1, 512);
                    assertThat(r.status()).as("read %d with I/O as the only traffic %s", reads, r).isEqualTo(NvmeStatus.SUCCESS);
                    reads++;
                    Thread.sleep(200);
                }
                assertThat(reads).as("reads over 3 x KATO").isGreaterThanOrEqualTo(10);
                assertThat(admin.keepAlive().status()).as("admin queue alive after 3 x KATO of I/O only")
                    .isEqualTo(NvmeStatus.SUCCESS);
            }
        }
    }

    @Test
    void shouldKeepAControllerThatSendsKeepAliveEvery400Ms() throws Exception {
        HostIdentity host = HostIdentity.random();
        try (RawNvmeTcpHost admin = Sessions.enabledAdmin(target.ioPort(), TestTarget.NQN_A, host, KATO_MS)) {
            Sessions.requestIoQueues(admin, 1);
            try (RawNvmeTcpHost io = Sessions.ioQueue(target.ioPort(), TestTarget.NQN_A, host, 1, admin.cntlid())) {
                long start = System.nanoTime();
                long end = start + Duration.ofMillis(3 * KATO_MS + 500).toNanos();
                int sent = 0;
                for (long next = start; next < end && sent < 20; next += Duration.ofMillis(400).toNanos()) {
                    long wait = next - System.nanoTime();
                    if (wait > 0) {
                        Thread.sleep(wait / 1_000_000, (int) (wait % 1_000_000));
                    }
                    Completion ka = admin.keepAlive();
                    assertThat(ka.status()).as("Keep Alive %d at %d ms %s", sent, (System.nanoTime() - start) / 1_000_000, ka)
                        .isEqualTo(NvmeStatus.SUCCESS);
                    sent++;
                }
                assertThat(sent).as("Keep Alives sent over 3 x KATO").isGreaterThanOrEqualTo(8);
                assertThat(admin.identify(1, 0).status()).as("admin queue alive after 3 x KATO").isEqualTo(NvmeStatus.SUCCESS);
                Completion r = io.read(1, 0, 1, 512);
                assertThat(r.status()).as("I/O queue alive after 3 x KATO %s", r).isEqualTo(NvmeStatus.SUCCESS);
                assertThat(admin.awaitPeerClose(Duration.ofMillis(200)).closed()).as("admin connection still open").isFalse();
            }
        }
    }
}
