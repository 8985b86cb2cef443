package io.nvmeof4j.target.controller;

import io.nvmeof4j.protocol.HostId;
import io.nvmeof4j.protocol.admin.FeatureIdentifier;
import io.nvmeof4j.protocol.admin.IdentifyCommand;
import io.nvmeof4j.protocol.command.NvmeStatus;
import io.nvmeof4j.protocol.fabrics.ConnectCommand;
import io.nvmeof4j.protocol.fabrics.ConnectData;
import io.nvmeof4j.protocol.fabrics.ConnectResponse;
import io.nvmeof4j.protocol.fabrics.ControllerRegisters;
import io.nvmeof4j.protocol.fabrics.FabricsCommandType;
import io.nvmeof4j.protocol.fabrics.PropertyCommand;
import io.nvmeof4j.protocol.spi.PortOptions;
import io.nvmeof4j.target.model.Port;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** Connect on admin and I/O queues: every rejection with its exact status, DNR and IATTR/IPO. */
class ConnectTest {
    private static final int INVALID_PARAMETERS = NvmeStatus.FABRICS_CONNECT_INVALID_PARAMETERS | NvmeStatus.DNR;

    private final TestTarget target = new TestTarget();
    private final TestHost host = target.host();

    @AfterEach
    void tearDown() {
        target.close();
    }

    private int enabledController(FakeQueue admin) {
        FakeRequest c = host.connect(admin, 0, 31, 0, TestTarget.SUBNQN, ConnectData.CNTLID_DYNAMIC);
        assertThat(c.status()).isEqualTo(NvmeStatus.SUCCESS);
        assertThat(host.propertySet(admin, ControllerRegisters.CC, 0x00460001).status()).isEqualTo(NvmeStatus.SUCCESS);
        return c.dw0() & 0xFFFF;
    }

    private static void assertInvalidData(FakeRequest r, int dataOffset) {
        assertThat(r.status()).isEqualTo(INVALID_PARAMETERS);
        assertThat(ConnectResponse.isInvalidFieldInData(r.dw0())).as("IATTR").isTrue();
        assertThat(ConnectResponse.invalidParameterOffset(r.dw0())).as("IPO").isEqualTo(dataOffset);
        assertThat(r.dw0()).isEqualTo(1 << 16 | dataOffset);
    }

    private static void assertInvalidSqe(FakeRequest r, int sqeOffset) {
        assertThat(r.status()).isEqualTo(INVALID_PARAMETERS);
        assertThat(r.dw0()).as("IATTR 0, IPO").isEqualTo(sqeOffset);
    }

    @Test
    void shouldRejectCommandsBeforeConnect() {
        FakeQueue q = host.openQueue();
        assertThat(host.identify(q, IdentifyCommand.CNS_CONTROLLER, 0).status())
            .isEqualTo(NvmeStatus.COMMAND_SEQUENCE_ERROR | NvmeStatus.DNR);
        assertThat(host.propertyGet(q, ControllerRegisters.CAP, true).status())
            .isEqualTo(NvmeStatus.COMMAND_SEQUENCE_ERROR | NvmeStatus.DNR);
        assertThat(host.submit(q, 512, e -> e.opcode(0x02).nsid(1)).status())
            .isEqualTo(NvmeStatus.COMMAND_SEQUENCE_ERROR | NvmeStatus.DNR);
        assertThat(q.queueId()).isEqualTo(-1);
        // The queue still accepts a Connect afterwards.
        assertThat(host.connect(q, 0, 31, 0, TestTarget.SUBNQN, 0xFFFF).status()).isEqualTo(NvmeStatus.SUCCESS);
    }

