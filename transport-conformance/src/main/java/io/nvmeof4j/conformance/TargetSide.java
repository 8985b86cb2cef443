package io.nvmeof4j.conformance;

import io.nvmeof4j.protocol.buffer.OffHeapBufferPool;
import io.nvmeof4j.protocol.spi.ControllerTransport;
import io.nvmeof4j.protocol.spi.PollGroup;
import io.nvmeof4j.protocol.spi.PortOptions;
import io.nvmeof4j.protocol.spi.TransportAddress;
import io.nvmeof4j.protocol.spi.TransportListener;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

/**
 * The controller role through the SPI only: a {@link ControllerTransport}, one buffer pool and poll group per
 * reactor, a listener handing queues to a {@link ConformanceController}.
 */
final class TargetSide implements AutoCloseable {
    final ControllerTransport transport;
    final List<OffHeapBufferPool> pools = new ArrayList<>();
    final ConformanceController controller;
    final TransportListener listener;

    /**
     * @param loops        one per reactor: each gets a pool and a poll group
     * @param poolCapacity bytes of each reactor's pool (its largest buffer is the port's MDTS)
     */
    TargetSide(TransportUnderTest transportUnderTest, List<PollLoop> loops, PortOptions port, int poolCapacity,
               ConformanceController controller) throws IOException {
        this.transport = transportUnderTest.newControllerTransport();
        this.controller = controller;
        List<PollGroup> groups = new ArrayList<>();
        try {
            for (PollLoop loop : loops) {
                OffHeapBufferPool pool = transportUnderTest.newPool(port.maxDataTransferSize(), poolCapacity);
                PollGroup group = transport.createPollGroup(pool);
                pools.add(pool);
                groups.add(group);
                loop.add(group);
            }
            listener = transport.listen(transportUnderTest.listenAddress(), port, groups, controller);
        } catch (IOException | RuntimeException e) {
            transport.close();
            throw e;
        }
    }

    TransportAddress address() {
        return listener.address();
    }

    /** Pool buffers handed out and not given back, over every reactor (a snapshot). */
    int buffersInUse() {
        return pools.stream().mapToInt(OffHeapBufferPool::buffersInUse).sum();
    }

    /** Stops listening and closes the transport; the poll loops close the groups and their queues. */
    @Override
    public void close() {
        try {
            listener.close();
        } finally {
            transport.close();
        }
    }
}
