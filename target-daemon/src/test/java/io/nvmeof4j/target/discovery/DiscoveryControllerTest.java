package io.nvmeof4j.target.discovery;

import io.nvmeof4j.protocol.admin.AdminOpcode;
import io.nvmeof4j.protocol.admin.AsyncEvent;
import io.nvmeof4j.protocol.admin.FeatureIdentifier;
import io.nvmeof4j.protocol.admin.IdentifyCommand;
import io.nvmeof4j.protocol.admin.LogPageIdentifier;
import io.nvmeof4j.protocol.command.NvmeStatus;
import io.nvmeof4j.protocol.discovery.DiscoveryLogEntry;
import io.nvmeof4j.protocol.discovery.DiscoveryLogPage;
import io.nvmeof4j.protocol.fabrics.ControllerRegisters;
import io.nvmeof4j.target.controller.FakeQueue;
import io.nvmeof4j.target.controller.FakeRequest;
import io.nvmeof4j.target.controller.TestHost;
import io.nvmeof4j.target.controller.TestTarget;
import io.nvmeof4j.target.model.Port;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

import static org.assertj.core.api.Assertions.assertThat;

/** A discovery controller driven the way nvme-cli/libnvme drive it (wire reference 2.8 and 2.10). */
class DiscoveryControllerTest {
    private static final int INVALID_FIELD = NvmeStatus.INVALID_FIELD | NvmeStatus.DNR;

    private final TestTarget target = new TestTarget();

    @AfterEach
    void tearDown() {
        target.close();
    }

    private FakeQueue discovery(TestHost host) {
        FakeQueue admin = host.openQueue();
        FakeRequest c = host.connect(admin, 0, 31, 0, Port.DISCOVERY_NQN, 0xFFFF);
        assertThat(c.status()).isEqualTo(NvmeStatus.SUCCESS);
        assertThat(host.propertyGet(admin, ControllerRegisters.CAP, true).status()).isEqualTo(NvmeStatus.SUCCESS);
        assertThat(host.propertySet(admin, ControllerRegisters.CC, 0x00460001).status()).isEqualTo(NvmeStatus.SUCCESS);
        assertThat(host.propertyGet(admin, ControllerRegisters.CSTS, false).result64()).isEqualTo(1);
        return admin;
    }

    /** libnvme's nvmf_get_discovery_log: header (20 B), entries in 4096-byte chunks from 1024, header again. */
    private ByteBuffer readLikeLibnvme(TestHost host, FakeQueue admin) {
        FakeRequest header = host.getLogPage(admin, LogPageIdentifier.DISCOVERY, 0, 20, 0, true);
        assertThat(header.status()).isEqualTo(NvmeStatus.SUCCESS);
        long genctr = header.data().getLong(0);
        long numrec = header.data().getLong(8);
        assertThat(header.data().getShort(16)).as("RECFMT").isZero();
        int total = (int) numrec * 1024;
        ByteBuffer log = ByteBuffer.allocate(1024 + total).order(ByteOrder.LITTLE_ENDIAN);
        log.putLong(0, genctr).putLong(8, numrec);
        for (int offset = 0; offset < total; offset += 4096) {
            int chunk = Math.min(4096, total - offset);
            FakeRequest part = host.getLogPage(admin, LogPageIdentifier.DISCOVERY, 0, chunk, 1024 + offset,
                offset + chunk < total);
            assertThat(part.status()).as("chunk at %d", 1024 + offset).isEqualTo(NvmeStatus.SUCCESS);
            log.put(1024 + offset, part.data(), 0, chunk);
        }
        FakeRequest again = host.getLogPage(admin, LogPageIdentifier.DISCOVERY, 0, 20, 0, false);
        assertThat(again.data().getLong(0)).as("GENCTR stable").isEqualTo(genctr);
        assertThat(again.data().getLong(8)).isEqualTo(numrec);
        return log;
    }

