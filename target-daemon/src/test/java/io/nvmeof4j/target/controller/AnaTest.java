package io.nvmeof4j.target.controller;

import io.nvmeof4j.protocol.HostId;
import io.nvmeof4j.protocol.admin.AsyncEvent;
import io.nvmeof4j.protocol.admin.FeatureIdentifier;
import io.nvmeof4j.protocol.admin.IdentifyCommand;
import io.nvmeof4j.protocol.admin.LogPageIdentifier;
import io.nvmeof4j.protocol.ana.AnaLogPage;
import io.nvmeof4j.protocol.ana.AnaState;
import io.nvmeof4j.protocol.command.NvmeStatus;
import io.nvmeof4j.protocol.fabrics.ControllerRegisters;
import io.nvmeof4j.target.model.AnaStates;
import io.nvmeof4j.target.model.Namespace;
import io.nvmeof4j.target.model.Port;
import io.nvmeof4j.target.reservation.Reservations;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;

/** ANA through one port: Identify fields, the ANA log, the change event and the I/O statuses of every state. */
class AnaTest {
    private final TestTarget target = new TestTarget();
    private final TestHost host = target.host();
    private FakeQueue admin;
    private FakeQueue io;

    @BeforeEach
    void connect() {
        // Namespace 3 sits in group 2, which port 1 does not configure: inaccessible there, as nvmet has it.
        target.subsystem.addNamespace(new Namespace(3, new RamDevice(512, 64, true), UUID.randomUUID(), new byte[16],
            2, new Reservations(null)));
        admin = host.openQueue();
        int cntlid = host.connect(admin, 0, 31, 5000, TestTarget.SUBNQN, 0xFFFF).dw0();
        assertThat(host.propertySet(admin, ControllerRegisters.CC, 0x00460001).status()).isEqualTo(NvmeStatus.SUCCESS);
        io = host.openQueue();
        assertThat(host.connect(io, 1, 31, 0, TestTarget.SUBNQN, cntlid).status()).isEqualTo(NvmeStatus.SUCCESS);
    }

    @AfterEach
    void tearDown() {
        target.close();
    }

    @Test
    void shouldAdvertiseAnaInIdentify() {
        ByteBuffer id = host.identify(admin, IdentifyCommand.CNS_CONTROLLER, 0).data();
        assertThat(id.get(76)).as("CMIC").isEqualTo((byte) 0x0B);
        assertThat(id.get(343)).as("ANATT").isEqualTo((byte) 10);
        assertThat(id.get(344) & 0x1F).as("ANACAP states").isEqualTo(0x1F);
        assertThat(id.getInt(348)).as("ANAGRPMAX").isEqualTo(128);
        assertThat(id.getInt(352)).as("NANAGRPID").isEqualTo(128);
        assertThat(id.getInt(540)).as("MNAN").isBetween(1, id.getInt(516));
        assertThat(id.getInt(92) & 1 << 11).as("OAES ANA change").isNotZero();
        ByteBuffer ns = host.identify(admin, IdentifyCommand.CNS_NAMESPACE, 3).data();
        assertThat(ns.getInt(92)).as("ANAGRPID").isEqualTo(2);
        assertThat(ns.get(30) & 1).as("NMIC shared").isEqualTo(1);
        assertThat(host.identify(admin, IdentifyCommand.CNS_NAMESPACE, 1).data().getInt(92)).isEqualTo(1);
    }

    @Test
    void shouldReportGroupsStatesAndNsidsInTheAnaLog() {
        ByteBuffer page = host.getLogPage(admin, LogPageIdentifier.ANA, -1, 4096, 0, false).data();
        AnaLogPage log = new AnaLogPage().wrap(page.order(ByteOrder.LITTLE_ENDIAN), 0);
        assertThat(log.groupCount()).isEqualTo(2);
        int g1 = log.descriptorOffset(0);
        assertThat(log.groupId(g1)).isEqualTo(1);
        assertThat(log.state(g1)).isEqualTo(AnaState.OPTIMIZED);
        assertThat(log.nsidCount(g1)).isEqualTo(2);
        assertThat(List.of(log.nsid(g1, 0), log.nsid(g1, 1))).containsExactly(1, 2);
        int g2 = log.descriptorOffset(1);
        assertThat(log.groupId(g2)).isEqualTo(2);
        assertThat(log.state(g2)).isEqualTo(AnaState.INACCESSIBLE);
        assertThat(log.nsid(g2, 0)).isEqualTo(3);
        // RGO: descriptors without NSIDs
        FakeRequest r = host.submit(admin, 4096, e -> new io.nvmeof4j.protocol.admin.GetLogPageCommand().wrap(e)
            .init(e.commandId(), -1, LogPageIdentifier.ANA, 4096, 0).logSpecificField(AnaLogPage.LSP_RGO));
        AnaLogPage groupsOnly = new AnaLogPage().wrap(r.data().order(ByteOrder.LITTLE_ENDIAN), 0);
        assertThat(groupsOnly.groupCount()).isEqualTo(2);
        assertThat(groupsOnly.nsidCount(groupsOnly.descriptorOffset(0))).isZero();
        assertThat(groupsOnly.descriptorOffset(1)).isEqualTo(16 + 32);
    }

