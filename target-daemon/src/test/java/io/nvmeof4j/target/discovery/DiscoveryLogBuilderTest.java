package io.nvmeof4j.target.discovery;

import io.nvmeof4j.protocol.discovery.DiscoveryLogEntry;
import io.nvmeof4j.protocol.discovery.DiscoveryLogPage;
import io.nvmeof4j.protocol.spi.AddressFamily;
import io.nvmeof4j.protocol.spi.PortOptions;
import io.nvmeof4j.protocol.spi.TransportAddress;
import io.nvmeof4j.protocol.spi.TransportType;
import io.nvmeof4j.target.model.Port;
import io.nvmeof4j.target.model.Subsystem;
import io.nvmeof4j.target.model.TargetModel;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;

class DiscoveryLogBuilderTest {
    private static final String HOST = "nqn.2014-08.org.nvmexpress:uuid:0e5c2f7a-61a4-4d7e-9d3b-1f2a3b4c5d6e";

    @Test
    void shouldReportTheConnectionAddressForWildcardListeners() {
        TargetModel model = new TargetModel();
        model.addSubsystem(new Subsystem("nqn.2024-01.io.x:a", "s", "m", "f", true));
        Port any = new Port(7, TransportAddress.tcp("0.0.0.0", 4420), PortOptions.defaults(), Set.of("nqn.2024-01.io.x:a"));
        model.addPort(any);
        ByteBuffer log = new DiscoveryLogBuilder(model).build(any, HOST, "192.168.1.5", null);
        assertThat(log.limit()).isEqualTo(3 * 1024);
        DiscoveryLogEntry e = new DiscoveryLogEntry().wrap(log, DiscoveryLogPage.entryOffset(1));
        assertThat(e.transportAddress()).isEqualTo("192.168.1.5");
        assertThat(e.portId()).isEqualTo(7);
        // Without a usable local address the configured one stays.
        ByteBuffer unknown = new DiscoveryLogBuilder(model).build(any, HOST, "0.0.0.0", null);
        assertThat(new DiscoveryLogEntry().wrap(unknown, DiscoveryLogPage.entryOffset(1)).transportAddress()).isEqualTo("0.0.0.0");
    }

    @Test
    void shouldDescribeRdmaAndIpv6Ports() {
        TargetModel model = new TargetModel();
        model.addSubsystem(new Subsystem("nqn.2024-01.io.x:a", "s", "m", "f", true));
        Port rdma = new Port(3, new TransportAddress(TransportType.RDMA, AddressFamily.IPV6, "fe80::1", "4420"),
            PortOptions.defaults(), Set.of("nqn.2024-01.io.x:a"));
        model.addPort(rdma);
        ByteBuffer log = new DiscoveryLogBuilder(model).build(rdma, HOST, null, null);
        DiscoveryLogEntry e = new DiscoveryLogEntry().wrap(log, DiscoveryLogPage.entryOffset(1));
        assertThat(e.transportType()).isEqualTo(1);
        assertThat(e.addressFamily()).isEqualTo(2);
        assertThat(e.transportAddress()).isEqualTo("fe80::1");
        assertThat(e.tsasByte(0)).as("QPTYPE connected").isEqualTo(1);
        assertThat(e.tsasByte(1)).as("PRTYPE not specified").isEqualTo(1);
        assertThat(e.tsasByte(2)).as("CMS RDMA-CM").isEqualTo(1);
    }

    @Test
    void shouldReuseALargeEnoughBufferAndSkipUnknownSubsystems() {
        TargetModel model = new TargetModel();
        Port port = new Port(1, TransportAddress.tcp("10.1.1.1", 4420), PortOptions.defaults(),
            Set.of("nqn.2024-01.io.x:missing", Port.DISCOVERY_NQN));
        model.addPort(port);
        ByteBuffer reuse = ByteBuffer.allocate(8192).order(java.nio.ByteOrder.LITTLE_ENDIAN);
        ByteBuffer log = new DiscoveryLogBuilder(model).build(port, HOST, null, reuse);
        assertThat(log).isSameAs(reuse);
        assertThat(new DiscoveryLogPage().wrap(log, 0).numberOfRecords()).as("only the current discovery entry").isEqualTo(1);
        assertThat(log.limit()).isEqualTo(2048);
    }

