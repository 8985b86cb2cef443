package io.nvmeof4j.target.controller;

import io.nvmeof4j.protocol.admin.AdminOpcode;
import io.nvmeof4j.protocol.admin.AsyncEvent;
import io.nvmeof4j.protocol.admin.FeatureIdentifier;
import io.nvmeof4j.protocol.admin.GetFeaturesCommand;
import io.nvmeof4j.protocol.admin.GetLogPageCommand;
import io.nvmeof4j.protocol.admin.IdentifyCommand;
import io.nvmeof4j.protocol.admin.LogPageIdentifier;
import io.nvmeof4j.protocol.admin.SetFeaturesCommand;
import io.nvmeof4j.protocol.command.NvmeStatus;
import io.nvmeof4j.protocol.fabrics.ControllerRegisters;
import io.nvmeof4j.protocol.fabrics.FabricsCommandType;
import io.nvmeof4j.protocol.fabrics.PropertyCommand;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;

import static org.assertj.core.api.Assertions.assertThat;

/** Admin commands of an enabled I/O controller: statuses, lengths, offsets. */
class AdminCommandsTest {
    private static final int INVALID_FIELD = NvmeStatus.INVALID_FIELD | NvmeStatus.DNR;

    private final TestTarget target = new TestTarget();
    private final TestHost host = target.host();
    private FakeQueue admin;
    private int cntlid;

    @BeforeEach
    void connect() {
        admin = host.openQueue();
        cntlid = host.connect(admin, 0, 31, 5000, TestTarget.SUBNQN, 0xFFFF).dw0();
        assertThat(host.propertySet(admin, ControllerRegisters.CC, 0x00460001).status()).isEqualTo(NvmeStatus.SUCCESS);
    }

    @AfterEach
    void tearDown() {
        target.close();
    }

    // ------------------------------------------------------------ properties and CC

    @Test
    void shouldRejectUnknownPropertyOffsetsAndSizes() {
        assertThat(host.propertyGet(admin, ControllerRegisters.CC, true).status()).isEqualTo(INVALID_FIELD);
        assertThat(host.propertyGet(admin, ControllerRegisters.CAP, false).status()).isEqualTo(INVALID_FIELD);
        assertThat(host.propertyGet(admin, 0x68, false).status()).as("CRTO (CAP.CRWMS clear)").isEqualTo(INVALID_FIELD);
        assertThat(host.propertySet(admin, ControllerRegisters.NSSR, ControllerRegisters.NSSR_RESET_VALUE).status())
            .isEqualTo(INVALID_FIELD);
        FakeRequest eightByteSet = host.submit(admin, 0, e -> new PropertyCommand().wrap(e)
            .init(e.commandId(), FabricsCommandType.PROPERTY_SET).attributes(1).propertyOffset(ControllerRegisters.CC)
            .value(0x00460001));
        assertThat(eightByteSet.status()).isEqualTo(INVALID_FIELD);
        assertThat(host.submit(admin, 0, e -> e.opcode(0x7F).fabricsCommandType(FabricsCommandType.DISCONNECT)).status())
            .isEqualTo(NvmeStatus.INVALID_OPCODE | NvmeStatus.DNR);
    }

    @Test
    void shouldSetFatalStatusWhenEnabledWithBadEntrySizes() {
        FakeQueue q = host.openQueue();
        host.connect(q, 0, 31, 0, TestTarget.SUBNQN, 0xFFFF);
        host.propertySet(q, ControllerRegisters.CC, ControllerRegisters.cc(true, 0, 0, 0, 0, 7, 4));
        assertThat(host.propertyGet(q, ControllerRegisters.CSTS, false).result64()).as("CFS, not RDY").isEqualTo(2);
        assertThat(host.identify(q, IdentifyCommand.CNS_CONTROLLER, 0).status())
            .isEqualTo(NvmeStatus.COMMAND_SEQUENCE_ERROR | NvmeStatus.DNR);
        FakeQueue mps = host.openQueue();
        host.connect(mps, 0, 31, 0, TestTarget.SUBNQN, 0xFFFF);
        host.propertySet(mps, ControllerRegisters.CC, ControllerRegisters.cc(true, 0, 1, 0, 0, 6, 4));
        assertThat(host.propertyGet(mps, ControllerRegisters.CSTS, false).result64()).isEqualTo(2);
        FakeQueue ams = host.openQueue();
        host.connect(ams, 0, 31, 0, TestTarget.SUBNQN, 0xFFFF);
        host.propertySet(ams, ControllerRegisters.CC, ControllerRegisters.cc(true, 0, 0, 1, 0, 6, 4));
        assertThat(host.propertyGet(ams, ControllerRegisters.CSTS, false).result64()).as("AMS 1 (nvmet: CFS)").isEqualTo(2);
        for (int css : new int[] {1, 5, 7}) {
            FakeQueue q2 = host.openQueue();
            host.connect(q2, 0, 31, 0, TestTarget.SUBNQN, 0xFFFF);
            host.propertySet(q2, ControllerRegisters.CC, ControllerRegisters.cc(true, css, 0, 0, 0, 6, 4));
            assertThat(host.propertyGet(q2, ControllerRegisters.CSTS, false).result64()).as("CSS %d", css).isEqualTo(2);
        }
    }

