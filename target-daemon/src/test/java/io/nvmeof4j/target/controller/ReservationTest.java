package io.nvmeof4j.target.controller;

import io.nvmeof4j.protocol.HostId;
import io.nvmeof4j.protocol.admin.AsyncEvent;
import io.nvmeof4j.protocol.admin.FeatureIdentifier;
import io.nvmeof4j.protocol.admin.IdentifyCommand;
import io.nvmeof4j.protocol.admin.LogPageIdentifier;
import io.nvmeof4j.protocol.command.NvmeStatus;
import io.nvmeof4j.protocol.fabrics.ControllerRegisters;
import io.nvmeof4j.protocol.reservation.ReservationCommand;
import io.nvmeof4j.protocol.reservation.ReservationNotificationLog;
import io.nvmeof4j.protocol.reservation.ReservationStatusData;
import io.nvmeof4j.protocol.reservation.ReservationType;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Reservations on namespace 1 seen by three hosts, each with its own controller: A (will hold), B (registrant),
 * C (never registers). Every type against every kind of host, for reads and writes, and the commands' rules.
 */
class ReservationTest {
    private static final int CONFLICT = NvmeStatus.RESERVATION_CONFLICT | NvmeStatus.DNR;
    private static final int INVALID_FIELD = NvmeStatus.INVALID_FIELD | NvmeStatus.DNR;
    private static final long KEY_A = 0xA1L;
    private static final long KEY_B = 0xB2L;

    private final TestTarget target = new TestTarget();
    private Path a;
    private Path b;
    private Path c;

    /** One host's controller on the test subsystem: admin and one I/O queue. */
    private final class Path {
        final TestHost host;
        final FakeQueue admin;
        final FakeQueue io;
        final int cntlid;

        Path(String nqn, String hostId) {
            host = new TestHost(target.factory, nqn, HostId.parse(hostId), TestTarget.PORT1_ADDRESS);
            admin = host.openQueue();
            cntlid = host.connect(admin, 0, 31, 5000, TestTarget.SUBNQN, 0xFFFF).dw0() & 0xFFFF;
            assertThat(host.propertySet(admin, ControllerRegisters.CC, 0x00460001).status()).isEqualTo(NvmeStatus.SUCCESS);
            io = host.openQueue();
            assertThat(host.connect(io, 1, 31, 0, TestTarget.SUBNQN, cntlid, nqn, 0).status())
                .isEqualTo(NvmeStatus.SUCCESS);
        }

        int register(int action, boolean iekey, int cptpl, long crkey, long nrkey) {
            return keys(ReservationCommand.OPC_REGISTER, ReservationCommand.cdw10(action, iekey, 0, cptpl), crkey, nrkey,
                16);
        }

        int acquire(int action, int type, long crkey, long prkey) {
            return keys(ReservationCommand.OPC_ACQUIRE, ReservationCommand.cdw10(action, false, type, 0), crkey, prkey,
                16);
        }

        int release(int action, int type, long crkey) {
            return keys(ReservationCommand.OPC_RELEASE, ReservationCommand.cdw10(action, false, type, 0), crkey, 0, 8);
        }

        int keys(int opcode, int cdw10, long k1, long k2, int length) {
            return host.submit(io, length, e -> e.opcode(opcode).nsid(1).cdw(10, cdw10), r -> {
                ByteBuffer d = r.data().order(ByteOrder.LITTLE_ENDIAN);
                d.putLong(0, k1);
                if (length > 8) {
                    d.putLong(8, k2);
                }
            }).status();
        }

        FakeRequest report(int bytes, boolean eds) {
            return host.submit(io, bytes, e -> e.opcode(ReservationCommand.OPC_REPORT).nsid(1).cdw(10, bytes / 4 - 1)
                .cdw(11, eds ? ReservationCommand.REPORT_EDS : 0));
        }

        int write() {
            return host.submit(io, 512, e -> e.opcode(0x01).nsid(1).cdw10And11(0)).status();
        }

        int read() {
            return host.submit(io, 512, e -> e.opcode(0x02).nsid(1).cdw10And11(0)).status();
        }
    }

    @BeforeEach
    void connect() {
        a = new Path("nqn.2014-08.org.nvmexpress:uuid:aaaaaaaa-0000-4000-8000-000000000001",
            "aaaaaaaa-0000-4000-8000-000000000001");
        b = new Path("nqn.2014-08.org.nvmexpress:uuid:bbbbbbbb-0000-4000-8000-000000000002",
            "bbbbbbbb-0000-4000-8000-000000000002");
        c = new Path("nqn.2014-08.org.nvmexpress:uuid:cccccccc-0000-4000-8000-000000000003",
            "cccccccc-0000-4000-8000-000000000003");
    }

