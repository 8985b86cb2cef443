package io.nvmeof4j.it.tcp;

import io.nvmeof4j.it.tcp.RawNvmeTcpHost.DataMode;
import org.junit.jupiter.api.Test;

import java.io.DataInputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static io.nvmeof4j.it.tcp.Bytes.u16;
import static io.nvmeof4j.it.tcp.Bytes.u32;
import static io.nvmeof4j.it.tcp.Bytes.u8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The raw host against a scripted controller on loopback, so that an end-to-end failure can be pinned on the
 * target and not on the test client: framing, digests, R2T/H2CData splitting, C2HData reassembly, and the
 * receive rules it enforces.
 */
class RawNvmeTcpHostTest {

    @Test
    void shouldComputeCrc32cAsTheNvmeTcpDigest() {
        // The CRC-32C check value (RFC 3720 B.4 style): "123456789" -> 0xE3069283.
        byte[] check = "123456789".getBytes(StandardCharsets.US_ASCII);
        assertThat(Pdu.crc32c(check, 0, check.length)).isEqualTo(0xE3069283);
    }

    @Test
    void shouldSendICReqAsSpecifiedAndAdoptTheGrantedDigests() throws Exception {
        try (FakeController fake = new FakeController()) {
            fake.run(c -> {
                byte[] icreq = c.readPdu();
                assertThat(icreq).hasSize(128);
                assertThat(Arrays.copyOf(icreq, 8)).containsExactly(0, 0, 128, 0, 128, 0, 0, 0);
                assertThat(u16(icreq, 8)).as("PFV").isZero();
                assertThat(u8(icreq, 10)).as("HPDA").isZero();
                assertThat(u8(icreq, 11)).as("DGST").isEqualTo(3);
                assertThat(u32(icreq, 12)).as("MAXR2T").isZero();
                c.send(FakeController.icResp(3, 8192));
            });
            try (RawNvmeTcpHost host = RawNvmeTcpHost.open(fake.address())) {
                RawNvmeTcpHost.IcResp r = host.initialize(true, true);
                assertThat(r.dgst()).isEqualTo(3);
                assertThat(r.maxH2CData()).isEqualTo(8192);
                assertThat(host.headerDigest()).isTrue();
                assertThat(host.dataDigest()).isTrue();
            }
            fake.finish();
        }
    }

    @Test
    void shouldReassembleC2hDataAndCheckDigests() throws Exception {
        byte[] payload = Bytes.random(1, 6000);
        try (FakeController fake = new FakeController()) {
            fake.run(c -> {
                c.readPdu();
                c.send(FakeController.icResp(3, 8192));
                byte[] cmd = c.readPdu();
                assertThat(u8(cmd, 0)).as("CapsuleCmd").isEqualTo(4);
                assertThat(u8(cmd, 1)).as("flags: HDGSTF only (no in-capsule data)").isEqualTo(1);
                assertThat(u8(cmd, 2)).isEqualTo(72);
                assertThat(u8(cmd, 3)).as("PDO without data").isZero();
                assertThat(cmd).hasSize(76);
                assertThat(u32(cmd, 72)).as("HDGST").isEqualTo(Pdu.crc32c(cmd, 0, 72) & 0xFFFF_FFFFL);
                assertThat(u8(cmd, 8 + 1)).as("PSDT").isEqualTo(0x40);
                assertThat(u8(cmd, 8 + 39)).as("SGL ID").isEqualTo(0x5A);
                assertThat(u32(cmd, 8 + 32)).as("SGL length").isEqualTo(6000);
                int cid = u16(cmd, 8 + 2);
                c.send(FakeController.c2hData(cid, 0, Arrays.copyOfRange(payload, 0, 4000), 0, true, true));
                c.send(FakeController.c2hData(cid, 4000, Arrays.copyOfRange(payload, 4000, 6000),
                    RawNvmeTcpHost.FLAG_LAST_PDU, true, true));
                c.send(FakeController.capsuleResp(cid, 0, true));
            });
            try (RawNvmeTcpHost host = RawNvmeTcpHost.open(fake.address())) {
                host.initialize(true, true);
                Completion r = host.execute(RawNvmeTcpHost.Command.of(0x02).dataIn(6000));
                assertThat(r.isSuccess()).isTrue();
                assertThat(r.data()).isEqualTo(payload);
            }
            fake.finish();
        }
    }

