package io.nvmeof4j.tcp.pdu;

import io.nvmeof4j.tcp.tls.TcpStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/** The send half of the PDU engine over a real loopback socket: what the peer reads, and how many writes it took. */
class PduSendQueueTest {
    private SocketPair pair;
    private Owner owner;
    private PduSendQueue queue;
    private TcpStream stream;
    private final ByteBuffer[] iov = new ByteBuffer[PduSendQueue.IOV_LENGTH];
    private final List<String> events = new ArrayList<>();

    @BeforeEach
    void open() throws IOException {
        pair = new SocketPair();
        owner = new Owner();
        queue = new PduSendQueue(owner);
        owner.queue = queue;
        stream = TcpStream.plain(pair.near);
    }

    @AfterEach
    void close() throws IOException {
        pair.close();
    }

    @Test
    void shouldSendEveryQueuedPduInOneGatheringWrite() throws IOException {
        ByteArrayOutputStream expected = new ByteArrayOutputStream();
        for (int i = 0; i < 10; i++) {
            byte[] header = pattern(24, i);
            byte[] data = pattern(100 + i, 100 + i);
            queue.enqueue(new Job("job" + i, ByteBuffer.wrap(header), ByteBuffer.wrap(data)));
            expected.writeBytes(header);
            expected.writeBytes(data);
        }
        assertThat(owner.flushRequests).as("flush requested once per enqueue while OP_WRITE is off").isEqualTo(10);
        assertThat(queue.flush(stream, iov)).as("writes").isEqualTo(1);
        assertThat(readFar(expected.size())).isEqualTo(expected.toByteArray());
        assertThat(events).containsExactly("job0 sent", "job1 sent", "job2 sent", "job3 sent", "job4 sent",
            "job5 sent", "job6 sent", "job7 sent", "job8 sent", "job9 sent");
        assertThat(queue.isEmpty()).isTrue();
        assertThat(iov).as("no buffer kept reachable").containsOnlyNulls();
    }

    @Test
    void shouldSendAQueueDepthOf32InOneWriteWhateverItsJobsRangesAre() throws IOException {
        // 32 read responses (C2HData header, data, response capsule): one write, as 32 commands are one convoy.
        ByteArrayOutputStream expected = new ByteArrayOutputStream();
        for (int i = 0; i < 32; i++) {
            byte[][] ranges = {pattern(24, i), pattern(512, 100 + i), pattern(24, 200 + i)};
            queue.enqueue(new Job("read" + i, ByteBuffer.wrap(ranges[0]), ByteBuffer.wrap(ranges[1]),
                ByteBuffer.wrap(ranges[2])));
            for (byte[] r : ranges) {
                expected.writeBytes(r);
            }
        }
        assertThat(queue.flush(stream, iov)).as("writes").isEqualTo(1);
        assertThat(readFar(expected.size())).isEqualTo(expected.toByteArray());
        // 32 writes with their data in the capsule fill an array of 64 exactly: a job is taken when its own ranges
        // fit, not only when the most any job could have (4) does (that sent 31, then 1).
        ByteBuffer[] exact = new ByteBuffer[64];
        for (int i = 0; i < 32; i++) {
            queue.enqueue(new Job("write" + i, ByteBuffer.wrap(pattern(72, i)), ByteBuffer.wrap(pattern(512, i))));
        }
        assertThat(queue.flush(stream, exact)).as("writes").isEqualTo(1);
        assertThat(readFar(32 * (72 + 512)).length).isEqualTo(32 * (72 + 512));
        assertThat(queue.isEmpty()).isTrue();
        assertThat(exact).containsOnlyNulls();
        // One range more than the array holds: the job that does not fit goes in the next write.
        for (int i = 0; i < 22; i++) {
            queue.enqueue(new Job("read" + i, ByteBuffer.wrap(pattern(24, i)), ByteBuffer.wrap(pattern(512, i)),
                ByteBuffer.wrap(pattern(24, i))));
        }
        assertThat(queue.flush(stream, exact)).as("writes of 66 ranges, 64 at a time").isEqualTo(2);
        assertThat(readFar(22 * (24 + 512 + 24)).length).isEqualTo(22 * (24 + 512 + 24));
    }