    @AfterEach
    void tearDown() {
        target.close();
    }

    @Test
    void shouldAdvertiseReservationsInIdentify() {
        ByteBuffer id = a.host.identify(a.admin, IdentifyCommand.CNS_CONTROLLER, 0).data();
        assertThat(id.getShort(520) & 1 << 5).as("ONCS reservations").isNotZero();
        ByteBuffer ns = a.host.identify(a.admin, IdentifyCommand.CNS_NAMESPACE, 1).data();
        assertThat(ns.get(31) & 0xFF).as("RESCAP: PTPL, six types, IEKEY").isEqualTo(0xFF);
    }

    @Test
    void shouldApplyEveryTypeToHolderRegistrantAndNonRegistrant() {
        for (int type = 1; type <= 6; type++) {
            assertThat(a.register(ReservationCommand.REGISTER, false, 0, 0, KEY_A)).isEqualTo(NvmeStatus.SUCCESS);
            assertThat(b.register(ReservationCommand.REGISTER, false, 0, 0, KEY_B)).isEqualTo(NvmeStatus.SUCCESS);
            assertThat(a.acquire(ReservationCommand.ACQUIRE, type, KEY_A, 0)).as("acquire " + type)
                .isEqualTo(NvmeStatus.SUCCESS);
            boolean exclusiveAccess = ReservationType.isExclusiveAccess(type);
            boolean registrants = ReservationType.isRegistrantsType(type);
            String t = ReservationType.name(type);
            assertThat(a.write()).as(t + ": holder writes").isEqualTo(NvmeStatus.SUCCESS);
            assertThat(a.read()).as(t + ": holder reads").isEqualTo(NvmeStatus.SUCCESS);
            assertThat(b.write()).as(t + ": registrant writes").isEqualTo(registrants ? NvmeStatus.SUCCESS : CONFLICT);
            assertThat(b.read()).as(t + ": registrant reads")
                .isEqualTo(registrants || !exclusiveAccess ? NvmeStatus.SUCCESS : CONFLICT);
            assertThat(c.write()).as(t + ": non-registrant writes").isEqualTo(CONFLICT);
            assertThat(c.read()).as(t + ": non-registrant reads").isEqualTo(exclusiveAccess ? CONFLICT : NvmeStatus.SUCCESS);
            // Another host cannot acquire a held reservation; the holder re-acquiring the same type is fine.
            assertThat(b.acquire(ReservationCommand.ACQUIRE, type, KEY_B, 0)).as(t)
                .isEqualTo(ReservationType.isAllRegistrantsType(type) ? NvmeStatus.SUCCESS : CONFLICT);
            assertThat(a.acquire(ReservationCommand.ACQUIRE, type, KEY_A, 0)).isEqualTo(NvmeStatus.SUCCESS);
            assertThat(a.acquire(ReservationCommand.ACQUIRE, type == 1 ? 2 : 1, KEY_A, 0)).as("other type").isEqualTo(CONFLICT);
            assertThat(a.release(ReservationCommand.CLEAR, 0, KEY_A)).isEqualTo(NvmeStatus.SUCCESS);
            assertThat(c.write()).as(t + ": cleared").isEqualTo(NvmeStatus.SUCCESS);
        }
    }

