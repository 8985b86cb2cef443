package io.nvmeof4j.it.tcp;

import io.nvmeof4j.it.tcp.RawNvmeTcpHost.Command;
import io.nvmeof4j.it.tcp.RawNvmeTcpHost.DataMode;
import io.nvmeof4j.protocol.command.NvmeStatus;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Bad input, each answered with the status NVMe (or nvmet, where the specification leaves the choice) uses, or
 * with a C2HTermReq and a close (wire reference 5); after each, a new connection still does I/O.
 */
class MalformedInputIT extends SharedTestTarget {
    static final Duration CLOSE_WITHIN = Duration.ofSeconds(5);

    @AfterEach
    void daemonStillServes() throws Exception {
        Sessions.assertServing(target);
    }

    // ---- fatal transport errors: C2HTermReq, then close ------------------------------------------------------

    /** Reads the C2HTermReq and checks its framing (HLEN 24, PLEN 24..152, no digests, header echo). */
    static Pdu expectTermReq(RawNvmeTcpHost host, byte[] offending, int fes) throws Exception {
        Pdu p = host.readRawPdu();
        assertThat(p).as("a PDU before the close").isNotNull();
        assertThat(p.type()).as("C2HTermReq expected, got %s", p).isEqualTo(RawNvmeTcpHost.PDU_C2H_TERM_REQ);
        assertThat(p.hlen()).as("C2HTermReq HLEN").isEqualTo(24);
        assertThat(p.plen()).as("C2HTermReq PLEN").isBetween(24L, 152L);
        assertThat(p.flags() & 0x3).as("C2HTermReq carries no digests").isZero();
        assertThat(p.u16(8)).as("FES of %s", p).isEqualTo(fes);
        byte[] echoed = p.data();
        assertThat(echoed.length).as("echoed header length").isLessThanOrEqualTo(128);
        if (echoed.length > 0 && offending != null) {
            assertThat(echoed).as("the echoed bytes are the offending PDU header")
                .isEqualTo(Bytes.slice(offending, 0, Math.min(echoed.length, offending.length)));
        }
        RawNvmeTcpHost.PeerClose close = host.awaitPeerClose(CLOSE_WITHIN);
        assertThat(close.closed()).as("connection closed after the C2HTermReq (%s)", close.how()).isTrue();
        return p;
    }

    static RawNvmeTcpHost connectedAdmin(boolean headerDigest) throws Exception {
        return Sessions.enabledAdmin(target.ioPort(), TestTarget.NQN_A, HostIdentity.random(), Sessions.KATO_MS,
            headerDigest, false);
    }

    @Test
    void shouldTerminateOnABadHlenInACapsuleCmd() throws Exception {
        try (RawNvmeTcpHost admin = connectedAdmin(false)) {
            byte[] pdu = admin.buildCapsuleCmdPdu(RawNvmeTcpHost.sqeBytes(Command.of(RawNvmeTcpHost.OPC_KEEP_ALIVE), 7, false), null);
            pdu[2] = 64;                                              // HLEN of a CapsuleCmd is 72
            admin.sendRaw(pdu);
            Pdu term = expectTermReq(admin, pdu, 1);
            assertThat(term.u32(10)).as("FEI = offset of HLEN").isEqualTo(2);
        }
    }

    @Test
    void shouldTerminateOnAPlenSmallerThanTheHeader() throws Exception {
        try (RawNvmeTcpHost admin = connectedAdmin(false)) {
            byte[] pdu = admin.buildCapsuleCmdPdu(RawNvmeTcpHost.sqeBytes(Command.of(RawNvmeTcpHost.OPC_KEEP_ALIVE), 8, false), null);
            RawNvmeTcpHost.putLe32(pdu, 4, 64);                       // PLEN < HLEN 72
            admin.sendRaw(pdu);
            Pdu term = expectTermReq(admin, pdu, 1);
            assertThat(term.u32(10)).as("FEI = offset of PLEN").isEqualTo(4);
        }
    }