    @Test
    void shouldRejectBadPsdtAndFusedCommandsWithInvalidField() {
        FakeQueue q = host.openQueue();
        FakeRequest prp = host.submit(q, 0, e -> new PropertyCommand().wrap(e).init(e.commandId(),
            FabricsCommandType.PROPERTY_GET).propertyOffset(0).attributes(1), null);
        assertThat(prp.status()).isEqualTo(NvmeStatus.COMMAND_SEQUENCE_ERROR | NvmeStatus.DNR);
        FakeRequest psdt0 = host.submit(q, 0, e -> e.opcode(0x06).flags(0x00));
        assertThat(psdt0.status()).isEqualTo(NvmeStatus.INVALID_FIELD | NvmeStatus.DNR);
        FakeRequest psdt2 = host.submit(q, 0, e -> e.opcode(0x06).flags(0x80));
        assertThat(psdt2.status()).isEqualTo(NvmeStatus.INVALID_FIELD | NvmeStatus.DNR);
        FakeRequest fused = host.submit(q, 0, e -> e.opcode(0x06).flags(0x41));
        assertThat(fused.status()).isEqualTo(NvmeStatus.INVALID_FIELD | NvmeStatus.DNR);
        // Also once connected, on admin and I/O queues.
        FakeQueue admin = host.openQueue();
        int cntlid = enabledController(admin);
        assertThat(host.submit(admin, 0, e -> e.opcode(0x18).flags(0x00)).status())
            .isEqualTo(NvmeStatus.INVALID_FIELD | NvmeStatus.DNR);
        FakeQueue io = host.openQueue();
        assertThat(host.connect(io, 1, 31, 0, TestTarget.SUBNQN, cntlid).status()).isEqualTo(NvmeStatus.SUCCESS);
        assertThat(host.submit(io, 512, e -> e.opcode(0x02).flags(0x42).nsid(1)).status())
            .isEqualTo(NvmeStatus.INVALID_FIELD | NvmeStatus.DNR);
        assertThat(target.nvm.nsids()).isEmpty();
    }

    @Test
    void shouldRejectRecordFormatOtherThanZero() {
        FakeQueue q = host.openQueue();
        FakeRequest r = host.submit(q, ConnectData.LENGTH,
            e -> new ConnectCommand().wrap(e).init(e.commandId(), 0x01).recordFormat(1).submissionQueueSize(31),
            req -> new ConnectData().wrap(req.data(), 0).clear().hostId(TestHost.HOST_ID).controllerId(0xFFFF)
                .subsystemNqn(TestTarget.SUBNQN).hostNqn(TestHost.HOST_NQN));
        assertThat(r.status()).isEqualTo(NvmeStatus.FABRICS_INCOMPATIBLE_FORMAT | NvmeStatus.DNR).isEqualTo(0x8180);
    }

    @Test
    void shouldRejectConnectDataOfWrongLength() {
        FakeQueue q = host.openQueue();
        FakeRequest r = host.submit(q, 512, e -> new ConnectCommand().wrap(e).init(e.commandId(), 0x01)
            .submissionQueueSize(31));
        assertThat(r.status()).isEqualTo(NvmeStatus.SGL_DATA_LENGTH_INVALID | NvmeStatus.DNR);
    }

    @Test
    void shouldRejectAdminConnectWithStaticControllerId() {
        FakeRequest r = host.connect(host.openQueue(), 0, 31, 0, TestTarget.SUBNQN, 1);
        assertInvalidData(r, ConnectData.CNTLID_OFFSET);
    }

    @Test
    void shouldRejectUnknownSubsystemWithIpoOfSubnqn() {
        FakeRequest r = host.connect(host.openQueue(), 0, 31, 0, "nqn.2024-01.io.nvmeof4j:nope", 0xFFFF);
        assertInvalidData(r, 256);
        assertThat(target.registry.controllers()).isEmpty();
    }

    @Test
    void shouldRejectSubsystemNotExportedOnThisPort() {
        assertInvalidData(host.connect(host.openQueue(), 0, 31, 0, TestTarget.SECOND_PORT_NQN, 0xFFFF), 256);
        assertInvalidData(host.connect(host.openQueue(), 0, 31, 0, TestTarget.UNEXPORTED_NQN, 0xFFFF), 256);
    }

    @Test
    void shouldRejectNqnFieldsWithoutTerminatingNul() {
        FakeQueue q = host.openQueue();
        FakeRequest r = host.submit(q, ConnectData.LENGTH,
            e -> new ConnectCommand().wrap(e).init(e.commandId(), 0x01).submissionQueueSize(31),
            req -> {
                new ConnectData().wrap(req.data(), 0).clear().hostId(TestHost.HOST_ID).controllerId(0xFFFF)
                    .subsystemNqn(TestTarget.SUBNQN);
                for (int i = 512; i < 768; i++) {
                    req.data().put(i, (byte) 'x');
                }
            });
        assertInvalidData(r, ConnectData.HOSTNQN_OFFSET);
    }