    @Test
    void shouldFollowRegisterRules() {
        assertThat(c.acquire(ReservationCommand.ACQUIRE, 1, 0, 0)).as("not registered").isEqualTo(CONFLICT);
        assertThat(a.register(ReservationCommand.REGISTER, false, 0, 0, 0)).as("zero key").isEqualTo(INVALID_FIELD);
        assertThat(a.register(ReservationCommand.REGISTER, false, 0, 0, KEY_A)).isEqualTo(NvmeStatus.SUCCESS);
        assertThat(a.register(ReservationCommand.REGISTER, false, 0, 0, KEY_A)).as("same key again").isEqualTo(NvmeStatus.SUCCESS);
        assertThat(a.register(ReservationCommand.REGISTER, false, 0, 0, 7)).as("another key").isEqualTo(CONFLICT);
        assertThat(a.register(ReservationCommand.REPLACE, false, 0, 99, 7)).as("wrong CRKEY").isEqualTo(CONFLICT);
        assertThat(a.register(ReservationCommand.REPLACE, false, 0, KEY_A, 7)).isEqualTo(NvmeStatus.SUCCESS);
        assertThat(a.register(ReservationCommand.REPLACE, true, 0, 12345, KEY_A)).as("IEKEY").isEqualTo(NvmeStatus.SUCCESS);
        assertThat(b.register(ReservationCommand.REPLACE, false, 0, 0, KEY_B)).as("replace unregistered").isEqualTo(CONFLICT);
        assertThat(b.register(ReservationCommand.REPLACE, true, 0, 0, KEY_B)).as("IEKEY registers").isEqualTo(NvmeStatus.SUCCESS);
        assertThat(a.register(ReservationCommand.REGISTER, false, 1, 0, KEY_A)).as("CPTPL 01b reserved").isEqualTo(INVALID_FIELD);
        assertThat(a.register(3, false, 0, 0, KEY_A)).as("RREGA 3").isEqualTo(INVALID_FIELD);
        assertThat(a.acquire(ReservationCommand.ACQUIRE, 7, KEY_A, 0)).as("RTYPE 7").isEqualTo(INVALID_FIELD);
        assertThat(a.acquire(ReservationCommand.ACQUIRE, 1, KEY_A, 0)).isEqualTo(NvmeStatus.SUCCESS);
        assertThat(b.write()).isEqualTo(CONFLICT);
        assertThat(a.release(ReservationCommand.RELEASE, 2, KEY_A)).as("wrong type").isEqualTo(INVALID_FIELD);
        assertThat(b.release(ReservationCommand.RELEASE, 1, KEY_B)).as("non-holder release: no-op")
            .isEqualTo(NvmeStatus.SUCCESS);
        assertThat(b.write()).isEqualTo(CONFLICT);
        assertThat(a.register(ReservationCommand.UNREGISTER, false, 0, 1, 0)).as("wrong key").isEqualTo(CONFLICT);
        assertThat(a.register(ReservationCommand.UNREGISTER, false, 0, KEY_A, 0)).as("holder leaves")
            .isEqualTo(NvmeStatus.SUCCESS);
        assertThat(b.write()).as("reservation went with its holder").isEqualTo(NvmeStatus.SUCCESS);
        // Wrong transfer lengths
        assertThat(a.keys(ReservationCommand.OPC_REGISTER, 0, 0, KEY_A, 8))
            .isEqualTo(NvmeStatus.SGL_DATA_LENGTH_INVALID | NvmeStatus.DNR);
    }

    @Test
    void shouldPreemptAndNotifyThePreempted() {
        assertThat(a.register(ReservationCommand.REGISTER, false, 0, 0, KEY_A)).isEqualTo(NvmeStatus.SUCCESS);
        assertThat(b.register(ReservationCommand.REGISTER, false, 0, 0, KEY_B)).isEqualTo(NvmeStatus.SUCCESS);
        assertThat(a.acquire(ReservationCommand.ACQUIRE, ReservationType.WRITE_EXCLUSIVE, KEY_A, 0))
            .isEqualTo(NvmeStatus.SUCCESS);
        FakeRequest aerA = a.host.asyncEventRequest(a.admin);
        assertThat(b.acquire(ReservationCommand.PREEMPT_AND_ABORT, ReservationType.EXCLUSIVE_ACCESS, KEY_B, KEY_A))
            .isEqualTo(NvmeStatus.SUCCESS);
        assertThat(aerA.status()).isEqualTo(NvmeStatus.SUCCESS);
        assertThat(aerA.dw0()).isEqualTo(AsyncEvent.RESERVATION_LOG_AVAILABLE_DW0).isEqualTo(0x800006);
        ByteBuffer log = a.host.getLogPage(a.admin, LogPageIdentifier.RESERVATION_NOTIFICATION, 0, 64, 0, false).data();
        ReservationNotificationLog n = new ReservationNotificationLog().wrap(log.order(ByteOrder.LITTLE_ENDIAN), 0);
        assertThat(n.count()).isEqualTo(1);
        assertThat(n.type()).isEqualTo(ReservationNotificationLog.TYPE_REGISTRATION_PREEMPTED);
        assertThat(n.nsid()).isEqualTo(1);
        assertThat(n.available()).isZero();
        ByteBuffer empty = a.host.getLogPage(a.admin, LogPageIdentifier.RESERVATION_NOTIFICATION, 0, 64, 0, false).data();
        assertThat(empty.getLong(0)).as("read once").isZero();
        assertThat(a.write()).as("A lost its registration under EA").isEqualTo(CONFLICT);
        assertThat(a.read()).isEqualTo(CONFLICT);
        assertThat(b.write()).isEqualTo(NvmeStatus.SUCCESS);
        assertThat(a.acquire(ReservationCommand.ACQUIRE, 1, KEY_A, 0)).as("no longer registered").isEqualTo(CONFLICT);
        // Preempt with a key nobody holds, no reservation change: Invalid Field for PRKEY 0 on a single holder
        assertThat(b.acquire(ReservationCommand.PREEMPT, ReservationType.EXCLUSIVE_ACCESS, KEY_B, 0)).isEqualTo(INVALID_FIELD);
    }

