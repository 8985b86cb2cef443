package io.nvmeof4j.protocol.fabrics;

import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;

import static org.assertj.core.api.Assertions.assertThat;

class PropertyCommandTest {
    @Test
    void shouldDecodePropertyGetCap() {
        ByteBuffer b = Bytes.hex(64,
            "7f 40 05 00 04 00 00 00 00 00 00 00 00 00 00 00"
          + "00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00"
          + "00 00 00 00 00 00 00 00 01 00 00 00 00 00 00 00"); // ATTRIB 1 (8 bytes), OFST 0 (CAP)
        PropertyCommand p = new PropertyCommand().wrap(b, 0);
        assertThat(b.get(4)).isEqualTo((byte) FabricsCommandType.PROPERTY_GET);
        assertThat(p.isEightBytes()).isTrue();
        assertThat(p.propertyOffset()).isEqualTo(ControllerRegisters.CAP);
    }

    @Test
    void shouldEncodePropertySetCcEnable() {
        ByteBuffer b = Bytes.zeroes(64);
        new PropertyCommand().wrap(b, 0).init(9, FabricsCommandType.PROPERTY_SET).attributes(0)
            .propertyOffset(ControllerRegisters.CC).value(0x00460001);
        assertThat(Bytes.toHex(b, 0, 8)).isEqualTo("7f40090000000000");
        assertThat(Bytes.toHex(b, 40, 16)).isEqualTo("00000000" + "14000000" + "0100460000000000");
        PropertyCommand p = new PropertyCommand().wrap(b, 0);
        assertThat(p.sizeCode()).isEqualTo(PropertyCommand.SIZE_4_BYTES);
        assertThat(p.value()).isEqualTo(0x00460001);
    }

    @Test
    void shouldBuildAndReadControllerRegisters() {
        long cap = ControllerRegisters.capabilities(128, 15, true);
        assertThat(cap).as("CSS bits 37 and 43, as nvmet_init_cap").isEqualTo(0x0000_0820_0F01_007FL);
        assertThat(ControllerRegisters.capMaxQueueEntries(cap)).isEqualTo(128);
        assertThat(ControllerRegisters.capTimeout(cap)).isEqualTo(15);
        assertThat(ControllerRegisters.capMpsMin(cap)).isZero();
        assertThat(ControllerRegisters.capDoorbellStride(cap)).isZero();
        assertThat(cap & ControllerRegisters.CAP_CSS_NVM).isNotZero();
        assertThat(ControllerRegisters.VERSION_1_3).isEqualTo(0x00010300);

        int cc = 0x00460001;
        assertThat(ControllerRegisters.ccEnabled(cc)).isTrue();
        assertThat(ControllerRegisters.ccIoSqEntrySize(cc)).isEqualTo(6);
        assertThat(ControllerRegisters.ccIoCqEntrySize(cc)).isEqualTo(4);
        assertThat(ControllerRegisters.ccCommandSet(cc)).isZero();
        assertThat(ControllerRegisters.ccMemoryPageSize(cc)).isZero();
        assertThat(ControllerRegisters.ccShutdownNotification(0x00464001)).isEqualTo(ControllerRegisters.CC_SHN_NORMAL);
        assertThat(ControllerRegisters.ccCommandSet(0x00460061)).isEqualTo(6);
        assertThat(ControllerRegisters.cc(true, 0, 0, 0, 0, 6, 4)).isEqualTo(cc);
        assertThat(ControllerRegisters.cc(false, 0, 0, 0, 1, 6, 4)).isEqualTo(0x00464000);

        int csts = ControllerRegisters.CSTS_RDY | ControllerRegisters.CSTS_SHST_COMPLETE;
        assertThat(csts).isEqualTo(0x9);
        assertThat(ControllerRegisters.cstsReady(csts)).isTrue();
        assertThat(ControllerRegisters.cstsFatal(csts)).isFalse();
        assertThat(ControllerRegisters.cstsShutdownStatus(csts)).isEqualTo(ControllerRegisters.SHST_COMPLETE);
    }
}
