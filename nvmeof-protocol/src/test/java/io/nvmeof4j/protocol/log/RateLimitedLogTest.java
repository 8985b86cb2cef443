package io.nvmeof4j.protocol.log;

import org.junit.jupiter.api.Test;
import org.slf4j.Logger;

import java.lang.management.ManagementFactory;
import java.lang.reflect.Proxy;
import java.net.InetAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class RateLimitedLogTest {
    /** One logged line: level, format, arguments as given to SLF4J. */
    record Line(String level, String format, Object[] args) {
    }

    private final List<Line> lines = new ArrayList<>();

    /** A Logger that records warn/error/info(String, Object...) calls; every level enabled. */
    private Logger recordingLogger() {
        return (Logger) Proxy.newProxyInstance(getClass().getClassLoader(), new Class<?>[] {Logger.class},
            (proxy, method, args) -> {
                String name = method.getName();
                if (name.startsWith("is") && name.endsWith("Enabled")) {
                    return true;
                }
                if (args != null && args.length == 2 && args[1] instanceof Object[] a) {
                    lines.add(new Line(name, (String) args[0], a));
                }
                return null;
            });
    }

    @Test
    void shouldLogTheFirstLineThenOnePerIntervalWithTheSuppressedCount() throws Exception {
        RateLimitedLog log = new RateLimitedLog(recordingLogger(), TimeUnit.MILLISECONDS.toNanos(200), 64);
        InetAddress peer = InetAddress.getByName("127.0.0.2");
        for (int i = 0; i < 1000; i++) {
            log.warnFrom(peer, "refused {} ({})", "127.0.0.2:" + i, i);
        }
        assertThat(lines).hasSize(1);
        assertThat(lines.get(0).format()).isEqualTo("refused {} ({})");
        assertThat(lines.get(0).args()).containsExactly("127.0.0.2:0", 0);

        Thread.sleep(250);
        log.warnFrom(peer, "refused {} ({})", "127.0.0.2:1000", 1000);
        assertThat(lines).hasSize(2);
        assertThat(lines.get(1).format()).isEqualTo("refused {} ({}) [{} similar suppressed]");
        assertThat(lines.get(1).args()).containsExactly("127.0.0.2:1000", 1000, 999L);
        assertThat(lines.get(1).level()).isEqualTo("warn");
    }

    @Test
    void shouldGiveEachKeyItsOwnBudget() throws Exception {
        RateLimitedLog log = new RateLimitedLog(recordingLogger(), TimeUnit.SECONDS.toNanos(10), 64);
        InetAddress a = InetAddress.getByName("127.0.0.2");
        InetAddress b = InetAddress.getByName("127.0.0.3");
        for (int i = 0; i < 100; i++) {
            log.warnFrom(a, "from {}", a);
            log.warnFrom(b, "from {}", b);
        }
        assertThat(lines).extracting(l -> l.args()[0]).containsExactly(a, b);
    }

    @Test
    void shouldLogAThrowableAsTextNeverAsAStackTrace() {
        RateLimitedLog log = new RateLimitedLog(recordingLogger());
        log.error("accept failed: {}", new java.io.IOException("Too many open files"));
        assertThat(lines).hasSize(1);
        assertThat(lines.get(0).args()).containsExactly("java.io.IOException: Too many open files");
    }

    @Test
    void shouldKeepTheUnkeyedVarargsErrorOfTheBackend() {
        RateLimitedLog log = new RateLimitedLog(recordingLogger());
        for (int i = 0; i < 10; i++) {
            log.error("{}: {} of {} bytes at offset {} failed: {} -> {}", "/dev/x", "READ", 4096, 0L, "EIO", "0x286");
        }
        assertThat(lines).hasSize(1);
        assertThat(lines.get(0).args()).hasSize(6);
    }

    @Test
    void shouldAllocateNothingWhenSuppressed() throws Exception {
        RateLimitedLog log = new RateLimitedLog(recordingLogger(), TimeUnit.SECONDS.toNanos(60), 64);
        InetAddress peer = InetAddress.getByName("127.0.0.2");
        String what = "protocol error";
        log.warnFrom(peer, "{}: {}", peer, what); // the one line that goes out
        com.sun.management.ThreadMXBean threads =
            (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        long id = Thread.currentThread().getId();
        for (int i = 0; i < 20_000; i++) { // warm up (JIT)
            log.warnFrom(peer, "{}: {}", peer, what);
            log.admit(peer);
        }
        long before = threads.getThreadAllocatedBytes(id);
        for (int i = 0; i < 100_000; i++) {
            log.warnFrom(peer, "{}: {}", peer, what);
            log.warnFrom(peer, "{}: {} {}", peer, what, what);
            log.admit(peer);
        }
        long allocated = threads.getThreadAllocatedBytes(id) - before;
        assertThat(lines).hasSize(1);
        assertThat(allocated).as("bytes allocated by 300,000 suppressed calls").isLessThan(4096);
    }

    @Test
    void shouldRejectBadSettings() {
        Logger logger = recordingLogger();
        assertThatThrownBy(() -> new RateLimitedLog(logger, 0, 64)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new RateLimitedLog(logger, 1, 3)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new RateLimitedLog(logger, 1, 8192)).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void shouldKeyPeersByHostWithoutPort() {
        assertThat(RateLimitedLog.hostOf("10.0.2.15:51234")).isEqualTo("10.0.2.15");
        assertThat(RateLimitedLog.hostOf("[::1]:4420")).isEqualTo("[::1]");
        assertThat(RateLimitedLog.hostOf("unknown peer")).isEqualTo("unknown peer");
    }
}
