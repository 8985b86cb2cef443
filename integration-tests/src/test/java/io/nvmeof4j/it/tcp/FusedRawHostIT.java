package io.nvmeof4j.it.tcp;

import io.nvmeof4j.protocol.command.NvmeStatus;
import org.junit.jupiter.api.Test;


import static org.assertj.core.api.Assertions.assertThat;

/**
 * Fused Compare and Write over the wire from a raw NVMe/TCP host that sends what our initiator never would: halves
 * whose data arrives out of order, halves without a partner, halves on two queues, halves on two namespaces.
 * Statuses as numbers: 0x285 Compare Failure, 0x009 Aborted – Failed Fused Command, 0x00A Aborted – Missing Fused
 * Command, 0x002 Invalid Field; DNR 0x8000. Namespace 1 of subsystem a: RAM, 512-byte blocks.
 */
class FusedRawHostIT extends SharedTestTarget {
    private static final int FIRST = 0x41;   // PSDT 01b, FUSE 01b
    private static final int SECOND = 0x42;  // PSDT 01b, FUSE 10b
    private static final int OPC_COMPARE = 0x05;
    private static final int OPC_WRITE = 0x01;

    /** Admin plus {@code queues} I/O queues of one controller of subsystem a. */
    static final class Session implements AutoCloseable {
        final RawNvmeTcpHost admin;
        final RawNvmeTcpHost[] io;

        Session(int queues) throws Exception {
            HostIdentity host = HostIdentity.random();
            admin = Sessions.enabledAdmin(target.ioPort(), TestTarget.NQN_A, host, Sessions.KATO_MS);
            Sessions.requestIoQueues(admin, queues);
            io = new RawNvmeTcpHost[queues];
            for (int q = 0; q < queues; q++) {
                io[q] = Sessions.ioQueue(target.ioPort(), TestTarget.NQN_A, host, q + 1, admin.cntlid());
            }
        }

        @Override
        public void close() {
            for (RawNvmeTcpHost q : io) {
                q.close();
            }
            admin.close();
        }
    }

    private static RawNvmeTcpHost.Command half(int opcode, int flags, int nsid, long slba, byte[] data) {
        return RawNvmeTcpHost.writeCommand(nsid, slba, 1, data, false).flags(flags).sqeByte(0, opcode);
    }

    @Test
    void shouldPairHalvesWhenTheCompareDataArrivesAfterTheWrite() throws Exception {
        try (Session s = new Session(1)) {
            RawNvmeTcpHost io = s.io[0];
            byte[] old = Bytes.random(1, 512);
            byte[] fresh = Bytes.random(2, 512);
            assertThat(io.write(1, 700, 1, old, false).status()).isZero();

            // The Compare's data waits for our H2CData; the Write's rides in its capsule and reaches the target first.
            io.deferR2Ts(true);
            int cmp = io.submit(half(OPC_COMPARE, FIRST, 1, 700, old).mode(RawNvmeTcpHost.DataMode.R2T));
            int wr = io.submit(half(OPC_WRITE, SECOND, 1, 700, fresh).mode(RawNvmeTcpHost.DataMode.IN_CAPSULE));
            Completion read = io.execute(RawNvmeTcpHost.readCommand(1, 900, 1, 512, false));
            assertThat(read.status()).as("a later plain command runs while the pair waits: %s", read).isZero();
            assertThat(io.isOutstanding(wr)).as("the Write waits for its Compare").isTrue();
            io.releaseDeferredR2Ts();
            assertThat(io.await(cmp).status()).isZero();
            assertThat(io.await(wr).status()).isZero();
            assertThat(io.read(1, 700, 1, 512).data()).isEqualTo(fresh);

            // Expecting the old data again: a miscompare; the Write is aborted and the block stays.
            int cmp2 = io.submit(half(OPC_COMPARE, FIRST, 1, 700, old));
            int wr2 = io.submit(half(OPC_WRITE, SECOND, 1, 700, Bytes.random(3, 512)));
            assertThat(io.await(cmp2).status()).isEqualTo(NvmeStatus.COMPARE_FAILURE | NvmeStatus.DNR);
            assertThat(io.await(wr2).status()).isEqualTo(0x009);
            assertThat(io.read(1, 700, 1, 512).data()).isEqualTo(fresh);
        }
    }

