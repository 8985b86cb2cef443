package io.nvmeof4j.protocol.admin;

import io.nvmeof4j.protocol.fabrics.Bytes;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class IdentifyNamespaceTest {
    private static final byte[] NGUID = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};

    @Test
    void shouldWriteIdentifyNamespaceFieldsAtTheirOffsets() {
        ByteBuffer b = Bytes.zeroes(4096);
        IdentifyNamespace id = new IdentifyNamespace().wrap(b, 0).clear()
            .size(0x1_0000_0000L).capacity(0x1_0000_0000L).utilization(0x8000)
            .features(IdentifyNamespace.NSFEAT_THIN_PROVISIONING).lbaFormatCount(1).formattedLbaSize(1)
            .multiPathCapabilities(IdentifyNamespace.NMIC_SHARED)
            .deallocateFeatures(IdentifyNamespace.DLFEAT_READ_ZEROES | IdentifyNamespace.DLFEAT_WRITE_ZEROES_DEALLOCATE)
            .preferredWriteGranularity(7).optimalWriteSize(255).anaGroupId(1)
            .attributes(IdentifyNamespace.NSATTR_WRITE_PROTECTED).enduranceGroupId(1)
            .nguid(NGUID).eui64(new byte[] {(byte) 0xAA, 0, 0, 0, 0, 0, 0, (byte) 0xBB})
            .lbaFormat(0, 0, 9, 0).lbaFormat(1, 8, 12, 2);
        assertThat(Bytes.toHex(b, 0, 8)).as("NSZE").isEqualTo("0000000001000000");
        assertThat(b.getLong(8)).isEqualTo(0x1_0000_0000L);
        assertThat(b.getLong(16)).isEqualTo(0x8000);
        assertThat(b.get(24)).isEqualTo((byte) 1);
        assertThat(b.get(25)).isEqualTo((byte) 1);
        assertThat(b.get(26)).isEqualTo((byte) 1);
        assertThat(b.get(30)).isEqualTo((byte) 1);
        assertThat(b.get(33)).as("DLFEAT").isEqualTo((byte) 0x09);
        assertThat(b.getShort(64)).as("NPWG").isEqualTo((short) 7);
        assertThat(b.getShort(72)).as("NOWS").isEqualTo((short) 255);
        assertThat(b.getInt(92)).as("ANAGRPID").isEqualTo(1);
        assertThat(b.get(99)).as("NSATTR").isEqualTo((byte) 1);
        assertThat(b.getShort(102)).as("ENDGID").isEqualTo((short) 1);
        assertThat(Bytes.toHex(b, 104, 16)).isEqualTo("0102030405060708090a0b0c0d0e0f10");
        assertThat(Bytes.toHex(b, 120, 8)).isEqualTo("aa000000000000bb");
        assertThat(Bytes.toHex(b, 128, 8)).as("LBAF0 512 B, LBAF1 4 KiB + 8 B metadata").isEqualTo("00000900" + "08000c02");
        assertThat(id.lbaFormatDataSizeShift(1)).isEqualTo(12);
        assertThat(id.lbaFormatMetadataSize(1)).isEqualTo(8);
        assertThat(id.lbaFormatRelativePerformance(1)).isEqualTo(2);
        assertThat(id.nguid()).containsExactly(NGUID);
        assertThatThrownBy(() -> id.lbaFormat(64, 0, 9, 0)).isInstanceOf(IndexOutOfBoundsException.class);
        assertThatThrownBy(() -> id.nguid(new byte[8])).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void shouldWriteTheCommandSetIndependentNamespace() {
        ByteBuffer b = Bytes.zeroes(4096);
        IoCommandSetIndependentNamespace id = new IoCommandSetIndependentNamespace().wrap(b, 0).clear()
            .multiPathCapabilities(1).anaGroupId(2).attributes(1).enduranceGroupId(3)
            .status(IoCommandSetIndependentNamespace.NSTAT_READY);
        assertThat(b.get(1)).isEqualTo((byte) 1);
        assertThat(b.getInt(4)).isEqualTo(2);
        assertThat(b.get(8)).isEqualTo((byte) 1);
        assertThat(b.getShort(12)).isEqualTo((short) 3);
        assertThat(b.get(14)).as("NSTAT").isEqualTo((byte) 1);
        assertThat(id.isReady()).isTrue();
    }

    @Test
    void shouldWriteAndWalkTheDescriptorList() {
        ByteBuffer b = Bytes.zeroes(4096);
        for (int i = 0; i < 4096; i++) {
            b.put(i, (byte) 0x5A);
        }
        UUID uuid = UUID.fromString("6f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9");
        NamespaceIdDescriptorList list = new NamespaceIdDescriptorList().wrap(b, 0).clear()
            .addEui64(new byte[] {1, 2, 3, 4, 5, 6, 7, 8}).addNguid(NGUID).addUuid(uuid).addCommandSetIdentifier(0);
        assertThat(Bytes.toHex(b, 0, 12)).isEqualTo("01080000" + "0102030405060708");
        assertThat(Bytes.toHex(b, 12, 4)).isEqualTo("02100000");
        assertThat(Bytes.toHex(b, 32, 20)).isEqualTo("03100000" + "6f1e2d3c4b5a49788695a4b3c2d1e0f9");
        assertThat(Bytes.toHex(b, 52, 5)).isEqualTo("0401000000");
        assertThat(list.writtenLength()).isEqualTo(57);
        assertThat(b.get(57)).as("terminator NIDT").isZero();
        assertThat(b.get(58)).as("terminator NIDL").isZero();

        assertThat(list.find(NamespaceIdDescriptorList.NIDT_UUID)).isEqualTo(32);
        assertThat(NamespaceIdDescriptorList.uuid(list.id(32))).isEqualTo(uuid);
        assertThat(list.find(NamespaceIdDescriptorList.NIDT_CSI)).isEqualTo(52);
        int at = 0;
        int count = 0;
        while (list.idLength(at) != 0) {
            count++;
            at = list.nextEntry(at);
        }
        assertThat(count).isEqualTo(4);
        assertThatThrownBy(() -> list.addNguid(new byte[8])).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void shouldWriteTheActiveNamespaceList() {
        ByteBuffer b = Bytes.zeroes(4096);
        ActiveNamespaceIdList list = new ActiveNamespaceIdList().wrap(b, 0).clear().nsid(0, 1).nsid(1, 0x8000_0001);
        assertThat(Bytes.toHex(b, 0, 12)).isEqualTo("01000000" + "01000080" + "00000000");
        assertThat(list.count()).isEqualTo(2);
        assertThatThrownBy(() -> list.nsid(1024, 1)).isInstanceOf(IndexOutOfBoundsException.class);
    }

    @Test
    void shouldWriteTheIdentifyCommand() {
        ByteBuffer b = Bytes.zeroes(64);
        IdentifyCommand c = new IdentifyCommand().wrap(b, 0).init(0x21, 7, IdentifyCommand.CNS_NAMESPACE_ID_DESCRIPTORS)
            .controllerId(0x0102).cnsSpecificId(0x0304).commandSetIdentifier(0);
        assertThat(Bytes.toHex(b, 0, 8)).isEqualTo("0640210007000000");
        assertThat(Bytes.toHex(b, 40, 8)).isEqualTo("0300" + "0201" + "0403" + "0000");
        assertThat(c.cns()).isEqualTo(3);
        assertThat(c.nsid()).isEqualTo(7);
        assertThat(c.controllerId()).isEqualTo(0x0102);
        c.commandSetIdentifier(2);
        assertThat(b.get(47)).isEqualTo((byte) 2);
        assertThat(c.commandSetIdentifier()).isEqualTo(2);
    }
}
