package io.nvmeof4j.it.tcp;

import io.nvmeof4j.protocol.command.NvmeStatus;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import static io.nvmeof4j.it.tcp.Bytes.ascii;
import static io.nvmeof4j.it.tcp.Bytes.cString;
import static io.nvmeof4j.it.tcp.Bytes.spacePadded;
import static io.nvmeof4j.it.tcp.Bytes.u16;
import static io.nvmeof4j.it.tcp.Bytes.u32;
import static io.nvmeof4j.it.tcp.Bytes.u64;
import static io.nvmeof4j.it.tcp.Bytes.u8;
import static io.nvmeof4j.it.tcp.RawNvmeTcpHost.PROP_CAP;
import static io.nvmeof4j.it.tcp.RawNvmeTcpHost.PROP_CC;
import static io.nvmeof4j.it.tcp.RawNvmeTcpHost.PROP_CRTO;
import static io.nvmeof4j.it.tcp.RawNvmeTcpHost.PROP_CSTS;
import static io.nvmeof4j.it.tcp.RawNvmeTcpHost.PROP_VS;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * The Linux host's controller bring-up (wire reference 2.5), step by step, with every value it checks
 * (2.6, 2.7, 5, 7) asserted at its offset.
 */
class LinuxHostBringUpIT extends SharedTestTarget {

    @ParameterizedTest(name = "HDGST {0} DDGST {1}")
    @CsvSource({"false,false", "true,false", "false,true", "true,true"})
    void shouldAnswerIcReqWithWhatTheLinuxHostChecks(boolean headerDigest, boolean dataDigest) throws Exception {
        try (RawNvmeTcpHost host = RawNvmeTcpHost.open(target.ioPort())) {
            RawNvmeTcpHost.IcResp r = host.initialize(headerDigest, dataDigest);
            Pdu p = r.pdu();
            assertThat(p.type()).as("ICResp type").isEqualTo(RawNvmeTcpHost.PDU_ICRESP);
            assertThat(p.flags()).as("ICResp flags").isZero();
            assertThat(p.hlen()).as("ICResp HLEN").isEqualTo(128);
            assertThat(p.pdo()).as("ICResp PDO").isZero();
            assertThat(p.plen()).as("ICResp PLEN").isEqualTo(128);
            assertThat(r.pfv()).as("PFV").isZero();
            assertThat(r.cpda()).as("CPDA (Linux rejects non-zero)").isZero();
            assertThat(r.dgst()).as("DGST must echo the request exactly")
                .isEqualTo((headerDigest ? 1 : 0) | (dataDigest ? 2 : 0));
            assertThat(r.maxH2CData()).as("MAXH2CDATA").isGreaterThanOrEqualTo(4096);
            assertThat(r.maxH2CData() % 4).as("MAXH2CDATA multiple of 4").isZero();
        }
    }