    /** CAP.CSS bit 43 is set, so CC.CSS 110b enables the controller, as in nvmet (nvmet_css_supported). */
    @Test
    void shouldEnableWithAllIoCommandSetsSelected() {
        FakeQueue q = host.openQueue();
        host.connect(q, 0, 31, 0, TestTarget.SUBNQN, 0xFFFF);
        assertThat(host.propertyGet(q, ControllerRegisters.CAP, true).result64() & ControllerRegisters.CAP_CSS_IO_COMMAND_SETS)
            .isNotZero();
        assertThat(host.propertySet(q, ControllerRegisters.CC, 0x00460061).status()).isEqualTo(NvmeStatus.SUCCESS);
        assertThat(host.propertyGet(q, ControllerRegisters.CSTS, false).result64()).as("RDY").isEqualTo(1);
        assertThat(host.propertyGet(q, ControllerRegisters.CC, false).result64()).isEqualTo(0x00460061L);
        assertThat(host.identify(q, IdentifyCommand.CNS_CONTROLLER, 0).status()).isEqualTo(NvmeStatus.SUCCESS);
    }

    /** Reserved CC bits are stored and ignored (nvmet_update_cc; SPDK logs and accepts them). */
    @Test
    void shouldIgnoreReservedCcBits() {
        FakeQueue q = host.openQueue();
        host.connect(q, 0, 31, 0, TestTarget.SUBNQN, 0xFFFF);
        int reserved = 0xFF00_0000 | 0x0E; // bits 31:24 (CRIME and reserved) and 3:1
        assertThat(host.propertySet(q, ControllerRegisters.CC, 0x00460001 | reserved).status()).isEqualTo(NvmeStatus.SUCCESS);
        assertThat(host.propertyGet(q, ControllerRegisters.CSTS, false).result64()).as("RDY").isEqualTo(1);
        assertThat(host.propertyGet(q, ControllerRegisters.CC, false).result64()).isEqualTo((0x00460001 | reserved) & 0xFFFF_FFFFL);
        assertThat(host.identify(q, IdentifyCommand.CNS_CONTROLLER, 0).status()).isEqualTo(NvmeStatus.SUCCESS);
        assertThat(host.propertySet(q, ControllerRegisters.CC, 0x00464000 | reserved).status()).isEqualTo(NvmeStatus.SUCCESS);
        assertThat(host.propertyGet(q, ControllerRegisters.CSTS, false).result64()).as("shutdown complete")
            .isEqualTo(ControllerRegisters.CSTS_SHST_COMPLETE);
    }

    /** Identify CNS 1Ch: one I/O Command Set Vector (index 0) with only the NVM command set, as SPDK serves it. */
    @Test
    void shouldListOneIoCommandSetCombination() {
        FakeRequest r = host.identify(admin, IdentifyCommand.CNS_IO_COMMAND_SET, 0);
        assertThat(r.status()).isEqualTo(NvmeStatus.SUCCESS);
        assertThat(r.data().getLong(0)).as("vector 0: NVM").isEqualTo(1L);
        for (int i = 8; i < IdentifyCommand.DATA_LENGTH; i++) {
            assertThat(r.data().get(i)).as("byte %d", i).isZero();
        }
    }