    @Test
    void shouldTerminateOnACorruptHeaderDigest() throws Exception {
        try (RawNvmeTcpHost admin = connectedAdmin(true)) {
            assertThat(admin.headerDigest()).as("header digest granted").isTrue();
            byte[] pdu = admin.buildCapsuleCmdPdu(RawNvmeTcpHost.sqeBytes(Command.of(RawNvmeTcpHost.OPC_KEEP_ALIVE), 9, false), null);
            pdu[RawNvmeTcpHost.CAPSULE_CMD_HLEN] ^= 0x01;             // HDGST right after the 72-byte header
            admin.sendRaw(pdu);
            expectTermReq(admin, pdu, 3);
        }
    }

    @Test
    void shouldTerminateOnAnUnknownPduType() throws Exception {
        try (RawNvmeTcpHost admin = connectedAdmin(false)) {
            byte[] pdu = new byte[24];
            pdu[0] = 0x0F;
            pdu[2] = 24;
            RawNvmeTcpHost.putLe32(pdu, 4, 24);
            admin.sendRaw(pdu);
            Pdu term = expectTermReq(admin, pdu, 1);
            assertThat(term.u32(10)).as("FEI = offset of the PDU type").isZero();
        }
    }

    @Test
    void shouldTerminateOnH2cDataWithAnUnknownTtag() throws Exception {
        HostIdentity host = HostIdentity.random();
        try (RawNvmeTcpHost admin = Sessions.enabledAdmin(target.ioPort(), TestTarget.NQN_A, host, Sessions.KATO_MS)) {
            Sessions.requestIoQueues(admin, 1);
            try (RawNvmeTcpHost io = Sessions.ioQueue(target.ioPort(), TestTarget.NQN_A, host, 1, admin.cntlid())) {
                byte[] data = Bytes.random(3, 65536);
                int cid = io.submit(RawNvmeTcpHost.writeCommand(1, 4096, 128, data, false).mode(DataMode.R2T));
                Pdu r2t = io.readPdu(Duration.ofSeconds(10));
                assertThat(r2t).as("R2T for the 64 KiB write").isNotNull();
                assertThat(r2t.type()).as("R2T expected, got %s", r2t).isEqualTo(RawNvmeTcpHost.PDU_R2T);
                assertThat(r2t.u16(8)).as("R2T CCCID").isEqualTo(cid);
                int ttag = r2t.u16(10);
                int r2to = (int) r2t.u32(12);
                int r2tl = (int) r2t.u32(16);
                byte[] h2c = io.buildH2CDataPdu(cid, (ttag + 1) & 0xFFFF, r2to, data, r2to, Math.min(r2tl, 4096), false);
                io.sendRaw(h2c);
                Pdu term = expectTermReq(io, h2c, 1);
                assertThat(term.u32(10)).as("FEI = offset of TTAG").isEqualTo(10);
            }
        }
    }

    // ---- command errors: a status, and the queue goes on ---------------------------------------------------

    /** Admin + one I/O queue of a fresh controller of subsystem a. */
    static final class IoSession implements AutoCloseable {
        final RawNvmeTcpHost admin;
        final RawNvmeTcpHost io;

        IoSession() throws Exception {
            HostIdentity host = HostIdentity.random();
            admin = Sessions.enabledAdmin(target.ioPort(), TestTarget.NQN_A, host, Sessions.KATO_MS);
            Sessions.requestIoQueues(admin, 1);
            io = Sessions.ioQueue(target.ioPort(), TestTarget.NQN_A, host, 1, admin.cntlid());
        }

        /** The queue still serves after the error: a 4 KiB write and read-back. */
        void assertQueueStillWorks() throws Exception {
            byte[] data = Bytes.random(System.nanoTime(), 4096);
            Completion w = io.write(1, 8192, 8, data, false);
            assertThat(w.status()).as("write after the error %s", w).isEqualTo(NvmeStatus.SUCCESS);
            Completion r = io.read(1, 8192, 8, 512);
            assertThat(r.data()).as("read-back after the error").isEqualTo(data);
        }

        @Override
        public void close() {
            io.close();
            admin.close();
        }
    }