    @Test
    void shouldBringUpTheAdminQueueAsTheLinuxHostDoes() throws Exception {
        HostIdentity hostId = HostIdentity.random();
        try (RawNvmeTcpHost admin = RawNvmeTcpHost.connect(target.ioPort(), false, false)) {
            // step 2: Connect QID 0, SQSIZE 31, KATO 5 s, CNTLID 0xFFFF
            Completion connect = admin.connectAdmin(TestTarget.NQN_A, hostId, 5000);
            assertThat(connect.status()).as("admin Connect %s", connect).isEqualTo(NvmeStatus.SUCCESS);
            assertThat(connect.sqid()).as("Connect CQE SQID").isZero();
            int cntlid = connect.dw0() & 0xFFFF;
            assertThat(cntlid).as("CNTLID from Connect").isNotEqualTo(0xFFFF).isLessThanOrEqualTo(0xFFEF);
            assertThat((connect.dw0() >>> 17) & 0x3).as("Connect DW0 ATR/ASCR (no authentication configured)").isZero();

            // step 3: CAP, CC.EN=0, CAP, (CRTO), CC.EN=1, poll CSTS.RDY within CAP.TO x 500 ms
            long cap = admin.getProperty(PROP_CAP, 8);
            int mqes = (int) (cap & 0xFFFF);
            int to = (int) ((cap >>> 24) & 0xFF);
            assertThat(mqes).as("CAP.MQES (0-based)").isGreaterThanOrEqualTo(31);
            assertThat((cap >>> 37) & 1).as("CAP.CSS bit 37 (NVM command set)").isEqualTo(1);
            assertThat((cap >>> 32) & 0xF).as("CAP.DSTRD").isZero();
            assertThat((cap >>> 48) & 0xF).as("CAP.MPSMIN (4 KiB)").isZero();
            assertThat(to).as("CAP.TO").isPositive();
            assertThat(admin.getProperty(PROP_CSTS, 4) & 1).as("CSTS.RDY before CC.EN").isZero();

            Completion ccOff = admin.propertySet(PROP_CC, 4, RawNvmeTcpHost.CC_LINUX_DISABLED);
            assertThat(ccOff.status()).as("Set CC=0x00460000 %s", ccOff).isEqualTo(NvmeStatus.SUCCESS);
            assertThat(admin.getProperty(PROP_CAP, 8)).as("CAP read again").isEqualTo(cap);
            if (((cap >>> 59) & 1) != 0) {
                Completion crto = admin.propertyGet(PROP_CRTO, 4);
                assertThat(crto.status()).as("Get CRTO with CAP.CRWMS set %s", crto).isEqualTo(NvmeStatus.SUCCESS);
            }
            int csts = admin.enableController(Duration.ofMillis(to * 500L));
            assertThat(csts & 0x3).as("CSTS RDY=1, CFS=0").isEqualTo(1);
            assertThat(admin.getProperty(PROP_CC, 4)).as("CC read back").isEqualTo(RawNvmeTcpHost.CC_LINUX_ENABLED);

            // step 4: VS, Identify Controller
            long vs = admin.getProperty(PROP_VS, 4);
            assertThat(vs).as("VS >= 1.3 (the host then needs CNS 03h)").isGreaterThanOrEqualTo(0x0001_0300L);
            Completion id = admin.identify(1, 0);
            assertThat(id.status()).as("Identify Controller %s", id).isEqualTo(NvmeStatus.SUCCESS);
            assertIdentifyController(id.data(), cntlid, vs, mqes);

            // step 6: Set Features 07h
            Completion queues = admin.setFeatures(0x07, 3 | 3 << 16);
            assertThat(queues.status()).as("Set Features Number of Queues %s", queues).isEqualTo(NvmeStatus.SUCCESS);

            // step 7: Keep Alive, Set Features 0Bh, one AER (parked), namespace scan
            assertThat(admin.keepAlive().status()).as("Keep Alive").isEqualTo(NvmeStatus.SUCCESS);
            int oaes = (int) u32(id.data(), 92);
            int aen = oaes & (1 << 8 | 1 << 9 | 1 << 11 | 1 << 31);
            if (aen != 0) {
                Completion aec = admin.setFeatures(0x0B, aen);
                assertThat(aec.status()).as("Set Features AEC 0x%x (from OAES 0x%x) %s", aen, oaes, aec)
                    .isEqualTo(NvmeStatus.SUCCESS);
            }
            int aer = admin.submitAsyncEventRequest();
            Completion list = admin.identify(2, 0);
            assertThat(list.status()).as("Identify CNS 02h %s", list).isEqualTo(NvmeStatus.SUCCESS);
            assertThat(admin.isOutstanding(aer)).as("AER parked while other commands complete").isTrue();

            // teardown: CC.SHN=01b, CSTS.SHST=10b within 5 s
            Completion shn = admin.propertySet(PROP_CC, 4, RawNvmeTcpHost.CC_LINUX_ENABLED | RawNvmeTcpHost.CC_SHN_NORMAL);
            assertThat(shn.status()).as("Set CC.SHN=01b %s", shn).isEqualTo(NvmeStatus.SUCCESS);
            int shst = admin.pollCsts(0xC, 0x8, Duration.ofSeconds(5), "CSTS.SHST=10b after CC.SHN=01b");
            assertThat(shst & 0xC).as("CSTS.SHST").isEqualTo(0x8);
        }
    }

    @Test
    void shouldReportIdentifyControllerFieldsAtTheirOffsets() throws Exception {
        try (RawNvmeTcpHost admin = Sessions.enabledAdmin(target.ioPort(), TestTarget.NQN_A, HostIdentity.random(),
                Sessions.KATO_MS)) {
            long vs = admin.getProperty(PROP_VS, 4);
            int mqes = (int) (admin.getProperty(PROP_CAP, 8) & 0xFFFF);
            Completion id = admin.identify(1, 0);
            assertThat(id.status()).as("Identify Controller %s", id).isEqualTo(NvmeStatus.SUCCESS);
            assertThat(id.data()).hasSize(4096);
            assertIdentifyController(id.data(), admin.cntlid(), vs, mqes);
        }
    }

