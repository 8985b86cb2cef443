package io.nvmeof4j.it.tcp;

import io.nvmeof4j.protocol.command.NvmeStatus;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.time.Duration;
import java.util.Arrays;
import java.util.UUID;

import static io.nvmeof4j.it.tcp.Bytes.u8;
import static io.nvmeof4j.it.tcp.RawNvmeTcpHost.PROP_CC;
import static io.nvmeof4j.it.tcp.RawNvmeTcpHost.PROP_CSTS;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Hosts that are not the Linux host: each test brings a controller up the way some other initiator does (SPDK's,
 * ESXi's, Windows', small NVMe/TCP libraries) and which the Linux target (nvmet) or SPDK's target serves, then
 * checks statuses and bytes read back. docs/hosts.md lists these behaviours and the reference each one follows.
 */
class IndependentHostsIT extends SharedTestTarget {
    private static final int OPC_READ_SIZE = 512;

    /**
     * A host that writes CC.CSS = 110b ("all supported I/O command sets") without reading CAP first, then asks what
     * a host that selected it may ask: the NVM-specific Identify Controller (CNS 06h), the CSI descriptor of each
     * namespace, the command set combinations (CNS 1Ch) and the I/O Command Set Profile feature.
     */
    @Test
    void shouldBringUpAControllerWithAllIoCommandSetsSelectedWithoutReadingCap() throws Exception {
        HostIdentity host = HostIdentity.random();
        try (RawNvmeTcpHost admin = RawNvmeTcpHost.connect(target.ioPort(), false, false)) {
            RawNvmeTcpHost.requireSuccess(admin.connectAdmin(TestTarget.NQN_A, host, Sessions.KATO_MS), "admin Connect");
            assertThat(admin.propertySet(PROP_CC, 4, 0x0046_0060).status()).isEqualTo(NvmeStatus.SUCCESS);
            assertThat(admin.propertySet(PROP_CC, 4, 0x0046_0061).status()).isEqualTo(NvmeStatus.SUCCESS);
            int csts = admin.pollCsts(1, 1, Sessions.READY_TIMEOUT, "CSTS.RDY after CC = 0x00460061");
            assertThat(csts & 0x2).as("no CSTS.CFS").isZero();
            assertThat(admin.getProperty(PROP_CC, 4)).isEqualTo(0x0046_0061L);
            assertThat(admin.getProperty(0x00, 8) >>> 43 & 1).as("CAP.CSS bit 43 read afterwards").isEqualTo(1);

            Completion nvmController = admin.identify(0x06, 0, 0, 0, 0);
            assertThat(nvmController.status()).as("Identify CNS 06h CSI 0 %s", nvmController).isEqualTo(NvmeStatus.SUCCESS);
            assertThat(nvmController.data()).as("zeroes, as nvmet").hasSize(4096).containsOnly((byte) 0);
            Completion zoned = admin.identify(0x06, 0, 0, 0, 2);
            assertThat(zoned.status()).as("CNS 06h for the zoned command set").isEqualTo(NvmeStatus.INVALID_FIELD | NvmeStatus.DNR);

            Completion sets = admin.identify(0x1C, 0);
            assertThat(sets.status()).as("Identify CNS 1Ch %s", sets).isEqualTo(NvmeStatus.SUCCESS);
            assertThat(Bytes.u32(sets.data(), 0) | Bytes.u32(sets.data(), 4) << 32).as("vector 0: NVM only").isEqualTo(1L);

            assertThat(admin.setFeatures(0x19, 0).status()).as("I/O Command Set Profile 0").isEqualTo(NvmeStatus.SUCCESS);
            assertThat(admin.setFeatures(0x19, 1).status()).as("I/O Command Set Profile 1")
                .isEqualTo(NvmeStatus.IO_COMMAND_SET_COMBINATION_REJECTED | NvmeStatus.DNR);
            Completion profile = admin.getFeatures(0x19);
            assertThat(profile.status()).isEqualTo(NvmeStatus.SUCCESS);
            assertThat(profile.dw0()).isZero();

            Completion descriptors = admin.identify(0x03, 1);
            assertThat(descriptors.status()).isEqualTo(NvmeStatus.SUCCESS);
            assertThat(commandSetIdentifier(descriptors.data())).as("CSI descriptor (type 04h) of namespace 1").isZero();

            Sessions.requestIoQueues(admin, 1);
            try (RawNvmeTcpHost io = Sessions.ioQueue(target.ioPort(), TestTarget.NQN_A, host, 1, admin.cntlid())) {
                assertWriteReadBack(io, 100, 16 * 1024);
            }
        }
    }

