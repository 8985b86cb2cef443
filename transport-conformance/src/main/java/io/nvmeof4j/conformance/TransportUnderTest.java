package io.nvmeof4j.conformance;

import io.nvmeof4j.protocol.buffer.OffHeapBufferPool;
import io.nvmeof4j.protocol.spi.ControllerTransport;
import io.nvmeof4j.protocol.spi.PortOptions;
import io.nvmeof4j.protocol.spi.TransportAddress;
import io.nvmeof4j.protocol.spi.host.HostPollGroup;
import io.nvmeof4j.protocol.spi.host.HostQueue;
import io.nvmeof4j.protocol.spi.host.HostQueueListener;
import io.nvmeof4j.protocol.spi.host.HostQueueOptions;
import io.nvmeof4j.protocol.spi.host.HostTransport;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.time.Duration;

/**
 * What the {@link TransportConformanceSuite} needs from one transport binding: both roles' transports, where to
 * listen, and the few things the SPI leaves to the binding. Everything else the suite does through the SPI alone.
 */
public interface TransportUnderTest {
    /** For messages: "NVMe/TCP over 127.0.0.1". */
    String name();

    /** A new controller-role transport; the suite closes it. */
    ControllerTransport newControllerTransport();

    /** A new host-role transport; the suite closes it. */
    HostTransport newHostTransport();

    /** Where a listener binds, port "0" (any free one). */
    TransportAddress listenAddress();

    /**
     * A reactor's buffer pool. Built over one region, which both bindings accept (NVMe-oF/RDMA registers it once).
     *
     * @param maxBufferSize the largest buffer, the port's MDTS
     * @param capacity      bytes of the region
     */
    default OffHeapBufferPool newPool(int maxBufferSize, int capacity) {
        return new OffHeapBufferPool(maxBufferSize, ByteBuffer.allocateDirect(capacity));
    }

    /**
     * Opens host queue {@code queueId} of controller {@code controllerId} (0xFFFF before the admin queue's Connect).
     * The SPI's connect knows neither: NVMe/TCP does not need them, NVMe-oF/RDMA puts them in its CM private data.
     */
    default HostQueue connect(HostTransport transport, HostPollGroup group, TransportAddress address,
                              HostQueueOptions options, int queueId, int controllerId, HostQueueListener listener)
        throws IOException {
        return transport.connect(group, address, options, listener);
    }

    /** The I/O queues' options (NVMe/TCP turns digests on here, so the suite covers them too). */
    default HostQueueOptions ioQueueOptions(int depth, int inCapsuleDataSize) {
        return new HostQueueOptions(depth, false, false, inCapsuleDataSize, timeout());
    }

    /**
     * In-capsule data the controller's admin queue accepts ({@code TransportQueue.inCapsuleDataSize()}): 8 KiB for
     * NVMe/TCP, as the Linux host sends Fabrics commands; NVMe-oF/RDMA takes none there, as nvmet-rdma.
     */
    default int adminInCapsuleDataSize() {
        return PortOptions.ADMIN_IN_CAPSULE_DATA_SIZE;
    }

    /**
     * Whether every poll group (controller and host) must be polled by one thread: a fake fabric whose two ends
     * are not safe to drive from two threads at once. Real transports poll each group on its own thread.
     */
    default boolean onePollThread() {
        return false;
    }

    /** Bound on every wait of the suite (a connect, one command); longer in the software-emulated guest. */
    default Duration timeout() {
        return Duration.ofSeconds(10);
    }
}
