package io.nvmeof4j.rdma;

import io.nvmeof4j.conformance.TransportConformanceSuite;
import io.nvmeof4j.conformance.TransportUnderTest;
import io.nvmeof4j.protocol.spi.AddressFamily;
import io.nvmeof4j.protocol.spi.ControllerTransport;
import io.nvmeof4j.protocol.spi.TransportAddress;
import io.nvmeof4j.protocol.spi.TransportType;
import io.nvmeof4j.protocol.spi.host.HostPollGroup;
import io.nvmeof4j.protocol.spi.host.HostQueue;
import io.nvmeof4j.protocol.spi.host.HostQueueListener;
import io.nvmeof4j.protocol.spi.host.HostQueueOptions;
import io.nvmeof4j.protocol.spi.host.HostTransport;
import io.nvmeof4j.rdma.host.FakeRdmaHostTransport;

import java.io.IOException;

/**
 * The transport conformance suite over NVMe-oF/RDMA on the fake queue pair: our host queue state machine against our
 * controller queue state machine, capsules and responses crossing as SENDs, data moved by the controller's RDMA
 * READ/WRITE on the host's registered memory ({@link FakeRdmaFabric}). The CM and the verbs are fakes; the same
 * suite runs over Soft-RoCE in the guest ({@code RdmaJniIT}).
 */
class RdmaFakeQueuePairConformanceTest extends TransportConformanceSuite {
    @Override
    protected TransportUnderTest transportUnderTest() {
        FakeRdmaFabric fabric = new FakeRdmaFabric();
        return new TransportUnderTest() {
            @Override
            public String name() {
                return "NVMe-oF/RDMA over the fake queue pair";
            }

            @Override
            public ControllerTransport newControllerTransport() {
                return fabric.controllerTransport();
            }

            @Override
            public HostTransport newHostTransport() {
                return new FakeRdmaHostTransport(fabric);
            }

            @Override
            public TransportAddress listenAddress() {
                return new TransportAddress(TransportType.RDMA, AddressFamily.IPV4, "10.0.2.15", "0");
            }

            @Override
            public HostQueue connect(HostTransport transport, HostPollGroup group, TransportAddress address,
                                     HostQueueOptions options, int queueId, int controllerId,
                                     HostQueueListener listener) throws IOException {
                return ((FakeRdmaHostTransport) transport).connect(group, address, options, queueId, controllerId,
                    listener);
            }

            @Override
            public int adminInCapsuleDataSize() {
                return 0; // nvmet-rdma's admin receives hold just the SQE; so do ours
            }

            @Override
            public boolean onePollThread() {
                return true; // the fake queue pairs lock each other: one thread drives both ends
            }
        };
    }
}