    /** Value of the first CSI descriptor (NIDT 4, NIDL 1) in a Namespace Identification Descriptor list, or -1. */
    private static int commandSetIdentifier(byte[] list) {
        int at = 0;
        while (at + 4 <= list.length) {
            int nidt = u8(list, at);
            int nidl = u8(list, at + 1);
            if (nidl == 0) {
                return -1;
            }
            if (nidt == 4) {
                assertThat(nidl).as("NIDL of the CSI descriptor").isEqualTo(1);
                return u8(list, at + 4);
            }
            at += 4 + nidl;
        }
        return -1;
    }

    /** nvmet and SPDK match an I/O Connect by subsystem, host NQN and CNTLID: a different HOSTID is served. */
    @Test
    void shouldServeIoQueuesWhoseHostIdDiffersFromTheAdminQueues() throws Exception {
        HostIdentity host = HostIdentity.random();
        try (RawNvmeTcpHost admin = Sessions.enabledAdmin(target.ioPort(), TestTarget.NQN_A, host, Sessions.KATO_MS)) {
            Sessions.requestIoQueues(admin, 2);
            HostIdentity otherId = new HostIdentity(host.hostnqn(), UUID.randomUUID());
            HostIdentity zeroId = new HostIdentity(host.hostnqn(), new UUID(0, 0));
            try (RawNvmeTcpHost io1 = Sessions.ioQueue(target.ioPort(), TestTarget.NQN_A, otherId, 1, admin.cntlid());
                 RawNvmeTcpHost io2 = Sessions.ioQueue(target.ioPort(), TestTarget.NQN_A, zeroId, 2, admin.cntlid())) {
                byte[] data = assertWriteReadBack(io1, 200, 8192);
                Completion r = io2.read(1, 200, data.length / OPC_READ_SIZE, OPC_READ_SIZE);
                assertThat(r.status()).isEqualTo(NvmeStatus.SUCCESS);
                assertThat(r.data()).as("read on the zero-HOSTID queue").isEqualTo(data);
            }
            Completion hostId = admin.execute(RawNvmeTcpHost.Command.of(RawNvmeTcpHost.OPC_GET_FEATURES)
                .cdw(10, 0x81).cdw(11, 1).dataIn(16));
            assertThat(hostId.status()).as("Get Features Host Identifier %s", hostId).isEqualTo(NvmeStatus.SUCCESS);
            assertThat(hostId.data()).as("the controller keeps the admin queue's HOSTID")
                .isEqualTo(Arrays.copyOf(RawNvmeTcpHost.connectData(host, 0, ""), 16));
        }
    }

    /**
     * SPDK's initiator sends an empty host NQN by default. With allow_any_host it is served, on every queue; behind
     * an allow list it is Connect Invalid Host (0x184 + DNR, IPO 512), as in nvmet and SPDK.
     */
    @Test
    void shouldServeAnEmptyHostNqnOnlyWhereAnyHostIsAllowed() throws Exception {
        HostIdentity anonymous = new HostIdentity("", UUID.randomUUID());
        try (RawNvmeTcpHost admin = Sessions.enabledAdmin(target.ioPort(), TestTarget.NQN_A, anonymous, Sessions.KATO_MS)) {
            Sessions.requestIoQueues(admin, 1);
            try (RawNvmeTcpHost io = Sessions.ioQueue(target.ioPort(), TestTarget.NQN_A, anonymous, 1, admin.cntlid())) {
                assertWriteReadBack(io, 300, 4096);
            }
            try (RawNvmeTcpHost stranger = RawNvmeTcpHost.connect(target.ioPort(), false, false)) {
                Completion c = stranger.connectIo(TestTarget.NQN_A, HostIdentity.random(), 1, admin.cntlid(),
                    Sessions.IO_SQSIZE, 0);
                assertThat(c.status()).as("another host NQN on that controller %s", c)
                    .isEqualTo(NvmeStatus.FABRICS_CONNECT_INVALID_PARAMETERS | NvmeStatus.DNR);
            }
        }
        try (RawNvmeTcpHost restricted = RawNvmeTcpHost.connect(target.ioPort(), false, false)) {
            Completion c = restricted.connectAdmin(TestTarget.NQN_B, anonymous, Sessions.KATO_MS);
            assertThat(c.status()).as("empty host NQN behind an allow list %s", c)
                .isEqualTo(NvmeStatus.FABRICS_CONNECT_INVALID_HOST | NvmeStatus.DNR);
            assertThat(c.dw0()).as("IATTR 1 | IPO 512 (HOSTNQN)").isEqualTo(1 << 16 | 512);
        }
    }