    /** Wire reference 2.6 and the interop checklist (7). */
    static void assertIdentifyController(byte[] id, int cntlid, long vs, int mqes) {
        assertThat(ascii(id, 4, 20)).as("SN @4").isEqualTo(spacePadded(TestTarget.SERIAL_A, 20));
        assertThat(ascii(id, 24, 40)).as("MN @24").isEqualTo(spacePadded(TestTarget.MODEL_A, 40));
        assertThat(ascii(id, 64, 8)).as("FR @64: printable ASCII").matches("[\\x20-\\x7e]{8}");
        int mdts = u8(id, 77);
        assertThat(mdts == 0 || (4096L << mdts) >= (1 << 20)).as("MDTS @77 = %d allows 1 MiB transfers", mdts).isTrue();
        assertThat(u16(id, 78)).as("CNTLID @78 equals the Connect result").isEqualTo(cntlid);
        assertThat(u32(id, 80)).as("VER @80 equals the VS property").isEqualTo(vs);
        assertThat(u8(id, 111)).as("CNTRLTYPE @111 (I/O controller)").isEqualTo(1);
        assertThat(u8(id, 261) & 0x6).as("LPA @261 bits 1 (log 05h) and 2 (LPO/NUMDU)").isEqualTo(0x6);
        assertThat(u16(id, 320)).as("KAS @320").isNotZero();
        assertThat(u8(id, 512)).as("SQES @512").isEqualTo(0x66);
        assertThat(u8(id, 513)).as("CQES @513").isEqualTo(0x44);
        assertThat(u16(id, 514)).as("MAXCMD @514 >= queue size").isGreaterThanOrEqualTo(Math.min(mqes + 1, 128));
        long nn = u32(id, 516);
        assertThat(nn).as("NN @516").isGreaterThanOrEqualTo(2);
        assertThat(u16(id, 520) & 0b1101).as("ONCS @520 bits 0 compare, 2 DSM, 3 write zeroes").isEqualTo(0b1101);
        assertThat(u8(id, 525) & 1).as("VWC @525 bit 0").isEqualTo(1);
        long sgls = u32(id, 536);
        assertThat(sgls & 0x3).as("SGLS @536 bits 1:0").isEqualTo(1);
        assertThat(sgls & (1 << 2)).as("SGLS @536 bit 2 keyed SGLs (none on TCP)").isZero();
        assertThat(sgls & (1 << 20)).as("SGLS @536 bit 20 in-capsule offsets (inline 16 KiB)").isNotZero();
        if ((u8(id, 76) & 0x8) != 0) {
            assertThat(u32(id, 540)).as("MNAN @540 with CMIC.ANA set").isBetween(1L, nn);
        }
        assertThat(cString(id, 768, 256)).as("SUBNQN @768").isEqualTo(TestTarget.NQN_A);
        assertThat(u32(id, 1792)).as("IOCCSZ @1792 = (64 + 16384) / 16").isEqualTo((64 + TestTarget.INLINE_DATA_SIZE) / 16);
        assertThat(u32(id, 1796)).as("IORCSZ @1796").isEqualTo(1);
        assertThat(u16(id, 1800)).as("ICDOFF @1800").isZero();
        assertThat(u8(id, 1802) & 1).as("FCATT @1802 bit 0 (dynamic controller model)").isZero();
    }

    @Test
    void shouldConnectOneIoQueueAndServeIoOnIt() throws Exception {
        HostIdentity hostId = HostIdentity.random();
        try (RawNvmeTcpHost admin = Sessions.enabledAdmin(target.ioPort(), TestTarget.NQN_A, hostId, Sessions.KATO_MS)) {
            Sessions.requestIoQueues(admin, 1);
            try (RawNvmeTcpHost io = RawNvmeTcpHost.connect(target.ioPort(), false, false)) {
                Completion c = io.connectIo(TestTarget.NQN_A, hostId, 1, admin.cntlid(), Sessions.IO_SQSIZE, 0);
                assertThat(c.status()).as("I/O Connect QID 1 %s", c).isEqualTo(NvmeStatus.SUCCESS);
                assertThat(c.sqid()).as("Connect CQE SQID").isEqualTo(1);
                byte[] data = Bytes.random(11, 4096);
                assertThat(io.write(1, 100, 8, data, false).status()).isEqualTo(NvmeStatus.SUCCESS);
                Completion r = io.read(1, 100, 8, 512);
                assertThat(r.status()).isEqualTo(NvmeStatus.SUCCESS);
                assertThat(r.sqid()).as("read CQE SQID").isEqualTo(1);
                assertThat(r.data()).isEqualTo(data);
            }
        }
    }

