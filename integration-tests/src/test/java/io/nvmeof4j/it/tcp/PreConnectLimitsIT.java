package io.nvmeof4j.it.tcp;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import io.nvmeof4j.protocol.spi.PendingConnections.Refusal;
import io.nvmeof4j.protocol.spi.TransportType;
import io.nvmeof4j.target.metrics.TargetMetrics;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Pre-Connect limits on an NVMe/TCP port of the in-JVM daemon, with real sockets on 127.0.0.0/8: idle sockets
 * (no ICReq) and ICReq-only connections from distinct peer addresses (127.0.0.2, 127.0.0.3, ...), a real host from
 * 127.0.0.1 doing I/O meanwhile; the refusal meter, the log lines and the process's open file descriptors.
 */
class PreConnectLimitsIT {
    private static final String LISTENER_LOGGER = "io.nvmeof4j.tcp.TcpListener";
    private static final long WAIT_MILLIS = 15_000;

    @TempDir
    Path dir;

    private TestTarget target;
    private final List<SocketChannel> clients = new ArrayList<>();
    private ListAppender<ILoggingEvent> appender;

    @AfterEach
    void tearDown() {
        closeClients();
        if (appender != null) {
            ((Logger) LoggerFactory.getLogger(LISTENER_LOGGER)).detachAppender(appender);
        }
        if (target != null) {
            target.close();
        }
    }

    @Test
    void shouldKeepAtMostTheCapsOpenUnderAFloodOfIdleSocketsWhileARealHostDoesIo() throws Exception {
        long baselineFds = openFds();
        target = TestTarget.start(dir, """
            "max_pending_connections": 64, "max_pending_connections_per_host": 16, "connect_timeout_ms": 60000""");
        long withDaemonFds = openFds();

        // 1,000 idle sockets: 500 from 127.0.0.10, which trips its own cap (16), then 500 round-robin from
        // 127.0.0.11..19, which stay under theirs but together trip the port's (64).
        for (int i = 0; i < 1000; i++) {
            clients.add(idleSocket(i < 500 ? 10 : 11 + i % 9, target.ioPort()));
            if (i == 500) {
                Sessions.assertServing(target); // a real host mid-flood: ICReq, Connect, write, read back
            }
        }
        Sessions.assertServing(target);

        waitFor(() -> openClients() <= 64, "at most 64 of the 1,000 idle sockets left open");
        int open = openClients();
        assertThat(open).as("idle sockets still open").isBetween(1, 64);
        for (int a = 0; a < 10; a++) {
            assertThat(openClientsFrom(10 + a)).as("idle sockets of 127.0.0.%d still open", 10 + a)
                .isLessThanOrEqualTo(16);
        }
        TargetMetrics metrics = target.daemon().metrics();
        double hostLimit = metrics.connectionsRefused(TransportType.TCP, Refusal.HOST_LIMIT);
        double portLimit = metrics.connectionsRefused(TransportType.TCP, Refusal.PORT_LIMIT);
        assertThat(hostLimit).as("refused at the per-host cap").isGreaterThan(0);
        assertThat(portLimit).as("closed at the port cap (oldest first)").isGreaterThan(0);
        assertThat(hostLimit + portLimit).as("refusals counted = idle sockets closed").isEqualTo(1000 - open);
        assertThat(target.daemon().metrics().scrape()).contains("nvmeof_target_connections_refused_total{");

        closeClients();
        waitFor(() -> openFds() <= withDaemonFds + 2, "open fds back to the daemon's baseline " + withDaemonFds);
        target.close();
        waitFor(() -> openFds() <= baselineFds + 2, "open fds back to the baseline " + baselineFds
            + " after the daemon stopped");
    }

    @Test
    void shouldRefuseNewConnectionsOfAnAddressAtItsCapButNotOtherAddresses() throws Exception {
        target = TestTarget.start(dir, """
            "max_pending_connections": 1024, "max_pending_connections_per_host": 16, "connect_timeout_ms": 60000""");
        List<SocketChannel> fromTwo = new ArrayList<>();
        for (int i = 0; i < 100; i++) {
            fromTwo.add(idleSocket(2, target.ioPort()));
        }
        clients.addAll(fromTwo);
        waitFor(() -> openClientsFrom(2) == 16, "16 sockets of 127.0.0.2 open");
        // The first 16 stay: the cap refuses the new ones of that address, not its oldest.
        for (int i = 0; i < fromTwo.size(); i++) {
            assertThat(isOpen(fromTwo.get(i))).as("socket %d of 127.0.0.2 open", i).isEqualTo(i < 16);
        }
        for (int i = 0; i < 16; i++) {
            clients.add(idleSocket(3, target.ioPort()));
        }
        Thread.sleep(300);
        assertThat(openClientsFrom(3)).as("127.0.0.3 has its own budget").isEqualTo(16);
        assertThat(target.daemon().metrics().connectionsRefused(TransportType.TCP, Refusal.HOST_LIMIT))
            .isEqualTo(84.0);
        Sessions.assertServing(target);
    }

