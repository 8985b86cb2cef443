package io.nvmeof4j.target.controller;

import io.nvmeof4j.protocol.fabrics.ControllerRegisters;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * How {@link ControllerQueueHandler} pairs fused halves (by capsule order, in whatever order they reach it) and what
 * it answers when a half has no partner. Statuses as numbers: 0x00A Aborted – Missing Fused Command, 0x002 Invalid
 * Field in Command, DNR 0x8000.
 */
class FusedPairingTest {
    private static final int DNR = 0x8000;
    private static final int MISSING_FUSED = 0x00A;
    private static final int INVALID_FIELD_DNR = 0x002 | DNR;
    private static final int FUSE_FIRST = 0x1;
    private static final int FUSE_SECOND = 0x2;

    private final TestTarget target = new TestTarget();
    private final TestHost host = target.host();
    private FakeQueue admin;
    private int cntlid;
    private int nextQid = 1;

    @AfterEach
    void tearDown() {
        target.close();
    }

    private FakeQueue ioQueue() {
        if (admin == null) {
            admin = host.openQueue();
            cntlid = host.connect(admin, 0, 31, 0, TestTarget.SUBNQN, 0xFFFF).dw0();
            host.propertySet(admin, ControllerRegisters.CC, 0x00460001);
        }
        FakeQueue io = host.openQueue();
        assertThat(host.connect(io, nextQid++, 31, 0, TestTarget.SUBNQN, cntlid)
            .status()).isZero();
        return io;
    }

    /** One 512-byte block at LBA 4 of namespace {@code nsid}, with the given FUSE bits and capsule number. */
    private FakeRequest send(FakeQueue q, int opcode, int fuse, int nsid, long seq) {
        int length = opcode == 0x02 || opcode == 0x01 || opcode == 0x05 ? 512 : 0;
        return host.submit(q, length, e -> e.opcode(opcode).flags(e.flags() | fuse).nsid(nsid).cdw10And11(4).cdw(12, 0),
            r -> r.sequence(seq));
    }

    @Test
    void shouldPairAdjacentHalvesInEitherArrivalOrder() {
        FakeQueue q = ioQueue();
        FakeRequest cmp = send(q, 0x05, FUSE_FIRST, 1, 10);
        assertThat(cmp.isCompleted()).as("the first half waits for its partner").isFalse();
        FakeRequest wr = send(q, 0x01, FUSE_SECOND, 1, 11);
        assertThat(target.nvm.fusedPairs).hasSize(1);
        assertThat(target.nvm.fusedPairs.get(0)).containsExactly(cmp, wr);

        // The Write's data came in-capsule, the Compare's by R2T: the Write reaches the handler first.
        FakeRequest wr2 = send(q, 0x01, FUSE_SECOND, 1, 13);
        FakeRequest read = send(q, 0x02, 0, 1, 14); // a later plain command does not end the waiting second
        assertThat(read.status()).isZero();
        assertThat(wr2.isCompleted()).isFalse();
        FakeRequest cmp2 = send(q, 0x05, FUSE_FIRST, 1, 12);
        assertThat(target.nvm.fusedPairs).hasSize(2);
        assertThat(target.nvm.fusedPairs.get(1)).containsExactly(cmp2, wr2);
        assertThat(cmp2.status()).isZero();
        assertThat(wr2.status()).isZero();
    }

    @Test
    void shouldAnswerMissingFusedWhenTheNeighbourIsNotThePartner() {
        FakeQueue q = ioQueue();
        FakeRequest cmp = send(q, 0x05, FUSE_FIRST, 1, 20);
        FakeRequest read = send(q, 0x02, 0, 1, 21);
        assertThat(cmp.status()).isEqualTo(MISSING_FUSED);
        assertThat(read.status()).as("the neighbour itself runs").isZero();

        FakeRequest wr = send(q, 0x01, FUSE_SECOND, 1, 31);
        FakeRequest before = send(q, 0x02, 0, 1, 30);
        assertThat(wr.status()).isEqualTo(MISSING_FUSED);
        assertThat(before.status()).isZero();

        // Two firsts in a row: the earlier one has no second.
        FakeRequest first1 = send(q, 0x05, FUSE_FIRST, 1, 40);
        FakeRequest first2 = send(q, 0x05, FUSE_FIRST, 1, 41);
        FakeRequest second = send(q, 0x01, FUSE_SECOND, 1, 42);
        assertThat(first1.status()).isEqualTo(MISSING_FUSED);
        assertThat(target.nvm.fusedPairs).hasSize(1);
        assertThat(target.nvm.fusedPairs.get(0)).containsExactly(first2, second);
    }

