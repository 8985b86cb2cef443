package io.nvmeof4j.protocol.spi.transport;

import io.nvmeof4j.protocol.command.NvmeStatus;
import io.nvmeof4j.protocol.command.SglDescriptor;
import io.nvmeof4j.protocol.command.SubmissionQueueEntry;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

import static org.assertj.core.api.Assertions.assertThat;

/** The SGL rules both bindings share, and the two ways they differ (wire reference 1.3, 4, 5). */
class DataMappingTest {
    private static final int WRITE = 0x01;
    private static final int READ = 0x02;
    private static final int FLUSH = 0x00;
    private static final int MAX = 1 << 20;
    private static final int IN_CAPSULE_LIMIT = 8192;

    private final SubmissionQueueEntry sqe = new SubmissionQueueEntry()
        .wrap(ByteBuffer.allocate(64).order(ByteOrder.LITTLE_ENDIAN), 0);

    private SubmissionQueueEntry command(int opcode, int sglId, long address, long length) {
        sqe.clear().opcode(opcode).flags(SubmissionQueueEntry.FLAGS_PSDT_SGL).commandId(7);
        SglDescriptor sgl = sqe.sgl1();
        sgl.id(sglId).address(address);
        if ((sglId >> 4) == SglDescriptor.TYPE_KEYED_DATA_BLOCK) {
            sgl.keyedLength((int) length).key(0x1234);
        } else {
            sgl.length(length);
        }
        return sqe;
    }

    @Test
    void shouldMapEachTransferKindOverTcp() {
        DataMapping tcp = DataMapping.forTcp();
        assertThat(tcp.map(command(WRITE, SglDescriptor.ID_IN_CAPSULE, 0, 4096), 4096, IN_CAPSULE_LIMIT, MAX))
            .isEqualTo(NvmeStatus.SUCCESS);
        assertThat(tcp.transfer()).isEqualTo(DataMapping.TRANSFER_IN_CAPSULE);
        assertThat(tcp.length()).isEqualTo(4096);
        assertThat(tcp.map(command(WRITE, SglDescriptor.ID_TCP_TRANSPORT, 0, 65536), 0, IN_CAPSULE_LIMIT, MAX))
            .isEqualTo(NvmeStatus.SUCCESS);
        assertThat(tcp.transfer()).isEqualTo(DataMapping.TRANSFER_FROM_HOST);
        assertThat(tcp.map(command(READ, SglDescriptor.ID_TCP_TRANSPORT, 0, MAX), 0, IN_CAPSULE_LIMIT, MAX))
            .isEqualTo(NvmeStatus.SUCCESS);
        assertThat(tcp.transfer()).isEqualTo(DataMapping.TRANSFER_TO_HOST);
        assertThat(tcp.length()).isEqualTo(MAX);
        assertThat(tcp.map(command(FLUSH, 0, 0, 0), 0, IN_CAPSULE_LIMIT, MAX)).isEqualTo(NvmeStatus.SUCCESS);
        assertThat(tcp.transfer()).isEqualTo(DataMapping.TRANSFER_NONE);
    }

    @Test
    void shouldRefuseBadTcpDescriptorsWithTheirStatus() {
        DataMapping tcp = DataMapping.forTcp();
        int dnr = NvmeStatus.DNR;
        // more in-capsule data than the queue takes, or no buffer for it at all
        assertThat(tcp.map(command(WRITE, SglDescriptor.ID_IN_CAPSULE, 0, 16384), 16384, IN_CAPSULE_LIMIT, MAX))
            .isEqualTo(NvmeStatus.SGL_OFFSET_INVALID | dnr);
        assertThat(tcp.map(command(WRITE, SglDescriptor.ID_IN_CAPSULE, 0, 0), 512, -1, MAX))
            .isEqualTo(NvmeStatus.SGL_OFFSET_INVALID | dnr);
        // the PDU carries another length than the SGL says
        assertThat(tcp.map(command(WRITE, SglDescriptor.ID_IN_CAPSULE, 0, 4096), 2048, IN_CAPSULE_LIMIT, MAX))
            .isEqualTo(NvmeStatus.SGL_DATA_LENGTH_INVALID | dnr);
        // in-capsule data on a read
        assertThat(tcp.map(command(READ, SglDescriptor.ID_IN_CAPSULE, 0, 512), 512, IN_CAPSULE_LIMIT, MAX))
            .isEqualTo(NvmeStatus.INVALID_FIELD | dnr);
        // data in the capsule that a transport data block does not describe
        assertThat(tcp.map(command(WRITE, SglDescriptor.ID_TCP_TRANSPORT, 0, 4096), 512, IN_CAPSULE_LIMIT, MAX))
            .isEqualTo(NvmeStatus.INVALID_FIELD | dnr);
        assertThat(tcp.map(command(WRITE, SglDescriptor.ID_TCP_TRANSPORT, 8, 4096), 0, IN_CAPSULE_LIMIT, MAX))
            .isEqualTo(NvmeStatus.SGL_OFFSET_INVALID | dnr);
        assertThat(tcp.map(command(READ, SglDescriptor.ID_TCP_TRANSPORT, 0, MAX + 1L), 0, IN_CAPSULE_LIMIT, MAX))
            .isEqualTo(NvmeStatus.SGL_DATA_LENGTH_INVALID | dnr);
        // data for a command that has none
        assertThat(tcp.map(command(FLUSH, SglDescriptor.ID_TCP_TRANSPORT, 0, 4096), 0, IN_CAPSULE_LIMIT, MAX))
            .isEqualTo(NvmeStatus.SGL_DATA_LENGTH_INVALID | dnr);
        // a keyed descriptor means nothing on NVMe/TCP
        assertThat(tcp.map(command(READ, SglDescriptor.ID_KEYED_ADDRESS, 0, 4096), 0, IN_CAPSULE_LIMIT, MAX))
            .isEqualTo(NvmeStatus.SGL_DESCRIPTOR_TYPE_INVALID | dnr);
        // PRPs: Invalid Field before the SGL is read
        command(READ, SglDescriptor.ID_TCP_TRANSPORT, 0, 4096).flags(0);
        assertThat(tcp.map(sqe, 0, IN_CAPSULE_LIMIT, MAX)).isEqualTo(NvmeStatus.INVALID_FIELD | dnr);
        assertThat(tcp.transfer()).isEqualTo(DataMapping.TRANSFER_NONE);
    }