    @Test
    void shouldAbortAFirstHalfFollowedByAPlainCommand() throws Exception {
        try (Session s = new Session(1)) {
            RawNvmeTcpHost io = s.io[0];
            byte[] data = Bytes.random(4, 512);
            assertThat(io.write(1, 710, 1, data, false).status()).isZero();
            long t0 = System.nanoTime();
            int cmp = io.submit(half(OPC_COMPARE, FIRST, 1, 710, data));
            Completion read = io.execute(RawNvmeTcpHost.readCommand(1, 710, 1, 512, false));
            Completion c = io.await(cmp);
            assertThat(c.status()).as("%s", c).isEqualTo(0x00A);
            assertThat(read.status()).isZero();
            assertThat((System.nanoTime() - t0) / 1_000_000).as("answered at once, not after the timeout")
                .isLessThan(900);
        }
    }

    @Test
    void shouldAbortHalvesSplitAcrossQueues() throws Exception {
        try (Session s = new Session(2)) {
            byte[] data = Bytes.random(5, 512);
            assertThat(s.io[0].write(1, 720, 1, data, false).status()).isZero();
            long t0 = System.nanoTime();
            int cmp = s.io[0].submit(half(OPC_COMPARE, FIRST, 1, 720, data));
            int wr = s.io[1].submit(half(OPC_WRITE, SECOND, 1, 720, Bytes.random(6, 512)));
            // Nothing else goes on these queues: a next command would end the halves at once (no partner).
            Completion c1 = s.io[0].await(cmp);
            Completion c2 = s.io[1].await(wr);
            long waited = (System.nanoTime() - t0) / 1_000_000;
            assertThat(c1.status()).as("%s", c1).isEqualTo(0x00A);
            assertThat(c2.status()).as("%s", c2).isEqualTo(0x00A);
            assertThat(waited).as("after the 1 s partner timeout, bounded").isBetween(900L, 5000L);
            assertThat(s.io[0].read(1, 720, 1, 512).data()).as("nothing written").isEqualTo(data);
        }
    }

    @Test
    void shouldNotHoldTheBlockWhileAHalfWaitsForItsPartner() throws Exception {
        try (Session s = new Session(1); Session other = new Session(1)) {
            byte[] data = Bytes.random(7, 512);
            assertThat(s.io[0].write(1, 730, 1, data, false).status()).isZero();
            int cmp = s.io[0].submit(half(OPC_COMPARE, FIRST, 1, 730, data));
            // Another controller writes the same block while the lone half waits: it is not held back.
            long t0 = System.nanoTime();
            byte[] other1 = Bytes.random(8, 512);
            assertThat(other.io[0].write(1, 730, 1, other1, false).status()).isZero();
            assertThat((System.nanoTime() - t0) / 1_000_000).isLessThan(500);
            assertThat(s.io[0].isOutstanding(cmp)).isTrue();
            assertThat(s.io[0].await(cmp).status()).isEqualTo(0x00A);
            assertThat(other.io[0].read(1, 730, 1, 512).data()).isEqualTo(other1);
        }
    }

    @Test
    void shouldRefuseHalvesOnDifferentNamespaces() throws Exception {
        try (Session s = new Session(1)) {
            RawNvmeTcpHost io = s.io[0];
            byte[] before = io.read(1, 740, 1, 512).data();
            int cmp = io.submit(half(OPC_COMPARE, FIRST, 1, 740, before));
            int wr = io.submit(RawNvmeTcpHost.writeCommand(2, 740, 1, Bytes.random(9, 4096), false).flags(SECOND));
            assertThat(io.await(cmp).status()).isEqualTo(NvmeStatus.INVALID_FIELD | NvmeStatus.DNR);
            assertThat(io.await(wr).status()).isEqualTo(NvmeStatus.INVALID_FIELD | NvmeStatus.DNR);
        }
    }
}
