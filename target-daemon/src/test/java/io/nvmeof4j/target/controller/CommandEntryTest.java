package io.nvmeof4j.target.controller;

import io.nvmeof4j.protocol.admin.AdminOpcode;
import io.nvmeof4j.protocol.admin.IdentifyCommand;
import io.nvmeof4j.protocol.auth.DhchapCredentials;
import io.nvmeof4j.protocol.auth.DhchapGroup;
import io.nvmeof4j.protocol.auth.DhchapHash;
import io.nvmeof4j.protocol.auth.DhchapSecret;
import io.nvmeof4j.protocol.command.NvmeStatus;
import io.nvmeof4j.protocol.command.SubmissionQueueEntry;
import io.nvmeof4j.protocol.fabrics.ConnectResponse;
import io.nvmeof4j.protocol.fabrics.ControllerRegisters;
import io.nvmeof4j.protocol.fabrics.FabricsCommandType;
import io.nvmeof4j.protocol.fabrics.PropertyCommand;
import io.nvmeof4j.protocol.io.NvmOpcode;
import io.nvmeof4j.target.io.NvmCommands;
import io.nvmeof4j.target.model.Port;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.security.SecureRandom;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The command entry ({@link ControllerQueueHandler#onCommand}, nvmet_req_init's shape): one test per check it makes
 * once for every command, each asserting the exact NVMe status, and one per command set for an opcode it does not
 * know. The I/O queue runs the real NVM executor over a RAM device, so what the executor answers is asserted too.
 */
class CommandEntryTest {
    private static final int INVALID_FIELD = NvmeStatus.INVALID_FIELD | NvmeStatus.DNR;
    private static final int INVALID_OPCODE = NvmeStatus.INVALID_OPCODE | NvmeStatus.DNR;
    private static final int SEQUENCE_ERROR = NvmeStatus.COMMAND_SEQUENCE_ERROR | NvmeStatus.DNR;
    private static final int CC_ENABLED = 0x00460001;

    private final TestTarget target = new TestTarget();
    private final TestHost host = new TestHost(new ControllerQueueHandlerFactory(target.model, target.port1,
        new NvmCommands(), target.registry), TestTarget.PORT1_ADDRESS);

    @AfterEach
    void tearDown() {
        target.close();
    }

    /** An admin queue with a connected controller, enabled when asked; returns the queue, CNTLID in {@link #cntlid}. */
    private FakeQueue admin(boolean enabled) {
        FakeQueue admin = host.openQueue();
        FakeRequest connect = host.connect(admin, 0, 31, 0, TestTarget.SUBNQN, 0xFFFF);
        assertThat(connect.status()).isEqualTo(NvmeStatus.SUCCESS);
        cntlid = connect.dw0() & 0xFFFF;
        if (enabled) {
            assertThat(host.propertySet(admin, ControllerRegisters.CC, CC_ENABLED).status()).isEqualTo(NvmeStatus.SUCCESS);
        }
        return admin;
    }

    private int cntlid;

    private FakeQueue ioQueue() {
        FakeQueue io = host.openQueue();
        assertThat(host.connect(io, 1, 31, 0, TestTarget.SUBNQN, cntlid).status()).isEqualTo(NvmeStatus.SUCCESS);
        return io;
    }

    private static SubmissionQueueEntry propertyGetCap(SubmissionQueueEntry e) {
        new PropertyCommand().wrap(e).init(e.commandId(), FabricsCommandType.PROPERTY_GET)
            .propertyOffset(ControllerRegisters.CAP).attributes(PropertyCommand.SIZE_8_BYTES);
        return e;
    }

    private FakeRequest read(FakeQueue q, int flags) {
        return host.submit(q, 512, e -> e.opcode(NvmOpcode.READ).flags(flags).nsid(1));
    }

    @Test
    void shouldAnswerInvalidFieldToAFusedCommandBeforeConnectOrOnTheAdminQueue() {
        FakeQueue fresh = host.openQueue();
        assertThat(host.submit(fresh, 0, e -> e.opcode(AdminOpcode.KEEP_ALIVE).flags(0x41)).status())
            .isEqualTo(INVALID_FIELD);
        FakeQueue admin = admin(true);
        assertThat(host.submit(admin, 0, e -> e.opcode(AdminOpcode.KEEP_ALIVE).flags(0x41)).status())
            .as("FUSE 01b on the admin queue").isEqualTo(INVALID_FIELD);
        assertThat(host.submit(admin, 0, e -> e.opcode(AdminOpcode.KEEP_ALIVE).flags(0x42)).status())
            .as("FUSE 10b on the admin queue").isEqualTo(INVALID_FIELD);
        FakeQueue io = ioQueue();
        assertThat(read(io, 0x43).status()).as("FUSE 11b (reserved) on an I/O queue").isEqualTo(INVALID_FIELD);
        assertThat(read(io, 0x41).status()).as("a fused Read: FUSES offers Compare and Write only")
            .isEqualTo(INVALID_FIELD);
    }

    @Test
    void shouldAnswerInvalidFieldToPsdtOtherThanSglOnEveryQueue() {
        for (int psdt : new int[] {0x00, 0x80, 0xC0}) {
            FakeQueue fresh = host.openQueue();
            assertThat(host.submit(fresh, 0, e -> propertyGetCap(e).flags(psdt)).status())
                .as("PSDT 0x%02x before Connect", psdt).isEqualTo(INVALID_FIELD);
        }
        FakeQueue admin = admin(true);
        assertThat(host.submit(admin, 0, e -> propertyGetCap(e).flags(0x00)).status())
            .as("a fabrics command with PRPs").isEqualTo(INVALID_FIELD);
        assertThat(host.submit(admin, 0, e -> e.opcode(AdminOpcode.KEEP_ALIVE).flags(0x00)).status())
            .as("an admin command with PRPs").isEqualTo(INVALID_FIELD);
        FakeQueue io = ioQueue();
        assertThat(read(io, 0x00).status()).as("an I/O command with PRPs").isEqualTo(INVALID_FIELD);
        assertThat(read(io, 0x40).status()).as("the same read with SGLs").isEqualTo(NvmeStatus.SUCCESS);
    }

    @Test
    void shouldAnswerCommandSequenceErrorToAnythingButConnectOnANewQueue() {
        FakeQueue fresh = host.openQueue();
        assertThat(read(fresh, 0x40).status()).as("I/O before Connect").isEqualTo(SEQUENCE_ERROR);
        assertThat(host.identify(fresh, IdentifyCommand.CNS_CONTROLLER, 0).status()).as("admin before Connect")
            .isEqualTo(SEQUENCE_ERROR);
        assertThat(host.propertyGet(fresh, ControllerRegisters.CAP, true).status()).as("Property Get before Connect")
            .isEqualTo(SEQUENCE_ERROR);
        assertThat(fresh.queueId()).isEqualTo(-1);
    }

    @Test
    void shouldAnswerInvalidOpcodeToAdminOpcodesOnAnIoQueue() {
        admin(true);
        FakeQueue io = ioQueue();
        assertThat(host.identify(io, IdentifyCommand.CNS_CONTROLLER, 1).status()).as("Identify").isEqualTo(INVALID_OPCODE);
        assertThat(host.submit(io, 0, e -> e.opcode(AdminOpcode.KEEP_ALIVE).nsid(1)).status()).as("Keep Alive")
            .isEqualTo(INVALID_OPCODE);
        // Most other admin opcodes are NVM opcodes too (0x08 Abort is Write Zeroes): not tried here.
        assertThat(host.submit(io, 0, e -> e.opcode(AdminOpcode.GET_FEATURES).nsid(1)).status()).as("Get Features")
            .isEqualTo(INVALID_OPCODE);
        assertThat(host.propertyGet(io, ControllerRegisters.CAP, true).status()).as("Property Get")
            .isEqualTo(INVALID_OPCODE);
        // The queue still serves I/O.
        assertThat(read(io, 0x40).status()).isEqualTo(NvmeStatus.SUCCESS);
    }

    @Test
    void shouldAnswerInvalidOpcodeToNvmAdminOpcodesOnADiscoveryController() {
        FakeQueue admin = host.openQueue();
        assertThat(host.connect(admin, 0, 31, 0, Port.DISCOVERY_NQN, 0xFFFF).status()).isEqualTo(NvmeStatus.SUCCESS);
        assertThat(host.propertySet(admin, ControllerRegisters.CC, CC_ENABLED).status()).isEqualTo(NvmeStatus.SUCCESS);
        for (int opcode : new int[] {AdminOpcode.ABORT, AdminOpcode.CREATE_IO_SQ, AdminOpcode.NAMESPACE_MANAGEMENT,
            AdminOpcode.FORMAT_NVM, 0xC0}) {
            assertThat(host.admin(admin, opcode).status()).as("opcode 0x%02x", opcode).isEqualTo(INVALID_OPCODE);
        }
        assertThat(host.identify(admin, IdentifyCommand.CNS_NAMESPACE, 1).status()).as("Identify CNS 00h")
            .isEqualTo(INVALID_FIELD);
        assertThat(host.identify(admin, IdentifyCommand.CNS_CONTROLLER, 0).status()).isEqualTo(NvmeStatus.SUCCESS);
    }

    @Test
    void shouldAnswerCommandSequenceErrorWhileTheControllerIsNotEnabled() {
        FakeQueue admin = admin(false);
        assertThat(host.identify(admin, IdentifyCommand.CNS_CONTROLLER, 0).status()).as("admin while CC.EN = 0")
            .isEqualTo(SEQUENCE_ERROR);
        assertThat(host.keepAlive(admin).status()).as("Keep Alive while CC.EN = 0").isEqualTo(SEQUENCE_ERROR);
        FakeRequest cap = host.propertyGet(admin, ControllerRegisters.CAP, true);
        assertThat(cap.status()).as("fabrics commands are exempt").isEqualTo(NvmeStatus.SUCCESS);
        assertThat(host.propertySet(admin, ControllerRegisters.CC, CC_ENABLED).status()).isEqualTo(NvmeStatus.SUCCESS);
        assertThat(host.identify(admin, IdentifyCommand.CNS_CONTROLLER, 0).status()).isEqualTo(NvmeStatus.SUCCESS);
        FakeQueue io = ioQueue();
        assertThat(read(io, 0x40).status()).isEqualTo(NvmeStatus.SUCCESS);
        assertThat(host.propertySet(admin, ControllerRegisters.CC, CC_ENABLED & ~1).status()).isEqualTo(NvmeStatus.SUCCESS);
        assertThat(read(io, 0x40).status()).as("I/O while CC.EN = 0").isEqualTo(SEQUENCE_ERROR);
        assertThat(host.identify(admin, IdentifyCommand.CNS_CONTROLLER, 0).status()).isEqualTo(SEQUENCE_ERROR);
    }

    @Test
    void shouldAnswerAuthenticationRequiredUntilTheQueueAuthenticated() {
        target.registry.hostKeys().set(TestHost.HOST_NQN, new DhchapCredentials(
            DhchapSecret.parse(DhchapSecret.generate(32, 1, new SecureRandom())), null, DhchapHash.SHA256,
            DhchapGroup.NULL));
        FakeQueue admin = host.openQueue();
        FakeRequest connect = host.connect(admin, 0, 31, 0, TestTarget.SUBNQN, 0xFFFF);
        assertThat(connect.status()).isEqualTo(NvmeStatus.SUCCESS);
        assertThat(ConnectResponse.authenticationRequired(connect.dw0())).as("ATR").isTrue();
        int required = NvmeStatus.FABRICS_AUTHENTICATION_REQUIRED | NvmeStatus.DNR;
        assertThat(host.propertySet(admin, ControllerRegisters.CC, CC_ENABLED).status()).isEqualTo(required);
        assertThat(host.propertyGet(admin, ControllerRegisters.CAP, true).status()).isEqualTo(required);
        assertThat(host.identify(admin, IdentifyCommand.CNS_CONTROLLER, 0).status()).isEqualTo(required);
        assertThat(host.submit(admin, 0, e -> e.opcode(AdminOpcode.KEEP_ALIVE).flags(0x00)).status())
            .as("the flags are judged first").isEqualTo(INVALID_FIELD);
    }

    @Test
    void shouldAnswerInvalidOpcodeToAnOpcodeUnknownToItsCommandSet() {
        FakeQueue admin = admin(true);
        assertThat(host.admin(admin, 0xC0).status()).as("admin").isEqualTo(INVALID_OPCODE);
        for (int fctype : new int[] {FabricsCommandType.DISCONNECT, FabricsCommandType.AUTHENTICATION_SEND,
            FabricsCommandType.AUTHENTICATION_RECEIVE, 0x07, 0x40}) {
            assertThat(host.submit(admin, 0, e -> e.opcode(0x7F).fabricsCommandType(fctype)).status())
                .as("fabrics type 0x%02x on the admin queue", fctype).isEqualTo(INVALID_OPCODE);
        }
        FakeQueue io = ioQueue();
        assertThat(host.submit(io, 0, e -> e.opcode(0x7E).nsid(1)).status()).as("I/O 0x7E").isEqualTo(INVALID_OPCODE);
        assertThat(host.submit(io, 0, e -> e.opcode(0x7F).fabricsCommandType(FabricsCommandType.DISCONNECT)).status())
            .as("Disconnect on an I/O queue").isEqualTo(INVALID_OPCODE);
    }
}
