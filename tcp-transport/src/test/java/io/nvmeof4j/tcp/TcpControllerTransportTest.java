package io.nvmeof4j.tcp;

import io.nvmeof4j.protocol.command.NvmeStatus;
import io.nvmeof4j.protocol.spi.PortOptions;
import io.nvmeof4j.protocol.spi.TransportQueue;
import io.nvmeof4j.tcp.RamQueueHandlerFactory.Mode;
import io.nvmeof4j.tcp.RawHost.Pdu;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.io.EOFException;
import java.io.IOException;
import java.net.ConnectException;
import java.net.Socket;
import java.net.SocketException;
import java.util.Arrays;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static io.nvmeof4j.tcp.RawHost.C2H_DATA;
import static io.nvmeof4j.tcp.RawHost.C2H_TERM_REQ;
import static io.nvmeof4j.tcp.RawHost.CAPSULE_RESP;
import static io.nvmeof4j.tcp.RawHost.HDGSTF;
import static io.nvmeof4j.tcp.RawHost.DDGSTF;
import static io.nvmeof4j.tcp.RawHost.R2T;
import static io.nvmeof4j.tcp.TargetFixture.eventually;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class TcpControllerTransportTest {
    private static final int MAX_H2C_DATA = TcpTransportOptions.MAX_H2C_DATA_SIZE_DEFAULT;
    private static final int NO_DIGESTS = 0;
    private static final int BOTH_DIGESTS = 3;

    private TargetFixture target;

    @BeforeEach
    void start() throws IOException {
        target = new TargetFixture(2);
    }

    @AfterEach
    void stop() throws Exception {
        if (target != null) {
            target.close();
        }
    }

    private static byte[] pattern(int length, long seed) {
        byte[] bytes = new byte[length];
        new Random(seed).nextBytes(bytes);
        return bytes;
    }

    private static void assertResponse(Pdu pdu, int cid, int status) {
        assertThat(pdu.type()).as("PDU type of " + pdu).isEqualTo(CAPSULE_RESP);
        assertThat(pdu.hlen()).isEqualTo(24);
        assertThat(pdu.cqeCid()).as("CID").isEqualTo(cid);
        assertThat(pdu.cqeStatus()).as("status " + NvmeStatus.describe(pdu.cqeStatus())).isEqualTo(status);
    }

    private static void assertTermReq(Pdu pdu, int fes, long fei, byte[] offendingPdu) {
        assertThat(pdu.type()).as("PDU type of " + pdu).isEqualTo(C2H_TERM_REQ);
        assertThat(pdu.hlen()).isEqualTo(24);
        assertThat(pdu.pdo()).isZero();
        assertThat(pdu.fes()).as("FES").isEqualTo(fes);
        assertThat(pdu.fei()).as("FEI").isEqualTo(fei);
        assertThat(pdu.plen()).isBetween(24L + 8, 152L);
        byte[] quoted = Arrays.copyOfRange(pdu.raw(), 24, (int) pdu.plen());
        assertThat(quoted).as("quoted header").isEqualTo(Arrays.copyOf(offendingPdu, quoted.length));
    }

    /** Writes {@code data} by R2T and checks the exchange. */
    private static void writeByR2T(RawHost host, int cid, long slba, byte[] data) throws IOException {
        host.sendCapsule(RawHost.ioSqe(0x01, cid, slba, data.length, 0x5A), null);
        Pdu r2t = host.readPdu();
        assertThat(r2t.type()).as("PDU " + r2t).isEqualTo(R2T);
        assertThat(r2t.hlen()).isEqualTo(24);
        assertThat(r2t.pdo()).isZero();
        assertThat(r2t.plen()).isEqualTo(24 + (host.headerDigest ? 4 : 0));
        assertThat(r2t.flags()).isEqualTo(host.headerDigest ? HDGSTF : 0);
        assertThat(r2t.u16(8)).as("CCCID").isEqualTo(cid);
        assertThat(r2t.u32(12)).as("R2TO").isZero();
        assertThat(r2t.u32(16)).as("R2TL").isEqualTo(data.length);
        host.answerR2T(r2t, data, MAX_H2C_DATA);
        assertResponse(host.readPdu(), cid, NvmeStatus.SUCCESS);
    }

    /** Reads {@code length} bytes and returns them with the number of C2HData PDUs they came in. */
    private static byte[] read(RawHost host, int cid, long slba, int length, int expectedPdus) throws IOException {
        host.sendCapsule(RawHost.readSqe(cid, slba, length), null);
        byte[] data = new byte[length];
        assertThat(host.readData(cid, data, false)).as("C2HData PDUs").isEqualTo(expectedPdus);
        assertResponse(host.readPdu(), cid, NvmeStatus.SUCCESS);
        return data;
    }

    // ---- connection initialization -----------------------------------------------------------------------------

    @Test
    void shouldListenOnAFreePortAndReportIt() {
        assertThat(target.address().port()).isPositive();
        assertThat(target.address().traddr()).isEqualTo("127.0.0.1");
        assertThat(target.listener.options()).isEqualTo(PortOptions.defaults());
    }

    @Test
    void shouldAnswerICReqWithICResp() throws IOException {
        try (RawHost host = target.host()) {
            host.send(RawHost.icReq(0, 0, NO_DIGESTS, 0));
            Pdu icResp = host.readPdu();
            assertThat(icResp.raw()).hasSize(128);
            assertThat(icResp.type()).isEqualTo(RawHost.IC_RESP);
            assertThat(icResp.flags()).isZero();
            assertThat(icResp.hlen()).isEqualTo(128);
            assertThat(icResp.pdo()).isZero();
            assertThat(icResp.plen()).isEqualTo(128);
            assertThat(icResp.u16(8)).as("PFV").isZero();
            assertThat(icResp.u8(10)).as("CPDA").isZero();
            assertThat(icResp.u8(11)).as("DGST").isZero();
            assertThat(icResp.u32(12)).as("MAXH2CDATA").isEqualTo(MAX_H2C_DATA);
            assertThat(Arrays.copyOfRange(icResp.raw(), 16, 128)).containsOnly(0);
        }
        assertThat(target.handlers.opened).hasSize(1);
    }

    @Test
    void shouldEchoExactlyTheDigestsTheHostAskedFor() throws IOException {
        for (int digest = 0; digest < 4; digest++) {
            try (RawHost host = target.host()) {
                Pdu icResp = host.initialize(0, digest | 0xFC); // reserved bits are not echoed
                assertThat(icResp.u8(11)).as("DGST for request " + digest).isEqualTo(digest);
            }
        }
    }

    @Test
    void shouldTerminateOnUnsupportedPfv() throws IOException {
        try (RawHost host = target.host()) {
            byte[] icReq = RawHost.icReq(1, 0, 0, 0);
            host.send(icReq);
            assertTermReq(host.readPdu(), 6, 8, icReq);
            assertThat(host.closedByTarget()).isTrue();
        }
    }

    @Test
    void shouldTerminateWhenTheFirstPduIsNotICReq() throws IOException {
        try (RawHost host = target.host()) {
            byte[] capsule = host.capsule(RawHost.readSqe(1, 0, 4096), null);
            host.send(capsule);
            assertTermReq(host.readPdu(), 2, 0, capsule);
            assertThat(host.closedByTarget()).isTrue();
        }
        assertThat(target.handlers.opened).isEmpty();
    }

    // ---- commands ----------------------------------------------------------------------------------------------

    @Test
    void shouldConnectThenWriteInCapsuleAndReadBack() throws IOException {
        try (RawHost host = target.host()) {
            Pdu connect = host.initializeAndConnect(NO_DIGESTS, 1, 128, false);
            assertThat(connect.cqeSqId()).isEqualTo(1);
            assertThat(connect.cqeSqHead()).isEqualTo(1);
            byte[] data = pattern(4096, 1);
            host.sendCapsule(RawHost.ioSqe(0x01, 5, 8, 4096, 0x01), data);
            Pdu written = host.readPdu();
            assertResponse(written, 5, NvmeStatus.SUCCESS);
            assertThat(written.cqeSqId()).isEqualTo(1);
            assertThat(written.cqeSqHead()).isEqualTo(2);
            assertThat(written.plen()).isEqualTo(24);

            assertThat(read(host, 6, 8, 4096, 1)).isEqualTo(data);
        }
        assertThat(target.handlers.seen).extracting(RamQueueHandlerFactory.Seen::dataLength)
            .containsExactly(1024, 4096, 4096);
    }

    @Test
    void shouldTellTheHandlerOnceEachResponseIsSent() throws Exception {
        try (RawHost host = target.host()) {
            host.initializeAndConnect(NO_DIGESTS, 1, 128, false);
            byte[] data = pattern(4096, 3);
            host.sendCapsule(RawHost.ioSqe(0x01, 5, 8, 4096, 0x01), data); // in-capsule write: CapsuleResp
            assertResponse(host.readPdu(), 5, NvmeStatus.SUCCESS);
            assertThat(read(host, 6, 8, 4096, 1)).isEqualTo(data); // read: C2HData, then CapsuleResp
            // The host has both responses; the reactor reports each sent right after its socket write.
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
            while (target.handlers.responsesSent.size() < 3 && System.nanoTime() < deadline) {
                Thread.sleep(1);
            }
            // Connect (CID 0 from initializeAndConnect), the write, the read: each once, in order.
            assertThat(target.handlers.responsesSent).hasSize(3).endsWith(5, 6);
        }
    }

    @Test
    void shouldTakeInCapsuleConnectDataAndAnswerWithSqIdZeroOnTheAdminQueue() throws IOException {
        try (RawHost host = target.host()) {
            Pdu connect = host.initializeAndConnect(NO_DIGESTS, 0, 32, false);
            assertThat(connect.cqeSqId()).isZero();
            assertThat(target.handlers.opened.get(0).queueId()).isZero();
            assertThat(target.handlers.opened.get(0).inCapsuleDataSize()).isEqualTo(8192);
        }
    }

    @Test
    void shouldWrite128KiBAnd1MiBByR2TAndReadThemBack() throws IOException {
        try (RawHost host = target.host()) {
            host.initializeAndConnect(NO_DIGESTS, 1, 128, false);
            byte[] small = pattern(128 << 10, 2);
            byte[] large = pattern(1 << 20, 3);
            writeByR2T(host, 10, 0, small);
            writeByR2T(host, 11, 1024, large);
            // C2HData PDUs carry at most 128 KiB each by default.
            assertThat(read(host, 12, 0, small.length, 1)).isEqualTo(small);
            assertThat(read(host, 13, 1024, large.length, 8)).isEqualTo(large);
        }
        assertThat(target.handlers.seen).filteredOn(s -> s.opcode() == 0x01)
            .extracting(RamQueueHandlerFactory.Seen::dataLength).containsExactly(128 << 10, 1 << 20);
    }

    @Test
    void shouldReadFourKiB128KiBAndOneMiB() throws IOException {
        try (RawHost host = target.host()) {
            host.initializeAndConnect(NO_DIGESTS, 1, 128, false);
            byte[] disk = pattern(2 << 20, 4);
            writeByR2T(host, 1, 0, Arrays.copyOfRange(disk, 0, 1 << 20));
            writeByR2T(host, 2, 2048, Arrays.copyOfRange(disk, 1 << 20, 2 << 20));
            assertThat(read(host, 3, 16, 4096, 1)).isEqualTo(Arrays.copyOfRange(disk, 8192, 8192 + 4096));
            assertThat(read(host, 4, 100, 128 << 10, 1))
                .isEqualTo(Arrays.copyOfRange(disk, 51200, 51200 + (128 << 10)));
            assertThat(read(host, 5, 1000, 1 << 20, 8)).isEqualTo(Arrays.copyOfRange(disk, 512000, 512000 + (1 << 20)));
        }
    }

    @Test
    void shouldSendOnlyTheResponseWhenAReadFails() throws Exception {
        try (RawHost host = target.host()) {
            host.initializeAndConnect(NO_DIGESTS, 1, 32, false);
            byte[] sqe = RawHost.readSqe(7, 0, 4096);
            RawHost.le(sqe).putInt(4, RamQueueHandlerFactory.FAILING_NSID);
            host.sendCapsule(sqe, null);
            assertResponse(host.readPdu(), 7, NvmeStatus.INVALID_NAMESPACE | NvmeStatus.DNR);
            assertThat(read(host, 8, 0, 4096, 1)).hasSize(4096); // the queue carries on
        }
        eventually("buffers released", () -> target.buffersInUse() == 0);
    }

    @Test
    void shouldReportSqHeadModuloTheQueueSize() throws IOException {
        try (RawHost host = target.host()) {
            Pdu connect = host.initializeAndConnect(NO_DIGESTS, 1, 4, false);
            assertThat(connect.cqeSqHead()).isEqualTo(1);
            int[] expected = {2, 3, 0, 1, 2};
            for (int i = 0; i < expected.length; i++) {
                host.sendCapsule(RawHost.sqe(0x00, 20 + i, 1, 0x5A, 0), null); // Flush, no data
                Pdu response = host.readPdu();
                assertResponse(response, 20 + i, NvmeStatus.SUCCESS);
                assertThat(response.cqeSqHead()).as("SQHD after command " + i).isEqualTo(expected[i]);
            }
        }
    }

    @Test
    void shouldUseTheSuccessFlagInsteadOfAResponseWhenSqFlowControlIsDisabled() throws IOException {
        try (RawHost host = target.host()) {
            Pdu connect = host.initializeAndConnect(NO_DIGESTS, 1, 32, true);
            assertThat(connect.cqeSqHead()).isEqualTo(0xFFFF);
            byte[] data = pattern(4096, 5);
            host.sendCapsule(RawHost.ioSqe(0x01, 1, 0, 4096, 0x01), data);
            Pdu written = host.readPdu();
            assertResponse(written, 1, NvmeStatus.SUCCESS);
            assertThat(written.cqeSqHead()).isEqualTo(0xFFFF);

            host.sendCapsule(RawHost.readSqe(2, 0, 4096), null);
            byte[] back = new byte[4096];
            assertThat(host.readData(2, back, true)).isEqualTo(1);
            assertThat(back).isEqualTo(data);
            // No response capsule for the read: the next PDU answers the next command.
            host.sendCapsule(RawHost.sqe(0x00, 3, 1, 0x5A, 0), null);
            assertResponse(host.readPdu(), 3, NvmeStatus.SUCCESS);

            byte[] large = pattern(1 << 20, 6);
            writeByR2T(host, 4, 0, large);
            host.sendCapsule(RawHost.readSqe(5, 0, 1 << 20), null);
            byte[] largeBack = new byte[1 << 20];
            assertThat(host.readData(5, largeBack, true)).isEqualTo(8);
            assertThat(largeBack).isEqualTo(large);
            host.sendCapsule(RawHost.sqe(0x00, 6, 1, 0x5A, 0), null);
            assertResponse(host.readPdu(), 6, NvmeStatus.SUCCESS);
        }
    }

    @Test
    void shouldHonourTheHostPduDataAlignment() throws IOException {
        try (RawHost host = target.host()) {
            host.initialize(3, NO_DIGESTS); // (3 + 1) * 4 = 16-byte alignment
            host.sendCapsule(RawHost.connectSqe(1, 1, 32, false), new byte[1024]);
            assertResponse(host.readPdu(), 1, NvmeStatus.SUCCESS);
            host.sendCapsule(RawHost.readSqe(2, 0, 4096), null);
            Pdu data = host.readPdu();
            assertThat(data.type()).isEqualTo(C2H_DATA);
            assertThat(data.pdo()).as("PDO").isEqualTo(32);
            assertThat(data.plen()).isEqualTo(32 + 4096);
            assertThat(Arrays.copyOfRange(data.raw(), 24, 32)).containsOnly(0);
            assertResponse(host.readPdu(), 2, NvmeStatus.SUCCESS);
        }
    }

    @Test
    void shouldAcceptInCapsuleDataAfterPaddingUpToPdo() throws IOException {
        try (RawHost host = target.host()) {
            host.initializeAndConnect(NO_DIGESTS, 1, 32, false);
            byte[] data = pattern(4096, 18);
            byte[] plain = host.capsule(RawHost.ioSqe(0x01, 1, 0, 4096, 0x01), data);
            byte[] padded = new byte[plain.length + 8]; // PDO 80: 8 bytes of padding after the 72-byte header
            System.arraycopy(plain, 0, padded, 0, 72);
            System.arraycopy(plain, 72, padded, 80, 4096);
            RawHost.le(padded).put(3, (byte) 80).putInt(4, padded.length);
            host.send(padded);
            assertResponse(host.readPdu(), 1, NvmeStatus.SUCCESS);
            assertThat(read(host, 2, 0, 4096, 1)).isEqualTo(data);
        }
    }

    @Test
    void shouldServeIpv6Loopback() throws Exception {
        boolean ipv6;
        try (java.net.ServerSocket probe = new java.net.ServerSocket(0, 1, java.net.InetAddress.getByName("::1"))) {
            ipv6 = probe.getLocalPort() > 0;
        } catch (IOException e) {
            ipv6 = false;
        }
        org.junit.jupiter.api.Assumptions.assumeTrue(ipv6, "no IPv6 loopback on this machine");
        io.nvmeof4j.protocol.spi.TransportListener v6 = target.transport.listen(
            io.nvmeof4j.protocol.spi.TransportAddress.tcp("::1", 0), PortOptions.defaults(),
            new java.util.ArrayList<>(target.groups), target.handlers);
        try (RawHost host = RawHost.connect(v6.address())) {
            assertThat(v6.address().family()).isEqualTo(io.nvmeof4j.protocol.spi.AddressFamily.IPV6);
            host.initializeAndConnect(NO_DIGESTS, 1, 32, false);
            assertThat(target.handlers.opened.get(0).peer()).startsWith("[0:0:0:0:0:0:0:1]:");
            assertThat(read(host, 2, 0, 4096, 1)).hasSize(4096);
        } finally {
            v6.close();
        }
    }

    // ---- digests -----------------------------------------------------------------------------------------------

    @Test
    void shouldCarryHeaderAndDataDigestsBothWays() throws IOException {
        try (RawHost host = target.host()) {
            host.initializeAndConnect(BOTH_DIGESTS, 1, 32, false); // readPdu verifies every digest it receives
            assertThat(host.headerDigest).isTrue();
            assertThat(host.dataDigest).isTrue();
            byte[] small = pattern(4096, 7);
            host.sendCapsule(RawHost.ioSqe(0x01, 1, 0, 4096, 0x01), small);
            Pdu written = host.readPdu();
            assertResponse(written, 1, NvmeStatus.SUCCESS);
            assertThat(written.flags()).isEqualTo(HDGSTF);
            assertThat(written.plen()).isEqualTo(28);

            byte[] large = pattern(300 << 10, 8); // two H2CData PDUs: 256 KiB + 44 KiB
            writeByR2T(host, 2, 8, large);

            host.sendCapsule(RawHost.readSqe(3, 8, large.length), null);
            Pdu first = host.readPdu();
            assertThat(first.type()).isEqualTo(C2H_DATA);
            assertThat(first.flags()).isEqualTo(HDGSTF | DDGSTF);
            assertThat(first.pdo()).isEqualTo(28);
            assertThat(first.dataLength()).isEqualTo(128 << 10);
            byte[] back = new byte[large.length];
            System.arraycopy(first.raw(), 28, back, 0, 128 << 10);
            int received = 128 << 10;
            while (received < back.length) {
                Pdu next = host.readPdu();
                assertThat(next.u32(12)).isEqualTo(received);
                System.arraycopy(next.raw(), next.pdo(), back, received, next.dataLength());
                received += next.dataLength();
            }
            assertThat(back).isEqualTo(large);
            assertResponse(host.readPdu(), 3, NvmeStatus.SUCCESS);
        }
    }

    @Test
    void shouldTerminateOnAHeaderDigestError() throws Exception {
        try (RawHost host = target.host()) {
            host.initialize(0, 1);
            byte[] capsule = host.capsule(RawHost.readSqe(1, 0, 4096), null);
            capsule[72] ^= 0x01;
            host.send(capsule);
            assertTermReq(host.readPdu(), 3, 0, capsule);
            assertThat(host.closedByTarget()).isTrue();
        }
        eventually("onClosed", () -> target.handlers.closed.size() == 1);
        assertThat(target.handlers.closed.get(0)).contains("header digest");
        assertThat(target.handlers.seen).isEmpty();
    }

    @Test
    void shouldDropTheConnectionWithoutAResponseOnADataDigestErrorAsNvmetDoes() throws Exception {
        try (RawHost host = target.host()) {
            host.initializeAndConnect(2, 1, 32, false);
            byte[] capsule = host.capsule(RawHost.ioSqe(0x01, 9, 0, 4096, 0x01), pattern(4096, 9));
            capsule[capsule.length - 1] ^= 0x01;
            host.send(capsule);
            assertThatThrownBy(host::readPdu).isInstanceOfAny(EOFException.class, SocketException.class);
        }
        eventually("onClosed", () -> target.handlers.closed.size() == 1);
        assertThat(target.handlers.closed.get(0)).contains("data digest");
        assertThat(target.handlers.seen).extracting(RamQueueHandlerFactory.Seen::commandId).doesNotContain(9);
        eventually("buffers released", () -> target.buffersInUse() == 0);
    }

    @Test
    void shouldDropTheConnectionOnADataDigestErrorInH2CData() throws Exception {
        try (RawHost host = target.host()) {
            host.initializeAndConnect(2, 1, 32, false);
            host.sendCapsule(RawHost.ioSqe(0x01, 4, 0, 8192, 0x5A), null);
            Pdu r2t = host.readPdu();
            assertThat(r2t.type()).isEqualTo(R2T);
            byte[] h2c = host.h2cData(4, r2t.u16(10), 0, pattern(8192, 10), 0, 8192, true);
            h2c[h2c.length - 2] ^= 0x10;
            host.send(h2c);
            assertThatThrownBy(host::readPdu).isInstanceOfAny(EOFException.class, SocketException.class);
        }
        eventually("onClosed", () -> target.handlers.closed.size() == 1);
        eventually("buffers released", () -> target.buffersInUse() == 0);
    }

    // ---- protocol errors ---------------------------------------------------------------------------------------

    @Test
    void shouldReportABadHlenAtOffsetTwo() throws IOException {
        try (RawHost host = target.host()) {
            host.initialize(0, NO_DIGESTS);
            byte[] capsule = host.capsule(RawHost.readSqe(1, 0, 4096), null);
            capsule[2] = 73;
            host.send(capsule);
            Pdu term = host.readPdu();
            assertTermReq(term, 1, 2, capsule);
            assertThat(term.plen()).isEqualTo(24 + 72);
            assertThat(host.closedByTarget()).isTrue();
        }
    }

    @Test
    void shouldReportAPlenShorterThanTheHeaderAtOffsetFour() throws IOException {
        try (RawHost host = target.host()) {
            host.initialize(0, NO_DIGESTS);
            byte[] capsule = host.capsule(RawHost.readSqe(1, 0, 4096), null);
            RawHost.le(capsule).putInt(4, 60);
            host.send(capsule);
            assertTermReq(host.readPdu(), 1, 4, capsule);
            assertThat(host.closedByTarget()).isTrue();
        }
    }

    @Test
    void shouldReportAPdoInconsistentWithTheData() throws IOException {
        try (RawHost host = target.host()) {
            host.initialize(0, NO_DIGESTS);
            byte[] capsule = host.capsule(RawHost.ioSqe(0x01, 1, 0, 4096, 0x01), new byte[4096]);
            capsule[3] = 0; // data present but PDO 0
            host.send(capsule);
            assertTermReq(host.readPdu(), 1, 3, capsule);
        }
    }

    @Test
    void shouldReportMissingDigestFlagsAtOffsetOne() throws IOException {
        try (RawHost host = target.host()) {
            host.initialize(0, 1);
            host.headerDigest = false; // build the capsule as if digests were off
            byte[] capsule = host.capsule(RawHost.readSqe(1, 0, 4096), null);
            host.send(capsule);
            assertTermReq(host.readPdu(), 1, 1, capsule);
        }
    }

    @Test
    void shouldReportUnknownAndControllerOnlyPduTypesAtOffsetZero() throws IOException {
        for (int type : new int[] {0x0B, RawHost.CAPSULE_RESP, RawHost.IC_RESP}) {
            try (RawHost host = target.host()) {
                host.initialize(0, NO_DIGESTS);
                byte[] pdu = new byte[24];
                RawHost.le(pdu).put(0, (byte) type).put(2, (byte) 24).putInt(4, 24);
                host.send(pdu);
                assertTermReq(host.readPdu(), 1, 0, pdu);
                assertThat(host.closedByTarget()).isTrue();
            }
        }
    }

    @Test
    void shouldReportASecondICReqAsASequenceError() throws IOException {
        try (RawHost host = target.host()) {
            host.initialize(0, NO_DIGESTS);
            byte[] icReq = RawHost.icReq(0, 0, 0, 0);
            host.send(icReq);
            assertTermReq(host.readPdu(), 2, 0, icReq);
        }
    }

    @Test
    void shouldReportH2CDataForAnUnknownTransferTag() throws IOException {
        try (RawHost host = target.host()) {
            host.initializeAndConnect(NO_DIGESTS, 1, 32, false);
            byte[] h2c = host.h2cData(3, 77, 0, new byte[4096], 0, 4096, true);
            host.send(h2c);
            assertTermReq(host.readPdu(), 1, 10, h2c);
            assertThat(host.closedByTarget()).isTrue();
        }
    }

    @Test
    void shouldReportH2CDataErrorsByTheirFields() throws IOException {
        // Each case: an R2T is outstanding for CID 4 (8 KiB), then a bad H2CData.
        record Case(String name, int cccid, int datao, int datal, boolean last, int maxH2C, int fes, long fei) { }
        Case[] cases = {
            new Case("wrong CCCID", 5, 0, 8192, true, 0, 1, 8),
            new Case("beyond the R2T", 4, 4096, 8192, true, 0, 4, 0),
            new Case("not contiguous", 4, 4096, 4096, true, 0, 2, 0),
            new Case("LAST_PDU too early", 4, 0, 4096, true, 0, 2, 0),
            new Case("LAST_PDU missing", 4, 0, 8192, false, 0, 2, 0),
        };
        for (Case c : cases) {
            try (RawHost host = target.host()) {
                host.initializeAndConnect(NO_DIGESTS, 1, 32, false);
                host.sendCapsule(RawHost.ioSqe(0x01, 4, 0, 8192, 0x5A), null);
                Pdu r2t = host.readPdu();
                assertThat(r2t.type()).isEqualTo(R2T);
                byte[] h2c = host.h2cData(c.cccid(), r2t.u16(10), c.datao(), new byte[c.datal()], 0, c.datal(), c.last());
                host.send(h2c);
                Pdu term = host.readPdu();
                assertThat(term.fes()).as(c.name() + " FES").isEqualTo(c.fes());
                assertThat(term.fei()).as(c.name() + " FEI").isEqualTo(c.fei());
                assertThat(host.closedByTarget()).isTrue();
            }
        }
    }

    @Test
    void shouldReportH2CDataLongerThanMaxH2CData() throws Exception {
        target.close();
        target = new TargetFixture(1, 1 << 20, 64L << 20, PortOptions.defaults(),
            TcpTransportOptions.defaults().withMaxH2CDataSize(8192));
        try (RawHost host = target.host()) {
            assertThat(host.initialize(0, NO_DIGESTS).u32(12)).isEqualTo(8192);
            host.sendCapsule(RawHost.connectSqe(1, 1, 32, false), new byte[1024]);
            assertResponse(host.readPdu(), 1, NvmeStatus.SUCCESS);
            host.sendCapsule(RawHost.ioSqe(0x01, 2, 0, 65536, 0x5A), null);
            Pdu r2t = host.readPdu();
            host.send(host.h2cData(2, r2t.u16(10), 0, new byte[16384], 0, 16384, false));
            Pdu term = host.readPdu();
            assertThat(term.fes()).isEqualTo(5);
        }
    }

    @Test
    void shouldTerminateWhenTheHostExceedsTheQueueSize() throws Exception {
        try (RawHost host = target.host()) {
            host.initializeAndConnect(NO_DIGESTS, 1, 4, false);
            target.handlers.mode = Mode.HELD;
            for (int cid = 1; cid <= 4; cid++) {
                host.sendCapsule(RawHost.readSqe(cid, 0, 4096), null);
            }
            eventually("4 commands held", () -> target.handlers.held.size() == 4);
            byte[] fifth = host.capsule(RawHost.readSqe(5, 0, 4096), null);
            host.send(fifth);
            assertTermReq(host.readPdu(), 2, 0, fifth);
            assertThat(host.closedByTarget()).isTrue();
        }
        eventually("onClosed", () -> target.handlers.closed.size() == 1);
        assertThat(target.buffersInUse()).isEqualTo(4); // the held reads still own their buffers
        for (int i = 0; i < 4; i++) {
            target.handlers.completeHeld(); // completes into nothing
        }
        eventually("buffers released after close", () -> target.buffersInUse() == 0);
        assertThat(target.handlers.closed).hasSize(1);
        assertThat(target.handlers.completionFailures).hasValue(0);
    }

    @Test
    void shouldCloseQuietlyOnH2CTermReq() throws Exception {
        try (RawHost host = target.host()) {
            host.initializeAndConnect(NO_DIGESTS, 1, 32, false);
            byte[] term = new byte[24];
            RawHost.le(term).put(0, (byte) RawHost.H2C_TERM_REQ).put(2, (byte) 24).putInt(4, 24)
                .putShort(8, (short) 1).putInt(10, 2);
            host.send(term);
            assertThatThrownBy(host::readPdu).isInstanceOfAny(EOFException.class, SocketException.class);
        }
        eventually("onClosed", () -> target.handlers.closed.size() == 1);
        assertThat(target.handlers.closed.get(0)).contains("H2CTermReq");
    }

    // ---- SGL checks --------------------------------------------------------------------------------------------

    @Test
    void shouldFailUnsupportedSglTypesWithoutDispatching() throws IOException {
        try (RawHost host = target.host()) {
            host.initializeAndConnect(NO_DIGESTS, 1, 32, false);
            host.sendCapsule(RawHost.ioSqe(0x02, 30, 0, 4096, 0x40), null); // keyed: RDMA only
            assertResponse(host.readPdu(), 30, NvmeStatus.SGL_DESCRIPTOR_TYPE_INVALID | NvmeStatus.DNR);
            host.sendCapsule(RawHost.ioSqe(0x02, 31, 0, 4096, 0x02 << 4), null); // segment
            assertResponse(host.readPdu(), 31, NvmeStatus.SGL_DESCRIPTOR_TYPE_INVALID | NvmeStatus.DNR);
            host.sendCapsule(RawHost.readSqe(32, 0, 2 << 20), null); // above MDTS (1 MiB)
            assertResponse(host.readPdu(), 32, NvmeStatus.SGL_DATA_LENGTH_INVALID | NvmeStatus.DNR);
            host.sendCapsule(RawHost.ioSqe(0x02, 33, 0, 4096, 0x01), new byte[4096]); // in-capsule data on a read
            assertResponse(host.readPdu(), 33, NvmeStatus.INVALID_FIELD | NvmeStatus.DNR);
            host.sendCapsule(RawHost.sqe(0x00, 34, 1, 0x00, 0), null); // all-zero SGL: no data, fine
            assertResponse(host.readPdu(), 34, NvmeStatus.SUCCESS);
            assertThat(read(host, 35, 0, 4096, 1)).hasSize(4096);
        }
        assertThat(target.handlers.seen).extracting(RamQueueHandlerFactory.Seen::commandId)
            .doesNotContain(30, 31, 32, 33).contains(34, 35);
    }

    @Test
    void shouldRefuseInCapsuleDataBeyondTheQueueLimitAndSkipIt() throws Exception {
        try (RawHost host = target.host()) {
            host.initializeAndConnect(NO_DIGESTS, 0, 32, false); // admin queue: 8 KiB in-capsule
            host.sendCapsule(RawHost.ioSqe(0x01, 40, 0, 12288, 0x01), pattern(12288, 11));
            assertResponse(host.readPdu(), 40, NvmeStatus.SGL_OFFSET_INVALID | NvmeStatus.DNR); // as nvmet answers
            host.sendCapsule(RawHost.ioSqe(0x01, 41, 0, 8192, 0x01), pattern(8192, 12));
            assertResponse(host.readPdu(), 41, NvmeStatus.SUCCESS);
        }
        eventually("buffers released", () -> target.buffersInUse() == 0);
    }

    /** An I/O queue takes the port's in-capsule size (16 KiB by default), set by its Connect; past it, refused. */
    @Test
    void shouldTakeThePortsInCapsuleSizeOnAnIoQueueAndRefuseMore() throws Exception {
        try (RawHost host = target.host()) {
            host.initializeAndConnect(NO_DIGESTS, 1, 32, false);
            byte[] data = pattern(PortOptions.INLINE_DATA_SIZE_DEFAULT, 17);
            host.sendCapsule(RawHost.ioSqe(0x01, 50, 0, data.length, 0x01), data); // past the admin queue's 8 KiB
            assertResponse(host.readPdu(), 50, NvmeStatus.SUCCESS);
            host.sendCapsule(RawHost.ioSqe(0x01, 51, 64, data.length + 4096, 0x01), pattern(data.length + 4096, 18));
            assertResponse(host.readPdu(), 51, NvmeStatus.SGL_OFFSET_INVALID | NvmeStatus.DNR);
            assertThat(read(host, 52, 0, data.length, 1)).as("the queue still serves").isEqualTo(data);
        }
        eventually("buffers released", () -> target.buffersInUse() == 0);
    }

    // ---- threads, queues and lifecycle -------------------------------------------------------------------------

    @Test
    void shouldCompleteFromAnotherThread() throws IOException {
        target.handlers.mode = Mode.BACKEND_THREAD;
        try (RawHost host = target.host()) {
            host.initializeAndConnect(NO_DIGESTS, 1, 32, false);
            byte[] small = pattern(4096, 13);
            host.sendCapsule(RawHost.ioSqe(0x01, 1, 0, 4096, 0x01), small);
            assertResponse(host.readPdu(), 1, NvmeStatus.SUCCESS);
            byte[] large = pattern(1 << 20, 14);
            writeByR2T(host, 2, 8, large);
            assertThat(read(host, 3, 0, 4096, 1)).isEqualTo(small);
            assertThat(read(host, 4, 8, 1 << 20, 8)).isEqualTo(large);
            // Pipelined: several completions handed over at once.
            for (int cid = 10; cid < 42; cid++) {
                host.sendCapsule(RawHost.readSqe(cid, 0, 4096), null);
            }
            for (int cid = 10; cid < 42; cid++) {
                byte[] back = new byte[4096];
                host.readData(cid, back, false);
                assertThat(back).isEqualTo(small);
                assertResponse(host.readPdu(), cid, NvmeStatus.SUCCESS);
            }
        }
        assertThat(target.handlers.seen).extracting(RamQueueHandlerFactory.Seen::thread)
            .allMatch(name -> name.startsWith("reactor-"));
        assertThat(target.handlers.completionFailures).hasValue(0);
    }

    /**
     * Issue 12: a command completed on another thread while the reactor is still inside the handler's onCommand moves
     * on through its completion only (the poll group's inbox). The step function used to look at the state again after
     * the dispatch: it then sent that command's response ahead of commands completed before it (and before the
     * completing thread had written the status), and the inbox moved the command a second time. Here every completion
     * lands in that window, each time: the handler completes a round's four commands, oldest first, on its backend
     * thread during the last one's dispatch and waits for that thread. Each command gets exactly one response, with
     * the status the backend gave it, in the order the completions happened; the same slots serve the next rounds.
     */
    @Test
    void shouldAnswerCommandsCompletedDuringTheirDispatchOnceEachInCompletionOrder() throws Exception {
        byte[] stored = pattern(4096, 21);
        int rounds = 3;
        int perRound = 4;
        int firstCid = 100;
        try (RawHost host = target.host()) {
            host.initializeAndConnect(NO_DIGESTS, 1, perRound, false);
            host.sendCapsule(RawHost.ioSqe(0x01, 1, 16, 4096, 0x01), stored);
            assertResponse(host.readPdu(), 1, NvmeStatus.SUCCESS);
            target.handlers.batch = perRound;
            target.handlers.mode = Mode.COMPLETED_DURING_DISPATCH;
            for (int round = 0; round < rounds; round++) {
                int cid = firstCid + round * perRound;
                // A read, a command the backend fails, a flush, a read: sent in one write.
                java.io.ByteArrayOutputStream pipelined = new java.io.ByteArrayOutputStream();
                pipelined.writeBytes(host.capsule(RawHost.readSqe(cid, 16, 4096), null));
                pipelined.writeBytes(host.capsule(
                    RawHost.sqe(0x00, cid + 1, RamQueueHandlerFactory.FAILING_NSID, 0x5A, 0), null));
                pipelined.writeBytes(host.capsule(RawHost.sqe(0x00, cid + 2, 1, 0x5A, 0), null));
                pipelined.writeBytes(host.capsule(RawHost.readSqe(cid + 3, 16, 4096), null));
                host.send(pipelined.toByteArray());

                byte[] back = new byte[4096];
                host.readData(cid, back, false);
                assertThat(back).as("round %d, CID %d", round, cid).isEqualTo(stored);
                assertResponse(host.readPdu(), cid, NvmeStatus.SUCCESS);
                assertResponse(host.readPdu(), cid + 1, NvmeStatus.INVALID_NAMESPACE | NvmeStatus.DNR);
                assertResponse(host.readPdu(), cid + 2, NvmeStatus.SUCCESS);
                back = new byte[4096];
                host.readData(cid + 3, back, false);
                assertThat(back).as("round %d, CID %d", round, cid + 3).isEqualTo(stored);
                assertResponse(host.readPdu(), cid + 3, NvmeStatus.SUCCESS);
            }
            assertThat(host.silentFor(200)).as("no second response for any command").isTrue();

            target.handlers.mode = Mode.INLINE;
            assertThat(read(host, 200, 16, 4096, 1)).as("the queue serves on").isEqualTo(stored);
        }
        java.util.List<Integer> batched = new java.util.ArrayList<>();
        for (int cid = firstCid; cid < firstCid + rounds * perRound; cid++) {
            batched.add(cid);
        }
        RamQueueHandlerFactory handlers = target.handlers;
        assertThat(handlers.completionOrder).filteredOn(batched::contains).as("completed oldest first")
            .containsExactlyElementsOf(batched);
        eventually("every response reported sent", () -> handlers.responsesSent.contains(200));
        assertThat(handlers.responsesSent).filteredOn(batched::contains).as("one response sent per command, in order")
            .containsExactlyElementsOf(batched);
        // The free list is LIFO: the slots the first round freed serve the next rounds.
        java.util.Map<Integer, java.util.Set<Integer>> slotsByRound = new java.util.TreeMap<>();
        for (RamQueueHandlerFactory.Seen s : handlers.seen) {
            if (batched.contains(s.commandId())) {
                slotsByRound.computeIfAbsent((s.commandId() - firstCid) / perRound, r -> new java.util.TreeSet<>())
                    .add(s.slot());
            }
        }
        assertThat(slotsByRound).hasSize(rounds);
        assertThat(slotsByRound.get(0)).hasSize(perRound);
        assertThat(slotsByRound.values()).as("slots per round").allMatch(slotsByRound.get(0)::equals);
        assertThat(handlers.completionFailures).hasValue(0);
        eventually("every pool buffer back", () -> target.buffersInUse() == 0);
    }

    @Test
    void shouldSpreadConnectionsOverPollGroups() throws IOException {
        try (RawHost a = target.host(); RawHost b = target.host()) {
            a.initializeAndConnect(NO_DIGESTS, 1, 32, false);
            b.initializeAndConnect(NO_DIGESTS, 2, 32, false);
        }
        assertThat(target.handlers.seen).extracting(RamQueueHandlerFactory.Seen::thread)
            .containsExactlyInAnyOrder("reactor-0", "reactor-1");
    }

    @Test
    void shouldKeepServingOtherHostsAfterTerminatingOne() throws IOException {
        try (RawHost good = target.host(); RawHost bad = target.host()) {
            good.initializeAndConnect(NO_DIGESTS, 1, 32, false);
            bad.initializeAndConnect(NO_DIGESTS, 2, 32, false);
            byte[] data = pattern(8192, 15);
            good.sendCapsule(RawHost.ioSqe(0x01, 1, 64, 8192, 0x01), data);
            assertResponse(good.readPdu(), 1, NvmeStatus.SUCCESS);

            byte[] garbage = new byte[24];
            RawHost.le(garbage).put(0, (byte) 0x0B).put(2, (byte) 24).putInt(4, 24);
            bad.send(garbage);
            assertThat(bad.readPdu().type()).isEqualTo(C2H_TERM_REQ);
            assertThat(bad.closedByTarget()).isTrue();

            assertThat(read(good, 2, 64, 8192, 1)).isEqualTo(data);
            try (RawHost later = target.host()) {
                later.initializeAndConnect(NO_DIGESTS, 3, 32, false);
                assertThat(read(later, 1, 64, 8192, 1)).isEqualTo(data);
            }
        }
    }

    @Test
    void shouldParkCommandsWhenThePoolIsExhaustedAndResumeOnRelease() throws Exception {
        target.close();
        // One poll group whose pool holds exactly two 4 KiB buffers.
        target = new TargetFixture(1, 8192, 8192, new PortOptions(4096, 128, 8192), TcpTransportOptions.defaults());
        try (RawHost host = target.host()) {
            host.initializeAndConnect(NO_DIGESTS, 1, 32, false);
            target.handlers.mode = Mode.HELD;
            for (int cid = 1; cid <= 3; cid++) {
                host.sendCapsule(RawHost.readSqe(cid, 0, 4096), null);
            }
            byte[] data = pattern(4096, 16);
            // In-capsule data lands in its slot's own buffer: the write does not wait behind the third read.
            host.sendCapsule(RawHost.ioSqe(0x01, 4, 8, 4096, 0x01), data);
            eventually("two reads and the write dispatched", () -> target.handlers.held.size() == 3);
            Thread.sleep(100);
            assertThat(target.handlers.held).hasSize(3); // the third read waits for a buffer
            assertThat(target.handlers.seen).hasSize(1 + 3);
            assertThat(target.groups.get(0).bufferWaits()).isEqualTo(1);

            assertThat(target.handlers.completeHeld()).isEqualTo(1);
            byte[] back = new byte[4096];
            host.readData(1, back, false);
            assertResponse(host.readPdu(), 1, NvmeStatus.SUCCESS);
            eventually("third read dispatched", () -> target.handlers.held.size() == 3);

            assertThat(target.handlers.completeHeld()).isEqualTo(2);
            host.readData(2, back, false);
            assertResponse(host.readPdu(), 2, NvmeStatus.SUCCESS);
            assertThat(target.handlers.completeHeld()).isEqualTo(4);
            assertResponse(host.readPdu(), 4, NvmeStatus.SUCCESS);
            assertThat(target.handlers.completeHeld()).isEqualTo(3);
            host.readData(3, back, false);
            assertResponse(host.readPdu(), 3, NvmeStatus.SUCCESS);

            target.handlers.mode = Mode.INLINE;
            assertThat(read(host, 5, 8, 4096, 1)).isEqualTo(data);
        }
        eventually("all buffers back", () -> target.buffersInUse() == 0);
    }

    /**
     * The pool-exhaustion stall (issue 12 item 5): R2T writes of one queue hold every pool buffer while their
     * H2CData is still to come; an in-capsule write that then found the pool empty stopped its queue's reads, so
     * the H2CData behind it was never read and nothing was ever released. Two queues on one reactor: queue 2's
     * in-capsule write arrives while queue 1's R2Ts hold the pool, then queue 1's own in-capsule write, then
     * queue 1's H2CData. Every command must complete, and every byte read back.
     */
    @Test
    void shouldCompleteInCapsuleWritesWhileR2TWritesHoldEveryPoolBuffer() throws Exception {
        target.close();
        // One poll group whose pool holds exactly two 4 KiB buffers; 4 KiB of in-capsule data per I/O command.
        target = new TargetFixture(1, 8192, 8192, new PortOptions(4096, 128, 8192), TcpTransportOptions.defaults());
        long start = System.nanoTime();
        byte[] first = pattern(4096, 40);
        byte[] second = pattern(4096, 41);
        byte[] inCapsule1 = pattern(4096, 42);
        byte[] inCapsule2 = pattern(4096, 43);
        try (RawHost queue1 = target.host(); RawHost queue2 = target.host()) {
            queue1.initializeAndConnect(NO_DIGESTS, 1, 32, false);
            queue2.initializeAndConnect(NO_DIGESTS, 2, 32, false);
            queue1.sendCapsule(RawHost.ioSqe(0x01, 1, 0, 4096, 0x5A), null);
            queue1.sendCapsule(RawHost.ioSqe(0x01, 2, 8, 4096, 0x5A), null);
            Pdu r2t1 = queue1.readPdu();
            Pdu r2t2 = queue1.readPdu();
            assertThat(r2t1.type()).as("PDU " + r2t1).isEqualTo(R2T);
            assertThat(r2t2.type()).as("PDU " + r2t2).isEqualTo(R2T);
            assertThat(target.buffersInUse()).as("pool buffers held by the two R2T writes").isEqualTo(2);

            queue2.sendCapsule(RawHost.ioSqe(0x01, 1, 24, 4096, 0x01), inCapsule2);
            assertResponse(queue2.readPdu(), 1, NvmeStatus.SUCCESS);
            queue1.sendCapsule(RawHost.ioSqe(0x01, 3, 16, 4096, 0x01), inCapsule1);
            queue1.answerR2T(r2t1, first, MAX_H2C_DATA);
            queue1.answerR2T(r2t2, second, MAX_H2C_DATA);
            int[] cids = new int[3];
            for (int i = 0; i < 3; i++) {
                Pdu response = queue1.readPdu();
                assertResponse(response, response.cqeCid(), NvmeStatus.SUCCESS);
                cids[i] = response.cqeCid();
            }
            assertThat(cids).containsExactlyInAnyOrder(1, 2, 3);

            assertThat(read(queue1, 4, 0, 4096, 1)).isEqualTo(first);
            assertThat(read(queue1, 5, 8, 4096, 1)).isEqualTo(second);
            assertThat(read(queue1, 6, 16, 4096, 1)).isEqualTo(inCapsule1);
            assertThat(read(queue2, 2, 24, 4096, 1)).isEqualTo(inCapsule2);
        }
        assertThat(System.nanoTime() - start).as("nanoseconds for all commands").isLessThan(10_000_000_000L);
        // In-capsule data never waits for the pool: nothing here waited.
        assertThat(target.groups.get(0).bufferWaits()).isZero();
        eventually("all buffers back", () -> target.buffersInUse() == 0);
    }

    /** Before Connect a queue has one in-capsule buffer, Connect's: a second command with data is refused. */
    @Test
    void shouldRefuseASecondInCapsuleCommandBeforeConnectCompletes() throws Exception {
        try (RawHost host = target.host()) {
            target.handlers.mode = Mode.HELD;
            host.initialize(0, NO_DIGESTS);
            host.sendCapsule(RawHost.connectSqe(0x7001, 1, 32, false), new byte[1024]);
            eventually("Connect dispatched", () -> target.handlers.held.size() == 1);
            host.sendCapsule(RawHost.ioSqe(0x01, 1, 0, 4096, 0x01), pattern(4096, 44));
            assertResponse(host.readPdu(), 1, NvmeStatus.COMMAND_SEQUENCE_ERROR);

            target.handlers.mode = Mode.INLINE;
            assertThat(target.handlers.completeHeld()).isEqualTo(0x7001);
            assertResponse(host.readPdu(), 0x7001, NvmeStatus.SUCCESS);
            byte[] data = pattern(4096, 45);
            host.sendCapsule(RawHost.ioSqe(0x01, 2, 0, 4096, 0x01), data);
            assertResponse(host.readPdu(), 2, NvmeStatus.SUCCESS);
            assertThat(read(host, 3, 0, 4096, 1)).isEqualTo(data);
        }
        assertThat(target.handlers.seen).extracting(RamQueueHandlerFactory.Seen::commandId)
            .containsExactly(0x7001, 2, 3);
    }

    @Test
    void shouldFinishLargeReadsWhenTheHostReadsSlowly() throws Exception {
        try (RawHost host = target.host()) {
            host.initializeAndConnect(NO_DIGESTS, 1, 128, false);
            byte[] data = pattern(1 << 20, 17);
            writeByR2T(host, 1, 0, data);
            for (int cid = 2; cid < 18; cid++) {
                host.sendCapsule(RawHost.readSqe(cid, 0, 1 << 20), null);
            }
            Thread.sleep(300); // 16 MiB of answers: the target's socket fills up and it has to wait for OP_WRITE
            for (int cid = 2; cid < 18; cid++) {
                byte[] back = new byte[1 << 20];
                assertThat(host.readData(cid, back, false)).isEqualTo(8);
                assertThat(back).isEqualTo(data);
                assertResponse(host.readPdu(), cid, NvmeStatus.SUCCESS);
            }
        }
        eventually("buffers released", () -> target.buffersInUse() == 0);
    }

    @Test
    void shouldDisconnectWhenTheHandlerThrows() throws Exception {
        try (RawHost host = target.host()) {
            host.initializeAndConnect(NO_DIGESTS, 1, 32, false);
            host.sendCapsule(RawHost.ioSqe(RamQueueHandlerFactory.THROWING_OPCODE, 1, 0, 4096, 0x01), new byte[4096]);
            assertThatThrownBy(host::readPdu).isInstanceOfAny(EOFException.class, SocketException.class);
        }
        eventually("onClosed", () -> target.handlers.closed.size() == 1);
        assertThat(target.handlers.closed.get(0)).contains("handler bug on purpose");
        eventually("buffers released", () -> target.buffersInUse() == 0);
    }

    @Test
    void shouldDisconnectFromAnyThreadAndReportOnClosedOnce() throws Exception {
        try (RawHost host = target.host()) {
            host.initializeAndConnect(NO_DIGESTS, 1, 32, false);
            TransportQueue queue = target.handlers.opened.get(0);
            assertThat(queue.peer()).startsWith("127.0.0.1:");
            assertThat(queue.localAddress()).isEqualTo(target.address());
            CompletableFuture<String> reactorThread = new CompletableFuture<>();
            queue.execute(() -> reactorThread.complete(Thread.currentThread().getName()));
            assertThat(reactorThread.get(5, TimeUnit.SECONDS)).startsWith("reactor-");
            queue.disconnect("keep-alive expired");
            queue.disconnect("again");
            assertThatThrownBy(host::readPdu).isInstanceOfAny(EOFException.class, SocketException.class);
        }
        eventually("onClosed", () -> !target.handlers.closed.isEmpty());
        Thread.sleep(50);
        assertThat(target.handlers.closed).containsExactly("keep-alive expired");
    }

    @Test
    void shouldReleaseBuffersOfCommandsThatCompleteAfterTheHostLeft() throws Exception {
        try (RawHost host = target.host()) {
            host.initializeAndConnect(NO_DIGESTS, 1, 32, false);
            target.handlers.mode = Mode.HELD;
            host.sendCapsule(RawHost.readSqe(1, 0, 1 << 20), null);
            eventually("read dispatched", () -> target.handlers.held.size() == 1);
        }
        eventually("onClosed", () -> target.handlers.closed.size() == 1);
        assertThat(target.handlers.closed.get(0)).contains("closed");
        assertThat(target.buffersInUse()).isEqualTo(1);
        target.handlers.completeHeld();
        eventually("buffer released", () -> target.buffersInUse() == 0);
    }

    @Test
    void shouldReleaseTheBufferOfAnR2TWhenTheHostLeaves() throws Exception {
        try (RawHost host = target.host()) {
            host.initializeAndConnect(NO_DIGESTS, 1, 32, false);
            host.sendCapsule(RawHost.ioSqe(0x01, 1, 0, 1 << 20, 0x5A), null);
            Pdu r2t = host.readPdu();
            assertThat(r2t.type()).isEqualTo(R2T);
            host.send(host.h2cData(1, r2t.u16(10), 0, new byte[65536], 0, 65536, false)); // part of the data
            eventually("buffer taken", () -> target.buffersInUse() == 1);
        }
        eventually("onClosed", () -> target.handlers.closed.size() == 1);
        eventually("buffer released", () -> target.buffersInUse() == 0);
        assertThat(target.handlers.seen).extracting(RamQueueHandlerFactory.Seen::commandId).doesNotContain(1)
            .hasSize(1); // only Connect reached the handler
    }

    @Test
    void shouldStopAcceptingPromptlyWhenTheListenerCloses() throws Exception {
        int port = target.address().port();
        long start = System.nanoTime();
        target.listener.close();
        assertThat(System.nanoTime() - start).isLessThan(TimeUnit.SECONDS.toNanos(2));
        assertThatThrownBy(() -> new Socket("127.0.0.1", port).close()).isInstanceOf(ConnectException.class);
    }

    @Test
    void shouldRefusePollGroupsOfAnotherTransportAndTooSmallPools() {
        TcpControllerTransport other = new TcpControllerTransport();
        TcpPollGroup foreign = other.createPollGroup(new io.nvmeof4j.protocol.buffer.OffHeapBufferPool(1 << 20, 1 << 20));
        TcpPollGroup small = target.transport.createPollGroup(
            new io.nvmeof4j.protocol.buffer.OffHeapBufferPool(65536, 1 << 20));
        try {
            assertThatThrownBy(() -> target.transport.listen(target.address().withPort(0), PortOptions.defaults(),
                java.util.List.of(foreign), target.handlers)).isInstanceOf(IllegalArgumentException.class);
            assertThatThrownBy(() -> target.transport.listen(target.address().withPort(0), PortOptions.defaults(),
                java.util.List.of(small), target.handlers)).isInstanceOf(IllegalArgumentException.class);
        } finally {
            foreign.close();
            small.close();
        }
    }
}
