package io.nvmeof4j.tcp.host;

import io.nvmeof4j.protocol.HostId;
import io.nvmeof4j.protocol.command.CompletionQueueEntry;
import io.nvmeof4j.protocol.command.NvmeStatus;
import io.nvmeof4j.protocol.command.SglDescriptor;
import io.nvmeof4j.protocol.command.SubmissionQueueEntry;
import io.nvmeof4j.protocol.fabrics.ConnectCommand;
import io.nvmeof4j.protocol.fabrics.ConnectData;
import io.nvmeof4j.protocol.spi.TransportAddress;
import io.nvmeof4j.protocol.spi.host.HostQueue;
import io.nvmeof4j.protocol.spi.host.HostQueueOptions;
import io.nvmeof4j.protocol.spi.host.HostStatus;
import io.nvmeof4j.protocol.spi.host.TransportConnectException;
import io.nvmeof4j.protocol.tcp.Crc32cDigest;
import io.nvmeof4j.protocol.tcp.ICReqPdu;
import io.nvmeof4j.tcp.TestReactor;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import static io.nvmeof4j.tcp.pdu.TestPdus.c2hData;
import static io.nvmeof4j.tcp.pdu.TestPdus.le;
import static io.nvmeof4j.tcp.pdu.TestPdus.pattern;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The NVMe/TCP host role against the real controller-role transport, and against scripted misbehaving peers. */
class TcpHostTransportTest {
    private static final Duration TIMEOUT = Duration.ofSeconds(5);

    private final TcpHostTransport transport = new TcpHostTransport();
    private TcpHostPollGroup group;
    private TestReactor loop;
    private final List<String> closedReasons = new java.util.concurrent.CopyOnWriteArrayList<>();

    @BeforeEach
    void startHost() {
        group = transport.createPollGroup();
        loop = new TestReactor("host-loop", group);
    }

    @AfterEach
    void stopHost() throws Exception {
        loop.close();
        assertThat(loop.failure()).isNull();
        transport.close();
    }

    /** A completion as a value, taken from the callback. */
    record Completion(int cid, int status, int dw0) { }

    private HostQueue open(TransportAddress address, boolean hdgst, boolean ddgst, int depth, int inCapsule)
        throws Exception {
        return transport.connect(group, address, new HostQueueOptions(depth, hdgst, ddgst, inCapsule, TIMEOUT),
            (q, reason) -> closedReasons.add(reason));
    }

    /** Submits on the poll-group thread and waits for the completion. */
    private Completion run(HostQueue queue, SubmissionQueueEntry sqe, ByteBuffer data, int offset, int length)
        throws Exception {
        CompletableFuture<Completion> done = new CompletableFuture<>();
        group.execute(() -> {
            int cid = queue.submit(sqe, data, offset, length, (cqe, ctx) -> done.complete(
                new Completion(cqe.commandId(), cqe.status(), cqe.dw0())), null);
            if (cid < 0) {
                done.completeExceptionally(new IllegalStateException("no free slot"));
            }
        });
        return done.get(5, TimeUnit.SECONDS);
    }

    private static SubmissionQueueEntry sqe() {
        return new SubmissionQueueEntry().wrap(ByteBuffer.allocateDirect(64).order(ByteOrder.LITTLE_ENDIAN), 0);
    }

    private Completion fabricsConnect(HostQueue queue, int qid, int sqSize, boolean disableSqFlowControl)
        throws Exception {
        SubmissionQueueEntry sqe = sqe();
        new ConnectCommand().wrap(sqe).init(0, SglDescriptor.ID_IN_CAPSULE).queueId(qid).submissionQueueSize(sqSize - 1)
            .connectAttributes(disableSqFlowControl ? ConnectCommand.CATTR_DISABLE_SQ_FLOW_CONTROL : 0);
        ByteBuffer data = ByteBuffer.allocateDirect(ConnectData.LENGTH).order(ByteOrder.LITTLE_ENDIAN);
        new ConnectData().wrap(data, 0).clear().hostId(HostId.random()).controllerId(qid == 0 ? 0xFFFF : 1)
            .subsystemNqn("nqn.2014-08.io.nvmeof4j:test").hostNqn("nqn.2014-08.io.nvmeof4j:host");
        return run(queue, sqe, data, 0, ConnectData.LENGTH);
    }

