package io.nvmeof4j.tcp.host;

import io.nvmeof4j.protocol.buffer.OffHeapBufferPool;
import io.nvmeof4j.protocol.command.NvmeStatus;
import io.nvmeof4j.protocol.command.SubmissionQueueEntry;
import io.nvmeof4j.protocol.fabrics.ConnectCommand;
import io.nvmeof4j.protocol.spi.PollGroup;
import io.nvmeof4j.protocol.spi.PortOptions;
import io.nvmeof4j.protocol.spi.QueueHandler;
import io.nvmeof4j.protocol.spi.Request;
import io.nvmeof4j.protocol.spi.TransportAddress;
import io.nvmeof4j.protocol.spi.TransportListener;
import io.nvmeof4j.tcp.TcpControllerTransport;
import io.nvmeof4j.tcp.TcpTransportOptions;
import io.nvmeof4j.tcp.TestReactor;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The real {@link TcpControllerTransport} on 127.0.0.1 with a tiny command layer: Connect sets the queue up
 * (honouring CATTR bit 2), Write (01h) stores into 8 MiB of RAM and Read (02h) returns it (512-byte LBAs),
 * anything else succeeds.
 */
final class RamTarget implements AutoCloseable {
    static final int LBA = 512;

    final ByteBuffer ram = ByteBuffer.allocateDirect(8 << 20).order(ByteOrder.LITTLE_ENDIAN);
    final AtomicInteger commands = new AtomicInteger();
    private final TcpControllerTransport transport;
    private final TestReactor loop;
    private final TransportListener listener;

    RamTarget(int maxH2CData, int inlineDataSize) throws IOException {
        transport = new TcpControllerTransport(TcpTransportOptions.defaults().withMaxH2CDataSize(maxH2CData)
            .withC2HDataPduSize(64 * 1024));
        PollGroup group = transport.createPollGroup(new OffHeapBufferPool(1 << 20, 64L << 20));
        listener = transport.listen(TransportAddress.tcp("127.0.0.1", 0),
            PortOptions.defaults().withInlineDataSize(inlineDataSize), List.of(group), queue -> new QueueHandler() {
                @Override
                public void onCommand(Request request) {
                    commands.incrementAndGet();
                    execute(request);
                }

                @Override
                public void onClosed(String reason) {
                }
            });
        loop = new TestReactor("ram-target", group);
    }

    TransportAddress address() {
        return listener.address();
    }

    private void execute(Request request) {
        SubmissionQueueEntry sqe = request.command();
        if (sqe.isFabrics()) {
            ConnectCommand connect = new ConnectCommand().wrap(sqe);
            try {
                request.queue().install(connect.queueId(), connect.submissionQueueSize() + 1);
            } catch (io.nvmeof4j.protocol.spi.ConnectRefusedException e) {
                request.complete(e.status()); // an unlimited budget: only if direct memory ran out
                return;
            }
            request.queue().connected(connect.queueId(), connect.submissionQueueSize() + 1,
                connect.sqFlowControlDisabled());
            request.response().dw0(1);
            request.complete(NvmeStatus.SUCCESS);
            return;
        }
        long offset = sqe.cdw10And11() * LBA;
        switch (sqe.opcode()) {
            case 0x01:
                ram.put((int) offset, request.data(), 0, request.dataLength());
                break;
            case 0x02:
                request.data().put(0, ram, (int) offset, request.dataLength());
                break;
            default:
                break;
        }
        request.complete(NvmeStatus.SUCCESS);
    }

    @Override
    public void close() throws Exception {
        listener.close();
        transport.close();
        loop.close();
    }
}
