package io.nvmeof4j.tcp.host;

import io.nvmeof4j.protocol.command.NvmeStatus;
import io.nvmeof4j.protocol.command.SubmissionQueueEntry;
import io.nvmeof4j.protocol.spi.TransportAddress;
import io.nvmeof4j.protocol.spi.host.HostQueue;
import io.nvmeof4j.protocol.spi.host.HostQueueOptions;
import io.nvmeof4j.protocol.spi.host.HostStatus;
import io.nvmeof4j.protocol.tcp.Crc32cDigest;
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
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The host role's framing through the PDU engine, against a scripted controller on a real loopback socket: PDUs
 * trickled a byte at a time, digest errors and PDU lengths that do not add up (the host's answer to all of them is
 * to fail the queue, as the Linux host's error recovery does).
 */
class TcpHostQueueFramingTest {
    private static final int CAPSULE_RESP = 0x05;
    private static final int C2H_DATA = 0x07;

    private final TcpHostTransport transport = new TcpHostTransport();
    private TcpHostPollGroup group;
    private LoopThread loop;
    private final List<String> closedReasons = new CopyOnWriteArrayList<>();

    @BeforeEach
    void startHost() {
        group = transport.createPollGroup();
        loop = new LoopThread("host-loop", group);
    }

    @AfterEach
    void stopHost() throws Exception {
        loop.close();
        assertThat(loop.failure()).isNull();
        transport.close();
    }

    /** What the scripted controller sends for the one command it reads, given that command's CID. */
    private interface Script {
        byte[] answer(int cid);
    }

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
            HostQueue queue = transport.connect(group, TransportAddress.tcp("127.0.0.1", server.getLocalPort()),
                new HostQueueOptions(4, true, true, 0, Duration.ofSeconds(5)), (q, reason) -> closedReasons.add(reason));
            ByteBuffer into = ByteBuffer.allocateDirect(4096);
            CompletableFuture<Integer> status = new CompletableFuture<>();
            SubmissionQueueEntry read = new SubmissionQueueEntry()
                .wrap(ByteBuffer.allocateDirect(64).order(ByteOrder.LITTLE_ENDIAN), 0);
            read.clear().opcode(0x02).flags(SubmissionQueueEntry.FLAGS_PSDT_SGL).nsid(1).cdw10And11(0).cdw(12, 7);
            group.execute(() -> queue.submit(read, into, 0, 4096, (cqe, ctx) -> status.complete(cqe.status()), null));
            int result = status.get(10, TimeUnit.SECONDS);
            if (result != NvmeStatus.SUCCESS) {
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
                while (closedReasons.isEmpty() && System.nanoTime() < deadline) {
                    Thread.sleep(1);
                }
            } else {
                queue.close("done");
            }
            byte[] back = new byte[4096];
            into.get(0, back);
            peer.join(5_000);
            return new Result(result, back);
        }
    }

    // ---- controller PDUs (wire reference 5) ---------------------------------------------------------------------

    private static byte[] capsuleResp(int cid, int status, boolean headerDigest) {
        byte[] pdu = new byte[24 + (headerDigest ? 4 : 0)];
        le(pdu).put(0, (byte) CAPSULE_RESP).put(1, (byte) (headerDigest ? 1 : 0)).put(2, (byte) 24)
            .putInt(4, pdu.length).putShort(8 + 12, (short) cid).putShort(8 + 14, (short) (status << 1));
        if (headerDigest) {
            le(pdu).putInt(24, Crc32cDigest.of(pdu, 0, 24));
        }
        return pdu;
    }

    private static byte[] c2hData(int cid, byte[] data, boolean headerDigest, boolean dataDigest, boolean success) {
        int pdo = 24 + (headerDigest ? 4 : 0);
        byte[] pdu = new byte[pdo + data.length + (dataDigest ? 4 : 0)];
        int flags = (headerDigest ? 1 : 0) | (dataDigest ? 2 : 0) | 4 | (success ? 8 : 0);
        le(pdu).put(0, (byte) C2H_DATA).put(1, (byte) flags).put(2, (byte) 24).put(3, (byte) pdo)
            .putInt(4, pdu.length).putShort(8, (short) cid).putInt(12, 0).putInt(16, data.length);
        if (headerDigest) {
            le(pdu).putInt(24, Crc32cDigest.of(pdu, 0, 24));
        }
        System.arraycopy(data, 0, pdu, pdo, data.length);
        if (dataDigest) {
            le(pdu).putInt(pdo + data.length, Crc32cDigest.of(data, 0, data.length));
        }
        return pdu;
    }

    private static ByteBuffer le(byte[] bytes) {
        return ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
    }

    private static byte[] pattern(int length, long seed) {
        byte[] bytes = new byte[length];
        new Random(seed).nextBytes(bytes);
        return bytes;
    }

    private static byte[] concat(byte[] a, byte[] b) {
        byte[] both = new byte[a.length + b.length];
        System.arraycopy(a, 0, both, 0, a.length);
        System.arraycopy(b, 0, both, a.length, b.length);
        return both;
    }
}
