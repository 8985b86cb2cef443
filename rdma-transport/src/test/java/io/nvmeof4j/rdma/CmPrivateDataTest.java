package io.nvmeof4j.rdma;

import io.nvmeof4j.protocol.spi.PortOptions;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

import static org.assertj.core.api.Assertions.assertThat;

/** CM private data codecs (wire reference 4) and the controller's checks of a connect request. */
class CmPrivateDataTest {
    private static final PortOptions PORT = new PortOptions(4096, 128, 1 << 20);

    @Test
    void shouldEncodeTheRequestAsTheLinuxHostDoes() {
        byte[] admin = CmConnectRequest.encode(0, 32, 32, 0xFFFF);
        assertThat(admin).hasSize(32);
        ByteBuffer b = ByteBuffer.wrap(admin).order(ByteOrder.LITTLE_ENDIAN);
        assertThat(b.getShort(0)).isEqualTo((short) 0);       // RECFMT
        assertThat(b.getShort(2)).isEqualTo((short) 0);       // QID
        assertThat(b.getShort(4)).isEqualTo((short) 32);      // HRQSIZE, 1-based
        assertThat(b.getShort(6)).isEqualTo((short) 31);      // HSQSIZE, 0-based
        assertThat(b.getShort(8) & 0xFFFF).isEqualTo(0xFFFF); // CNTLID
        for (int i = 10; i < 32; i++) {
            assertThat(admin[i]).isZero();
        }
        CmConnectRequest io = new CmConnectRequest().wrap(ByteBuffer.wrap(CmConnectRequest.encode(3, 128, 128, 7)), 0);
        assertThat(io.queueId()).isEqualTo(3);
        assertThat(io.hostReceiveQueueSize()).isEqualTo(128);
        assertThat(io.hostSendQueueSize()).isEqualTo(127);
        assertThat(io.controllerId()).isEqualTo(7);
    }

    @Test
    void shouldEncodeAcceptAndReject() {
        ByteBuffer rep = ByteBuffer.wrap(CmConnectAccept.encode(32)).order(ByteOrder.LITTLE_ENDIAN);
        assertThat(rep.capacity()).isEqualTo(32);
        assertThat(rep.getShort(0)).isZero();
        assertThat(rep.getShort(2)).isEqualTo((short) 32);
        byte[] rej = CmConnectReject.encode(CmConnectReject.STS_INVALID_HSQSIZE);
        assertThat(rej).containsExactly(0, 0, 4, 0);
        assertThat(new CmConnectReject().wrap(ByteBuffer.wrap(rej), 0).status()).isEqualTo(4);
        assertThat(CmConnectReject.statusName(7)).isEqualTo("invalid IRD");
    }

    @Test
    void shouldRejectEachBadRequestWithItsStatus() {
        assertThat(QueueSizing.check(null, PORT, 16, 16)).isEqualTo(CmConnectReject.STS_INVALID_PRIVATE_DATA_LENGTH);
        assertThat(QueueSizing.check(new byte[31], PORT, 16, 16))
            .isEqualTo(CmConnectReject.STS_INVALID_PRIVATE_DATA_LENGTH);
        byte[] recfmt = CmConnectRequest.encode(0, 32, 32, 0xFFFF);
        recfmt[0] = 1;
        assertThat(QueueSizing.check(recfmt, PORT, 16, 16)).isEqualTo(CmConnectReject.STS_INVALID_RECFMT);
        assertThat(QueueSizing.check(CmConnectRequest.encode(0xFFFF, 32, 32, 1), PORT, 16, 16))
            .isEqualTo(CmConnectReject.STS_INVALID_QID);
        assertThat(QueueSizing.check(CmConnectRequest.encode(0, 64, 64, 0xFFFF), PORT, 16, 16))
            .isEqualTo(CmConnectReject.STS_INVALID_HSQSIZE); // admin queue above 32
        assertThat(QueueSizing.check(CmConnectRequest.encode(1, 129, 128, 1), PORT, 16, 16))
            .isEqualTo(CmConnectReject.STS_INVALID_HSQSIZE); // above the port's queue size
        assertThat(QueueSizing.check(CmConnectRequest.encode(1, 1, 1, 1), PORT, 16, 16))
            .isEqualTo(CmConnectReject.STS_INVALID_HSQSIZE); // HSQSIZE 0
        assertThat(QueueSizing.check(CmConnectRequest.encode(1, 128, 0, 1), PORT, 16, 16))
            .isEqualTo(CmConnectReject.STS_INVALID_HRQSIZE);
        assertThat(QueueSizing.check(CmConnectRequest.encode(1, 128, 4096, 1), PORT, 16, 16))
            .isEqualTo(CmConnectReject.STS_INVALID_HRQSIZE);
        assertThat(QueueSizing.check(CmConnectRequest.encode(1, 128, 128, 1), PORT, 0, 16))
            .isEqualTo(CmConnectReject.STS_INVALID_IRD);
        assertThat(QueueSizing.check(CmConnectRequest.encode(1, 128, 128, 1), PORT, 16, 0))
            .isEqualTo(CmConnectReject.STS_INVALID_ORD);
        // CM pads private data: longer than 32 bytes is fine
        byte[] padded = java.util.Arrays.copyOf(CmConnectRequest.encode(1, 128, 128, 1), 56);
        assertThat(QueueSizing.check(padded, PORT, 16, 16)).isZero();
    }

    @Test
    void shouldSizeQueuesLikeNvmet() {
        QueueSizing admin = QueueSizing.of(CmConnectRequest.encode(0, 32, 32, 0xFFFF), PORT, 128, 16);
        assertThat(admin.receiveQueueSize()).isEqualTo(32);
        assertThat(admin.receiveBufferSize()).isEqualTo(64); // no in-capsule data on the admin queue
        assertThat(admin.initiatorDepth()).isEqualTo(16);    // min(host IRD, device max_qp_init_rd_atom)
        assertThat(admin.contexts()).isEqualTo(64);
        assertThat(admin.sendQueueSize()).isEqualTo(129);
        assertThat(admin.completionQueueSize()).isEqualTo(161);
        ByteBuffer rep = ByteBuffer.wrap(admin.acceptPrivateData()).order(ByteOrder.LITTLE_ENDIAN);
        assertThat(rep.getShort(2)).isEqualTo((short) 32); // CRQSIZE = HSQSIZE + 1
        QueueSizing io = QueueSizing.of(CmConnectRequest.encode(2, 128, 128, 5), PORT, 4, 16);
        assertThat(io.receiveBufferSize()).isEqualTo(64 + 4096); // IOCCSZ 260
        assertThat(io.initiatorDepth()).isEqualTo(4);
        assertThat(io.controllerId()).isEqualTo(5);
    }
}
