package io.nvmeof4j.tcp;

import io.nvmeof4j.conformance.TransportConformanceSuite;
import io.nvmeof4j.conformance.TransportUnderTest;
import io.nvmeof4j.protocol.spi.ControllerTransport;
import io.nvmeof4j.protocol.spi.TransportAddress;
import io.nvmeof4j.protocol.spi.host.HostQueueOptions;
import io.nvmeof4j.protocol.spi.host.HostTransport;
import io.nvmeof4j.tcp.host.TcpHostTransport;

/**
 * The transport conformance suite over NVMe/TCP on 127.0.0.1: our host transport against our controller transport,
 * real sockets. I/O queues run with header and data digests (the admin queue without), so the suite covers both;
 * the default MAXH2CDATA (256 KiB) and C2HData PDU size (128 KiB) split the larger transfers into several PDUs.
 */
class TcpLoopbackConformanceTest extends TransportConformanceSuite {
    @Override
    protected TransportUnderTest transportUnderTest() {
        return new TransportUnderTest() {
            @Override
            public String name() {
                return "NVMe/TCP over 127.0.0.1";
            }

            @Override
            public ControllerTransport newControllerTransport() {
                return new TcpControllerTransport(TcpTransportOptions.defaults());
            }

            @Override
            public HostTransport newHostTransport() {
                return new TcpHostTransport();
            }

            @Override
            public TransportAddress listenAddress() {
                return TransportAddress.tcp("127.0.0.1", 0);
            }

            @Override
            public HostQueueOptions ioQueueOptions(int depth, int inCapsuleDataSize) {
                return new HostQueueOptions(depth, true, true, inCapsuleDataSize, timeout());
            }
        };
    }
}