    @Test
    void shouldHonourTheNotificationMask() {
        assertThat(a.host.setFeatures(a.admin, FeatureIdentifier.RESERVATION_NOTIFICATION_MASK, 1 << 1).status())
            .as("NSID 0 is not a namespace").isEqualTo(NvmeStatus.INVALID_NAMESPACE | NvmeStatus.DNR);
        FakeRequest set = a.host.submit(a.admin, 0, e -> {
            new io.nvmeof4j.protocol.admin.SetFeaturesCommand().wrap(e).init(e.commandId(), FeatureIdentifier.RESERVATION_NOTIFICATION_MASK, ReservationNotificationLog.MASK_ALL);
            e.nsid(1);
            });
        assertThat(set.status()).isEqualTo(NvmeStatus.SUCCESS);
        FakeRequest get = a.host.submit(a.admin, 0, e -> {
            new io.nvmeof4j.protocol.admin.GetFeaturesCommand().wrap(e).init(e.commandId(), FeatureIdentifier.RESERVATION_NOTIFICATION_MASK, 0);
            e.nsid(1);
            });
        assertThat(get.dw0()).isEqualTo(ReservationNotificationLog.MASK_ALL);
        a.register(ReservationCommand.REGISTER, false, 0, 0, KEY_A);
        b.register(ReservationCommand.REGISTER, false, 0, 0, KEY_B);
        FakeRequest aer = a.host.asyncEventRequest(a.admin);
        assertThat(b.acquire(ReservationCommand.PREEMPT, 1, KEY_B, KEY_A)).isEqualTo(NvmeStatus.SUCCESS);
        assertThat(aer.isCompleted()).as("masked").isFalse();
    }

    @Test
    void shouldReportInTheExtendedFormatOnly() {
        a.register(ReservationCommand.REGISTER, false, 0, 0, KEY_A);
        b.register(ReservationCommand.REGISTER, false, 0, 0, KEY_B);
        a.acquire(ReservationCommand.ACQUIRE, ReservationType.WRITE_EXCLUSIVE_REGISTRANTS_ONLY, KEY_A, 0);
        assertThat(c.report(4096, false).status()).isEqualTo(NvmeStatus.HOST_IDENTIFIER_INCONSISTENT_FORMAT | NvmeStatus.DNR);
        FakeRequest r = c.report(4096, true);
        assertThat(r.status()).isEqualTo(NvmeStatus.SUCCESS);
        ReservationStatusData d = new ReservationStatusData().wrap(r.data().order(ByteOrder.LITTLE_ENDIAN), 0, true);
        assertThat(d.generation()).as("two registrations").isEqualTo(2);
        assertThat(d.type()).isEqualTo(ReservationType.WRITE_EXCLUSIVE_REGISTRANTS_ONLY);
        assertThat(d.registeredControllers()).isEqualTo(2);
        assertThat(d.persistThroughPowerLoss()).isFalse();
        assertThat(d.controllerId(0)).isEqualTo(a.cntlid);
        assertThat(d.hostId(0)).isEqualTo(HostId.parse("aaaaaaaa-0000-4000-8000-000000000001"));
        assertThat(d.key(0)).isEqualTo(KEY_A);
        assertThat(d.holdsReservation(0)).isTrue();
        assertThat(d.controllerId(1)).isEqualTo(b.cntlid);
        assertThat(d.key(1)).isEqualTo(KEY_B);
        assertThat(d.holdsReservation(1)).isFalse();
        // A short buffer gets the beginning
        FakeRequest shortReport = c.report(64, true);
        assertThat(shortReport.status()).isEqualTo(NvmeStatus.SUCCESS);
        assertThat(shortReport.data().order(ByteOrder.LITTLE_ENDIAN).getShort(5)).isEqualTo((short) 2);
    }

    @Test
    void shouldSetAndGetPersistThroughPowerLoss() {
        FakeRequest set = a.host.submit(a.admin, 0, e -> {
            new io.nvmeof4j.protocol.admin.SetFeaturesCommand().wrap(e).init(e.commandId(), FeatureIdentifier.RESERVATION_PERSISTENCE, 1);
            e.nsid(1);
            });
        assertThat(set.status()).isEqualTo(NvmeStatus.SUCCESS);
        FakeRequest get = a.host.submit(a.admin, 0, e -> {
            new io.nvmeof4j.protocol.admin.GetFeaturesCommand().wrap(e).init(e.commandId(), FeatureIdentifier.RESERVATION_PERSISTENCE, 0);
            e.nsid(1);
            });
        assertThat(get.dw0()).isEqualTo(1);
        assertThat(a.register(ReservationCommand.REGISTER, false, ReservationCommand.CPTPL_CLEAR, 0, KEY_A))
            .isEqualTo(NvmeStatus.SUCCESS);
        assertThat(target.subsystem.namespace(1).reservations().persistThroughPowerLoss()).isFalse();
    }
}
