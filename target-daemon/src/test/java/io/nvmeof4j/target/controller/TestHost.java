package io.nvmeof4j.target.controller;

import io.nvmeof4j.protocol.HostId;
import io.nvmeof4j.protocol.admin.AdminOpcode;
import io.nvmeof4j.protocol.admin.GetFeaturesCommand;
import io.nvmeof4j.protocol.admin.GetLogPageCommand;
import io.nvmeof4j.protocol.admin.IdentifyCommand;
import io.nvmeof4j.protocol.admin.SetFeaturesCommand;
import io.nvmeof4j.protocol.command.NvmeStatus;
import io.nvmeof4j.protocol.command.SglDescriptor;
import io.nvmeof4j.protocol.command.SubmissionQueueEntry;
import io.nvmeof4j.protocol.fabrics.ConnectCommand;
import io.nvmeof4j.protocol.fabrics.ConnectData;
import io.nvmeof4j.protocol.fabrics.ControllerRegisters;
import io.nvmeof4j.protocol.fabrics.FabricsCommandType;
import io.nvmeof4j.protocol.fabrics.PropertyCommand;
import io.nvmeof4j.protocol.spi.TransportAddress;
import io.nvmeof4j.protocol.spi.TransportType;

import java.util.function.Consumer;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Plays the Linux host against a {@link ControllerQueueHandlerFactory}: opens fake queues and submits commands
 * shaped like the kernel's (PSDT 01b, TCP transport SGL 0x5A, lengths exact).
 */
public final class TestHost {
    public static final String HOST_NQN = "nqn.2014-08.org.nvmexpress:uuid:0e5c2f7a-61a4-4d7e-9d3b-1f2a3b4c5d6e";
    public static final HostId HOST_ID = HostId.parse("0e5c2f7a-61a4-4d7e-9d3b-1f2a3b4c5d6e");

    private final ControllerQueueHandlerFactory factory;
    private final String hostNqn;
    private final HostId hostId;
    private final TransportAddress local;
    private int cid = 1;
    private int port = 50000;

    public TestHost(ControllerQueueHandlerFactory factory, String hostNqn, HostId hostId, TransportAddress local) {
        this.factory = factory;
        this.hostNqn = hostNqn;
        this.hostId = hostId;
        this.local = local;
    }

    public TestHost(ControllerQueueHandlerFactory factory, TransportAddress local) {
        this(factory, HOST_NQN, HOST_ID, local);
    }

    public FakeQueue openQueue() {
        FakeQueue q = new FakeQueue(TransportType.TCP, local, "192.0.2.10:" + port++);
        q.handler(factory.open(q));
        return q;
    }

    /** Submits a command built by {@code sqe} with {@code dataLength} bytes of data, filled by {@code data}. */
    public FakeRequest submit(FakeQueue q, int dataLength, Consumer<SubmissionQueueEntry> sqe, Consumer<FakeRequest> data) {
        FakeRequest r = new FakeRequest(q, dataLength);
        SubmissionQueueEntry e = r.command();
        e.clear().flags(SubmissionQueueEntry.FLAGS_PSDT_SGL).commandId(cid++ & 0xFFF);
        sqe.accept(e);
        if (dataLength > 0 && e.sgl1().id() == 0) {
            e.sgl1().address(0).length(dataLength).id(SglDescriptor.ID_TCP_TRANSPORT);
        }
        if (data != null) {
            data.accept(r);
        }
        q.handler().onCommand(r);
        return r;
    }

    public FakeRequest submit(FakeQueue q, int dataLength, Consumer<SubmissionQueueEntry> sqe) {
        return submit(q, dataLength, sqe, null);
    }

    public FakeRequest connect(FakeQueue q, int qid, int sqsize0Based, long kato, String subnqn, int cntlid) {
        return connect(q, qid, sqsize0Based, kato, subnqn, cntlid, hostNqn, 0);
    }

