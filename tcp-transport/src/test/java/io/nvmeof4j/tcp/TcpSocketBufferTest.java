package io.nvmeof4j.tcp;

import io.nvmeof4j.protocol.spi.PortOptions;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.net.StandardSocketOptions;
import java.nio.channels.SelectionKey;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The send and receive buffers of accepted sockets ({@link TcpTransportOptions#socketBufferSize}): what the kernel
 * gives the target's side of a real loopback connection, read back with getsockopt.
 */
class TcpSocketBufferTest {
    @Test
    void shouldGiveAcceptedSocketsTheConfiguredSendAndReceiveBuffers() throws Exception {
        int asked = 256 * 1024;
        try (TargetFixture target = new TargetFixture(1, 1 << 20, 64L << 20, PortOptions.defaults(),
                TcpTransportOptions.defaults().withSocketBufferSize(asked));
             RawHost host = target.host()) {
            SocketChannel accepted = acceptedChannel(target);
            // Linux caps what is asked at the sysctl maximum and doubles it (bookkeeping overhead); the JDK halves
            // what getsockopt reports on Linux, so the value asked reads back.
            assertThat(accepted.getOption(StandardSocketOptions.SO_SNDBUF))
                .isEqualTo(Math.min(asked, sysctl("net/core/wmem_max")));
            assertThat(accepted.getOption(StandardSocketOptions.SO_RCVBUF))
                .isEqualTo(Math.min(asked, sysctl("net/core/rmem_max")));
        }
    }

    @Test
    void shouldLeaveBuffersToAutotuningByDefaultAsTheKernelTargetDoes() {
        assertThat(TcpTransportOptions.defaults().socketBufferSize()).isZero();
    }

    @Test
    void shouldLeaveBuffersToAutotuningWhenTheSizeIsZero() throws Exception {
        try (TargetFixture target = new TargetFixture(1, 1 << 20, 64L << 20, PortOptions.defaults(),
                TcpTransportOptions.defaults().withSocketBufferSize(0));
             RawHost host = target.host()) {
            SocketChannel accepted = acceptedChannel(target);
            // Untouched, a socket starts at tcp_rmem's default (the middle value; halved by the JDK as above), which
            // autotuning grows.
            assertThat(accepted.getOption(StandardSocketOptions.SO_RCVBUF))
                .isEqualTo(sysctlMiddle("net/ipv4/tcp_rmem") / 2);
        }
    }

    private static SocketChannel acceptedChannel(TargetFixture target) throws InterruptedException {
        TcpPollGroup group = target.groups.get(0);
        TargetFixture.eventually("the accepted socket registered", () -> !group.selector().keys().isEmpty());
        SelectionKey key = group.selector().keys().iterator().next();
        return (SocketChannel) key.channel();
    }

    private static int sysctl(String name) throws IOException {
        return sysctlFields(name)[0];
    }

    private static int sysctlMiddle(String name) throws IOException {
        return sysctlFields(name)[1];
    }

    /** A line of /proc/sys (read as lines: /proc reports a size of 0, which whole-file reads may take at its word). */
    private static int[] sysctlFields(String name) throws IOException {
        String line = Files.readAllLines(Path.of("/proc/sys", name)).get(0).trim();
        String[] fields = line.split("\\s+");
        int[] values = new int[fields.length];
        for (int i = 0; i < fields.length; i++) {
            values[i] = Integer.parseInt(fields[i]);
        }
        return values;
    }
}