    @Test
    void shouldMapKeyedTransfersOverRdma() {
        DataMapping rdma = DataMapping.forRdma();
        assertThat(rdma.map(command(WRITE, SglDescriptor.ID_KEYED_ADDRESS, 0x1000, 131072), 0, 4096, MAX))
            .isEqualTo(NvmeStatus.SUCCESS);
        assertThat(rdma.transfer()).isEqualTo(DataMapping.TRANSFER_FROM_HOST);
        assertThat(rdma.length()).isEqualTo(131072);
        assertThat(rdma.map(command(READ, SglDescriptor.ID_KEYED_INVALIDATE, 0x1000, 4096), 0, 4096, MAX))
            .isEqualTo(NvmeStatus.SUCCESS);
        assertThat(rdma.transfer()).isEqualTo(DataMapping.TRANSFER_TO_HOST);
        // a receive may carry more than the in-capsule SGL describes (nvmet ignores the rest)
        assertThat(rdma.map(command(WRITE, SglDescriptor.ID_IN_CAPSULE, 0, 512), 4096, 4096, MAX))
            .isEqualTo(NvmeStatus.SUCCESS);
        assertThat(rdma.transfer()).isEqualTo(DataMapping.TRANSFER_IN_CAPSULE);
        assertThat(rdma.length()).isEqualTo(512);
    }

    @Test
    void shouldRefuseBadRdmaDescriptorsWithTheirStatus() {
        DataMapping rdma = DataMapping.forRdma();
        int dnr = NvmeStatus.DNR;
        assertThat(rdma.map(command(WRITE, SglDescriptor.ID_IN_CAPSULE, 0, 8192), 8192, 4096, MAX))
            .isEqualTo(NvmeStatus.SGL_OFFSET_INVALID | dnr);
        assertThat(rdma.map(command(WRITE, SglDescriptor.ID_IN_CAPSULE, 0, 4096), 1024, 4096, MAX))
            .isEqualTo(NvmeStatus.SGL_DATA_LENGTH_INVALID | dnr);
        assertThat(rdma.map(command(READ, SglDescriptor.ID_KEYED_ADDRESS, 0, MAX + 4096), 0, 4096, MAX))
            .isEqualTo(NvmeStatus.SGL_DATA_LENGTH_INVALID | dnr);
        assertThat(rdma.map(command(READ, SglDescriptor.TYPE_KEYED_DATA_BLOCK << 4 | 0x5, 0, 4096), 0, 4096, MAX))
            .isEqualTo(NvmeStatus.SGL_DESCRIPTOR_TYPE_INVALID | dnr);
        assertThat(rdma.map(command(READ, SglDescriptor.ID_TCP_TRANSPORT, 0, 4096), 0, 4096, MAX))
            .isEqualTo(NvmeStatus.SGL_DESCRIPTOR_TYPE_INVALID | dnr);
        assertThat(rdma.map(command(FLUSH, SglDescriptor.ID_KEYED_ADDRESS, 0, 4096), 0, 4096, MAX))
            .isEqualTo(NvmeStatus.SGL_DATA_LENGTH_INVALID | dnr);
    }
}
