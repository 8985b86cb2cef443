package io.nvmeof4j.protocol.admin;

import io.nvmeof4j.protocol.fabrics.Bytes;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class IdentifyControllerTest {
    private static final String SUBNQN = "nqn.2024-01.io.nvmeof4j:test";

    @Test
    void shouldWriteEveryFieldAtItsOffset() {
        ByteBuffer b = Bytes.zeroes(4096);
        for (int i = 0; i < 4096; i++) {
            b.put(i, (byte) 0x77);
        }
        new IdentifyController().wrap(b, 0).clear()
            .vendorId(0x1b36).subsystemVendorId(0x1af4)
            .serialNumber("SN42").modelNumber("model").firmwareRevision("1.0")
            .recommendedArbitrationBurst(6).ieeeOui(0x0A1B2C)
            .multiPathCapabilities(0x03).maximumDataTransferSize(8).controllerId(0x0102).version(0x00010300)
            .optionalAsyncEvents(1 << 8).controllerAttributes(0x41).controllerType(1)
            .abortCommandLimit(3).asyncEventRequestLimit(3).firmwareUpdates(3).logPageAttributes(7)
            .errorLogPageEntries(63).keepAliveSupport(10)
            .submissionQueueEntrySize(0x66).completionQueueEntrySize(0x44).maxOutstandingCommands(128)
            .numberOfNamespaces(1024).optionalNvmCommands(0x0D).fusedOperations(0).volatileWriteCache(1)
            .atomicWriteUnitNormal(0).atomicWriteUnitPowerFail(0).sglSupport(0x00100001).maxAllowedNamespaces(1024)
            .subsystemNqn(SUBNQN)
            .ioCommandCapsuleSize(1028).ioResponseCapsuleSize(1).inCapsuleDataOffset(0)
            .fabricsControllerAttributes(0).maxSglDataBlockDescriptors(1).discoveryControllerType(0);

        assertThat(Bytes.toHex(b, 0, 4)).as("VID, SSVID").isEqualTo("361bf41a");
        assertThat(Bytes.toHex(b, 4, 20)).as("SN space padded").isEqualTo("534e3432" + "20".repeat(16));
        assertThat(Bytes.toHex(b, 24, 5)).isEqualTo("6d6f64656c");
        assertThat(b.get(29)).isEqualTo((byte) ' ');
        assertThat(b.get(63)).isEqualTo((byte) ' ');
        assertThat(Bytes.toHex(b, 64, 8)).as("FR").isEqualTo("312e302020202020");
        assertThat(b.get(72)).isEqualTo((byte) 6);
        assertThat(Bytes.toHex(b, 73, 3)).as("IEEE, LSB first").isEqualTo("2c1b0a");
        assertThat(b.get(76)).isEqualTo((byte) 3);
        assertThat(b.get(77)).isEqualTo((byte) 8);
        assertThat(Bytes.toHex(b, 78, 2)).isEqualTo("0201");
        assertThat(Bytes.toHex(b, 80, 4)).isEqualTo("00030100");
        assertThat(b.getInt(92)).isEqualTo(0x100);
        assertThat(b.getInt(96)).isEqualTo(0x41);
        assertThat(b.get(111)).isEqualTo((byte) 1);
        assertThat(b.get(258)).isEqualTo((byte) 3);
        assertThat(b.get(259)).isEqualTo((byte) 3);
        assertThat(b.get(260)).isEqualTo((byte) 3);
        assertThat(b.get(261)).isEqualTo((byte) 7);
        assertThat(b.get(262)).isEqualTo((byte) 63);
        assertThat(b.getShort(320)).isEqualTo((short) 10);
        assertThat(b.get(512)).isEqualTo((byte) 0x66);
        assertThat(b.get(513)).isEqualTo((byte) 0x44);
        assertThat(b.getShort(514)).isEqualTo((short) 128);
        assertThat(b.getInt(516)).isEqualTo(1024);
        assertThat(b.getShort(520)).isEqualTo((short) 0x0D);
        assertThat(b.get(525)).isEqualTo((byte) 1);
        assertThat(b.getInt(536)).isEqualTo(0x00100001);
        assertThat(b.getInt(540)).isEqualTo(1024);
        assertThat(b.get(768)).isEqualTo((byte) 'n');
        assertThat(b.get(768 + SUBNQN.length())).isZero();
        assertThat(b.getInt(1792)).isEqualTo(1028);
        assertThat(b.getInt(1796)).isEqualTo(1);
        assertThat(b.getShort(1800)).isZero();
        assertThat(b.get(1803)).isEqualTo((byte) 1);
        assertThat(b.get(4095)).as("cleared").isZero();
        assertThat(b.get(2048)).isZero();
    }

    @Test
    void shouldReadBackWhatItWrote() {
        ByteBuffer b = Bytes.zeroes(8192);
        IdentifyController id = new IdentifyController().wrap(b, 4096).clear()
            .serialNumber("12345678901234567890").modelNumber("M").firmwareRevision("FW")
            .subsystemNqn(SUBNQN).controllerId(0xFFEF).keepAliveSupport(1).sglSupport(0x00100005)
            .controllerType(IdentifyController.CNTRLTYPE_DISCOVERY).logPageAttributes(IdentifyController.LPA_EXTENDED_DATA)
            .optionalAsyncEvents(IdentifyController.OAES_DISCOVERY_LOG_CHANGE_NOTICES).ieeeOui(0x123456);
        assertThat(id.serialNumber()).isEqualTo("12345678901234567890");
        assertThat(id.modelNumber()).isEqualTo("M");
        assertThat(id.firmwareRevision()).isEqualTo("FW");
        assertThat(id.subsystemNqn()).isEqualTo(SUBNQN);
        assertThat(id.controllerId()).isEqualTo(0xFFEF);
        assertThat(id.keepAliveSupport()).isEqualTo(1);
        assertThat(id.sglSupport()).isEqualTo(0x00100005);
        assertThat(id.controllerType()).isEqualTo(2);
        assertThat(id.logPageAttributes()).isEqualTo(4);
        assertThat(id.optionalAsyncEvents()).isEqualTo(0x8000_0000);
        assertThat(id.ieeeOui()).isEqualTo(0x123456);
    }

    @Test
    void shouldRejectStringsThatDoNotFitOrAreNotAscii() {
        IdentifyController id = new IdentifyController().wrap(Bytes.zeroes(4096), 0);
        assertThatThrownBy(() -> id.serialNumber("123456789012345678901")).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> id.firmwareRevision("1.2.3.4.5")).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> id.modelNumber("modèle")).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> id.modelNumber("tab\there")).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new IdentifyController().wrap(Bytes.zeroes(4000), 0)).isInstanceOf(IllegalArgumentException.class);
    }
}
