package io.nvmeof4j.tcp;

import io.nvmeof4j.protocol.spi.ConnectionLimits;
import io.nvmeof4j.protocol.spi.PendingConnections;
import io.nvmeof4j.protocol.spi.PortOptions;
import org.junit.jupiter.api.Test;

import java.io.FileInputStream;
import java.lang.management.BufferPoolMXBean;
import java.lang.management.ManagementFactory;
import java.net.InetSocketAddress;
import java.nio.channels.SocketChannel;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/** The listener's pre-Connect limits and its accept() failure handling, with real sockets on 127.0.0.1. */
class TcpListenerLimitsTest {
    private static final long IDLE_WAIT_MILLIS = TimeUnit.NANOSECONDS.toMillis(PendingConnections.IDLE_WAIT_NANOS);

    @Test
    void shouldBackOffInsteadOfSpinningWhenAcceptRunsOutOfFileDescriptors() throws Exception {
        try (TargetFixture target = new TargetFixture(1)) {
            TcpListener listener = (TcpListener) target.listener;
            try (RawHost warmUp = target.host()) { // loads every class of the path before fds run out
                warmUp.initializeAndConnect(0, 0, 32, false);
            }
            List<FileInputStream> hogs = new ArrayList<>();
            RawHost host;
            try {
                try {
                    while (true) {
                        hogs.add(new FileInputStream("/dev/null"));
                    }
                } catch (IOException e) {
                    assertThat(e.getMessage()).contains("Too many open files");
                }
                hogs.remove(hogs.size() - 1).close(); // one fd for the host's socket; none left for accept()
                host = target.host();
                long start = System.nanoTime();
                Thread.sleep(1_250);
                long failures = listener.acceptFailures();
                // Backing off 10, 20, 40 ... ms: about 7 attempts in 1.5 s. Spinning would make hundreds of thousands.
                assertThat(failures).as("accept() failures in %d ms",
                    TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start)).isBetween(1L, 12L);
            } finally {
                for (FileInputStream hog : hogs) {
                    hog.close();
                }
            }
            // Descriptors are back: the connection that waited in the backlog is accepted within the 1 s backoff cap.
            try (host) {
                host.initializeAndConnect(0, 0, 32, false);
            }
            assertThat(listener.pendingCount()).isZero();
        }
    }

    @Test
    void shouldHoldLittleMemoryForSocketsThatNeverSendICReq() throws Exception {
        try (TargetFixture target = new TargetFixture(1)) {
            TcpListener listener = (TcpListener) target.listener;
            BufferPoolMXBean direct = ManagementFactory.getPlatformMXBeans(BufferPoolMXBean.class).stream()
                .filter(b -> b.getName().equals("direct")).findFirst().orElseThrow();
            long before = direct.getMemoryUsed();
            List<SocketChannel> idle = new ArrayList<>();
            try {
                for (int i = 0; i < 250; i++) {
                    idle.add(SocketChannel.open(new InetSocketAddress("127.0.0.1", target.address().port())));
                }
                TargetFixture.eventually("250 connections taken by the reactor",
                    () -> target.groups.get(0).connectionCount() == 250);
                long perSocket = (direct.getMemoryUsed() - before) / 250;
                // The full receive buffer (64 KiB) comes with ICReq; before it, a few hundred bytes (the bound leaves
                // room for other direct allocations of the JVM meanwhile, e.g. a pool slab).
                assertThat(perSocket).as("direct bytes per idle socket").isLessThan(16_384);
                assertThat(listener.pendingCount()).isEqualTo(250);
            } finally {
                for (SocketChannel ch : idle) {
                    ch.close();
                }
            }
            TargetFixture.eventually("idle sockets closed", () -> target.groups.get(0).connectionCount() == 0);
            assertThat(listener.pendingCount()).isZero();
        }
    }

    @Test
    void shouldCloseAConnectionThatSendsICReqButNoConnectWithinTheTimeout() throws Exception {
        PortOptions port = PortOptions.defaults().withConnectionLimits(
            new ConnectionLimits(8, 8, TimeUnit.MILLISECONDS.toNanos(1_000)));
        try (TargetFixture target = new TargetFixture(1, 1 << 20, 64L << 20, port, TcpTransportOptions.defaults());
             RawHost connected = target.host()) {
            TcpListener listener = (TcpListener) target.listener;
            connected.initializeAndConnect(0, 0, 32, false);
            long start = System.nanoTime();
            TargetFixture.eventually("an idle acceptor waiting for the idle wait, not a sweep grain",
                () -> listener.acceptWaitMillis() == IDLE_WAIT_MILLIS);
            RawHost icReqOnly = target.host();
            TargetFixture.eventually("the acceptor waiting for the new connection's deadline",
                () -> listener.acceptWaitMillis() <= 1_000);
            icReqOnly.initialize(0, 0);
            assertThat(icReqOnly.closedByTarget()).as("ICReq-only connection closed").isTrue();
            assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start)).as("ms to the close")
                .isBetween(900L, 3_000L);
            assertThat(listener.pendingCount()).isZero();
            assertThat(target.handlers.refusals()).containsExactly("CONNECT_TIMEOUT");
            TargetFixture.eventually("the acceptor back to its idle wait",
                () -> listener.acceptWaitMillis() == IDLE_WAIT_MILLIS);
            // The connected queue outlives the timeout.
            Thread.sleep(400);
            assertThat(target.groups.get(0).connectionCount()).isEqualTo(1);
            icReqOnly.close();
        }
    }
}
