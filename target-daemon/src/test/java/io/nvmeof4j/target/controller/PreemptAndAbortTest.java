package io.nvmeof4j.target.controller;

import io.nvmeof4j.protocol.HostId;
import io.nvmeof4j.protocol.command.NvmeStatus;
import io.nvmeof4j.protocol.fabrics.ControllerRegisters;
import io.nvmeof4j.protocol.reservation.ReservationCommand;
import io.nvmeof4j.protocol.reservation.ReservationType;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.nio.ByteOrder;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The state machine of Preempt and Abort ({@link PreemptAndAbort}) against an executor that holds commands as a slow
 * backend would: host B holds a Write Exclusive reservation and has writes in flight, host A preempts and aborts it.
 * The Acquire completes only after B's earlier commands did, never waits for B's later ones, and past its bound
 * completes with Command Interrupted while the preemption stands.
 */
class PreemptAndAbortTest {
    private static final int CONFLICT = NvmeStatus.RESERVATION_CONFLICT | NvmeStatus.DNR;
    private static final long KEY_A = 0xA1L;
    private static final long KEY_B = 0xB2L;

    private final TestTarget target = new TestTarget();
    private Path a;
    private Path b;

    /** One host's controller on the test subsystem: admin and one I/O queue. */
    private final class Path {
        final TestHost host;
        final FakeQueue admin;
        final FakeQueue io;

        Path(String uuid) {
            String nqn = "nqn.2014-08.org.nvmexpress:uuid:" + uuid;
            host = new TestHost(target.factory, nqn, HostId.parse(uuid), TestTarget.PORT1_ADDRESS);
            admin = host.openQueue();
            int cntlid = host.connect(admin, 0, 31, 5000, TestTarget.SUBNQN, 0xFFFF).dw0() & 0xFFFF;
            assertThat(host.propertySet(admin, ControllerRegisters.CC, 0x00460001).status()).isEqualTo(NvmeStatus.SUCCESS);
            io = host.openQueue();
            assertThat(host.connect(io, 1, 31, 0, TestTarget.SUBNQN, cntlid, nqn, 0).status())
                .isEqualTo(NvmeStatus.SUCCESS);
        }

        FakeRequest keys(int opcode, int cdw10, long k1, long k2) {
            return host.submit(io, 16, e -> e.opcode(opcode).nsid(1).cdw(10, cdw10), r -> {
                r.data().order(ByteOrder.LITTLE_ENDIAN).putLong(0, k1).putLong(8, k2);
            });
        }

        void register(long key) {
            assertThat(keys(ReservationCommand.OPC_REGISTER, ReservationCommand.cdw10(ReservationCommand.REGISTER,
                false, 0, 0), 0, key).status()).isEqualTo(NvmeStatus.SUCCESS);
        }

        FakeRequest acquire(int action, int type, long crkey, long prkey) {
            return keys(ReservationCommand.OPC_ACQUIRE, ReservationCommand.cdw10(action, false, type, 0), crkey, prkey);
        }

        FakeRequest write(long slba) {
            return host.submit(io, 512, e -> e.opcode(0x01).nsid(1).cdw10And11(slba));
        }

        FakeRequest read(long slba) {
            return host.submit(io, 512, e -> e.opcode(0x02).nsid(1).cdw10And11(slba));
        }

        /** Compare (FUSE 01b) then Write (FUSE 10b), adjacent on the I/O queue. */
        FakeRequest[] fused(long slba) {
            long seq = sequence;
            sequence += 2;
            FakeRequest compare = host.submit(io, 512, e -> e.opcode(0x05).flags(e.flags() | 0x1).nsid(1)
                .cdw10And11(slba), r -> r.sequence(seq));
            FakeRequest write = host.submit(io, 512, e -> e.opcode(0x01).flags(e.flags() | 0x2).nsid(1)
                .cdw10And11(slba), r -> r.sequence(seq + 1));
            return new FakeRequest[] {compare, write};
        }

        private long sequence = 1000;
    }

    @BeforeEach
    void connect() {
        a = new Path("aaaaaaaa-0000-4000-8000-000000000001");
        b = new Path("bbbbbbbb-0000-4000-8000-000000000002");
        a.register(KEY_A);
        b.register(KEY_B);
        assertThat(b.acquire(ReservationCommand.ACQUIRE, ReservationType.WRITE_EXCLUSIVE, KEY_B, 0).status())
            .isEqualTo(NvmeStatus.SUCCESS);
    }

    @AfterEach
    void tearDown() {
        System.clearProperty(PreemptAndAbort.TIMEOUT_PROP_NAME);
        target.nvm.hold(false);
        target.nvm.release();
        target.close();
    }

    @Test
    void shouldCompleteTheAcquireOnlyAfterThePreemptedHostsCommandsInFlight() throws Exception {
        target.nvm.hold(true);
        FakeRequest w1 = b.write(0);
        FakeRequest w2 = b.write(8);
        assertThat(target.nvm.heldCount()).as("B's writes in the backend").isEqualTo(2);

        FakeRequest acquire = a.acquire(ReservationCommand.PREEMPT_AND_ABORT, ReservationType.WRITE_EXCLUSIVE, KEY_A,
            KEY_B);
        assertThat(acquire.await(200, TimeUnit.MILLISECONDS)).as("waits for B's writes").isFalse();
        // The preemption itself is in force while the Acquire waits: B's next write is fenced off at once.
        assertThat(b.write(16).status()).isEqualTo(CONFLICT);

        assertThat(target.nvm.releaseOldest()).isTrue();
        assertThat(w1.status()).isEqualTo(NvmeStatus.SUCCESS);
        assertThat(acquire.await(200, TimeUnit.MILLISECONDS)).as("one of B's writes still in flight").isFalse();
        assertThat(target.nvm.releaseOldest()).isTrue();
        assertThat(w2.status()).isEqualTo(NvmeStatus.SUCCESS);
        assertThat(acquire.await(5, TimeUnit.SECONDS)).as("B's writes are done").isTrue();
        assertThat(acquire.status()).isEqualTo(NvmeStatus.SUCCESS);
        target.nvm.hold(false);
        assertThat(a.write(0).status()).as("A holds the reservation").isEqualTo(NvmeStatus.SUCCESS);
    }