    @Test
    void shouldRejectKeyedSglsOnTcp() throws Exception {
        try (IoSession s = new IoSession()) {
            for (int id : new int[] {0x40, 0x4F}) {
                Completion c = s.io.execute(RawNvmeTcpHost.readCommand(1, 0, 8, 512, false).sglId(id));
                assertThat(c.status()).as("read with SGL 0x%02x %s", id, c)
                    .isEqualTo(NvmeStatus.SGL_DESCRIPTOR_TYPE_INVALID | NvmeStatus.DNR);
                assertThat(c.data()).as("no data for a rejected read").isEmpty();
            }
            s.assertQueueStillWorks();
        }
    }

    @Test
    void shouldRejectInCapsuleDataBeyondTheInlineSize() throws Exception {
        try (IoSession s = new IoSession()) {
            byte[] data = Bytes.random(4, TestTarget.INLINE_DATA_SIZE + 4096);
            Completion c = s.io.execute(RawNvmeTcpHost.writeCommand(1, 0, data.length / 512, data, false)
                .mode(DataMode.IN_CAPSULE));
            // nvmet (tcp.c, nvmet_tcp_map_data): in-capsule length > inline_data_size -> SGL Offset Invalid, DNR.
            assertThat(c.status()).as("in-capsule write of %d bytes %s", data.length, c)
                .isEqualTo(NvmeStatus.SGL_OFFSET_INVALID | NvmeStatus.DNR);
            s.assertQueueStillWorks();
        }
    }

    @Test
    void shouldRejectUnknownIoOpcode() throws Exception {
        try (IoSession s = new IoSession()) {
            Completion c = s.io.execute(Command.of(0x3C).nsid(1));
            assertThat(c.status()).as("I/O opcode 0x3c %s", c).isEqualTo(NvmeStatus.INVALID_OPCODE | NvmeStatus.DNR);
            Completion a = s.admin.execute(Command.of(0x3C));
            assertThat(a.status()).as("admin opcode 0x3c %s", a).isEqualTo(NvmeStatus.INVALID_OPCODE | NvmeStatus.DNR);
            s.assertQueueStillWorks();
        }
    }

    @Test
    void shouldRejectLbasOutOfRange() throws Exception {
        try (IoSession s = new IoSession()) {
            for (TestTarget.Namespace ns : new TestTarget.Namespace[] {TestTarget.A1, TestTarget.A2}) {
                long nsze = ns.blocks();
                Completion tail = s.io.read(ns.nsid(), nsze - 1, 2, ns.blockSize());
                assertThat(tail.status()).as("read NSID %d SLBA NSZE-1 2 blocks %s", ns.nsid(), tail)
                    .isEqualTo(NvmeStatus.LBA_OUT_OF_RANGE | NvmeStatus.DNR);
                Completion past = s.io.read(ns.nsid(), nsze, 1, ns.blockSize());
                assertThat(past.status()).as("read NSID %d SLBA NSZE %s", ns.nsid(), past)
                    .isEqualTo(NvmeStatus.LBA_OUT_OF_RANGE | NvmeStatus.DNR);
                Completion write = s.io.write(ns.nsid(), nsze, 1, new byte[ns.blockSize()], false);
                assertThat(write.status()).as("write NSID %d SLBA NSZE %s", ns.nsid(), write)
                    .isEqualTo(NvmeStatus.LBA_OUT_OF_RANGE | NvmeStatus.DNR);
                Completion huge = s.io.read(ns.nsid(), Long.MAX_VALUE - 1, 8, ns.blockSize());
                assertThat(huge.status()).as("read NSID %d SLBA 2^63-2 (overflow) %s", ns.nsid(), huge)
                    .isEqualTo(NvmeStatus.LBA_OUT_OF_RANGE | NvmeStatus.DNR);
                Completion last = s.io.read(ns.nsid(), nsze - 1, 1, ns.blockSize());
                assertThat(last.status()).as("read of the last block NSID %d %s", ns.nsid(), last).isEqualTo(NvmeStatus.SUCCESS);
            }
            s.assertQueueStillWorks();
        }
    }

