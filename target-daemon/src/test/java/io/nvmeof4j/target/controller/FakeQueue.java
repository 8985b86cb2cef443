package io.nvmeof4j.target.controller;

import io.nvmeof4j.protocol.spi.PortOptions;
import io.nvmeof4j.protocol.spi.QueueHandler;
import io.nvmeof4j.protocol.spi.TransportAddress;
import io.nvmeof4j.protocol.spi.TransportQueue;
import io.nvmeof4j.protocol.spi.TransportType;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * In-memory {@link TransportQueue}: records what the command layer tells the transport ({@link #connected},
 * {@link #disconnect}) and, like a transport, calls {@link QueueHandler#onClosed} once when disconnected.
 */
public final class FakeQueue implements TransportQueue {
    private final TransportType type;
    private final TransportAddress local;
    private final String peer;
    private QueueHandler handler;
    private volatile int queueId = -1;
    private volatile int sqSize = -1;
    private volatile boolean sqFlowControlDisabled;
    private volatile String disconnectReason;
    private final CountDownLatch disconnected = new CountDownLatch(1);
    private boolean closedNotified;
    private final java.util.concurrent.atomic.AtomicInteger slots = new java.util.concurrent.atomic.AtomicInteger();

    /** The slot of the next request made on this queue. */
    int nextSlot() {
        return slots.getAndIncrement();
    }

    /** Like a transport: requests made on this queue and not yet completed. */
    final java.util.concurrent.atomic.AtomicInteger outstanding = new java.util.concurrent.atomic.AtomicInteger();

    public FakeQueue(TransportType type, TransportAddress local, String peer) {
        this.type = type;
        this.local = local;
        this.peer = peer;
    }

    void handler(QueueHandler handler) {
        this.handler = handler;
    }

    public QueueHandler handler() {
        return handler;
    }

    @Override
    public TransportType transportType() {
        return type;
    }

    @Override
    public TransportAddress localAddress() {
        return local;
    }

    @Override
    public String peer() {
        return peer;
    }

    /** When set, {@link #install} refuses with it (a transport out of memory for the queue). */
    volatile io.nvmeof4j.protocol.spi.ConnectRefusedException refuseInstall;
    /** Every {@link #install} call, "qid/sqSize", in order. */
    final java.util.List<String> installs = new java.util.concurrent.CopyOnWriteArrayList<>();

    @Override
    public void install(int queueId, int sqSize) throws io.nvmeof4j.protocol.spi.ConnectRefusedException {
        installs.add(queueId + "/" + sqSize);
        if (refuseInstall != null) {
            throw refuseInstall;
        }
    }

    @Override
    public void connected(int queueId, int sqSize, boolean sqFlowControlDisabled) {
        this.queueId = queueId;
        this.sqSize = sqSize;
        this.sqFlowControlDisabled = sqFlowControlDisabled;
    }

    @Override
    public int queueId() {
        return queueId;
    }

    public int sqSize() {
        return sqSize;
    }

    public boolean sqFlowControlDisabled() {
        return sqFlowControlDisabled;
    }

    @Override
    public int inCapsuleDataSize() {
        return queueId == 0 ? PortOptions.ADMIN_IN_CAPSULE_DATA_SIZE : PortOptions.INLINE_DATA_SIZE_DEFAULT;
    }

    @Override
    public int commandsOutstanding() {
        return outstanding.get();
    }

    @Override
    public void disconnect(String reason) {
        synchronized (this) {
            if (disconnectReason != null) {
                return;
            }
            disconnectReason = reason;
        }
        disconnected.countDown();
        close(reason);
    }

    /** The host side closed the connection. */
    public void close(String reason) {
        synchronized (this) {
            if (closedNotified) {
                return;
            }
            closedNotified = true;
        }
        handler.onClosed(reason);
    }

    public boolean isDisconnected() {
        return disconnectReason != null;
    }

    public String disconnectReason() {
        return disconnectReason;
    }

    public boolean awaitDisconnect(long timeout, TimeUnit unit) throws InterruptedException {
        return disconnected.await(timeout, unit);
    }

    @Override
    public void execute(Runnable task) {
        task.run();
    }
}