    @Test
    void shouldIdentifyAsDiscoveryController() {
        TestHost host = target.host();
        FakeQueue admin = discovery(host);
        FakeRequest id = host.identify(admin, IdentifyCommand.CNS_CONTROLLER, 0);
        assertThat(id.status()).isEqualTo(NvmeStatus.SUCCESS);
        ByteBuffer d = id.data();
        assertThat(d.get(111)).as("CNTRLTYPE discovery").isEqualTo((byte) 2);
        assertThat(d.getInt(80)).as("VER").isEqualTo(0x00010300);
        assertThat(d.get(261) & 0x04).as("LPA extended data").isEqualTo(0x04);
        assertThat(d.getShort(320)).as("KAS").isNotZero();
        assertThat(d.getInt(92)).as("OAES discovery log change").isEqualTo(1 << 31);
        assertThat(d.getInt(516)).as("NN").isZero();
        assertThat(d.getShort(78) & 0xFFFF).isEqualTo(target.registry.controllers().get(0).cntlid());
        assertThat(d.getInt(536) & 3).as("SGLS").isEqualTo(1);
        int end = 768;
        while (d.get(end) != 0) {
            end++;
        }
        byte[] nqn = new byte[end - 768];
        d.get(768, nqn);
        assertThat(new String(nqn)).isEqualTo(Port.DISCOVERY_NQN);
        assertThat(target.registry.controllers().get(0).isDiscovery()).isTrue();
    }

    @Test
    void shouldListOnlyWhatThisHostMaySee() {
        TestHost host = target.host();
        FakeQueue admin = discovery(host);
        ByteBuffer log = readLikeLibnvme(host, admin);
        assertThat(log.getLong(0)).as("GENCTR").isEqualTo(target.model.discoveryGeneration());
        assertThat(log.getLong(8)).as("NUMREC: current discovery + test on port 1 + second-port on port 2").isEqualTo(3);

        DiscoveryLogEntry e = new DiscoveryLogEntry();
        e.wrap(log, DiscoveryLogPage.entryOffset(0));
        assertThat(e.subsystemType()).isEqualTo(DiscoveryLogEntry.SUBTYPE_CURRENT_DISCOVERY);
        assertThat(e.subsystemNqn()).isEqualTo(Port.DISCOVERY_NQN);
        assertThat(e.portId()).isEqualTo(1);

        e.wrap(log, DiscoveryLogPage.entryOffset(1));
        assertThat(e.subsystemType()).isEqualTo(DiscoveryLogEntry.SUBTYPE_NVM);
        assertThat(e.subsystemNqn()).isEqualTo(TestTarget.SUBNQN);
        assertThat(e.transportType()).as("TRTYPE TCP").isEqualTo(3);
        assertThat(e.addressFamily()).as("ADRFAM IPv4").isEqualTo(1);
        assertThat(e.transportRequirements()).as("TREQ").isEqualTo(0x04);
        assertThat(e.portId()).isEqualTo(1);
        assertThat(e.controllerId()).isEqualTo(0xFFFF);
        assertThat(e.adminMaxSqSize()).isEqualTo(32);
        assertThat(e.entryFlags()).isZero();
        assertThat(e.transportServiceId()).isEqualTo("4420");
        assertThat(e.transportAddress()).isEqualTo("10.0.0.1");
        int base = DiscoveryLogPage.entryOffset(1);
        assertThat(log.get(base + 32 + 4)).as("TRSVCID NUL padded").isZero();
        assertThat(log.get(base + 512 + 8)).as("TRADDR NUL padded").isZero();
        assertThat(log.get(base + 768)).as("TSAS SECTYPE none").isZero();

        e.wrap(log, DiscoveryLogPage.entryOffset(2));
        assertThat(e.subsystemNqn()).isEqualTo(TestTarget.SECOND_PORT_NQN);
        assertThat(e.portId()).isEqualTo(2);
        assertThat(e.transportServiceId()).isEqualTo("4421");
        assertThat(e.transportAddress()).isEqualTo("10.0.0.2");
    }

    @Test
    void shouldListRestrictedSubsystemForItsAllowedHost() {
        TestHost other = new TestHost(target.factory, TestTarget.OTHER_HOST_NQN, TestHost.HOST_ID, TestTarget.PORT1_ADDRESS);
        FakeQueue admin = discovery(other);
        ByteBuffer log = readLikeLibnvme(other, admin);
        assertThat(log.getLong(8)).isEqualTo(4);
        DiscoveryLogEntry e = new DiscoveryLogEntry().wrap(log, DiscoveryLogPage.entryOffset(2));
        assertThat(e.subsystemNqn()).isEqualTo(TestTarget.RESTRICTED_NQN);
    }