    @Test
    void shouldAnswerIoWithThePathStatusOfEveryState() {
        assertThat(write(1).status()).as("optimized").isEqualTo(NvmeStatus.SUCCESS);
        assertThat(write(3).status()).as("group 2 unconfigured: inaccessible").isEqualTo(0x302);
        int[][] cases = {
            {AnaState.NON_OPTIMIZED, NvmeStatus.SUCCESS},
            {AnaState.INACCESSIBLE, NvmeStatus.ANA_INACCESSIBLE},
            {AnaState.PERSISTENT_LOSS, NvmeStatus.ANA_PERSISTENT_LOSS},
            {AnaState.CHANGE, NvmeStatus.ANA_TRANSITION},
            {AnaState.OPTIMIZED, NvmeStatus.SUCCESS},
        };
        for (int[] c : cases) {
            target.port1.ana().state(1, c[0]);
            FakeRequest w = write(1);
            assertThat(w.status()).as(AnaState.name(c[0])).isEqualTo(c[1]);
            assertThat(NvmeStatus.isDnr(w.status())).as("path errors are retried elsewhere").isFalse();
            assertThat(read(2).status()).as("read, " + AnaState.name(c[0])).isEqualTo(c[1]);
        }
        assertThat(target.port1.ana().changeCount()).isEqualTo(5);
        assertThat(target.port1.ana().changeCount(1)).isEqualTo(5);
        assertThat(target.port2.ana().state(1)).as("other port unchanged").isEqualTo(AnaState.OPTIMIZED);
    }

    @Test
    void shouldRaiseAnaChangeEventOnceUntilTheLogIsRead() {
        FakeRequest aer = host.asyncEventRequest(admin);
        assertThat(aer.isCompleted()).isFalse();
        Controller c = target.registry.controllers().get(0);
        target.port1.ana().state(1, AnaState.INACCESSIBLE);
        c.notifyAnaChanged();
        assertThat(aer.status()).isEqualTo(NvmeStatus.SUCCESS);
        assertThat(aer.dw0()).isEqualTo(AsyncEvent.ANA_CHANGE_DW0).isEqualTo(0x0C0302);
        FakeRequest second = host.asyncEventRequest(admin);
        c.notifyAnaChanged();
        assertThat(second.isCompleted()).as("masked until log 0Ch is read").isFalse();
        ByteBuffer page = host.getLogPage(admin, LogPageIdentifier.ANA, -1, 4096, 0, false).data()
            .order(ByteOrder.LITTLE_ENDIAN);
        assertThat(page.getLong(0)).as("CHGCNT").isEqualTo(1);
        assertThat(page.get(16 + 16) & 0xF).isEqualTo(AnaState.INACCESSIBLE);
        c.notifyAnaChanged();
        assertThat(second.dw0()).isEqualTo(AsyncEvent.ANA_CHANGE_DW0);
    }

    @Test
    void shouldNotRaiseAnaEventWhenTheHostDisabledIt() {
        assertThat(host.setFeatures(admin, FeatureIdentifier.ASYNC_EVENT_CONFIGURATION, 1 << 8).status())
            .isEqualTo(NvmeStatus.SUCCESS);
        FakeRequest aer = host.asyncEventRequest(admin);
        target.registry.controllers().get(0).notifyAnaChanged();
        assertThat(aer.isCompleted()).isFalse();
    }

    @Test
    void shouldTakeConfiguredStatesAndRejectBadGroups() {
        AnaStates states = new AnaStates(Map.of(2, AnaState.NON_OPTIMIZED, 5, AnaState.CHANGE));
        assertThat(states.state(1)).isEqualTo(AnaState.OPTIMIZED);
        assertThat(states.state(2)).isEqualTo(AnaState.NON_OPTIMIZED);
        assertThat(states.state(3)).isEqualTo(AnaState.INACCESSIBLE);
        assertThat(states.state(0)).isEqualTo(AnaState.INACCESSIBLE);
        assertThat(states.state(999)).isEqualTo(AnaState.INACCESSIBLE);
        assertThat(states.isConfigured(5)).isTrue();
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> states.state(129, AnaState.OPTIMIZED))
            .isInstanceOf(IllegalArgumentException.class);
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> states.state(1, 7))
            .isInstanceOf(IllegalArgumentException.class);
        Port bound = target.port1.boundTo(target.port1.address());
        assertThat(bound.ana()).as("the bound port shares the live states").isSameAs(target.port1.ana());
    }

    @Test
    void shouldAllocateCntlidsInsideTheSubsystemRange() {
        target.subsystem.cntlidRange(200, 201);
        TestHost other = new TestHost(target.factory, TestTarget.OTHER_HOST_NQN,
            HostId.parse("11111111-2222-3333-4444-555555555555"), TestTarget.PORT1_ADDRESS);
        Set<Integer> ids = new java.util.TreeSet<>();
        for (int i = 0; i < 2; i++) {
            FakeQueue q = other.openQueue();
            FakeRequest c = other.connect(q, 0, 31, 0, TestTarget.SUBNQN, 0xFFFF);
            assertThat(c.status()).isEqualTo(NvmeStatus.SUCCESS);
            ids.add(c.dw0() & 0xFFFF);
        }
        assertThat(ids).containsExactly(200, 201);
        FakeRequest full = other.connect(other.openQueue(), 0, 31, 0, TestTarget.SUBNQN, 0xFFFF);
        assertThat(full.status()).isEqualTo(NvmeStatus.FABRICS_CONTROLLER_BUSY | NvmeStatus.DNR);
    }

    private FakeRequest write(int nsid) {
        int bytes = nsid == 2 ? 4096 : 512;
        return host.submit(io, bytes, e -> e.opcode(0x01).nsid(nsid).cdw10And11(0));
    }

    private FakeRequest read(int nsid) {
        int bytes = nsid == 2 ? 4096 : 512;
        return host.submit(io, bytes, e -> e.opcode(0x02).nsid(nsid).cdw10And11(0));
    }
}