    @Test
    void shouldNotPairHalvesSplitAcrossQueues() {
        FakeQueue q1 = ioQueue();
        FakeQueue q2 = ioQueue();
        FakeRequest cmp = send(q1, 0x05, FUSE_FIRST, 1, 5);
        FakeRequest wr = send(q2, 0x01, FUSE_SECOND, 1, 6);
        assertThat(target.nvm.fusedPairs).isEmpty();
        FakeRequest nextOnQ1 = send(q1, 0x02, 0, 1, 6);
        FakeRequest previousOnQ2 = send(q2, 0x02, 0, 1, 5);
        assertThat(cmp.status()).isEqualTo(MISSING_FUSED);
        assertThat(wr.status()).isEqualTo(MISSING_FUSED);
        assertThat(nextOnQ1.status()).isZero();
        assertThat(previousOnQ2.status()).isZero();
        assertThat(target.nvm.fusedPairs).isEmpty();
    }

    @Test
    void shouldAbortAHalfWhosePartnerNeverComes() throws Exception {
        FakeQueue q = ioQueue();
        long start = System.nanoTime();
        FakeRequest cmp = host.submit(q, 512, e -> e.opcode(0x05).flags(e.flags() | FUSE_FIRST).nsid(1).cdw(12, 0),
            r -> r.sequence(50));
        assertThat(cmp.await(5, TimeUnit.SECONDS)).as("answered within a bounded time").isTrue();
        long waitedMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
        assertThat(cmp.status()).isEqualTo(MISSING_FUSED);
        assertThat(waitedMillis).isBetween(FusedPairs.PARTNER_TIMEOUT_MILLIS - 50, 3000L);
        assertThat(((ControllerQueueHandler) q.handler()).fusedHalvesWaiting()).isZero();
    }

    @Test
    void shouldRefuseHalvesNamingDifferentNamespaces() {
        FakeQueue q = ioQueue();
        FakeRequest cmp = send(q, 0x05, FUSE_FIRST, 1, 60);
        FakeRequest wr = send(q, 0x01, FUSE_SECOND, 2, 61);
        assertThat(cmp.status()).isEqualTo(INVALID_FIELD_DNR);
        assertThat(wr.status()).isEqualTo(INVALID_FIELD_DNR);
        assertThat(target.nvm.fusedPairs).isEmpty();
    }

    @Test
    void shouldRefuseFusedOperationsOtherThanCompareAndWrite() {
        FakeQueue q = ioQueue();
        assertThat(send(q, 0x02, FUSE_FIRST, 1, 70).status()).as("a Read as first half").isEqualTo(INVALID_FIELD_DNR);
        assertThat(send(q, 0x02, FUSE_SECOND, 1, 72).status()).as("a Read as second half").isEqualTo(INVALID_FIELD_DNR);
        assertThat(send(q, 0x01, 0x3, 1, 74).status()).as("FUSE 11b is reserved").isEqualTo(INVALID_FIELD_DNR);
        FakeRequest adminFused = host.submit(admin, 0, e -> e.opcode(0x18).flags(e.flags() | FUSE_FIRST));
        assertThat(adminFused.status()).as("no fused admin commands").isEqualTo(INVALID_FIELD_DNR);
        // A first half whose neighbour is a refused half: no partner.
        FakeRequest cmp = send(q, 0x05, FUSE_FIRST, 1, 80);
        assertThat(send(q, 0x02, FUSE_SECOND, 1, 81).status()).isEqualTo(INVALID_FIELD_DNR);
        assertThat(cmp.status()).isEqualTo(MISSING_FUSED);
    }

    @Test
    void shouldAdvertiseFusedCompareAndWriteCopyAndVerifyInIdentify() {
        ioQueue();
        java.nio.ByteBuffer ctrl = host.identify(admin, 0x01, 0).data();
        assertThat(ctrl.getShort(520) & 0xFFFF).as("ONCS: Compare, DSM, Write Zeroes, Reservations (5), Verify (7), Copy (8)")
            .isEqualTo(0x1 | 0x4 | 0x8 | 0x20 | 0x80 | 0x100);
        assertThat(ctrl.getShort(522) & 0xFFFF).as("FUSES bit 0: Compare and Write").isEqualTo(1);
        assertThat(ctrl.getShort(534) & 0xFFFF).as("OCFS bit 0: source range format 0").isEqualTo(1);

        java.nio.ByteBuffer ns1 = host.identify(admin, 0x00, 1).data(); // 512-byte blocks
        assertThat(ns1.getShort(74) & 0xFFFF).as("MSSRL").isEqualTo(128);
        assertThat(ns1.getInt(76)).as("MCL").isEqualTo(128);
        assertThat(ns1.get(80) & 0xFF).as("MSRC, 0-based: 128 ranges").isEqualTo(127);
        java.nio.ByteBuffer ns2 = host.identify(admin, 0x00, 2).data(); // 4096-byte blocks
        assertThat(ns2.getShort(74) & 0xFFFF).isEqualTo(16);
        assertThat(ns2.getInt(76)).isEqualTo(16);
    }

    @Test
    void shouldEndWaitingHalvesWhenTheQueueCloses() {
        FakeQueue q = ioQueue();
        FakeRequest cmp = send(q, 0x05, FUSE_FIRST, 1, 90);
        q.handler().onClosed("host went away");
        assertThat(cmp.status()).isEqualTo(0x008);
        assertThat(((ControllerQueueHandler) q.handler()).fusedHalvesWaiting()).isZero();
    }
}