    @Test
    void shouldRejectHostNotAllowedWithInvalidHost() {
        FakeRequest r = host.connect(host.openQueue(), 0, 31, 0, TestTarget.RESTRICTED_NQN, 0xFFFF);
        assertThat(r.status()).isEqualTo(NvmeStatus.FABRICS_CONNECT_INVALID_HOST | NvmeStatus.DNR).isEqualTo(0x8184);
        assertThat(r.dw0()).as("IATTR 1, IPO 512").isEqualTo(1 << 16 | 512);
        // The allowed host gets in.
        FakeRequest ok = host.connect(host.openQueue(), 0, 31, 0, TestTarget.RESTRICTED_NQN, 0xFFFF,
            TestTarget.OTHER_HOST_NQN, 0);
        assertThat(ok.status()).isEqualTo(NvmeStatus.SUCCESS);
    }

    /**
     * nvmet (nvmet_host_allowed) and SPDK (spdk_nvmf_subsystem_host_allowed) check no NQN syntax: with
     * allow_any_host any host NQN, the empty one too (SPDK's initiator sends it), opens a controller whose I/O
     * queues then match on that same NQN. Behind an allow list, which holds valid NQNs only, both are refused.
     */
    @Test
    void shouldServeEmptyOrMalformedHostNqnOnlyWhenAnyHostIsAllowed() {
        for (String nqn : new String[] {"", "not-an-nqn"}) {
            FakeQueue admin = host.openQueue();
            FakeRequest c = host.connect(admin, 0, 31, 0, TestTarget.SUBNQN, 0xFFFF, nqn, 0);
            assertThat(c.status()).as("host NQN '%s' with allow_any_host", nqn).isEqualTo(NvmeStatus.SUCCESS);
            int cntlid = c.dw0() & 0xFFFF;
            assertThat(target.registry.controller(cntlid).hostNqn()).isEqualTo(nqn);
            host.propertySet(admin, ControllerRegisters.CC, 0x00460001);
            assertThat(host.connect(host.openQueue(), 1, 31, 0, TestTarget.SUBNQN, cntlid, nqn, 0).status())
                .as("I/O queue of host NQN '%s'", nqn).isEqualTo(NvmeStatus.SUCCESS);
            assertInvalidData(host.connect(host.openQueue(), 2, 31, 0, TestTarget.SUBNQN, cntlid, TestHost.HOST_NQN, 0), 16);

            FakeRequest restricted = host.connect(host.openQueue(), 0, 31, 0, TestTarget.RESTRICTED_NQN, 0xFFFF, nqn, 0);
            assertThat(restricted.status()).as("host NQN '%s' behind an allow list", nqn)
                .isEqualTo(NvmeStatus.FABRICS_CONNECT_INVALID_HOST | NvmeStatus.DNR);
            assertThat(restricted.dw0()).isEqualTo(1 << 16 | 512);
        }
        // The discovery subsystem serves every host (nvmet: "allow all access to disc subsys").
        assertThat(host.connect(host.openQueue(), 0, 31, 0, Port.DISCOVERY_NQN, 0xFFFF, "", 0).status())
            .isEqualTo(NvmeStatus.SUCCESS);
    }

    @Test
    void shouldRejectHostNqnWithControlCharactersEvenWhenAnyHostIsAllowed() {
        FakeRequest r = host.connect(host.openQueue(), 0, 31, 0, TestTarget.SUBNQN, 0xFFFF,
            "nqn.2014-08.org.example:evil\\nforged log line", 0);
        assertThat(r.status()).as("backslash-n is printable").isEqualTo(NvmeStatus.SUCCESS);
        FakeRequest bad = host.connect(host.openQueue(), 0, 31, 0, TestTarget.SUBNQN, 0xFFFF,
            "nqn.2014-08.org.example:evil\nforged log line", 0);
        assertThat(bad.status()).isEqualTo(NvmeStatus.FABRICS_CONNECT_INVALID_HOST | NvmeStatus.DNR);
        assertThat(bad.dw0()).isEqualTo(1 << 16 | 512);
    }

    @Test
    void shouldRejectAdminQueueSizeZeroOrTooLarge() {
        assertInvalidSqe(host.connect(host.openQueue(), 0, 0, 0, TestTarget.SUBNQN, 0xFFFF), 44);
        assertInvalidSqe(host.connect(host.openQueue(), 0, 128, 0, TestTarget.SUBNQN, 0xFFFF), 44);
        // 127 (128 entries, the port's max queue size) is fine.
        assertThat(host.connect(host.openQueue(), 0, 127, 0, TestTarget.SUBNQN, 0xFFFF).status())
            .isEqualTo(NvmeStatus.SUCCESS);
    }