    /**
     * ICReq with HPDA > 0: every C2HData starts its data at a multiple of (HPDA + 1) × 4 bytes, with or without
     * digests, and the bytes read back are the bytes written (NVMe/TCP 3.6.2.3; nvmet-tcp and SPDK pad the same way).
     */
    @Test
    void shouldAlignControllerDataToTheHostsPduDataAlignment() throws Exception {
        HostIdentity host = HostIdentity.random();
        try (RawNvmeTcpHost admin = Sessions.enabledAdmin(target.ioPort(), TestTarget.NQN_A, host, Sessions.KATO_MS)) {
            Sessions.requestIoQueues(admin, 4);
            int[][] cases = {{1, 0, 0}, {7, 1, 0}, {31, 1, 1}, {3, 0, 1}};
            int qid = 1;
            for (int[] c : cases) {
                int hpda = c[0];
                boolean hd = c[1] == 1;
                boolean dd = c[2] == 1;
                try (RawNvmeTcpHost io = RawNvmeTcpHost.open(target.ioPort())) {
                    RawNvmeTcpHost.IcResp ic = io.initialize(hd, dd, hpda);
                    assertThat(ic.cpda()).isZero();
                    RawNvmeTcpHost.requireSuccess(io.connectIo(TestTarget.NQN_A, host, qid, admin.cntlid(),
                        Sessions.IO_SQSIZE, 0), "I/O Connect with HPDA " + hpda);
                    io.inCapsuleDataSize(TestTarget.INLINE_DATA_SIZE);
                    long before = io.c2hDataPduCount();
                    // 64 KiB and an odd 3-block read: several C2HData PDUs, each checked for its PDO.
                    assertWriteReadBack(io, 1000 + qid * 256L, 64 * 1024);
                    assertWriteReadBack(io, 2000 + qid * 256L, 3 * OPC_READ_SIZE);
                    assertThat(io.c2hDataPduCount() - before).as("C2HData PDUs checked with HPDA %d", hpda)
                        .isGreaterThanOrEqualTo(2);
                }
                qid++;
            }
            // The admin queue with HPDA 31: Identify data padded to 128 bytes.
            try (RawNvmeTcpHost padded = RawNvmeTcpHost.open(target.ioPort())) {
                padded.initialize(false, true, 31);
                RawNvmeTcpHost.requireSuccess(padded.connectAdmin(TestTarget.NQN_A, HostIdentity.random(), Sessions.KATO_MS),
                    "admin Connect with HPDA 31");
                padded.enableController(Sessions.READY_TIMEOUT);
                Completion id = padded.identify(1, 0);
                assertThat(id.status()).isEqualTo(NvmeStatus.SUCCESS);
                assertThat(new String(id.data(), 768, TestTarget.NQN_A.length(), java.nio.charset.StandardCharsets.US_ASCII))
                    .as("SUBNQN in Identify Controller").isEqualTo(TestTarget.NQN_A);
            }
        }
    }