    @Test
    void shouldReadManyEntriesInChunksAtAnyOffset() {
        for (int i = 0; i < 9; i++) {
            String nqn = "nqn.2024-01.io.nvmeof4j:bulk-" + i;
            target.model.addSubsystem(new io.nvmeof4j.target.model.Subsystem(nqn, "SN" + i, "bulk", "1", true));
        }
        java.util.Set<String> exports = new java.util.LinkedHashSet<>(target.port1.subsystems());
        for (int i = 0; i < 9; i++) {
            exports.add("nqn.2024-01.io.nvmeof4j:bulk-" + i);
        }
        target.model.replacePort(target.port1, new Port(1, target.port1.address(), target.port1.options(), exports));
        TestHost host = target.host();
        FakeQueue admin = discovery(host);
        ByteBuffer log = readLikeLibnvme(host, admin);
        assertThat(log.getLong(8)).isEqualTo(12);
        DiscoveryLogEntry e = new DiscoveryLogEntry();
        for (int i = 0; i < 9; i++) {
            assertThat(e.wrap(log, DiscoveryLogPage.entryOffset(2 + i)).subsystemNqn())
                .isEqualTo("nqn.2024-01.io.nvmeof4j:bulk-" + i);
        }
        // An odd dword offset inside an entry, crossing into the next.
        FakeRequest odd = host.getLogPage(admin, LogPageIdentifier.DISCOVERY, 0, 1028, 1024 + 1020, false);
        assertThat(odd.status()).isEqualTo(NvmeStatus.SUCCESS);
        for (int i = 0; i < 1028; i++) {
            assertThat(odd.data().get(i)).isEqualTo(log.get(1024 + 1020 + i));
        }
        // Past the end: zero fill; beyond: Invalid Field; unaligned: Invalid Field.
        FakeRequest tail = host.getLogPage(admin, LogPageIdentifier.DISCOVERY, 0, 2048, 1024 * 12, false);
        assertThat(tail.status()).isEqualTo(NvmeStatus.SUCCESS);
        assertThat(tail.data().get(1024)).isZero();
        assertThat(host.getLogPage(admin, LogPageIdentifier.DISCOVERY, 0, 1024, 1024 * 14, false).status())
            .isEqualTo(INVALID_FIELD);
        FakeRequest unaligned = host.submit(admin, 1024, sqe -> {
            new io.nvmeof4j.protocol.admin.GetLogPageCommand().wrap(sqe).init(sqe.commandId(), 0,
                LogPageIdentifier.DISCOVERY, 1024, 0);
            sqe.cdw(12, 1026);
        });
        assertThat(unaligned.status()).isEqualTo(INVALID_FIELD);
    }

    @Test
    void shouldChangeGenerationCounterWhenTheModelChanges() {
        TestHost host = target.host();
        FakeQueue admin = discovery(host);
        long before = host.getLogPage(admin, LogPageIdentifier.DISCOVERY, 0, 20, 0, false).data().getLong(0);
        target.model.discoveryChanged();
        long after = host.getLogPage(admin, LogPageIdentifier.DISCOVERY, 0, 20, 0, false).data().getLong(0);
        assertThat(after).isGreaterThan(before);
    }