    public FakeRequest connect(FakeQueue q, int qid, int sqsize0Based, long kato, String subnqn, int cntlid,
                               String hostNqn, int cattr) {
        return submit(q, ConnectData.LENGTH,
            e -> new ConnectCommand().wrap(e).init(e.commandId(), SglDescriptor.ID_IN_CAPSULE)
                .queueId(qid).submissionQueueSize(sqsize0Based).keepAliveTimeoutMillis(kato).connectAttributes(cattr),
            r -> new ConnectData().wrap(r.data(), 0).clear().hostId(hostId).controllerId(cntlid)
                .subsystemNqn(subnqn).hostNqn(hostNqn));
    }

    /**
     * Brings a controller of {@code subnqn} up (admin queue connected, CC.EN set) and connects I/O queue 1 of
     * {@code sqsize0Based}; fails the test on any status but success. Returns the I/O queue.
     */
    public FakeQueue connectIoQueue(String subnqn, int sqsize0Based) {
        FakeQueue admin = openQueue();
        FakeRequest connect = connect(admin, 0, 31, 0, subnqn, 0xFFFF);
        assertThat(connect.status()).as("admin Connect").isEqualTo(NvmeStatus.SUCCESS);
        assertThat(propertySet(admin, ControllerRegisters.CC, 0x00460001).status()).as("CC.EN")
            .isEqualTo(NvmeStatus.SUCCESS);
        FakeQueue io = openQueue();
        assertThat(connect(io, 1, sqsize0Based, 0, subnqn, connect.dw0() & 0xFFFF).status()).as("I/O queue Connect")
            .isEqualTo(NvmeStatus.SUCCESS);
        return io;
    }

    public FakeRequest propertyGet(FakeQueue q, int offset, boolean eightBytes) {
        return submit(q, 0, e -> new PropertyCommand().wrap(e).init(e.commandId(), FabricsCommandType.PROPERTY_GET)
            .attributes(eightBytes ? PropertyCommand.SIZE_8_BYTES : PropertyCommand.SIZE_4_BYTES).propertyOffset(offset));
    }

    public FakeRequest propertySet(FakeQueue q, int offset, long value) {
        return submit(q, 0, e -> new PropertyCommand().wrap(e).init(e.commandId(), FabricsCommandType.PROPERTY_SET)
            .attributes(PropertyCommand.SIZE_4_BYTES).propertyOffset(offset).value(value));
    }

    public FakeRequest identify(FakeQueue q, int cns, int nsid) {
        return identify(q, cns, nsid, 0);
    }

    public FakeRequest identify(FakeQueue q, int cns, int nsid, int csi) {
        return submit(q, IdentifyCommand.DATA_LENGTH,
            e -> new IdentifyCommand().wrap(e).init(e.commandId(), nsid, cns).commandSetIdentifier(csi));
    }

    public FakeRequest getLogPage(FakeQueue q, int lid, int nsid, int length, long lpo, boolean rae) {
        return submit(q, length, e -> new GetLogPageCommand().wrap(e).init(e.commandId(), nsid, lid, length, lpo)
            .retainAsyncEvent(rae));
    }

    public FakeRequest setFeatures(FakeQueue q, int fid, int cdw11) {
        return submit(q, 0, e -> new SetFeaturesCommand().wrap(e).init(e.commandId(), fid, cdw11));
    }

    public FakeRequest getFeatures(FakeQueue q, int fid, int sel) {
        return submit(q, 0, e -> new GetFeaturesCommand().wrap(e).init(e.commandId(), fid, sel));
    }

    public FakeRequest admin(FakeQueue q, int opcode) {
        return submit(q, 0, e -> e.opcode(opcode));
    }

    public FakeRequest keepAlive(FakeQueue q) {
        return admin(q, AdminOpcode.KEEP_ALIVE);
    }

    public FakeRequest asyncEventRequest(FakeQueue q) {
        return admin(q, AdminOpcode.ASYNC_EVENT_REQUEST);
    }
}