    /**
     * Connect whose 1024 bytes come by R2T in several H2CData PDUs instead of in-capsule (SGL 0x5A): the target
     * asks for them once and the controller comes up, on the admin and on an I/O queue.
     */
    @Test
    void shouldAcceptConnectDataSentInH2CDataPdus() throws Exception {
        HostIdentity host = HostIdentity.random();
        try (RawNvmeTcpHost admin = RawNvmeTcpHost.connect(target.ioPort(), true, true)) {
            admin.h2cChunkLimit(256);
            Completion c = admin.connect(RawNvmeTcpHost.connectCommand(0, 31, 0, Sessions.KATO_MS,
                    RawNvmeTcpHost.connectData(host, 0xFFFF, TestTarget.NQN_A)).mode(RawNvmeTcpHost.DataMode.R2T),
                0, 0xFFFF, 0);
            assertThat(c.status()).as("admin Connect by R2T %s", c).isEqualTo(NvmeStatus.SUCCESS);
            assertThat(c.r2ts()).as("R2Ts").isEqualTo(1);
            assertThat(c.h2cPdus()).as("H2CData PDUs of 256 bytes").isEqualTo(4);
            admin.enableController(Sessions.READY_TIMEOUT);
            Sessions.requestIoQueues(admin, 1);
            try (RawNvmeTcpHost io = RawNvmeTcpHost.connect(target.ioPort(), false, false)) {
                io.h2cChunkLimit(400);
                Completion ioc = io.connect(RawNvmeTcpHost.connectCommand(1, Sessions.IO_SQSIZE, 0, 0,
                        RawNvmeTcpHost.connectData(host, admin.cntlid(), TestTarget.NQN_A))
                    .mode(RawNvmeTcpHost.DataMode.R2T), 1, admin.cntlid(), 0);
                assertThat(ioc.status()).as("I/O Connect by R2T %s", ioc).isEqualTo(NvmeStatus.SUCCESS);
                assertThat(ioc.dw0() & 0xFFFF).as("CNTLID").isEqualTo(admin.cntlid());
                assertThat(ioc.h2cPdus()).as("H2CData PDUs of 400, 400 and 224 bytes").isEqualTo(3);
                io.inCapsuleDataSize(TestTarget.INLINE_DATA_SIZE);
                assertWriteReadBack(io, 400, 8192);
            }
        }
    }

    /**
     * KATO 0 means no keep-alive (nvmet and SPDK arm no timer): a host that never sends Keep Alive keeps its
     * controller well past the time a 1 s KATO allows, while a silent controller with KATO 1 s is reaped.
     */
    @Test
    void shouldKeepAKatoZeroControllerThatNeverSendsKeepAlive() throws Exception {
        HostIdentity quiet = HostIdentity.random();
        HostIdentity timed = HostIdentity.random();
        try (RawNvmeTcpHost admin = Sessions.enabledAdmin(target.ioPort(), TestTarget.NQN_A, quiet, 0);
             RawNvmeTcpHost control = Sessions.enabledAdmin(target.ioPort(), TestTarget.NQN_A, timed, 1000)) {
            Sessions.requestIoQueues(admin, 1);
            try (RawNvmeTcpHost io = Sessions.ioQueue(target.ioPort(), TestTarget.NQN_A, quiet, 1, admin.cntlid())) {
                byte[] data = assertWriteReadBack(io, 500, 4096);
                Completion kato = admin.getFeatures(0x0F);
                assertThat(kato.dw0()).as("KATO in force").isZero();
                // Nothing on either controller for 3.5 s: a 1 s KATO expires between 1 and 2 s.
                long silenceStart = System.nanoTime();
                RawNvmeTcpHost.PeerClose reaped = control.awaitPeerClose(Duration.ofMillis(3500));
                assertThat(reaped.closed()).as("the KATO 1 s controller is reaped (%s)", reaped.how()).isTrue();
                long left = 3500 - (System.nanoTime() - silenceStart) / 1_000_000;
                if (left > 0) {
                    Thread.sleep(left);
                }
                Completion r = io.read(1, 500, data.length / OPC_READ_SIZE, OPC_READ_SIZE);
                assertThat(r.status()).as("read after %d ms of silence %s", (System.nanoTime() - silenceStart) / 1_000_000, r)
                    .isEqualTo(NvmeStatus.SUCCESS);
                assertThat(r.data()).isEqualTo(data);
                assertThat(admin.getProperty(PROP_CSTS, 4)).as("CSTS: ready, not fatal").isEqualTo(1L);
                Completion keepAlive = admin.keepAlive();
                assertThat(keepAlive.status()).as("Keep Alive with KATO 0 (nvmet: Keep Alive Invalid, no DNR)")
                    .isEqualTo(NvmeStatus.KEEP_ALIVE_INVALID);
            }
        }
    }