    @Test
    void shouldRejectAnSglLengthThatDoesNotMatchNlb() throws Exception {
        try (IoSession s = new IoSession()) {
            Completion read = s.io.execute(RawNvmeTcpHost.readCommand(1, 0, 1, 512, false).sglLength(1024));
            assertThat(read.status()).as("read of 1 block with SGL length 1024 %s", read)
                .isEqualTo(NvmeStatus.SGL_DATA_LENGTH_INVALID | NvmeStatus.DNR);
            Completion write = s.io.execute(RawNvmeTcpHost.writeCommand(1, 0, 1, new byte[1024], false)
                .mode(DataMode.IN_CAPSULE));
            assertThat(write.status()).as("in-capsule write of 1024 bytes with NLB 0 (1 block) %s", write)
                .isEqualTo(NvmeStatus.SGL_DATA_LENGTH_INVALID | NvmeStatus.DNR);
            s.assertQueueStillWorks();
        }
    }

    @Test
    void shouldRejectAMissingOrUnknownNamespace() throws Exception {
        try (IoSession s = new IoSession()) {
            for (int nsid : new int[] {0, 3, 0xFFFF_FFFF}) {
                Completion c = s.io.read(nsid, 0, 1, 512);
                assertThat(c.status()).as("read NSID 0x%x %s", nsid, c).isEqualTo(NvmeStatus.INVALID_NAMESPACE | NvmeStatus.DNR);
            }
            s.assertQueueStillWorks();
        }
    }

    // ---- Connect and state errors --------------------------------------------------------------------------

    @Test
    void shouldRejectAConnectToAnUnknownSubsystemNamingTheField() throws Exception {
        try (RawNvmeTcpHost host = RawNvmeTcpHost.connect(target.ioPort(), false, false)) {
            Completion c = host.connectAdmin("nqn.2014-08.io.nvmeof4j:nope", HostIdentity.random(), Sessions.KATO_MS);
            assertThat(c.status()).as("Connect to an unknown SUBNQN %s", c)
                .isEqualTo(NvmeStatus.FABRICS_CONNECT_INVALID_PARAMETERS | NvmeStatus.DNR);
            assertThat(c.dw0()).as("IATTR 1 (data) | IPO 256 (SUBNQN)").isEqualTo(1 << 16 | 256);
        }
    }

    @Test
    void shouldAdmitOnlyTheAllowedHostToSubsystemB() throws Exception {
        try (RawNvmeTcpHost stranger = RawNvmeTcpHost.connect(target.ioPort(), false, false)) {
            Completion c = stranger.connectAdmin(TestTarget.NQN_B, HostIdentity.random(), Sessions.KATO_MS);
            // DNR: the Linux host stops reconnecting only when DNR is set.
            assertThat(c.status()).as("Connect of a host not on b's allow list %s", c)
                .isEqualTo(NvmeStatus.FABRICS_CONNECT_INVALID_HOST | NvmeStatus.DNR);
        }
        try (RawNvmeTcpHost allowed = RawNvmeTcpHost.connect(target.ioPort(), false, false)) {
            Completion c = allowed.connectAdmin(TestTarget.NQN_B, TestTarget.ALLOWED_HOST_B, Sessions.KATO_MS);
            assertThat(c.status()).as("Connect of the allowed host %s", c).isEqualTo(NvmeStatus.SUCCESS);
            assertThat(c.dw0() & 0xFFFF).as("CNTLID").isNotEqualTo(0xFFFF);
        }
    }