    /** Set/Get Features 19h: combination 0 is accepted and reported; any other index is rejected (0x2B + DNR). */
    @Test
    void shouldAcceptOnlyCombinationZeroAsIoCommandSetProfile() {
        FakeRequest set = host.setFeatures(admin, FeatureIdentifier.IO_COMMAND_SET_PROFILE, 0);
        assertThat(set.status()).isEqualTo(NvmeStatus.SUCCESS);
        FakeRequest bad = host.setFeatures(admin, FeatureIdentifier.IO_COMMAND_SET_PROFILE, 1);
        assertThat(bad.status()).isEqualTo(NvmeStatus.IO_COMMAND_SET_COMBINATION_REJECTED | NvmeStatus.DNR).isEqualTo(0x802B);
        FakeRequest get = host.getFeatures(admin, FeatureIdentifier.IO_COMMAND_SET_PROFILE, 0);
        assertThat(get.status()).isEqualTo(NvmeStatus.SUCCESS);
        assertThat(get.dw0()).isZero();
        FakeRequest caps = host.getFeatures(admin, FeatureIdentifier.IO_COMMAND_SET_PROFILE, 3);
        assertThat(caps.status()).isEqualTo(NvmeStatus.SUCCESS);
        assertThat(caps.dw0()).as("changeable").isEqualTo(4);
    }

    @Test
    void shouldStopIoWhenDisabledAndResumeWhenReenabled() {
        FakeQueue io = host.openQueue();
        assertThat(host.connect(io, 1, 31, 0, TestTarget.SUBNQN, cntlid).status()).isEqualTo(NvmeStatus.SUCCESS);
        assertThat(host.submit(io, 512, e -> e.opcode(0x02).nsid(1)).status()).isEqualTo(NvmeStatus.SUCCESS);
        host.propertySet(admin, ControllerRegisters.CC, 0x00460000);
        assertThat(host.propertyGet(admin, ControllerRegisters.CSTS, false).result64()).isZero();
        assertThat(host.submit(io, 512, e -> e.opcode(0x02).nsid(1)).status())
            .isEqualTo(NvmeStatus.COMMAND_SEQUENCE_ERROR | NvmeStatus.DNR);
        host.propertySet(admin, ControllerRegisters.CC, 0x00460001);
        assertThat(host.submit(io, 512, e -> e.opcode(0x02).nsid(1)).status()).isEqualTo(NvmeStatus.SUCCESS);
    }

    @Test
    void shouldRejectUnknownNamespaceOnIoQueue() {
        FakeQueue io = host.openQueue();
        host.connect(io, 1, 31, 0, TestTarget.SUBNQN, cntlid);
        assertThat(host.submit(io, 512, e -> e.opcode(0x02).nsid(3)).status())
            .isEqualTo(NvmeStatus.INVALID_NAMESPACE | NvmeStatus.DNR);
        assertThat(host.submit(io, 0, e -> e.opcode(0x00).nsid(0)).status())
            .isEqualTo(NvmeStatus.INVALID_NAMESPACE | NvmeStatus.DNR);
        assertThat(target.nvm.nsids()).isEmpty();
    }

    @Test
    void shouldSeeNamespacesAddedWhileConnected() {
        FakeQueue io = host.openQueue();
        host.connect(io, 1, 31, 0, TestTarget.SUBNQN, cntlid);
        assertThat(host.submit(io, 512, e -> e.opcode(0x02).nsid(7)).status())
            .isEqualTo(NvmeStatus.INVALID_NAMESPACE | NvmeStatus.DNR);
        target.subsystem.addNamespace(new io.nvmeof4j.target.model.Namespace(7, new RamDevice(512, 8, false),
            java.util.UUID.randomUUID(), new byte[16]));
        assertThat(host.submit(io, 512, e -> e.opcode(0x02).nsid(7)).status()).isEqualTo(NvmeStatus.SUCCESS);
        ByteBuffer list = host.identify(admin, IdentifyCommand.CNS_ACTIVE_NAMESPACE_LIST, 0).data();
        assertThat(list.getInt(8)).isEqualTo(7);
    }

    @Test
    void shouldPromiseZeroesAfterDeallocateOnlyWhereTheDeviceDoes() {
        RamDevice ram = new RamDevice(512, 8, false);
        io.nvmeof4j.target.backend.BlockDevice ssdLike = new io.nvmeof4j.target.backend.BlockDevice() {
            @Override public String description() { return "block device that need not zero on discard"; }
            @Override public int blockSize() { return ram.blockSize(); }
            @Override public long blockCount() { return ram.blockCount(); }
            @Override public boolean hasVolatileWriteCache() { return false; }
            @Override public boolean deallocatedBlocksReadZeroes() { return false; }
            @Override public void submit(io.nvmeof4j.target.backend.BlockIo io) { ram.submit(io); }
            @Override public void close() { ram.close(); }
        };
        target.subsystem.addNamespace(new io.nvmeof4j.target.model.Namespace(8, ssdLike,
            java.util.UUID.randomUUID(), new byte[16]));
        // DLFEAT (byte 33): 0x09 (read zeroes, Write Zeroes may deallocate) only for devices that guarantee zeroes.
        assertThat(host.identify(admin, IdentifyCommand.CNS_NAMESPACE, 8).data().get(33)).isZero();
        assertThat(host.identify(admin, IdentifyCommand.CNS_NAMESPACE, 1).data().get(33)).isEqualTo((byte) 0x09);
    }