    @Test
    void shouldCloseConnectionsThatSendNoICReqOrNoConnectWithinTheTimeout() throws Exception {
        target = TestTarget.start(dir, """
            "connect_timeout_ms": 2000""");
        // A host that connects properly (well within the timeout, even on a loaded machine) must outlive it.
        HostIdentity host = HostIdentity.random();
        try (RawNvmeTcpHost admin = Sessions.enabledAdmin(target.ioPort(), TestTarget.NQN_A, host,
            Sessions.KATO_MS)) {
            long start = System.nanoTime();
            for (int i = 0; i < 10; i++) {
                clients.add(idleSocket(4, target.ioPort()));
            }
            // ICReq answered, then nothing: the Linux host would send Connect right after ICResp.
            try (RawNvmeTcpHost icReqOnly = RawNvmeTcpHost.connect(target.ioPort(), false, false)) {
                waitFor(() -> openClientsFrom(4) == 0, "idle sockets closed after connect_timeout_ms");
                long waitedMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
                assertThat(waitedMillis).as("closed at the timeout, not before, not long after")
                    .isBetween(1_900L, 5_000L);
                RawNvmeTcpHost.PeerClose close = icReqOnly.awaitPeerClose(java.time.Duration.ofSeconds(3));
                assertThat(close.closed()).as("ICReq-only connection closed by the target: %s", close).isTrue();
            }
            assertThat(target.daemon().metrics().connectionsRefused(TransportType.TCP, Refusal.CONNECT_TIMEOUT))
                .isEqualTo(11.0);
            Completion id = admin.identify(1, 0);
            assertThat(id.status()).as("Identify Controller on the connected admin queue after the timeout")
                .isEqualTo(0);
        }
    }

    @Test
    void shouldLogRefusalsBoundedWithTheSuppressedCount() throws Exception {
        target = TestTarget.start(dir, """
            "max_pending_connections_per_host": 4, "connect_timeout_ms": 60000""");
        Logger logger = (Logger) LoggerFactory.getLogger(LISTENER_LOGGER);
        Thread.sleep(1_100); // a previous test's budget for these keys has passed
        appender = new ListAppender<>();
        appender.start();
        logger.addAppender(appender);

        long start = System.nanoTime();
        for (int i = 0; i < 400; i++) {
            clients.add(idleSocket(5, target.ioPort()));
        }
        waitFor(() -> target.daemon().metrics().connectionsRefused(TransportType.TCP, Refusal.HOST_LIMIT) == 396,
            "396 refusals counted");
        long seconds = TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - start);
        List<ILoggingEvent> lines = refusalLines();
        assertThat(lines.size()).as("refusal lines for 396 refusals in %d s", seconds).isBetween(1, (int) seconds + 2);
        assertThat(lines).allSatisfy(e -> assertThat(e.getThrowableProxy()).as("stack trace").isNull());

        Thread.sleep(1_100);
        clients.add(idleSocket(5, target.ioPort())); // one more refusal: its line reports the others
        waitFor(() -> refusalLines().size() > lines.size(), "a line after the interval");
        String last = refusalLines().get(refusalLines().size() - 1).getFormattedMessage();
        assertThat(suppressedCount(last)).as("suppressed count in %s", last).isPositive();
        // Every refusal of the flood is a line or counted in a later line's "[N similar suppressed]" (a key sharing
        // the slot could add to a count, never take from it).
        long accounted = lines.size() + suppressedCount(last);
        for (ILoggingEvent line : lines) {
            accounted += suppressedCount(line.getFormattedMessage());
        }
        assertThat(accounted).as("lines + suppressed vs 396 refusals").isGreaterThanOrEqualTo(396);
    }

    // ---- helpers ---------------------------------------------------------------------------------------------------

    private static long suppressedCount(String line) {
        Matcher m = Pattern.compile("\\[(\\d+) similar suppressed]").matcher(line);
        return m.find() ? Long.parseLong(m.group(1)) : 0;
    }

    private List<ILoggingEvent> refusalLines() {
        List<ILoggingEvent> out = new ArrayList<>();
        for (ILoggingEvent e : new ArrayList<>(appender.list)) {
            if (e.getFormattedMessage().contains("127.0.0.5") && e.getFormattedMessage().contains("refused")) {
                out.add(e);
            }
        }
        return out;
    }

    /** A connected socket from 127.0.0.{@code host} that never sends a byte. */
    private static SocketChannel idleSocket(int host, InetSocketAddress target) throws IOException {
        SocketChannel ch = SocketChannel.open();
        try {
            ch.bind(new InetSocketAddress("127.0.0." + host, 0));
            ch.socket().connect(target, 5_000);
            ch.configureBlocking(false);
            return ch;
        } catch (IOException | RuntimeException e) {
            ch.close();
            throw e;
        }
    }

    /** True while the daemon keeps the socket: a read sees neither EOF nor a reset. */
    private static boolean isOpen(SocketChannel ch) {
        if (!ch.isOpen()) {
            return false;
        }
        try {
            return ch.read(ByteBuffer.allocate(1)) == 0;
        } catch (IOException e) {
            return false;
        }
    }

    private int openClients() {
        return (int) clients.stream().filter(PreConnectLimitsIT::isOpen).count();
    }

    private int openClientsFrom(int host) {
        String address = "127.0.0." + host;
        int n = 0;
        for (SocketChannel ch : clients) {
            try {
                if (ch.isOpen() && ((InetSocketAddress) ch.getLocalAddress()).getAddress().getHostAddress()
                    .equals(address) && isOpen(ch)) {
                    n++;
                }
            } catch (IOException e) {
                // closed meanwhile: not open
            }
        }
        return n;
    }

    private void closeClients() {
        for (SocketChannel ch : clients) {
            try {
                ch.close();
            } catch (IOException ignored) {
                // the test is done with it
            }
        }
        clients.clear();
    }

    private static long openFds() throws IOException {
        try (Stream<Path> fds = Files.list(Path.of("/proc/self/fd"))) {
            return fds.count();
        }
    }

    private static void waitFor(BooleanSupplierWithIo condition, String what) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(WAIT_MILLIS);
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() - deadline > 0) {
                throw new AssertionError("not within " + WAIT_MILLIS + " ms: " + what);
            }
            Thread.sleep(20);
        }
    }

    @FunctionalInterface
    private interface BooleanSupplierWithIo {
        boolean getAsBoolean() throws Exception;
    }
}