    @Test
    void shouldRejectAnIoConnectWithTheWrongCntlid() throws Exception {
        HostIdentity host = HostIdentity.random();
        try (RawNvmeTcpHost admin = Sessions.enabledAdmin(target.ioPort(), TestTarget.NQN_A, host, Sessions.KATO_MS)) {
            Sessions.requestIoQueues(admin, 1);
            try (RawNvmeTcpHost io = RawNvmeTcpHost.connect(target.ioPort(), false, false)) {
                int wrong = admin.cntlid() == 0xFFEF ? 0xFFEE : 0xFFEF;
                Completion c = io.connectIo(TestTarget.NQN_A, host, 1, wrong, Sessions.IO_SQSIZE, 0);
                assertThat(c.status()).as("I/O Connect with CNTLID %d (admin has %d) %s", wrong, admin.cntlid(), c)
                    .isEqualTo(NvmeStatus.FABRICS_CONNECT_INVALID_PARAMETERS | NvmeStatus.DNR);
                assertThat(c.dw0()).as("IATTR 1 (data) | IPO 16 (CNTLID)").isEqualTo(1 << 16 | 16);
            }
        }
    }

    @Test
    void shouldRejectConnectParametersAsNvmetChecksThem() throws Exception {
        HostIdentity host = HostIdentity.random();
        // Wire reference 2.2: RECFMT 0; admin CNTLID 0xFFFF (dynamic model).
        try (RawNvmeTcpHost q = RawNvmeTcpHost.connect(target.ioPort(), false, false)) {
            Completion c = q.execute(RawNvmeTcpHost.connectCommand(0, 31, 0, Sessions.KATO_MS,
                RawNvmeTcpHost.connectData(host, 0xFFFF, TestTarget.NQN_A)).cdw(10, 1));
            assertThat(c.status()).as("admin Connect with RECFMT 1 %s", c)
                .isEqualTo(NvmeStatus.FABRICS_INCOMPATIBLE_FORMAT | NvmeStatus.DNR);
        }
        try (RawNvmeTcpHost q = RawNvmeTcpHost.connect(target.ioPort(), false, false)) {
            Completion c = q.connect(0, 31, 0, Sessions.KATO_MS, 5, TestTarget.NQN_A, host);
            assertThat(c.status()).as("admin Connect with CNTLID 5 %s", c)
                .isEqualTo(NvmeStatus.FABRICS_CONNECT_INVALID_PARAMETERS | NvmeStatus.DNR);
            assertThat(c.dw0()).as("IATTR 1 (data) | IPO 16 (CNTLID)").isEqualTo(1 << 16 | 16);
        }
        try (RawNvmeTcpHost admin = Sessions.enabledAdmin(target.ioPort(), TestTarget.NQN_A, host, Sessions.KATO_MS)) {
            Sessions.requestIoQueues(admin, 1);
            int mqes = (int) (admin.getProperty(RawNvmeTcpHost.PROP_CAP, 8) & 0xFFFF);
            // I/O: SQSIZE != 0 and <= MQES, QID within the controller's maximum.
            for (int sqsize : new int[] {0, mqes + 1}) {
                try (RawNvmeTcpHost io = RawNvmeTcpHost.connect(target.ioPort(), false, false)) {
                    Completion c = io.connectIo(TestTarget.NQN_A, host, 1, admin.cntlid(), sqsize, 0);
                    assertThat(c.status()).as("I/O Connect with SQSIZE %d (MQES %d) %s", sqsize, mqes, c)
                        .isEqualTo(NvmeStatus.FABRICS_CONNECT_INVALID_PARAMETERS | NvmeStatus.DNR);
                    assertThat(c.dw0()).as("IATTR 0 (SQE) | IPO 44 (SQSIZE)").isEqualTo(44);
                }
            }
            try (RawNvmeTcpHost io = RawNvmeTcpHost.connect(target.ioPort(), false, false)) {
                Completion c = io.connectIo(TestTarget.NQN_A, host, 0xFFFE, admin.cntlid(), Sessions.IO_SQSIZE, 0);
                assertThat(c.status()).as("I/O Connect with QID 0xfffe %s", c)
                    .isEqualTo(NvmeStatus.FABRICS_CONNECT_INVALID_PARAMETERS | NvmeStatus.DNR);
                assertThat(c.dw0()).as("IATTR 0 (SQE) | IPO 42 (QID)").isEqualTo(42);
            }
            try (RawNvmeTcpHost io = Sessions.ioQueue(target.ioPort(), TestTarget.NQN_A, host, 1, admin.cntlid())) {
                assertThat(io.read(1, 0, 1, 512).status()).as("a valid I/O Connect after the rejected ones")
                    .isEqualTo(NvmeStatus.SUCCESS);
            }
        }
    }