    @Test
    void shouldWriteTwoRangesOfASharedBufferInTwoWrites() throws IOException {
        byte[] caller = pattern(8192, 1);
        ByteBuffer shared = ByteBuffer.wrap(caller);
        byte[] h1 = pattern(24, 2);
        byte[] h2 = pattern(24, 3);
        // Two commands sending two ranges of one caller buffer, as on the host: each job keeps its own range.
        shared.limit(4096).position(0);
        queue.enqueue(new Job("first", ByteBuffer.wrap(h1), shared, true));
        shared.limit(8192).position(4096);
        queue.enqueue(new Job("second", ByteBuffer.wrap(h2), shared, true));
        assertThat(queue.flush(stream, iov)).as("writes").isEqualTo(2);
        ByteArrayOutputStream expected = new ByteArrayOutputStream();
        expected.writeBytes(h1);
        expected.write(caller, 0, 4096);
        expected.writeBytes(h2);
        expected.write(caller, 4096, 4096);
        assertThat(readFar(expected.size())).isEqualTo(expected.toByteArray());
        assertThat(events).containsExactly("first sent", "second sent");
    }

    @Test
    void shouldArmTheNextPduOfAJobOnlyOnceTheCurrentOneIsOut() throws IOException {
        Job multi = new Job("multi", ByteBuffer.wrap(pattern(24, 4)), ByteBuffer.wrap(pattern(1000, 5)));
        multi.morePdus = 2;
        queue.enqueue(multi);
        queue.enqueue(new Job("after", ByteBuffer.wrap(pattern(24, 6))));
        int writes = queue.flush(stream, iov);
        assertThat(writes).as("one write per PDU of the multi-PDU job").isEqualTo(3);
        assertThat(readFar(3 * 1024 + 24).length).isEqualTo(3 * 1024 + 24);
        assertThat(events).containsExactly("multi armed next", "multi armed next", "multi sent", "after sent");
    }

    @Test
    void shouldResumeAPartialWriteWhenTheSocketTakesMoreAndWaitForWriteMeanwhile() throws Exception {
        limitFarWindow();
        ByteArrayOutputStream expected = new ByteArrayOutputStream();
        for (int i = 0; i < 16; i++) {
            byte[] header = pattern(24, 10 + i);
            byte[] data = pattern(1 << 20, 30 + i);
            queue.enqueue(new Job("job" + i, ByteBuffer.wrap(header), ByteBuffer.wrap(data)));
            expected.writeBytes(header);
            expected.writeBytes(data);
        }
        queue.flush(stream, iov);
        assertThat(queue.writeInterest()).as("socket full: OP_WRITE wanted").isTrue();
        assertThat(owner.interest).containsExactly(true);
        assertThat(flushWhileThePeerReads(expected.size())).isEqualTo(expected.toByteArray());
        assertThat(queue.writeInterest()).as("OP_WRITE off once everything is out").isFalse();
        assertThat(events).hasSize(16).allMatch(e -> e.endsWith(" sent"));
    }

    @Test
    void shouldSendOnlyThePduOnTheWireThenTheTermReqAndDropTheRest() throws Exception {
        limitFarWindow();
        byte[] big = pattern(16 << 20, 40);
        queue.enqueue(new Job("big", ByteBuffer.wrap(big)));
        queue.enqueue(new Job("queued", ByteBuffer.wrap(pattern(100, 41))));
        queue.flush(stream, iov);
        assertThat(queue.writeInterest()).as("the big PDU is partly out").isTrue();
        byte[] term = pattern(32, 42);
        Job termReq = new Job("TermReq", ByteBuffer.wrap(term));
        queue.terminateWith(termReq);
        assertThat(events).containsExactly("queued dropped");
        ByteArrayOutputStream expected = new ByteArrayOutputStream();
        expected.writeBytes(big);
        expected.writeBytes(term);
        assertThat(flushWhileThePeerReads(expected.size())).isEqualTo(expected.toByteArray());
        assertThat(events).containsExactly("queued dropped", "big dropped", "TermReq sent");
    }

