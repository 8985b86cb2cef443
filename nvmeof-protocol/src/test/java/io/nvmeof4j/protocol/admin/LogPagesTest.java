package io.nvmeof4j.protocol.admin;

import io.nvmeof4j.protocol.fabrics.Bytes;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class LogPagesTest {
    @Test
    void shouldWriteAnErrorLogEntry() {
        ByteBuffer b = Bytes.zeroes(128);
        ErrorLogEntry e = new ErrorLogEntry().wrap(b, 64).clear().errorCount(5).submissionQueueId(1).commandId(0x1234)
            .statusField(0x8004).parameterErrorLocation(ErrorLogEntry.NO_LOCATION).lba(0x1122334455L).nsid(1)
            .transportType(3);
        assertThat(Bytes.toHex(b, 64, 32)).isEqualTo("0500000000000000" + "0100" + "3412" + "0480" + "ffff"
            + "5544332211000000" + "01000000" + "00" + "03" + "0000");
        assertThat(e.errorCount()).isEqualTo(5);
        assertThat(e.statusField()).isEqualTo(0x8004);
        assertThat(e.transportType()).isEqualTo(3);
    }

    @Test
    void shouldWriteSmartCountersAs128Bit() {
        ByteBuffer b = Bytes.zeroes(512);
        for (int i = 0; i < 512; i++) {
            b.put(i, (byte) 0xFF);
        }
        SmartLog s = new SmartLog().wrap(b, 0).clear().criticalWarning(0).compositeTemperatureKelvin(310)
            .availableSpare(100).availableSpareThreshold(10).dataUnitsRead(SmartLog.dataUnits(512_001))
            .dataUnitsWritten(7).hostReadCommands(-1L).errorLogEntries(2);
        assertThat(Bytes.toHex(b, 0, 6)).isEqualTo("00" + "3601" + "64" + "0a" + "00");
        assertThat(Bytes.toHex(b, 32, 16)).as("data units read: 512,001 bytes round up to 2").isEqualTo("02" + "00".repeat(15));
        assertThat(b.getLong(48)).isEqualTo(7);
        assertThat(b.getLong(56)).isZero();
        assertThat(Bytes.toHex(b, 64, 16)).as("unsigned 64-bit into 128").isEqualTo("ff".repeat(8) + "00".repeat(8));
        assertThat(b.getLong(176)).isEqualTo(2);
        assertThat(s.hostReadCommands()).isEqualTo(-1L);
        assertThat(SmartLog.dataUnits(0)).isZero();
        assertThat(SmartLog.dataUnits(512_000)).isEqualTo(1);
    }

    @Test
    void shouldWriteTheFirmwareSlotLog() {
        ByteBuffer b = Bytes.zeroes(512);
        FirmwareSlotLog f = new FirmwareSlotLog().wrap(b, 0).clear().activeFirmwareInfo(1).revision(1, "1.2.3");
        assertThat(b.get(0)).isEqualTo((byte) 1);
        assertThat(Bytes.toHex(b, 8, 8)).isEqualTo("312e322e33202020");
        assertThat(b.getLong(16)).isZero();
        assertThat(f.activeSlot()).isEqualTo(1);
        assertThat(f.revision(1)).isEqualTo("1.2.3");
        assertThatThrownBy(() -> f.revision(8, "x")).isInstanceOf(IndexOutOfBoundsException.class);
        assertThatThrownBy(() -> f.revision(0)).isInstanceOf(IndexOutOfBoundsException.class);
    }

    @Test
    void shouldWriteTheChangedNamespaceListAndItsOverflowMarker() {
        ByteBuffer b = Bytes.zeroes(4096);
        ChangedNamespaceList l = new ChangedNamespaceList().wrap(b, 0).clear().nsid(0, 3).nsid(1, 9);
        assertThat(Bytes.toHex(b, 0, 12)).isEqualTo("03000000" + "09000000" + "00000000");
        assertThat(l.count()).isEqualTo(2);
        assertThat(l.isOverflow()).isFalse();
        l.markOverflow();
        assertThat(Bytes.toHex(b, 0, 8)).isEqualTo("ffffffff00000000");
        assertThat(l.isOverflow()).isTrue();
    }

    @Test
    void shouldWriteCommandsSupportedAndEffects() {
        ByteBuffer b = Bytes.zeroes(4096);
        CommandsSupportedAndEffects e = new CommandsSupportedAndEffects().wrap(b, 0).clear()
            .admin(AdminOpcode.IDENTIFY, CommandsSupportedAndEffects.CSUPP)
            .io(0x01, CommandsSupportedAndEffects.CSUPP | CommandsSupportedAndEffects.LBCC);
        assertThat(b.getInt(6 * 4)).isEqualTo(1);
        assertThat(b.getInt(1024 + 4)).isEqualTo(3);
        assertThat(e.io(0x01)).isEqualTo(3);
        assertThat(e.admin(AdminOpcode.GET_LOG_PAGE)).isZero();
        assertThatThrownBy(() -> e.admin(256, 1)).isInstanceOf(IndexOutOfBoundsException.class);
    }

    @Test
    void shouldWriteSupportedLogPages() {
        ByteBuffer b = Bytes.zeroes(1024);
        new SupportedLogPages().wrap(b, 0).clear().descriptor(LogPageIdentifier.CHANGED_NAMESPACE_LIST, SupportedLogPages.LSUPP);
        assertThat(b.getInt(16)).isEqualTo(1);
        assertThat(b.getInt(0)).isZero();
    }
}
