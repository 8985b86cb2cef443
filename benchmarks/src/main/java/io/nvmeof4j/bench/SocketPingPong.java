package io.nvmeof4j.bench;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.Arrays;
import java.util.Locale;

/**
 * The floor for NVMe/TCP over loopback (a benchmark helper, not a test): plain TCP request/response round trips of
 * {@code --size} bytes each way, {@code --depth} of them in flight on one connection, for {@code --time} seconds.
 * An echo server thread and the client run in this JVM over 127.0.0.1, both with TCP_NODELAY; each round trip is
 * timed from the request's first byte written to its response's last byte read. Requests ready together are sent
 * in one write and the server echoes whatever it has read in one write (batching, as an NVMe/TCP stack does). One JSON line on stdout:
 * {@code {"size":4096,"depth":1,"mode":"busy","seconds":5.0,"round_trips":…,"rtt_per_s":…,"p50_us":…,"p99_us":…,
 * "p999_us":…,"max_us":…}}.
 *
 * <pre>java -cp benchmarks/target/classes io.nvmeof4j.bench.SocketPingPong [--size 4096] [--depth 1] [--time 5]
 *     [--warmup 1] [--mode busy|blocking]</pre>
 *
 * {@code busy} (default): non-blocking sockets, both threads spin (what a polling reactor achieves);
 * {@code blocking}: blocking reads and writes (the thread sleeps in the kernel between messages).
 */
public final class SocketPingPong {
    private SocketPingPong() {
    }

    public static void main(String[] args) throws Exception {
        int size = 4096;
        int depth = 1;
        double seconds = 5;
        double warmup = 1;
        boolean busy = true;
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            String v = i + 1 < args.length ? args[i + 1] : null;
            switch (a) {
                case "--size" -> { size = Integer.parseInt(v); i++; }
                case "--depth" -> { depth = Integer.parseInt(v); i++; }
                case "--time" -> { seconds = Double.parseDouble(v); i++; }
                case "--warmup" -> { warmup = Double.parseDouble(v); i++; }
                case "--mode" -> { busy = !"blocking".equals(v); i++; }
                default -> {
                    System.err.println("usage: SocketPingPong [--size B] [--depth N] [--time S] [--warmup S] "
                        + "[--mode busy|blocking]");
                    System.exit(2);
                }
            }
        }
        if (size < 1 || depth < 1 || depth > 4096 || seconds <= 0) {
            throw new IllegalArgumentException("bad arguments");
        }

        ServerSocketChannel server = ServerSocketChannel.open();
        server.bind(new InetSocketAddress("127.0.0.1", 0));
        int port = ((InetSocketAddress) server.getLocalAddress()).getPort();
        final boolean spin = busy;
        final int bufferSize = Math.max(size * Math.min(depth, 64), 64 << 10);
        Thread echo = new Thread(() -> {
            try (SocketChannel s = server.accept()) {
                s.setOption(StandardSocketOptions.TCP_NODELAY, true);
                s.configureBlocking(!spin);
                ByteBuffer buf = ByteBuffer.allocateDirect(bufferSize);
                while (true) {
                    int n = s.read(buf);
                    if (n < 0) {
                        return;
                    }
                    if (n == 0 && buf.position() == 0) {
                        Thread.onSpinWait();
                        continue;
                    }
                    buf.flip();
                    while (buf.hasRemaining()) {      // echo everything read, spinning on a full send buffer
                        if (s.write(buf) == 0) {
                            Thread.onSpinWait();
                        }
                    }
                    buf.clear();
                }
            } catch (IOException e) {
                // the client closed
            }
        }, "echo");
        echo.setDaemon(true);
        echo.start();

        try (SocketChannel c = SocketChannel.open(new InetSocketAddress("127.0.0.1", port))) {
            c.setOption(StandardSocketOptions.TCP_NODELAY, true);
            c.configureBlocking(!busy);
            if (warmup > 0) {
                run(c, size, depth, warmup, null, busy);
            }
            long[] samples = new long[(int) Math.min(50_000_000L, Math.max(1_000_000L, (long) (seconds * 400_000)))];
            long[] result = run(c, size, depth, seconds, samples, busy);
            long count = result[0];
            long elapsed = result[1];
            int n = (int) Math.min(count, samples.length);
            Arrays.sort(samples, 0, n);
            System.out.println(String.format(Locale.ROOT,
                "{\"size\":%d,\"depth\":%d,\"mode\":\"%s\",\"seconds\":%.3f,\"round_trips\":%d,\"rtt_per_s\":%.1f,"
                    + "\"p50_us\":%.2f,\"p99_us\":%.2f,\"p999_us\":%.2f,\"max_us\":%.2f}",
                size, depth, busy ? "busy" : "blocking", elapsed / 1e9, count, count / (elapsed / 1e9),
                pct(samples, n, 0.50), pct(samples, n, 0.99), pct(samples, n, 0.999), n == 0 ? 0 : samples[n - 1] / 1e3));
        }
        server.close();
    }

    /** Runs for {@code seconds}; returns {round trips, elapsed ns}; latencies (ns) go into {@code samples}. */
    private static long[] run(SocketChannel c, int size, int depth, double seconds, long[] samples, boolean busy)
        throws IOException {
        // Requests that can be sent at once go out in one write (as a host batches the capsules it has ready), and
        // the echo server answers everything it read in one write: the floor for a stack that batches, not one
        // system call per message.
        ByteBuffer out = ByteBuffer.allocateDirect(size * depth);
        for (int i = 0; i < size * depth; i++) {
            out.put(i, (byte) i);
        }
        ByteBuffer in = ByteBuffer.allocateDirect(Math.max(size * depth, 64 << 10));
        long[] sentAt = new long[depth];      // FIFO of send times (responses come back in order)
        int head = 0;
        int tail = 0;
        int inFlight = 0;
        long received = 0;                    // bytes of responses received and not yet counted
        long count = 0;
        long start = System.nanoTime();
        long end = start + (long) (seconds * 1e9);
        boolean sending = true;
        while (sending || inFlight > 0) {
            if (sending && inFlight < depth) {
                int batch = depth - inFlight;
                out.clear().limit(batch * size);
                long now = System.nanoTime();
                for (int i = 0; i < batch; i++) {
                    sentAt[tail] = now;
                    tail = (tail + 1) % depth;
                }
                inFlight += batch;
                while (out.hasRemaining()) {
                    if (c.write(out) == 0) {
                        Thread.onSpinWait();
                        // drain responses while the send buffer is full, or both sides stall
                        in.clear();
                        int r = c.read(in);
                        if (r < 0) {
                            throw new IOException("the echo server closed");
                        }
                        received += r;
                    }
                }
            }
            in.clear();
            int r = c.read(in);
            if (r < 0) {
                throw new IOException("the echo server closed");
            }
            if (r == 0) {
                Thread.onSpinWait();
            }
            received += r;
            long now = System.nanoTime();
            while (received >= size && inFlight > 0) {
                received -= size;
                long lat = now - sentAt[head];
                head = (head + 1) % depth;
                inFlight--;
                if (samples != null && count < samples.length) {
                    samples[(int) count] = lat;
                }
                count++;
            }
            if (sending && now - end >= 0) {
                sending = false;
            }
        }
        return new long[] {count, System.nanoTime() - start};
    }

    private static double pct(long[] sorted, int n, double q) {
        if (n == 0) {
            return 0;
        }
        int i = (int) Math.min(n - 1, Math.max(0, Math.ceil(q * n) - 1));
        return sorted[i] / 1e3;
    }
}