    @Test
    void shouldAnswerR2tsWithH2cDataSplitAtMaxH2cData() throws Exception {
        byte[] payload = Bytes.random(2, 10000);
        try (FakeController fake = new FakeController()) {
            fake.run(c -> {
                c.readPdu();
                c.send(FakeController.icResp(2, 4096));
                byte[] cmd = c.readPdu();
                assertThat(u8(cmd, 8 + 39)).as("SGL ID for an R2T write").isEqualTo(0x5A);
                assertThat(u32(cmd, 8 + 32)).as("SGL length").isEqualTo(10000);
                assertThat(cmd).as("no in-capsule data").hasSize(72);
                int cid = u16(cmd, 8 + 2);
                byte[] received = new byte[10000];
                int[][] r2ts = {{0, 6000}, {6000, 4000}};
                int ttag = 7;
                for (int[] r2t : r2ts) {
                    c.send(FakeController.r2t(cid, ttag, r2t[0], r2t[1], false));
                    int expectedOffset = r2t[0];
                    boolean last = false;
                    while (!last) {
                        byte[] h2c = c.readPdu();
                        assertThat(u8(h2c, 0)).as("H2CData").isEqualTo(6);
                        assertThat(u8(h2c, 2)).isEqualTo(24);
                        assertThat(u8(h2c, 3)).as("PDO").isEqualTo(24);
                        assertThat(u16(h2c, 8)).as("CCCID").isEqualTo(cid);
                        assertThat(u16(h2c, 10)).as("TTAG").isEqualTo(ttag);
                        int datao = (int) u32(h2c, 12);
                        int datal = (int) u32(h2c, 16);
                        assertThat(datao).as("DATAO contiguous").isEqualTo(expectedOffset);
                        assertThat(datal).as("DATAL <= MAXH2CDATA").isLessThanOrEqualTo(4096);
                        assertThat(h2c).hasSize(24 + datal + 4);
                        assertThat(u32(h2c, 24 + datal)).as("DDGST")
                            .isEqualTo(Pdu.crc32c(h2c, 24, datal) & 0xFFFF_FFFFL);
                        System.arraycopy(h2c, 24, received, datao, datal);
                        expectedOffset += datal;
                        last = (u8(h2c, 1) & RawNvmeTcpHost.FLAG_LAST_PDU) != 0;
                        assertThat(last).as("LAST_PDU exactly on the R2T's last PDU")
                            .isEqualTo(expectedOffset == r2t[0] + r2t[1]);
                    }
                    ttag++;
                }
                assertThat(received).isEqualTo(payload);
                c.send(FakeController.capsuleResp(cid, 0, false));
            });
            try (RawNvmeTcpHost host = RawNvmeTcpHost.open(fake.address())) {
                host.initialize(false, true);
                Completion w = host.execute(RawNvmeTcpHost.writeCommand(1, 0, 20, payload, false).mode(DataMode.R2T));
                assertThat(w.isSuccess()).isTrue();
                assertThat(w.r2ts()).isEqualTo(2);
                assertThat(w.h2cPdus()).isEqualTo(2 + 1);
            }
            fake.finish();
        }
    }

