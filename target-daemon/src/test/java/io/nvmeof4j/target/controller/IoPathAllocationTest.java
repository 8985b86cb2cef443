package io.nvmeof4j.target.controller;

import io.nvmeof4j.protocol.command.NvmeStatus;
import io.nvmeof4j.protocol.command.SglDescriptor;
import io.nvmeof4j.protocol.command.SubmissionQueueEntry;
import io.nvmeof4j.protocol.spi.PortOptions;
import io.nvmeof4j.target.io.NvmCommandExecutor;
import io.nvmeof4j.target.model.Port;
import io.nvmeof4j.target.model.Subsystem;
import io.nvmeof4j.target.model.TargetModel;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

import java.lang.management.ManagementFactory;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;

/** The I/O-queue path (checks, NSID lookup, delegation, completion counting) allocates nothing per command. */
class IoPathAllocationTest {
    private static final NvmCommandExecutor COMPLETE_AT_ONCE = (request, namespace, io) -> request.complete(NvmeStatus.SUCCESS);

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
        Port port = new Port(1, TestTarget.PORT1_ADDRESS, PortOptions.defaults(), Set.of(TestTarget.SUBNQN));
        model.addPort(port);
        try (ControllerRegistry registry = new ControllerRegistry()) {
            ControllerQueueHandlerFactory factory = new ControllerQueueHandlerFactory(model, port, COMPLETE_AT_ONCE, registry);
            TestHost host = new TestHost(factory, TestTarget.PORT1_ADDRESS);
            FakeQueue io = host.connectIoQueue(TestTarget.SUBNQN, 127);

            // One reused slot, like a transport's preallocated request.
            FakeRequest slot = new FakeRequest(io, 512);
            SubmissionQueueEntry sqe = slot.command();
            sqe.clear().opcode(0x02).flags(SubmissionQueueEntry.FLAGS_PSDT_SGL).nsid(9);
            sqe.sgl1().length(512).id(SglDescriptor.ID_TCP_TRANSPORT);
            for (int i = 0; i < 50_000; i++) {
                io.handler().onCommand(slot);
            }
            long before = threads.getThreadAllocatedBytes(Thread.currentThread().getId());
            for (int i = 0; i < 100_000; i++) {
                sqe.nsid(1 + (i & 15));
                io.handler().onCommand(slot);
            }
            long allocated = threads.getThreadAllocatedBytes(Thread.currentThread().getId()) - before;
            assertThat(slot.completions()).isEqualTo(150_000);
            assertThat(slot.status()).isEqualTo(NvmeStatus.SUCCESS);
            // The measurement itself may allocate a little; 100,000 commands allocating would be megabytes.
            assertThat(allocated).as("bytes allocated for 100,000 I/O commands").isLessThan(4096);
        }
    }
}
