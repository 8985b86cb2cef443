package io.nvmeof4j.protocol.spi.transport;

import io.nvmeof4j.protocol.spi.TransportQueue;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * The part of a controller-role queue every binding shares: the count of commands taken and not yet answered (which
 * the daemon's shutdown waits on from another thread), and the disconnect from any thread, handed to the queue's
 * reactor. A binding's queue (an NVMe/TCP connection, an RDMA queue pair) subclasses it and keeps its wire work.
 */
public abstract class AbstractTransportQueue implements TransportQueue {
    private static final VarHandle OUTSTANDING;

    static {
        try {
            OUTSTANDING = MethodHandles.lookup().findVarHandle(AbstractTransportQueue.class, "outstanding", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    @SuppressWarnings("unused") // accessed through OUTSTANDING
    private int outstanding;

    @Override
    public final int commandsOutstanding() {
        return (int) OUTSTANDING.getAcquire(this);
    }

    /** Reactor thread: a capsule took a command slot. */
    protected final void commandTaken() {
        OUTSTANDING.setRelease(this, (int) OUTSTANDING.get(this) + 1);
    }

    /** Reactor thread: a command slot is free again (answered, or dropped with its queue). */
    protected final void commandDone() {
        OUTSTANDING.setRelease(this, (int) OUTSTANDING.get(this) - 1);
    }

    @Override
    public final void disconnect(String reason) {
        String why = reason == null ? "disconnected" : reason;
        execute(() -> close(why));
    }

    /** Reactor thread: starts the queue's teardown; idempotent. */
    protected abstract void close(String reason);
}