    @Test
    void shouldRejectPrpDataPointersAndFusedCommands() throws Exception {
        try (IoSession s = new IoSession()) {
            // Wire reference 1.1: fabrics requires PSDT 01b; nvmet rejects other PSDT values and fused commands.
            Completion prp = s.io.execute(RawNvmeTcpHost.readCommand(1, 0, 1, 512, false).flags(0x00));
            assertThat(prp.status()).as("read with PSDT 00b (PRP) %s", prp).isEqualTo(NvmeStatus.INVALID_FIELD | NvmeStatus.DNR);
            Completion fused = s.io.execute(RawNvmeTcpHost.readCommand(1, 0, 1, 512, false).flags(0x41));
            assertThat(fused.status()).as("read with FUSE 01b %s", fused).isEqualTo(NvmeStatus.INVALID_FIELD | NvmeStatus.DNR);
            Completion identify = s.admin.execute(RawNvmeTcpHost.Command.of(RawNvmeTcpHost.OPC_IDENTIFY)
                .cdw(10, 1).dataIn(4096).sglLength(2048));
            assertThat(identify.status()).as("Identify with SGL length 2048 %s", identify)
                .isEqualTo(NvmeStatus.SGL_DATA_LENGTH_INVALID | NvmeStatus.DNR);
            s.assertQueueStillWorks();
        }
    }

    @Test
    void shouldAnswerCommandsBeforeConnectWithCommandSequenceError() throws Exception {
        try (RawNvmeTcpHost host = RawNvmeTcpHost.connect(target.ioPort(), false, false)) {
            // NVMe-oF: Connect is the first command on a queue.
            Completion identify = host.identify(1, 0);
            assertThat(NvmeStatus.code(identify.status())).as("Identify before Connect %s", identify)
                .isEqualTo(NvmeStatus.COMMAND_SEQUENCE_ERROR);
            Completion property = host.propertyGet(RawNvmeTcpHost.PROP_CAP, 8);
            assertThat(NvmeStatus.code(property.status())).as("Property Get before Connect %s", property)
                .isEqualTo(NvmeStatus.COMMAND_SEQUENCE_ERROR);
            Completion connect = host.connectAdmin(TestTarget.NQN_A, HostIdentity.random(), Sessions.KATO_MS);
            assertThat(connect.status()).as("Connect after the rejected commands %s", connect).isEqualTo(NvmeStatus.SUCCESS);
        }
    }

    @Test
    void shouldAnswerAdminCommandsBeforeCcEnWithCommandSequenceError() throws Exception {
        try (RawNvmeTcpHost host = RawNvmeTcpHost.connect(target.ioPort(), false, false)) {
            Completion connect = host.connectAdmin(TestTarget.NQN_A, HostIdentity.random(), Sessions.KATO_MS);
            assertThat(connect.status()).isEqualTo(NvmeStatus.SUCCESS);
            Completion identify = host.identify(1, 0);
            // Wire reference 6: admin commands while not ready -> Command Sequence Error + DNR; fabrics exempt.
            assertThat(identify.status()).as("Identify before CC.EN %s", identify)
                .isEqualTo(NvmeStatus.COMMAND_SEQUENCE_ERROR | NvmeStatus.DNR);
            Completion csts = host.propertyGet(RawNvmeTcpHost.PROP_CSTS, 4);
            assertThat(csts.status()).as("Property Get before CC.EN %s", csts).isEqualTo(NvmeStatus.SUCCESS);
            assertThat(csts.dw0() & 1).as("CSTS.RDY before CC.EN").isZero();
            host.enableController(Sessions.READY_TIMEOUT);
            assertThat(host.identify(1, 0).status()).as("Identify after CC.EN").isEqualTo(NvmeStatus.SUCCESS);
        }
    }
}