    @Test
    void shouldDropEveryJobOnCloseAndSendNothingAfter() throws IOException {
        queue.enqueue(new Job("a", ByteBuffer.wrap(pattern(10, 50))));
        queue.enqueue(new Job("b", ByteBuffer.wrap(pattern(10, 51))));
        queue.close();
        assertThat(events).containsExactly("a dropped", "b dropped");
        assertThat(queue.flush(stream, iov)).isZero();
        pair.far.configureBlocking(false);
        assertThat(pair.far.read(ByteBuffer.allocate(16))).as("bytes that reached the peer").isZero();
    }

    @Test
    void shouldReportAFailedWriteToTheOwner() throws IOException {
        queue.enqueue(new Job("a", ByteBuffer.wrap(pattern(10, 60))));
        pair.near.close();
        queue.flush(stream, iov);
        assertThat(owner.failures).hasSize(1);
        assertThat(iov).containsOnlyNulls();
    }

    /**
     * Bounds what the socket pair absorbs before the peer reads (to a few MiB, under the 16 MiB the tests queue), so a
     * flush meets a full socket; the window stays well above the loopback MSS (64 KiB), or TCP would crawl.
     */
    private void limitFarWindow() throws IOException {
        pair.near.setOption(StandardSocketOptions.SO_SNDBUF, 1 << 20);
        pair.far.setOption(StandardSocketOptions.SO_RCVBUF, 1 << 20);
    }

    /** Flushes until the queue is empty (as OP_WRITE would call it, bounded) while the peer reads; what it read. */
    private byte[] flushWhileThePeerReads(int length) throws Exception {
        CompletableFuture<byte[]> far = CompletableFuture.supplyAsync(() -> {
            try {
                return readFar(length);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        });
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!queue.isEmpty() && System.nanoTime() < deadline) {
            queue.flush(stream, iov);
            Thread.sleep(1);
        }
        return far.get(10, TimeUnit.SECONDS);
    }

    private byte[] readFar(int length) throws IOException {
        ByteBuffer into = ByteBuffer.allocate(length);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (into.hasRemaining() && System.nanoTime() < deadline) {
            if (pair.far.read(into) < 0) {
                break;
            }
        }
        return into.array();
    }

    private static byte[] pattern(int length, long seed) {
        byte[] bytes = new byte[length];
        new Random(seed).nextBytes(bytes);
        return bytes;
    }

    private static final class Owner implements PduSendQueue.Owner {
        int flushRequests;
        /** OP_WRITE wanted or not, at each change. */
        final List<Boolean> interest = new ArrayList<>();
        final List<IOException> failures = new ArrayList<>();
        PduSendQueue queue;

        @Override
        public void requestFlush() {
            flushRequests++;
        }

        @Override
        public void writeInterestChanged() {
            interest.add(queue.writeInterest());
        }

        @Override
        public void sendFailed(IOException e) {
            failures.add(e);
        }
    }

    /** A job of fixed buffers; {@code morePdus} more PDUs of 1024 bytes follow its first. */
    private final class Job extends PduSendJob {
        private final String name;
        private final ByteBuffer[] buffers;
        private final boolean shared;
        int morePdus;

        Job(String name, ByteBuffer... buffers) {
            this(name, buffers, false);
        }

        Job(String name, ByteBuffer header, ByteBuffer data, boolean shared) {
            this(name, new ByteBuffer[] {header, data}, shared);
        }

        private Job(String name, ByteBuffer[] buffers, boolean shared) {
            this.name = name;
            this.buffers = buffers;
            this.shared = shared;
            arm();
        }

        private void arm() {
            for (int i = 0; i < buffers.length; i++) {
                segments[i] = buffers[i];
            }
            armSegments(buffers.length, shared ? 1 : -1);
        }

        @Override
        protected boolean hasNextPdu() {
            return morePdus > 0;
        }

        @Override
        protected boolean armNext() {
            if (morePdus == 0) {
                return false;
            }
            morePdus--;
            segments[0] = ByteBuffer.wrap(pattern(1024, morePdus));
            armSegments(1);
            events.add(name + " armed next");
            return true;
        }

        @Override
        protected void sent() {
            events.add(name + " sent");
        }

        @Override
        protected void dropped() {
            events.add(name + " dropped");
        }
    }
}