    // ------------------------------------------------------------ opcodes

    @Test
    void shouldRejectUnknownAdminOpcodes() {
        for (int opcode : new int[] {AdminOpcode.CREATE_IO_SQ, AdminOpcode.DELETE_IO_SQ, AdminOpcode.CREATE_IO_CQ,
            AdminOpcode.FORMAT_NVM, AdminOpcode.NAMESPACE_MANAGEMENT, AdminOpcode.DOORBELL_BUFFER_CONFIG, 0xC0}) {
            assertThat(host.admin(admin, opcode).status()).as("opcode 0x%02x", opcode)
                .isEqualTo(NvmeStatus.INVALID_OPCODE | NvmeStatus.DNR);
        }
    }

    @Test
    void shouldAnswerAbortWithNotAborted() {
        FakeRequest abort = host.admin(admin, AdminOpcode.ABORT);
        assertThat(abort.status()).isEqualTo(NvmeStatus.SUCCESS);
        assertThat(abort.dw0()).isEqualTo(1);
    }

    // ------------------------------------------------------------ identify

    @Test
    void shouldAnswerIdentifyEdgeCases() {
        assertThat(host.identify(admin, 0x04, 0).status()).as("CNS 04h").isEqualTo(INVALID_FIELD);
        assertThat(host.identify(admin, 0x10, 0).status()).as("CNS 10h").isEqualTo(INVALID_FIELD);
        assertThat(host.identify(admin, IdentifyCommand.CNS_CSI_CONTROLLER, 0, 2).status()).as("ZNS").isEqualTo(INVALID_FIELD);
        assertThat(host.identify(admin, IdentifyCommand.CNS_NAMESPACE, 0).status())
            .isEqualTo(NvmeStatus.INVALID_NAMESPACE | NvmeStatus.DNR);
        assertThat(host.identify(admin, IdentifyCommand.CNS_NAMESPACE, -1).status())
            .isEqualTo(NvmeStatus.INVALID_NAMESPACE | NvmeStatus.DNR);
        FakeRequest inactive = host.identify(admin, IdentifyCommand.CNS_NAMESPACE, 5);
        assertThat(inactive.status()).isEqualTo(NvmeStatus.SUCCESS);
        assertThat(ControllerBringUpTest.allZero(inactive.data())).as("inactive NSID reads as zeroes").isTrue();
        assertThat(host.identify(admin, IdentifyCommand.CNS_ACTIVE_NAMESPACE_LIST, 0xFFFF_FFFE).status())
            .isEqualTo(NvmeStatus.INVALID_NAMESPACE | NvmeStatus.DNR);
        assertThat(host.identify(admin, IdentifyCommand.CNS_ACTIVE_NAMESPACE_LIST, -1).status())
            .isEqualTo(NvmeStatus.INVALID_NAMESPACE | NvmeStatus.DNR);
        assertThat(ControllerBringUpTest.allZero(host.identify(admin, IdentifyCommand.CNS_ACTIVE_NAMESPACE_LIST, 2).data()))
            .isTrue();
        assertThat(host.identify(admin, IdentifyCommand.CNS_NAMESPACE_ID_DESCRIPTORS, 5).status())
            .isEqualTo(NvmeStatus.INVALID_NAMESPACE | NvmeStatus.DNR);
        assertThat(host.identify(admin, IdentifyCommand.CNS_CSI_INDEPENDENT_NAMESPACE, 5).status())
            .isEqualTo(NvmeStatus.INVALID_NAMESPACE | NvmeStatus.DNR);
        FakeRequest csiList = host.identify(admin, IdentifyCommand.CNS_CSI_ACTIVE_NAMESPACE_LIST, 0, 0);
        assertThat(csiList.data().getInt(0)).isEqualTo(1);
        assertThat(ControllerBringUpTest.allZero(host.identify(admin, IdentifyCommand.CNS_CSI_ACTIVE_NAMESPACE_LIST, 0, 2)
            .data())).isTrue();
    }

