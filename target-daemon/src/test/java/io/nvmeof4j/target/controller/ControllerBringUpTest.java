package io.nvmeof4j.target.controller;

import io.nvmeof4j.protocol.admin.AsyncEvent;
import io.nvmeof4j.protocol.admin.FeatureIdentifier;
import io.nvmeof4j.protocol.admin.IdentifyCommand;
import io.nvmeof4j.protocol.admin.LogPageIdentifier;
import io.nvmeof4j.protocol.command.NvmeStatus;
import io.nvmeof4j.protocol.fabrics.ConnectData;
import io.nvmeof4j.protocol.fabrics.ControllerRegisters;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

import static org.assertj.core.api.Assertions.assertThat;

/** The Linux host's bring-up of wire reference 2.5, step by step, against one controller. */
class ControllerBringUpTest {
    private final TestTarget target = new TestTarget();
    private final TestHost host = target.host();

    @AfterEach
    void tearDown() {
        target.close();
    }

    @Test
    void shouldBringUpControllerTheWayTheLinuxHostDoes() {
        // 1-2. Admin queue Connect: QID 0, SQSIZE 31, KATO 5000, CNTLID 0xFFFF.
        FakeQueue admin = host.openQueue();
        FakeRequest connect = host.connect(admin, 0, 31, 5000, TestTarget.SUBNQN, ConnectData.CNTLID_DYNAMIC);
        assertThat(connect.status()).isEqualTo(NvmeStatus.SUCCESS);
        int cntlid = connect.dw0() & 0xFFFF;
        assertThat(cntlid).isBetween(1, 0xFFEF);
        assertThat(connect.dw0() >>> 16).as("no ATR/ASCR").isZero();
        assertThat(admin.queueId()).isZero();
        assertThat(admin.sqSize()).isEqualTo(32);
        assertThat(admin.sqFlowControlDisabled()).isFalse();
        Controller controller = target.registry.controller(cntlid);
        assertThat(controller).isNotNull();
        assertThat(controller.hostNqn()).isEqualTo(TestHost.HOST_NQN);
        assertThat(controller.hostId()).isEqualTo(TestHost.HOST_ID);
        assertThat(controller.keepAliveTimeoutMillis()).isEqualTo(5000);

        // 3. Get CAP.
        FakeRequest cap = host.propertyGet(admin, ControllerRegisters.CAP, true);
        assertThat(cap.status()).isEqualTo(NvmeStatus.SUCCESS);
        long capValue = cap.result64();
        assertThat(capValue & 0xFFFF).as("MQES").isEqualTo(127);
        assertThat(capValue >>> 16 & 1).as("CQR").isEqualTo(1);
        assertThat(capValue >>> 24 & 0xFF).as("TO").isEqualTo(15);
        assertThat(capValue >>> 32 & 0xF).as("DSTRD").isZero();
        assertThat(capValue >>> 37 & 1).as("CSS NVM").isEqualTo(1);
        assertThat(capValue >>> 43 & 1).as("CSS I/O command sets, as nvmet").isEqualTo(1);
        assertThat(capValue >>> 48 & 0xF).as("MPSMIN").isZero();
        assertThat(capValue >>> 59 & 1).as("CRWMS").isZero();

        // Set CC EN=0 (IOSQES 6, IOCQES 4), Get CAP again, Set CC EN=1, poll CSTS.
        assertThat(host.propertySet(admin, ControllerRegisters.CC, 0x00460000).status()).isEqualTo(NvmeStatus.SUCCESS);
        assertThat(host.propertyGet(admin, ControllerRegisters.CSTS, false).result64()).isZero();
        assertThat(host.propertyGet(admin, ControllerRegisters.CAP, true).result64()).isEqualTo(capValue);
        // Admin commands wait for CC.EN: Command Sequence Error + DNR.
        assertThat(host.identify(admin, IdentifyCommand.CNS_CONTROLLER, 0).status())
            .isEqualTo(NvmeStatus.COMMAND_SEQUENCE_ERROR | NvmeStatus.DNR);
        assertThat(host.propertySet(admin, ControllerRegisters.CC, 0x00460001).status()).isEqualTo(NvmeStatus.SUCCESS);
        FakeRequest csts = host.propertyGet(admin, ControllerRegisters.CSTS, false);
        assertThat(csts.status()).isEqualTo(NvmeStatus.SUCCESS);
        assertThat(csts.result64()).as("CSTS.RDY").isEqualTo(1);
        assertThat(host.propertyGet(admin, ControllerRegisters.CC, false).result64()).isEqualTo(0x00460001);

        // 4. Get VS, Identify Controller.
        assertThat(host.propertyGet(admin, ControllerRegisters.VS, false).result64()).isEqualTo(0x00010300);
        FakeRequest idctrl = host.identify(admin, IdentifyCommand.CNS_CONTROLLER, 0);
        assertThat(idctrl.status()).isEqualTo(NvmeStatus.SUCCESS);
        ByteBuffer id = idctrl.data();
        assertThat(ascii(id, 4, 20)).isEqualTo("SN0123456789        ");
        assertThat(ascii(id, 24, 40)).isEqualTo(String.format("%-40s", "nvmeof4j test model"));
        assertThat(ascii(id, 64, 8)).isEqualTo("1.2.3   ");
        assertThat(id.get(72)).as("RAB").isEqualTo((byte) 6);
        assertThat(id.get(76)).as("CMIC: multi-port, multi-controller, ANA").isEqualTo((byte) 0x0B);
        assertThat(id.get(77)).as("MDTS 1 MiB = 2^8 x 4 KiB").isEqualTo((byte) 8);
        assertThat(id.getShort(78) & 0xFFFF).as("CNTLID").isEqualTo(cntlid);
        assertThat(id.getInt(80)).as("VER").isEqualTo(0x00010300);
        assertThat(id.getInt(92)).as("OAES: namespace attribute and ANA change notices").isEqualTo(1 << 8 | 1 << 11);
        assertThat(id.getInt(96)).as("CTRATT").isEqualTo(1 | 1 << 6);
        assertThat(id.get(111)).as("CNTRLTYPE").isEqualTo((byte) 1);
        assertThat(id.getShort(256)).as("OACS").isZero();
        assertThat(id.get(258)).as("ACL").isEqualTo((byte) 3);
        assertThat(id.get(259)).as("AERL").isEqualTo((byte) 3);
        assertThat(id.get(260)).as("FRMW").isEqualTo((byte) 0x03);
        assertThat(id.get(261)).as("LPA").isEqualTo((byte) 0x07);
        assertThat(id.get(262)).as("ELPE").isEqualTo((byte) 63);
        assertThat(id.getShort(320)).as("KAS").isNotZero();
        assertThat(id.get(512)).as("SQES").isEqualTo((byte) 0x66);
        assertThat(id.get(513)).as("CQES").isEqualTo((byte) 0x44);
        assertThat(id.getShort(514) & 0xFFFF).as("MAXCMD").isEqualTo(128);
        assertThat(id.getInt(516)).as("NN").isEqualTo(1024);
        assertThat(id.getShort(520)).as("ONCS: compare, DSM, write zeroes, reservations, verify, copy")
            .isEqualTo((short) 0x1AD);
        assertThat(id.getShort(522)).as("FUSES: compare and write").isEqualTo((short) 1);
        assertThat(id.getShort(534)).as("OCFS: copy format 0").isEqualTo((short) 1);
        assertThat(id.get(525)).as("VWC").isEqualTo((byte) 1);
        assertThat(id.getShort(526)).as("AWUN").isZero();
        assertThat(id.getShort(528)).as("AWUPF").isZero();
        assertThat(id.getInt(536)).as("SGLS").isEqualTo(0x00100001);
        assertThat(id.getInt(540)).as("MNAN").isEqualTo(1024);
        assertThat(nulTerminated(id, 768)).isEqualTo(TestTarget.SUBNQN);
        assertThat(id.getInt(1792)).as("IOCCSZ").isEqualTo((64 + 16384) / 16);
        assertThat(id.getInt(1796)).as("IORCSZ").isEqualTo(1);
        assertThat(id.getShort(1800)).as("ICDOFF").isZero();
        assertThat(id.get(1802)).as("FCATT").isZero();
        assertThat(id.get(1803)).as("MSDBD").isEqualTo((byte) 1);
        for (int i = 2048; i < 4096; i++) {
            assertThat(id.get(i)).as("byte %d", i).isZero();
        }

        // Log 05h (LPA bit 1).
        FakeRequest effects = host.getLogPage(admin, LogPageIdentifier.COMMANDS_SUPPORTED_AND_EFFECTS, 0, 4096, 0, false);
        assertThat(effects.status()).isEqualTo(NvmeStatus.SUCCESS);
        assertThat(effects.data().getInt(0x06 * 4)).as("Identify CSUPP").isEqualTo(1);
        assertThat(effects.data().getInt(0x18 * 4)).as("Keep Alive CSUPP").isEqualTo(1);
        assertThat(effects.data().getInt(0x10 * 4)).as("Firmware Commit unsupported").isZero();
        assertThat(effects.data().getInt(1024 + 0x01 * 4)).as("Write CSUPP|LBCC").isEqualTo(3);
        assertThat(effects.data().getInt(1024 + 0x02 * 4)).as("Read CSUPP").isEqualTo(1);
        assertThat(effects.data().getInt(1024 + 0x08 * 4)).as("Write Zeroes CSUPP|LBCC").isEqualTo(3);

        // Identify CNS 06h CSI 0: zeroes.
        FakeRequest cns6 = host.identify(admin, IdentifyCommand.CNS_CSI_CONTROLLER, 0, 0);
        assertThat(cns6.status()).isEqualTo(NvmeStatus.SUCCESS);
        assertThat(allZero(cns6.data())).isTrue();

        // 6. Set Features 07h: ask for 4 queues (0-based 3 | 3 << 16).
        FakeRequest queues = host.setFeatures(admin, FeatureIdentifier.NUMBER_OF_QUEUES, 3 | 3 << 16);
        assertThat(queues.status()).isEqualTo(NvmeStatus.SUCCESS);
        assertThat(queues.dw0()).isEqualTo(3 | 3 << 16);
        assertThat(host.getFeatures(admin, FeatureIdentifier.NUMBER_OF_QUEUES, 0).dw0()).isEqualTo(3 | 3 << 16);

        // ... then each I/O queue: transport connect + Connect with the CNTLID, SQSIZE 127, CATTR bit 2.
        FakeQueue[] io = new FakeQueue[4];
        for (int qid = 1; qid <= 4; qid++) {
            io[qid - 1] = host.openQueue();
            FakeRequest c = host.connect(io[qid - 1], qid, 127, 0, TestTarget.SUBNQN, cntlid, TestHost.HOST_NQN, 0x04);
            assertThat(c.status()).as("I/O connect %d", qid).isEqualTo(NvmeStatus.SUCCESS);
            assertThat(c.dw0() & 0xFFFF).isEqualTo(cntlid);
            assertThat(io[qid - 1].queueId()).isEqualTo(qid);
            assertThat(io[qid - 1].sqSize()).isEqualTo(128);
            assertThat(io[qid - 1].sqFlowControlDisabled()).isTrue();
        }
        assertThat(controller.queueIds()).containsExactly(0, 1, 2, 3, 4);
        assertThat(controller.ioQueueCount()).isEqualTo(4);

        // 7. Keep Alive, Set Features 0Bh (namespace attribute notices), one AER parked.
        assertThat(host.keepAlive(admin).status()).isEqualTo(NvmeStatus.SUCCESS);
        FakeRequest aec = host.setFeatures(admin, FeatureIdentifier.ASYNC_EVENT_CONFIGURATION, 1 << 8);
        assertThat(aec.status()).isEqualTo(NvmeStatus.SUCCESS);
        FakeRequest aer = host.asyncEventRequest(admin);
        assertThat(aer.isCompleted()).as("AER parked").isFalse();

        // Namespace scan: CNS 02h from NSID 0.
        FakeRequest list = host.identify(admin, IdentifyCommand.CNS_ACTIVE_NAMESPACE_LIST, 0);
        assertThat(list.status()).isEqualTo(NvmeStatus.SUCCESS);
        assertThat(list.data().getInt(0)).isEqualTo(1);
        assertThat(list.data().getInt(4)).isEqualTo(2);
        assertThat(list.data().getInt(8)).isZero();
        FakeRequest listAbove1 = host.identify(admin, IdentifyCommand.CNS_ACTIVE_NAMESPACE_LIST, 1);
        assertThat(listAbove1.data().getInt(0)).isEqualTo(2);
        assertThat(listAbove1.data().getInt(4)).isZero();

        // CNS 03h for NSID 1: UUID, NGUID, CSI, then NIDL 0.
        FakeRequest desc = host.identify(admin, IdentifyCommand.CNS_NAMESPACE_ID_DESCRIPTORS, 1);
        assertThat(desc.status()).isEqualTo(NvmeStatus.SUCCESS);
        ByteBuffer d = desc.data();
        assertThat(d.get(0)).as("NIDT UUID").isEqualTo((byte) 3);
        assertThat(d.get(1)).as("NIDL").isEqualTo((byte) 16);
        assertThat(d.get(4) & 0xFF).isEqualTo(0x6f);
        assertThat(d.get(19) & 0xFF).isEqualTo(0xf9);
        assertThat(d.get(20)).as("NIDT NGUID").isEqualTo((byte) 2);
        assertThat(d.get(21)).isEqualTo((byte) 16);
        assertThat(d.get(24)).isEqualTo((byte) 1);
        assertThat(d.get(39)).isEqualTo((byte) 16);
        assertThat(d.get(40)).as("NIDT CSI").isEqualTo((byte) 4);
        assertThat(d.get(41)).isEqualTo((byte) 1);
        assertThat(d.get(44)).as("CSI NVM").isZero();
        assertThat(d.get(45)).as("end").isZero();
        assertThat(d.get(46)).as("NIDL of the terminator").isZero();
        // NSID 2 has an all-zero NGUID: UUID and CSI only.
        ByteBuffer d2 = host.identify(admin, IdentifyCommand.CNS_NAMESPACE_ID_DESCRIPTORS, 2).data();
        assertThat(d2.get(0)).isEqualTo((byte) 3);
        assertThat(d2.get(20)).isEqualTo((byte) 4);

        // CNS 08h: NSTAT ready, NMIC shared.
        FakeRequest indep = host.identify(admin, IdentifyCommand.CNS_CSI_INDEPENDENT_NAMESPACE, 1);
        assertThat(indep.status()).isEqualTo(NvmeStatus.SUCCESS);
        assertThat(indep.data().get(14)).as("NSTAT").isEqualTo((byte) 1);
        assertThat(indep.data().get(1)).as("NMIC").isEqualTo((byte) 1);

        // CNS 00h.
        FakeRequest ns1 = host.identify(admin, IdentifyCommand.CNS_NAMESPACE, 1);
        assertThat(ns1.status()).isEqualTo(NvmeStatus.SUCCESS);
        ByteBuffer n = ns1.data();
        assertThat(n.getLong(0)).as("NSZE").isEqualTo(2048);
        assertThat(n.getLong(8)).as("NCAP").isEqualTo(2048);
        assertThat(n.getLong(16)).as("NUSE").isEqualTo(2048);
        assertThat(n.get(25)).as("NLBAF").isZero();
        assertThat(n.get(26)).as("FLBAS").isZero();
        assertThat(n.get(30)).as("NMIC").isEqualTo((byte) 1);
        assertThat(n.get(33)).as("DLFEAT").isEqualTo((byte) 0x09);
        assertThat(n.get(104)).as("NGUID[0]").isEqualTo((byte) 1);
        assertThat(n.get(119)).as("NGUID[15]").isEqualTo((byte) 16);
        assertThat(n.getShort(128)).as("LBAF0.MS").isZero();
        assertThat(n.get(130)).as("LBAF0.LBADS").isEqualTo((byte) 9);
        assertThat(host.identify(admin, IdentifyCommand.CNS_NAMESPACE, 2).data().get(130)).isEqualTo((byte) 12);

        // I/O on queue 1: write then read back through the fake executor.
        FakeRequest write = host.submit(io[0], 512, e -> e.opcode(0x01).nsid(1).cdw10And11(7).cdw(12, 0),
            r -> r.data().put(0, (byte) 0x5A).put(511, (byte) 0xC3));
        assertThat(write.status()).isEqualTo(NvmeStatus.SUCCESS);
        assertThat(target.ns1Device.get(7 * 512)).isEqualTo((byte) 0x5A);
        FakeRequest read = host.submit(io[1], 512, e -> e.opcode(0x02).nsid(1).cdw10And11(7).cdw(12, 0));
        assertThat(read.status()).isEqualTo(NvmeStatus.SUCCESS);
        assertThat(read.data().get(511)).isEqualTo((byte) 0xC3);
        assertThat(target.nvm.nsids()).containsExactly(1, 1);

        // A namespace change completes the parked AER; log 04h lists the NSID once, then nothing.
        target.registry.notifyNamespaceChanged(TestTarget.SUBNQN, 2);
        assertThat(aer.status()).isEqualTo(NvmeStatus.SUCCESS);
        assertThat(aer.dw0()).isEqualTo(AsyncEvent.dw0(AsyncEvent.TYPE_NOTICE, 0x00, 0x04)).isEqualTo(0x00040002);
        FakeRequest changed = host.getLogPage(admin, LogPageIdentifier.CHANGED_NAMESPACE_LIST, -1, 4096, 0, false);
        assertThat(changed.status()).isEqualTo(NvmeStatus.SUCCESS);
        assertThat(changed.data().getInt(0)).isEqualTo(2);
        assertThat(changed.data().getInt(4)).isZero();
        FakeRequest again = host.getLogPage(admin, LogPageIdentifier.CHANGED_NAMESPACE_LIST, -1, 4096, 0, false);
        assertThat(allZero(again.data())).isTrue();

        // Teardown: I/O queues go, then CC.SHN = 01b, CSTS.SHST = 10b, then the admin queue.
        for (FakeQueue q : io) {
            q.close("host disconnect");
        }
        assertThat(controller.queueIds()).containsExactly(0);
        assertThat(host.propertySet(admin, ControllerRegisters.CC, 0x00464001).status()).isEqualTo(NvmeStatus.SUCCESS);
        long shst = host.propertyGet(admin, ControllerRegisters.CSTS, false).result64();
        assertThat(shst >>> 2 & 3).as("SHST complete").isEqualTo(2);
        assertThat(shst & 1).as("RDY cleared").isZero();
        assertThat(controller.isShutDown()).isTrue();
        assertThat(host.identify(admin, IdentifyCommand.CNS_CONTROLLER, 0).status())
            .isEqualTo(NvmeStatus.COMMAND_SEQUENCE_ERROR | NvmeStatus.DNR);
        admin.close("host disconnect");
        assertThat(target.registry.controller(cntlid)).isNull();
        assertThat(controller.isDestroyed()).isTrue();
    }

    static String ascii(ByteBuffer b, int offset, int length) {
        byte[] bytes = new byte[length];
        for (int i = 0; i < length; i++) {
            bytes[i] = b.get(offset + i);
        }
        return new String(bytes, StandardCharsets.US_ASCII);
    }

    static String nulTerminated(ByteBuffer b, int offset) {
        int end = offset;
        while (b.get(end) != 0) {
            end++;
        }
        return ascii(b, offset, end - offset);
    }

    static boolean allZero(ByteBuffer b) {
        for (int i = 0; i < b.limit(); i++) {
            if (b.get(i) != 0) {
                return false;
            }
        }
        return true;
    }
}