    @Test
    void shouldConnectFourIoQueuesEachOnItsOwnSocket() throws Exception {
        HostIdentity hostId = HostIdentity.random();
        try (RawNvmeTcpHost admin = Sessions.enabledAdmin(target.ioPort(), TestTarget.NQN_A, hostId, Sessions.KATO_MS)) {
            Sessions.requestIoQueues(admin, 4);
            List<RawNvmeTcpHost> queues = new ArrayList<>();
            try {
                for (int qid = 1; qid <= 4; qid++) {
                    RawNvmeTcpHost io = RawNvmeTcpHost.connect(target.ioPort(), false, false);
                    queues.add(io);
                    Completion c = io.connectIo(TestTarget.NQN_A, hostId, qid, admin.cntlid(), Sessions.IO_SQSIZE, 0);
                    assertThat(c.status()).as("I/O Connect QID %d %s", qid, c).isEqualTo(NvmeStatus.SUCCESS);
                    assertThat(c.sqid()).as("Connect CQE SQID").isEqualTo(qid);
                    io.inCapsuleDataSize(TestTarget.INLINE_DATA_SIZE);
                }
                // Each queue writes its own range; the next queue reads it back (one controller, shared namespace).
                Map<Integer, byte[]> written = new HashMap<>();
                for (int i = 0; i < 4; i++) {
                    byte[] data = Bytes.random(100 + i, 8192);
                    written.put(i, data);
                    Completion w = queues.get(i).write(1, 2000 + 16L * i, 16, data, false);
                    assertThat(w.status()).as("write on QID %d %s", i + 1, w).isEqualTo(NvmeStatus.SUCCESS);
                    assertThat(w.sqid()).as("write CQE SQID").isEqualTo(i + 1);
                }
                for (int i = 0; i < 4; i++) {
                    RawNvmeTcpHost reader = queues.get((i + 1) % 4);
                    Completion r = reader.read(1, 2000 + 16L * i, 16, 512);
                    assertThat(r.status()).as("read on QID %d %s", reader.qid(), r).isEqualTo(NvmeStatus.SUCCESS);
                    assertThat(r.data()).as("range of QID %d read on QID %d", i + 1, reader.qid()).isEqualTo(written.get(i));
                }
                // nvmet: a second Connect of a live QID is a Command Sequence Error (wire reference 2.2).
                try (RawNvmeTcpHost again = RawNvmeTcpHost.connect(target.ioPort(), false, false)) {
                    Completion dup = again.connectIo(TestTarget.NQN_A, hostId, 2, admin.cntlid(), Sessions.IO_SQSIZE, 0);
                    assertThat(NvmeStatus.code(dup.status())).as("Connect of the live QID 2 %s", dup)
                        .isEqualTo(NvmeStatus.COMMAND_SEQUENCE_ERROR);
                }
            } finally {
                queues.forEach(RawNvmeTcpHost::close);
            }
        }
    }