    @Test
    void shouldRequireExactIdentifyTransferLength() {
        FakeRequest shortSgl = host.submit(admin, 2048,
            e -> new IdentifyCommand().wrap(e).init(e.commandId(), 0, IdentifyCommand.CNS_CONTROLLER));
        assertThat(shortSgl.status()).isEqualTo(NvmeStatus.SGL_DATA_LENGTH_INVALID | NvmeStatus.DNR);
        FakeRequest noData = host.submit(admin, 0,
            e -> new IdentifyCommand().wrap(e).init(e.commandId(), 0, IdentifyCommand.CNS_CONTROLLER));
        assertThat(noData.status()).isEqualTo(NvmeStatus.SGL_DATA_LENGTH_INVALID | NvmeStatus.DNR);
        assertThat(host.submit(admin, 16, e -> e.opcode(AdminOpcode.KEEP_ALIVE)).status())
            .isEqualTo(NvmeStatus.SGL_DATA_LENGTH_INVALID | NvmeStatus.DNR);
    }

    // ------------------------------------------------------------ log pages

    @Test
    void shouldHonourLogPageOffsetAndLengthAtAnyDword() {
        ByteBuffer full = host.getLogPage(admin, LogPageIdentifier.COMMANDS_SUPPORTED_AND_EFFECTS, 0, 4096, 0, false).data();
        for (int lpo : new int[] {4, 20, 1024, 1028, 4092}) {
            for (int length : new int[] {4, 12, 1020}) {
                FakeRequest part = host.getLogPage(admin, LogPageIdentifier.COMMANDS_SUPPORTED_AND_EFFECTS, 0, length, lpo, false);
                assertThat(part.status()).isEqualTo(NvmeStatus.SUCCESS);
                for (int i = 0; i < length; i++) {
                    byte expected = lpo + i < 4096 ? full.get(lpo + i) : 0;
                    assertThat(part.data().get(i)).as("lpo %d length %d byte %d", lpo, length, i).isEqualTo(expected);
                }
            }
        }
        // Reading past the end zero-fills; LPO equal to the size is an empty read.
        FakeRequest atEnd = host.getLogPage(admin, LogPageIdentifier.COMMANDS_SUPPORTED_AND_EFFECTS, 0, 8, 4096, false);
        assertThat(atEnd.status()).isEqualTo(NvmeStatus.SUCCESS);
        assertThat(atEnd.data().getLong(0)).isZero();
        assertThat(host.getLogPage(admin, LogPageIdentifier.COMMANDS_SUPPORTED_AND_EFFECTS, 0, 8, 4100, false).status())
            .as("LPO beyond the log").isEqualTo(INVALID_FIELD);
    }

    @Test
    void shouldHonourNumdu() {
        int length = (0x10000 + 1) * 4; // NUMD 0x10000: NUMDU 1, NUMDL 0
        FakeRequest big = host.getLogPage(admin, LogPageIdentifier.COMMANDS_SUPPORTED_AND_EFFECTS, 0, length, 0, false);
        GetLogPageCommand cmd = new GetLogPageCommand().wrap(big.command());
        assertThat(cmd.numberOfDwordsUpper()).isEqualTo(1);
        assertThat(cmd.numberOfDwordsLower()).isZero();
        assertThat(big.status()).isEqualTo(NvmeStatus.SUCCESS);
        assertThat(big.data().getInt(0x06 * 4)).isEqualTo(1);
        for (int i = 4096; i < length; i += 4) {
            assertThat(big.data().getInt(i)).isZero();
        }
    }

    @Test
    void shouldRejectLogPageWithUnalignedOffsetOrMismatchedLength() {
        FakeRequest unaligned = host.submit(admin, 16, e -> {
            new GetLogPageCommand().wrap(e).init(e.commandId(), 0, LogPageIdentifier.SMART_HEALTH, 16, 0);
            e.cdw(12, 2);
        });
        assertThat(unaligned.status()).isEqualTo(INVALID_FIELD);
        FakeRequest mismatch = host.submit(admin, 512, e -> new GetLogPageCommand().wrap(e)
            .init(e.commandId(), 0, LogPageIdentifier.SMART_HEALTH, 256, 0));
        assertThat(mismatch.status()).isEqualTo(NvmeStatus.SGL_DATA_LENGTH_INVALID | NvmeStatus.DNR);
    }