    @Test
    void shouldSendInCapsuleDataAfterTheHeaderDigest() throws Exception {
        byte[] payload = Bytes.random(3, 1024);
        try (FakeController fake = new FakeController()) {
            fake.run(c -> {
                c.readPdu();
                c.send(FakeController.icResp(3, 8192));
                byte[] cmd = c.readPdu();
                assertThat(u8(cmd, 1)).as("HDGSTF | DDGSTF").isEqualTo(3);
                assertThat(u8(cmd, 3)).as("PDO = 72 + 4").isEqualTo(76);
                assertThat(cmd).hasSize(76 + 1024 + 4);
                assertThat(u8(cmd, 8 + 39)).as("SGL ID in-capsule").isEqualTo(0x01);
                assertThat(Arrays.copyOfRange(cmd, 76, 76 + 1024)).isEqualTo(payload);
                assertThat(u32(cmd, 1100)).isEqualTo(Pdu.crc32c(payload, 0, 1024) & 0xFFFF_FFFFL);
                c.send(FakeController.capsuleResp(u16(cmd, 10), 0, true));
            });
            try (RawNvmeTcpHost host = RawNvmeTcpHost.open(fake.address())) {
                host.initialize(true, true);
                host.inCapsuleDataSize(16384);
                assertThat(host.write(1, 0, 2, payload, false).isSuccess()).isTrue();
            }
            fake.finish();
        }
    }

    @Test
    void shouldRefuseC2hSuccessOnAQueueWithSqFlowControl() throws Exception {
        try (FakeController fake = new FakeController()) {
            fake.run(c -> {
                c.readPdu();
                c.send(FakeController.icResp(0, 8192));
                byte[] cmd = c.readPdu();
                c.send(FakeController.c2hData(u16(cmd, 10), 0, new byte[512],
                    RawNvmeTcpHost.FLAG_LAST_PDU | RawNvmeTcpHost.FLAG_SUCCESS, false, false));
            });
            try (RawNvmeTcpHost host = RawNvmeTcpHost.open(fake.address())) {
                host.initialize(false, false);
                assertThatThrownBy(() -> host.read(1, 0, 1, 512)).isInstanceOf(NvmeTcpProtocolException.class)
                    .hasMessageContaining("CATTR bit 2");
            }
            fake.finish();
        }
    }

    @Test
    void shouldRaiseC2hTermReqWithItsFesAndFei() throws Exception {
        try (FakeController fake = new FakeController()) {
            fake.run(c -> {
                c.readPdu();
                c.send(FakeController.icResp(0, 8192));
                byte[] cmd = c.readPdu();
                byte[] term = new byte[24 + 72];
                term[0] = 3;
                term[2] = 24;
                RawNvmeTcpHost.putLe32(term, 4, term.length);
                RawNvmeTcpHost.putLe16(term, 8, 1);
                RawNvmeTcpHost.putLe32(term, 10, 2);
                System.arraycopy(cmd, 0, term, 24, 72);
                c.send(term);
            });
            try (RawNvmeTcpHost host = RawNvmeTcpHost.open(fake.address())) {
                host.initialize(false, false);
                assertThatThrownBy(() -> host.keepAlive()).isInstanceOfSatisfying(C2HTermReqException.class, e -> {
                    assertThat(e.fes()).isEqualTo(1);
                    assertThat(e.fei()).isEqualTo(2);
                    assertThat(e.pdu().dataLength()).isEqualTo(72);
                });
            }
            fake.finish();
        }
    }

    @Test
    void shouldRefuseAControllerPduWithAWrongHlen() throws Exception {
        try (FakeController fake = new FakeController()) {
            fake.run(c -> {
                c.readPdu();
                c.send(FakeController.icResp(0, 8192));
                byte[] cmd = c.readPdu();
                byte[] resp = new byte[28];
                resp[0] = 5;
                resp[2] = 28;
                RawNvmeTcpHost.putLe32(resp, 4, 28);
                RawNvmeTcpHost.putLe16(resp, 20, u16(cmd, 10));
                c.send(resp);
            });
            try (RawNvmeTcpHost host = RawNvmeTcpHost.open(fake.address())) {
                host.initialize(false, false);
                assertThatThrownBy(() -> host.keepAlive()).isInstanceOf(NvmeTcpProtocolException.class)
                    .hasMessageContaining("HLEN 28");
            }
            fake.finish();
        }
    }

    /** A loopback peer that plays a scripted controller on one connection. */
    static final class FakeController implements AutoCloseable {
        interface Script {
            void run(FakeController c) throws Exception;
        }

        private final ServerSocket server = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
        private volatile Socket socket;
        private volatile DataInputStream in;
        private volatile OutputStream out;
        private volatile CompletableFuture<Void> script;

