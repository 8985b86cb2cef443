package io.nvmeof4j.tcp;

import io.nvmeof4j.tcp.RamQueueHandlerFactory.Mode;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * No garbage per I/O on the reactor thread (architecture: no allocation per I/O). A pipelining raw host drives
 * 4 KiB commands at queue depth 32; the reactor thread's allocated-bytes counter is read before and after the
 * measured run. This is a correctness property, not a timing: any per-command allocation shows up as at least
 * 16 bytes per I/O, far above the bound.
 */
class TcpSteadyStateAllocationTest {
    private static final int QUEUE_DEPTH = 32;
    private static final int IO_SIZE = 4096;
    private static final int WARM_UP_IOS = 50_000;
    /** Average bytes allocated per I/O on the reactor thread that still counts as "nothing". */
    private static final double BOUND_BYTES_PER_IO = 1.0;

    private static final com.sun.management.ThreadMXBean THREADS =
        (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();

    @Test
    void shouldNotAllocatePerReadOnTheReactorThread() throws Exception {
        double perIo = measure(Mode.INLINE, 0, false, 200_000);
        System.out.printf("reactor allocation, 4 KiB reads completed inline: %.4f bytes per I/O%n", perIo);
        assertThat(perIo).isLessThan(BOUND_BYTES_PER_IO);
    }

    @Test
    void shouldNotAllocatePerInCapsuleWriteWithDigestsOnTheReactorThread() throws Exception {
        double perIo = measure(Mode.INLINE, 3, true, 100_000);
        System.out.printf("reactor allocation, 4 KiB in-capsule writes with header+data digests: %.4f bytes per I/O%n",
            perIo);
        assertThat(perIo).isLessThan(BOUND_BYTES_PER_IO);
    }

    @Test
    void shouldNotAllocatePerReadCompletedFromAnotherThread() throws Exception {
        double perIo = measure(Mode.BACKEND_QUEUE, 0, false, 100_000);
        System.out.printf("reactor allocation, 4 KiB reads completed on a backend thread: %.4f bytes per I/O%n",
            perIo);
        assertThat(perIo).isLessThan(BOUND_BYTES_PER_IO);
    }

    private static double measure(Mode mode, int digests, boolean writes, int ios) throws Exception {
        try (TargetFixture target = new TargetFixture(1)) {
            target.handlers.recording = false;
            if (mode == Mode.BACKEND_QUEUE) {
                target.handlers.startBackendQueue();
            }
            try (RawHost host = target.host()) {
                host.initializeAndConnect(digests, 1, 128, false);
                target.handlers.mode = mode;
                Batch batch = new Batch(host, writes);
                batch.run(WARM_UP_IOS);
                long reactorId = target.reactors.get(0).thread().getId();
                long before = THREADS.getThreadAllocatedBytes(reactorId);
                batch.run(ios);
                long allocated = THREADS.getThreadAllocatedBytes(reactorId) - before;
                assertThat(target.buffersInUse()).isLessThanOrEqualTo(QUEUE_DEPTH);
                return (double) allocated / ios;
            }
        }
    }

    /** QUEUE_DEPTH commands sent in one write, then all their answers read; bytes prebuilt and reused. */
    private static final class Batch {
        private final RawHost host;
        private final boolean writes;
        private final byte[] commands;
        private final byte[] answers;
        private final int answerSize;

        Batch(RawHost host, boolean writes) {
            this.host = host;
            this.writes = writes;
            byte[] data = new byte[IO_SIZE];
            int capsuleSize = host.capsule(RawHost.readSqe(0, 0, IO_SIZE), writes ? data : null).length;
            commands = new byte[capsuleSize * QUEUE_DEPTH];
            for (int i = 0; i < QUEUE_DEPTH; i++) {
                byte[] sqe = writes ? RawHost.ioSqe(0x01, i, i * 8L, IO_SIZE, 0x01) : RawHost.readSqe(i, i * 8L, IO_SIZE);
                byte[] capsule = host.capsule(sqe, writes ? data : null);
                System.arraycopy(capsule, 0, commands, i * capsuleSize, capsuleSize);
            }
            int hdgst = host.headerDigest ? 4 : 0;
            int ddgst = host.dataDigest ? 4 : 0;
            int response = 24 + hdgst;
            answerSize = writes ? response : 24 + hdgst + IO_SIZE + ddgst + response;
            answers = new byte[answerSize * QUEUE_DEPTH];
        }

        void run(int ios) throws IOException {
            for (int done = 0; done < ios; done += QUEUE_DEPTH) {
                host.send(commands);
                host.readExactly(answers);
                ByteBuffer b = ByteBuffer.wrap(answers).order(ByteOrder.LITTLE_ENDIAN);
                for (int i = 0; i < QUEUE_DEPTH; i++) {
                    int at = i * answerSize;
                    int responseAt = at + answerSize - (24 + (host.headerDigest ? 4 : 0));
                    if (!writes) {
                        assertThat(b.get(at)).isEqualTo((byte) RawHost.C2H_DATA);
                    }
                    assertThat(b.get(responseAt)).isEqualTo((byte) RawHost.CAPSULE_RESP);
                    assertThat(b.getShort(responseAt + 22)).as("status").isZero();
                }
            }
        }
    }
}