    @Test
    void shouldServeTheMandatoryLogPages() {
        FakeRequest unknown = host.getLogPage(admin, LogPageIdentifier.ENDURANCE_GROUP, 0, 512, 0, false);
        assertThat(unknown.status()).as("nvmet: Invalid Field for an unsupported LID").isEqualTo(INVALID_FIELD);
        assertThat(host.getLogPage(admin, LogPageIdentifier.DISCOVERY, 0, 1024, 0, false).status()).isEqualTo(INVALID_FIELD);

        FakeRequest error = host.getLogPage(admin, LogPageIdentifier.ERROR_INFORMATION, 0, 4096, 0, false);
        assertThat(error.status()).isEqualTo(NvmeStatus.SUCCESS);
        assertThat(ControllerBringUpTest.allZero(error.data())).isTrue();

        FakeRequest smart = host.getLogPage(admin, LogPageIdentifier.SMART_HEALTH, -1, 512, 0, false);
        assertThat(smart.status()).isEqualTo(NvmeStatus.SUCCESS);
        assertThat(smart.data().get(0)).as("critical warning").isZero();
        assertThat(smart.data().get(3)).as("available spare").isEqualTo((byte) 100);
        assertThat(host.getLogPage(admin, LogPageIdentifier.SMART_HEALTH, 1, 512, 0, false).status())
            .isEqualTo(NvmeStatus.SUCCESS);
        assertThat(host.getLogPage(admin, LogPageIdentifier.SMART_HEALTH, 9, 512, 0, false).status())
            .isEqualTo(NvmeStatus.INVALID_NAMESPACE | NvmeStatus.DNR);

        FakeRequest fw = host.getLogPage(admin, LogPageIdentifier.FIRMWARE_SLOT, 0, 512, 0, false);
        assertThat(fw.status()).isEqualTo(NvmeStatus.SUCCESS);
        assertThat(fw.data().get(0)).as("AFI slot 1").isEqualTo((byte) 1);
        assertThat(ControllerBringUpTest.ascii(fw.data(), 8, 8)).isEqualTo("1.2.3   ");
        assertThat(fw.data().getLong(16)).as("FRS2 empty").isZero();

        FakeRequest supported = host.getLogPage(admin, LogPageIdentifier.SUPPORTED_LOG_PAGES, 0, 1024, 0, false);
        for (int lid = 0; lid <= 5; lid++) {
            assertThat(supported.data().getInt(lid * 4)).as("LID %d", lid).isEqualTo(1);
        }
        assertThat(supported.data().getInt(0x70 * 4)).isZero();

        FakeRequest effectsOtherCsi = host.submit(admin, 4096, e -> new GetLogPageCommand().wrap(e)
            .init(e.commandId(), 0, LogPageIdentifier.COMMANDS_SUPPORTED_AND_EFFECTS, 4096, 0).commandSetIdentifier(2));
        assertThat(effectsOtherCsi.status()).isEqualTo(NvmeStatus.INVALID_LOG_PAGE | NvmeStatus.DNR);
    }

    // ------------------------------------------------------------ features