        FakeController() throws IOException {
            server.setSoTimeout(5000);
        }

        InetSocketAddress address() {
            return new InetSocketAddress(InetAddress.getLoopbackAddress(), server.getLocalPort());
        }

        void run(Script body) {
            script = CompletableFuture.runAsync(() -> {
                try {
                    socket = server.accept();
                    socket.setSoTimeout(5000);
                    in = new DataInputStream(socket.getInputStream());
                    out = socket.getOutputStream();
                    body.run(this);
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
            });
        }

        /** Waits for the script and rethrows what failed in it. */
        void finish() throws Exception {
            script.get(10, TimeUnit.SECONDS);
        }

        byte[] readPdu() throws IOException {
            byte[] ch = new byte[8];
            in.readFully(ch);
            int plen = (int) u32(ch, 4);
            byte[] pdu = Arrays.copyOf(ch, plen);
            in.readFully(pdu, 8, plen - 8);
            return pdu;
        }

        void send(byte[] pdu) throws IOException {
            out.write(pdu);
            out.flush();
        }

        static byte[] icResp(int dgst, int maxH2CData) {
            byte[] b = new byte[128];
            b[0] = 1;
            b[2] = (byte) 128;
            RawNvmeTcpHost.putLe32(b, 4, 128);
            b[11] = (byte) dgst;
            RawNvmeTcpHost.putLe32(b, 12, maxH2CData);
            return b;
        }

        static byte[] capsuleResp(int cid, int statusField, boolean hd) {
            byte[] b = new byte[24 + (hd ? 4 : 0)];
            b[0] = 5;
            b[1] = (byte) (hd ? 1 : 0);
            b[2] = 24;
            RawNvmeTcpHost.putLe32(b, 4, b.length);
            RawNvmeTcpHost.putLe16(b, 20, cid);
            RawNvmeTcpHost.putLe16(b, 22, statusField);
            if (hd) {
                RawNvmeTcpHost.putLe32(b, 24, Pdu.crc32c(b, 0, 24));
            }
            return b;
        }

        static byte[] c2hData(int cid, int datao, byte[] data, int flags, boolean hd, boolean dd) {
            int pdo = 24 + (hd ? 4 : 0);
            byte[] b = new byte[pdo + data.length + (dd ? 4 : 0)];
            b[0] = 7;
            b[1] = (byte) (flags | (hd ? 1 : 0) | (dd ? 2 : 0));
            b[2] = 24;
            b[3] = (byte) pdo;
            RawNvmeTcpHost.putLe32(b, 4, b.length);
            RawNvmeTcpHost.putLe16(b, 8, cid);
            RawNvmeTcpHost.putLe32(b, 12, datao);
            RawNvmeTcpHost.putLe32(b, 16, data.length);
            if (hd) {
                RawNvmeTcpHost.putLe32(b, 24, Pdu.crc32c(b, 0, 24));
            }
            System.arraycopy(data, 0, b, pdo, data.length);
            if (dd) {
                RawNvmeTcpHost.putLe32(b, pdo + data.length, Pdu.crc32c(data, 0, data.length));
            }
            return b;
        }

        static byte[] r2t(int cid, int ttag, int r2to, int r2tl, boolean hd) {
            byte[] b = new byte[24 + (hd ? 4 : 0)];
            b[0] = 9;
            b[1] = (byte) (hd ? 1 : 0);
            b[2] = 24;
            RawNvmeTcpHost.putLe32(b, 4, b.length);
            RawNvmeTcpHost.putLe16(b, 8, cid);
            RawNvmeTcpHost.putLe16(b, 10, ttag);
            RawNvmeTcpHost.putLe32(b, 12, r2to);
            RawNvmeTcpHost.putLe32(b, 16, r2tl);
            if (hd) {
                RawNvmeTcpHost.putLe32(b, 24, Pdu.crc32c(b, 0, 24));
            }
            return b;
        }

        @Override
        public void close() throws IOException {
            if (socket != null) {
                socket.close();
            }
            server.close();
        }
    }
}