    @Test
    void shouldScanNamespacesAsTheLinuxHostDoes() throws Exception {
        try (RawNvmeTcpHost admin = Sessions.enabledAdmin(target.ioPort(), TestTarget.NQN_A, HostIdentity.random(),
                Sessions.KATO_MS)) {
            // CNS 02h: active NSIDs greater than CDW1.NSID, zero-terminated
            assertThat(activeNsids(admin, 0)).as("CNS 02h after NSID 0").containsExactly(1L, 2L);
            assertThat(activeNsids(admin, 1)).as("CNS 02h after NSID 1").containsExactly(2L);
            assertThat(activeNsids(admin, 2)).as("CNS 02h after NSID 2").isEmpty();

            Map<Integer, byte[]> nguids = new HashMap<>();
            for (TestTarget.Namespace ns : List.of(TestTarget.A1, TestTarget.A2)) {
                // CNS 03h: descriptor list, NIDL 0 terminates
                Completion desc = admin.identify(3, ns.nsid());
                assertThat(desc.status()).as("CNS 03h NSID %d %s", ns.nsid(), desc).isEqualTo(NvmeStatus.SUCCESS);
                Map<Integer, byte[]> ids = descriptors(desc.data(), ns.nsid());
                assertThat(ids.containsKey(2) || ids.containsKey(3)).as("NGUID (2) or UUID (3) present for NSID %d: %s",
                    ns.nsid(), ids.keySet()).isTrue();

                // CNS 08h: I/O command set independent, NSTAT bit 0 ready
                Completion indep = admin.identify(8, ns.nsid());
                assertThat(indep.status()).as("CNS 08h NSID %d %s", ns.nsid(), indep).isEqualTo(NvmeStatus.SUCCESS);
                assertThat(u8(indep.data(), 14) & 1).as("CNS 08h NSTAT ready, NSID %d", ns.nsid()).isEqualTo(1);

                // CNS 00h: NSZE/NCAP/FLBAS/LBADS
                Completion nsId = admin.identify(0, ns.nsid());
                assertThat(nsId.status()).as("CNS 00h NSID %d %s", ns.nsid(), nsId).isEqualTo(NvmeStatus.SUCCESS);
                byte[] d = nsId.data();
                assertThat(u64(d, 0)).as("NSZE NSID %d", ns.nsid()).isEqualTo(ns.blocks());
                assertThat(u64(d, 8)).as("NCAP NSID %d", ns.nsid()).isEqualTo(ns.blocks());
                assertThat(u64(d, 16)).as("NUSE NSID %d", ns.nsid()).isLessThanOrEqualTo(ns.blocks());
                int format = u8(d, 26) & 0xF;
                assertThat(format).as("FLBAS format index within NLBAF").isLessThanOrEqualTo(u8(d, 25));
                assertThat(u8(d, 128 + 4 * format + 2)).as("LBAF[%d].LBADS NSID %d", format, ns.nsid()).isEqualTo(ns.lbads());
                assertThat(u16(d, 128 + 4 * format)).as("LBAF[%d].MS", format).isZero();
                assertThat(u8(d, 99) & 1).as("NSATTR read-only").isZero();
                if (ids.containsKey(2)) {
                    assertThat(Bytes.slice(d, 104, 16)).as("NGUID @104 equals the CNS 03h NGUID, NSID %d", ns.nsid())
                        .isEqualTo(ids.get(2));
                    nguids.put(ns.nsid(), ids.get(2));
                }
            }
            if (nguids.size() == 2) {
                assertThat(nguids.get(1)).as("namespaces have distinct NGUIDs").isNotEqualTo(nguids.get(2));
            }
        }
    }

    static List<Long> activeNsids(RawNvmeTcpHost admin, int after) throws Exception {
        Completion c = admin.identify(2, after);
        assertThat(c.status()).as("Identify CNS 02h NSID %d %s", after, c).isEqualTo(NvmeStatus.SUCCESS);
        List<Long> nsids = new ArrayList<>();
        int i = 0;
        for (; i < 1024; i++) {
            long nsid = u32(c.data(), i * 4);
            if (nsid == 0) {
                break;
            }
            nsids.add(nsid);
        }
        assertThat(Bytes.allZero(Bytes.slice(c.data(), i * 4, 4096 - i * 4))).as("CNS 02h zero after the list").isTrue();
        return nsids;
    }

    /** Parses a CNS 03h list: NIDT(1) NIDL(1) rsvd(2) id, until NIDL 0. Checks each NIDL against its NIDT. */
    static Map<Integer, byte[]> descriptors(byte[] d, int nsid) {
        Map<Integer, byte[]> ids = new HashMap<>();
        int off = 0;
        for (int n = 0; n < 1024 && off + 4 <= d.length; n++) {
            int nidt = u8(d, off);
            int nidl = u8(d, off + 1);
            if (nidl == 0) {
                assertThat(Bytes.allZero(Bytes.slice(d, off, d.length - off))).as("CNS 03h zero after the terminator")
                    .isTrue();
                return ids;
            }
            int expected = switch (nidt) {
                case 1 -> 8;
                case 2, 3 -> 16;
                case 4 -> 1;
                default -> -1;
            };
            assertThat(nidl).as("NSID %d descriptor type %d at %d: NIDL", nsid, nidt, off).isEqualTo(expected);
            assertThat(off + 4 + nidl).as("descriptor inside the 4096 bytes").isLessThanOrEqualTo(d.length);
            byte[] value = Bytes.slice(d, off + 4, nidl);
            if (nidt != 4) {
                assertThat(Bytes.allZero(value)).as("NSID %d descriptor type %d is all zero", nsid, nidt).isFalse();
            } else {
                assertThat(value[0]).as("CSI descriptor: NVM").isZero();
            }
            assertThat(ids.put(nidt, value)).as("NSID %d: descriptor type %d twice", nsid, nidt).isNull();
            off += 4 + nidl;
        }
        throw new AssertionError("NSID " + nsid + ": CNS 03h list not terminated by NIDL 0 within 4096 bytes");
    }
}