    /** CC with reserved bits set (31:24, 3:1) enables and shuts down as without them (nvmet_update_cc). */
    @Test
    void shouldIgnoreReservedCcBits() throws Exception {
        HostIdentity host = HostIdentity.random();
        int reserved = 0xFF00_000E;
        try (RawNvmeTcpHost admin = RawNvmeTcpHost.connect(target.ioPort(), false, false)) {
            RawNvmeTcpHost.requireSuccess(admin.connectAdmin(TestTarget.NQN_A, host, Sessions.KATO_MS), "admin Connect");
            assertThat(admin.propertySet(PROP_CC, 4, 0x0046_0001 | reserved).status()).isEqualTo(NvmeStatus.SUCCESS);
            admin.pollCsts(1, 1, Sessions.READY_TIMEOUT, "CSTS.RDY with reserved CC bits");
            assertThat(admin.getProperty(PROP_CC, 4)).isEqualTo((0x0046_0001 | reserved) & 0xFFFF_FFFFL);
            Sessions.requestIoQueues(admin, 1);
            try (RawNvmeTcpHost io = Sessions.ioQueue(target.ioPort(), TestTarget.NQN_A, host, 1, admin.cntlid())) {
                assertWriteReadBack(io, 600, 4096);
            }
            assertThat(admin.propertySet(PROP_CC, 4, 0x0046_4001 | reserved).status()).isEqualTo(NvmeStatus.SUCCESS);
            assertThat(admin.pollCsts(0xC, 0x8, Sessions.READY_TIMEOUT, "CSTS.SHST = 10b") & 1).as("RDY").isZero();
        }
    }

    /**
     * Admin SQSIZE edges: 1 (two entries, the smallest queue) serves commands one at a time; 0 is Connect Invalid
     * Parameters naming SQSIZE (IPO 44), as nvmet and SPDK.
     */
    @Test
    void shouldServeTheSmallestAdminQueueAndRefuseSqsizeZero() throws Exception {
        try (RawNvmeTcpHost admin = RawNvmeTcpHost.connect(target.ioPort(), false, false)) {
            Completion c = admin.connect(0, 1, 0, Sessions.KATO_MS, RawNvmeTcpHost.CNTLID_DYNAMIC, TestTarget.NQN_A,
                HostIdentity.random());
            assertThat(c.status()).as("admin SQSIZE 1 %s", c).isEqualTo(NvmeStatus.SUCCESS);
            admin.enableController(Sessions.READY_TIMEOUT);
            for (int i = 0; i < 5; i++) {
                assertThat(admin.identify(1, 0).status()).isEqualTo(NvmeStatus.SUCCESS);
            }
        }
        try (RawNvmeTcpHost admin = RawNvmeTcpHost.connect(target.ioPort(), false, false)) {
            Completion c = admin.connect(0, 0, 0, Sessions.KATO_MS, RawNvmeTcpHost.CNTLID_DYNAMIC, TestTarget.NQN_A,
                HostIdentity.random());
            assertThat(c.status()).isEqualTo(NvmeStatus.FABRICS_CONNECT_INVALID_PARAMETERS | NvmeStatus.DNR);
            assertThat(c.dw0()).as("IATTR 0 | IPO 44 (SQSIZE)").isEqualTo(44);
        }
        Sessions.assertServing(target);
    }

    /** Writes {@code bytes} of fresh random data at {@code slba} of namespace a/1, reads them back, returns them. */
    private static byte[] assertWriteReadBack(RawNvmeTcpHost io, long slba, int bytes) throws IOException {
        byte[] data = Bytes.random(System.nanoTime(), bytes);
        int blocks = bytes / OPC_READ_SIZE;
        Completion w = io.write(1, slba, blocks, data, false);
        assertThat(w.status()).as("write %s", w).isEqualTo(NvmeStatus.SUCCESS);
        Completion r = io.read(1, slba, blocks, OPC_READ_SIZE);
        assertThat(r.status()).as("read %s", r).isEqualTo(NvmeStatus.SUCCESS);
        assertThat(r.data()).as("%d bytes read back at LBA %d", bytes, slba).isEqualTo(data);
        return data;
    }
}
