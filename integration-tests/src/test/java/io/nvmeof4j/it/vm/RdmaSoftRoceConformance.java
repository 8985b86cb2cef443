package io.nvmeof4j.it.vm;

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
import io.nvmeof4j.rdma.RdmaControllerTransport;
import io.nvmeof4j.rdma.host.RdmaHostTransport;

import java.io.IOException;
import java.time.Duration;

/**
 * The transport conformance suite over NVMe-oF/RDMA on a real device: our host transport against our controller
 * transport, both inside the QEMU guest on Soft-RoCE {@code rxe0} (real RDMA CM, verbs, registrations), at
 * {@code $RDMA_ADDR} (10.0.2.15). Not a surefire or failsafe class (no {@code Test}/{@code IT} suffix): it needs the
 * device, so {@link RdmaJniIT} runs it in the guest next to the JNI checks, in the same boot.
 */
public class RdmaSoftRoceConformance extends TransportConformanceSuite {
    @Override
    protected TransportUnderTest transportUnderTest() {
        String address = System.getenv().getOrDefault("RDMA_ADDR", "10.0.2.15");
        return new TransportUnderTest() {
            @Override
            public String name() {
                return "NVMe-oF/RDMA over Soft-RoCE at " + address;
            }

            @Override
            public ControllerTransport newControllerTransport() {
                return new RdmaControllerTransport();
            }

            @Override
            public HostTransport newHostTransport() {
                return new RdmaHostTransport();
            }

            @Override
            public TransportAddress listenAddress() {
                return new TransportAddress(TransportType.RDMA, AddressFamily.IPV4, address, "0");
            }

            @Override
            public HostQueue connect(HostTransport transport, HostPollGroup group, TransportAddress to,
                                     HostQueueOptions options, int queueId, int controllerId,
                                     HostQueueListener listener) throws IOException {
                return ((RdmaHostTransport) transport).connect(group, to, options, queueId, controllerId, listener);
            }

            @Override
            public int adminInCapsuleDataSize() {
                return 0;
            }

            @Override
            public Duration timeout() {
                return Duration.ofSeconds(30); // software emulation on a shared machine
            }
        };
    }
}
