package io.nvmeof4j.target.reservation;

import io.nvmeof4j.protocol.HostId;
import io.nvmeof4j.protocol.command.NvmeStatus;
import io.nvmeof4j.protocol.reservation.ReservationCommand;
import io.nvmeof4j.protocol.reservation.ReservationType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The reservation state file: written before a change completes, read back at start according to PTPL. */
class ReservationsPersistenceTest {
    private static final HostId A = HostId.parse("aaaaaaaa-0000-4000-8000-000000000001");
    private static final HostId B = HostId.parse("bbbbbbbb-0000-4000-8000-000000000002");

    @TempDir
    Path dir;

    @Test
    void shouldRestoreRegistrantsAndReservationWithPtpl() throws IOException {
        Path file = dir.resolve("state").resolve("ns-1.json");
        Reservations r = Reservations.load(file);
        int registerSetPtpl = ReservationCommand.cdw10(ReservationCommand.REGISTER, false, 0, ReservationCommand.CPTPL_SET);
        assertThat(r.register(A, registerSetPtpl, 0, 0xA1).status()).isEqualTo(NvmeStatus.SUCCESS);
        assertThat(Files.exists(file)).as("written before the command completed").isTrue();
        assertThat(r.register(B, 0, 0, 0xB2).status()).isEqualTo(NvmeStatus.SUCCESS);
        assertThat(r.acquire(A, ReservationCommand.cdw10(ReservationCommand.ACQUIRE, false,
            ReservationType.EXCLUSIVE_ACCESS, 0), 0xA1, 0).status()).isEqualTo(NvmeStatus.SUCCESS);
        assertThat(Files.list(file.getParent()).map(p -> p.getFileName().toString())).containsExactly("ns-1.json");

        Reservations restarted = Reservations.load(file);
        Reservations.Report report = restarted.report();
        assertThat(report.ptpl()).isTrue();
        assertThat(report.type()).isEqualTo(ReservationType.EXCLUSIVE_ACCESS);
        assertThat(report.generation()).isEqualTo(2);
        assertThat(report.registrants()).extracting(Reservations.Registrant::host).containsExactly(A, B);
        assertThat(report.holders()).extracting(Reservations.Registrant::key).containsExactly(0xA1L);
        assertThat(restarted.check(B, 0x02)).as("B's read still conflicts after restart")
            .isEqualTo(NvmeStatus.RESERVATION_CONFLICT | NvmeStatus.DNR);
        assertThat(restarted.check(A, 0x01)).isEqualTo(NvmeStatus.SUCCESS);
    }

    @Test
    void shouldDropStateWithoutPtpl() throws IOException {
        Path file = dir.resolve("ns-2.json");
        Reservations r = Reservations.load(file);
        r.register(A, 0, 0, 0xA1);
        r.acquire(A, ReservationCommand.cdw10(ReservationCommand.ACQUIRE, false, 1, 0), 0xA1, 0);
        Reservations restarted = Reservations.load(file);
        assertThat(restarted.report().registrants()).isEmpty();
        assertThat(restarted.report().type()).isZero();
        assertThat(restarted.report().generation()).as("generation kept").isEqualTo(1);
        assertThat(restarted.check(B, 0x01)).isEqualTo(NvmeStatus.SUCCESS);
    }

    @Test
    void shouldRefuseAChangeThatCannotBePersisted() throws IOException {
        Path blocker = dir.resolve("not-a-directory");
        Files.writeString(blocker, "x");
        Reservations r = new Reservations(blocker.resolve("ns.json"));
        assertThat(r.register(A, 0, 0, 0xA1).status()).isEqualTo(NvmeStatus.INTERNAL_ERROR);
        assertThat(r.report().registrants()).as("nothing applied").isEmpty();
    }

    @Test
    void shouldRejectACorruptFile() throws IOException {
        Path file = dir.resolve("bad.json");
        Files.writeString(file, "{\"version\": 1, \"type\": 1, \"holder\": \"" + A + "\", \"registrants\": []}");
        assertThatThrownBy(() -> Reservations.load(file)).isInstanceOf(IOException.class)
            .hasMessageContaining("not a registrant");
        Files.writeString(file, "{not json");
        assertThatThrownBy(() -> Reservations.load(file)).isInstanceOf(IOException.class).hasMessageContaining(file.toString());
    }

    @Test
    void shouldKeepTheDataPathCheckFreeOfAllocation() {
        Reservations r = new Reservations(null);
        r.register(A, 0, 0, 0xA1);
        r.acquire(A, ReservationCommand.cdw10(ReservationCommand.ACQUIRE, false, 1, 0), 0xA1, 0);
        com.sun.management.ThreadMXBean mx = (com.sun.management.ThreadMXBean) java.lang.management.ManagementFactory
            .getThreadMXBean();
        long tid = Thread.currentThread().getId();
        int sum = 0;
        for (int i = 0; i < 10_000; i++) {
            sum += r.check(B, 0x01) + r.check(A, 0x01);
        }
        long before = mx.getThreadAllocatedBytes(tid);
        for (int i = 0; i < 100_000; i++) {
            sum += r.check(B, 0x01) + r.check(A, 0x02);
        }
        long allocated = mx.getThreadAllocatedBytes(tid) - before;
        assertThat(sum).isNotZero();
        assertThat(allocated).as("bytes allocated by 200,000 checks").isLessThan(1024);
    }
}
