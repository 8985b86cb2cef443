package io.nvmeof4j.target.controller;

import io.nvmeof4j.jni.bdev.BdevIoChannel;
import io.nvmeof4j.jni.bdev.BdevRegion;
import io.nvmeof4j.protocol.buffer.OffHeapBufferPool;
import io.nvmeof4j.protocol.command.NvmeStatus;
import io.nvmeof4j.protocol.command.SglDescriptor;
import io.nvmeof4j.protocol.command.SubmissionQueueEntry;
import io.nvmeof4j.protocol.fabrics.ControllerRegisters;
import io.nvmeof4j.protocol.io.NvmOpcode;
import io.nvmeof4j.protocol.spi.ForwardingRequest;
import io.nvmeof4j.protocol.spi.PortOptions;
import io.nvmeof4j.target.backend.BdevChannels;
import io.nvmeof4j.target.backend.BindingProbe;
import io.nvmeof4j.target.backend.QosWaits;
import io.nvmeof4j.target.backend.UringBlockDevice;
import io.nvmeof4j.target.io.IoContext;
import io.nvmeof4j.target.io.NvmCommandExecutor;
import io.nvmeof4j.target.io.NvmCommands;
import io.nvmeof4j.target.model.Namespace;
import io.nvmeof4j.target.model.Port;
import io.nvmeof4j.target.model.Subsystem;
import io.nvmeof4j.target.model.TargetModel;
import io.nvmeof4j.protocol.spi.idle.IdleMode;
import io.nvmeof4j.target.reactor.OnReactor;
import io.nvmeof4j.target.reactor.Reactor;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Issue 12: an I/O queue's block I/O is bound to its reactor's ring, QoS waits and device channels when the queue
 * connects there, not at its first I/O: the first I/O of a fresh queue finds its slot's descriptor bound and the
 * device's channel open. The channels are the reactor's: a queue that disconnects leaves them to the next queue on
 * the reactor, and a detached device's channel is closed.
 */
class IoQueueBackendBindingTest {
    private static final int MIB = 1 << 20;

    @TempDir
    Path dir;

    private Reactor reactor;
    private BdevChannels ring;
    private QosWaits qos;

    @BeforeEach
    void startReactor() throws Exception {
        reactor = new Reactor("test-reactor", IdleMode.ADAPTIVE, TimeUnit.MICROSECONDS.toNanos(50));
        BdevRegion region = BdevRegion.map(4L * MIB, false);
        reactor.own(region);
        ring = new BdevChannels("test block I/O", new OffHeapBufferPool(MIB, region.buffer()), 64);
        qos = new QosWaits("test QoS");
        reactor.add(ring);
        reactor.add(qos);
        reactor.start();
    }

    @AfterEach
    void stopReactor() {
        assertThat(reactor.stop(Duration.ofSeconds(10))).isTrue();
    }

    /** Runs {@code task} on the reactor thread, as a transport runs a queue's commands; its result within 10 s. */
    private <T> T onReactor(Callable<T> task) throws Exception {
        return OnReactor.call(reactor, task);
    }

    /** What the executor was handed with a command: the slot's descriptor, and what it was bound to on arrival. */
    private record Arrival(IoContext io, BdevChannels ring, QosWaits qos) {
    }

    /**
     * A 4 KiB Write or Read of LBA {@code slba} on queue {@code q}, its data in page-aligned direct memory, submitted on
     * the reactor (which completes it from its ring); its status, within 10 s.
     */
    private int transfer(FakeQueue q, int opcode, long slba, ByteBuffer data) throws Exception {
        FakeRequest submitted = onReactor(() -> submit(q, opcode, slba, data));
        assertThat(submitted.await(10, TimeUnit.SECONDS)).as("completed within 10 s").isTrue();
        return submitted.status();
    }

    private static FakeRequest submit(FakeQueue q, int opcode, long slba, ByteBuffer data) {
        FakeRequest slot = new FakeRequest(q, 4096);
        SubmissionQueueEntry sqe = slot.command();
        sqe.clear().opcode(opcode).flags(SubmissionQueueEntry.FLAGS_PSDT_SGL).commandId(slot.slot()).nsid(1)
            .cdw10And11(slba);
        sqe.sgl1().address(0).length(4096).id(SglDescriptor.ID_TCP_TRANSPORT);
        // O_DIRECT: the device reads and writes the transport's buffer itself, so it must be direct and aligned.
        ForwardingRequest direct = new ForwardingRequest(slot) {
            @Override
            public ByteBuffer data() {
                return data;
            }

            @Override
            public void complete(int nvmeStatus) {
                delegate.complete(nvmeStatus);
            }
        };
        q.handler().onCommand(direct);
        return slot;
    }

