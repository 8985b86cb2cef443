package io.nvmeof4j.target.controller;

import io.micrometer.core.instrument.Timer;
import io.nvmeof4j.protocol.command.NvmeStatus;
import io.nvmeof4j.protocol.command.SglDescriptor;
import io.nvmeof4j.protocol.command.SubmissionQueueEntry;
import io.nvmeof4j.protocol.spi.PortOptions;
import io.nvmeof4j.protocol.spi.TransportType;
import io.nvmeof4j.target.io.NvmCommandExecutor;
import io.nvmeof4j.target.metrics.TargetMeterNames;
import io.nvmeof4j.target.metrics.TargetMetrics;
import io.nvmeof4j.target.model.Namespace;
import io.nvmeof4j.target.model.Port;
import io.nvmeof4j.target.model.Subsystem;
import io.nvmeof4j.target.model.TargetModel;
import org.junit.jupiter.api.Test;

import java.util.EnumSet;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A command's latency in {@code nvmeof.target.io} is the transport's sent stamp minus its received stamp, exactly:
 * the command layer reads no clock of its own.
 */
class MeteredLatencyTest {
    private static final NvmCommandExecutor COMPLETE_AT_ONCE = (request, namespace, io) ->
        request.complete(NvmeStatus.SUCCESS);

    @Test
    void shouldRecordTheLatencyTheTransportsStampsSay() {
        TargetModel model = new TargetModel();
        Subsystem subsystem = new Subsystem(TestTarget.SUBNQN, "SN", "MN", "FR", true);
        Namespace ns = new Namespace(1, new RamDevice(512, 8, false), UUID.randomUUID(), new byte[16]);
        subsystem.addNamespace(ns);
        model.addSubsystem(subsystem);
        TargetMetrics metrics = TargetMetrics.prometheus(EnumSet.of(TransportType.TCP));
        metrics.bindNamespace(subsystem, ns);
        Port port = new Port(1, TestTarget.PORT1_ADDRESS, PortOptions.defaults(), Set.of(TestTarget.SUBNQN));
        model.addPort(port);
        try (ControllerRegistry registry = new ControllerRegistry()) {
            TestHost host = new TestHost(new ControllerQueueHandlerFactory(model, port, COMPLETE_AT_ONCE, registry,
                metrics), TestTarget.PORT1_ADDRESS);
            FakeQueue io = host.connectIoQueue(TestTarget.SUBNQN, 127);

            FakeRequest slot = new FakeRequest(io, 512);
            SubmissionQueueEntry sqe = slot.command();
            sqe.clear().opcode(0x02).flags(SubmissionQueueEntry.FLAGS_PSDT_SGL).nsid(1);
            sqe.sgl1().length(512).id(SglDescriptor.ID_TCP_TRANSPORT);
            // Like a stepped round clock: received at 5 ms, sent one step (7 us) later, then 3 steps, then 1.
            long[] steps = {7_000, 21_000, 7_000};
            long t = 5_000_000;
            for (long step : steps) {
                slot.stamps(t, t + step);
                io.handler().onCommand(slot);
                t += step;
            }

            Timer timer = ns.meters().timer(TransportType.TCP.ordinal(), TargetMeterNames.OP_READ);
            assertThat(timer.count()).isEqualTo(3);
            assertThat(timer.totalTime(TimeUnit.NANOSECONDS)).as("sum of sent - received").isEqualTo(35_000.0);
            assertThat(timer.max(TimeUnit.NANOSECONDS)).isEqualTo(21_000.0);
        }
    }
}