    private static SubmissionQueueEntry io(int opcode, long lba, int blocks) {
        SubmissionQueueEntry sqe = sqe();
        sqe.clear().opcode(opcode).flags(SubmissionQueueEntry.FLAGS_PSDT_SGL).nsid(1).cdw10And11(lba)
            .cdw(12, blocks - 1);
        return sqe;
    }

    @ParameterizedTest(name = "{0} bytes, digests {1}/{2}, SQ flow control disabled {3}")
    @CsvSource({
        "512, false, false, false",
        "4096, false, false, true",
        "16384, false, false, false",
        "16896, false, false, false",
        "65536, true, true, false",
        "1048576, false, false, true",
        "1048576, true, true, true",
        "131072, true, false, false",
    })
    void shouldWriteAndReadBackThroughTheRealTarget(int size, boolean hdgst, boolean ddgst, boolean noSqFlowControl)
        throws Exception {
        // MAXH2CDATA 16 KiB: a 1 MiB write goes out as 64 H2CData PDUs answering one R2T.
        try (RamTarget target = new RamTarget(16384, 16384)) {
            HostQueue queue = open(target.address(), hdgst, ddgst, 32, 16384);
            assertThat(fabricsConnect(queue, 1, 32, noSqFlowControl).status()).isEqualTo(NvmeStatus.SUCCESS);
            byte[] pattern = new byte[size];
            new Random(size).nextBytes(pattern);
            // A data range inside a bigger buffer: the transport must honour the offset.
            ByteBuffer source = ByteBuffer.allocateDirect(size + 100);
            source.position(100);
            source.put(pattern);
            int before = target.commands.get();
            Completion write = run(queue, io(0x01, 8, size / 512), source, 100, size);
            assertThat(write.status()).isEqualTo(NvmeStatus.SUCCESS);
            ByteBuffer destination = ByteBuffer.allocateDirect(size + 50);
            Completion read = run(queue, io(0x02, 8, size / 512), destination, 50, size);
            assertThat(read.status()).isEqualTo(NvmeStatus.SUCCESS);
            byte[] back = new byte[size];
            destination.get(50, back);
            assertThat(back).isEqualTo(pattern);
            assertThat(target.commands.get() - before).isEqualTo(2);
            assertThat(queue.commandsOutstanding()).isZero();
            queue.close("test done");
        }
    }

    @Test
    void shouldKeepManyCommandsInFlightAndReuseSlots() throws Exception {
        try (RamTarget target = new RamTarget(65536, 4096)) {
            HostQueue queue = open(target.address(), false, false, 8, 4096);
            fabricsConnect(queue, 1, 8, false);
            int ios = 2_000;
            ByteBuffer buffer = ByteBuffer.allocateDirect(8 * 8192);
            CompletableFuture<Integer> done = new CompletableFuture<>();
            int[] completed = {0};
            int[] submitted = {0};
            int[] failures = {0};
            SubmissionQueueEntry[] sqes = new SubmissionQueueEntry[8];
            for (int i = 0; i < 8; i++) {
                sqes[i] = sqe();
            }
            group.execute(new Runnable() {
                final io.nvmeof4j.protocol.spi.host.HostCommandCallback callback = (cqe, ctx) -> {
                    if (cqe.status() != 0) {
                        failures[0]++;
                    }
                    if (++completed[0] == ios) {
                        done.complete(failures[0]);
                    } else if (submitted[0] < ios) {
                        submitOne((Integer) ctx);
                    }
                };

                void submitOne(int slot) {
                    int n = submitted[0]++;
                    int opcode = (n & 1) == 0 ? 0x01 : 0x02;
                    SubmissionQueueEntry sqe = sqes[slot];
                    sqe.clear().opcode(opcode).flags(0x40).nsid(1).cdw10And11(slot * 16L).cdw(12, 15);
                    int cid = queue.submit(sqe, buffer, slot * 8192, 8192, callback, slot);
                    assertThat(cid).isNotNegative();
                }

                @Override
                public void run() {
                    for (int i = 0; i < 8; i++) {
                        submitOne(i);
                    }
                    // Every slot busy: the ninth command is refused, not queued.
                    assertThat(queue.submit(sqe(), null, 0, 0, callback, 0)).isEqualTo(-1);
                }
            });
            assertThat(done.get(20, TimeUnit.SECONDS)).isZero();
        }
    }