    @Test
    void shouldAnswerFeaturesLikeNvmet() {
        assertThat(host.setFeatures(admin, FeatureIdentifier.NUMBER_OF_QUEUES, 0xFFFF).status()).isEqualTo(INVALID_FIELD);
        assertThat(host.setFeatures(admin, FeatureIdentifier.NUMBER_OF_QUEUES, 0xFFFF << 16).status()).isEqualTo(INVALID_FIELD);
        for (int fid : new int[] {FeatureIdentifier.ARBITRATION, FeatureIdentifier.POWER_MANAGEMENT,
            FeatureIdentifier.TEMPERATURE_THRESHOLD, FeatureIdentifier.ERROR_RECOVERY,
            FeatureIdentifier.INTERRUPT_COALESCING, FeatureIdentifier.TIMESTAMP, FeatureIdentifier.VOLATILE_WRITE_CACHE}) {
            assertThat(host.setFeatures(admin, fid, 0).status()).as("Set %s", FeatureIdentifier.name(fid))
                .isEqualTo(INVALID_FIELD);
        }
        for (int fid : new int[] {FeatureIdentifier.ARBITRATION, FeatureIdentifier.POWER_MANAGEMENT,
            FeatureIdentifier.TEMPERATURE_THRESHOLD, FeatureIdentifier.ERROR_RECOVERY,
            FeatureIdentifier.INTERRUPT_COALESCING}) {
            assertThat(host.getFeatures(admin, fid, 0).status()).as("Get %s", FeatureIdentifier.name(fid))
                .isEqualTo(INVALID_FIELD);
        }
        FakeRequest vwc = host.getFeatures(admin, FeatureIdentifier.VOLATILE_WRITE_CACHE, 0);
        assertThat(vwc.status()).isEqualTo(NvmeStatus.SUCCESS);
        assertThat(vwc.dw0()).isEqualTo(1);

        FakeRequest saved = host.submit(admin, 0, e -> new SetFeaturesCommand().wrap(e)
            .init(e.commandId(), FeatureIdentifier.KEEP_ALIVE_TIMER, 10000).save(true));
        assertThat(saved.status()).isEqualTo(NvmeStatus.FEATURE_NOT_SAVEABLE | NvmeStatus.DNR);

        assertThat(host.setFeatures(admin, FeatureIdentifier.KEEP_ALIVE_TIMER, 10000).status()).isEqualTo(NvmeStatus.SUCCESS);
        assertThat(host.getFeatures(admin, FeatureIdentifier.KEEP_ALIVE_TIMER, 0).dw0()).isEqualTo(10000);
        assertThat(host.getFeatures(admin, FeatureIdentifier.KEEP_ALIVE_TIMER, GetFeaturesCommand.SEL_SUPPORTED_CAPABILITIES)
            .dw0()).as("changeable, not saveable").isEqualTo(GetFeaturesCommand.CAPABILITY_CHANGEABLE);
        assertThat(host.getFeatures(admin, FeatureIdentifier.NUMBER_OF_QUEUES, GetFeaturesCommand.SEL_DEFAULT).dw0())
            .isEqualTo(127 | 127 << 16);

        assertThat(host.setFeatures(admin, FeatureIdentifier.ASYNC_EVENT_CONFIGURATION, 1 << 9).status())
            .as("firmware activation notices are not offered").isEqualTo(INVALID_FIELD);
        assertThat(host.setFeatures(admin, FeatureIdentifier.ASYNC_EVENT_CONFIGURATION, 1 << 11).status())
            .as("ANA change notices are").isEqualTo(NvmeStatus.SUCCESS);
        assertThat(host.setFeatures(admin, FeatureIdentifier.ASYNC_EVENT_CONFIGURATION, 1 << 8 | 0x1F).status())
            .isEqualTo(NvmeStatus.SUCCESS);
        assertThat(host.getFeatures(admin, FeatureIdentifier.ASYNC_EVENT_CONFIGURATION, 0).dw0()).isEqualTo(0x11F);

        FakeRequest hostIdSet = host.submit(admin, 16, e -> new SetFeaturesCommand().wrap(e)
            .init(e.commandId(), FeatureIdentifier.HOST_IDENTIFIER, 1));
        assertThat(hostIdSet.status()).isEqualTo(NvmeStatus.COMMAND_SEQUENCE_ERROR | NvmeStatus.DNR);
        FakeRequest hostIdGet = host.submit(admin, 16, e -> new GetFeaturesCommand().wrap(e)
            .init(e.commandId(), FeatureIdentifier.HOST_IDENTIFIER, 0).cdw11(1));
        assertThat(hostIdGet.status()).isEqualTo(NvmeStatus.SUCCESS);
        assertThat(io.nvmeof4j.protocol.HostId.read(hostIdGet.data(), 0)).isEqualTo(TestHost.HOST_ID);
        FakeRequest hostId64 = host.submit(admin, 16, e -> new GetFeaturesCommand().wrap(e)
            .init(e.commandId(), FeatureIdentifier.HOST_IDENTIFIER, 0));
        assertThat(hostId64.status()).isEqualTo(INVALID_FIELD);
    }

    @Test
    void shouldRefuseNumberOfQueuesOnceIoQueuesExist() {
        assertThat(host.connect(host.openQueue(), 1, 31, 0, TestTarget.SUBNQN, cntlid).status()).isEqualTo(NvmeStatus.SUCCESS);
        assertThat(host.setFeatures(admin, FeatureIdentifier.NUMBER_OF_QUEUES, 3 | 3 << 16).status())
            .isEqualTo(NvmeStatus.COMMAND_SEQUENCE_ERROR | NvmeStatus.DNR);
    }

    @Test
    void shouldAnswerKeepAliveInvalidWithoutKato() {
        FakeQueue q = host.openQueue();
        host.connect(q, 0, 31, 0, TestTarget.SUBNQN, 0xFFFF);
        host.propertySet(q, ControllerRegisters.CC, 0x00460001);
        FakeRequest ka = host.keepAlive(q);
        assertThat(ka.status()).isEqualTo(NvmeStatus.KEEP_ALIVE_INVALID);
        assertThat(NvmeStatus.isDnr(ka.status())).isFalse();
        assertThat(host.keepAlive(admin).status()).isEqualTo(NvmeStatus.SUCCESS);
    }

