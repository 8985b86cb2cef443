package io.nvmeof4j.jni.rdma;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.concurrent.ThreadLocalRandom;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Two connected RC queue pairs in one process over a real RDMA device (Soft-RoCE rxe0 in the QEMU guest): a
 * listener and its accepted id on one side ("target"), a connecting id on the other ("host"), each with its own
 * CM event channel, protection domain, completion channel, send and receive CQs and a registered 64 KiB buffer.
 * Used by {@link RdmaDeviceChecks} and the JNI benchmark; the address is {@code RDMA_ADDR} (default 10.0.2.15, the
 * guest's own address, so nothing leaves the guest).
 */
final class RdmaLoopback implements AutoCloseable {
    static final Duration TIMEOUT = Duration.ofSeconds(10);
    static final int BUFFER_SIZE = 64 * 1024;
    static final int ACCESS = MemoryRegion.LOCAL_WRITE | MemoryRegion.REMOTE_READ | MemoryRegion.REMOTE_WRITE;

    final CmEventChannel listenChannel;
    final CmId listener;
    final Side target;
    final Side host;
    final CmEvent request;
    final CmEvent established;
    final InetSocketAddress address;

    /** One end: its CM id, PD, completion channel, CQs, QP, and a registered buffer. */
    static final class Side implements AutoCloseable {
        final CmId id;
        final ProtectionDomain pd;
        final CompletionChannel channel;
        final CompletionQueue sendCq;
        final CompletionQueue recvCq;
        final QueuePair qp;
        final ByteBuffer buffer;
        final MemoryRegion mr;

        Side(CmId id, QueuePairCapabilities caps) throws Exception {
            this.id = id;
            VerbsContext ctx = id.verbsContext();
            this.pd = ctx.allocateProtectionDomain();
            this.channel = ctx.createCompletionChannel();
            this.sendCq = ctx.createCompletionQueue(caps.maxSendWr() * 2, channel, 0);
            this.recvCq = ctx.createCompletionQueue(caps.maxRecvWr() * 2, channel, 0);
            this.qp = id.createQueuePair(pd, sendCq, recvCq, caps);
            this.buffer = ByteBuffer.allocateDirect(BUFFER_SIZE);
            this.mr = pd.registerMemory(buffer, ACCESS);
        }

        /** Polls {@code cq} until {@code n} completions arrived (bounded by {@link #TIMEOUT}); returns how many. */
        int pollUntil(CompletionQueue cq, WorkCompletions wcs, int n, int[] statuses, long[] wrIds, int[] opcodes,
                      int[] lengths) {
            long deadline = System.nanoTime() + TIMEOUT.toNanos();
            int got = 0;
            while (got < n && System.nanoTime() < deadline) {
                int k = cq.poll(wcs);
                assertThat(k).as("ibv_poll_cq result").isGreaterThanOrEqualTo(0);
                for (int i = 0; i < k && got < statuses.length; i++, got++) {
                    statuses[got] = wcs.status(i);
                    wrIds[got] = wcs.wrId(i);
                    opcodes[got] = wcs.opcode(i);
                    lengths[got] = wcs.byteLength(i);
                }
                if (k == 0) {
                    Thread.onSpinWait();
                }
            }
            return got;
        }

        @Override
        public void close() {
            id.close();
            mr.close();
            sendCq.close();
            recvCq.close();
            channel.close();
            pd.close();
        }
    }

    static InetAddress deviceAddress() throws Exception {
        return InetAddress.getByName(System.getenv().getOrDefault("RDMA_ADDR", "10.0.2.15"));
    }

    static int freshPort() {
        return 20000 + ThreadLocalRandom.current().nextInt(20000);
    }

    static RdmaLoopback connect(QueuePairCapabilities caps, ConnectionParameters hostParams,
                                ConnectionParameters targetParams) throws Exception {
        return new RdmaLoopback(caps, hostParams, targetParams);
    }

    private RdmaLoopback(QueuePairCapabilities caps, ConnectionParameters hostParams,
                         ConnectionParameters targetParams) throws Exception {
        address = new InetSocketAddress(deviceAddress(), freshPort());
        listenChannel = CmEventChannel.create();
        CmEventChannel hostChannel = null;
        Side t = null;
        Side h = null;
        try {
            listener = listenChannel.createId(1);
            listener.bind(address);
            listener.listen(8);

            hostChannel = CmEventChannel.create();
            CmId hostId = hostChannel.createId(2);
            hostId.resolve(address, TIMEOUT);
            h = new Side(hostId, caps);
            hostId.connect(hostParams);

            request = listener.awaitConnectRequest(TIMEOUT);
            t = new Side(request.id(), caps);
            t.id.accept(targetParams);
            established = hostChannel.awaitEvent(hostId, CmEventType.ESTABLISHED, TIMEOUT.toNanos(), "connect");
            listenChannel.awaitEvent(t.id, CmEventType.ESTABLISHED, TIMEOUT.toNanos(), "accept");
        } catch (Exception | Error e) {
            if (t != null) {
                t.close();
            }
            if (h != null) {
                h.close();
            }
            if (hostChannel != null) {
                hostChannel.close();
            }
            listenChannel.close();
            throw e;
        }
        this.target = t;
        this.host = h;
        this.hostChannel = hostChannel;
    }

    private final CmEventChannel hostChannel;

    CmEventChannel hostChannel() {
        return hostChannel;
    }

    @Override
    public void close() {
        host.close();
        target.close();
        listener.close();
        hostChannel.close();
        listenChannel.close();
    }
}