    @Test
    void shouldNotWaitForCommandsThePreemptedHostSendsAfterThePreemption() throws Exception {
        target.nvm.hold(true);
        FakeRequest before = b.write(0);
        FakeRequest acquire = a.acquire(ReservationCommand.PREEMPT_AND_ABORT, ReservationType.WRITE_EXCLUSIVE, KEY_A,
            KEY_B);
        // Write Exclusive leaves reads open to everyone: B, preempted, still reads, and that read is in flight.
        FakeRequest after = b.read(0);
        assertThat(target.nvm.heldCount()).isEqualTo(2);
        assertThat(acquire.await(100, TimeUnit.MILLISECONDS)).isFalse();

        assertThat(target.nvm.releaseOldest()).as("B's write from before").isTrue();
        assertThat(before.status()).isEqualTo(NvmeStatus.SUCCESS);
        assertThat(acquire.await(5, TimeUnit.SECONDS)).as("the later read is not waited for").isTrue();
        assertThat(acquire.status()).isEqualTo(NvmeStatus.SUCCESS);
        assertThat(after.isCompleted()).isFalse();
        target.nvm.release();
        assertThat(after.status()).isEqualTo(NvmeStatus.SUCCESS);
    }

    @Test
    void shouldCompleteWithCommandInterruptedPastTheBoundAndKeepThePreemption() throws Exception {
        System.setProperty(PreemptAndAbort.TIMEOUT_PROP_NAME, "300");
        target.nvm.hold(true);
        FakeRequest stuck = b.write(0);
        long start = System.nanoTime();
        FakeRequest acquire = a.acquire(ReservationCommand.PREEMPT_AND_ABORT, ReservationType.WRITE_EXCLUSIVE, KEY_A,
            KEY_B);
        assertThat(acquire.await(5, TimeUnit.SECONDS)).isTrue();
        long waited = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
        assertThat(acquire.status()).as("SPDK's answer past the bound").isEqualTo(NvmeStatus.COMMAND_INTERRUPTED);
        assertThat(waited).as("waited for the bound").isGreaterThanOrEqualTo(300);
        assertThat(stuck.isCompleted()).isFalse();
        target.nvm.hold(false);
        assertThat(b.write(8).status()).as("the preemption stands").isEqualTo(CONFLICT);
        assertThat(a.write(8).status()).as("A holds the reservation").isEqualTo(NvmeStatus.SUCCESS);
        target.nvm.release();
        assertThat(stuck.status()).isEqualTo(NvmeStatus.SUCCESS);
    }

    @Test
    void shouldStillWaitForTheBackendWhenThePreemptedQueueCloses() throws Exception {
        target.nvm.hold(true);
        FakeRequest w = b.write(0);
        FakeRequest acquire = a.acquire(ReservationCommand.PREEMPT_AND_ABORT, ReservationType.WRITE_EXCLUSIVE, KEY_A,
            KEY_B);
        b.io.close("host B went away");
        // Its write is still in the backend: a closed queue does not recall it, so the Acquire still waits.
        assertThat(acquire.await(200, TimeUnit.MILLISECONDS)).isFalse();
        target.nvm.release();
        assertThat(w.isCompleted()).isTrue();
        assertThat(acquire.await(5, TimeUnit.SECONDS)).isTrue();
        assertThat(acquire.status()).isEqualTo(NvmeStatus.SUCCESS);
    }

    @Test
    void shouldCompleteAtOnceWhenThePreemptedHostHasNothingInFlight() {
        FakeRequest acquire = a.acquire(ReservationCommand.PREEMPT_AND_ABORT, ReservationType.EXCLUSIVE_ACCESS, KEY_A,
            KEY_B);
        assertThat(acquire.status()).isEqualTo(NvmeStatus.SUCCESS);
        assertThat(b.read(0).status()).isEqualTo(CONFLICT);
    }

    @Test
    void shouldApplyTheReservationToEachHalfOfAFusedPair() {
        assertThat(a.acquire(ReservationCommand.PREEMPT_AND_ABORT, ReservationType.WRITE_EXCLUSIVE, KEY_A, KEY_B)
            .status()).isEqualTo(NvmeStatus.SUCCESS);
        FakeRequest[] pair = b.fused(0);
        assertThat(pair[1].status()).as("the preempted host's Write half").isEqualTo(CONFLICT);
        assertThat(pair[0].status()).as("its Compare half").isEqualTo(NvmeStatus.ABORTED_FAILED_FUSED);
        assertThat(target.nvm.fusedPairs).as("nothing reached the executor").isEmpty();
        FakeRequest[] holder = a.fused(0);
        assertThat(holder[0].status()).isEqualTo(NvmeStatus.SUCCESS);
        assertThat(holder[1].status()).isEqualTo(NvmeStatus.SUCCESS);
    }
}