    @Test
    void shouldWakeAReactorBlockedInTheGroupForATaskHandedOver() throws Exception {
        // A reactor of its own that blocks for 10 s at a time: a task handed over while it blocks must end the wait
        // (the group raises its sleeping flag in await), not wait for the timeout.
        TcpHostPollGroup own = transport.createPollGroup();
        CountDownLatch ran = new CountDownLatch(1);
        AtomicBoolean done = new AtomicBoolean();
        Thread reactor = new Thread(() -> {
            while (!done.get()) {
                own.poll();
                own.await(TimeUnit.SECONDS.toNanos(10));
            }
        }, "blocking-host-reactor");
        reactor.start();
        try {
            Thread.sleep(200); // the reactor is blocked in await by now
            own.execute(() -> {
                done.set(true);
                ran.countDown();
            });
            assertThat(ran.await(2, TimeUnit.SECONDS)).as("the task ran without waiting out the 10 s block").isTrue();
        } finally {
            done.set(true);
            own.wakeup();
            reactor.join(TimeUnit.SECONDS.toMillis(15));
            own.close();
        }
        assertThat(reactor.isAlive()).isFalse();
    }

    @Test
    void shouldNameThePeerAndTheStepWhenTheConnectionIsRefused() throws Exception {
        int port;
        try (ServerSocket unused = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            port = unused.getLocalPort();
        }
        TransportAddress address = TransportAddress.tcp("127.0.0.1", port);
        assertThatThrownBy(() -> open(address, false, false, 4, 0))
            .isInstanceOf(TransportConnectException.class)
            .hasMessageContaining("tcp://127.0.0.1:" + port)
            .hasMessageContaining("TCP connect")
            .hasMessageContaining("refused");
    }

    @Test
    void shouldNameAnUnknownHost() {
        TransportAddress address = TransportAddress.tcp("no-such-host.invalid", 4420);
        assertThatThrownBy(() -> open(address, false, false, 4, 0))
            .isInstanceOf(TransportConnectException.class)
            .hasMessageContaining("no-such-host.invalid")
            .hasMessageContaining("resolve address");
    }