    @Test
    void shouldAllocateDistinctControllerIdsAndFreeThemOnClose() {
        FakeQueue a = host.openQueue();
        FakeQueue b = host.openQueue();
        int first = host.connect(a, 0, 31, 0, TestTarget.SUBNQN, 0xFFFF).dw0();
        int second = host.connect(b, 0, 31, 0, TestTarget.SUBNQN, 0xFFFF).dw0();
        assertThat(first).isNotEqualTo(second);
        assertThat(target.registry.controllers(TestTarget.SUBNQN)).hasSize(2);
        a.close("gone");
        assertThat(target.registry.controller(first)).isNull();
        assertThat(target.registry.controllers(TestTarget.SUBNQN)).hasSize(1);
    }

    @Test
    void shouldRejectIoConnectForUnknownControllerOrOtherHost() {
        FakeQueue admin = host.openQueue();
        int cntlid = enabledController(admin);
        assertInvalidData(host.connect(host.openQueue(), 1, 31, 0, TestTarget.SUBNQN, cntlid + 1), 16);
        assertInvalidData(host.connect(host.openQueue(), 1, 31, 0, TestTarget.SUBNQN, cntlid,
            TestTarget.OTHER_HOST_NQN, 0), 16);
        // Right CNTLID, but for another subsystem.
        assertInvalidData(host.connect(host.openQueue(), 1, 31, 0, TestTarget.RESTRICTED_NQN, cntlid), 16);
        assertThat(host.connect(host.openQueue(), 1, 31, 0, TestTarget.SUBNQN, cntlid).status()).isEqualTo(NvmeStatus.SUCCESS);
    }

    /** nvmet and SPDK match an I/O Connect by subsystem, host NQN and CNTLID; the HOSTID is not compared. */
    @Test
    void shouldAcceptIoConnectWhoseHostIdDiffersFromTheAdminQueues() {
        FakeQueue admin = host.openQueue();
        int cntlid = enabledController(admin);
        TestHost otherId = new TestHost(target.factory, TestHost.HOST_NQN,
            HostId.parse("99999999-2222-3333-4444-555555555555"), TestTarget.PORT1_ADDRESS);
        FakeQueue io = otherId.openQueue();
        assertThat(otherId.connect(io, 1, 31, 0, TestTarget.SUBNQN, cntlid).status()).isEqualTo(NvmeStatus.SUCCESS);
        assertThat(target.registry.controller(cntlid).hostId()).as("the admin queue's id stays").isEqualTo(TestHost.HOST_ID);
        assertThat(otherId.submit(io, 512, e -> e.opcode(0x02).nsid(1)).status()).isEqualTo(NvmeStatus.SUCCESS);
        TestHost zeroId = new TestHost(target.factory, TestHost.HOST_NQN,
            HostId.parse("00000000-0000-0000-0000-000000000000"), TestTarget.PORT1_ADDRESS);
        assertThat(zeroId.connect(zeroId.openQueue(), 2, 31, 0, TestTarget.SUBNQN, cntlid).status()).isEqualTo(NvmeStatus.SUCCESS);
    }

    /** nvmet (subsys->max_qid) and SPDK (max_qpairs_per_ctrlr) bound an I/O QID by their limit, not by the grant. */
    @Test
    void shouldAcceptIoConnectBeyondGrantedQueuesUpToTheLimit() {
        try (TestTarget small = new TestTarget(PortOptions.defaults(), 8)) {
            TestHost h = small.host();
            FakeQueue admin = h.openQueue();
            int cntlid = h.connect(admin, 0, 31, 0, TestTarget.SUBNQN, 0xFFFF).dw0();
            h.propertySet(admin, ControllerRegisters.CC, 0x00460001);
            assertThat(h.setFeatures(admin, FeatureIdentifier.NUMBER_OF_QUEUES, 1 | 1 << 16).dw0()).isEqualTo(1 | 1 << 16);
            FakeQueue third = h.openQueue();
            assertThat(h.connect(third, 3, 31, 0, TestTarget.SUBNQN, cntlid).status()).isEqualTo(NvmeStatus.SUCCESS);
            assertThat(h.submit(third, 512, e -> e.opcode(0x02).nsid(1)).status()).isEqualTo(NvmeStatus.SUCCESS);
            assertThat(h.connect(h.openQueue(), 8, 31, 0, TestTarget.SUBNQN, cntlid).status()).isEqualTo(NvmeStatus.SUCCESS);
            assertInvalidSqe(h.connect(h.openQueue(), 9, 31, 0, TestTarget.SUBNQN, cntlid), ConnectCommand.QID_OFFSET);
        }
    }

