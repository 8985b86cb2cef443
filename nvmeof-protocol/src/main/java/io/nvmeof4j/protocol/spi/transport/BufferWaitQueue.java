package io.nvmeof4j.protocol.spi.transport;

import io.nvmeof4j.protocol.spi.BufferPool;

import java.nio.ByteBuffer;

/**
 * The reactor's data-buffer pool and the commands waiting for it (SPDK's {@code pending_buf_queue}): a command that
 * finds the pool dry, or others already waiting, parks here, and parked commands get buffers in arrival order as
 * buffers come back. First come, first served: a later small command never overtakes an earlier large one, so none
 * starves. An intrusive FIFO (each request carries its link): parking allocates nothing. Reactor thread only,
 * except {@link #waits()}.
 *
 * @param <T> the binding's request type
 */
public final class BufferWaitQueue<T extends BufferWaitQueue.Waiter<T>> {
    /** A request that can wait for a buffer. */
    public interface Waiter<T> {
        T nextWaiting();

        void nextWaiting(T next);

        /** Bytes of buffer it waits for. */
        int bufferLength();

        /** Its queue went away while it waited: it is dropped, not granted. */
        boolean waitAbandoned();

        /** It got its buffer: its transfer moves on. */
        void bufferGranted(ByteBuffer buffer);

        /** It is dropped without a buffer (its queue or the poll group closed): its slot is released. */
        void dropWaiting();
    }

    private final BufferPool pool;
    private T head;
    private T tail;
    /** Written by the reactor only. */
    private volatile long waits;

    public BufferWaitQueue(BufferPool pool) {
        this.pool = pool;
    }

    public BufferPool pool() {
        return pool;
    }

    /** A pool buffer, unless the pool is dry or commands are already waiting (then null: park the command). */
    public ByteBuffer acquireInOrder(int length) {
        return head != null ? null : pool.acquire(length);
    }

    public void release(ByteBuffer buffer) {
        pool.release(buffer);
    }

    /** Queues {@code request} until the pool can give it a buffer. */
    public void park(T request) {
        waits = waits + 1; // the reactor is the only writer
        request.nextWaiting(null);
        if (tail == null) {
            head = request;
        } else {
            tail.nextWaiting(request);
        }
        tail = request;
    }

    public boolean isEmpty() {
        return head == null;
    }

    /** Gives waiting commands buffers, oldest first, until the pool is dry; returns how many got one. */
    public int grant() {
        int granted = 0;
        T request;
        while ((request = head) != null) {
            if (request.waitAbandoned()) {
                pop();
                request.dropWaiting();
                continue;
            }
            ByteBuffer buffer = pool.acquire(request.bufferLength());
            if (buffer == null) {
                break;
            }
            pop();
            granted++;
            request.bufferGranted(buffer);
        }
        return granted;
    }

    /** Drops every waiting command (the poll group is closing). */
    public void dropAll() {
        T request;
        while ((request = head) != null) {
            pop();
            request.dropWaiting();
        }
    }

    /** Commands that found the pool dry (or others waiting) and waited for a buffer. Any thread. */
    public long waits() {
        return waits;
    }

    private void pop() {
        T request = head;
        head = request.nextWaiting();
        if (head == null) {
            tail = null;
        }
        request.nextWaiting(null);
    }
}
