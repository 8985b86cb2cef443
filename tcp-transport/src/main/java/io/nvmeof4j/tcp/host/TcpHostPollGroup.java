package io.nvmeof4j.tcp.host;

import io.nvmeof4j.protocol.spi.host.HostPollGroup;
import io.nvmeof4j.protocol.spi.transport.FlushList;
import io.nvmeof4j.protocol.spi.transport.PollGroupCore;
import io.nvmeof4j.protocol.spi.transport.RoundClock;
import io.nvmeof4j.protocol.tcp.Crc32cDigest;
import io.nvmeof4j.tcp.SocketSelector;
import io.nvmeof4j.tcp.pdu.PduSendQueue;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.util.ArrayList;
import java.util.List;

/**
 * The NVMe/TCP host share of one host reactor thread: a {@link SocketSelector} with the queues registered on it.
 * {@link #poll()} runs control tasks, reads ready sockets (selectNow with a reused consumer: no selected-key set,
 * no iterator garbage; busy sockets are read directly between epoll rounds, see {@link SocketSelector}), which
 * parses PDUs and runs completion callbacks, then flushes every queue that has PDUs to send, with gathering writes.
 * Commands submitted on this thread between polls are sent by the next poll's flush (or by {@link #flush()} when the
 * caller wants them out at once). Nothing allocates once queues are set up.
 */
public final class TcpHostPollGroup implements HostPollGroup {
    private static final Logger LOG = LoggerFactory.getLogger(TcpHostPollGroup.class);

    final Crc32cDigest crc = new Crc32cDigest();
    final ByteBuffer[] iov = new ByteBuffer[PduSendQueue.IOV_LENGTH];

    private final SocketSelector selector = new SocketSelector("NVMe/TCP host poll group", this::onKeyReady);
    private final PollGroupCore core;
    private final List<TcpHostQueue> queues = new ArrayList<>();
    private final FlushList<TcpHostQueue> flushList = new FlushList<>(16);

    TcpHostPollGroup() {
        core = new PollGroupCore("NVMe/TCP host poll group", selector::wakeup);
    }

    @Override
    public int poll() {
        int work = core.beginPoll();
        work += selector.selectNow();
        work += flush();
        return work;
    }

    /** Sends what queues of this group have queued. Poll-group thread only. */
    public int flush() {
        int count = flushList.size();
        int work = 0;
        for (int i = 0; i < count; i++) {
            TcpHostQueue queue = flushList.take(i);
            queue.inFlushList = false;
            work += queue.flush();
        }
        flushList.keepAfter(count);
        return work;
    }

    /** Blocks in the selector unless a task or a flush waits; what it reads while blocked is a round of its own. */
    @Override
    public void await(long timeoutNanos) {
        core.beginWait(); // then the volatile reads below: pairs with execute (PollGroupCore)
        try {
            if (core.hasTasks() || flushList.size() > 0) {
                return;
            }
            selector.select(timeoutNanos);
        } finally {
            core.endWait();
        }
    }

    @Override
    public void wakeup() {
        selector.wakeup();
    }

    @Override
    public void execute(Runnable task) {
        if (core.isClosed()) {
            throw new IllegalStateException("NVMe/TCP host poll group is closed");
        }
        core.execute(task);
    }

    @Override
    public RoundClock clock() {
        return core.clock();
    }

    @Override
    public boolean inPollGroupThread() {
        return core.inReactorThread();
    }

    /** Closes every queue (their commands complete with a path error) and the selector. */
    @Override
    public void close() {
        if (!core.markClosed()) {
            return;
        }
        core.runTasks();
        for (TcpHostQueue queue : new ArrayList<>(queues)) {
            queue.closeNow("host poll group closed");
        }
        selector.close();
    }

    void register(TcpHostQueue queue) throws IOException {
        if (core.isClosed()) {
            throw new IOException("host poll group is closed");
        }
        queue.key = selector.register(queue.channel, SelectionKey.OP_READ, queue);
        queues.add(queue);
        flushList.ensureCapacity(queues.size() + 1);
    }

    void unregister(TcpHostQueue queue) {
        queues.remove(queue);
    }

    void requestFlush(TcpHostQueue queue) {
        queue.inFlushList = true;
        flushList.add(queue);
    }

    private void onKeyReady(SelectionKey key) {
        if (!key.isValid()) {
            return;
        }
        TcpHostQueue queue = (TcpHostQueue) key.attachment();
        int ready = key.readyOps();
        if ((ready & SelectionKey.OP_WRITE) != 0) {
            queue.flush();
        }
        if ((ready & SelectionKey.OP_READ) != 0 && key.isValid()) {
            queue.onReadable();
        }
    }

    @Override
    public String toString() {
        return "TcpHostPollGroup[queues=" + queues.size() + "]";
    }
}