    @Test
    void shouldGrantAtMostTheRegistryLimitOfIoQueues() {
        try (TestTarget small = new TestTarget(PortOptions.defaults(), 8)) {
            TestHost h = small.host();
            FakeQueue admin = h.openQueue();
            int cntlid = h.connect(admin, 0, 31, 0, TestTarget.SUBNQN, 0xFFFF).dw0();
            h.propertySet(admin, ControllerRegisters.CC, 0x00460001);
            FakeRequest nq = h.setFeatures(admin, FeatureIdentifier.NUMBER_OF_QUEUES, 63 | 31 << 16);
            assertThat(nq.dw0()).as("NSQA 8, NCQA 8, 0-based").isEqualTo(7 | 7 << 16);
            assertThat(h.connect(h.openQueue(), 8, 31, 0, TestTarget.SUBNQN, cntlid).status()).isEqualTo(NvmeStatus.SUCCESS);
            assertThat(h.connect(h.openQueue(), 9, 31, 0, TestTarget.SUBNQN, cntlid).dw0()).isEqualTo(42);
        }
    }

    @Test
    void shouldRejectDuplicateQidWithCommandSequenceError() {
        FakeQueue admin = host.openQueue();
        int cntlid = enabledController(admin);
        assertThat(host.connect(host.openQueue(), 1, 31, 0, TestTarget.SUBNQN, cntlid).status()).isEqualTo(NvmeStatus.SUCCESS);
        FakeRequest dup = host.connect(host.openQueue(), 1, 31, 0, TestTarget.SUBNQN, cntlid);
        assertThat(dup.status()).isEqualTo(NvmeStatus.COMMAND_SEQUENCE_ERROR | NvmeStatus.DNR);
        assertThat(dup.dw0() & 0xFFFF).as("CNTLID passed back").isEqualTo(cntlid);
    }

    @Test
    void shouldFreeQidWhenIoQueueCloses() {
        FakeQueue admin = host.openQueue();
        int cntlid = enabledController(admin);
        FakeQueue io = host.openQueue();
        assertThat(host.connect(io, 1, 31, 0, TestTarget.SUBNQN, cntlid).status()).isEqualTo(NvmeStatus.SUCCESS);
        io.close("reset");
        assertThat(admin.isDisconnected()).as("admin queue untouched").isFalse();
        assertThat(host.connect(host.openQueue(), 1, 31, 0, TestTarget.SUBNQN, cntlid).status()).isEqualTo(NvmeStatus.SUCCESS);
    }

    @Test
    void shouldRejectIoConnectBeforeControllerEnabled() {
        FakeQueue admin = host.openQueue();
        int cntlid = host.connect(admin, 0, 31, 0, TestTarget.SUBNQN, 0xFFFF).dw0();
        FakeRequest r = host.connect(host.openQueue(), 1, 31, 0, TestTarget.SUBNQN, cntlid);
        assertThat(r.status()).isEqualTo(NvmeStatus.COMMAND_SEQUENCE_ERROR | NvmeStatus.DNR);
    }

    @Test
    void shouldRejectIoQueueSizeZeroOrAboveMqes() {
        FakeQueue admin = host.openQueue();
        int cntlid = enabledController(admin);
        assertInvalidSqe(host.connect(host.openQueue(), 1, 0, 0, TestTarget.SUBNQN, cntlid), 44);
        assertInvalidSqe(host.connect(host.openQueue(), 1, 128, 0, TestTarget.SUBNQN, cntlid), 44);
        assertThat(host.connect(host.openQueue(), 1, 127, 0, TestTarget.SUBNQN, cntlid).status()).isEqualTo(NvmeStatus.SUCCESS);
    }

    @Test
    void shouldRejectIoQueueOnDiscoveryController() {
        FakeQueue admin = host.openQueue();
        int cntlid = host.connect(admin, 0, 31, 0, Port.DISCOVERY_NQN, 0xFFFF).dw0();
        host.propertySet(admin, ControllerRegisters.CC, 0x00460001);
        assertInvalidSqe(host.connect(host.openQueue(), 1, 31, 0, Port.DISCOVERY_NQN, cntlid), 42);
    }

