package io.nvmeof4j.it.tcp;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.time.Duration;

import static org.assertj.core.api.Assertions.assertThat;

/** Bring-up steps most tests share, each failing with the step and the status it got. */
final class Sessions {
    /** Generous bound for CSTS.RDY; the tests read CAP.TO where the bound itself is under test. */
    static final Duration READY_TIMEOUT = Duration.ofSeconds(10);
    /** I/O queue size the tests connect with (SQSIZE is 0-based), the Linux host's default queue_size 128. */
    static final int IO_SQSIZE = 127;
    /** KATO long enough that a test never races the keep-alive timer. */
    static final int KATO_MS = 30_000;

    private Sessions() {
    }

    /** ICReq, Connect on the admin queue, CC.EN=1, wait for CSTS.RDY. */
    static RawNvmeTcpHost enabledAdmin(InetSocketAddress address, String subnqn, HostIdentity host, int katoMs)
            throws IOException {
        return enabledAdmin(address, subnqn, host, katoMs, false, false);
    }

    static RawNvmeTcpHost enabledAdmin(InetSocketAddress address, String subnqn, HostIdentity host, int katoMs,
                                       boolean headerDigest, boolean dataDigest) throws IOException {
        RawNvmeTcpHost admin = RawNvmeTcpHost.connect(address, headerDigest, dataDigest);
        try {
            Completion c = admin.connectAdmin(subnqn, host, katoMs);
            RawNvmeTcpHost.requireSuccess(c, "admin Connect to " + subnqn + " at " + address);
            RawNvmeTcpHost.requireSuccess(admin.propertySet(RawNvmeTcpHost.PROP_CC, 4,
                RawNvmeTcpHost.CC_LINUX_DISABLED), "Property Set CC=0x00460000");
            admin.enableController(READY_TIMEOUT);
            return admin;
        } catch (IOException | RuntimeException e) {
            admin.close();
            throw e;
        }
    }

    /** A connected I/O queue of controller {@code cntlid}, in-capsule writes up to the port's inline size. */
    static RawNvmeTcpHost ioQueue(InetSocketAddress address, String subnqn, HostIdentity host, int qid, int cntlid,
                                  int cattr, boolean headerDigest, boolean dataDigest) throws IOException {
        RawNvmeTcpHost io = RawNvmeTcpHost.connect(address, headerDigest, dataDigest);
        try {
            Completion c = io.connectIo(subnqn, host, qid, cntlid, IO_SQSIZE, cattr);
            RawNvmeTcpHost.requireSuccess(c, "I/O Connect QID " + qid + " CNTLID " + cntlid + " to " + subnqn);
            io.inCapsuleDataSize(TestTarget.INLINE_DATA_SIZE);
            return io;
        } catch (IOException | RuntimeException e) {
            io.close();
            throw e;
        }
    }

    static RawNvmeTcpHost ioQueue(InetSocketAddress address, String subnqn, HostIdentity host, int qid, int cntlid)
            throws IOException {
        return ioQueue(address, subnqn, host, qid, cntlid, 0, false, false);
    }

    /** Asks for {@code queues} I/O queues (Set Features 07h) and fails unless at least that many are granted. */
    static void requestIoQueues(RawNvmeTcpHost admin, int queues) throws IOException {
        int n = queues - 1;
        Completion c = admin.setFeatures(0x07, n | n << 16);
        RawNvmeTcpHost.requireSuccess(c, "Set Features Number of Queues " + queues);
        assertThat(c.dw0() & 0xFFFF).as("NSQA (0-based) granted for %d queues", queues).isGreaterThanOrEqualTo(n);
        assertThat(c.dw0() >>> 16).as("NCQA (0-based) granted for %d queues", queues).isGreaterThanOrEqualTo(n);
    }

    /** The namespace's block size from Identify Namespace (FLBAS -> LBAF[n].LBADS). */
    static int blockSize(RawNvmeTcpHost admin, int nsid) throws IOException {
        Completion id = admin.identify(0, nsid);
        RawNvmeTcpHost.requireSuccess(id, "Identify Namespace " + nsid);
        int format = Bytes.u8(id.data(), 26) & 0xF;
        int lbads = Bytes.u8(id.data(), 128 + 4 * format + 2);
        assertThat(lbads).as("LBADS of NSID %d", nsid).isBetween(9, 16);
        return 1 << lbads;
    }

    /**
     * The daemon still serves: a fresh controller of subsystem a writes 4 KiB near the end of namespace 1 and reads
     * the same bytes back. Every bad-input test ends with this.
     */
    static void assertServing(TestTarget target) throws IOException {
        HostIdentity host = HostIdentity.random();
        try (RawNvmeTcpHost admin = enabledAdmin(target.ioPort(), TestTarget.NQN_A, host, KATO_MS)) {
            requestIoQueues(admin, 1);
            try (RawNvmeTcpHost io = ioQueue(target.ioPort(), TestTarget.NQN_A, host, 1, admin.cntlid())) {
                long slba = TestTarget.A1.blocks() - 64;
                byte[] data = Bytes.random(System.nanoTime(), 4096);
                Completion w = io.write(1, slba, 8, data, false);
                assertThat(w.status()).as("health-check write %s", w).isEqualTo(0);
                Completion r = io.read(1, slba, 8, 512);
                assertThat(r.status()).as("health-check read %s", r).isEqualTo(0);
                assertThat(r.data()).as("health-check read-back").isEqualTo(data);
            }
        }
    }
}
