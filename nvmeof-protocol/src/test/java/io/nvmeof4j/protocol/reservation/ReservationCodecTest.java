package io.nvmeof4j.protocol.reservation;

import io.nvmeof4j.protocol.HostId;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.UUID;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class ReservationCodecTest {
    @Test
    void shouldEncodeAndDecodeCdw10Fields() {
        int cdw10 = ReservationCommand.cdw10(ReservationCommand.REPLACE, true, 0, ReservationCommand.CPTPL_SET);
        assertEquals(0xC000000A, cdw10);
        assertEquals(ReservationCommand.REPLACE, ReservationCommand.action(cdw10));
        assertTrue(ReservationCommand.ignoreExistingKey(cdw10));
        assertEquals(ReservationCommand.CPTPL_SET, ReservationCommand.changePtpl(cdw10));
        int acquire = ReservationCommand.cdw10(ReservationCommand.PREEMPT, false,
            ReservationType.EXCLUSIVE_ACCESS_ALL_REGISTRANTS, 0);
        assertEquals(0x0601, acquire);
        assertEquals(6, ReservationCommand.type(acquire));
    }

    @Test
    void shouldWriteRegularStatusAtSpecOffsets() {
        ByteBuffer b = ByteBuffer.allocate(ReservationStatusData.length(2, false)).order(ByteOrder.LITTLE_ENDIAN);
        ReservationStatusData d = new ReservationStatusData().wrap(b, 0, false);
        d.generation(3).type(ReservationType.WRITE_EXCLUSIVE).registeredControllers(2).persistThroughPowerLoss(true);
        d.controllerId(1, 0x21).holdsReservation(1, true).hostId64(1, 0x1122334455667788L).key(1, 0xABCDL);
        assertEquals(72, b.capacity());
        assertEquals(3, b.getInt(0));
        assertEquals(1, b.get(4));
        assertEquals(2, b.getShort(5));
        assertEquals(1, b.get(9));
        assertEquals(0x21, b.getShort(48));
        assertEquals(1, b.get(50));
        assertEquals(0x1122334455667788L, b.getLong(56));
        assertEquals(0xABCDL, b.getLong(64));
        assertThrows(IllegalStateException.class, () -> d.hostId(0));
    }

    @Test
    void shouldWriteExtendedStatusWith128BitHostId() {
        ByteBuffer b = ByteBuffer.allocate(ReservationStatusData.length(1, true)).order(ByteOrder.LITTLE_ENDIAN);
        ReservationStatusData d = new ReservationStatusData().wrap(b, 0, true);
        HostId id = new HostId(UUID.fromString("00112233-4455-6677-8899-aabbccddeeff"));
        d.controllerId(0, 5).key(0, 42).hostId(0, id).holdsReservation(0, false);
        assertEquals(128, b.capacity());
        assertEquals(5, b.getShort(64));
        assertEquals(42, b.getLong(72));
        assertEquals(0x00, b.get(80));
        assertEquals((byte) 0xFF, b.get(95));
        assertEquals(id, d.hostId(0));
        assertFalse(d.holdsReservation(0));
    }

    @Test
    void shouldApplyTheConflictTablePerType() {
        // non-registrant, not holder: reads allowed only under Write Exclusive types
        for (int type = 1; type <= 6; type++) {
            boolean exclusiveAccess = type == 2 || type == 4 || type == 6;
            assertEquals(!exclusiveAccess, ReservationType.permits(type, false, false, false), "read " + type);
            assertFalse(ReservationType.permits(type, false, false, true), "write " + type);
            assertTrue(ReservationType.permits(type, true, true, true), "holder " + type);
            // a registrant that does not hold: allowed only for registrants types
            assertEquals(type >= 3, ReservationType.permits(type, false, true, true), "registrant write " + type);
        }
    }

    @Test
    void shouldLayOutNotificationLog() {
        ByteBuffer b = ByteBuffer.allocate(64).order(ByteOrder.LITTLE_ENDIAN);
        new ReservationNotificationLog().wrap(b, 0).clear().count(9)
            .type(ReservationNotificationLog.TYPE_RESERVATION_PREEMPTED).available(300).nsid(4);
        assertEquals(9, b.getLong(0));
        assertEquals(3, b.get(8));
        assertEquals((byte) 0xFF, b.get(9));
        assertEquals(4, b.getInt(12));
        assertEquals(1 << 3, ReservationNotificationLog.maskBit(ReservationNotificationLog.TYPE_RESERVATION_PREEMPTED));
    }
}