    @Test
    void shouldTimeOutWhenNoICRespComes() throws Exception {
        try (ServerSocket silent = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            TransportAddress address = TransportAddress.tcp("127.0.0.1", silent.getLocalPort());
            long start = System.nanoTime();
            assertThatThrownBy(() -> transport.connect(group, address,
                new HostQueueOptions(4, false, false, 0, Duration.ofMillis(300)), null))
                .isInstanceOf(TransportConnectException.class)
                .hasMessageContaining("ICReq/ICResp")
                .hasMessageContaining("no ICResp");
            assertThat(System.nanoTime() - start).isLessThan(TimeUnit.SECONDS.toNanos(3));
        }
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource({
        "cpda, CPDA 1",
        "digest, do not echo",
        "maxh2cdata, MAXH2CDATA 2048",
        "plen, PLEN 100",
        "pfv, PFV 1",
    })
    void shouldRejectAnICRespTheLinuxHostWouldReject(String defect, String expected) throws Exception {
        try (ServerSocket server = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            Thread peer = new Thread(() -> {
                try (Socket s = server.accept()) {
                    s.getInputStream().readNBytes(128);
                    ByteBuffer icresp = ByteBuffer.allocate(128).order(ByteOrder.LITTLE_ENDIAN);
                    icresp.put(0, (byte) 0x01).put(2, (byte) 128).putInt(4, 128).putInt(12, 0x40000);
                    switch (defect) {
                        case "cpda" -> icresp.put(10, (byte) 1);
                        case "digest" -> icresp.put(11, (byte) ICReqPdu.DIGEST_HEADER);
                        case "maxh2cdata" -> icresp.putInt(12, 2048);
                        case "plen" -> icresp.putInt(4, 100);
                        default -> icresp.putShort(8, (short) 1);
                    }
                    s.getOutputStream().write(icresp.array());
                    s.getInputStream().read(); // until the host closes
                } catch (Exception ignored) {
                    // the host hung up
                }
            });
            peer.start();
            TransportAddress address = TransportAddress.tcp("127.0.0.1", server.getLocalPort());
            assertThatThrownBy(() -> open(address, false, false, 4, 0))
                .isInstanceOf(TransportConnectException.class)
                .hasMessageContaining("ICReq/ICResp")
                .hasMessageContaining(expected);
            peer.join(5_000);
        }
    }

    @Test
    void shouldFailTheQueueNamingFesAndFeiOnC2HTermReq() throws Exception {
        try (ServerSocket server = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            CompletableFuture<Void> commandSeen = new CompletableFuture<>();
            Thread peer = new Thread(() -> {
                try (Socket s = server.accept()) {
                    InputStream in = s.getInputStream();
                    OutputStream out = s.getOutputStream();
                    in.readNBytes(128);
                    ByteBuffer icresp = ByteBuffer.allocate(128).order(ByteOrder.LITTLE_ENDIAN);
                    icresp.put(0, (byte) 0x01).put(2, (byte) 128).putInt(4, 128).putInt(12, 0x40000);
                    out.write(icresp.array());
                    in.readNBytes(72); // one CapsuleCmd without data
                    commandSeen.complete(null);
                    ByteBuffer term = ByteBuffer.allocate(24).order(ByteOrder.LITTLE_ENDIAN);
                    term.put(0, (byte) 0x03).put(2, (byte) 24).putInt(4, 24).putShort(8, (short) 1).putInt(10, 2);
                    out.write(term.array());
                    in.read();
                } catch (Exception ignored) {
                    // the host hung up
                }
            });
            peer.start();
            HostQueue queue = open(TransportAddress.tcp("127.0.0.1", server.getLocalPort()), false, false, 4, 0);
            CompletableFuture<Integer> status = new CompletableFuture<>();
            group.execute(() -> queue.submit(io(0x00, 0, 1), null, 0, 0, (cqe, ctx) -> status.complete(cqe.status()),
                null));
            assertThat(status.get(5, TimeUnit.SECONDS)).isEqualTo(HostStatus.HOST_PATH_ERROR);
            commandSeen.get(1, TimeUnit.SECONDS);
            awaitClosedReason();
            assertThat(closedReasons).hasSize(1);
            assertThat(closedReasons.get(0)).contains("C2HTermReq").contains("invalid PDU header field")
                .contains("FES 1").contains("FEI 2");
            peer.join(5_000);
        }
    }

    @Test
    void shouldFailTheQueueOnAProtocolError() throws Exception {
        try (ServerSocket server = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            Thread peer = new Thread(() -> {
                try (Socket s = server.accept()) {
                    InputStream in = s.getInputStream();
                    in.readNBytes(128);
                    ByteBuffer icresp = ByteBuffer.allocate(128).order(ByteOrder.LITTLE_ENDIAN);
                    icresp.put(0, (byte) 0x01).put(2, (byte) 128).putInt(4, 128).putInt(12, 0x40000);
                    s.getOutputStream().write(icresp.array());
                    in.readNBytes(72);
                    // A CapsuleResp with HLEN 72: the Linux host drops the connection.
                    ByteBuffer bad = ByteBuffer.allocate(24).order(ByteOrder.LITTLE_ENDIAN);
                    bad.put(0, (byte) 0x05).put(2, (byte) 72).putInt(4, 24);
                    s.getOutputStream().write(bad.array());
                    in.read();
                } catch (Exception ignored) {
                    // the host hung up
                }
            });
            peer.start();
            HostQueue queue = open(TransportAddress.tcp("127.0.0.1", server.getLocalPort()), false, false, 4, 0);
            CompletableFuture<CompletionQueueEntry> unused = new CompletableFuture<>();
            List<Integer> statuses = new ArrayList<>();
            CompletableFuture<Void> failed = new CompletableFuture<>();
            group.execute(() -> queue.submit(io(0x00, 0, 1), null, 0, 0, (cqe, ctx) -> {
                statuses.add(cqe.status());
                failed.complete(null);
            }, null));
            failed.get(5, TimeUnit.SECONDS);
            assertThat(statuses).containsExactly(HostStatus.HOST_PATH_ERROR);
            awaitClosedReason();
            assertThat(closedReasons.get(0)).contains("protocol error").contains("HLEN 72");
            assertThat(unused).isNotDone();
            peer.join(5_000);
        }
    }

    private static final int CAPSULE_RESP_TYPE = 0x05;

    /** What the scripted controller sends for the one command it reads, given that command's CID. */
    private interface Script {
        byte[] answer(int cid);
    }

    // ---- framing through the PDU engine: PDUs a byte at a time, digest errors, lengths that do not add up ---------

    @Test
    void shouldCompleteAReadWhosePdusArriveOneByteAtATime() throws Exception {
        byte[] data = pattern(4096, 1);
        Result result = readThrough(cid -> concat(c2hData(cid, data, true, true, false), capsuleResp(cid, 0, true)),
            true);
        assertThat(result.status).isEqualTo(NvmeStatus.SUCCESS);
        assertThat(result.data).isEqualTo(data);
        assertThat(closedReasons).allMatch("done"::equals);
    }

    @Test
    void shouldFailTheQueueOnAHeaderDigestError() throws Exception {
        Result result = readThrough(cid -> {
            byte[] resp = capsuleResp(cid, 0, true);
            resp[24] ^= 0x01;
            return resp;
        }, false);
        assertThat(result.status).isEqualTo(HostStatus.HOST_PATH_ERROR);
        assertThat(closedReasons.get(0)).contains("protocol error").contains("CapsuleResp header digest mismatch");
    }

    @Test
    void shouldFailTheQueueOnADataDigestError() throws Exception {
        Result result = readThrough(cid -> {
            byte[] pdu = c2hData(cid, pattern(4096, 2), true, true, false);
            pdu[pdu.length - 1] ^= 0x01;
            return pdu;
        }, false);
        assertThat(result.status).isEqualTo(HostStatus.HOST_PATH_ERROR);
        assertThat(closedReasons.get(0)).contains("data digest mismatch");
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource({
        "CapsuleResp longer than its header, 40, CapsuleResp with PLEN 40",
        "CapsuleResp shorter than its header, 24, CapsuleResp with PLEN 24",
        "C2HData longer than PDO + DATAL + digest, 9000, C2HData with PDO 28",
        "C2HData shorter than PDO + DATAL + digest, 100, C2HData with PDO 28",
    })
    void shouldFailTheQueueOnAPduLengthThatDoesNotAddUp(String what, int plen, String reason) throws Exception {
        Result result = readThrough(cid -> {
            byte[] pdu = what.startsWith("CapsuleResp") ? capsuleResp(cid, 0, true)
                : c2hData(cid, pattern(4096, 3), true, true, false);
            le(pdu).putInt(4, plen);
            le(pdu).putInt(24, Crc32cDigest.of(pdu, 0, 24)); // a good header digest over the bad PLEN
            return pdu;
        }, false);
        assertThat(result.status).isEqualTo(HostStatus.HOST_PATH_ERROR);
        assertThat(closedReasons.get(0)).contains("protocol error").contains(reason);
    }

    private record Result(int status, byte[] data) { }

    /**
     * Opens a queue with both digests against a scripted controller, submits one 4 KiB read and lets the script
     * answer it ({@code trickle}: a byte per write, TCP_NODELAY, pausing every few bytes so the host reads many small
     * pieces).
     */
    private Result readThrough(Script script, boolean trickle) throws Exception {
        try (ServerSocket server = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            Thread peer = new Thread(() -> {
                try (Socket s = server.accept()) {
                    s.setTcpNoDelay(true);
                    InputStream in = s.getInputStream();
                    OutputStream out = s.getOutputStream();
                    in.readNBytes(128);
                    ByteBuffer icresp = ByteBuffer.allocate(128).order(ByteOrder.LITTLE_ENDIAN);
                    icresp.put(0, (byte) 0x01).put(2, (byte) 128).putInt(4, 128).put(11, (byte) 3).putInt(12, 0x40000);
                    out.write(icresp.array());
                    byte[] capsule = in.readNBytes(72 + 4);
                    int cid = le(capsule).getShort(8 + 2) & 0xFFFF;
                    byte[] answer = script.answer(cid);
                    if (trickle) {
                        for (int i = 0; i < answer.length; i++) {
                            out.write(answer[i]);
                            out.flush();
                            if (i % 64 == 0) {
                                Thread.sleep(1);
                            }
                        }
                    } else {
                        out.write(answer);
                    }
                    in.read(); // until the host hangs up
                } catch (IOException | InterruptedException ignored) {
                    // the host hung up
                }
            });
            peer.start();
            HostQueue queue = open(TransportAddress.tcp("127.0.0.1", server.getLocalPort()), true, true, 4, 0);
            ByteBuffer into = ByteBuffer.allocateDirect(4096);
            CompletableFuture<Integer> status = new CompletableFuture<>();
            SubmissionQueueEntry read = new SubmissionQueueEntry()
                .wrap(ByteBuffer.allocateDirect(64).order(ByteOrder.LITTLE_ENDIAN), 0);
            read.clear().opcode(0x02).flags(SubmissionQueueEntry.FLAGS_PSDT_SGL).nsid(1).cdw10And11(0).cdw(12, 7);
            group.execute(() -> queue.submit(read, into, 0, 4096, (cqe, ctx) -> status.complete(cqe.status()), null));
            int result = status.get(10, TimeUnit.SECONDS);
            if (result != NvmeStatus.SUCCESS) {
                awaitClosedReason();
            } else {
                queue.close("done");
            }
            byte[] back = new byte[4096];
            into.get(0, back);
            peer.join(5_000);
            return new Result(result, back);
        }
    }

    // ---- controller PDUs for the scripts (wire reference 5) -----------------------------------------------------

    private static byte[] capsuleResp(int cid, int status, boolean headerDigest) {
        byte[] pdu = new byte[24 + (headerDigest ? 4 : 0)];
        le(pdu).put(0, (byte) CAPSULE_RESP_TYPE).put(1, (byte) (headerDigest ? 1 : 0)).put(2, (byte) 24)
            .putInt(4, pdu.length).putShort(8 + 12, (short) cid).putShort(8 + 14, (short) (status << 1));
        if (headerDigest) {
            le(pdu).putInt(24, Crc32cDigest.of(pdu, 0, 24));
        }
        return pdu;
    }

    private static byte[] concat(byte[] a, byte[] b) {
        byte[] both = new byte[a.length + b.length];
        System.arraycopy(a, 0, both, 0, a.length);
        System.arraycopy(b, 0, both, a.length, b.length);
        return both;
    }

    /** The listener runs after the completion callbacks, on the poll-group thread: wait (bounded) for it. */
    private void awaitClosedReason() throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        while (closedReasons.isEmpty() && System.nanoTime() < deadline) {
            Thread.sleep(1);
        }
    }
}