    // ------------------------------------------------------------ asynchronous events

    @Test
    void shouldLimitParkedAsyncEventRequestsToAerlPlusOne() {
        FakeRequest[] parked = new FakeRequest[4];
        for (int i = 0; i < 4; i++) {
            parked[i] = host.asyncEventRequest(admin);
            assertThat(parked[i].isCompleted()).isFalse();
        }
        FakeRequest fifth = host.asyncEventRequest(admin);
        assertThat(fifth.status()).isEqualTo(NvmeStatus.ASYNC_EVENT_REQUEST_LIMIT_EXCEEDED | NvmeStatus.DNR);
        admin.close("host gone");
        for (FakeRequest r : parked) {
            assertThat(r.status()).isEqualTo(NvmeStatus.ABORTED_SQ_DELETION);
        }
    }

    @Test
    void shouldMaskNamespaceNoticeUntilTheLogIsRead() {
        FakeRequest aer1 = host.asyncEventRequest(admin);
        FakeRequest aer2 = host.asyncEventRequest(admin);
        target.registry.notifyNamespaceChanged(TestTarget.SUBNQN, 1);
        assertThat(aer2.dw0()).isEqualTo(AsyncEvent.NAMESPACE_ATTRIBUTE_CHANGED_DW0);
        target.registry.notifyNamespaceChanged(TestTarget.SUBNQN, 2);
        target.registry.notifyNamespaceChanged(TestTarget.SUBNQN, 1);
        assertThat(aer1.isCompleted()).as("masked until log 04h is read").isFalse();
        // RAE=1 keeps both the list and the mask.
        FakeRequest retained = host.getLogPage(admin, LogPageIdentifier.CHANGED_NAMESPACE_LIST, -1, 4096, 0, true);
        assertThat(retained.data().getInt(0)).isEqualTo(1);
        assertThat(retained.data().getInt(4)).isEqualTo(2);
        assertThat(retained.data().getInt(8)).isZero();
        target.registry.notifyNamespaceChanged(TestTarget.SUBNQN, 2);
        assertThat(aer1.isCompleted()).isFalse();
        FakeRequest read = host.getLogPage(admin, LogPageIdentifier.CHANGED_NAMESPACE_LIST, -1, 4096, 0, false);
        assertThat(read.data().getInt(0)).isEqualTo(1);
        assertThat(read.data().getInt(4)).isEqualTo(2);
        target.registry.notifyNamespaceChanged(TestTarget.SUBNQN, 2);
        assertThat(aer1.dw0()).isEqualTo(0x00040002);
    }

    @Test
    void shouldDeliverAPendingEventToTheNextRequest() {
        target.registry.notifyNamespaceChanged(TestTarget.SUBNQN, 1);
        FakeRequest aer = host.asyncEventRequest(admin);
        assertThat(aer.status()).isEqualTo(NvmeStatus.SUCCESS);
        assertThat(aer.dw0()).isEqualTo(0x00040002);
    }

    @Test
    void shouldRecordButNotNotifyWhenNoticesAreDisabled() {
        host.setFeatures(admin, FeatureIdentifier.ASYNC_EVENT_CONFIGURATION, 0);
        FakeRequest aer = host.asyncEventRequest(admin);
        target.registry.notifyNamespaceChanged(TestTarget.SUBNQN, 2);
        assertThat(aer.isCompleted()).isFalse();
        assertThat(host.getLogPage(admin, LogPageIdentifier.CHANGED_NAMESPACE_LIST, -1, 4096, 0, false).data().getInt(0))
            .isEqualTo(2);
    }

    @Test
    void shouldReportOverflowOfTheChangedNamespaceList() {
        Controller controller = target.registry.controller(cntlid);
        for (int nsid = 1; nsid <= 1025; nsid++) {
            controller.notifyNamespaceChanged(nsid);
        }
        ByteBuffer log = host.getLogPage(admin, LogPageIdentifier.CHANGED_NAMESPACE_LIST, -1, 4096, 0, false).data();
        assertThat(log.getInt(0)).isEqualTo(0xFFFF_FFFF);
        assertThat(log.getInt(4)).isZero();
    }

    @Test
    void shouldNotNotifyOtherSubsystems() {
        FakeRequest aer = host.asyncEventRequest(admin);
        target.registry.notifyNamespaceChanged(TestTarget.RESTRICTED_NQN, 1);
        assertThat(aer.isCompleted()).isFalse();
    }
}
