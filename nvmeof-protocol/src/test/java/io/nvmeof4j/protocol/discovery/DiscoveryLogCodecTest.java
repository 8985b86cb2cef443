package io.nvmeof4j.protocol.discovery;

import io.nvmeof4j.protocol.fabrics.Bytes;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class DiscoveryLogCodecTest {
    private static final String SUBNQN = "nqn.2024-01.io.nvmeof4j:test";

    @Test
    void shouldWriteTheHeader() {
        ByteBuffer b = Bytes.zeroes(2048);
        DiscoveryLogPage h = new DiscoveryLogPage().wrap(b, 0).clearHeader().generationCounter(0x0102030405060708L)
            .numberOfRecords(1).recordFormat(0);
        assertThat(Bytes.toHex(b, 0, 20)).isEqualTo("0807060504030201" + "0100000000000000" + "0000" + "0000");
        assertThat(h.generationCounter()).isEqualTo(0x0102030405060708L);
        assertThat(h.numberOfRecords()).isEqualTo(1);
        assertThat(DiscoveryLogPage.length(3)).isEqualTo(4096);
        assertThat(DiscoveryLogPage.entryOffset(0)).isEqualTo(1024);
        assertThat(DiscoveryLogPage.entryOffset(3)).isEqualTo(4096);
    }

    @Test
    void shouldWriteAnEntryLikeTheLinuxTarget() {
        ByteBuffer b = Bytes.zeroes(2048);
        for (int i = 1024; i < 2048; i++) {
            b.put(i, (byte) 0x33);
        }
        DiscoveryLogEntry e = new DiscoveryLogEntry().wrap(b, 1024).clear()
            .transportType(3).addressFamily(1).subsystemType(DiscoveryLogEntry.SUBTYPE_NVM)
            .transportRequirements(DiscoveryLogEntry.TREQ_DISABLE_SQ_FLOW_CONTROL).portId(1)
            .controllerId(DiscoveryLogEntry.CNTLID_DYNAMIC).adminMaxSqSize(32).entryFlags(0)
            .transportServiceId("4420").subsystemNqn(SUBNQN).transportAddress("10.0.0.1")
            .tcpSecurityType(DiscoveryLogEntry.TCP_SECTYPE_NONE);
        assertThat(Bytes.toHex(b, 1024, 12)).isEqualTo("03" + "01" + "02" + "04" + "0100" + "ffff" + "2000" + "0000");
        assertThat(Bytes.toHex(b, 1024 + 12, 20)).as("reserved").isEqualTo("00".repeat(20));
        assertThat(Bytes.toHex(b, 1024 + 32, 32)).as("TRSVCID NUL padded").isEqualTo("34343230" + "00".repeat(28));
        assertThat(b.get(1024 + 256)).isEqualTo((byte) 'n');
        assertThat(b.get(1024 + 256 + SUBNQN.length())).isZero();
        assertThat(Bytes.toHex(b, 1024 + 512, 9)).isEqualTo("31302e302e302e3100");
        assertThat(Bytes.toHex(b, 1024 + 768, 256)).as("TSAS").isEqualTo("00".repeat(256));
        assertThat(e.transportServiceId()).isEqualTo("4420");
        assertThat(e.transportAddress()).isEqualTo("10.0.0.1");
        assertThat(e.subsystemNqn()).isEqualTo(SUBNQN);
        assertThat(e.controllerId()).isEqualTo(0xFFFF);
        assertThat(e.adminMaxSqSize()).isEqualTo(32);
    }

    @Test
    void shouldReadSpacePaddedFieldsAsSpdkWritesThem() {
        ByteBuffer b = Bytes.zeroes(1024);
        Bytes.ascii(b, 32, "4420" + " ".repeat(28));
        Bytes.ascii(b, 512, "192.168.0.1" + " ".repeat(245));
        DiscoveryLogEntry e = new DiscoveryLogEntry().wrap(b, 0);
        assertThat(e.transportServiceId()).isEqualTo("4420");
        assertThat(e.transportAddress()).isEqualTo("192.168.0.1");
    }

    @Test
    void shouldWriteRdmaTransportSpecificAddressSubtype() {
        ByteBuffer b = Bytes.zeroes(1024);
        new DiscoveryLogEntry().wrap(b, 0).rdmaAttributes(DiscoveryLogEntry.RDMA_QPTYPE_CONNECTED,
            DiscoveryLogEntry.RDMA_PRTYPE_NOT_SPECIFIED, DiscoveryLogEntry.RDMA_CMS_RDMA_CM);
        assertThat(Bytes.toHex(b, 768, 4)).isEqualTo("01010100");
    }

    @Test
    void shouldRejectFieldsThatDoNotFit() {
        DiscoveryLogEntry e = new DiscoveryLogEntry().wrap(Bytes.zeroes(1024), 0);
        assertThatThrownBy(() -> e.transportServiceId("x".repeat(33))).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> e.subsystemNqn("n".repeat(256))).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new DiscoveryLogEntry().wrap(Bytes.zeroes(1000), 0)).isInstanceOf(IllegalArgumentException.class);
    }
}
