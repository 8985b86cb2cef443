package io.nvmeof4j.tcp;

import io.nvmeof4j.protocol.buffer.OffHeapBufferPool;
import io.nvmeof4j.protocol.spi.MemoryBudget;
import io.nvmeof4j.protocol.spi.PollGroup;
import io.nvmeof4j.protocol.spi.PortOptions;
import io.nvmeof4j.protocol.spi.TransportAddress;
import io.nvmeof4j.protocol.spi.TransportListener;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.function.BooleanSupplier;
import java.util.function.LongSupplier;

import static org.assertj.core.api.Assertions.assertThat;

/** An NVMe/TCP target on 127.0.0.1, port 0: transport, per-reactor pools and poll groups, test reactors, listener. */
final class TargetFixture implements AutoCloseable {
    final TcpControllerTransport transport;
    final List<OffHeapBufferPool> pools = new ArrayList<>();
    final List<TcpPollGroup> groups = new ArrayList<>();
    final List<TestReactor> reactors = new ArrayList<>();
    final RamQueueHandlerFactory handlers = new RamQueueHandlerFactory();
    final TransportListener listener;

    TargetFixture(int groupCount) throws IOException {
        this(groupCount, 1 << 20, 64L << 20, PortOptions.defaults(), TcpTransportOptions.defaults());
    }

    TargetFixture(int groupCount, int poolMaxBuffer, long poolCapacity, PortOptions port, TcpTransportOptions tcp)
        throws IOException {
        this(groupCount, poolMaxBuffer, poolCapacity, port, tcp, MemoryBudget.unlimited("test queue buffer budget"));
    }

    TargetFixture(int groupCount, int poolMaxBuffer, long poolCapacity, PortOptions port, TcpTransportOptions tcp,
                  MemoryBudget queueBufferBudget) throws IOException {
        this(groupCount, poolMaxBuffer, poolCapacity, port, tcp, queueBufferBudget, System::nanoTime);
    }

    /** One poll group stamping with {@code clock}. */
    TargetFixture(LongSupplier clock) throws IOException {
        this(1, 1 << 20, 64L << 20, PortOptions.defaults(), TcpTransportOptions.defaults(),
            MemoryBudget.unlimited("test queue buffer budget"), clock);
    }

    private TargetFixture(int groupCount, int poolMaxBuffer, long poolCapacity, PortOptions port,
                          TcpTransportOptions tcp, MemoryBudget queueBufferBudget, LongSupplier clock)
        throws IOException {
        transport = new TcpControllerTransport(tcp, queueBufferBudget);
        for (int i = 0; i < groupCount; i++) {
            OffHeapBufferPool pool = new OffHeapBufferPool(poolMaxBuffer, poolCapacity);
            TcpPollGroup group = transport.createPollGroup(pool, clock);
            pools.add(pool);
            groups.add(group);
        }
        listener = transport.listen(TransportAddress.tcp("127.0.0.1", 0), port, new ArrayList<PollGroup>(groups),
            handlers);
        for (int i = 0; i < groupCount; i++) {
            reactors.add(new TestReactor("reactor-" + i, groups.get(i)));
        }
    }

    TransportAddress address() {
        return listener.address();
    }

    RawHost host() throws IOException {
        return RawHost.connect(address());
    }

    int buffersInUse() {
        return pools.stream().mapToInt(OffHeapBufferPool::buffersInUse).sum();
    }

    static void eventually(String what, BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + 5_000_000_000L;
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("not within 5 s: " + what);
            }
            Thread.sleep(5);
        }
    }

    @Override
    public void close() throws Exception {
        listener.close();
        transport.close();
        for (TestReactor reactor : reactors) {
            reactor.close();
            assertThat(reactor.failure()).as("reactor loop failure").isNull();
        }
        handlers.close();
    }
}