    @Test
    void shouldListTheAskingPortsReferralsAfterTheSubsystemsAsNvmetDoes() {
        TargetModel model = new TargetModel();
        model.addSubsystem(new Subsystem("nqn.2024-01.io.x:a", "s", "m", "f", true));
        Port asked = new Port(1, TransportAddress.tcp("10.1.1.1", 4420), PortOptions.defaults(), Set.of("nqn.2024-01.io.x:a"));
        Port other = new Port(2, TransportAddress.tcp("10.1.1.1", 4421), PortOptions.defaults(), Set.of());
        model.addPort(asked);
        model.addPort(other);
        long generation = model.discoveryGeneration();
        model.referrals(1, java.util.List.of(
            new io.nvmeof4j.target.model.Referral(9, TransportAddress.tcp("10.2.2.2", 8009),
                DiscoveryLogEntry.TREQ_SECURE_CHANNEL_REQUIRED, Port.DISCOVERY_NQN),
            new io.nvmeof4j.target.model.Referral(0, new TransportAddress(TransportType.RDMA, AddressFamily.IPV4,
                "10.3.3.3", "4420"), 0, "nqn.2024-01.io.x:far")));
        model.referrals(2, java.util.List.of(new io.nvmeof4j.target.model.Referral(0,
            TransportAddress.tcp("10.9.9.9", 8009), 0, Port.DISCOVERY_NQN)));
        assertThat(model.discoveryGeneration()).as("GENCTR moves with referrals").isGreaterThan(generation);

        ByteBuffer log = new DiscoveryLogBuilder(model).build(asked, HOST, null, null);
        assertThat(new DiscoveryLogPage().wrap(log, 0).numberOfRecords()).as("current, subsystem a, two referrals")
            .isEqualTo(4);
        DiscoveryLogEntry r = new DiscoveryLogEntry().wrap(log, DiscoveryLogPage.entryOffset(2));
        assertThat(r.subsystemType()).isEqualTo(DiscoveryLogEntry.SUBTYPE_DISCOVERY_REFERRAL);
        assertThat(r.transportType()).isEqualTo(TransportType.TCP.code());
        assertThat(r.portId()).isEqualTo(9);
        assertThat(r.transportRequirements()).isEqualTo(DiscoveryLogEntry.TREQ_SECURE_CHANNEL_REQUIRED);
        assertThat(r.controllerId()).isEqualTo(0xFFFF);
        assertThat(r.adminMaxSqSize()).isEqualTo(32);
        assertThat(r.transportServiceId()).isEqualTo("8009");
        assertThat(r.transportAddress()).isEqualTo("10.2.2.2");
        assertThat(r.subsystemNqn()).isEqualTo(Port.DISCOVERY_NQN);
        DiscoveryLogEntry far = new DiscoveryLogEntry().wrap(log, DiscoveryLogPage.entryOffset(3));
        assertThat(far.subsystemType()).as("a referral naming an NVM subsystem").isEqualTo(DiscoveryLogEntry.SUBTYPE_NVM);
        assertThat(far.subsystemNqn()).isEqualTo("nqn.2024-01.io.x:far");
        assertThat(far.tsasByte(2)).as("CMS RDMA-CM").isEqualTo(1);
        // Another port's referrals are listed through that port only; a removed port takes its referrals along.
        ByteBuffer viaOther = new DiscoveryLogBuilder(model).build(other, HOST, null, null);
        assertThat(new DiscoveryLogEntry().wrap(viaOther, DiscoveryLogPage.entryOffset(2)).transportAddress())
            .isEqualTo("10.9.9.9");
        model.removePort(2);
        assertThat(model.referrals(2)).isEmpty();
    }
}
