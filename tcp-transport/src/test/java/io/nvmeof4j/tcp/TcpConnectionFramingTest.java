package io.nvmeof4j.tcp;

import io.nvmeof4j.protocol.command.NvmeStatus;
import io.nvmeof4j.tcp.RawHost.Pdu;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.util.Random;

import static io.nvmeof4j.tcp.RawHost.CAPSULE_RESP;
import static io.nvmeof4j.tcp.RawHost.IC_RESP;
import static io.nvmeof4j.tcp.RawHost.R2T;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * The controller role's framing through the PDU engine: a host whose every PDU (ICReq, Connect with its data,
 * in-capsule write, H2CData) arrives a byte at a time, with both digests, is served exactly as one whose PDUs come
 * whole. Malformed lengths and digest errors are {@link TcpControllerTransportTest}'s.
 */
class TcpConnectionFramingTest {
    private TargetFixture target;

    @BeforeEach
    void start() throws IOException {
        target = new TargetFixture(1);
    }

    @AfterEach
    void stop() throws Exception {
        target.close();
    }

    /** Writes {@code pdu} a byte per write (TCP_NODELAY), pausing every few bytes so the target reads small pieces. */
    private static void trickle(RawHost host, byte[] pdu) throws Exception {
        for (int i = 0; i < pdu.length; i++) {
            host.send(new byte[] {pdu[i]});
            if (i % 64 == 0) {
                Thread.sleep(1);
            }
        }
    }

    @Test
    void shouldServeAHostWhosePdusArriveOneByteAtATime() throws Exception {
        try (RawHost host = target.host()) {
            trickle(host, RawHost.icReq(0, 0, 3, 0));
            Pdu icResp = host.readPdu();
            assertThat(icResp.type()).isEqualTo(IC_RESP);
            assertThat(icResp.u8(11)).as("digests granted").isEqualTo(3);
            host.headerDigest = true;
            host.dataDigest = true;

            trickle(host, host.capsule(RawHost.connectSqe(0x7001, 1, 32, false), new byte[1024]));
            Pdu connected = host.readPdu();
            assertThat(connected.type()).isEqualTo(CAPSULE_RESP);
            assertThat(connected.cqeStatus()).isZero();

            byte[] small = pattern(4096, 1);
            trickle(host, host.capsule(RawHost.ioSqe(0x01, 5, 8, small.length, 0x01), small));
            assertThat(host.readPdu().cqeStatus()).as("in-capsule write").isEqualTo(NvmeStatus.SUCCESS);

            byte[] large = pattern(16384, 2);
            host.sendCapsule(RawHost.ioSqe(0x01, 6, 16, large.length, 0x5A), null);
            Pdu r2t = host.readPdu();
            assertThat(r2t.type()).isEqualTo(R2T);
            trickle(host, host.h2cData(6, r2t.u16(10), 0, large, 0, large.length, true));
            assertThat(host.readPdu().cqeStatus()).as("write by R2T").isEqualTo(NvmeStatus.SUCCESS);

            host.sendCapsule(RawHost.readSqe(7, 8, small.length), null);
            byte[] back = new byte[small.length];
            host.readData(7, back, false);
            assertThat(host.readPdu().cqeStatus()).isEqualTo(NvmeStatus.SUCCESS);
            assertThat(back).isEqualTo(small);

            host.sendCapsule(RawHost.readSqe(8, 16, large.length), null);
            byte[] backLarge = new byte[large.length];
            host.readData(8, backLarge, false);
            assertThat(host.readPdu().cqeStatus()).isEqualTo(NvmeStatus.SUCCESS);
            assertThat(backLarge).isEqualTo(large);
        }
    }

    private static byte[] pattern(int length, long seed) {
        byte[] bytes = new byte[length];
        new Random(seed).nextBytes(bytes);
        return bytes;
    }
}