    private static ByteBuffer aligned() {
        return ByteBuffer.allocateDirect(8192).alignedSlice(4096).order(ByteOrder.LITTLE_ENDIAN).limit(4096);
    }

    @Test
    void shouldBindAnIoQueueToItsReactorsBackendsWhenItConnectsNotAtItsFirstIo() throws Exception {
        try (UringBlockDevice device = UringBlockDevice.open(dir.resolve("ns1.img"), 4L * MIB, 4096, false);
             ControllerRegistry registry = new ControllerRegistry()) {
            TargetModel model = new TargetModel();
            Subsystem subsystem = new Subsystem(TestTarget.SUBNQN, "SN", "MN", "FR", true);
            subsystem.addNamespace(new Namespace(1, device, UUID.randomUUID(), new byte[16]));
            model.addSubsystem(subsystem);
            Port port = new Port(1, TestTarget.PORT1_ADDRESS, PortOptions.defaults(), Set.of(TestTarget.SUBNQN));
            model.addPort(port);
            NvmCommands nvm = new NvmCommands();
            List<Arrival> arrivals = new CopyOnWriteArrayList<>();
            NvmCommandExecutor recording = (request, namespace, io) -> {
                arrivals.add(new Arrival(io, BindingProbe.ring(io), BindingProbe.qos(io)));
                nvm.execute(request, namespace, io);
            };
            TestHost host = new TestHost(new ControllerQueueHandlerFactory(model, port, recording, registry),
                TestTarget.PORT1_ADDRESS);

            FakeQueue admin = onReactor(host::openQueue);
            int cntlid = onReactor(() -> host.connect(admin, 0, 31, 0, TestTarget.SUBNQN, 0xFFFF)).dw0();
            assertThat(onReactor(() -> host.propertySet(admin, ControllerRegisters.CC, 0x00460001).status()))
                .isEqualTo(NvmeStatus.SUCCESS);
            assertThat(onReactor(() -> BindingProbe.channel(ring, device))).as("no channel before an I/O queue").isNull();

            FakeQueue first = onReactor(host::openQueue);
            assertThat(onReactor(() -> host.connect(first, 1, 31, 0, TestTarget.SUBNQN, cntlid).status()))
                .isEqualTo(NvmeStatus.SUCCESS);
            BdevIoChannel opened = onReactor(() -> BindingProbe.channel(ring, device));
            assertThat(opened).as("the device's channel, opened by the I/O queue's Connect").isNotNull();

            byte[] bytes = new byte[4096];
            new Random(12).nextBytes(bytes);
            ByteBuffer out = aligned().put(0, bytes);
            assertThat(transfer(first, NvmOpcode.WRITE, 3, out)).isEqualTo(NvmeStatus.SUCCESS);
            ByteBuffer in = aligned();
            assertThat(transfer(first, NvmOpcode.READ, 3, in)).isEqualTo(NvmeStatus.SUCCESS);
            byte[] back = new byte[4096];
            in.get(0, back);
            assertThat(back).as("the bytes written").isEqualTo(bytes);

            assertThat(arrivals).hasSize(2);
            for (Arrival a : arrivals) {
                assertThat(a.ring()).as("the slot's descriptor arrives bound to the reactor's ring").isSameAs(ring);
                assertThat(a.qos()).as("and to its QoS waits").isSameAs(qos);
                assertThat(onReactor(() -> BindingProbe.channel(a.io()))).as("the channel Connect opened")
                    .isSameAs(opened);
            }

            FakeQueue second = onReactor(host::openQueue);
            assertThat(onReactor(() -> host.connect(second, 2, 31, 0, TestTarget.SUBNQN, cntlid).status()))
                .isEqualTo(NvmeStatus.SUCCESS);
            onReactor(() -> {
                first.close("host closed the queue");
                return null;
            });
            assertThat(onReactor(() -> BindingProbe.channel(ring, device)))
                .as("the reactor's channel outlives the queue that opened it").isSameAs(opened);
            ByteBuffer again = aligned();
            assertThat(transfer(second, NvmOpcode.READ, 3, again)).isEqualTo(NvmeStatus.SUCCESS);
            again.get(0, back);
            assertThat(back).isEqualTo(bytes);
            Arrival third = arrivals.get(2);
            assertThat(third.ring()).isSameAs(ring);
            assertThat(onReactor(() -> BindingProbe.channel(third.io()))).isSameAs(opened);

            assertThat(device.detach(List.of(reactor), Duration.ofSeconds(10))).isTrue();
            assertThat(opened.isClosed()).as("detach closes the reactor's channel").isTrue();
            assertThat(onReactor(() -> BindingProbe.channel(ring, device))).isNull();
            ByteBuffer refused = aligned();
            assertThat(transfer(second, NvmOpcode.READ, 3, refused))
                .isEqualTo(NvmeStatus.NAMESPACE_NOT_READY);
        }
    }
}