    @Test
    void shouldServeOnlyTheDiscoveryCommandSet() {
        TestHost host = target.host();
        FakeQueue admin = discovery(host);
        assertThat(host.identify(admin, IdentifyCommand.CNS_NAMESPACE, 1).status()).isEqualTo(INVALID_FIELD);
        assertThat(host.identify(admin, IdentifyCommand.CNS_ACTIVE_NAMESPACE_LIST, 0).status()).isEqualTo(INVALID_FIELD);
        assertThat(host.getLogPage(admin, LogPageIdentifier.SMART_HEALTH, 0, 512, 0, false).status()).isEqualTo(INVALID_FIELD);
        assertThat(host.admin(admin, AdminOpcode.ABORT).status()).isEqualTo(NvmeStatus.INVALID_OPCODE | NvmeStatus.DNR);
        assertThat(host.admin(admin, AdminOpcode.FORMAT_NVM).status()).isEqualTo(NvmeStatus.INVALID_OPCODE | NvmeStatus.DNR);
        assertThat(host.setFeatures(admin, FeatureIdentifier.NUMBER_OF_QUEUES, 0).status()).isEqualTo(INVALID_FIELD);
        assertThat(host.getFeatures(admin, FeatureIdentifier.VOLATILE_WRITE_CACHE, 0).status()).isEqualTo(INVALID_FIELD);
        assertThat(host.setFeatures(admin, FeatureIdentifier.ASYNC_EVENT_CONFIGURATION, 1 << 8).status())
            .isEqualTo(INVALID_FIELD);
        assertThat(host.keepAlive(admin).status()).isEqualTo(NvmeStatus.SUCCESS);
        assertThat(host.setFeatures(admin, FeatureIdentifier.KEEP_ALIVE_TIMER, 30000).status()).isEqualTo(NvmeStatus.SUCCESS);
        assertThat(host.getFeatures(admin, FeatureIdentifier.KEEP_ALIVE_TIMER, 0).dw0()).isEqualTo(30000);
    }

    @Test
    void shouldAcceptAnyEntrySizesOnEnable() {
        TestHost host = target.host();
        FakeQueue admin = host.openQueue();
        host.connect(admin, 0, 31, 0, Port.DISCOVERY_NQN, 0xFFFF);
        host.propertySet(admin, ControllerRegisters.CC, 0x00000001);
        assertThat(host.propertyGet(admin, ControllerRegisters.CSTS, false).result64()).isEqualTo(1);
    }

    @Test
    void shouldNotifyDiscoveryLogChangesToHostsThatAskedForIt() {
        TestHost host = target.host();
        FakeQueue admin = discovery(host);
        assertThat(host.setFeatures(admin, FeatureIdentifier.ASYNC_EVENT_CONFIGURATION, 1 << 31).status())
            .isEqualTo(NvmeStatus.SUCCESS);
        FakeRequest aer1 = host.asyncEventRequest(admin);
        FakeRequest aer2 = host.asyncEventRequest(admin);
        target.registry.notifyDiscoveryChanged();
        assertThat(aer2.dw0()).isEqualTo(AsyncEvent.dw0(AsyncEvent.TYPE_NOTICE, 0xF0, 0x70)).isEqualTo(0x0070F002);
        target.registry.notifyDiscoveryChanged();
        assertThat(aer1.isCompleted()).as("masked until log 70h is read with RAE=0").isFalse();
        host.getLogPage(admin, LogPageIdentifier.DISCOVERY, 0, 20, 0, true);
        target.registry.notifyDiscoveryChanged();
        assertThat(aer1.isCompleted()).isFalse();
        host.getLogPage(admin, LogPageIdentifier.DISCOVERY, 0, 20, 0, false);
        target.registry.notifyDiscoveryChanged();
        assertThat(aer1.dw0()).isEqualTo(0x0070F002);
        // Namespace changes are not a discovery controller's business.
        FakeRequest aer3 = host.asyncEventRequest(admin);
        target.registry.notifyNamespaceChanged(Port.DISCOVERY_NQN, 1);
        assertThat(aer3.isCompleted()).isFalse();
    }

    @Test
    void shouldServeDiscoveryOnEveryPort() {
        io.nvmeof4j.target.controller.ControllerQueueHandlerFactory port2 =
            new io.nvmeof4j.target.controller.ControllerQueueHandlerFactory(target.model, target.port2, target.nvm,
                target.registry);
        TestHost host = new TestHost(port2, TestTarget.PORT2_ADDRESS);
        FakeQueue admin = discovery(host);
        ByteBuffer log = readLikeLibnvme(host, admin);
        DiscoveryLogEntry e = new DiscoveryLogEntry();
        assertThat(e.wrap(log, DiscoveryLogPage.entryOffset(0)).portId()).as("current discovery: port 2").isEqualTo(2);
        assertThat(e.wrap(log, DiscoveryLogPage.entryOffset(1)).subsystemNqn()).as("asking port first")
            .isEqualTo(TestTarget.SECOND_PORT_NQN);
        assertThat(e.wrap(log, DiscoveryLogPage.entryOffset(2)).subsystemNqn()).isEqualTo(TestTarget.SUBNQN);
        assertThat(e.portId()).isEqualTo(1);
    }
}