    @Test
    void shouldRejectSecondConnectAndFabricsCommandsOnIoQueueWithInvalidOpcode() {
        FakeQueue admin = host.openQueue();
        int cntlid = enabledController(admin);
        assertThat(host.connect(admin, 0, 31, 0, TestTarget.SUBNQN, 0xFFFF).status())
            .isEqualTo(NvmeStatus.INVALID_OPCODE | NvmeStatus.DNR);
        FakeQueue io = host.openQueue();
        host.connect(io, 1, 31, 0, TestTarget.SUBNQN, cntlid);
        assertThat(host.propertyGet(io, ControllerRegisters.CAP, true).status())
            .isEqualTo(NvmeStatus.INVALID_OPCODE | NvmeStatus.DNR);
        assertThat(host.connect(io, 1, 31, 0, TestTarget.SUBNQN, cntlid).status())
            .isEqualTo(NvmeStatus.INVALID_OPCODE | NvmeStatus.DNR);
    }

    @Test
    void shouldAnswerControllerBusyOnceShuttingDown() {
        target.registry.shutdown(java.time.Duration.ofMillis(10));
        FakeRequest r = host.connect(host.openQueue(), 0, 31, 0, TestTarget.SUBNQN, 0xFFFF);
        assertThat(r.status()).isEqualTo(NvmeStatus.FABRICS_CONTROLLER_BUSY);
        assertThat(NvmeStatus.isDnr(r.status())).as("retryable elsewhere").isFalse();
    }

    /**
     * A transport that cannot set a queue up (NVMe/TCP: the queue buffer budget is spent) refuses the Connect with
     * Controller Busy and no DNR, so the host tries again; it is asked only once every other check passed, and an
     * I/O queue's QID is free again afterwards.
     */
    @Test
    void shouldAnswerControllerBusyWhenTheTransportCannotSetTheQueueUpAndFreeTheQid() {
        io.nvmeof4j.protocol.spi.ConnectRefusedException noRoom = new io.nvmeof4j.protocol.spi.ConnectRefusedException(
            NvmeStatus.FABRICS_CONTROLLER_BUSY, io.nvmeof4j.protocol.spi.PendingConnections.Refusal.QUEUE_BUFFER_BUDGET,
            "buffers need 2148 KiB, more than the 1024 KiB left of the queue buffer budget of 16 MiB");
        FakeQueue refusedAdmin = host.openQueue();
        refusedAdmin.refuseInstall = noRoom;
        FakeRequest admin0 = host.connect(refusedAdmin, 0, 31, 0, TestTarget.SUBNQN, 0xFFFF);
        assertThat(admin0.status()).isEqualTo(NvmeStatus.FABRICS_CONTROLLER_BUSY).isEqualTo(0x181);
        assertThat(refusedAdmin.installs).containsExactly("0/32");
        assertThat(target.registry.controllers()).as("no controller for a refused admin Connect").isEmpty();

        FakeQueue admin = host.openQueue();
        int cntlid = enabledController(admin);
        assertThat(admin.installs).containsExactly("0/32");
        FakeQueue io = host.openQueue();
        io.refuseInstall = noRoom;
        FakeRequest refused = host.connect(io, 1, 127, 0, TestTarget.SUBNQN, cntlid);
        assertThat(refused.status()).isEqualTo(NvmeStatus.FABRICS_CONTROLLER_BUSY);
        assertThat(NvmeStatus.isDnr(refused.status())).as("the host may try again").isFalse();
        assertThat(refused.dw0() & 0xFFFF).as("CNTLID passed back").isEqualTo(cntlid);
        assertThat(io.queueId()).as("the transport was not told the queue is connected").isEqualTo(-1);
        // A Connect that is wrong anyway is told so (with DNR), without asking the transport for memory.
        assertInvalidSqe(host.connect(io, 1, 128, 0, TestTarget.SUBNQN, cntlid), 44);
        assertThat(io.installs).containsExactly("1/128");

        // The same queue tries again once there is room: QID 1 is free, not "already connected".
        io.refuseInstall = null;
        assertThat(host.connect(io, 1, 127, 0, TestTarget.SUBNQN, cntlid).status()).isEqualTo(NvmeStatus.SUCCESS);
        assertThat(io.installs).containsExactly("1/128", "1/128");
        assertThat(io.queueId()).isEqualTo(1);
        assertThat(io.sqSize()).isEqualTo(128);
    }
}
