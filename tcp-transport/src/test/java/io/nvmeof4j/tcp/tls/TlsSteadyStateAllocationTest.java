package io.nvmeof4j.tcp.tls;

import org.junit.jupiter.api.Test;

import javax.crypto.Cipher;
import javax.crypto.spec.GCMParameterSpec;
import javax.crypto.spec.SecretKeySpec;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * What a TLS queue allocates per I/O besides the JDK's AES-GCM. Both ends of a loopback socket pair run a 4 KiB
 * read's traffic from one thread (a 72-byte command capsule one way; C2HData header, 4 KiB and a CapsuleResp the
 * other, gathered into one record), and the thread's allocated-bytes counter is compared with what the JDK's
 * {@code Cipher.init} + {@code doFinal} alone allocate for the same two records each way. On JDK 17 every
 * {@code init} with a new nonce builds a new GCM engine (about 1 KB), which no JCA API avoids; everything of ours
 * (record buffers, headers, nonces, socket I/O) must stay under {@link #BOUND_BYTES_PER_IO} on top of it.
 */
class TlsSteadyStateAllocationTest {
    private static final ConfiguredPsk KEY = ConfiguredPsk.parse(
        "NVMeTLSkey-1:01:VRLbtnN9AQb2WXW3c9+wEf/DRLz0QuLdbYvEhwtdWwNf9LrZ:");
    private static final String HOST = "nqn.2014-08.org.nvmexpress:uuid:tls-alloc-host";
    private static final String SUBSYS = "nqn.2026-11.io.nvmeof4j:tls-alloc";
    private static final int WARM_UP_IOS = 30_000;
    private static final int IOS = 50_000;
    private static final double BOUND_BYTES_PER_IO = 16.0;
    private static final long DEADLINE_NANOS = TimeUnit.SECONDS.toNanos(60);
    private static final com.sun.management.ThreadMXBean THREADS =
        (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();

    @Test
    void shouldAllocateNothingPerIoBeyondTheJdksAesGcm() throws Exception {
        try (LoopbackPair pair = LoopbackPair.open()) {
            SocketChannel hostSide = pair.hostSide;
            SocketChannel controllerSide = pair.controllerSide;
            TlsStream host = TlsStream.client(hostSide, NvmeTlsKeys.derive(KEY, HOST, SUBSYS, 1));
            TlsStream controller = TlsStream.server(controllerSide, identity ->
                NvmeTlsKeys.derive(KEY, identity.hostNqn(), identity.subsystemNqn(), identity.version()));
            long start = System.nanoTime();
            boolean hostDone = false;
            boolean controllerDone = false;
            while (!(hostDone && controllerDone)) {
                assertThat(System.nanoTime() - start).as("handshake within the deadline").isLessThan(DEADLINE_NANOS);
                controllerDone = controller.handshake();
                hostDone = host.handshake();
            }
            Exchange exchange = new Exchange(host, controller);
            exchange.run(WARM_UP_IOS);
            long before = THREADS.getCurrentThreadAllocatedBytes();
            exchange.run(IOS);
            double perIo = (double) (THREADS.getCurrentThreadAllocatedBytes() - before) / IOS;

            double jdkPerIo = jdkAesGcmPerIo();
            System.out.printf("TLS 4 KiB read exchange: %.1f bytes per I/O, of which the JDK's AES-GCM alone"
                + " %.1f (2 records, each sealed and opened)%n", perIo, jdkPerIo);
            assertThat(exchange.verified).isEqualTo(WARM_UP_IOS + IOS);
            assertThat(perIo - jdkPerIo).isLessThan(BOUND_BYTES_PER_IO);
            host.close();
            controller.close();
        }
    }

    /** The JDK's cost for the same records: init with a fresh nonce, AAD, doFinal; sealed then opened. */
    private static double jdkAesGcmPerIo() throws Exception {
        SecretKeySpec key = new SecretKeySpec(new byte[16], "AES");
        Cipher seal = Cipher.getInstance("AES/GCM/NoPadding");
        Cipher open = Cipher.getInstance("AES/GCM/NoPadding");
        byte[] nonce = new byte[12];
        byte[] plain = new byte[16_385];
        byte[] sealed = new byte[16_500];
        byte[] opened = new byte[16_500];
        int[] sizes = {72 + 1, 24 + 4096 + 24 + 1};
        long counter = 0;
        long before = 0;
        for (int pass = 0; pass < 2; pass++) {
            if (pass == 1) {
                before = THREADS.getCurrentThreadAllocatedBytes();
            }
            int n = pass == 0 ? WARM_UP_IOS : IOS;
            for (int i = 0; i < n; i++) {
                for (int size : sizes) {
                    counter++;
                    for (int b = 0; b < 8; b++) {
                        nonce[4 + b] = (byte) (counter >>> (8 * b));
                    }
                    seal.init(Cipher.ENCRYPT_MODE, key, new GCMParameterSpec(128, nonce));
                    seal.updateAAD(sealed, 0, 5);
                    int length = seal.doFinal(plain, 0, size, sealed, 5);
                    open.init(Cipher.DECRYPT_MODE, key, new GCMParameterSpec(128, nonce));
                    open.updateAAD(sealed, 0, 5);
                    open.doFinal(sealed, 5, length, opened, 0);
                }
            }
        }
        return (double) (THREADS.getCurrentThreadAllocatedBytes() - before) / IOS;
    }

    /** One I/O: the command capsule host to controller, then C2HData + data + CapsuleResp back; bytes checked. */
    private static final class Exchange {
        private final TlsStream host;
        private final TlsStream controller;
        private final ByteBuffer command = ByteBuffer.allocateDirect(72);
        private final ByteBuffer c2hHeader = ByteBuffer.allocateDirect(24);
        private final ByteBuffer data = ByteBuffer.allocateDirect(4096);
        private final ByteBuffer response = ByteBuffer.allocateDirect(24);
        private final ByteBuffer[] commandIov = {command};
        private final ByteBuffer[] answerIov = {c2hHeader, data, response};
        private final ByteBuffer controllerIn = ByteBuffer.allocateDirect(72);
        private final ByteBuffer hostIn = ByteBuffer.allocateDirect(24 + 4096 + 24);
        long verified;

        Exchange(TlsStream host, TlsStream controller) {
            this.host = host;
            this.controller = controller;
            for (int i = 0; i < 4096; i++) {
                data.put(i, (byte) (i * 31));
            }
        }

        void run(int ios) throws IOException {
            long start = System.nanoTime();
            for (int io = 0; io < ios; io++) {
                command.clear();
                command.putInt(0, io);
                send(host, commandIov);
                controllerIn.clear();
                receive(controller, controllerIn, start);
                int tag = controllerIn.getInt(0);
                c2hHeader.clear();
                data.clear();
                response.clear();
                response.putInt(0, tag);
                send(controller, answerIov);
                hostIn.clear();
                receive(host, hostIn, start);
                if (hostIn.getInt(24 + 4096) == io && hostIn.get(24 + 4095) == (byte) (4095 * 31)) {
                    verified++;
                }
            }
        }

        private static void send(TlsStream stream, ByteBuffer[] iov) throws IOException {
            for (ByteBuffer last = iov[iov.length - 1]; last.hasRemaining() || !stream.flushPending(); ) {
                stream.write(iov, 0, iov.length);
            }
        }

        private static void receive(TlsStream stream, ByteBuffer into, long start) throws IOException {
            while (into.hasRemaining()) {
                if (stream.read(into) < 0) {
                    throw new IOException("stream ended");
                }
                if (System.nanoTime() - start > DEADLINE_NANOS) {
                    throw new IOException("exchange not finished within the deadline");
                }
            }
        }
    }
}
