package io.nvmeof4j.target.controller;

import io.nvmeof4j.protocol.command.NvmeStatus;
import io.nvmeof4j.protocol.command.SglDescriptor;
import io.nvmeof4j.protocol.command.SubmissionQueueEntry;
import io.nvmeof4j.protocol.spi.PortOptions;
import io.nvmeof4j.protocol.spi.TransportType;
import io.nvmeof4j.target.io.NvmCommandExecutor;
import io.nvmeof4j.target.metrics.TargetMeterNames;
import io.nvmeof4j.target.metrics.TargetMetrics;
import io.nvmeof4j.target.model.Port;
import io.nvmeof4j.target.model.Subsystem;
import io.nvmeof4j.target.model.TargetModel;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

import java.lang.management.ManagementFactory;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The I/O-queue path with metrics on (a Prometheus registry: timers with percentile histograms, byte counters,
 * failure counts) allocates nothing per command either, failures included, and the meters count every command.
 */
class IoPathAllocationWithMetricsTest {
    /** Succeeds, except for LBA 7 (LBA Out of Range): the failure path is measured too. */
    private static final NvmCommandExecutor COMPLETE_AT_ONCE = (request, namespace, io) -> request.complete(
        request.command().cdw10And11() == 7 ? NvmeStatus.LBA_OUT_OF_RANGE | NvmeStatus.DNR : NvmeStatus.SUCCESS);

    @Test
    void shouldNotAllocatePerIoCommand() {
        java.lang.management.ThreadMXBean bean = ManagementFactory.getThreadMXBean();
        Assumptions.assumeTrue(bean instanceof com.sun.management.ThreadMXBean, "needs HotSpot allocation counters");
        com.sun.management.ThreadMXBean threads = (com.sun.management.ThreadMXBean) bean;
        Assumptions.assumeTrue(threads.isThreadAllocatedMemorySupported());
        threads.setThreadAllocatedMemoryEnabled(true);

        TargetModel model = new TargetModel();
        Subsystem subsystem = new Subsystem(TestTarget.SUBNQN, "SN", "MN", "FR", true);
        for (int nsid = 1; nsid <= 16; nsid++) {
            subsystem.addNamespace(new io.nvmeof4j.target.model.Namespace(nsid, new RamDevice(512, 8, false),
                java.util.UUID.randomUUID(), new byte[16]));
        }
        model.addSubsystem(subsystem);
        TargetMetrics metrics = TargetMetrics.prometheus(java.util.EnumSet.of(TransportType.TCP));
        for (io.nvmeof4j.target.model.Namespace ns : subsystem.namespaces()) {
            metrics.bindNamespace(subsystem, ns);
        }
        Port port = new Port(1, TestTarget.PORT1_ADDRESS, PortOptions.defaults(), Set.of(TestTarget.SUBNQN));
        model.addPort(port);
        try (ControllerRegistry registry = new ControllerRegistry()) {
            ControllerQueueHandlerFactory factory = new ControllerQueueHandlerFactory(model, port, COMPLETE_AT_ONCE, registry,
                metrics);
            TestHost host = new TestHost(factory, TestTarget.PORT1_ADDRESS);
            FakeQueue io = host.connectIoQueue(TestTarget.SUBNQN, 127);

            // One reused slot, like a transport's preallocated request.
            FakeRequest slot = new FakeRequest(io, 512);
            SubmissionQueueEntry sqe = slot.command();
            sqe.clear().opcode(0x02).flags(SubmissionQueueEntry.FLAGS_PSDT_SGL).nsid(9);
            sqe.sgl1().length(512).id(SglDescriptor.ID_TCP_TRANSPORT);
            for (int i = 0; i < 50_000; i++) {
                // The same mix as measured: every namespace's meters and the failure path are warm first.
                sqe.nsid(1 + (i & 15));
                sqe.cdw10And11(i % 100 == 0 ? 7 : 0);
                io.handler().onCommand(slot);
            }
            long before = threads.getThreadAllocatedBytes(Thread.currentThread().getId());
            for (int i = 0; i < 100_000; i++) {
                sqe.nsid(1 + (i & 15));
                sqe.cdw10And11(i % 100 == 0 ? 7 : 0); // 1 % fail
                io.handler().onCommand(slot);
            }
            long allocated = threads.getThreadAllocatedBytes(Thread.currentThread().getId()) - before;
            assertThat(slot.completions()).isEqualTo(150_000);
            long reads = 0;
            for (io.nvmeof4j.target.model.Namespace ns : subsystem.namespaces()) {
                reads += ns.meters().timer(TransportType.TCP.ordinal(), TargetMeterNames.OP_READ).count();
            }
            assertThat(reads).as("timed reads").isEqualTo(150_000);
            assertThat(metrics.subsystem(TestTarget.SUBNQN).failures().count(TargetMeterNames.OP_READ,
                NvmeStatus.LBA_OUT_OF_RANGE)).isEqualTo(1_500);
            // The measurement itself may allocate a little; 100,000 commands allocating would be megabytes.
            assertThat(allocated).as("bytes allocated for 100,000 I/O commands").isLessThan(4096);
        }
    }
}
