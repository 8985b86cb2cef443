package io.nvmeof4j.protocol.fabrics;

import io.nvmeof4j.protocol.command.SglDescriptor;
import io.nvmeof4j.protocol.command.SubmissionQueueEntry;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class ConnectCommandTest {
    /** Admin-queue Connect as the Linux TCP host sends it: CID 3, in-capsule SGL of 1024 B, SQSIZE 31, KATO 5000. */
    static final String LINUX_ADMIN_CONNECT =
        "7f 40 03 00 01 00 00 00 00 00 00 00 00 00 00 00"   //  0: OPC, FLAGS (PSDT 01b), CID, FCTYPE 01h
      + "00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00"   // 16: MPTR; 24: SGL1 address (offset 0)
      + "00 04 00 00 00 00 00 01 00 00 00 00 1f 00 00 00"   // 32: SGL1 length 1024, ID 01h; 40: RECFMT 0, QID 0, SQSIZE 31, CATTR 0
      + "88 13 00 00 00 00 00 00 00 00 00 00 00 00 00 00";  // 48: KATO 5000 ms

    @Test
    void shouldDecodeTheLinuxAdminConnect() {
        ByteBuffer b = Bytes.hex(64, LINUX_ADMIN_CONNECT);
        SubmissionQueueEntry sqe = new SubmissionQueueEntry().wrap(b, 0);
        assertThat(sqe.isFabrics()).isTrue();
        assertThat(sqe.psdt()).isEqualTo(1);
        assertThat(sqe.fabricsCommandType()).isEqualTo(FabricsCommandType.CONNECT);
        assertThat(sqe.sgl1().id()).isEqualTo(SglDescriptor.ID_IN_CAPSULE);
        assertThat(sqe.sgl1().length()).isEqualTo(ConnectData.LENGTH);
        ConnectCommand c = new ConnectCommand().wrap(sqe);
        assertThat(c.recordFormat()).isZero();
        assertThat(c.queueId()).isZero();
        assertThat(c.submissionQueueSize()).isEqualTo(31);
        assertThat(c.connectAttributes()).isZero();
        assertThat(c.sqFlowControlDisabled()).isFalse();
        assertThat(c.keepAliveTimeoutMillis()).isEqualTo(5000);
    }

    @Test
    void shouldEncodeTheSameBytes() {
        ByteBuffer b = Bytes.zeroes(64);
        for (int i = 0; i < 64; i++) {
            b.put(i, (byte) 0xEE);
        }
        new ConnectCommand().wrap(b, 0).init(3, SglDescriptor.ID_IN_CAPSULE).queueId(0).submissionQueueSize(31)
            .keepAliveTimeoutMillis(5000);
        assertThat(Bytes.toHex(b, 0, 64)).isEqualTo(LINUX_ADMIN_CONNECT.replaceAll("\\s+", ""));
    }

    @Test
    void shouldRoundTripAnIoQueueConnectWithFlowControlDisabled() {
        ByteBuffer b = Bytes.zeroes(128);
        ConnectCommand c = new ConnectCommand().wrap(b, 64).init(0x1234, SglDescriptor.ID_TCP_TRANSPORT)
            .queueId(7).submissionQueueSize(127).connectAttributes(ConnectCommand.CATTR_DISABLE_SQ_FLOW_CONTROL)
            .keepAliveTimeoutMillis(0xFFFF_FFFFL);
        assertThat(b.get(64 + 42)).isEqualTo((byte) 7);
        assertThat(b.get(64 + 44)).isEqualTo((byte) 127);
        assertThat(b.get(64 + 46)).isEqualTo((byte) 0x04);
        assertThat(c.queueId()).isEqualTo(7);
        assertThat(c.submissionQueueSize()).isEqualTo(127);
        assertThat(c.sqFlowControlDisabled()).isTrue();
        assertThat(c.keepAliveTimeoutMillis()).as("unsigned").isEqualTo(0xFFFF_FFFFL);
        assertThat(b.getShort(64 + 2)).isEqualTo((short) 0x1234);
        assertThat(b.get(64 + 39) & 0xFF).isEqualTo(0x5A);
    }

    @Test
    void shouldRejectBigEndianBuffers() {
        assertThatThrownBy(() -> new ConnectCommand().wrap(ByteBuffer.allocate(64), 0))
            .isInstanceOf(IllegalArgumentException.class);
    }
}
